"""udp_ping.py HOST PORT TEXT [TIMEOUT_S]: sends TEXT to HOST:PORT over UDP
every 0.1 s (the server may not be bound yet: UDP has no connection to wait
for) until an answer comes or TIMEOUT_S (default 5) passes; prints the
answer, exit 1 on timeout. Stdlib only."""
import socket
import sys
import time

host, port, text = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
limit = float(sys.argv[4]) if len(sys.argv) > 4 else 5.0
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.1)
end = time.monotonic() + limit
while time.monotonic() < end:
    s.sendto(text, (host, port))
    try:
        data, _ = s.recvfrom(2048)
    except (socket.timeout, ConnectionRefusedError):
        continue
    sys.stdout.write(data.decode(errors="replace"))
    sys.exit(0)
sys.stderr.write("no answer from %s:%d in %.1f s\n" % (host, port, limit))
sys.exit(1)
