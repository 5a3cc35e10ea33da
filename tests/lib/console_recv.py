#!/usr/bin/python3
# console_recv.py SOCKET [INPUT]: the engine's side of --console-socket (as
# conmon and containerd's shim do it): listens on the unix socket SOCKET,
# takes one connection, receives the terminal's master (SCM_RIGHTS) and
# prints "name=<the payload>", then what the terminal says until it hangs
# up. INPUT, if given, is written into the terminal first.
import array
import os
import socket
import sys

path = sys.argv[1]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
open(path + ".ready", "w").close()
srv.settimeout(30)
conn, _ = srv.accept()
fds = array.array("i")
msg, anc, _, _ = conn.recvmsg(1024, socket.CMSG_SPACE(fds.itemsize))
for level, kind, data in anc:
    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
        fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
if len(fds) != 1:
    sys.exit("console_recv: no fd received")
master = fds[0]
print("name=" + msg.decode(), flush=True)
if len(sys.argv) > 2:
    os.write(master, sys.argv[2].encode())
while True:
    try:
        chunk = os.read(master, 4096)
    except OSError:  # EIO: every holder of the terminal's other end is gone
        break
    if not chunk:
        break
    sys.stdout.write(chunk.decode(errors="replace"))
    sys.stdout.flush()
