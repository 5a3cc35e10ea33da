# tests/lib/serve.sh: helpers of the `ohbox serve` tests (serve*.sh).
# Source after common.sh, registry.sh and images.sh.
#
#   sv_setup                script setup: a registry (plain HTTP on 127.0.0.1)
#                           with busybox, a store SV_ROOT with busybox pulled
#                           (SV_BB) and its runtime image built (SV_RT); the
#                           sandboxes' state in SV_RUN (OHBOX_RUNROOT)
#   sv_start [OPTIONS...]   `ohbox serve` on a free port with a new API key:
#                           SV_URL, SV_PORT, SV_KEY, SV_KEYFILE, SV_PID, SV_LOG
#   sv_restart [OPTIONS...] the same again on the same port and key
#   sv_stop / sv_kill9      SIGTERM and wait / SIGKILL and wait
#   sv_call METHOD PATH [JSON]   the API with the key: $out (body), $code
#   sv_sbx METHOD ID PATH [JSON] a sandbox's URL with its session key ($SV_SK)
#   sv_new_session SID [JSON FIELDS]  /start of SV_RT: SV_ID, SV_SK (asserts 200)
#   sv_cleanup              removes every sandbox of SV_ROOT (the tests' EXIT trap)
#   sv_assert_clean         nothing of SV_ROOT's sandboxes is left: state,
#                           processes, cgroups, veths, leases, mounts
#   sv_metric NAME          the value of a /metrics line starting with NAME

SV_V0_CMD='["/openhands/micromamba/bin/micromamba","run","-n","openhands","poetry","run","python","-u","-m","openhands.runtime.action_execution_server","60000","--working-dir","/workspace","--plugins","agent_skills","jupyter","--username","openhands","--user-id","1000","--no-enable-browser"]'

