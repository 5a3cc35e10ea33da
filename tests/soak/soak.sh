#!/bin/bash
# tests/soak/soak.sh: load and leaks. N start/action/stop cycles of a runtime
# image (`ohbox build` on busybox) with C sandboxes at a time; every cycle
# sends a real action to its sandbox's executor over HTTP and one to a
# long-lived "sentinel" sandbox. Then it counts what is left against a census
# taken before: mounts, cgroup directories (every v1 controller and the
# unified hierarchy), veths, nft elements, address and port leases,
# processes, files under the state and store directories, fds of the
# long-lived processes; and it samples the memory (RSS, PSS, private dirty)
# and fds of the sentinel's monitor, init and executor over the run to show
# they are steady.
#
# Usage: tests/soak/soak.sh [--cycles N] [--concurrency C] [--sample S]
#   --cycles N        start/action/stop cycles (default 300; the full run is 10000)
#   --concurrency C   sandboxes cycling at the same time (default 3: 2 cores)
#   --sample S        seconds between memory samples (default 2)
#   --duration S      start no new cycle after S seconds (0: no limit)
#   --report FILE     also write the table and the summary line to FILE
# Cycles rotate the network (the default: the bridge with the executor's
# port published on 127.0.0.1 by ohbox; none with the action sent from
# inside the sandbox's network namespace; --network host)
# and the way they end (stop + rm, --rm + stop, rm -f, kill + rm).
# Exit status 0 when every cycle worked, nothing was left and memory was
# steady (not judged in a sanitizer build); 1 otherwise. The last line is the summary (for the README).
#
# The machine is shared: every count is of what this script made (its store,
# its state root, the ids and addresses of its sandboxes), never of the
# host as a whole; host-wide changes are shown apart, for information.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

