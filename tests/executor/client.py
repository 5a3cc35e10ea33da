#!/usr/bin/python3
"""Protocol tests for ohbox-executor, driven like the OpenHands backend drives
its action execution server: httpx (Debian python3-httpx), the exact JSON
envelopes of shared/protocol/ACTION-PROTOCOL.md, and checks of every key and
type of the replies.

Usage: client.py BASE_URL API_KEY WORKDIR GROUP...
Prints one PASS:/FAIL:/SKIP: line per test (tests/run-tests.sh counts them).
NO_CHANGE_TIMEOUT_SECONDS of the server must be 2 (keeps the tests fast)."""
import base64
import io
import json
import os
import shutil
import sys
import threading
import time
import zipfile

import httpx

import pytests
from pytests import Fail, Skip

BASE, KEY, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
GROUPS = sys.argv[4:]
NO_CHANGE = 2
PROG = 'executor'

client = httpx.Client(base_url=BASE, headers={'X-Session-API-Key': KEY}, timeout=60)
anon = httpx.Client(base_url=BASE, timeout=10)

TIMEOUT_HINT = ("You may wait longer to see additional output by sending empty command '', send other commands "
                "to interact with the current process, send keys (\"C-c\", \"C-z\", \"C-d\") to interrupt/kill the "
                "previous command before sending your new command, or use the timeout parameter in execute_bash "
                "for future commands.")
MARKER = '\n[... Observation truncated due to length ...]\n'


def check(cond, what):
    if not cond:
        raise Fail(what)


def eq(a, b, what=''):
    if a != b:
        raise Fail(f'{what}: got {a!r}, expected {b!r}')


def envelope(action, args, timeout=120.0):
    a = {'id': 17, 'timestamp': '2025-11-28T12:00:00.123456', 'source': 'agent', 'message': '',
         'action': action, 'args': args}
    if timeout is not None:
        a['timeout'] = timeout
    return {'action': a}


RUN_DEFAULTS = {'is_input': False, 'thought': '', 'blocking': False, 'is_static': False, 'cwd': None,
                'hidden': False, 'confirmation_state': 'confirmed', 'security_risk': -1}


def act(action, args, timeout=120.0, http_timeout=None):
    r = client.post('/execute_action', json=envelope(action, args, timeout),
                    timeout=http_timeout or ((timeout or 120) + 5))
    eq(r.status_code, 200, f'{action} status ({r.text[:200]})')
    return r.json()


def run(command, timeout=120.0, **kw):
    args = dict(RUN_DEFAULTS, command=command)
    args.update(kw)
    obs = act('run', args, timeout)
    check_run_obs(obs)
    return obs


META_KEYS = ['exit_code', 'pid', 'username', 'hostname', 'working_dir', 'py_interpreter_path', 'prefix', 'suffix']


def check_run_obs(obs):
    if obs.get('observation') == 'error':
        check_error_obs(obs)
        return
    eq(list(obs.keys()), ['message', 'observation', 'content', 'extras', 'success'], 'run keys')
    eq(obs['observation'], 'run', 'observation')
    check(isinstance(obs['content'], str) and isinstance(obs['message'], str), 'content/message types')
    ex = obs['extras']
    eq(sorted(ex.keys()), ['command', 'hidden', 'metadata'], 'run extras keys')
    check(isinstance(ex['command'], str) and isinstance(ex['hidden'], bool), 'extras types')
    md = ex['metadata']
    eq(list(md.keys()), META_KEYS, 'metadata keys')
    check(isinstance(md['exit_code'], int) and isinstance(md['pid'], int), 'metadata ints')
    for k in ('username', 'hostname', 'working_dir', 'py_interpreter_path'):
        check(md[k] is None or isinstance(md[k], str), f'metadata {k} type')
    check(isinstance(md['prefix'], str) and isinstance(md['suffix'], str), 'prefix/suffix types')
    eq(obs['success'], md['exit_code'] == 0, 'success')


def check_error_obs(obs):
    eq(list(obs.keys()), ['message', 'observation', 'content', 'extras'], 'error keys')
    eq(obs['observation'], 'error', 'observation')
    eq(obs['message'], obs['content'], 'error message == content')
    eq(obs['extras'], {'error_id': ''}, 'error extras')


def md(obs):
    return obs['extras']['metadata']


def completed(obs, code):
    eq(md(obs)['exit_code'], code, 'exit code')
    eq(md(obs)['suffix'], f'\n[The command completed with exit code {code}.]', 'suffix')


# ---- tests -------------------------------------------------------------------------------------

def test_alive_and_server_info_need_no_key():
    r = anon.get('/alive')
    eq(r.status_code, 200, '/alive')
    eq(r.json(), {'status': 'ok'}, '/alive body')
    r = anon.get('/server_info')
    eq(r.status_code, 200, '/server_info')
    j = r.json()
    eq(sorted(j.keys()), ['idle_time', 'resources', 'uptime'], 'server_info keys')
    check(isinstance(j['uptime'], float) and j['uptime'] > 0, 'uptime')
    check(isinstance(j['idle_time'], float), 'idle_time')
    res = j['resources']
    eq(sorted(res.keys()), ['cpu_percent', 'disk', 'io', 'memory'], 'resources keys')
    check(isinstance(res['cpu_percent'], float), 'cpu_percent')
    eq(sorted(res['memory'].keys()), ['percent', 'rss', 'vms'], 'memory keys')
    check(isinstance(res['memory']['rss'], int) and res['memory']['rss'] > 0, 'rss')
    eq(sorted(res['disk'].keys()), ['free', 'percent', 'total', 'used'], 'disk keys')
    check(res['disk']['total'] > 0 and isinstance(res['disk']['percent'], float), 'disk')
    eq(sorted(res['io'].keys()), ['read_bytes', 'write_bytes'], 'io keys')


