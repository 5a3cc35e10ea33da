#!/usr/bin/python3
"""Hostile zips through ohbox-executor's real POST /upload_file (issue 14
item 17), over HTTP on loopback.  Run by tests/integration/executor-zip.sh
against an executor started with OHBOX_EXECUTOR_MAX_UPLOAD=1 MiB (so the
unpacked budget is 1 MiB) and OHBOX_EXECUTOR_MAX_ZIP_ENTRIES=ENTRIES, whose
working area is WORK (every upload goes to a new directory below WORK/dest;
nothing may ever appear elsewhere in WORK).

Usage: zip_attack.py PORT API_KEY WORK ENTRIES GROUP...
Prints one PASS:/FAIL: line per test."""
import ctypes
import io
import json
import os
import shutil
import stat
import struct
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytests
from pytests import Fail
import zipfile

PORT, KEY, WORK, MAX_ENTRIES = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
GROUPS = sys.argv[5:]
PROG = 'executor-zip'
BUDGET = 1 << 20
_dest_serial = [0]


def check(cond, what):
    if not cond:
        raise Fail(what)


def new_dest():
    _dest_serial[0] += 1
    return os.path.join(WORK, 'dest', f'd{_dest_serial[0]}')


def upload(dest, data, name='p.zip', timeout=120):
    """POST /upload_file?recursive=true: (status, parsed JSON reply)."""
    boundary = 'ohbox-test-boundary-7f3a'
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            f'Content-Type: application/zip\r\n\r\n').encode() + data + f'\r\n--{boundary}--\r\n'.encode()
    q = urllib.parse.urlencode({'destination': dest, 'recursive': 'true'})
    req = urllib.request.Request(f'http://127.0.0.1:{PORT}/upload_file?{q}', data=body, method='POST',
                                 headers={'Content-Type': f'multipart/form-data; boundary={boundary}',
                                          'X-Session-API-Key': KEY})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b'null')
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b'null')


def tree(path):
    """Every path below PATH (relative; directories with a trailing /,
    symlinks with a trailing @)."""
    out = []
    for d, dirs, files in os.walk(path):
        rel = os.path.relpath(d, path)
        for x in dirs + files:
            p = os.path.normpath(os.path.join(rel, x))
            if os.path.islink(os.path.join(d, x)):
                out.append(p + '@')
            else:
                out.append(p + '/' if x in dirs else p)
    return sorted(out)


def outside():
    """What exists in WORK besides the destinations WORK/dest/dN (an
    escape, or a leftover)."""
    top = [x for x in os.listdir(WORK) if x != 'dest']
    return sorted(top + ['dest/' + x for x in os.listdir(os.path.join(WORK, 'dest')) if not x[1:].isdigit()])


def refused(dest, data, status, words, what):
    """Uploads DATA to DEST: STATUS with every word of WORDS in the detail,
    nothing unpacked and nothing left anywhere."""
    st, reply = upload(dest, data)
    detail = (reply or {}).get('detail', '') if isinstance(reply, dict) else ''
    check(st == status, f'{what}: status {st} {reply}, expected {status}')
    for w in words:
        check(w in detail, f'{what}: the error does not say `{w}`: {detail!r}')
    left = tree(dest) if os.path.isdir(dest) else []
    check(left == [], f'{what}: left behind in the destination: {left[:10]}')
    check(outside() == [], f'{what}: written outside the destination: {outside()}')
    return detail


