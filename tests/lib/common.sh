# tests/lib/common.sh: sourced by every integration script (bash).
#
# Gives each script:
#   - a temp dir $T_TMP under $OHBOX_TEST_WORK/tmp, removed by an EXIT trap
#     (kept when OHBOX_TEST_KEEP=1);
#   - process tracking: whatever t_start/t_track started (registries, token
#     servers, proxies) is killed by the trap, also when a test fails or the
#     script is interrupted, and with setpriv --pdeathsig when the shell that
#     started it dies without running its trap;
#   - result lines the runner counts: "PASS: SCRIPT/NAME", "FAIL: SCRIPT/NAME:
#     REASON", "SKIP: SCRIPT/NAME: REASON";
#   - run_test NAME FUNCTION [ARGS]: runs FUNCTION in a subshell with errexit,
#     errtrace and pipefail, its own store ($T_ROOT), HOME and XDG dirs (so no
#     auth file of the machine leaks in) and a time limit; on failure prints
#     the failed assertion or command and the last lines of its output;
#   - assertions (assert_*) that print what differed and return 1;
#   - `ohbox`: $OHBOX_BUILDDIR/ohbox with --root $T_ROOT and a time limit;
#   - t_free_port, t_wait_port, t_wait_until, t_veth_netns.
#
# Environment: OHBOX_BUILDDIR, OHBOX_SRCDIR, OHBOX_TEST_WORK (set by
# tests/run-tests.sh; defaults work when a script is run by hand),
# OHBOX_TEST_ONLY (run only tests whose name contains it), OHBOX_TEST_KEEP,
# T_TEST_TIMEOUT (s per test, default 240), T_OHBOX_TIMEOUT (s per ohbox
# command, default 120).

if [ -n "${T_COMMON_LOADED:-}" ]; then
  return 0
fi
T_COMMON_LOADED=1
set -u

T_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${OHBOX_SRCDIR:=$(cd "$T_LIB/../.." && pwd)}"
: "${OHBOX_BUILDDIR:=$OHBOX_SRCDIR}"
: "${OHBOX_TEST_WORK:=$OHBOX_BUILDDIR/tests/work}"
export OHBOX_SRCDIR OHBOX_BUILDDIR OHBOX_TEST_WORK
: "${OHBOX_BIN:=$OHBOX_BUILDDIR/ohbox}"
: "${T_TEST_TIMEOUT:=240}"
: "${T_OHBOX_TIMEOUT:=120}"
# Debian's interpreter: the harness scripts are stdlib-only, but the pyenv
# python3 on PATH is not guaranteed to exist on a CI machine.
if [ -x /usr/bin/python3 ]; then
  T_PY=/usr/bin/python3
else
  T_PY=python3
fi
# Parsing of tool output must not depend on the caller's locale.
export LC_ALL=C

T_SCRIPT=$(basename "$0" .sh)
T_MAIN_PID=$BASHPID
mkdir -p "$OHBOX_TEST_WORK/tmp"
T_TMP=$(mktemp -d "$OHBOX_TEST_WORK/tmp/$T_SCRIPT.XXXXXX")
T_PIDFILE=$T_TMP/pids
T_WORK=$T_TMP
T_ROOT=$T_TMP/root
T_REASON=$T_TMP/.reason
T_NAME=setup
T_PASSED=0
T_FAILED=0
T_SKIPPED=0
# fd 9 is where helpers log what they run (the test's log inside run_test),
# so that captured stdout/stderr of commands stay clean.
exec 9>&2

# ---------------------------------------------------------------- processes

