#!/bin/bash
# executor-closure.sh: the executor does not need the image's libc.
# executor/closure.sh packs ohbox-executor with its shared-library closure
# and loader under /.ohbox of a busybox-static root filesystem (no glibc,
# no loader, no bash anywhere else), which is entered with unshare + chroot;
# the executor, started as
#   /.ohbox/lib/ld-linux-x86-64.so.2 --library-path /.ohbox/lib /.ohbox/bin/ohbox-executor
# must serve /alive and file actions there, unpack and stream zips with the
# minizip of the closure (no libarchive, libxml2 or ICU in it), and report a
# missing bash cleanly.  Then a bash is layered in the same way (its own
# closure under /.ohbox-bash, as the build issue will do) and `run` must
# work.  Last, with a
# libmicrohttpd built without HTTPS, the closure has no GnuTLS and the idle
# executor's RSS (a release build's) is under 4 MiB.
set -u
. "$(dirname "$0")/../lib/executor_script.sh"
bb=$(command -v busybox) || skip_all "busybox is missing (apt-get install busybox-static)"
ldd "$bb" >/dev/null 2>&1 && skip_all "$bb is dynamically linked: install busybox-static"
/usr/bin/python3 -c 'import httpx' 2>/dev/null || skip_all "python3-httpx is missing (apt-get install python3-httpx)"
if [ "$(id -u)" = 0 ]; then ns=(unshare -m --propagation private); else ns=(unshare -r -m --propagation private); fi
"${ns[@]}" true 2>/dev/null || skip_all "cannot create a mount namespace here"

tmp=$(mktemp -d /tmp/ohbox-closure-test.XXXXXX)
pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap 'stop; rm -rf "$tmp"' EXIT
root=$tmp/root
fails=0
pass() { echo "PASS: $name/$1"; }
fail() { echo "FAIL: $name/$1: $2"; fails=$((fails + 1)); }