def test_auth_refused_without_or_with_wrong_key():
    # Near misses of the key: each one is refused (a check that compared a
    # prefix, or stopped at the shorter string, would let one through).
    last_flipped = KEY[:-1] + chr(ord(KEY[-1]) ^ 1)
    wrong = ['wrong', '', KEY[:1], KEY[:-1], KEY + 'x', 'x' + KEY, last_flipped, KEY.upper(), KEY + KEY]
    refused = [[]] + [[('X-Session-API-Key', w)] for w in wrong] + [
        # given twice, the copies disagreeing: refused whichever comes first
        [('X-Session-API-Key', KEY), ('X-Session-API-Key', 'wrong')],
        [('X-Session-API-Key', 'wrong'), ('X-Session-API-Key', KEY)],
        [('X-Session-API-Key', KEY), ('X-Session-API-Key', '')],
        [('X-Session-API-Key', KEY), ('x-session-api-key', 'wrong')],
        # the key under another header name is no key
        [('X-Session-API-Key-2', KEY)], [('Authorization', f'Bearer {KEY}')]]
    for headers in refused:
        for method, path, body in (('POST', '/execute_action', envelope('run', dict(RUN_DEFAULTS, command='id'))),
                                   ('POST', '/list_files', {}), ('GET', '/vscode/connection_token', None),
                                   ('GET', '/download_files?path=/tmp', None)):
            r = anon.request(method, path, json=body, headers=httpx.Headers(headers))
            eq(r.status_code, 403, f'{path} with {headers}')
            eq(r.json(), {'detail': 'Invalid API Key'}, '403 body')
    eq(client.post('/list_files', json={}).status_code, 200, 'right key')
    # Header names are case-insensitive (RFC 9110); the same key twice is the key.
    for headers in ([('x-session-api-key', KEY)], [('X-SESSION-API-KEY', KEY)],
                    [('X-Session-API-Key', KEY), ('x-session-api-key', KEY)]):
        r = anon.post('/list_files', json={}, headers=httpx.Headers(headers))
        eq(r.status_code, 200, f'list_files with {headers}')


def test_run_observed_echo_false():
    o = run('echo hello; false')
    eq(o['content'], 'hello', 'content')
    completed(o, 1)
    eq(o['success'], False, 'success')
    eq(o['extras']['command'], 'echo hello; false', 'command')
    eq(o['extras']['hidden'], False, 'hidden')
    eq(md(o)['working_dir'], WORK, 'working_dir')
    eq(md(o)['pid'], -1, 'pid')
    eq(md(o)['prefix'], '', 'prefix')
    check(md(o)['username'] and md(o)['hostname'], 'username/hostname set')
    check(md(o)['py_interpreter_path'] is not None, 'py_interpreter_path is a string')
    eq(o['message'], 'Command `echo hello; false` executed with exit code 1.', 'message')


def test_run_shell_holds_only_its_terminal():
    # The prompt's setup came as a file on bash's fd 3 (bash_session.c):
    # closed before the agent's first command, which inherits nothing else.
    o = run('ls /proc/$$/fd')
    eq(sorted(int(n) for n in o['content'].split()), [0, 1, 2, 255], 'the shell\'s open files')


def test_run_cd_tracks_working_dir():
    o = run('cd /tmp && pwd')
    eq(o['content'], '/tmp', 'content')
    eq(md(o)['working_dir'], '/tmp', 'working_dir')
    o = run(f'cd {WORK}')
    eq(md(o)['working_dir'], WORK, 'back')


def test_run_background_job_pid():
    o = run('sleep 1 &')
    check(o['content'].startswith('[1] '), f'content {o["content"]!r}')
    eq(md(o)['pid'], int(o['content'].split()[1]), 'pid = $!')
    time.sleep(1.2)
    run('true')  # collects the job's "Done" line


def test_run_state_persists():
    run('export OHBOX_T=persist; f() { echo "fn:$1"; }')
    eq(run('echo $OHBOX_T; f x')['content'], 'persist\nfn:x', 'env and function')


def test_run_multiple_commands_refused():
    o = act('run', dict(RUN_DEFAULTS, command='echo one\necho two'))
    check_error_obs(o)
    eq(o['content'], 'ERROR: Cannot execute multiple commands at once.\nPlease run each command separately OR chain '
                     'them into a single command via && or ;\nProvided commands:\n(1) echo one\n(2) echo two', 'text')
    for single in ('echo a; echo b', 'echo a && echo b', 'for i in 1 2; do\n  echo $i\ndone',
                   'cat <<EOF\nx\ny\nEOF', 'echo a |\n  cat'):
        o = run(single)
        eq(o['observation'], 'run', f'{single!r} runs as one command')
        eq(md(o)['exit_code'], 0, single)


def test_run_command_is_reported_escaped():
    # The Python server types (and reports) `\;` as `\\;`; its tmux turns a
    # trailing one back, so the echoed command no longer matches and stays
    # in the output (seen in OpenHands trajectories).
    cmd = f'find {WORK} -maxdepth 0 -name workspace -exec echo {{}} \\;'
    o = run(cmd)
    esc = cmd[:-2] + '\\\\;'
    eq(o['extras']['command'], esc, 'command')
    eq(o['message'], f'Command `{esc}` executed with exit code 0.', 'message')
    eq(o['content'], f'{cmd}\n{WORK}', 'content')
    o = run('echo "a\\;b"')
    eq(o['extras']['command'], 'echo "a\\;b"', 'quoted words are not escaped')
    eq(o['content'], 'a\\;b', 'content')


def test_run_comment_lines():
    o = act('run', dict(RUN_DEFAULTS, command='# list the files\nls'))
    check_error_obs(o)
    eq(o['content'], 'ERROR: Cannot execute multiple commands at once.\nPlease run each command separately OR chain '
                     'them into a single command via && or ;\nProvided commands:\n(1) # list the files\n(2) ls',
       'a leading comment line is a command of its own for the Python server')
    # A trailing comment line belongs to the command; bash reads it after
    # the command, and the reply waits for that prompt too.
    o = run('echo x\n# done')
    eq(o['content'], 'echo x\nx\n\n\n# done', 'content')
    completed(o, 0)
    eq(run('echo next')['content'], 'next', 'nothing left over for the next command')


def test_run_alternate_screen():
    o = run(r"printf '\033[?1049hFULL SCREEN\033[?1049l'; echo done")
    eq(o['content'], 'done', 'what a full-screen program drew goes with its screen')
    o = run(r"printf '\033[?1049h\033[Hdrawn'; sleep 30")
    eq(o['content'], 'drawn', 'the alternate screen is what the pane shows')
    eq(md(o)['exit_code'], -1, 'still running')
    o = run('C-c', is_input=True)
    eq(md(o)['exit_code'], 130, 'interrupted')
    run(r"printf '\033[?1049l'")
    eq(run('echo back')['content'], 'back', 'main screen again')


