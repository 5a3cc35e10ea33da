# tests/lib/rootless_user.sh: a throwaway unprivileged user for the tests
# of rootless ohbox (rootless.sh, serve-rootless.sh, policy.sh). Source
# after common.sh.
#   ru_init PREFIX        T_USER=PREFIX<pid>; the EXIT trap removes the user,
#                         its sub ids, processes, mounts and U_DIR
#   ru_need TOOLS...      fails (saying why) unless root, with useradd,
#                         setpriv, newuidmap and TOOLS
#   ru_make_user BASE DIRS...
#                         the user (no home), 65536 sub ids from BASE (+ a
#                         block chosen by the pid) unless useradd gave some,
#                         and U_DIR (a folder under /tmp, readable by all)
#                         with home/ and run/ (0700), src/ (the executor's
#                         sources), ohbox-executor (the one built) and DIRS,
#                         all the user's
#   ru_as_user [VAR=VALUE...] CMD...
#                         CMD as the user with a time limit, HOME, XDG dirs,
#                         PATH and the executor of U_DIR (VAR=VALUE overrides)
T_USER=
U_DIR=

ru_cleanup ()
{
  if [ -n "$T_USER" ] && id "$T_USER" >/dev/null 2>&1; then
    pkill -KILL -u "$T_USER" 2>/dev/null || true
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do
      pgrep -u "$T_USER" >/dev/null || break
      sleep 0.1
    done
    userdel "$T_USER" 2>/dev/null || true
  fi
  [ -z "$T_USER" ] || sed -i "/^$T_USER:/d" /etc/subuid /etc/subgid 2>/dev/null || true
  if [ -n "$U_DIR" ]; then
    # mounts a killed sandbox may have left (none expected: the tests assert it)
    grep -o " $U_DIR/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
    rm -rf "$U_DIR"
  fi
  return 0
}

ru_init ()
{
  T_USER=$1$$
  trap '_rc=$?; ru_cleanup; (exit $_rc); _t_cleanup' EXIT
}

ru_need ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (to make a user)"; return 1; }
  local c
  for c in useradd setpriv newuidmap "$@"; do
    command -v "$c" >/dev/null || { echo "$c is not installed"; return 1; }
  done
}

ru_make_user ()
{
  local base=$1 d
  shift
  useradd -M -s /bin/sh "$T_USER" || return 1
  # useradd may have given a range already (SUB_UID_* in login.defs)
  grep -q "^$T_USER:" /etc/subuid || echo "$T_USER:$((base + $$ % 1000 * 65536)):65536" >>/etc/subuid
  grep -q "^$T_USER:" /etc/subgid || echo "$T_USER:$((base + $$ % 1000 * 65536)):65536" >>/etc/subgid
  U_DIR=$(mktemp -d "/tmp/ohbox-$T_SCRIPT.XXXXXX") || return 1
  chmod 755 "$U_DIR"
  mkdir -p "$U_DIR/home" "$U_DIR/run" "$U_DIR/src" || return 1
  cp "$OHBOX_SRCDIR"/executor/*.[ch] "$OHBOX_SRCDIR/executor/local.mk" "$U_DIR/src/" || return 1
  cp "$OHBOX_BUILDDIR/ohbox-executor" "$U_DIR/ohbox-executor" || return 1
  for d in "$@"; do
    mkdir -p "$U_DIR/$d" || return 1
  done
  chown -R "$T_USER:" "$U_DIR/home" "$U_DIR/run" "$U_DIR/src" "$U_DIR/ohbox-executor" || return 1
  for d in "$@"; do
    chown -R "$T_USER:" "$U_DIR/$d" || return 1
  done
  chmod 700 "$U_DIR/run" "$U_DIR/home"
}

ru_as_user ()
{
  timeout -k 5 "$T_OHBOX_TIMEOUT" setpriv --reuid="$T_USER" --regid="$T_USER" --init-groups --reset-env \
    env HOME="$U_DIR/home" XDG_RUNTIME_DIR="$U_DIR/run" XDG_DATA_HOME="$U_DIR/home/.local/share" \
    PATH=/usr/local/bin:/usr/bin:/bin OHBOX_EXECUTOR="$U_DIR/ohbox-executor" OHBOX_EXECUTOR_SRCDIR="$U_DIR/src" "$@"
}