# A busybox rootfs.
mkdir -p "$root"/{bin,etc,tmp,dev,proc,workspace,root}
chmod 1777 "$root/tmp"
cp "$bb" "$root/bin/busybox"
for applet in $("$bb" --list); do [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"; done
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"

if out=$(sh "$src/executor/closure.sh" "$exe" "$root/.ohbox" 2>&1); then
  pass closure_made
else
  fail closure_made "$out"
  exit 1
fi
stray=$(find "$root" \( -name 'libc.so*' -o -name 'ld-linux*' \) -not -path "$root/.ohbox/*" | head -n 1)
if [ -z "$stray" ] && [ -x "$root/.ohbox/lib/ld-linux-x86-64.so.2" ]; then
  pass rootfs_has_no_libc
else
  fail rootfs_has_no_libc "found ${stray:-no loader in /.ohbox/lib}"
fi

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start() {
  "${ns[@]}" sh -c 'r=$1; shift; mount --rbind /dev "$r/dev" && mount -t proc proc "$r/proc" 2>/dev/null; exec chroot "$r" "$@"' \
    sh "$root" /.ohbox/lib/ld-linux-x86-64.so.2 --library-path /.ohbox/lib /.ohbox/bin/ohbox-executor "$port" \
    --working-dir /workspace --username root --user-id 0 >"$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    /usr/bin/python3 -c "import httpx,sys; sys.exit(httpx.get('http://127.0.0.1:$port/alive').status_code != 200)" \
      2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# zipcheck TEST PYTHON-STATEMENTS: runs them with `base` (the executor's
# URL), httpx, io and zipfile imported; they print "ok" or what went wrong.
zipcheck() {
  local res
  res=$(/usr/bin/python3 - "$port" "$2" <<'PY'
import httpx, io, sys, zipfile
base = f'http://127.0.0.1:{sys.argv[1]}'
def zipped(files):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()
try:
    exec(sys.argv[2])
except Exception as e:
    print(f'{type(e).__name__}: {e}')
PY
)
  [ "$res" = ok ] && pass "$1" || fail "$1" "$res"
}

check() {  # check TEST PYTHON-EXPRESSION-ON-o (o = the observation of action JSON $3)
  local res
  res=$(/usr/bin/python3 - "$port" "$3" "$2" <<'PY'
import httpx, json, sys
port, action, expr = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
r = httpx.post(f'http://127.0.0.1:{port}/execute_action', json={'action': action}, timeout=60)
o = r.json()
print('ok' if r.status_code == 200 and eval(expr) else f'status {r.status_code}: {json.dumps(o)[:300]}')
PY
)
  [ "$res" = ok ] && pass "$1" || fail "$1" "$res"
}

if start; then
  pass starts_without_image_libc
  check write_in_busybox "o['observation'] == 'write' and o['extras']['path'] == '/workspace/x.txt'" \
    '{"action":"write","args":{"path":"/workspace/x.txt","content":"hi"},"timeout":30}'
  check read_back "o['content'] == 'hi\n' and o['observation'] == 'read'" \
    '{"action":"read","args":{"path":"/workspace/x.txt"},"timeout":30}'
  check run_without_bash_is_an_error_observation "o['observation'] == 'error' and 'bash' in o['content']" \
    '{"action":"run","args":{"command":"echo hi"},"timeout":30}'
  # Zips go through the closure's minizip (linked, not loaded on first use).
  zipcheck zip_upload_and_download_in_the_closure "
r = httpx.post(base + '/upload_file', params={'destination': '/workspace/z', 'recursive': 'true'},
               files={'file': ('p.zip', zipped({'p/a.txt': 'A', 'p/b/c.txt': 'C'}))})
assert r.status_code == 200, r.text
r = httpx.get(base + '/download_files', params={'path': '/workspace/z'})
assert r.status_code == 200, r.text
with zipfile.ZipFile(io.BytesIO(r.content)) as z:
    assert sorted(z.namelist()) == ['p/a.txt', 'p/b/c.txt'], z.namelist()
    assert z.read('p/b/c.txt') == b'C'
print('ok')"
else
  fail starts_without_image_libc "$(tail -n 5 "$tmp/log")"
fi
stop

# Layer a bash in (its own closure) and drive it.
if sh "$src/executor/closure.sh" "$(command -v bash)" "$root/.ohbox-bash" >/dev/null 2>&1; then
  printf '#!/bin/sh\nexec /.ohbox-bash/lib/ld-linux-x86-64.so.2 --library-path /.ohbox-bash/lib /.ohbox-bash/bin/bash "$@"\n' \
    >"$root/bin/bash"
  chmod 755 "$root/bin/bash"
  if start; then
    check run_with_layered_bash "o['content'] == 'hi' and o['extras']['metadata']['exit_code'] == 0" \
      '{"action":"run","args":{"command":"echo hi"},"timeout":30}'
    check busybox_tools_from_the_image "o['content'].split() == ['x.txt', 'z'] and o['extras']['metadata']['working_dir'] == '/workspace'" \
      '{"action":"run","args":{"command":"ls /workspace"},"timeout":30}'
  else
    fail run_with_layered_bash "$(tail -n 5 "$tmp/log")"
  fi
  stop
else
  echo "SKIP: $name/run_with_layered_bash: closure.sh could not pack bash"
fi
# The zip library needs only zlib: nothing of libarchive's closure (libxml2
# and its 30 MB of ICU data, nettle, lzma, zstd...) is packed.
heavy=$(ls "$root/.ohbox/lib" | grep -E '^lib(archive|xml2|icu)' | tr '\n' ' ')
if [ -z "$heavy" ] && [ -e "$root/.ohbox/lib/libminizip.so.1" ]; then
  pass closure_has_minizip_and_no_libarchive_or_icu
else
  fail closure_has_minizip_and_no_libarchive_or_icu "lib: $(ls "$root/.ohbox/lib" | tr '\n' ' ')"
fi

# With Debian's libmicrohttpd rebuilt without HTTPS (executor/mhd-notls.sh:
# the build tree's `make executor-mhd-notls`, or configure's --with-mhd-notls
# that contrib/install-deps.sh fills; never fetched here) the closure has
# no GnuTLS and the idle executor stays under the 4 MiB RSS target.
notls=
for d in "$build/executor-mhd-notls/lib" \
  "$(sed -n 's/^#define OHBOX_MHD_NOTLS_DIR "\(.*\)"$/\1/p' "$build/config.h" 2>/dev/null)"; do
  [ -z "$notls" ] && [ -n "$d" ] && [ -e "$d/libmicrohttpd.so.12" ] && notls=$d
done
if [ -z "$notls" ]; then
  echo "SKIP: $name/closure_without_gnutls: no libmicrohttpd without HTTPS (contrib/install-deps.sh builds it)"
  echo "SKIP: $name/idle_rss_under_4MiB: no libmicrohttpd without HTTPS"
else
  # A sanitizer build's RSS means nothing: its release twin (make check
  # builds it) is measured then, as images of a release build ship it.
  lexe=$exe
  if ldd "$exe" 2>/dev/null | grep -q 'libasan\|libubsan' && [ -x "$build/tests/executor/ohbox-executor-release" ]; then
    lexe=$build/tests/executor/ohbox-executor-release
  fi
  rm -rf "$root/.ohbox"
  if out=$(OHBOX_CLOSURE_LIBS=$notls sh "$src/executor/closure.sh" "$lexe" "$root/.ohbox" 2>&1) &&
     mv "$root/.ohbox/bin/$(basename "$lexe")" "$root/.ohbox/bin/ohbox-executor.tmp" &&
     mv "$root/.ohbox/bin/ohbox-executor.tmp" "$root/.ohbox/bin/ohbox-executor" &&
     ! ls "$root/.ohbox/lib" | grep -q 'gnutls\|p11-kit'; then
    pass closure_without_gnutls
  else
    fail closure_without_gnutls "${out:-$(ls "$root/.ohbox/lib" | tr '\n' ' ')}"
  fi
  if start; then
    check run_without_gnutls "o['content'] == 'hi'" '{"action":"run","args":{"command":"echo hi"},"timeout":30}'
    sleep 0.5
    rss=$(awk '/^Rss:/ {print $2}' "/proc/$pid/smaps_rollup")
    echo "# idle executor from the closure: $(grep -E '^(Rss|Pss|Private_Clean|Private_Dirty):' "/proc/$pid/smaps_rollup" | tr -s ' ' | tr '\n' ' ')"
    if ldd "$lexe" 2>/dev/null | grep -q 'libasan\|libubsan'; then
      # ASan's shadow memory and quarantine make the figure meaningless;
      # the release build is measured here and by bench/action.sh.
      echo "SKIP: $name/idle_rss_under_4MiB: sanitizer build (ASan inflates RSS); measured in release builds"
    elif [ -n "$rss" ] && [ "$rss" -lt 4096 ]; then
      pass idle_rss_under_4MiB
    else
      fail idle_rss_under_4MiB "Rss ${rss:-?} KiB"
    fi
  else
    fail run_without_gnutls "$(tail -n 5 "$tmp/log")"
  fi
  stop
fi
[ $fails -eq 0 ] || { echo "---- executor log"; tail -n 20 "$tmp/log"; }
exit $((fails > 0))
