"""tests/lib/ptydrive.py: driving a program on a pseudo-terminal from a test
(attach.sh, exec.sh run their scripts with PYTHONPATH=$T_LIB).

  spawn(argv)                runs ARGV on a new pseudo-terminal: (pid, fd),
                             FD the terminal's master side
  setsize(fd, rows, cols)    the terminal's window size (SIGWINCH follows)
  expect(fd, what, timeout)  reads until WHAT was printed, keeping what came
                             after it for the next expect; exits the script
                             with what it got on a timeout or EOF
  check_raw_resize_interrupt(fd)
                             what every interactive session must do: the
                             caller's terminal raw, a resize and Ctrl-C
                             reaching the program inside
"""

import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time


def spawn(argv):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    return pid, fd


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


def check_raw_resize_interrupt(fd):
    # raw mode while the session runs: no echo, no line editing on our side
    during = termios.tcgetattr(fd)
    if during[3] & termios.ICANON or during[3] & termios.ECHO:
        sys.exit("the caller's terminal is not in raw mode")
    # resize: the kernel sends SIGWINCH to ohbox, which passes the size on
    setsize(fd, 50, 120)
    time.sleep(0.3)
    # $((N+0)): the echoed command line does not hold the marker itself
    os.write(fd, b"stty size; echo MARK$((2+0))\r")
    expect(fd, "50 120")
    expect(fd, "MARK2")
    # Ctrl-C goes to the command inside (the terminal's foreground job there)
    os.write(fd, b"trap 'echo GOT_INT' INT; sleep 100; echo AFTER$((0))\r")
    time.sleep(0.5)
    os.write(fd, b"\x03")
    expect(fd, "GOT_INT", 5)
    expect(fd, "AFTER0", 5)
