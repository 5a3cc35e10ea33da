"""first_200.py PORT PATH CMD...: runs CMD (which must start a server
publishing PORT on 127.0.0.1 and return, e.g. `ohbox run -d`), and polls
http://127.0.0.1:PORT/PATH every 0.5 ms from the moment CMD is spawned until
the first 200 (connect attempts time out after 20 ms). Prints the milliseconds from spawn to that 200, and the
milliseconds until CMD itself returned, as "first200_ms cmd_ms". Exit 1 if
no 200 within 10 s. Stdlib only (Debian's /usr/bin/python3)."""
import socket
import subprocess
import sys
import time

port, path, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
req = ("GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" % path).encode()


def try_get():
    s = socket.socket()
    # A SYN that is dropped (no route or neighbour yet) is not waited for:
    # a new attempt follows (what a client polling for readiness does).
    s.settimeout(0.02)
    try:
        s.connect(("127.0.0.1", port))
        s.settimeout(2)
        s.sendall(req)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data.startswith(b"HTTP/1.") and data.split(b" ", 2)[1] == b"200"
    except OSError:
        return False
    finally:
        s.close()


t0 = time.monotonic()
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
cmd_done = None
while True:
    if cmd_done is None and p.poll() is not None:
        cmd_done = time.monotonic()
    if try_get():
        t1 = time.monotonic()
        break
    if time.monotonic() - t0 > 10:
        p.wait()
        sys.stderr.write("no HTTP 200 on 127.0.0.1:%d%s within 10 s\n" % (port, path))
        sys.exit(1)
    time.sleep(0.0005)
p.wait()
if cmd_done is None:
    cmd_done = time.monotonic()
print("%.1f %.1f" % ((t1 - t0) * 1000, (cmd_done - t0) * 1000))
