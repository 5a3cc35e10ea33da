#!/bin/bash
# bench/network.sh: time from `ohbox run -d -p HOSTPORT:80 busybox httpd -f`
# until the first HTTP 200 from the host's 127.0.0.1:HOSTPORT, root bridge
# and rootless (pasta, slirp4netns), against `podman run -d -p` (root, and
# rootless as a user this script makes when podman works for it). Medians of
# N runs (bench/first_200.py polls every 0.5 ms from the spawn). Also the
# time `ohbox run -d` itself takes, and the root bridge without -p and with
# --network none, to show where the time goes.
#
#   bench/network.sh [RUNS]      (root; default 10 runs)
#   BENCH_SKIP=podman,rootless   leave some out
#   OHBOX_BEFORE=PATH            also an older ohbox binary (root rows, "(before)"),
#                                with its own store, runtime and network state
#
# NETWORK RULE: traffic only to 127.0.0.1 and the bridge subnet.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
OHBOX=${OHBOX_BIN:-$SRC/ohbox}
RUNS=${1:-10}
SKIP=",${BENCH_SKIP:-},"
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
[ "$(id -u)" = 0 ] || { echo "bench/network.sh: run as root (it makes a user for the rootless runs)" >&2; exit 1; }
for t in jq curl setpriv; do
  command -v $t >/dev/null || { echo "bench/network.sh: needs $t" >&2; exit 1; }
done

. "$SRC/tests/lib/common.sh" >/dev/null 2>&1 || true
. "$SRC/tests/lib/images.sh"
# lower case: podman names the images it pulls from an oci: path after it
W=/tmp/ohbox-bench-net-$$
mkdir "$W"
chmod 755 "$W"
U=ohbn$$
cleanup ()
{
  set +e
  "$OHBOX" --root "$W/store" ps -a -q 2>/dev/null | xargs -r "$OHBOX" --root "$W/store" rm -f >/dev/null 2>&1
  if [ -n "${OHBOX_BEFORE:-}" ]; then
    "${OB_BEF[@]}" ps -a -q 2>/dev/null | xargs -r "${OB_BEF[@]}" rm -f >/dev/null 2>&1
    ip netns delete "$NS_BEF" 2>/dev/null
    ip netns delete "$NS_NOW" 2>/dev/null
  fi
  podman --root "$W/podman" --runroot "$W/podman-run" rm -af >/dev/null 2>&1
  if id "$U" >/dev/null 2>&1; then
    pkill -KILL -u "$U" 2>/dev/null
    sleep 0.3
    userdel "$U" 2>/dev/null
    sed -i "/^$U:/d" /etc/subuid /etc/subgid
  fi
  rm -rf "$W"
  # (this trap replaces the harness's, which would remove its temp dir)
  [ -z "${T_TMP:-}" ] || rm -rf "$T_TMP"
}
trap cleanup EXIT
img_build >/dev/null
"$OHBOX" --root "$W/store" load "oci:$IMG_BUSYBOX:latest" >/dev/null
OB_NOW=("$OHBOX" --root "$W/store")
OHBOX_BEFORE=${OHBOX_BEFORE:-}
# The older binary runs in a network namespace of its own (its bridge and
# nftables table must not meet this one's), and so does its client; then
# this binary's rows go through nsenter into one of their own too (the same
# extra exec on both sides).
NS_BEF=ohbox-bench-net-before-$$ NS_NOW=ohbox-bench-net-now-$$
OB_BEF=(nsenter --net="/run/netns/$NS_BEF" env OHBOX_RUNROOT="$W/run-before" OHBOX_NETROOT="$W/net-before"
  "$OHBOX_BEFORE" --root "$W/store-before")
if [ -n "$OHBOX_BEFORE" ]; then
  for ns in "$NS_BEF" "$NS_NOW"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
  done
  OB_NOW=(nsenter --net="/run/netns/$NS_NOW" "${OB_NOW[@]}")
  "${OB_BEF[@]}" load "oci:$IMG_BUSYBOX:latest" >/dev/null
fi
BB=localhost/busybox:latest
# What httpd serves: /etc/hostname, which every sandbox has.
SERVE=(httpd -f -p 80 -h /etc)

