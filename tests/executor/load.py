#!/usr/bin/python3
"""Load on a running ohbox-executor, for tests/integration/executor-load.sh.
httpx (Debian python3-httpx), one client per thread; every reply is checked
and the figures are printed as one JSON object (the script asserts on it).

Usage:
  load.py hammer URL KEY CLIENTS ROUNDS
      CLIENTS threads, each ROUNDS times: GET /alive, then a `run` action
      printing a value unique to the client and round; the reply must carry
      exactly that value and exit code 0.
  load.py during URL KEY COMMAND [TIMEOUT]
      runs COMMAND as a `run` action while another thread polls /alive
      (every 0.2 s); prints the reply's content length, whether it has the
      truncation marker, its tail, and the latencies of /alive meanwhile.
  load.py alive URL KEY SECONDS
      polls /alive for SECONDS; prints latencies and failures."""
import json
import sys
import threading
import time

import httpx

MARKER = '\n[... Observation truncated due to length ...]\n'


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return round(xs[k] * 1000, 1)


def run_action(client, command, timeout=60):
    body = {'action': {'action': 'run', 'args': {'command': command, 'blocking': False, 'is_input': False},
                       'timeout': timeout}}
    return client.post('/execute_action', json=body, timeout=timeout + 30)


def hammer(url, key, clients, rounds):
    lock = threading.Lock()
    alive_t, run_t, errors = [], [], []

    def worker(c):
        with httpx.Client(base_url=url, headers={'X-Session-API-Key': key}, timeout=60) as cl:
            for r in range(rounds):
                try:
                    t0 = time.monotonic()
                    a = cl.get('/alive')
                    t1 = time.monotonic()
                    want = f'client{c}-round{r}'
                    o = run_action(cl, f'echo {want}')
                    t2 = time.monotonic()
                    bad = None
                    if a.status_code != 200 or a.json().get('status') != 'ok':
                        bad = f'/alive: {a.status_code} {a.text[:100]}'
                    elif o.status_code != 200:
                        bad = f'run: {o.status_code} {o.text[:200]}'
                    else:
                        j = o.json()
                        if (j.get('observation') != 'run' or j.get('content') != want
                                or j['extras']['metadata']['exit_code'] != 0):
                            bad = f'run {want}: {json.dumps(j)[:300]}'
                    with lock:
                        alive_t.append(t1 - t0)
                        run_t.append(t2 - t1)
                        if bad:
                            errors.append(bad)
                except Exception as e:  # a failed request is an error, not a crash of the client
                    with lock:
                        errors.append(f'client {c} round {r}: {type(e).__name__}: {e}')

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    return {'clients': clients, 'rounds': rounds, 'alive': len(alive_t), 'runs': len(run_t),
            'errors': len(errors), 'first_errors': errors[:5], 'seconds': round(elapsed, 2),
            'requests_per_s': round((len(alive_t) + len(run_t)) / elapsed, 1),
            'alive_p50_ms': pct(alive_t, 50), 'alive_p99_ms': pct(alive_t, 99),
            'run_p50_ms': pct(run_t, 50), 'run_p99_ms': pct(run_t, 99), 'run_max_ms': pct(run_t, 100)}


class AlivePoller(threading.Thread):
    """Polls /alive every 0.2 s, each time on a new connection (as a
    health checker does; a kept-alive connection would hide that new ones
    are refused)."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.url = url
        self.times, self.failures = [], []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                with httpx.Client(base_url=self.url, timeout=10) as cl:
                    a = cl.get('/alive')
                if a.status_code != 200:
                    self.failures.append(f'{a.status_code}')
            except Exception as e:
                self.failures.append(f'{type(e).__name__}: {e}')
            self.times.append(time.monotonic() - t0)
            self.stop.wait(0.2)

    def result(self):
        return {'alive': len(self.times), 'alive_failures': len(self.failures),
                'alive_first_failures': self.failures[:3], 'alive_p50_ms': pct(self.times, 50),
                'alive_p99_ms': pct(self.times, 99), 'alive_max_ms': pct(self.times, 100)}


def during(url, key, command, timeout):
    poller = AlivePoller(url)
    poller.start()
    t0 = time.monotonic()
    res = {}
    with httpx.Client(base_url=url, headers={'X-Session-API-Key': key}) as cl:
        try:
            o = run_action(cl, command, timeout)
            res['status'] = o.status_code
            j = o.json()
            c = j.get('content', '')
            res.update({'observation': j.get('observation'), 'content_len': len(c),
                        'marker': MARKER in c, 'head': c[:40], 'tail': c[-40:],
                        'exit_code': j.get('extras', {}).get('metadata', {}).get('exit_code'),
                        'prefix': j.get('extras', {}).get('metadata', {}).get('prefix')})
        except Exception as e:
            res['error'] = f'{type(e).__name__}: {e}'
    res['seconds'] = round(time.monotonic() - t0, 2)
    poller.stop.set()
    poller.join()
    res.update(poller.result())
    return res


def alive(url, seconds):
    poller = AlivePoller(url)
    poller.start()
    time.sleep(seconds)
    poller.stop.set()
    poller.join()
    return poller.result()


def main(argv):
    mode, url, key = argv[1], argv[2], argv[3]
    if mode == 'hammer':
        r = hammer(url, key, int(argv[4]), int(argv[5]))
    elif mode == 'during':
        r = during(url, key, argv[4], float(argv[5]) if len(argv) > 5 else 120)
    elif mode == 'alive':
        r = alive(url, float(argv[4]))
    else:
        sys.exit(f'load.py: unknown mode {mode}')
    print(json.dumps(r))


if __name__ == '__main__':
    main(sys.argv)
