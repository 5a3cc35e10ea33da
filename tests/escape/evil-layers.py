#!/usr/bin/python3
"""Hostile image layers for tests/integration/escape.sh, built here (Python's
tarfile stores whatever name, link target and mode it is given) and pushed
to a test registry over the distribution API (one single-layer image per
case, repository escape/CASE:latest).

Usage: evil-layers.py REGISTRY_URL OUTSIDE
  OUTSIDE: the host directory the entries aim at (it holds `sentinel`).
Prints one line per case: NAME|EXPECT|TEXT|DIFFID
  EXPECT refuse: the pull must fail (exit 6, integrity) with TEXT in the error
  EXPECT accept: the pull must succeed; TEXT is PATH=WHAT, what the layer must
  hold at PATH (file:CONTENT, link:TARGET, dir) instead of having written
  through the link that was there.
The shapes are those of the layer CVEs: CVE-2014-6407/CVE-2014-9356 (a
symlink, then entries through it), CVE-2018-15664-like hardlinks, umoci
CVE-2021-29136 (an entry naming the layer root), CVE-2021-32760 (chmod
through a symlink), whiteout names that traverse."""
import gzip
import hashlib
import io
import json
import sys
import tarfile
import urllib.request

REG, OUT = sys.argv[1].rstrip('/'), sys.argv[2].rstrip('/')
UP = '../' * 40  # enough to reach / from any layer directory
REL_OUT = UP + OUT.lstrip('/')


def F(path, data='evil', mode=0o644):
    return ('file', path, data, mode)


def D(path, mode=0o755):
    return ('dir', path, None, mode)


def L(path, target, mode=0o777):
    return ('symlink', path, target, mode)


def H(path, target):
    return ('hardlink', path, target, 0o644)


CASES = [
    # name, entries, expect, text
    ('absolute_path', [F(OUT + '/evil')], 'refuse', 'leaves the layer'),
    ('absolute_overwrite', [F(OUT + '/sentinel', mode=0o777)], 'refuse', 'leaves the layer'),
    ('dotdot', [F(REL_OUT + '/evil')], 'refuse', 'leaves the layer'),
    ('dotdot_inside_dir', [D('a'), F('a/' + REL_OUT + '/evil')], 'refuse', 'leaves the layer'),
    ('dotdot_dot_prefix', [F('./' + REL_OUT + '/sentinel')], 'refuse', 'leaves the layer'),
    ('dotdot_dir_entry', [D('..', 0o777)], 'refuse', 'leaves the layer'),
    ('dotdot_whiteout', [F(REL_OUT + '/.wh.sentinel', '')], 'refuse', 'leaves the layer'),
    ('symlink_then_file', [L('l', OUT), F('l/evil')], 'refuse', 'passes through a symlink'),
    ('symlink_relative_then_file', [L('l', REL_OUT), F('l/evil')], 'refuse', 'passes through a symlink'),
    ('symlink_then_dir', [L('l', OUT), D('l/sub', 0o777)], 'refuse', 'passes through a symlink'),
    ('symlink_nested', [D('d'), L('d/l', REL_OUT), F('d/l/sub/evil')], 'refuse', 'passes through a symlink'),
    ('symlink_then_symlink', [L('l', OUT), L('l/x', '/etc/passwd')], 'refuse', 'passes through a symlink'),
    ('symlink_inside_never_followed', [D('real'), L('in', 'real'), F('in/f')], 'refuse',
     'passes through a symlink'),
    ('whiteout_through_symlink', [L('l', OUT), F('l/.wh.sentinel', '')], 'refuse', 'passes through a symlink'),
    ('opaque_through_symlink', [L('l', OUT), F('l/.wh..wh..opq', '')], 'refuse', 'passes through a symlink'),
    ('root_entry_symlink', [L('.', OUT), F('evil')], 'refuse', 'only a directory may name the layer root'),
    ('root_entry_symlink_slash', [L('./', REL_OUT), F('evil')], 'refuse', 'only a directory may name'),
    ('root_entry_file', [F('.')], 'refuse', 'only a directory may name the layer root'),
    ('root_entry_hardlink', [F('x', 'x'), H('./', 'x')], 'refuse', 'only a directory may name the layer root'),
    ('hardlink_absolute', [H('evil', OUT + '/sentinel')], 'refuse', 'leaves the layer'),
    ('hardlink_dotdot', [H('evil', REL_OUT + '/sentinel')], 'refuse', 'leaves the layer'),
    ('hardlink_through_symlink', [L('l', OUT), H('evil', 'l/sentinel')], 'refuse', 'passes through a symlink'),
    ('whiteout_dotdot_name', [F('.wh...', '')], 'refuse', 'invalid whiteout name'),
    ('whiteout_dotdot_sub', [F('sub/.wh..', '')], 'refuse', 'invalid whiteout name'),
    # A later entry at a symlink's path replaces the link, never writes
    # through it (CVE-2021-32760: chmod and write through a symlink).
    ('symlink_replaced_by_file', [L('f', OUT + '/sentinel'), F('f', 'mine', 0o4777)], 'accept', 'f=file:mine'),
    ('symlink_replaced_by_dir', [L('ld', OUT), D('ld', 0o777)], 'accept', 'ld=dir'),
    ('symlink_replaced_by_hardlink', [L('h', OUT + '/sentinel'), F('target', 't'), H('h', 'target')], 'accept',
     'h=file:t'),
    ('symlink_mode_bits', [L('l', OUT + '/sentinel', 0o7777), L('ldir', OUT, 0o7777)], 'accept',
     'l=link:' + OUT + '/sentinel'),
]