free_port ()
{
  $PY -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

median ()
{
  sort -n | awk '{a[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

# measure NAME RM-CMD RUN-CMD... (RUN-CMD has PORT in it): RUNS runs, each
# on a fresh free port; prints "NAME first-200-median run-median". The
# client runs under $CLIENT_NS (a command prefix) when set.
measure ()
{
  local name=$1 rmcmd=$2
  shift 2
  local i port f
  f=$W/${name//[^a-z]/_}.times
  : >"$f"
  for i in $(seq "$RUNS"); do
    port=$(free_port)
    if ! ${CLIENT_NS:-} $PY "$SRC/bench/first_200.py" "$port" /hostname "${@//PORT/$port}" >>"$f" 2>"$W/err"; then
      echo "$name: no answer: $(head -c 300 "$W/err")" >&2
    fi
    eval "$rmcmd" >/dev/null 2>&1 || true
  done
  printf '%s\t%s ms\t%s ms\t(%s runs)\n' "$name" "$(cut -d' ' -f1 "$f" | median)" "$(cut -d' ' -f2 "$f" | median)" \
    "$(wc -l <"$f")"
}

# run_only NAME OHBOX-CMD ARGS...: median of `OHBOX-CMD run -d ARGS` alone
# (no request); OHBOX-CMD is the name of an array (OB_NOW, OB_BEF).
run_only ()
{
  local name=$1 i f
  local -n ob_cmd=$2
  f=$W/${name//[^a-z]/_}.only
  shift 2
  : >"$f"
  for i in $(seq "$RUNS"); do
    $PY -c 'import subprocess, sys, time
t = time.monotonic(); subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print("%.1f" % ((time.monotonic() - t) * 1000))' "${ob_cmd[@]}" run -d "$@" >>"$f"
    "${ob_cmd[@]}" ps -a -q | xargs -r "${ob_cmd[@]}" rm -f >/dev/null
  done
  printf '%s\t-\t%s ms\t(%s runs)\n' "$name" "$(median <"$f")" "$(wc -l <"$f")"
}

RM_ROOT="$(printf '%q ' "${OB_NOW[@]}") ps -a -q | xargs -r $(printf '%q ' "${OB_NOW[@]}") rm -f"

{
  printf 'what\tfirst HTTP 200\trun -d returned\n'
  CLIENT_NS="${OHBOX_BEFORE:+nsenter --net=/run/netns/$NS_NOW}" \
    measure "ohbox root bridge" "$RM_ROOT" "$OHBOX" --root "$W/store" run -d -p PORT:80 "$BB" "${SERVE[@]}"
  run_only "ohbox root bridge, no -p (run -d only)" OB_NOW "$BB" sleep 60
  run_only "ohbox root --network none (run -d only)" OB_NOW --network none "$BB" sleep 60
  if [ -n "$OHBOX_BEFORE" ]; then
    RM_BEF="$(printf '%q ' "${OB_BEF[@]}") ps -a -q | xargs -r $(printf '%q ' "${OB_BEF[@]}") rm -f"
    CLIENT_NS="nsenter --net=/run/netns/$NS_BEF" \
      measure "ohbox root bridge (before)" "$RM_BEF" "${OB_BEF[@]:2}" run -d -p PORT:80 "$BB" "${SERVE[@]}"
    run_only "ohbox root bridge, no -p (run -d only) (before)" OB_BEF "$BB" sleep 60
    run_only "ohbox root --network none (run -d only) (before)" OB_BEF --network none "$BB" sleep 60
  fi

  case $SKIP in *,rootless,*) ;; *)
    useradd -M -s /bin/sh "$U"
    grep -q "^$U:" /etc/subuid || echo "$U:$((400000 + $$ % 1000 * 65536)):65536" >>/etc/subuid
    grep -q "^$U:" /etc/subgid || echo "$U:$((400000 + $$ % 1000 * 65536)):65536" >>/etc/subgid
    mkdir -p "$W/u/home" "$W/u/run"
    cp -r "$IMG_BUSYBOX" "$W/u/busybox"
    chown -R "$U:" "$W/u"
    chmod 700 "$W/u/run"
    AS_U=(setpriv --reuid="$U" --regid="$U" --init-groups --reset-env env HOME="$W/u/home"
      XDG_RUNTIME_DIR="$W/u/run" XDG_DATA_HOME="$W/u/home/.local/share" PATH=/usr/local/bin:/usr/bin:/bin)
    "${AS_U[@]}" "$OHBOX" load "oci:$W/u/busybox:latest" >/dev/null
    RM_U="$(printf '%q ' "${AS_U[@]}") $OHBOX ps -a -q | xargs -r $(printf '%q ' "${AS_U[@]}") $OHBOX rm -f"
    for net in pasta slirp4netns; do
      command -v $net >/dev/null || { printf 'ohbox rootless %s\tnot installed\n' $net; continue; }
      measure "ohbox rootless $net" "$RM_U" "${AS_U[@]}" "$OHBOX" run -d --network $net -p PORT:80 "$BB" "${SERVE[@]}"
    done
    ;;
  esac

  case $SKIP in *,podman,*) ;; *)
    if command -v podman >/dev/null; then
      # runc: crun 1.8 refuses this hybrid host's cgroups; the ulimits as in
      # bench/start.sh (podman's defaults are above what setrlimit allows here)
      PM=(podman --root "$W/podman" --runroot "$W/podman-run" --cgroup-manager cgroupfs --runtime runc)
      PRUN=(run -d --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
      "${PM[@]}" pull -q "oci:$IMG_BUSYBOX:latest" >/dev/null 2>&1 ||
        "${PM[@]}" load -q -i "oci:$IMG_BUSYBOX:latest" >/dev/null 2>&1 || true
      PIMG=$("${PM[@]}" images -q | head -n 1)
      if [ -n "$PIMG" ]; then
        measure "podman root (netavark bridge)" "$(printf '%q ' "${PM[@]}") rm -af" \
          "${PM[@]}" "${PRUN[@]}" -p PORT:80 "$PIMG" "${SERVE[@]}"
      else
        printf 'podman root\tskipped: could not load the busybox image\n'
      fi
      if id "$U" >/dev/null 2>&1; then
        PU=("${AS_U[@]}" podman --cgroup-manager cgroupfs --events-backend file --runtime runc)
        if "${PU[@]}" pull -q "oci:$W/u/busybox:latest" >/dev/null 2>"$W/perr"; then
          measure "podman rootless (slirp4netns + rootlessport)" "$(printf '%q ' "${PU[@]}") rm -af" \
            "${PU[@]}" "${PRUN[@]}" -p PORT:80 \
            "$("${PU[@]}" images -q | head -n 1)" "${SERVE[@]}"
        else
          printf 'podman rootless\tskipped: %s\n' "$(tail -n 1 "$W/perr")"
        fi
      fi
    else
      printf 'podman\tskipped: not installed\n'
    fi
    ;;
  esac
} | column -t -s $'\t'