def zipped(entries, compression=zipfile.ZIP_DEFLATED):
    """A zip of ENTRIES: (name, bytes) for files, (name, None) for
    directories, (name, ('link', target)) for symlinks."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', compression) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            if data is None:
                info.external_attr = (stat.S_IFDIR | 0o755) << 16 | 0x10
                z.writestr(info, b'')
            elif isinstance(data, tuple):
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                z.writestr(info, data[1].encode())
            else:
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                info.compress_type = compression
                z.writestr(info, data)
    return buf.getvalue()


# ---- the upload read twice by name ----------------------------------------------------

IN_OPEN, IN_CLOSE_WRITE, IN_CREATE = 0x20, 0x08, 0x100


class Swapper(threading.Thread):
    """Plays the sandbox's agent: watches the upload's destination and, once
    the executor has written the upload's temporary file and opened it again
    to read it, renames a hostile zip over that name."""

    def __init__(self, dest, hostile):
        super().__init__(daemon=True)
        self.hostile, self.swapped, self.names = hostile, None, set()
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK)
        check(self.fd >= 0, 'inotify_init1')
        self.wd = self.libc.inotify_add_watch(self.fd, dest.encode(), IN_OPEN | IN_CLOSE_WRITE | IN_CREATE)
        check(self.wd >= 0, f'inotify_add_watch {dest}')
        self.dest, self.stop = dest, False

    def events(self):
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            time.sleep(0.0002)
            return
        off = 0
        while off < len(data):
            _, mask, _, n = struct.unpack_from('iIII', data, off)
            name = data[off + 16:off + 16 + n].rstrip(b'\0').decode()
            off += 16 + n
            yield mask, name

    def run(self):
        written = set()
        while not self.stop and self.swapped is None:
            for mask, name in self.events() or ():
                if not name.startswith('.ohbox-upload-'):
                    continue
                self.names.add(name)
                if mask & IN_CLOSE_WRITE:
                    written.add(name)
                elif mask & IN_OPEN and name in written:
                    os.rename(self.hostile, os.path.join(self.dest, name))
                    self.swapped = name
                    break
        os.close(self.fd)


def test_upload_not_reread_by_name():
    dest = new_dest()
    os.makedirs(dest)
    # Many entries: reading them takes the executor long enough for the swap.
    benign = zipped([(f'f{i:05d}', b'') for i in range(min(MAX_ENTRIES, 20000))], zipfile.ZIP_STORED)
    hostile_path = os.path.join(WORK, 'hostile.zip')
    with open(hostile_path, 'wb') as f:
        f.write(zipped([('../escaped-dir/', None), ('../../escaped-dir/', None), ('../escaped.txt', b'x')]))
    sw = Swapper(dest, hostile_path)
    sw.start()
    try:
        st, reply = upload(dest, benign)
    finally:
        sw.stop = True
        sw.join(5)
        if os.path.exists(hostile_path):
            os.unlink(hostile_path)
    check(outside() == [], f'the swapped-in zip wrote outside the destination: {outside()} '
                           f'(swapped {sw.swapped}, reply {st} {reply})')
    check(sw.swapped is None, f'the upload was read again by its name `{sw.swapped}` after it was written '
                              f'(reply {st} {reply})')
    check(st == 200, f'the benign upload: {st} {reply}')
    check(len(tree(dest)) == min(MAX_ENTRIES, 20000), f'{len(tree(dest))} files unpacked')


# ---- names ----------------------------------------------------------------------------

def test_dotdot_and_absolute_names_refused():
    for bad in ('../escaped.txt', 'ok/../../escaped.txt', '/escaped.txt', '../escaped-dir/', 'a\\..\\x'):
        dest = new_dest()
        refused(dest, zipped([('first.txt', b'1'), (bad, None if bad.endswith('/') else b'x')]), 400,
                [f'`{bad}`'], f'entry {bad!r}')


def test_symlink_entry_then_through_it():
    dest = new_dest()
    target = os.path.join(WORK, 'escaped-through-link')
    refused(dest, zipped([('a.txt', b'a'), ('link', ('link', target)), ('link/x.txt', b'x')]), 400,
            ['`link/x.txt`', '`link`'], 'a zip entry beneath a symlink entry of the zip')


def test_file_entry_then_through_it():
    dest = new_dest()
    refused(dest, zipped([('a', b'a file'), ('a/b.txt', b'b')]), 400, ['`a/b.txt`', '`a`'],
            'a zip entry beneath a file entry of the zip')


def test_symlink_in_destination_not_followed():
    dest = new_dest()
    os.makedirs(dest)
    target = os.path.join(WORK, 'escaped-planted')
    os.makedirs(target)
    try:
        os.symlink(target, os.path.join(dest, 'planted'))
        st, reply = upload(dest, zipped([('planted/x.txt', b'x')]))
        detail = (reply or {}).get('detail', '')
        check(st == 400 and '`planted/x.txt`' in detail, f'through a symlink of the destination: {st} {reply}')
        check(os.listdir(target) == [], f'written through the symlink: {os.listdir(target)}')
        check(tree(dest) == ['planted@'], f'destination now holds {tree(dest)}')
    finally:
        os.unlink(os.path.join(dest, 'planted'))
        os.rmdir(target)


# ---- budgets ---------------------------------------------------------------------------

def test_bomb_within_four_times_the_upload_limit():
    # 3 MiB of zeros in a ~3 KiB zip: over the 1 MiB budget, under the old 4x.
    dest = new_dest()
    refused(dest, zipped([('small.txt', b'ok'), ('zeros', bytes(3 << 20))]), 413,
            ['`zeros`', str(BUDGET)], 'a zip bomb of 3 times the budget')


def test_bomb_leaves_nothing_behind():
    dest = new_dest()
    refused(dest, zipped([('small.txt', b'ok'), ('zeros', bytes(8 << 20))]), 413, [str(BUDGET)],
            'a zip bomb of 8 times the budget')


def test_overlapping_entries_bomb():
    """Many central-directory entries share one local file's data (a
    non-recursive zip bomb): each counts with its own declared size."""
    one = zipped([('e000', bytes(512 << 10))])
    eocd = one.rindex(b'PK\x05\x06')
    cd_off = struct.unpack_from('<I', one, eocd + 16)[0]
    central = one[cd_off:eocd]
    entries = []
    name_len = struct.unpack_from('<H', central, 28)[0]
    fixed = central[:46]
    for i in range(40):
        entries.append(fixed + b'e%03d' % i + central[46 + name_len:])
    cd = b''.join(entries)
    data = one[:cd_off] + cd + struct.pack('<4sHHHHIIH', b'PK\x05\x06', 0, 0, len(entries), len(entries),
                                             len(cd), cd_off, 0)
    dest = new_dest()
    refused(dest, data, 413, [str(BUDGET)], '40 entries sharing one 512 KiB entry')


def test_entry_count_budget():
    dest = new_dest()
    refused(dest, zipped([(f'f{i}', b'') for i in range(MAX_ENTRIES + 1)], zipfile.ZIP_STORED), 413,
            [str(MAX_ENTRIES), 'entries'], f'{MAX_ENTRIES + 1} entries')


def test_declared_entry_count_refused_at_once():
    data = bytearray(zipped([('a', b'a'), ('b', b'b')]))
    eocd = data.rindex(b'PK\x05\x06')
    struct.pack_into('<HH', data, eocd + 8, 65000, 65000)
    dest = new_dest()
    t = time.monotonic()
    refused(dest, bytes(data), 413, ['65000', 'entries'], 'a zip that says it has 65000 entries')
    check(time.monotonic() - t < 5, 'the entry count was not checked first')


# ---- broken entries --------------------------------------------------------------------

def test_corrupt_entry_named_and_nothing_left():
    data = bytearray(zipped([('a.txt', b'first entry'), ('b.txt', b'second entry')], zipfile.ZIP_STORED))
    pos = data.index(b'second entry')
    data[pos] ^= 0xff
    dest = new_dest()
    refused(dest, bytes(data), 400, ['`b.txt`'], 'an entry whose CRC does not match')


def test_existing_file_kept_when_an_upload_fails():
    dest = new_dest()
    os.makedirs(dest)
    with open(os.path.join(dest, 'keep.txt'), 'w') as f:
        f.write('before')
    data = bytearray(zipped([('keep.txt', b'replaced'), ('bad.txt', b'corrupted data')], zipfile.ZIP_STORED))
    data[data.index(b'corrupted data')] ^= 0xff
    st, reply = upload(dest, bytes(data))
    check(st == 400, f'{st} {reply}')
    with open(os.path.join(dest, 'keep.txt')) as f:
        kept = f.read()
    check(kept == 'before', f'a failed upload changed an existing file: {kept!r}')
    check(tree(dest) == ['keep.txt'], f'left behind: {tree(dest)}')


def test_benign_zip_unpacks():
    dest = new_dest()
    os.makedirs(os.path.join(dest, 'p'))
    with open(os.path.join(dest, 'p', 'old.txt'), 'w') as f:
        f.write('old')
    data = zipped([('p/', None), ('p/a.txt', b'A' * 1000), ('p/empty/', None), ('p/b/c.txt', b'C'),
                   ('p/old.txt', b'new'), ('p/link', ('link', '/etc/passwd'))])
    st, reply = upload(dest, data)
    check(st == 200 and reply == {'filename': 'p.zip', 'destination': dest, 'recursive': True}, f'{st} {reply}')
    check(tree(dest) == ['p/', 'p/a.txt', 'p/b/', 'p/b/c.txt', 'p/empty/', 'p/old.txt'], f'unpacked {tree(dest)}')
    with open(os.path.join(dest, 'p', 'old.txt')) as f:
        check(f.read() == 'new', 'an existing file is replaced')
    check(outside() == [], f'outside: {outside()}')


def test_zip_of_names_only_unpacks():
    # ZipFile.writestr(NAME, ...) sets permission bits without a file type
    # (and no directory entries): such entries are files.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        z.writestr('q/a.txt', 'A')
        z.writestr('q/b/c.txt', 'C')
    dest = new_dest()
    st, reply = upload(dest, buf.getvalue())
    check(st == 200, f'{st} {reply}')
    check(tree(dest) == ['q/', 'q/a.txt', 'q/b/', 'q/b/c.txt'], f'unpacked {tree(dest)}')


ALL = {
    'attacks': [test_upload_not_reread_by_name, test_dotdot_and_absolute_names_refused,
                test_symlink_entry_then_through_it, test_file_entry_then_through_it,
                test_symlink_in_destination_not_followed, test_bomb_within_four_times_the_upload_limit,
                test_bomb_leaves_nothing_behind, test_overlapping_entries_bomb, test_entry_count_budget,
                test_declared_entry_count_refused_at_once, test_corrupt_entry_named_and_nothing_left,
                test_existing_file_kept_when_an_upload_fails, test_benign_zip_unpacks,
                test_zip_of_names_only_unpacks],
}


def clean_outside():
    # A failed test's leftovers must not fail the next one.
    for x in outside():
        p = os.path.join(WORK, x)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)


def main():
    return pytests.run(PROG, GROUPS, ALL, after_each=clean_outside, only=os.environ.get('OHBOX_TEST_ONLY', ''))


if __name__ == '__main__':
    sys.exit(main())