def test_run_nested_shell():
    # The prompt travels into a nested interactive bash (as the Python
    # server's exported PROMPT_COMMAND and PS1 do): `bash` completes and the
    # next commands run in it.
    level = int(run('echo $SHLVL')['content'])
    o = run('bash')
    completed(o, 0)
    eq(run('echo $SHLVL')['content'], str(level + 1), 'in the nested shell')
    eq(md(run('cd /tmp'))['working_dir'], '/tmp', 'its prompt block')
    run('exit')
    o = run('echo $SHLVL')
    eq(o['content'], str(level), 'back')
    eq(md(o)['working_dir'], WORK, 'back in the working dir')


def test_run_no_change_timeout_continue_and_ctrl_c():
    t = time.time()
    o = run('for i in 1 2 3; do echo tick$i; sleep 1; done; sleep 30')
    el = time.time() - t
    eq(o['content'], 'tick1\ntick2\ntick3', 'content')
    eq(md(o)['exit_code'], -1, 'exit code')
    eq(md(o)['prefix'], '', 'first timeout has no prefix')
    eq(md(o)['suffix'], f'\n[The command has no new output after {NO_CHANGE} seconds. {TIMEOUT_HINT}]', 'suffix')
    eq(md(o)['working_dir'], None, 'no PS1 metadata')
    check(3.5 < el < 8, f'returned after {el:.1f}s')
    t = time.time()
    o = run('')
    check(NO_CHANGE - 0.2 < time.time() - t < NO_CHANGE + 2, 'continue waited the no-change timeout')
    eq(o['content'], '', 'no new output')
    eq(md(o)['prefix'], '[Below is the output of the previous command.]\n', 'prefix')
    o = run('C-c', is_input=True)
    eq(o['content'], '^C', 'content')
    eq(md(o)['exit_code'], 130, 'exit code')
    eq(md(o)['suffix'], '\n[The command completed with exit code 130. CTRL+C was sent.]', 'suffix')


def test_run_input_to_read():
    o = run('read x; echo got:$x')
    eq(o['content'], '', 'waiting')
    eq(md(o)['exit_code'], -1, 'running')
    o = run('hello', is_input=True)
    eq(o['content'], 'got:hello', 'content')
    completed(o, 0)


def test_run_hard_timeout_then_not_executed():
    t = time.time()
    o = run('sleep 8', timeout=2.0, blocking=True)
    el = time.time() - t
    check(1.9 < el < 4, f'hard timeout after {el:.2f}s')
    eq(md(o)['exit_code'], -1, 'exit')
    eq(md(o)['suffix'], f'\n[The command timed out after 2.0 seconds. {TIMEOUT_HINT}]', 'suffix')
    o = run('ls')
    eq(md(o)['prefix'], '[Below is the output of the previous command.]\n', 'prefix')
    eq(md(o)['suffix'], '\n[Your command "ls" is NOT executed. The previous command is still running - You CANNOT '
                        'send new commands until the previous command is completed. By setting `is_input` to '
                        f'`true`, you can interact with the current process: {TIMEOUT_HINT}]', 'suffix')
    eq(o['extras']['command'], 'ls', 'command')
    o = run('C-c', is_input=True)
    eq(md(o)['exit_code'], 130, 'interrupted')


def test_run_nothing_running():
    o = run('')
    eq(o['content'], 'ERROR: No previous running command to retrieve logs from.', 'empty command')
    eq(o['extras']['command'], '', 'command')
    eq(md(o)['exit_code'], -1, 'exit')
    o = run('hello', is_input=True)
    eq(o['content'], 'ERROR: No previous running command to interact with.', 'input')


def test_run_truncation():
    o = run('seq 1 5000 | sed s/$/xxxxxxxxxxxx/')
    c = o['content']
    eq(len(c), 30000 + len(MARKER), 'length')
    check(MARKER in c, 'marker')
    check(c.startswith('1xxxxxxxxxxxx\n2xxx'), 'head')
    check(c.endswith('4999xxxxxxxxxxxx\n5000xxxxxxxxxxxx'), 'tail')
    completed(o, 0)


def test_run_terminal_rendering():
    o = run(r"printf 'progress 10%%\rprogress 99%%\rdone        \n'; printf '\033[31mred\033[0m plain\n'")
    eq(o['content'], 'done\nred plain', 'carriage returns collapse, escapes vanish')
    long = 'y' * 2500
    eq(run(f'echo {long}')['content'], long, 'a line longer than the 1000-column terminal is joined')


def test_run_hidden_and_static():
    o = run('echo secret', hidden=True)
    eq(o['extras']['hidden'], True, 'hidden')
    eq(o['content'], 'secret', 'content')
    o = run('pwd', is_static=True, cwd='/tmp', hidden=True)
    eq(o['content'], '/tmp', 'static cwd')
    eq(md(o)['working_dir'], '/tmp', 'static working_dir')
    eq(md(run('pwd'))['working_dir'], WORK, 'main session unchanged')
    o = act('run', dict(RUN_DEFAULTS, command='echo a\necho b', hidden=True))
    eq(o['observation'], 'run', 'hidden refusal is a run observation (the client forces extras.hidden)')


def test_alive_answers_during_long_action():
    result = {}
    th = threading.Thread(target=lambda: result.update(o=run('sleep 3; echo slept', timeout=10.0, blocking=True)))
    th.start()
    time.sleep(0.5)
    for path in ('/alive', '/server_info'):
        t = time.time()
        eq(anon.get(path).status_code, 200, path)
        check(time.time() - t < 0.5, f'{path} answered in {time.time() - t:.2f}s while an action runs')
    # Requests run by the workers but independent of the bash session: a
    # file list and an upload do not wait for the action either.
    t = time.time()
    r = client.post('/list_files', json={})
    eq(r.status_code, 200, 'list_files during the action')
    t2 = time.time()
    r = client.post('/upload_file', params={'destination': f'{WORK}/during', 'recursive': 'false'},
                    files={'file': ('d.txt', b'during')})
    eq(r.status_code, 200, f'upload during the action: {r.text}')
    check(time.time() - t < 1.0, f'list_files + upload answered in {t2 - t:.2f}s + {time.time() - t2:.2f}s '
          'while an action runs')
    check(th.is_alive(), 'the action was still running')
    th.join()
    eq(result['o']['content'], 'slept', 'the action completed')


