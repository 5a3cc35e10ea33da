#!/bin/bash
# state-compat.sh: sandboxes whose state directory was written by the ohbox
# before the typed state (tests/fixtures/state-before-typed, formats taken
# from the history of sandbox/state.c) are listed, stopped and removed by
# this one (issue 15, item 2).
#   - an exited sandbox, with a name: ps -a (status, exit code, name, image,
#     command), ps --format json, stop (nothing to do), rm by name;
#   - a running sandbox: one started by this binary whose config.json,
#     state.json and exec.json are replaced by the old formats (the old
#     binary's monitor would have held the same lock and pidfd): ps shows it
#     running, exec works, stop ends it, rm removes it and nothing is left.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/sandbox.sh"

FIXTURE=$T_LIB/../fixtures/state-before-typed

# old_file FILE ID NAME IMAGE_ID STORE PID PID_START: the fixture's FILE filled in.
old_file ()
{
  sed -e "s|@ID@|$2|g" -e "s|@SHORT_ID@|${2:0:12}|g" -e "s|@NAME@|$3|g" -e "s|@IMAGE_ID@|$4|g" \
    -e "s|@STORE@|$5|g" -e "s|@PID@|$6|g" -e "s|@PID_START@|$7|g" "$FIXTURE/$1"
}

test_exited_sandbox ()
{
  load_bb
  # A sandbox of this store tells where the state root and the store are.
  assert_ok ohbox run --rm "$BB" true
  local store image_id id=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  store=$(cd "$T_ROOT" && pwd -P)
  assert_ok ohbox images --format json
  image_id=$(jq -r '.[0].id' <<<"$out")
  local dir=$OHBOX_RUNROOT/$id
  mkdir -p "$dir/rootfs" "$OHBOX_RUNROOT/names"
  old_file config.json "$id" old-exited "$image_id" "$store" 0 0 >"$dir/config.json"
  old_file state-exited.json "$id" old-exited "$image_id" "$store" 0 0 >"$dir/state.json"
  old_file exec.json "$id" old-exited "$image_id" "$store" 0 0 >"$dir/exec.json"
  : >"$dir/monitor.lock"
  ln -s "$id" "$OHBOX_RUNROOT/names/old-exited"
  assert_ok ohbox ps -a --format json
  assert_jq "$out" 'length == 1 and .[0].id == "'"$id"'" and .[0].name == "old-exited" and .[0].status == "exited"
    and .[0].exit_code == 3 and .[0].image == "localhost/busybox:latest" and .[0].command == ["sleep", "1000"]'
  assert_ok ohbox ps -a
  assert_match "$out" "${id:0:12} .*old-exited"
  assert_ok ohbox ps -q
  assert_eq "$out" "" "an exited sandbox is not listed without -a"
  assert_ok ohbox stop old-exited
  assert_ok ohbox rm old-exited
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
  [ ! -e "$dir" ] && [ ! -L "$OHBOX_RUNROOT/names/old-exited" ] || _t_assert_fail "state left behind: $(ls -A "$OHBOX_RUNROOT" "$OHBOX_RUNROOT/names" 2>&1)"
}

test_running_sandbox ()
{
  load_bb
  assert_ok ohbox run -d --name old-running "$BB" sleep 1000
  local id=$out dir=$OHBOX_RUNROOT/$out
  local pid pid_start store image_id
  pid=$(jq -r .pid "$dir/state.json")
  pid_start=$(jq -r .pid_start "$dir/state.json")
  store=$(jq -r .store "$dir/config.json")
  image_id=$(jq -r .image_id "$dir/config.json")
  t_track "$(awk '{print $4}' "/proc/$pid/stat")"
  # What the old binary wrote, in place of what this one wrote.
  local f
  for f in config.json exec.json; do
    old_file "$f" "$id" old-running "$image_id" "$store" "$pid" "$pid_start" >"$dir/$f.new"
    mv "$dir/$f.new" "$dir/$f"
  done
  old_file state-running.json "$id" old-running "$image_id" "$store" "$pid" "$pid_start" >"$dir/state.json.new"
  mv "$dir/state.json.new" "$dir/state.json"
  assert_ok ohbox ps --format json
  assert_jq "$out" 'length == 1 and .[0].id == "'"$id"'" and .[0].name == "old-running" and .[0].status == "running"
    and .[0].pid == '"$pid"' and .[0].command == ["sleep", "1000"]'
  assert_ok ohbox exec old-running sh -c 'echo $HOSTNAME; cat /proc/1/cmdline | tr "\0" " "'
  assert_contains "$out" "${id:0:12}"
  assert_ok ohbox stop -t 2 old-running
  assert_ok ohbox ps -a --format json
  assert_jq "$out" '.[0].status == "exited" and .[0].exit_code == 143'
  assert_ok ohbox rm old-running
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
  [ ! -e "$dir" ] || _t_assert_fail "state left behind: $(ls -A "$dir" 2>&1)"
  kill -0 "$pid" 2>/dev/null && _t_assert_fail "the sandbox's init $pid still runs"
  return 0
}

run_test exited_sandbox test_exited_sandbox
run_test running_sandbox test_running_sandbox
t_summary 2>/dev/null || true