sv_setup ()
{
  require_cmd curl jq
  [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import httpx' 2>/dev/null ||
    { echo "Debian's python3-httpx is not installed (apt-get install python3-httpx)"; return 1; }
  [ -x "$OHBOX_BUILDDIR/ohbox-executor" ] || { echo "ohbox-executor is not built"; return 1; }
  img_build || return 1
  reg_start http REG || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
  SV_ROOT=$T_TMP/sv-root
  SV_RUN=$T_TMP/sv-run
  mkdir -p "$SV_RUN"
  chmod 700 "$SV_RUN"
  export OHBOX_RUNROOT=$SV_RUN
  SV_BB=$REG_HOST/test/busybox:latest
  "$OHBOX_BIN" --root "$SV_ROOT" pull --tls-verify=false "$SV_BB" || return 1
  SV_RT=$("$OHBOX_BIN" --root "$SV_ROOT" build -q --tls-verify=false "$SV_BB") || return 1
  echo "runtime image $SV_RT"
}

_sv_run ()
{
  local log=$1
  shift
  echo "+ (bg) ohbox --root $SV_ROOT serve $*" >&9
  "$OHBOX_BIN" --root "$SV_ROOT" serve "$@" >>"$log" 2>&1 </dev/null &
  SV_PID=$!
  t_track "$SV_PID"
  local i
  for i in $(seq 200); do
    if curl -s -o /dev/null "http://127.0.0.1:$SV_PORT/list" 2>/dev/null; then
      return 0
    fi
    kill -0 "$SV_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "ohbox serve did not come up:" >&2
  tail -n 20 "$log" >&2
  return 1
}

sv_start ()
{
  SV_KEYFILE=$T_WORK/api-key
  openssl rand -hex 24 >"$SV_KEYFILE"
  chmod 600 "$SV_KEYFILE"
  SV_KEY=$(cat "$SV_KEYFILE")
  SV_PORT=$(t_free_port)
  SV_URL=http://127.0.0.1:$SV_PORT
  SV_LOG=$T_WORK/serve.log
  SV_OPTS=("$@")
  _sv_run "$SV_LOG" --api-key-file "$SV_KEYFILE" --listen "127.0.0.1:$SV_PORT" --tls-verify=false "$@"
}

sv_restart ()
{
  _sv_run "$SV_LOG" --api-key-file "$SV_KEYFILE" --listen "127.0.0.1:$SV_PORT" --tls-verify=false "${SV_OPTS[@]+"${SV_OPTS[@]}"}" "$@"
}

sv_stop ()
{
  kill -TERM "$SV_PID" 2>/dev/null || true
  wait "$SV_PID" 2>/dev/null || true
}

sv_kill9 ()
{
  kill -KILL "$SV_PID"
  wait "$SV_PID" 2>/dev/null || true
}

# assert_http_status WANT WHAT CURL_ARGS...: curl with CURL_ARGS gets the
# HTTP status WANT (WHAT names the request in the failure).
assert_http_status ()
{
  local want=$1 what=$2
  shift 2
  assert_eq "$want" "$(curl -s -o /dev/null -w '%{http_code}' "$@")" "$what"
}

# _sv_request KEY_HEADER METHOD PATH [BODY]: one request to the server with
# the key header KEY_HEADER (and the JSON BODY); the status in $code, the
# answer in $out.
_sv_request ()
{
  local key=$1 method=$2 path=$3 body=${4:-}
  local args=(-s -o "$T_WORK/.sv-out" -w '%{http_code}' -X "$method" -H "$key")
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
  code=$(curl "${args[@]}" "$SV_URL$path") || code=000
  out=$(cat "$T_WORK/.sv-out")
  echo "+ $method $path -> $code ${out:0:200}" >&9
}

# sv_call METHOD PATH [BODY]: _sv_request with the server's key.
sv_call ()
{
  _sv_request "X-API-Key: $SV_KEY" "$@"
}

# sv_sbx METHOD ID PATH [BODY]: _sv_request to the sandbox ID's PATH with
# its session key.
sv_sbx ()
{
  _sv_request "X-Session-API-Key: $SV_SK" "$1" "/$2$3" "${4:-}"
}

# sv_run_action ID COMMAND: a `run` action; $out is the observation.
sv_run_action ()
{
  sv_sbx POST "$1" /execute_action "$(jq -cn --arg c "$2" '{action: {action: "run", args: {command: $c}}}')"
}

sv_new_session ()
{
  local sid=$1 extra=${2:-'{}'}
  sv_call POST /start "$(jq -cn --arg i "$SV_RT" --arg s "$sid" --argjson e "$extra" '{image: $i, session_id: $s} + $e')"
  assert_eq "$code" 200 "/start of session $sid: $out"
  SV_ID=$(jq -r .runtime_id <<<"$out")
  SV_SK=$(jq -r .session_api_key <<<"$out")
}

sv_metric ()
{
  curl -s -H "X-API-Key: $SV_KEY" "$SV_URL/metrics" | awk -v m="$1" 'index($0, m) == 1 { print $2; exit }'
}

sv_cleanup ()
{
  [ -n "${SV_PID:-}" ] && kill -TERM "$SV_PID" 2>/dev/null && wait "$SV_PID" 2>/dev/null
  "$OHBOX_BIN" --root "$SV_ROOT" ps -a -q 2>/dev/null |
    xargs -r timeout -k 5 60 "$OHBOX_BIN" --root "$SV_ROOT" rm -f >/dev/null 2>&1
  return 0
}

# Every sandbox gone, and what they had: their processes, cgroups, veths,
# leases and mounts. (The removal goes on after /stop answers: waited for.)
sv_assert_clean ()
{
  local left
  t_wait_until 30 sh -c "[ -z \"\$('$OHBOX_BIN' --root '$SV_ROOT' ps -a -q)\" ]" ||
    { _t_assert_fail "sandboxes left: $("$OHBOX_BIN" --root "$SV_ROOT" ps -a)"; return 1; }
  t_wait_until 30 sh -c "! ls -A '$SV_RUN' | grep -Eq '^([0-9a-f]{64}|\.rm-|\.new-)'" ||
    { _t_assert_fail "state directories left: $(ls -A "$SV_RUN")"; return 1; }
  # Every sandbox the server's log names: its cgroups and its veth.
  local id
  for id in $(grep -o '"runtime_id":"[0-9a-f]\{64\}"' "${SV_LOG:-/dev/null}" 2>/dev/null | cut -d'"' -f4 | sort -u); do
    left=$(find /sys/fs/cgroup -maxdepth 4 -type d -name "$id" 2>/dev/null || true)
    [ -z "$left" ] || { _t_assert_fail "cgroups of $id left: $left"; return 1; }
    if ip link show "ohb${id:0:12}" >/dev/null 2>&1; then
      _t_assert_fail "the veth of $id is left"
      return 1
    fi
  done
  left=$(grep -o " $SV_RUN/[^ ]*" /proc/mounts || true)
  [ -z "$left" ] || { _t_assert_fail "mounts left: $left"; return 1; }
  local netroot=${OHBOX_NETROOT:-/run/ohbox/net}
  left=$(find "$netroot/ip" "$netroot/port" -type l -lname "$SV_RUN/*" 2>/dev/null || true)
  [ -z "$left" ] || { _t_assert_fail "leases left: $left"; return 1; }
  # Once the server is gone: its starter and the starter's spare worker.
  if ! kill -0 "${SV_PID:-0}" 2>/dev/null; then
    t_wait_until 5 sv_no_starters ||
      { _t_assert_fail "the server's starter processes left: $(sv_starters)"; return 1; }
  fi
  return 0
}

# The processes of this test's server's starter (forks of the server,
# named ohbox-starter, whose command line names its store).
sv_starters ()
{
  local p cmdline
  for p in $(pgrep -x ohbox-starter); do
    cmdline=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
    [[ $cmdline == *" $SV_ROOT "* ]] && echo "$p"
  done
  return 0
}
sv_no_starters () { [ -z "$(sv_starters)" ]; }