def test_flood_and_many_processes_do_not_take_the_server_down():
    o = run('yes flood', timeout=2.0, blocking=True)
    eq(md(o)['exit_code'], -1, 'still running after the hard timeout')
    check(len(o['content']) <= 30000 + len(MARKER), 'truncated')
    o = run('C-c', is_input=True)
    eq(md(o)['exit_code'], 130, 'interrupted')
    o = run('for i in $(seq 150); do sleep 30 & done; echo started')
    check(o['content'].endswith('started'), 'started')
    eq(anon.get('/alive').status_code, 200, 'alive')
    o = run('kill $(jobs -p); wait 2>/dev/null; echo killed')
    check(o['content'].endswith('killed'), o['content'][-200:])
    eq(run('echo still here')['content'], 'still here', 'session works')


def test_write_and_read_default():
    o = act('write', {'path': 'w/new.txt', 'content': 'a\nb', 'start': 0, 'end': -1, 'thought': '',
                      'security_risk': -1})
    eq(o, {'message': f'I wrote to the file {WORK}/w/new.txt.', 'observation': 'write', 'content': '',
           'extras': {'path': f'{WORK}/w/new.txt'}}, 'write observation')
    with open(f'{WORK}/w/new.txt') as f:
        eq(f.read(), 'a\nb\n', 'file gains a trailing newline')
    st = os.stat(f'{WORK}/w/new.txt')
    eq(st.st_mode & 0o777, 0o664, 'mode')
    o = act('write', {'path': f'{WORK}/w/new.txt', 'content': 'X', 'start': 1, 'end': 2})
    with open(f'{WORK}/w/new.txt') as f:
        eq(f.read(), 'a\nX\n', 'lines [1:2] replaced')
    o = act('read', {'path': 'w/new.txt', 'start': 0, 'end': -1, 'thought': '', 'security_risk': -1,
                     'impl_source': 'default', 'view_range': None})
    eq(list(o.keys()), ['message', 'observation', 'content', 'extras'], 'read keys')
    eq(o['observation'], 'read', 'observation')
    eq(o['content'], 'a\nX\n', 'content')
    eq(o['extras'], {'path': f'{WORK}/w/new.txt', 'impl_source': 'default'}, 'extras')
    eq(act('read', {'path': 'w/new.txt', 'start': 1})['content'], 'X\n', 'start')


def test_read_errors_binary_and_media():
    o = act('read', {'path': 'nope.txt'})
    check_error_obs(o)
    eq(o['content'], f'File not found: {WORK}/nope.txt. Your current working directory is {WORK}.', 'missing')
    o = act('read', {'path': WORK})
    eq(o['content'], f'Path is a directory: {WORK}. You can only read files', 'directory')
    with open(f'{WORK}/bin.dat', 'wb') as f:
        f.write(bytes(range(256)) * 8)
    eq(act('read', {'path': f'{WORK}/bin.dat'})['content'], 'ERROR_BINARY_FILE', 'binary')
    # Relative paths miss the Python server's binary check (it looks in its
    # own working directory): the bytes must then decode as UTF-8.
    o = act('read', {'path': 'bin.dat'})
    check_error_obs(o)
    eq(o['content'], f'File could not be decoded as utf-8: {WORK}/bin.dat.', 'relative binary')
    eq(act('read', {'path': 'gone/x.pyc'})['content'], 'ERROR_BINARY_FILE', '*.pyc is binary by name')
    png = b'\x89PNG\r\n\x1a\n' + bytes(range(64))
    with open(f'{WORK}/pic.png', 'wb') as f:
        f.write(png)
    o = act('read', {'path': 'pic.png'})
    eq(o['content'], 'data:image/png;base64,' + base64.b64encode(png).decode(), 'png data URL')
    # An absolute path to an image is binary first, as in the Python server.
    eq(act('read', {'path': f'{WORK}/pic.png'})['content'], 'ERROR_BINARY_FILE', 'absolute png')
    eq(act('read', {'path': f'{WORK}/pic.png', 'impl_source': 'oh_aci'})['content'], 'ERROR_BINARY_FILE',
       'absolute png, oh_aci')
    with open(f'{WORK}/doc.pdf', 'wb') as f:
        f.write(b'%PDF-1.4 x')
    eq(act('read', {'path': 'doc.pdf'})['content'], 'data:application/pdf;base64,' +
       base64.b64encode(b'%PDF-1.4 x').decode(), 'pdf data URL')


def edit(command, path, **kw):
    args = {'path': path, 'command': command, 'file_text': None, 'old_str': None, 'new_str': None,
            'insert_line': None, 'content': '', 'start': 1, 'end': -1, 'thought': '', 'security_risk': -1,
            'impl_source': 'oh_aci'}
    args.update(kw)
    o = act('edit', args)
    eq(list(o.keys()), ['message', 'observation', 'content', 'extras'], 'edit keys')
    eq(o['observation'], 'edit', 'observation')
    eq(list(o['extras'].keys()), ['path', 'prev_exist', 'old_content', 'new_content', 'impl_source', 'diff',
                                  '_diff_cache'], 'edit extras keys')
    eq(o['extras']['impl_source'], 'oh_aci', 'impl_source')
    eq(o['extras']['old_content'], args['old_str'], 'old_content is the action old_str')
    eq(o['extras']['new_content'], args['new_str'], 'new_content is the action new_str')
    return o


