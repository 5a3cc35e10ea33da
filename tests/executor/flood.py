#!/usr/bin/python3
"""Connection floods against ohbox-executor (issue 14 item 3), over real
sockets on loopback: 127.0.0.1 plays the attacker, 127.0.0.2 (or other
127.x addresses) the legitimate client.  Run by tests/integration/executor-flood.sh
against an executor started with OHBOX_EXECUTOR_HEADER_TIMEOUT=HEADER and
OHBOX_EXECUTOR_IDLE_TIMEOUT=IDLE.

Usage: flood.py PORT API_KEY HEADER IDLE PER_ADDRESS GROUP...
Prints one PASS:/FAIL: line per test."""
import json
import socket
import sys
import threading
import time

import pytests
from pytests import Fail

PORT, KEY = int(sys.argv[1]), sys.argv[2]
HEADER, IDLE, PER_ADDRESS = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
GROUPS = sys.argv[6:]
PROG = 'executor-flood'
ATTACKER, CLIENT = '127.0.0.1', '127.0.0.2'


def check(cond, what):
    if not cond:
        raise Fail(what)


def connect(src, timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(('127.0.0.1', PORT))
    return s


def request(src, method, path, body=None, key=None, timeout=5.0):
    """One request on a new connection from SRC: (status, parsed JSON body, seconds)."""
    t = time.monotonic()
    s = connect(src, timeout)
    try:
        data = json.dumps(body).encode() if body is not None else b''
        head = f'{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len(data)}\r\n'
        if body is not None:
            head += 'Content-Type: application/json\r\n'
        if key:
            head += f'X-Session-API-Key: {key}\r\n'
        s.sendall(head.encode() + b'\r\n' + data)
        reply = b''
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    finally:
        s.close()
    check(reply.startswith(b'HTTP/1.1 '), f'{method} {path} from {src}: no HTTP reply ({reply[:80]!r})')
    status = int(reply.split(b' ', 2)[1])
    payload = reply.split(b'\r\n\r\n', 1)[1]
    return status, json.loads(payload) if payload else None, time.monotonic() - t


def alive(src, timeout=5.0):
    return request(src, 'GET', '/alive', timeout=timeout)


def action(src, command, timeout=30.0):
    body = {'action': {'action': 'run', 'args': {'command': command, 'blocking': True}, 'timeout': timeout}}
    return request(src, 'POST', '/execute_action', body, KEY, timeout=timeout + 5)


def closed_by_server(s):
    """True when the server has closed S (EOF or reset), without blocking."""
    s.setblocking(False)
    try:
        return s.recv(1) == b''
    except BlockingIOError:
        return False
    except ConnectionError:
        return True
    finally:
        s.setblocking(True)


def wait_closed(s, limit):
    """Seconds until the server closes S (reading what it sends), or None after LIMIT."""
    t = time.monotonic()
    s.settimeout(0.05)
    while time.monotonic() - t < limit:
        try:
            if s.recv(65536) == b'':
                return time.monotonic() - t
        except socket.timeout:
            continue
        except ConnectionError:
            return time.monotonic() - t
    return None


def flood(n, src=ATTACKER):
    socks = []
    for _ in range(n):
        try:
            socks.append(connect(src, 2.0))
        except OSError:
            break  # refused: also fine for the flood, the server said no at once
    return socks


def close_all(socks):
    for s in socks:
        s.close()


# ---- tests -----------------------------------------------------------------------------------

def test_flood_from_one_address_leaves_others_served():
    socks = flood(300)
    try:
        check(len(socks) >= PER_ADDRESS, f'only {len(socks)} connections could be opened')
        st, body, secs = alive(CLIENT)
        check(st == 200 and body == {'status': 'ok'}, f'/alive from {CLIENT}: {st} {body}')
        check(secs < 1.0, f'/alive from {CLIENT} took {secs:.2f}s under the flood')
        st, obs, secs = action(CLIENT, 'echo served')
        check(st == 200 and obs['content'] == 'served', f'action from {CLIENT}: {st} {obs}')
        check(secs < 3.0, f'action from {CLIENT} took {secs:.2f}s under the flood')
        # A newcomer from the flooding address itself gets in too: the
        # oldest idle connection of that address makes room.
        st, _, secs = alive(ATTACKER)
        check(st == 200 and secs < 1.0, f'/alive from {ATTACKER} under its own flood: {st} in {secs:.2f}s')
        time.sleep(0.2)
        kept = sum(1 for s in socks if not closed_by_server(s))
        check(kept <= PER_ADDRESS, f'{kept} idle connections kept from one address (limit {PER_ADDRESS})')
    finally:
        close_all(socks)


def test_recovers_at_once_when_the_flood_closes():
    socks = flood(300)
    close_all(socks)
    st, _, secs = alive(ATTACKER)
    check(st == 200 and secs < 0.5, f'/alive after the flood closed: {st} in {secs:.2f}s')


def test_flood_from_many_addresses_hits_the_global_limit_not_the_client():
    socks = []
    try:
        for i in range(3, 3 + 12):
            socks += flood(PER_ADDRESS, f'127.0.0.{i}')
        st, _, secs = alive(CLIENT)
        check(st == 200 and secs < 1.0, f'/alive from {CLIENT} with {len(socks)} flood connections: {st} in {secs:.2f}s')
        st, obs, secs = action(CLIENT, 'echo global')
        check(st == 200 and obs['content'] == 'global' and secs < 3.0, f'action: {st} {obs} in {secs:.2f}s')
    finally:
        close_all(socks)


def test_slowloris_headers_dropped_after_the_header_timeout():
    s = connect(ATTACKER)
    s.sendall(b'GET /alive HTTP/1.1\r\nHost: x\r\n')
    t = time.monotonic()
    closed = None
    try:
        s.settimeout(0.05)
        while time.monotonic() - t < HEADER * 3 + 2:
            try:
                s.sendall(b'X-Drip: 1\r\n')
            except (BrokenPipeError, ConnectionError):
                closed = time.monotonic() - t
                break
            try:
                if s.recv(65536) == b'':
                    closed = time.monotonic() - t
                    break
            except socket.timeout:
                pass
            except ConnectionError:
                closed = time.monotonic() - t
                break
            time.sleep(HEADER / 8)
    finally:
        s.close()
    check(closed is not None, f'a connection dripping its headers was kept {HEADER * 3 + 2:.0f}s')
    check(closed < HEADER + 1.5, f'dripping headers dropped after {closed:.2f}s (header timeout {HEADER}s)')


def test_silent_connection_dropped_after_the_header_timeout():
    s = connect(ATTACKER)
    try:
        secs = wait_closed(s, HEADER * 3 + 2)
    finally:
        s.close()
    check(secs is not None and secs < HEADER + 1.5, f'an idle connection was closed after {secs}s')


def test_unauthenticated_slow_body_dropped():
    s = connect(ATTACKER)
    s.sendall(b'POST /execute_action HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n'
              b'X-Session-API-Key: wrong\r\n\r\n')
    t = time.monotonic()
    closed = None
    try:
        while time.monotonic() - t < HEADER * 3 + 2:
            try:
                s.sendall(b'x' * 10)
            except (BrokenPipeError, ConnectionError):
                closed = time.monotonic() - t
                break
            if closed_by_server(s):
                closed = time.monotonic() - t
                break
            time.sleep(HEADER / 8)
    finally:
        s.close()
    check(closed is not None and closed < HEADER + 1.5, f'an unauthenticated dripping body was kept {closed}s')


def test_long_action_outlives_the_timeouts():
    wait = max(HEADER, IDLE) * 2 + 1
    st, obs, secs = action(CLIENT, f'sleep {wait}; echo done', timeout=wait + 30)
    check(st == 200 and obs['content'] == 'done', f'a {wait:.0f}s action: {st} {obs}')


def test_trusted_request_survives_a_flood_from_its_address():
    result = {}

    def long():
        try:
            result['r'] = action(ATTACKER, 'sleep 2; echo kept')
        except Exception as e:
            result['r'] = (0, repr(e), 0)

    th = threading.Thread(target=long)
    th.start()
    time.sleep(0.5)
    socks = flood(300)
    try:
        th.join(30)
        st, obs, _ = result['r']
        check(st == 200 and obs['content'] == 'kept', f'the action during the flood: {st} {obs}')
    finally:
        close_all(socks)


ALL = {
    'flood': [test_flood_from_one_address_leaves_others_served, test_recovers_at_once_when_the_flood_closes,
              test_flood_from_many_addresses_hits_the_global_limit_not_the_client,
              test_trusted_request_survives_a_flood_from_its_address],
    'timeouts': [test_slowloris_headers_dropped_after_the_header_timeout,
                 test_silent_connection_dropped_after_the_header_timeout, test_unauthenticated_slow_body_dropped,
                 test_long_action_outlives_the_timeouts],
}


def main():
    return pytests.run(PROG, GROUPS, ALL)


if __name__ == '__main__':
    sys.exit(main())