# _t_starttime PID: the process start time (field 22 of /proc/PID/stat), used
# to make sure a recorded pid still names the process we started.
_t_starttime ()
{
  local stat rest
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  rest=${stat##*) }
  set -- $rest
  echo "${20}"
}

# _t_alive PID STARTTIME: PID still runs the process we started (a zombie
# waiting for its parent to reap it counts as dead).
_t_alive ()
{
  local stat rest
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  rest=${stat##*) }
  set -- $2 $rest
  [ "$2" != Z ] && [ "$2" != X ] && [ "${21}" = "$1" ]
}

# t_track PID: kill PID when the current test (or, outside run_test, the script) ends.
t_track ()
{
  local st
  st=$(_t_starttime "$1") || return 0
  echo "$1 $st" >>"$T_PIDFILE"
}

# t_start LOG CMD...: starts CMD in the background (stdout and stderr to LOG),
# tracks it and sets T_PID. The process gets SIGTERM if the shell that started
# it dies (setpriv --pdeathsig), so nothing outlives a killed test script.
t_start ()
{
  local log=$1
  shift
  # The log is truncated: a forgotten LOG argument must never make a
  # program's own path (say "$T_PY") the file that gets overwritten.
  case $log in
    "$T_TMP"/* | "$OHBOX_TEST_WORK"/*) ;;
    *)
      echo "t_start: the log \`$log\` is not under \$T_TMP or \$OHBOX_TEST_WORK (missing LOG argument?)" >&2
      return 2
      ;;
  esac
  if [ -n "${_T_PDEATH:-}" ]; then
    setpriv --pdeathsig TERM -- "$@" >"$log" 2>&1 </dev/null &
  else
    "$@" >"$log" 2>&1 </dev/null &
  fi
  T_PID=$!
  t_track "$T_PID"
}
if setpriv --help 2>/dev/null | grep -q -- --pdeathsig; then
  _T_PDEATH=1
fi

# _t_kill_pidfile FILE: TERM, then after up to 3 s KILL, every process listed
# in FILE whose start time still matches (a recycled pid is left alone).
_t_kill_pidfile ()
{
  local file=$1 pid st live i
  [ -f "$file" ] || return 0
  live=()
  while read -r pid st; do
    _t_alive "$pid" "$st" || continue
    kill -TERM "$pid" 2>/dev/null && live+=("$pid $st")
  done <"$file"
  for i in $(seq 30); do
    [ ${#live[@]} -gt 0 ] || break
    local still=()
    for e in "${live[@]}"; do
      set -- $e
      _t_alive "$1" "$2" && still+=("$e")
    done
    live=("${still[@]+"${still[@]}"}")
    [ ${#live[@]} -gt 0 ] && sleep 0.1
  done
  for e in "${live[@]+"${live[@]}"}"; do
    set -- $e
    kill -KILL "$1" 2>/dev/null
  done
  rm -f "$file"
}

# _t_descendants PID: the pids of every descendant of PID (from /proc).
_t_descendants ()
{
  local top=$1 f stat rest pid ppid
  local -A kids=()
  for f in /proc/[0-9]*/stat; do
    read -r stat 2>/dev/null <"$f" || continue
    pid=${stat%% *}
    rest=${stat##*) }
    set -- $rest
    ppid=$2
    kids[$ppid]="${kids[$ppid]-} $pid"
  done
  local queue=("$top") found=() p c
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    for c in ${kids[$p]-}; do
      found+=("$c")
      queue+=("$c")
    done
  done
  echo "${found[@]+"${found[@]}"}"
}

# _t_kill_tree PID: stops PID, then TERMs it and all its descendants (a test
# that timed out, with whatever it was waiting for), KILL after 2 s.
_t_kill_tree ()
{
  local pids p i
  kill -STOP "$1" 2>/dev/null
  pids="$1 $(_t_descendants "$1")"
  for p in $pids; do
    kill -TERM "$p" 2>/dev/null
  done
  kill -CONT "$1" 2>/dev/null
  for i in $(seq 20); do
    for p in $pids; do
      kill -0 "$p" 2>/dev/null && break
      p=
    done
    [ -z "$p" ] && return 0
    sleep 0.1
  done
  for p in $pids; do
    kill -KILL "$p" 2>/dev/null
  done
  return 0
}

_t_cleanup ()
{
  local rc=$?
  trap - EXIT INT TERM
  # A child forked by this shell (a subshell, or a `cmd &` not yet exec'ed)
  # inherits the traps for an instant: only the script's own shell cleans up.
  if [ "$BASHPID" != "$T_MAIN_PID" ]; then
    exit "$rc"
  fi
  local f
  for f in "$T_TMP"/t.*/pids; do
    [ -f "$f" ] && _t_kill_pidfile "$f"
  done
  _t_kill_pidfile "$T_TMP/pids"
  if [ "${OHBOX_TEST_KEEP:-0}" = 1 ]; then
    echo "# kept $T_TMP" >&2
  else
    rm -rf "$T_TMP"
  fi
  echo "# $T_SCRIPT: $T_PASSED passed, $T_FAILED failed, $T_SKIPPED skipped"
  if [ "$T_FAILED" -gt 0 ] && [ "$rc" -eq 0 ]; then
    rc=1
  fi
  exit "$rc"
}
trap _t_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- results

t_pass ()
{
  echo "PASS: $T_SCRIPT/$1"
  T_PASSED=$((T_PASSED + 1))
}

t_fail ()
{
  echo "FAIL: $T_SCRIPT/$1: $2"
  T_FAILED=$((T_FAILED + 1))
}

# t_sanitized: true when ohbox was built with --enable-sanitizers (ASan's
# shadow memory and quarantine make memory figures meaningless there).
t_sanitized ()
{
  grep -q '^SANITIZER_LDFLAGS = .*-fsanitize' "$OHBOX_BUILDDIR/Makefile" 2>/dev/null
}

# t_judge_memory NAME FILE LIMIT_KIB WHAT [release]: a memory bound measured
# inside a test (KiB in FILE) reported as its own result: PASS/FAIL in
# release builds, SKIP with the reason in sanitizer builds unless "release"
# says the process measured was built without the sanitizers.
t_judge_memory ()
{
  local name=$1 file=$2 limit=$3 what=$4 kind=${5:-} v
  v=$(cat "$file" 2>/dev/null)
  if [ -z "$v" ]; then
    t_fail "$name" "$what was not measured (its test failed first)"
  elif [ "$kind" != release ] && t_sanitized; then
    t_skip "$name" "sanitizer build: $what $v KiB includes ASan's shadow memory and quarantine; the bound ($limit KiB) is checked in release builds (make check without --enable-sanitizers)"
  elif [ "$v" -lt "$limit" ]; then
    t_pass "$name"
  else
    t_fail "$name" "$what $v KiB, expected under $limit KiB"
  fi
}

t_skip ()
{
  echo "SKIP: $T_SCRIPT/$1: $2"
  T_SKIPPED=$((T_SKIPPED + 1))
}

# skip REASON: inside a test, ends it as skipped.
skip ()
{
  echo "$*" >"$T_WORK/.skip"
  exit 77
}

# require_cmd CMD...: inside a test, skips it when a tool is missing.
require_cmd ()
{
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed (contrib/install-deps.sh installs it)"
  done
}

# _t_on_err RC COMMAND LINE: the ERR trap of a test. Records where the test
# failed: the innermost frame outside tests/lib (an assertion that failed is
# reported at the line of the test that called it, with that line's text).
_t_on_err ()
{
  local rc=$1 cmd=$2 file=${BASH_SOURCE[1]-?} line=$3 i n=${#BASH_SOURCE[@]}
  if [ "$(dirname "$file")" -ef "$T_LIB" ]; then
    for ((i = 1; i + 1 < n; i++)); do
      if ! [ "$(dirname "${BASH_SOURCE[i + 1]}")" -ef "$T_LIB" ]; then
        file=${BASH_SOURCE[i + 1]} line=${BASH_LINENO[i]}
        cmd=$(sed -n "${line}p" "$file" 2>/dev/null | sed 's/^[[:space:]]*//')
        break
      fi
    done
  fi
  local what="$(basename "$file"):$line: \`$cmd\` exited with status $rc"
  echo "ERROR: $what" >&2
  if [ ! -s "$T_REASON" ]; then
    echo "$what" >"$T_REASON"
  else
    echo "$(head -n 1 "$T_REASON") (at $(basename "$file"):$line)" >"$T_REASON.new"
    mv "$T_REASON.new" "$T_REASON"
  fi
}

# run_test NAME FUNCTION [ARGS...]
run_test ()
{
  local name=$1 fn=$2
  shift 2
  if [ -n "${OHBOX_TEST_ONLY:-}" ]; then
    case $name in *"$OHBOX_TEST_ONLY"*) ;; *) return 0 ;; esac
  fi
  local dir=$T_TMP/t.${name//[^A-Za-z0-9_.-]/_}
  rm -rf "$dir"
  mkdir -p "$dir/home" "$dir/run" "$dir/root"
  chmod 700 "$dir/run"
  local log=$dir/log
  local start=$SECONDS
  (
    T_NAME=$name
    T_WORK=$dir
    T_ROOT=$dir/root
    T_PIDFILE=$dir/pids
    T_REASON=$dir/.reason
    export HOME=$dir/home XDG_RUNTIME_DIR=$dir/run XDG_CONFIG_HOME=$dir/home/.config
    export XDG_DATA_HOME=$dir/home/.local/share XDG_CACHE_HOME=$dir/home/.cache
    unset REGISTRY_AUTH_FILE DOCKER_CONFIG
    cd "$dir"
    exec 9>&2
    set -eE -o pipefail
    trap '_t_on_err "$?" "$BASH_COMMAND" "$LINENO"' ERR
    "$fn" "$@"
  ) >"$log" 2>&1 </dev/null &
  local tpid=$!
  # The time limit: a watchdog that kills the test's tree when it expires.
  # (Not `wait -n PID PID`: bash 5.2 misses a child that has already exited,
  # and a fast test then waited for the whole time limit.)
  (
    sleep "$T_TEST_TIMEOUT"
    : >"$dir/.timed_out"
    _t_kill_tree "$tpid"
  ) >/dev/null 2>&1 </dev/null &
  local wpid=$!
  wait "$tpid"
  local rc=$?
  local timed_out=0
  if [ -e "$dir/.timed_out" ]; then
    timed_out=1
    rc=124
    wait "$wpid"
  else
    # Freeze the watchdog, kill its sleep and itself. The sleep is found in
    # the frozen watchdog's /proc children list (pkill -P, where the kernel
    # has no such list, reads every process's stat: 35 ms per test).
    kill -STOP "$wpid" 2>/dev/null
    local kids= children=/proc/$wpid/task/$wpid/children
    if [ -e "$children" ]; then
      # (one line of pids without a newline: read sets kids and returns 1)
      read -r kids <"$children" 2>/dev/null || true
      [ -z "$kids" ] || kill -KILL $kids 2>/dev/null
    else
      pkill -KILL -P "$wpid" 2>/dev/null
    fi
    kill -KILL "$wpid" 2>/dev/null
    wait "$wpid" 2>/dev/null
  fi
  _t_kill_pidfile "$dir/pids"
  # A failed test may have stopped before removing its sandboxes: remove
  # those of its store, so that they do not outlive the run.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -x "$OHBOX_BIN" ]; then
    "$OHBOX_BIN" --root "$dir/root" ps -a -q 2>/dev/null |
      xargs -r timeout -k 5 60 "$OHBOX_BIN" --root "$dir/root" rm -f >/dev/null 2>&1 || true
  fi
  local secs=$((SECONDS - start))
  if [ "$rc" -eq 0 ]; then
    t_pass "$name"
  elif [ "$rc" -eq 77 ] && [ -f "$dir/.skip" ]; then
    t_skip "$name" "$(head -n 1 "$dir/.skip")"
  else
    local reason
    if [ "$timed_out" = 1 ]; then
      reason="timed out after $T_TEST_TIMEOUT s"
    elif [ -s "$dir/.reason" ]; then
      reason=$(head -n 1 "$dir/.reason")
    else
      reason="exited with status $rc"
    fi
    t_fail "$name" "$reason"
    echo "    ---- last lines of the output of $name ($secs s):"
    tail -n 25 "$log" | sed 's/^/    | /'
  fi
  echo "# $name: $secs s" >&9
  if [ "${OHBOX_TEST_KEEP:-0}" != 1 ] && [ "$rc" -eq 0 ]; then
    rm -rf "$dir"
  fi
  return 0
}

# t_setup_or_die NAME FUNCTION [ARGS...]: runs script-level setup (registries,
# images) in the current shell; on failure reports FAIL: SCRIPT/NAME with the
# output and ends the script (the tests that need it cannot run).
t_setup_or_die ()
{
  local name=$1 fn=$2
  shift 2
  local log=$T_TMP/setup-$name.log rc=0
  "$fn" "$@" >"$log" 2>&1 </dev/null || rc=$?
  if [ "$rc" -ne 0 ]; then
    t_fail "$name" "setup \`$fn\` failed with status $rc"
    tail -n 30 "$log" | sed 's/^/    | /'
    exit 1
  fi
}

# ---------------------------------------------------------------- assertions

# _t_assert_fail MESSAGE: prints and records the failure; returns 1.
_t_assert_fail ()
{
  echo "ASSERTION FAILED: $*" >&2
  if [ ! -s "$T_REASON" ]; then
    printf '%s' "$*" | head -c 600 | tr '\n' ' ' >"$T_REASON"
    echo >>"$T_REASON"
  fi
  return 1
}

# _t_short TEXT: TEXT on one line, cut to 300 characters, for messages.
_t_short ()
{
  local s
  s=$(printf '%s' "$1" | tr '\n' ' ')
  if [ ${#s} -gt 300 ]; then
    s="${s:0:300}..."
  fi
  printf '%s' "$s"
}

# assert_eq EXPECTED ACTUAL [WHAT]
assert_eq ()
{
  [ "$1" = "$2" ] && return 0
  _t_assert_fail "${3:-value}: expected \"$(_t_short "$1")\", got \"$(_t_short "$2")\""
}

assert_ne ()
{
  [ "$1" != "$2" ] && return 0
  _t_assert_fail "${3:-value}: expected anything but \"$(_t_short "$1")\""
}

# assert_contains HAYSTACK NEEDLE [WHAT]
assert_contains ()
{
  case $1 in *"$2"*) return 0 ;; esac
  _t_assert_fail "${3:-text} does not contain \"$2\": \"$(_t_short "$1")\""
}

assert_not_contains ()
{
  case $1 in *"$2"*) ;; *) return 0 ;; esac
  _t_assert_fail "${3:-text} contains \"$2\": \"$(_t_short "$1")\""
}

# assert_match TEXT ERE [WHAT]: some line of TEXT matches the extended regex.
assert_match ()
{
  # A here-string, not a pipe: grep -q leaves at the first match, and the
  # writer of a pipe could die of SIGPIPE (pipefail would call that a miss).
  grep -Eq -- "$2" <<<"$1" && return 0
  _t_assert_fail "${3:-text} does not match /$2/: \"$(_t_short "$1")\""
}

assert_no_match ()
{
  grep -Eq -- "$2" <<<"$1" || return 0
  _t_assert_fail "${3:-text} matches /$2/: \"$(_t_short "$1")\""
}

# assert_int OP A B [WHAT] with OP one of -eq -ne -lt -le -gt -ge.
assert_int ()
{
  if ! [[ $2 =~ ^-?[0-9]+$ ]] || ! [[ $3 =~ ^-?[0-9]+$ ]]; then
    _t_assert_fail "${4:-number}: not integers: \"$2\" $1 \"$3\""
    return 1
  fi
  local ok=1
  case $1 in
    -eq) [ "$2" -eq "$3" ] ;;
    -ne) [ "$2" -ne "$3" ] ;;
    -lt) [ "$2" -lt "$3" ] ;;
    -le) [ "$2" -le "$3" ] ;;
    -gt) [ "$2" -gt "$3" ] ;;
    -ge) [ "$2" -ge "$3" ] ;;
    *) false ;;
  esac && ok=0
  [ "$ok" = 0 ] && return 0
  _t_assert_fail "${4:-number}: expected $2 $1 $3"
}

