"""tests/lib/ptydrive.py: driving a program on a pseudo-terminal from a test
(attach.sh, exec.sh run their scripts with PYTHONPATH=$T_LIB).

  setsize(fd, rows, cols)    the terminal's window size (SIGWINCH follows)
  expect(fd, what, timeout)  reads until WHAT was printed, keeping what came
                             after it for the next expect; exits the script
                             with what it got on a timeout or EOF
"""

import fcntl
import os
import select
import struct
import sys
import termios
import time


def setsize(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


_buf = b""


def expect(fd, what, timeout=10):
    global _buf
    end = time.time() + timeout
    while what.encode() not in _buf:
        left = end - time.time()
        if left <= 0:
            sys.exit("timeout waiting for %r; got %r" % (what, _buf[-400:]))
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                sys.exit("EOF waiting for %r; got %r" % (what, _buf[-400:]))
            _buf += data
    _buf = _buf[_buf.index(what.encode()) + len(what):]
