#!/bin/bash
# pull-tty.sh: what `ohbox pull` prints. With stdout a terminal (a pty from
# script(1)): progress bars, one per layer and a total, redrawn in place with
# cursor-up sequences while the fault proxy slows the download down, then the
# "pulled" line. With stdout a pipe: plain event lines, no escape sequence.
# -q: the id only; --format json: the JSON object only, in both cases.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registries.sh"

# the start of the layers' digests, as the output shows them
L1=$(short_hex "$IMG_BB_LAYER1")
L2=$(short_hex "$IMG_BB_LAYER2")

# The 1 MB layer at 400 kB/s: about 2.5 s, some 20 redraws at 10 per second.
RATE=400000
ESC=$'\033'

# slow_proxy: starts the fault proxy FP in front of REG, blobs slowed down;
# sets NAME, the image's name through it.
slow_proxy ()
{
  fp_start REG FP
  fp_set FP "{\"rate\": $RATE}"
  NAME=$FP_HOST/test/busybox:latest
}

# on_tty COLS ARGS...: runs `ohbox ARGS` with stdout and stderr on a
# pseudo-terminal COLS columns wide (script(1) from util-linux); what the
# terminal received, carriage returns removed, in $out and its status in $rc.
on_tty ()
{
  local cols=$1 cmd
  shift
  require_cmd script
  cmd=$(printf '%q ' timeout --foreground -k 5 "$T_OHBOX_TIMEOUT" "$OHBOX_BIN" --root "$T_ROOT" "$@")
  echo "+ (tty, $cols columns) ohbox --root $T_ROOT $*" >&9
  rc=0
  script -qfec "stty cols $cols rows 30 && exec $cmd" /dev/null >"$T_WORK/tty.raw" 2>"$T_WORK/tty.err" \
    </dev/null || rc=$?
  out=$(tr -d '\r' <"$T_WORK/tty.raw")
  err=$(cat "$T_WORK/tty.err")
  {
    echo "  [exit $rc]"
    printf '%s\n' "$out" | tail -n 8 | cat -v | sed 's/^/  tty| /'
    printf '%s\n' "$err" | head -n 5 | sed 's/^/  script stderr| /'
  } >&9
}

# plain TEXT: TEXT without its CSI escape sequences (what the lines say).
plain ()
{
  printf '%s\n' "$1" | sed "s/$ESC\[[0-9;]*[A-Za-z]//g"
}

# bar_lines TEXT HEX12: the bar lines of the layer whose digest starts with HEX12.
bar_lines ()
{
  plain "$1" | grep -E "^sha256:$2 \[" || true
}

# assert_no_escape TEXT WHAT: TEXT has no ESC character at all.
assert_no_escape ()
{
  case $1 in
    *"$ESC"*) _t_assert_fail "$2 contains escape sequences: \"$(_t_short "$(printf '%s' "$1" | cat -v)")\"" ;;
  esac
}