assert_file_exists ()
{
  [ -e "$1" ] || [ -L "$1" ] && return 0
  _t_assert_fail "${2:-file} \`$1\` does not exist"
}

assert_file_absent ()
{
  [ ! -e "$1" ] && [ ! -L "$1" ] && return 0
  _t_assert_fail "${2:-file} \`$1\` exists"
}

assert_dir_exists ()
{
  [ -d "$1" ] && return 0
  _t_assert_fail "${2:-directory} \`$1\` does not exist"
}

# assert_gone PID [WHAT]: no process PID runs (zombies count as gone).
assert_gone ()
{
  local stat rest i
  for i in $(seq 20); do
    read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
    rest=${stat##*) }
    case $rest in Z*|X*) return 0 ;; esac
    sleep 0.1
  done
  _t_assert_fail "${2:-process} $1 still runs: $(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)"
}

# assert_jq JSON FILTER [WHAT]: jq -e FILTER is true on JSON.
assert_jq ()
{
  local r
  if r=$(printf '%s' "$1" | jq -e "$2" 2>&1); then
    return 0
  fi
  _t_assert_fail "${3:-JSON} fails \`$2\` (jq: $(_t_short "$r")): $(_t_short "$1")"
}

# t_run CMD...: runs CMD, never fails; sets $out, $err (text) and $rc.
t_run ()
{
  local o=$T_WORK/.stdout e=$T_WORK/.stderr
  rc=0
  "$@" >"$o" 2>"$e" || rc=$?
  out=$(cat "$o")
  err=$(cat "$e")
  {
    echo "  [exit $rc] $*"
    head -n 15 "$o" | sed 's/^/  stdout| /'
    head -n 15 "$e" | sed 's/^/  stderr| /'
  } >&9
  return 0
}