CYCLES=300
CONC=3
SAMPLE=2
REPORT=
DURATION=0
while [ $# -gt 0 ]; do
  case $1 in
    --cycles) CYCLES=$2; shift 2 ;;
    --concurrency) CONC=$2; shift 2 ;;
    --sample) SAMPLE=$2; shift 2 ;;
    --report) REPORT=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    -h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak.sh: unknown argument \`$1\` (see --help)" >&2; exit 2 ;;
  esac
done
[[ $CYCLES =~ ^[1-9][0-9]*$ && $CONC =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: --cycles and --concurrency take positive integers" >&2; exit 2; }

export OHBOX_RUNROOT=$T_TMP/run
export OHBOX_EXECUTOR=$OHBOX_BUILDDIR/ohbox-executor
NETROOT=${OHBOX_NETROOT:-/run/ohbox/net}
CG=/sys/fs/cgroup
EXEC_PORT=8000
S=$T_TMP/soak
mkdir -p "$S/ids" "$S/ips" "$S/census" "$S/workers"
# What the ohbox wrapper logs (every command) goes to a file, not the terminal.
exec 9>>"$S/ohbox.log"

# Sandboxes of this soak never outlive it (an interrupted run included):
# removed before common.sh's trap deletes the state root.
soak_cleanup ()
{
  local id
  for id in $(ls "$OHBOX_RUNROOT" 2>/dev/null | grep -E '^[0-9a-f]{64}$'); do
    ohbox rm -f "$id" >/dev/null 2>&1
  done
}
trap '_soak_rc=$?; soak_cleanup; (exit $_soak_rc); _t_cleanup' EXIT

die ()
{
  echo "soak.sh: $*" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (namespaces, overlay, bridge, nftables)"
[ -x "$OHBOX_EXECUTOR" ] || die "ohbox-executor is not built (make ohbox-executor)"
[ -x /bin/bash-static ] || die "bash-static is not installed (apt-get install bash-static)"
for c in curl jq nsenter ip nft; do
  command -v "$c" >/dev/null || die "$c is not installed (contrib/install-deps.sh installs it)"
done

# ------------------------------------------------------------------ census

# census DIR: what exists now, one file per kind, one item a line.
census ()
{
  local d=$1 h
  mkdir -p "$d"
  # Host mounts without their ids (a remount gets a new one): point, options, source.
  cut -d' ' -f4- /proc/self/mountinfo | sort >"$d/mounts"
  : >"$d/cgroups"
  # (cpu and cpuacct are one hierarchy under three names: each counted once)
  for h in $(readlink -f "$CG"/*/ohbox | sort -u); do
    [ -d "$h" ] || continue
    find "$h" -mindepth 1 -maxdepth 1 -type d -printf "$h/%f\n"
  done | sort -u >"$d/cgroups"
  ip -o link show | sed -n 's/^[0-9]*: \(ohb[0-9a-f]\{12\}\)[@:].*/\1/p' | sort >"$d/veths"
  nft -j list table inet ohbox 2>/dev/null |
    jq -r '.nftables[] | select(.map) | .map.name as $m | .map.elem[]? | "\($m) \(.[0].concat | map(tostring) | join(".")) -> \(.[1].concat | map(tostring) | join(":"))"' \
      2>/dev/null >"$d/nft.tmp"
  # the sandboxes' filter elements and their hosts' permanent neighbour
  # entries, each with the sandbox address it is for
  nft -j list table inet ohbox 2>/dev/null |
    jq -r '.nftables[] | select(.set.name == "dns" or .set.name == "egress" or .set.name == "noegress") | .set as $s |
      $s.elem[]? | "inet \($s.name) \(tojson) -> \(if type == "object" then .concat[0] else . end):"' \
      2>/dev/null >>"$d/nft.tmp"
  nft -j list table bridge ohbox 2>/dev/null |
    jq -r '.nftables[] | select(.set.name == "ports" or .set.name == "uplink" or .set.name == "open") | .set as $s |
      $s.elem[]? | "bridge \($s.name) \(tojson) -> \(if $s.name == "ports" then .concat[2] else .concat[1] end):"' \
      2>/dev/null >>"$d/nft.tmp"
  ip -o neigh show nud permanent 2>/dev/null |
    awk '$3 == "ohbox0" || $3 ~ /^ohbn/ { print "neighbour " $0 " -> " $1 ":" }' >>"$d/nft.tmp"
  sort "$d/nft.tmp" >"$d/nft" && rm -f "$d/nft.tmp"
  nft -a list table inet ohbox 2>/dev/null | grep -c '# handle' >"$d/nft-rules" || true
  local l
  for l in "$NETROOT"/ip/* "$NETROOT"/port/*; do
    [ -L "$l" ] || continue
    echo "$(basename "$(dirname "$l")")/$(basename "$l") -> $(readlink "$l")"
  done | sort >"$d/leases"
  # Processes: every one whose command line names this soak's store or
  # state root (monitors, `ohbox` commands), or whose cgroup is one of
  # its sandboxes' (init, executor, whatever a command started).
  # (One grep over every /proc/PID/cgroup: a regex of thousands of ids
  # per process would take minutes.)
  local p cmd
  cat "$S"/ids/* 2>/dev/null | sort -u | sed 's,.*,/ohbox/&,' >"$S/ids.pat"
  {
    [ -s "$S/ids.pat" ] && grep -l -F -f "$S/ids.pat" /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3
    for p in /proc/[0-9]*; do
      cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
      [[ $cmd == *"$T_TMP/"* ]] && [[ $cmd != *soak.sh* ]] && echo "${p#/proc/}"
    done
  } | sort -u | while read -r p; do
    [ "$p" = "$BASHPID" ] && continue
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") || continue
    echo "$p $cmd"
  done | sort >"$d/procs"
  find "$OHBOX_RUNROOT" -mindepth 1 2>/dev/null | sort >"$d/state"
  # The store: every path with its size (a file that changed shows too).
  find "$T_ROOT" -mindepth 1 -printf '%p %s\n' 2>/dev/null | sort >"$d/store"
}

# ours FILE: the lines of FILE that name one of this soak's sandboxes (by id,
# or by the first 12 hex digits in veth names), its state root or its store.
ours ()
{
  {
    echo "$T_TMP/"
    cat "$S"/ids/* 2>/dev/null | cut -c1-12 | sort -u
    # nft elements name the sandbox's address (bridge cycles record theirs).
    cat "$S"/ips/* 2>/dev/null | sort -u | sed 's/.*/-> &:/'
  } >"$S/ours.pat"
  grep -F -f "$S/ours.pat" "$1" || true
}

# ------------------------------------------------------------------ setup

echo "# soak: $CYCLES cycles, concurrency $CONC, in $T_TMP"
img_build >"$S/img.log" 2>&1 || die "img_build failed (see $S/img.log)"
export OHBOX_EXECUTOR_SRCDIR=$T_TMP/src
mkdir -p "$OHBOX_EXECUTOR_SRCDIR"
cp "$OHBOX_SRCDIR"/executor/*.[ch] "$OHBOX_SRCDIR/executor/local.mk" "$OHBOX_EXECUTOR_SRCDIR/"
ohbox load "oci:$IMG_BUSYBOX:latest" >/dev/null 2>"$S/load.err" || die "ohbox load: $(cat "$S/load.err")"
IMAGE=$(ohbox build --no-pull --format json localhost/busybox:latest 2>"$S/build.err" | jq -r .image) ||
  die "ohbox build: $(cat "$S/build.err")"
[ -n "$IMAGE" ] && [ "$IMAGE" != null ] || die "ohbox build printed no image: $(cat "$S/build.err")"
# ------------------------------------------------------------------ actions

# action URL KEY WORD [PREFIX...]: a `run` action echoing WORD through the
# executor at URL (PREFIX: a command to run curl under, e.g. nsenter); it
# must come back as the observation's content with exit code 0.
action ()
{
  local url=$1 key=$2 word=$3 o
  shift 3
  o=$("$@" curl -sS --max-time 30 -X POST -H "X-Session-API-Key: $key" -H 'Content-Type: application/json' \
    "$url/execute_action" -d "{\"action\": {\"action\": \"run\", \"args\": {\"command\": \"echo $word\"}, \"timeout\": 30}}") ||
    { echo "action to $url failed"; return 1; }
  jq -e --arg w "$word" '.content == $w and .extras.metadata.exit_code == 0' <<<"$o" >/dev/null 2>&1 ||
    { echo "action to $url: unexpected observation: ${o:0:300}"; return 1; }
}

# alive URL [PREFIX...]: waits (10 s) until the executor answers /alive.
alive ()
{
  local url=$1
  shift
  t_wait_until 10 "$@" curl -sf --max-time 2 "$url/alive" -o /dev/null 2>/dev/null ||
    { echo "executor at $url never answered /alive"; return 1; }
}

# pid_of ID: the init pid of a running sandbox (its state.json).
pid_of ()
{
  jq -r .pid "$OHBOX_RUNROOT/$1/state.json" 2>/dev/null
}

# ------------------------------------------------------------------ the sentinel

# A long-lived sandbox for the whole run: every cycle also sends it an
# action, and its monitor, init and executor are sampled.
SENT_KEY=sentinel$RANDOM$RANDOM
ohbox run -d -e SESSION_API_KEY=$SENT_KEY "$IMAGE" >"$S/sentinel.id" 2>"$S/sentinel.err" ||
  die "the sentinel did not start: $(cat "$S/sentinel.err")"
SENT=$(cat "$S/sentinel.id")
echo "$SENT" >"$S/ids/sentinel"
SENT_URL=$(sed -n 's/^ohbox run: executor at \([^,]*\), .*/\1/p' "$S/sentinel.err")
alive "$SENT_URL" || die "the sentinel's executor did not come up: $(ohbox logs "$SENT" 2>&1 | tail -n 5)"
action "$SENT_URL" "$SENT_KEY" warmup || die "the sentinel's first action failed"
SENT_INIT=$(pid_of "$SENT")
SENT_MON=$(awk '{print $4}' "/proc/$SENT_INIT/stat")
SENT_EXEC=$(cat "/proc/$SENT_INIT/task/$SENT_INIT/children" 2>/dev/null | awk '{print $1}')
[ -n "$SENT_EXEC" ] || die "the sentinel's init ($SENT_INIT) has no child (executor)"
# The baseline: after one sandbox ran, so that what the first sandbox of a
# state root makes once (its seccomp cache, names/, the store's
# sandboxes/) is not counted as left by the cycles.
census "$S/census/before"

# mem PID: "RSS PSS PRIVATE_DIRTY FDS" in KiB and a count. PSS moves with
# the number of processes sharing ohbox's pages (the cycling sandboxes'
# monitors); private dirty memory is what a leak grows.
mem ()
{
  awk '/^Rss:/ {r = $2} /^Pss:/ {p = $2} /^Private_Dirty:/ {d = $2} END {printf "%d %d %d", r, p, d}' \
    "/proc/$1/smaps_rollup" 2>/dev/null || printf '0 0 0'
  printf ' %d' "$(ls "/proc/$1/fd" 2>/dev/null | wc -l)"
}

sampler ()
{
  echo "t done mon_rss mon_pss mon_priv mon_fds init_rss init_pss init_priv init_fds exec_rss exec_pss exec_priv exec_fds"
  local t0=$SECONDS
  while :; do
    echo "$((SECONDS - t0)) $(cat "$S"/workers/*.done 2>/dev/null | wc -l) $(mem "$SENT_MON") $(mem "$SENT_INIT") $(mem "$SENT_EXEC")"
    sleep "$SAMPLE"
  done
}
sampler >"$S/memory.txt" 2>/dev/null &
SAMPLER=$!
t_track "$SAMPLER"

# ------------------------------------------------------------------ cycles

# cycle I: one start/action/stop. Prints nothing when it worked, the reason otherwise.
cycle ()
{
  local i=$1 mode=$(($1 % 3)) end=$(($1 / 3 % 4)) key=k$1x$RANDOM id url pre=() rmopt=() netopts=()
  [ "$end" = 1 ] && rmopt=(--rm)
  case $mode in
    0) netopts=() ;;
    1) netopts=(--network none --executor-port "$EXEC_PORT") ;;
    2) netopts=(--network host) ;;
  esac
  id=$(ohbox run -d "${rmopt[@]}" "${netopts[@]}" -e "SESSION_API_KEY=$key" "$IMAGE" 2>"$S/workers/err.$i") ||
    { echo "run: $(tail -n 1 "$S/workers/err.$i")"; return 1; }
  echo "$id" >>"$S/ids/w$W"
  case $mode in
    0)
      jq -r .ip "$OHBOX_RUNROOT/$id/network.json" >>"$S/ips/w$W" 2>/dev/null
      url=$(sed -n 's/^ohbox run: executor at \([^,]*\), .*/\1/p' "$S/workers/err.$i")
      ;;
    1)
      url=http://127.0.0.1:$EXEC_PORT
      pre=(nsenter "--net=/proc/$(pid_of "$id")/ns/net")
      ;;
    2) url=$(sed -n 's/^ohbox run: executor at \([^,]*\), .*/\1/p' "$S/workers/err.$i") ;;
  esac
  local bad=
  alive "$url" "${pre[@]}" && action "$url" "$key" "c$i" "${pre[@]}" || bad=1
  action "$SENT_URL" "$SENT_KEY" "s$i" || bad=1
  case $end in
    0) ohbox stop "$id" >/dev/null && ohbox rm "$id" >/dev/null ;;
    1) ohbox stop "$id" >/dev/null ;;
    2) ohbox rm -f "$id" >/dev/null ;;
    3) ohbox kill "$id" >/dev/null && ohbox wait "$id" >/dev/null; ohbox rm "$id" >/dev/null ;;
  esac || { echo "end $end of $id failed"; return 1; }
  rm -f "$S/workers/err.$i"
  [ -z "$bad" ] || { echo "(mode $mode) $(ohbox logs "$id" 2>&1 | tail -n 2 | tr '\n' ' ')"; return 1; }
}

worker ()
{
  W=$1
  local i
  for ((i = W; i < CYCLES; i += CONC)); do
    [ "$DURATION" = 0 ] || [ $((SECONDS - START)) -lt "$DURATION" ] || break
    local why
    if why=$(cycle "$i" 2>&1); then
      echo "$i" >>"$S/workers/$W.done"
    else
      echo "cycle $i: $why" >>"$S/workers/$W.failed"
      echo "$i" >>"$S/workers/$W.done"
    fi
  done
}

START=$SECONDS
WORKERS=()
for ((w = 0; w < CONC; w++)); do
  worker "$w" &
  WORKERS+=($!)
  t_track $!
done
# Progress, for long runs: one line a minute.
running ()
{
  local p
  for p in "${WORKERS[@]}"; do
    kill -0 "$p" 2>/dev/null && return 0
  done
  return 1
}
next=60
half=
while running; do
  if [ -z "$half" ]; then sleep 0.2; else sleep 1; fi
  # A census half-way: what the counters see while sandboxes cycle (they
  # must see something, or they could not see a leak either). One census is
  # an instant: it can fall where every worker is between two sandboxes (in
  # an `ohbox run` that has not printed its ID yet), so it is taken again
  # until it sees a cycling sandbox's cgroups or the workers are done.
  if [ -z "$half" ] && { [ "$(cat "$S"/workers/*.done 2>/dev/null | wc -l)" -ge $((CYCLES / 2)) ] ||
    { [ "$DURATION" != 0 ] && [ $((SECONDS - START)) -ge $((DURATION / 2)) ]; }; }; then
    census "$S/census/during"
    [ "$(ours "$S/census/during/cgroups" | wc -l)" -le "$(ours "$S/census/before/cgroups" | wc -l)" ] || half=1
  fi
  if [ $((SECONDS - START)) -ge $next ]; then
    next=$((next + 60))
    echo "# $((SECONDS - START)) s: $(cat "$S"/workers/*.done 2>/dev/null | wc -l) cycles, $(cat "$S"/workers/*.failed 2>/dev/null | wc -l) failed"
  fi
done
wait "${WORKERS[@]}"
ELAPSED=$((SECONDS - START))
DONE=$(cat "$S"/workers/*.done 2>/dev/null | wc -l)
FAILED=$(cat "$S"/workers/*.failed 2>/dev/null | wc -l)
sleep "$SAMPLE"
kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null

# The sentinel goes too; then nothing of this soak may be left.
ohbox rm -f "$SENT" >/dev/null 2>&1 || echo "# removing the sentinel failed"

# ------------------------------------------------------------------ report

# left KIND: lines of census KIND that are this soak's and were not there before.
left ()
{
  comm -13 "$S/census/before/$1" "$S/census/after/$1" >"$S/census/new.$1"
  ours "$S/census/new.$1"
}

# The kernel deletes a dead namespace's veth asynchronously: a few seconds to settle.
for try in $(seq 50); do
  census "$S/census/after"
  n=0
  for k in mounts cgroups veths nft leases; do
    [ -z "$(left "$k")" ] || n=1
  done
  [ -z "$(comm -13 "$S/census/before/procs" "$S/census/after/procs")" ] || n=1
  [ "$n" = 0 ] && break
  sleep 0.1
done

TOTAL_LEFT=0
TABLE=$S/table.txt
{
  [ -d "$S/census/during" ] || census "$S/census/during"
  printf '%-44s %7s %7s %7s %5s\n' "what (this soak's only)" before midway after left
  row ()
  {
    local what=$1 kind=$2 b m a l
    b=$(ours "$S/census/before/$kind" | wc -l)
    m=$(ours "$S/census/during/$kind" | wc -l)
    a=$(ours "$S/census/after/$kind" | wc -l)
    l=$(left "$kind" | wc -l)
    TOTAL_LEFT=$((TOTAL_LEFT + l))
    printf '%-44s %7s %7s %7s %5s\n' "$what" "$b" "$m" "$a" "$l"
  }
  row "mounts (host /proc/self/mountinfo)" mounts
  row "cgroup dirs (v1 controllers + unified)" cgroups
  row "veths (ohb<id>)" veths
  row "nft elements and neighbour entries" nft
  row "address and port leases ($NETROOT)" leases
  # Processes (found by this soak's paths and cgroups), the state root and
  # the store: every line counts.
  for kind in procs state store; do
    b=$(wc -l <"$S/census/before/$kind")
    m=$(wc -l <"$S/census/during/$kind")
    a=$(wc -l <"$S/census/after/$kind")
    l=$(comm -13 "$S/census/before/$kind" "$S/census/after/$kind" | wc -l)
    TOTAL_LEFT=$((TOTAL_LEFT + l))
    case $kind in
      procs) what="processes (monitors, init, executors, ohbox)" ;;
      state) what="files under the state root" ;;
      store) what="files under the store" ;;
    esac
    printf '%-44s %7s %7s %7s %5s\n' "$what" "$b" "$m" "$a" "$l"
  done
  # Host-wide, for information (other users of the machine change these too).
  hw ()
  {
    printf '%-44s %7s %7s %7s %5s\n' "(host-wide) $1" "$(eval "$2" <"$S/census/before/$3")" \
      "$(eval "$2" <"$S/census/during/$3")" "$(eval "$2" <"$S/census/after/$3")" -
  }
  hw "mountinfo lines" "wc -l" mounts
  hw "cgroup dirs under ohbox/" "wc -l" cgroups
  hw "nft rules in table inet ohbox" cat nft-rules
  hw "nft elements and neighbour entries" "wc -l" nft
} >"$TABLE"

for kind in mounts cgroups veths nft leases; do
  l=$(left "$kind")
  [ -z "$l" ] || { echo "# left ($kind):"; head -n 20 <<<"$l" | sed 's/^/#   /'; } >>"$TABLE"
done
for kind in procs state store; do
  l=$(comm -13 "$S/census/before/$kind" "$S/census/after/$kind")
  [ -z "$l" ] || { echo "# left ($kind):"; head -n 20 <<<"$l" | sed 's/^/#   /'; } >>"$TABLE"
done

# Memory: from the first sample after a warm-up (a tenth of the run) to
# the last, and the largest. The allocator's high-water marks rise in a few
# steps early on (the executor's heap grew by ~140 KiB in three steps over
# its first ~2000 actions in the long run, then stayed flat), so steadiness
# is judged on the second half of the run, where a leak would still grow
# with every cycle: private dirty memory up by at most 128 KiB, fds not at
# all.
MEMREPORT=$S/memory-report.txt
awk '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { n++; for (i = 1; i <= NF; i++) v[n, i] = $i }
  END {
    if (n == 0) { print "no samples"; print "SUMMARY - - - 1"; exit }
    w = int(n / 10) + 1; if (w > n) w = n
    h = int(n / 2) + 1; if (h > n) h = n
    split("mon init exec", who, " ")
    bad = 0
    for (k = 1; k <= 3; k++) {
      r = col[who[k] "_rss"]; p = col[who[k] "_pss"]; d = col[who[k] "_priv"]; f = col[who[k] "_fds"]
      maxr = 0; maxp = 0; maxd = 0; maxf = 0
      for (j = w; j <= n; j++) {
        if (v[j, r] > maxr) maxr = v[j, r]; if (v[j, p] > maxp) maxp = v[j, p]
        if (v[j, d] > maxd) maxd = v[j, d]; if (v[j, f] > maxf) maxf = v[j, f]
      }
      if (v[n, d] - v[h, d] > 128 || v[n, f] > v[h, f]) bad = 1
      printf "%-8s RSS %5d -> %5d KiB (max %5d)  PSS %5d -> %5d (max %5d)  private dirty %5d -> %5d -> %5d (max %5d)  fds %2d -> %2d (max %2d)\n",
        who[k] == "mon" ? "monitor" : (who[k] == "exec" ? "executor" : who[k]),
        v[w, r], v[n, r], maxr, v[w, p], v[n, p], maxp, v[w, d], v[h, d], v[n, d], maxd, v[w, f], v[n, f], maxf
      rss[k] = sprintf("%.1f->%.1f", v[w, r] / 1024, v[n, r] / 1024)
    }
    printf "(private dirty: after the warm-up -> half-way -> end) %d samples over %d s, half-way at %d s\n", n, v[n, 1], v[h, 1]
    printf "SUMMARY %s %s %s %d\n", rss[1], rss[2], rss[3], bad
  }' "$S/memory.txt" >"$MEMREPORT"
read -r _ RSS_MON RSS_INIT RSS_EXEC MEM_BAD < <(grep '^SUMMARY' "$MEMREPORT")

echo
cat "$TABLE"
echo
echo "sentinel (sampled every $SAMPLE s; from the end of a warm-up of a tenth of the run to the end; steady: private dirty memory up by at most 128 KiB and fds not at all over the second half):"
grep -v '^SUMMARY' "$MEMREPORT" | sed 's/^/  /'
if [ "$FAILED" -gt 0 ]; then
  echo "failed cycles (first 10 of $FAILED):"
  cat "$S"/workers/*.failed | head -n 10 | sed 's/^/  /'
fi
read -r NB NN NH < <(cat "$S"/workers/*.done 2>/dev/null | awk '{n[$1 % 3]++} END {printf "%d %d %d\n", n[0], n[1], n[2]}')
steady=steady
[ "${MEM_BAD:-1}" = 0 ] || steady="NOT steady"
# ASan's quarantine holds freed memory on purpose: steadiness means nothing
# in a sanitizer build (the leak counts above still do).
if t_sanitized; then
  steady="not judged (sanitizer build)"
  MEM_BAD=0
fi
SUMMARY="soak: $DONE cycles (bridge $NB, none $NN, host $NH) at concurrency $CONC in $ELAPSED s ($(awk -v c="$DONE" -v s="$ELAPSED" 'BEGIN {printf "%.1f", s ? c / s : 0}') cycles/s), $((2 * DONE)) actions, $FAILED failed; left: $TOTAL_LEFT; memory $steady (RSS MiB monitor $RSS_MON, init $RSS_INIT, executor $RSS_EXEC)"
echo
echo "$SUMMARY"
if [ -n "$REPORT" ]; then
  { cat "$TABLE"; echo; grep -v '^SUMMARY' "$MEMREPORT"; echo; echo "$SUMMARY"; } >"$REPORT"
fi

# Whatever is left goes now (so that the machine stays clean), after it was counted.
soak_cleanup
[ "$FAILED" = 0 ] && [ "$TOTAL_LEFT" = 0 ] && [ "${MEM_BAD:-1}" = 0 ] && [ "$DONE" = "$CYCLES" ]