def test_editor_create_view_replace_insert_undo():
    p = f'{WORK}/ed/app.py'
    os.makedirs(f'{WORK}/ed', exist_ok=True)
    o = edit('create', p, file_text='x = 1\ny = 2\n')
    eq(o['content'], f'File created successfully at: {p}', 'create')
    eq(o['extras']['diff'], f'--- {p}\n+++ {p}\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2', 'create diff (as difflib)')
    eq(edit('create', p, file_text='z')['content'], f'ERROR:\nInvalid `path` parameter: {p}. File already exists at: '
       f'{p}. Cannot overwrite files using command `create`.', 'create existing')
    o = act('read', {'path': p, 'impl_source': 'oh_aci', 'view_range': None})
    eq(o['content'], f"Here's the result of running `cat -n` on {p}:\n     1\tx = 1\n     2\ty = 2\n     3\t\n", 'view')
    eq(o['extras'], {'path': p, 'impl_source': 'oh_aci'}, 'read extras')
    o = act('read', {'path': p, 'impl_source': 'oh_aci', 'view_range': [2, 10]})
    eq(o['content'], "NOTE: We only show up to 2 since there're only 2 lines in this file.\n"
                     f"Here's the result of running `cat -n` on {p}:\n     2\ty = 2\n", 'view_range clamped')
    o = edit('str_replace', p, old_str='x = 1', new_str='x = 2')
    check(o['content'].startswith(f'The file {p} has been edited. Here\'s the result of running `cat -n` on a '
                                  f'snippet of {p}:\n     1\tx = 2\n'), o['content'])
    eq(o['extras']['diff'], f'--- {p}\n+++ {p}\n@@ -1 +1 @@\n-x = 1\n+x = 2', 'diff')
    o = edit('str_replace', p, old_str='nothere', new_str='q')
    eq(o['content'], f'ERROR:\nNo replacement was performed, old_str `nothere` did not appear verbatim in {p}.', 'miss')
    eq(o['extras']['diff'], '', 'no diff on error')
    edit('str_replace', p, old_str='y = 2', new_str='x = 2')
    o = edit('str_replace', p, old_str='x = 2', new_str='w')
    eq(o['content'], f'ERROR:\nNo replacement was performed. Multiple occurrences of old_str `x = 2` in lines [1, 2]. '
                     'Please ensure it is unique.', 'multiple')
    o = edit('str_replace', p, old_str='  x = 2\n\n  ', new_str='  ')
    eq(o['content'].count('ERROR'), 1, 'whitespace retry still sees two occurrences')
    o = edit('insert', p, insert_line=1, new_str='ins')
    with open(p) as f:
        eq(f.read(), 'x = 2\nins\nx = 2\n', 'inserted after line 1')
    eq(edit('insert', p, insert_line='1x', new_str='a')['content'],
       "ERROR:\nInvalid insert_line value: '1x'. Expected an integer.", 'insert_line string')
    eq(edit('insert', p, insert_line=99, new_str='a')['content'],
       'ERROR:\nInvalid `insert_line` parameter: 99. It should be within the range of allowed values: [0, 3]', 'range')
    o = edit('undo_edit', p)
    check(o['content'].startswith(f'Last edit to {p} undone successfully.'), 'undo')
    with open(p) as f:
        eq(f.read(), 'x = 2\nx = 2\n', 'undone')
    eq(edit('view', 'relative.py')['content'], 'ERROR:\nInvalid `path` parameter: relative.py. The path should be an '
       'absolute path, starting with `/`.', 'relative path')
    eq(edit('undo_edit', f'{WORK}/ed/none.py')['content'], f'ERROR:\nInvalid `path` parameter: {WORK}/ed/none.py. '
       f'The path {WORK}/ed/none.py does not exist. Please provide a valid path.', 'missing')


def parity_files(root, files):
    for rel, c in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(c, dict) and 'hex' in c:
            data = bytes.fromhex(c['hex'])
        elif isinstance(c, dict):
            data = b'x' * c['size']
        else:
            data = c.encode()
        with open(path, 'wb') as f:
            f.write(data)


def test_editor_matches_openhands_aci():
    """Every error path (and the edits between them) answers what openhands-aci 0.3.2 answered on the same files."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'editor-parity.json'), encoding='utf-8') as f:
        spec = json.load(f)
    d = f'{WORK}/parity'
    shutil.rmtree(d, ignore_errors=True)
    parity_files(d, spec['files'])
    os.makedirs(f'{d}/loop/inner')
    os.symlink('..', f'{d}/loop/inner/back')
    fill = lambda v: v.replace('{D}', d).replace('{W}', WORK) if isinstance(v, str) else v
    bad = []
    for i, step in enumerate(spec['steps']):
        a = {k: fill(v) for k, v in step.items() if k not in ('kind', 'expect')}
        if step['kind'] == 'read':
            o = act('read', {'path': a['path'], 'start': 0, 'end': -1, 'thought': '', 'security_risk': -1,
                             'impl_source': 'oh_aci', 'view_range': a['view_range']})
            got = ('[error] ' if o['observation'] == 'error' else '') + o['content']
        else:
            got = edit(a.pop('command'), a.pop('path'), **a)['content']
        if got != fill(step['expect']):
            bad.append(f'step {i} {json.dumps(step)[:160]}: got {got[:300]!r}')
    for rel, want in spec['files_after'].items():
        with open(f'{d}/{rel}', 'rb') as f:
            if f.read() != want.encode('latin-1'):
                bad.append(f'{rel} differs after the steps')
    shutil.rmtree(d, ignore_errors=True)
    check(not bad, '\n'.join(bad))


def test_editor_encodings_and_newlines():
    """Files that are not UTF-8 are read as Latin-1 and written back in it; CRLF reads as LF."""
    d = f'{WORK}/enc'
    os.makedirs(d, exist_ok=True)
    p = f'{d}/latin1.txt'
    with open(p, 'wb') as f:
        f.write('caf\xe9 au lait\r\nna\xefve\n'.encode('latin-1'))
    o = edit('str_replace', p, old_str='caf\xe9', new_str='th\xe9')
    check(o['content'].startswith(f'The file {p} has been edited.'), o['content'])
    with open(p, 'rb') as f:
        eq(f.read(), 'th\xe9 au lait\nna\xefve\n'.encode('latin-1'), 'written back in Latin-1, newlines as read')
    o = edit('str_replace', p, old_str='au', new_str='\u2603\u2603')
    eq(o['content'], "ERROR:\nRan into 'latin-1' codec can't encode characters in position 4-5: ordinal not in "
                     f"range(256) while trying to write to {p}", 'unencodable text')
    with open(p, 'rb') as f:
        eq(f.read(), 'th\xe9 au lait\nna\xefve\n'.encode('latin-1'), 'file untouched by a failed write')
    eq(edit('undo_edit', p)['content'].split('\n')[1:3], ['     1\tcaf\xe9 au lait', '     2\tna\xefve'], 'undo')


def test_editor_directory_view():
    os.makedirs(f'{WORK}/tree/sub/deep/deeper', exist_ok=True)
    os.makedirs(f'{WORK}/tree/.hidden', exist_ok=True)
    open(f'{WORK}/tree/a.txt', 'w').close()
    open(f'{WORK}/tree/sub/b.txt', 'w').close()
    o = act('read', {'path': f'{WORK}/tree', 'impl_source': 'oh_aci'})
    t = f'{WORK}/tree'
    eq(o['content'], f"Here's the files and directories up to 2 levels deep in {t}, excluding hidden items:\n"
                     f"{t}/\n{t}/a.txt\n{t}/sub/\n{t}/sub/b.txt\n{t}/sub/deep/\n\n1 hidden files/directories in this "
                     f"directory are excluded. You can use 'ls -la {t}' to see them.", 'listing')


FALLBACK_NOTE = ('[IPython is not installed in this Python: the cell ran as plain Python, with %pip, %cd, !cmd and '
                 '%%bash translated]')


def ipython_expected(python):
    """'ipython' or 'fallback': what the caller says the sandbox's python3 has
    (OHBOX_EXPECT_IPYTHON), else what the executor's interpreter on this host has."""
    want = os.environ.get('OHBOX_EXPECT_IPYTHON')
    if want:
        return want
    import subprocess
    return 'ipython' if subprocess.call([python, '-c', 'import IPython'], stderr=subprocess.DEVNULL) == 0 else 'fallback'