# assert_exit CODE CMD...: runs CMD (output in $out, $err, status in $rc) and
# checks its exit status.
assert_exit ()
{
  local want=$1
  shift
  t_run "$@"
  [ "$rc" -eq "$want" ] && return 0
  _t_assert_fail "\`$*\` exited with $rc, expected $want; stderr: $(_t_short "$err")"
}

# assert_ok CMD...: assert_exit 0 CMD...
assert_ok ()
{
  assert_exit 0 "$@"
}

# assert_fails CMD...: any non-zero status (still reported in $rc).
assert_fails ()
{
  t_run "$@"
  [ "$rc" -ne 0 ] && return 0
  _t_assert_fail "\`$*\` succeeded, expected a failure; stdout: $(_t_short "$out")"
}

# ---------------------------------------------------------------- ohbox

# ohbox ARGS...: the binary under test, on this test's store, with a time limit.
ohbox ()
{
  if [ ! -x "$OHBOX_BIN" ]; then
    echo "ohbox binary not built: \`$OHBOX_BIN\` (run make)" >&2
    return 127
  fi
  echo "+ ohbox --root $T_ROOT $*" >&9
  timeout -k 5 "$T_OHBOX_TIMEOUT" "$OHBOX_BIN" --root "$T_ROOT" "$@"
}

