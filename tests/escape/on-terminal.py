"""on-terminal.py [--raw] [--input TEXT [--after MARK]] CMD...: runs CMD on a new
pseudo-terminal as its session's controlling terminal (stdin, stdout and
stderr all on it), the way an operator's shell runs a command, with echo on
(--raw: in raw mode, so that output comes through byte for byte). TEXT
(Python escapes allowed, e.g. \\x04 for ^D) is typed once CMD has started:
after half a second, or once MARK is in its output (a command that must be
running, not still starting, when TEXT comes: ^C).
Prints one JSON object: the exit status, whether the terminal still echoes
afterwards, how many bytes of input wait on it (what a TIOCSTI from inside
would have pushed), and what the command printed (hex with --raw). Used by
tests/integration/escape.sh."""
import fcntl
import json
import os
import pty
import select
import struct
import sys
import termios
import time
import tty

args = sys.argv[1:]
raw = False
typed = None
mark = None
while args and args[0].startswith("--"):
    if args[0] == "--raw":
        raw = True
        args = args[1:]
    elif args[0] == "--after":
        mark = args[1].encode()
        args = args[2:]
    elif args[0] == "--input":
        typed = args[1].encode().decode("unicode_escape").encode("latin-1")
        args = args[2:]
    else:
        sys.exit("unknown option " + args[0])
master, slave = pty.openpty()
if raw:
    tty.setraw(slave)
else:
    attrs = termios.tcgetattr(slave)
    attrs[3] |= termios.ECHO | termios.ICANON
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
pid = os.fork()
if pid == 0:
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    os.close(master)
    os.close(slave)
    os.execvp(args[0], args)
output = b""
status = None
start = time.monotonic()
while status is None:
    if typed is not None and (mark in output if mark is not None else time.monotonic() - start > 0.5):
        os.write(master, typed)
        typed = None
    r, _, _ = select.select([master], [], [], 0.05)
    if r:
        try:
            output += os.read(master, 65536)
        except OSError:
            pass
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = st
while select.select([master], [], [], 0.2)[0]:
    try:
        chunk = os.read(master, 65536)
    except OSError:
        break
    if not chunk:
        break
    output += chunk
echo = bool(termios.tcgetattr(slave)[3] & termios.ECHO)
pending = struct.unpack("i", fcntl.ioctl(slave, termios.FIONREAD, b"\0\0\0\0"))[0]
print(json.dumps({"status": os.waitstatus_to_exitcode(status), "echo": echo, "pending_input": pending,
                  "output": output.hex() if raw else output.decode("utf-8", "replace")}))