def layer(entries):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode='w', format=tarfile.PAX_FORMAT) as t:
        for kind, path, arg, mode in entries:
            ti = tarfile.TarInfo(path)
            ti.mode = mode
            ti.mtime = 1600000000
            data = None
            if kind == 'file':
                data = arg.encode()
                ti.size = len(data)
            elif kind == 'dir':
                ti.type = tarfile.DIRTYPE
            elif kind == 'symlink':
                ti.type = tarfile.SYMTYPE
                ti.linkname = arg
            else:
                ti.type = tarfile.LNKTYPE
                ti.linkname = arg
            # tarfile strips a trailing "/" and normalises nothing else.
            ti.name = path
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
    tar = raw.getvalue()
    return tar, gzip.compress(tar, mtime=0)


def sha(b):
    return 'sha256:' + hashlib.sha256(b).hexdigest()


def request(method, url, body=None, ctype='application/octet-stream'):
    req = urllib.request.Request(url, data=body, method=method)
    req.add_header('Content-Type', ctype)
    with urllib.request.urlopen(req) as r:
        return r.status, r.headers


def push_blob(repo, blob):
    d = sha(blob)
    _, h = request('POST', f'{REG}/v2/{repo}/blobs/uploads/', b'')
    loc = h['Location']
    if loc.startswith('/'):
        loc = REG + loc
    sep = '&' if '?' in loc else '?'
    request('PUT', f'{loc}{sep}digest={d}', blob)
    return {'mediaType': None, 'digest': d, 'size': len(blob)}


def main():
    for name, entries, expect, text in CASES:
        repo = f'escape/{name}'
        tar, gz = layer(entries)
        ld = push_blob(repo, gz)
        ld['mediaType'] = 'application/vnd.oci.image.layer.v1.tar+gzip'
        cfg = json.dumps({'architecture': 'amd64', 'os': 'linux', 'config': {},
                          'rootfs': {'type': 'layers', 'diff_ids': [sha(tar)]}}).encode()
        cd = push_blob(repo, cfg)
        cd['mediaType'] = 'application/vnd.oci.image.config.v1+json'
        man = json.dumps({'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.manifest.v1+json',
                          'config': cd, 'layers': [ld]}).encode()
        request('PUT', f'{REG}/v2/{repo}/manifests/latest', man, 'application/vnd.oci.image.manifest.v1+json')
        print(f'{name}|{expect}|{text}|{sha(tar)}')


main()
