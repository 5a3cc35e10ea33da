# ipython_driver.py: the Python side of `run_ipython` (see ipython.c, which
# embeds this file as a string and runs it as `python3 -u -c DRIVER`).
#
# One long-lived interpreter per executor session.  Requests arrive on fd 3
# and replies leave on fd 4, each framed as "<length>\n<json>", so a cell may
# print anything, read stdin (/dev/null) or close fds 0-2 without breaking the
# protocol.  While a cell runs, fds 1 and 2 point at a temporary file: print(),
# warnings, tracebacks and the output of subprocesses all land there in order.
#
# Where `import IPython` works, cells run in IPython's InteractiveShell, the
# shell that ipykernel wraps: magics, `!cmd`, `%%bash`, history (`_`, `Out`),
# display of the last expression.  What ipykernel would send to a Jupyter
# client is rebuilt here the way OpenHands' Jupyter plugin joins it: stream
# text as it arrives, the `text/plain` of results and displays without a
# prompt or newline, tracebacks joined with newlines, PNGs collected apart.
# Without IPython, cells run as plain Python with the handful of magics
# agents use most (%pip, %cd, !cmd, %%bash) translated, and the reply says so.
import ast
import base64
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import traceback

rf = os.fdopen(3, 'rb', 0)
wf = os.fdopen(4, 'wb', 0)
LIMIT = 1 << 20
images = []
in_cell = False