def cell(code, timeout=120.0):
    return act('run_ipython', {'code': code, 'include_extra': False}, timeout=timeout)


def test_ipython():
    """run_ipython: IPython's InteractiveShell where the sandbox's python3 has
    IPython, plain Python with %pip, %cd, !cmd and %%bash where it has not."""
    o = act('run_ipython', {'code': 'import os\nx = 20\nx + 1', 'thought': '', 'include_extra': True,
                            'confirmation_state': 'confirmed', 'security_risk': -1, 'kernel_init_code': ''})
    if o['observation'] == 'error' and os.environ.get('OHBOX_EXPECT_IPYTHON') == 'none':
        eq(o['content'], 'run_ipython needs python3 in the sandbox, and none was found in PATH', 'no python3')
        return
    eq(list(o.keys()), ['message', 'observation', 'content', 'extras', 'success'], 'keys')
    eq(o['observation'], 'run_ipython', 'observation')
    eq(sorted(o['extras'].keys()), ['code', 'image_urls'], 'extras')
    eq(o['success'], True, 'success')
    lines = o['content'].split('\n')
    python = lines[-1][len('[Jupyter Python interpreter: '):-1]
    check(lines[-1].startswith('[Jupyter Python interpreter: /') and os.path.basename(python).startswith('python'),
          lines[-1])
    if os.environ.get('OHBOX_EXPECT_PYTHON'):
        eq(python, os.environ['OHBOX_EXPECT_PYTHON'], 'interpreter path')
    mode = ipython_expected(python)
    note = [] if mode == 'ipython' else [FALLBACK_NOTE]
    eq(lines, ['21'] + note + [f'[Jupyter current working directory: {WORK}]', lines[-1]], 'value, note, extras')
    tail = '' if mode == 'ipython' else '\n' + FALLBACK_NOTE
    o = cell('print(x * 2)\nos.getcwd()')
    eq(o['content'], "40\n'" + WORK + "'" + tail, 'globals persist; print then value')
    run('cd /tmp')
    eq(cell('os.getcwd()')['content'], "'/tmp'" + tail, 'follows bash cwd')
    run(f'cd {WORK}')
    o = cell('1/0')
    check('ZeroDivisionError: division by zero' in o['content'] and
          ('Cell In' in o['content'] and '----> 1 1/0' in o['content'] if mode == 'ipython' else 'Traceback' in o['content']), o['content'])
    eq(cell('y = 1')['content'], '[Code executed successfully with no output]' + tail, 'no output')
    # The magics agents use.
    eq(cell('!echo bang $((6*7))')['content'], 'bang 42' + tail, '!cmd')
    eq(cell('%%bash\necho from bash\nfor i in 1 2; do echo $i; done')['content'], 'from bash\n1\n2' + tail, '%%bash')
    eq(cell('files = !printf "a\\nb\\n"\nfiles')['content'], "['a', 'b']" + tail, 'x = !cmd')
    d = cell('import tempfile\ntempfile.mkdtemp(prefix="ipy")')['content'].split('\n')[0].strip("'")
    check(d.startswith('/') and 'ipy' in d, d)
    o = act('run_ipython', {'code': f'%cd {d}', 'include_extra': True})
    eq(o['content'].split('\n')[0], d, '%cd prints the new directory')
    # The cwd line is the bash session's, as in OpenHands' server.
    check(f'\n[Jupyter current working directory: {WORK}]\n' in o['content'], o['content'])
    eq(cell('os.getcwd()')['content'], f"'{d}'" + tail, '%cd moved the kernel')
    cell(f'os.chdir("/")\nos.rmdir("{d}")')
    o = cell('%pip --help')
    restart = 'Note: you may need to restart the kernel to use updated packages.'
    if o['content'].startswith(f'{python}: No module named pip'):
        # As OpenHands' own kernel answers where pip is missing: %pip ran `python -m pip`
        # (IPython runs it on a pty: CRLF).
        nl = '\r\n' if mode == 'ipython' else '\n'
        eq(o['content'], f'{python}: No module named pip{nl}{restart}' + tail, '%pip without pip')
    else:
        check('Usage:' in o['content'] and 'pip <command> [options]' in o['content'] and restart in o['content'],
              '%pip --help: ' + o['content'][:300])
        # A local wheel (no network): %pip installs it and the next cell imports it.
        o = cell('import tempfile, zipfile\nw = tempfile.mkdtemp(prefix="whl")\n'
                 'whl = w + "/ohboxdemo-1.0-py3-none-any.whl"\n'
                 'with zipfile.ZipFile(whl, "w") as z:\n'
                 '    z.writestr("ohboxdemo.py", "VALUE = 42\\n")\n'
                 '    z.writestr("ohboxdemo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: ohboxdemo\\nVersion: 1.0\\n")\n'
                 '    z.writestr("ohboxdemo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: ohbox-test\\n'
                 'Root-Is-Purelib: true\\nTag: py3-none-any\\n")\n'
                 '    z.writestr("ohboxdemo-1.0.dist-info/RECORD", "ohboxdemo.py,,\\nohboxdemo-1.0.dist-info/METADATA,,\\n'
                 'ohboxdemo-1.0.dist-info/WHEEL,,\\nohboxdemo-1.0.dist-info/RECORD,,\\n")\n'
                 'w')
        w = o['content'].split('\n')[0].strip("'")
        o = cell(f'%pip install --no-index --no-deps --disable-pip-version-check --target {w}/site '
                 f'{w}/ohboxdemo-1.0-py3-none-any.whl')
        check('Successfully installed ohboxdemo-1.0' in o['content'] and restart in o['content'], o['content'])
        eq(cell(f'import sys, shutil\nsys.path.insert(0, "{w}/site")\nimport ohboxdemo\nshutil.rmtree("{w}")\n'
                'ohboxdemo.VALUE')['content'], '42' + tail, 'the installed wheel imports')
    if mode == 'ipython':
        eq(cell('get_ipython().__class__.__mro__[1].__name__')['content'], "'InteractiveShell'", 'a real IPython shell')
        eq(cell('from IPython.display import display\ndisplay(5)\n"last"')['content'], "5'last'", 'display_data')
        o = cell('%time 2 + 3')
        check('Wall time:' in o['content'] and o['content'].endswith('5'), o['content'])
        cell('6 * 7')
        eq(cell('Out[max(Out)] + 1')['content'], '43', 'IPython output history')
    else:
        o = cell('%timeit 1')
        check(o['content'].startswith('Traceback') and 'NameError: magic %timeit is not available: IPython is not '
              'installed in this Python' in o['content'], o['content'])
    t = time.time()
    o = cell('import time\ntime.sleep(30)', timeout=1.0)
    check(time.time() - t < 4, 'interrupted at the timeout')
    check('KeyboardInterrupt' in o['content'] and '[Execution timed out (1.0 seconds).]' in o['content'],
          o['content'])
    eq(cell('x')['content'], '20' + tail, 'state kept after interrupt')
    run(f'cd {WORK}')