# assert_bars_fit TEXT COLS: no line of the drawings (bars and totals) of
# TEXT is wider than COLS: a line that wraps takes two rows, and the cursor-up
# before the next drawing no longer reaches the top of this one.
assert_bars_fit ()
{
  local widest
  widest=$(plain "$1" | grep -E '^(sha256:[0-9a-f]+ \[|total )' |
    awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
  assert_int -le "$widest" "$2" "width of the widest bar or total line on a $2-column terminal"
}

# slow_pull_on_tty COLS [OPTION...]: NAME pulled through the slow proxy with
# OPTIONs on a terminal COLS columns wide ($out as on_tty); it must succeed.
slow_pull_on_tty ()
{
  local cols=$1
  shift
  slow_proxy
  on_tty "$cols" pull "$@" --tls-verify=false "$NAME"
  assert_eq 0 "$rc" "exit status of \`pull $*\` on a terminal"
}

# into_pipe ARGS...: ohbox ARGS with stdout a pipe (pipefail keeps its status).
into_pipe ()
{
  ohbox "$@" | cat
}

test_tty_progress_bars ()
{
  slow_pull_on_tty 80
  local p
  p=$(plain "$out")
  # a bar per layer, and a total
  assert_match "$p" "^sha256:$L1 \[[=> ]+\] " "bar of layer 1"
  assert_match "$p" "^sha256:$L2 \[[=> ]+\] " "bar of layer 2"
  assert_match "$p" "^total " "total line"
  # redrawn in place: the cursor goes up over the previous drawing (2 bars
  # and the total: 3 lines), many times while the layer arrives
  local ups
  ups=$(printf '%s' "$out" | grep -o "$ESC\[[0-9]*A" | sort | uniq -c | sed 's/\x1b/ESC/')
  assert_match "$ups" "ESC\[3A" "cursor-up sequences"
  assert_eq 1 "$(printf '%s\n' "$ups" | grep -c .)" "kinds of cursor-up sequences ($ups)"
  assert_int -ge "$(printf '%s' "$out" | grep -o "$ESC\[3A" | wc -l)" 5 "redraws"
  # the bar of layer 1 moved: several different amounts, then full
  assert_int -ge "$(bar_lines "$out" "$L1" | sort -u | wc -l)" 4 "distinct drawings of layer 1's bar"
  assert_match "$(bar_lines "$out" "$L1" | tail -n 1)" "^sha256:$L1 \[=+\] " "last bar of layer 1"
  assert_match "$(bar_lines "$out" "$L2" | tail -n 1)" "^sha256:$L2 \[=+\] " "last bar of layer 2"
  # bars replace the event lines, and the last line says what was pulled
  assert_no_match "$p" "^layer sha256:" "output on a terminal"
  assert_eq "pulled $NAME $IMG_BB_MANIFEST linux/amd64" "$(printf '%s\n' "$p" | grep . | tail -n 1)" "last line"
  assert_bars_fit "$out" 80
  assert_store_blobs_valid
  assert_layer_present "$IMG_BB_DIFF1"
}

test_tty_every_bar_names_its_layer ()
{
  # every bar is labelled with its layer, and a layer being downloaded is
  # never shown "already present" (the store was empty)
  slow_pull_on_tty 80
  local p
  p=$(plain "$out")
  assert_match "$p" "^sha256:$L1 \[[=> ]+\] " "bar of layer 1"
  assert_eq "" "$(printf '%s\n' "$p" | grep -E '\[[=> ]+\]' | grep -Ev "^sha256:($L1|$L2) \[" | head -n 3)" \
    "bar lines without their layer's digest"
  assert_no_match "$p" "already present" "output of a pull into an empty store"
}

test_tty_wide_terminal ()
{
  # bars use the width of the terminal
  slow_pull_on_tty 132
  local bar
  bar=$(bar_lines "$out" "$L1" | tail -n 1 | sed -E 's/^[^[]*\[([^]]*)\].*/\1/')
  assert_int -gt "${#bar}" 40 "length of the bar on a 132-column terminal"
  assert_bars_fit "$out" 132
  assert_match "$(plain "$out" | grep . | tail -n 1)" "^pulled $NAME $IMG_BB_MANIFEST linux/amd64\$" "last line"
}

test_tty_narrow_terminal ()
{
  # a line wider than the terminal wraps, and moving up 3 lines no longer
  # reaches the top of the drawing: every line must fit
  slow_pull_on_tty 64
  assert_match "$(plain "$out")" "^total " "total line"
  assert_bars_fit "$out" 64
}

test_tty_quiet ()
{
  slow_pull_on_tty 80 -q
  assert_eq "$IMG_BB_MANIFEST" "$out" "what pull -q printed on a terminal"
  # and into a pipe
  assert_ok ohbox rmi "$NAME"
  assert_ok ohbox prune
  assert_ok into_pipe pull -q --tls-verify=false "$NAME"
  assert_eq "$IMG_BB_MANIFEST" "$out" "what pull -q printed into a pipe"
  assert_eq "" "$err" "stderr of pull -q"
}

test_tty_format_json ()
{
  slow_pull_on_tty 80 --format json
  assert_no_escape "$out" "pull --format json on a terminal"
  assert_jq "$out" "type == \"object\" and .image == \"$NAME\" and .id == \"$IMG_BB_MANIFEST\"
    and .platform == \"linux/amd64\" and .layers == 2 and .blobs_downloaded >= 2" "pull --format json on a terminal"
  # one JSON value and nothing else
  assert_eq 1 "$(printf '%s' "$out" | jq -s length)" "JSON values printed"
  # and into a pipe
  assert_ok ohbox rmi "$NAME"
  assert_ok ohbox prune
  assert_ok into_pipe pull --format json --tls-verify=false "$NAME"
  assert_no_escape "$out" "pull --format json into a pipe"
  assert_jq "$out" ".id == \"$IMG_BB_MANIFEST\" and .blobs_downloaded >= 2" "pull --format json into a pipe"
  assert_eq 1 "$(printf '%s' "$out" | jq -s length)" "JSON values printed into a pipe"
}

test_pipe_plain_lines ()
{
  slow_proxy
  assert_ok into_pipe pull --tls-verify=false "$NAME"
  assert_no_escape "$out" "stdout into a pipe"
  assert_no_escape "$err" "stderr"
  assert_eq "pulling $NAME" "$(printf '%s\n' "$out" | head -n 1)" "first line"
  assert_match "$out" "^layer sha256:$L1 downloaded \([0-9.]+ [kMG]?B\)\$" "line of layer 1"
  assert_match "$out" "^layer sha256:$L2 downloaded \([0-9.]+ [kMG]?B\)\$" "line of layer 2"
  assert_eq 1 "$(printf '%s\n' "$out" | grep -c "^layer sha256:$L1 downloaded")" "lines saying layer 1 downloaded"
  assert_eq "pulled $NAME $IMG_BB_MANIFEST linux/amd64" "$(printf '%s\n' "$out" | tail -n 1)" "last line"
  assert_no_match "$out" '\[[=> ]+\]|^total ' "stdout into a pipe (bars)"
  # a second pull: every layer already present
  assert_ok into_pipe pull --tls-verify=false "$NAME"
  assert_no_escape "$out" "stdout of the second pull"
  assert_match "$out" "^layer sha256:$L1 already present\$" "second pull"
  assert_match "$out" "^layer sha256:$L2 already present\$" "second pull"
  assert_eq "pulled $NAME $IMG_BB_MANIFEST linux/amd64" "$(printf '%s\n' "$out" | tail -n 1)" "last line"
}

test_tty_error ()
{
  # a failure on a terminal: the error on the terminal, exit status kept
  on_tty 80 pull --tls-verify=false "$REG_HOST/test/no-such-repo:latest"
  assert_eq 3 "$rc" "exit status of a failed pull on a terminal"
  assert_match "$(plain "$out")" "no-such-repo" "error on the terminal"
  assert_no_match "$(plain "$out")" "^pulled " "output of a failed pull"
}

run_test tty_progress_bars test_tty_progress_bars
run_test tty_every_bar_names_its_layer test_tty_every_bar_names_its_layer
run_test tty_wide_terminal test_tty_wide_terminal
run_test tty_narrow_terminal test_tty_narrow_terminal
run_test tty_quiet test_tty_quiet
run_test tty_format_json test_tty_format_json
run_test pipe_plain_lines test_pipe_plain_lines
run_test tty_error test_tty_error