# ohbox_bg OUTFILE ARGS...: starts ohbox directly (no timeout wrapper, so that
# a signal sent to $OHBOX_BG_PID reaches ohbox itself) in the background.
ohbox_bg ()
{
  local outfile=$1
  shift
  if [ ! -x "$OHBOX_BIN" ]; then
    echo "ohbox binary not built: \`$OHBOX_BIN\` (run make)" >&2
    return 127
  fi
  echo "+ (bg) ohbox --root $T_ROOT $*" >&9
  "$OHBOX_BIN" --root "$T_ROOT" "$@" >"$outfile" 2>&1 </dev/null &
  OHBOX_BG_PID=$!
  t_track "$OHBOX_BG_PID"
}

# ---------------------------------------------------------------- network

# t_free_port: prints a TCP port free on 127.0.0.1 right now. (Servers that
# can, bind port 0 themselves and report the port: no race at all.)
t_free_port ()
{
  "$T_PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# t_wait_port PORT [TIMEOUT_S]: waits until 127.0.0.1:PORT accepts connections.
t_wait_port ()
{
  local port=$1 limit=${2:-5} i
  for i in $(seq $((limit * 20))); do
    if (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.05
  done
  echo "nothing listens on 127.0.0.1:$port after $limit s" >&2
  return 1
}

# t_wait_port_file FILE LOG WHAT: waits (5 s at most) for the server that
# t_start just started (T_PID) to write the port it bound to FILE. When it
# exits first or never does: prints "WHAT did not start:" and its LOG, returns 1.
t_wait_port_file ()
{
  local file=$1 log=$2 what=$3 i
  for i in $(seq 100); do
    [ -s "$file" ] && return 0
    kill -0 "$T_PID" 2>/dev/null || break
    sleep 0.05
  done
  [ -s "$file" ] && return 0
  echo "$what did not start:" >&2
  cat "$log" >&2
  return 1
}

# t_wait_until TIMEOUT_S CMD...: polls CMD every 0.05 s until it succeeds.
t_wait_until ()
{
  local limit=$1 i
  shift
  for i in $(seq $((limit * 20))); do
    "$@" && return 0
    sleep 0.05
  done
  echo "timed out after $limit s waiting for: $*" >&2
  return 1
}

# t_sha256 FILE: prints the hex sha256 of FILE.
t_sha256 ()
{
  sha256sum "$1" | cut -d' ' -f1
}

# t_veth_netns NS HOST_IP IP: a network namespace NS holding IP, linked to
# the host (which gets HOST_IP) by the veth pair NSh/NSn on a /30, with a
# default route through the host. The caller removes it (`ip netns del NS`,
# `ip link del NSh`). Returns 1 when a step fails.
t_veth_netns ()
{
  local ns=$1 host_ip=$2 ip=$3
  ip netns add "$ns" || return 1
  ip link add "${ns}h" type veth peer name "${ns}n" || return 1
  ip link set "${ns}n" netns "$ns" || return 1
  ip addr add "$host_ip/30" dev "${ns}h" || return 1
  ip link set "${ns}h" up || return 1
  ip -n "$ns" addr add "$ip/30" dev "${ns}n" || return 1
  ip -n "$ns" link set "${ns}n" up || return 1
  ip -n "$ns" link set lo up || return 1
  ip -n "$ns" route add default via "$host_ip"
}