def test_browse_unknown_and_malformed():
    for a, args in (('browse', {'url': 'https://example.com', 'thought': '', 'return_axtree': False}),
                    ('browse_interactive', {'browser_actions': 'goto("x")', 'thought': '',
                                            'browsergym_send_msg_to_user': '', 'return_axtree': False})):
        o = act(a, args)
        check_error_obs(o)
        eq(o['content'], 'Browser functionality is not supported or disabled.', a)
    o = act('frobnicate', {})
    check_error_obs(o)
    check('frobnicate' in o['content'], 'names the type')
    o = act('run', {'is_input': False})
    check_error_obs(o)
    check('command' in o['content'], 'names the missing argument')
    r = client.post('/execute_action', content=b'{not json', headers={'Content-Type': 'application/json'})
    eq(r.status_code, 400, 'malformed JSON')
    check(isinstance(r.json()['detail'], str), 'detail')
    eq(client.post('/execute_action', json={'no': 'action'}).status_code, 400, 'no action')
    eq(anon.get('/nothing').status_code, 404, 'unknown path')
    eq(anon.get('/nothing').json(), {'detail': 'Not Found'}, '404 body')
    eq(run('echo ok')['content'], 'ok', 'still serving')


def test_list_files():
    d = f'{WORK}/lf'
    os.makedirs(f'{d}/Bdir', exist_ok=True)
    os.makedirs(f'{d}/adir', exist_ok=True)
    for n in ('b.txt', 'A.txt', '.hid'):
        open(f'{d}/{n}', 'w').close()
    r = client.post('/list_files', json={'path': d})
    eq(r.status_code, 200, 'status')
    eq(r.json(), ['adir/', 'Bdir/', '.hid', 'A.txt', 'b.txt'], 'dirs first, case-insensitive, hidden kept')
    eq(client.post('/list_files', json={'path': 'lf'}).json(), r.json(), 'relative to the working dir')
    eq(client.post('/list_files', json={'path': '/no/such/dir'}).json(), [], 'missing')
    eq(client.post('/list_files', json={'path': f'{d}/b.txt'}).json(), [], 'a file')
    check('lf/' in client.post('/list_files', json={}).json(), 'no path: the working dir')


def test_upload_download_and_zip_slip():
    r = client.post('/upload_file', params={'destination': f'{WORK}/up', 'recursive': 'false'},
                    files={'file': ('hello.txt', b'hi there')})
    eq(r.status_code, 200, r.text)
    eq(r.json(), {'filename': 'hello.txt', 'destination': f'{WORK}/up', 'recursive': False}, 'reply')
    with open(f'{WORK}/up/hello.txt', 'rb') as f:
        eq(f.read(), b'hi there', 'content')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        z.writestr('proj/src/main.c', 'int main;')
        z.writestr('proj/README', 'r')
    r = client.post('/upload_file', params={'destination': f'{WORK}/up2', 'recursive': 'true'},
                    files={'file': ('proj.zip', buf.getvalue())})
    eq(r.status_code, 200, r.text)
    with open(f'{WORK}/up2/proj/src/main.c') as f:
        eq(f.read(), 'int main;', 'unpacked')
    check(not os.path.exists(f'{WORK}/up2/proj.zip'), 'zip removed')
    victim = os.path.join(os.path.dirname(WORK), 'zipslip-victim.txt')
    for bad in ('../zipslip-victim.txt', victim, 'ok/../../zipslip-victim.txt'):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, 'w') as z:
            z.writestr('fine.txt', 'fine')
            z.writestr(bad, 'pwned')
        r = client.post('/upload_file', params={'destination': f'{WORK}/slip', 'recursive': 'true'},
                        files={'file': ('evil.zip', buf.getvalue())})
        eq(r.status_code, 400, f'zip-slip entry {bad!r} refused')
        check('zipslip-victim.txt' in r.json()['detail'], f'the error names the entry: {r.text}')
        check(not os.path.exists(victim), 'nothing written outside')
        check(not os.path.exists(f'{WORK}/slip/fine.txt'), 'nothing written at all')
    r = client.post('/upload_file', params={'destination': 'relative'}, files={'file': ('x', b'x')})
    eq(r.status_code, 400, 'relative destination')
    r = client.get('/download_files', params={'path': f'{WORK}/up2'})
    eq(r.status_code, 200, 'download')
    eq(r.headers['content-type'], 'application/zip', 'type')
    check('up2.zip' in r.headers['content-disposition'], 'file name')
    with zipfile.ZipFile(io.BytesIO(r.content)) as z:
        eq(sorted(z.namelist()), ['proj/README', 'proj/src/main.c'], 'names relative to the path')
        eq(z.read('proj/src/main.c'), b'int main;', 'data')
    eq(client.get('/download_files', params={'path': '/no/such'}).status_code, 404, 'missing')
    eq(client.get('/download_files', params={'path': 'rel'}).status_code, 400, 'relative')