def read_msg():
    hdr = rf.readline()
    if not hdr:
        sys.exit(0)
    n = int(hdr)
    data = b''
    while len(data) < n:
        chunk = rf.read(n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return json.loads(data)


def send(obj):
    data = json.dumps(obj).encode()
    wf.write(b'%d\n' % len(data) + data)


def on_sigint(signum, frame):
    # The executor's timeout interrupts the cell.  Between cells (a late
    # signal) there is nothing to interrupt, and raising there would kill
    # the driver and lose the session's state.
    if in_cell:
        raise KeyboardInterrupt


signal.signal(signal.SIGINT, on_sigint)
devnull = os.open(os.devnull, os.O_RDWR)


def capture_begin():
    out = tempfile.TemporaryFile()
    sys.stdout.flush()
    os.dup2(out.fileno(), 1)
    os.dup2(out.fileno(), 2)
    stream = io.TextIOWrapper(os.fdopen(1, 'wb', 0, closefd=False), write_through=True, errors='backslashreplace')
    sys.stdout = sys.stderr = stream
    return out


def capture_end(out):
    try:
        sys.stdout.flush()
    except Exception:
        pass
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    size = out.seek(0, 2)
    out.seek(0)
    text = out.read(LIMIT).decode('utf-8', 'replace')
    if size > LIMIT:
        text += '\n[... output truncated: %d bytes ...]\n' % (size - LIMIT)
    out.close()
    return text


def note_png(data):
    png = data.get('image/png')
    if png:
        if isinstance(png, bytes):
            png = base64.b64encode(png).decode()
        images.append('data:image/png;base64,' + png)


try:
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    have_ipython = True
except Exception:
    have_ipython = False

if have_ipython:
    class ResultHook(DisplayHook):
        """execute_result as ipykernel sends it: no `Out[n]:` prompt."""

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            sys.stdout.write(format_dict.get('text/plain', ''))
            note_png(format_dict)

    class DisplayData(DisplayPublisher):
        """display_data: its text/plain as it is, its PNG to image_urls."""

        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            sys.stdout.write(data.get('text/plain', ''))
            note_png(data)

    class Shell(InteractiveShell):
        displayhook_class = ResultHook
        display_pub_class = DisplayData

        def _showtraceback(self, etype, evalue, stb):
            # ipykernel sends the frames as a list; OpenHands joins them.
            sys.stdout.write('\n'.join(stb))

    if 'MPLBACKEND' not in os.environ:
        try:
            import matplotlib_inline  # noqa: F401  (plots become display_data, as in Jupyter)
            os.environ['MPLBACKEND'] = 'module://matplotlib_inline.backend_inline'
        except Exception:
            pass
    cfg = Config()
    cfg.HistoryManager.hist_file = ':memory:'
    cfg.InteractiveShell.colors = 'NoColor'
    shell = Shell.instance(config=cfg)

    def run_cell(code):
        shell.run_cell(code, store_history=True)
else:
    ns = {'__name__': '__main__', '__builtins__': __builtins__}
    MAGIC = re.compile(r'^(\s*)(?:([A-Za-z_][A-Za-z0-9_]*)\s*=\s*)?(!|%)(.*)$')

    def shell_argv(cmd):
        return ['/bin/bash' if os.access('/bin/bash', os.X_OK) else '/bin/sh', '-c', cmd]

    def magic(kind, arg):
        """What IPython's %pip, %cd, !cmd and `x = !cmd` do, in plain Python."""
        sys.stdout.flush()
        if kind == 'system':
            # As IPython: the status in _exit_code, nothing to display.
            ns['_exit_code'] = subprocess.call(shell_argv(arg))
            return None
        if kind == 'getoutput':
            res = subprocess.run(shell_argv(arg), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            return res.stdout.decode('utf-8', 'replace').splitlines()
        if kind == 'pip':
            subprocess.call([sys.executable, '-m', 'pip'] + shlex.split(arg))
            print('Note: you may need to restart the kernel to use updated packages.')
            return None
        if kind == 'cd':
            target = os.path.expanduser(arg.strip() or '~')
            os.chdir(target)
            print(os.getcwd())
            return None
        name = arg.split()[0] if arg.split() else ''
        raise NameError('magic %%%s is not available: IPython is not installed in this Python '
                        '(only %%pip, %%cd, !cmd and %%%%bash are understood)' % name)

    def translate(code):
        lines = code.split('\n')
        first = lines[0].strip()
        if first.startswith('%%'):
            words = first[2:].split()
            if words and words[0] in ('bash', 'sh', 'script'):
                return 'magic(%r, %r)' % ('system', '\n'.join(lines[1:]))
            raise NameError('cell magic %s is not available: IPython is not installed in this Python '
                            '(only %%pip, %%cd, !cmd and %%%%bash are understood)' % first.split()[0])
        out = []
        for line in lines:
            m = MAGIC.match(line)
            if m is None:
                out.append(line)
                continue
            indent, target, sigil, rest = m.groups()
            if sigil == '!':
                call = 'magic(%r, %r)' % ('getoutput' if target else 'system', rest)
            else:
                word, _, arg = rest.partition(' ')
                call = 'magic(%r, %r)' % (word if word in ('pip', 'cd') else 'unknown', arg if word in ('pip', 'cd') else rest)
            out.append(indent + (target + ' = ' if target else '') + call)
        return '\n'.join(out)

    ns['magic'] = magic

    def run_cell(code):
        try:
            tree = ast.parse(translate(code), '<cell>', 'exec')
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, '<cell>', 'exec'), ns)
            if last is not None:
                value = eval(compile(last, '<cell>', 'eval'), ns)
                if value is not None:
                    ns['_'] = value
                    sys.stdout.write(repr(value))
        except BaseException as e:
            if isinstance(e, SystemExit) and e.code in (None, 0):
                return
            tb = e.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename != '<cell>':
                tb = tb.tb_next
            if isinstance(e, SyntaxError):
                lines = traceback.format_exception_only(type(e), e)
            else:
                lines = traceback.format_exception(type(e), e, tb)
            sys.stdout.write(''.join(lines))


def main():
    global in_cell
    while True:
        req = read_msg()
        if req.get('cwd'):
            try:
                os.chdir(req['cwd'])
            except OSError:
                pass
            if have_ipython:
                # OpenHands moves the kernel with a cell of its own; the
                # execution counter (`Cell In[n]`) counts it the same way.
                shell.execution_count += 1
        del images[:]
        out = capture_begin()
        in_cell = True
        try:
            run_cell(req['code'])
        except KeyboardInterrupt:
            pass
        finally:
            in_cell = False
        text = capture_end(out)
        send({'output': text, 'images': list(images), 'python': sys.executable, 'ipython': have_ipython})


main()