def test_zip_directories_not_made_through_symlinks():
    # A symlink already in the destination points elsewhere; a zip's
    # directories (a directory entry, or a file's parents) are made beneath
    # the destination or not at all, never where the link points.
    dest, elsewhere = f'{WORK}/zipdest', f'{WORK}/zip-elsewhere'
    for d in (dest, elsewhere):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    os.symlink(elsewhere, f'{dest}/link')
    for entry, data in (('link/made/', ''), ('link/made/f.txt', 'x')):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, 'w') as z:
            z.writestr(entry, data)
        r = client.post('/upload_file', params={'destination': dest, 'recursive': 'true'},
                        files={'file': ('through-link.zip', buf.getvalue())})
        eq(r.status_code, 400, f'zip entry {entry!r} through a symlink: {r.text}')
        eq(os.listdir(elsewhere), [], f'what zip entry {entry!r} made where the symlink points')


def test_vscode_and_mcp():
    r = client.get('/vscode/connection_token')
    eq((r.status_code, r.json()), (200, {'token': None}), 'token')
    r = client.post('/update_mcp_server', json=[{'name': 'fs', 'command': 'npx', 'args': ['x'], 'env': {}}])
    eq(r.status_code, 200, 'mcp')
    eq(r.json()['detail'], 'MCP server updated successfully', 'detail')
    check('no MCP proxy' in r.json()['router_error_log'], 'says so')
    eq(client.post('/update_mcp_server', json={'not': 'a list'}).status_code, 400, 'not a list')


def test_queue_full_answers_503():
    """Against an executor with OHBOX_EXECUTOR_WORKERS=2 and
    OHBOX_EXECUTOR_QUEUE=2: one worker runs a long action; of five more
    actions sent meanwhile, three are accepted (the other worker waiting for
    the session, two queue slots) and complete in turn, two are refused at
    once with 503 and a JSON reason; /alive answers all along."""
    flag = f'{WORK}/queue-started'
    if os.path.exists(flag):
        os.unlink(flag)
    results = {}

    def bg(name, cmd):
        t = time.time()
        r = client.post('/execute_action', json=envelope('run', dict(RUN_DEFAULTS, command=cmd, blocking=True), 30.0),
                        timeout=40)
        results[name] = (r.status_code, r.json(), time.time() - t)

    long = threading.Thread(target=bg, args=('long', f'touch {flag}; sleep 4; echo slept'))
    long.start()
    deadline = time.time() + 10
    while not os.path.exists(flag):
        check(time.time() < deadline, 'the long action started')
        time.sleep(0.05)
    threads = [threading.Thread(target=bg, args=(f'e{i}', f'echo e{i}')) for i in range(5)]
    for th in threads:
        th.start()
    t = time.time()
    eq(anon.get('/alive').status_code, 200, '/alive while full')
    check(time.time() - t < 0.5, f'/alive answered in {time.time() - t:.2f}s while the queue is full')
    for th in threads:
        th.join()
    long.join()
    eq(results['long'][0], 200, 'the long action')
    eq(results['long'][1]['content'], 'slept', 'the long action completed')
    done = [k for k in results if k != 'long' and results[k][0] == 200]
    refused = [k for k in results if k != 'long' and results[k][0] == 503]
    eq((len(done), len(refused)), (3, 2), f'accepted/refused: {results}')
    for k in done:
        eq(results[k][1]['content'], k, f'queued action {k}')
    for k in refused:
        check('busy' in results[k][1]['detail'], f'503 detail: {results[k][1]}')
        check(results[k][2] < 1.0, f'refused at once ({results[k][2]:.2f}s)')
    eq(client.post('/list_files', json={}).status_code, 200, 'accepted again once drained')


ALL = {
    'http': [test_alive_and_server_info_need_no_key, test_auth_refused_without_or_with_wrong_key,
             test_browse_unknown_and_malformed, test_list_files, test_upload_download_and_zip_slip,
             test_zip_directories_not_made_through_symlinks,
             test_vscode_and_mcp],
    'run': [test_run_observed_echo_false, test_run_shell_holds_only_its_terminal, test_run_cd_tracks_working_dir, test_run_background_job_pid,
            test_run_state_persists, test_run_multiple_commands_refused, test_run_command_is_reported_escaped,
            test_run_comment_lines, test_run_alternate_screen, test_run_nested_shell, test_run_nothing_running,
            test_run_no_change_timeout_continue_and_ctrl_c, test_run_input_to_read,
            test_run_hard_timeout_then_not_executed, test_run_truncation, test_run_terminal_rendering,
            test_run_hidden_and_static, test_alive_answers_during_long_action,
            test_flood_and_many_processes_do_not_take_the_server_down],
    'files': [test_write_and_read_default, test_read_errors_binary_and_media,
              test_editor_create_view_replace_insert_undo, test_editor_matches_openhands_aci,
              test_editor_encodings_and_newlines, test_editor_directory_view],
    'ipython': [test_ipython],
    'queue': [test_queue_full_answers_503],
}


def main():
    return pytests.run(PROG, GROUPS, ALL)


if __name__ == '__main__':
    sys.exit(main())
