#!/bin/bash
# ci-gitlab.sh: `ohbox ci gitlab` driven exactly as GitLab Runner's custom
# executor drives a driver: the runner's variables as CUSTOM_ENV_*, its
# BUILD_FAILURE_EXIT_CODE / SYSTEM_FAILURE_EXIT_CODE (set here to unusual
# values, so that a driver ignoring them fails), config, prepare, then run
# SCRIPT_PATH STAGE_NAME for each stage with scripts shaped like the ones the
# runner generates for bash, then cleanup. The job image (busybox plus
# Debian's bash-static) is built here and pulled from a real registry.
. "$(dirname "$0")/../lib/common.sh"
. "$T_LIB/registry.sh"
. "$T_LIB/images.sh"
. "$T_LIB/ohbox.sh"

export OHBOX_RUNROOT=$T_TMP/run
BUILD_FAIL=41
SYSTEM_FAIL=42

# A layout: the busybox rootfs plus /bin/bash from bash-static.
build_bash_image ()
{
  local l=$T_TMP/ci-bash extra=$T_TMP/ci-bash-layer d1 d2 diff1 desc
  [ -x /bin/bash-static ] || { echo "bash-static is not installed (contrib/install-deps.sh)"; return 1; }
  mkdir -p "$extra/bin" || return 1
  install -m 0755 /bin/bash-static "$extra/bin/bash" || return 1
  img_layout_init "$l" || return 1
  img_add_layer "$l" "$IMG_DIR/rootfs-layer1" gzip || return 1
  diff1=$LAYER_DIFF
  d1=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE") || return 1
  img_add_layer "$l" "$extra" gzip || return 1
  d2=$(_img_desc "$LAYER_MT" "$LAYER_DIGEST" "$LAYER_SIZE") || return 1
  img_add_image "$l" amd64 "" ci-bash "$(_img_layers_json "$d1" "$d2")" "[\"$diff1\",\"$LAYER_DIFF\"]" || return 1
  desc=$(_img_desc "$IMG_OCI_MANIFEST" "$MANIFEST_DIGEST" "$MANIFEST_SIZE" amd64) || return 1
  img_set_refs "$l" "latest=$desc"
  IMG_CI_BASH=$l
}

setup ()
{
  [ "$(id -u)" = 0 ] || { echo "needs root (namespaces, overlay, cgroups)"; return 1; }
  img_build || return 1
  build_bash_image || return 1
  reg_start http REG || return 1
  img_push REG "oci:$IMG_CI_BASH:latest" ci/bash:latest || return 1
  img_push REG "oci:$IMG_BUSYBOX:latest" ci/busybox:latest || return 1
}
t_setup_or_die setup setup

JOB_IMAGE=$REG_HOST/ci/bash:latest

# job_env JOB_ID IMAGE [SLOT]: the variables the runner gives every stage of a job.
job_env ()
{
  export CUSTOM_ENV_CI_JOB_ID=$1 CUSTOM_ENV_CI_JOB_IMAGE=$2 CUSTOM_ENV_CI_CONCURRENT_ID=${3:-0}
  export CUSTOM_ENV_CI_RUNNER_SHORT_TOKEN=t3stRunr CUSTOM_ENV_CI_RUNNER_ID=7
  export CUSTOM_ENV_CI_PROJECT_DIR=/builds/group/project CUSTOM_ENV_CI_JOB_NAME=test
  export BUILD_FAILURE_EXIT_CODE=$BUILD_FAIL SYSTEM_FAILURE_EXIT_CODE=$SYSTEM_FAIL
  export BUILD_EXIT_CODE_FILE=$T_TMP/exit-code-$1
  JOB_DIR=$T_TMP/job-$1
  mkdir -p "$JOB_DIR"
}

# The sandbox name the driver derives (gitlab-RUNNER-cSLOT-JOB).
job_name ()
{
  echo "gitlab-$CUSTOM_ENV_CI_RUNNER_SHORT_TOKEN-c$CUSTOM_ENV_CI_CONCURRENT_ID-$CUSTOM_ENV_CI_JOB_ID"
}

# stage_script STAGE BODY: a script shaped like the runner's bash scripts
# (shebang, set -eo pipefail, the job's variables exported, then the stage's
# commands through eval of an ANSI-C quoted string); prints its path.
stage_script ()
{
  local stage=$1 body=$2 f=$JOB_DIR/script.$1 quoted
  quoted=$(printf '%s' "export CI_JOB_ID='$CUSTOM_ENV_CI_JOB_ID'
export CI_PROJECT_DIR='$CUSTOM_ENV_CI_PROJECT_DIR'
export CI_JOB_STAGE='$stage'
$body
" | sed -e "s/\\\\/\\\\\\\\/g" -e "s/'/\\\\'/g" | awk '{printf "%s\\n", $0}')
  cat >"$f" <<EOF
#!/usr/bin/env bash

set -eo pipefail
set +o noclobber
: | eval \$'$quoted'
exit 0
EOF
  echo "$f"
}

driver ()
{
  ohbox ci gitlab "$@"
}

# run_stage STAGE BODY: the runner's run_exec call; leaves $out/$err/$rc.
run_stage ()
{
  local f
  f=$(stage_script "$1" "$2")
  t_run ohbox ci gitlab run "$f" "$1"
}

# Nothing of the job is left: no sandbox in ps -a, no state directory.
assert_job_gone ()
{
  assert_ok ohbox ps -a --format json
  assert_eq "$(jq -r '.[].name' <<<"$out" | grep -c "^$(job_name)" || true)" 0
  assert_eq "$(find "$OHBOX_RUNROOT" -mindepth 1 -maxdepth 3 -name config.json | wc -l)" 0
}

test_config ()
{
  job_env 100 "$JOB_IMAGE"
  assert_ok driver config
  assert_jq "$out" '.builds_dir == "/builds" and .cache_dir == "/cache"'
  assert_jq "$out" '.builds_dir_is_shared == false and .driver.name == "ohbox" and (.driver.version | length > 0)'
  assert_jq "$out" ".hostname == \"$(job_name)\" and .job_env.OHBOX_CI_SANDBOX == \"$(job_name)\""
}

test_job_passes ()
{
  job_env 101 "$JOB_IMAGE"
  assert_ok driver config
  assert_ok driver prepare --tls-verify=false --network none
  assert_contains "$out" "$(job_name)"
  run_stage prepare_script 'echo "Running on $(hostname) via ohbox..."'
  assert_eq "$rc" 0
  assert_contains "$out" "Running on"
  # get_sources: the runner would clone into CI_PROJECT_DIR; the file made
  # here must be there for the next stages: one sandbox for the whole job.
  run_stage get_sources 'mkdir -p "$CI_PROJECT_DIR" && cd "$CI_PROJECT_DIR" && echo "source v1" > README'
  assert_eq "$rc" 0
  run_stage restore_cache 'true'
  assert_eq "$rc" 0
  run_stage step_script 'cd "$CI_PROJECT_DIR"
echo $'"'"'\x1b[32;1m$ cat README\x1b[0;m'"'"'
cat README
echo "bash ${BASH_VERSION%%.*} in job $CI_JOB_ID"
for i in 1 2 3; do echo "line $i"; done'
  assert_eq "$rc" 0
  assert_contains "$out" "source v1"
  assert_match "$out" "bash 5 in job 101"
  assert_contains "$out" "line 3"
  run_stage after_script 'echo after-ran'
  assert_eq "$rc" 0
  assert_contains "$out" after-ran
  run_stage archive_cache 'true'
  run_stage upload_artifacts_on_success 'true'
  run_stage cleanup_file_variables 'true'
  assert_eq "$rc" 0
  assert_ok driver cleanup
  assert_job_gone
}

test_job_fails ()
{
  job_env 102 "$JOB_IMAGE"
  assert_ok driver prepare --tls-verify=false --network none
  run_stage get_sources 'mkdir -p "$CI_PROJECT_DIR"'
  assert_eq "$rc" 0
  run_stage step_script 'echo before-failure
false
echo not-reached'
  assert_eq "$rc" "$BUILD_FAIL"
  assert_contains "$out" before-failure
  assert_not_contains "$out" not-reached
  # the script's own status, for allow_failure:exit_codes
  assert_eq "$(cat "$BUILD_EXIT_CODE_FILE")" 1
  run_stage step_script 'exit 3'
  assert_eq "$rc" "$BUILD_FAIL"
  assert_eq "$(cat "$BUILD_EXIT_CODE_FILE")" 3
  # the runner goes on with after_script after a failure
  run_stage after_script 'echo after-failure-ran'
  assert_eq "$rc" 0
  assert_contains "$out" after-failure-ran
  run_stage upload_artifacts_on_failure 'true'
  assert_ok driver cleanup
  assert_job_gone
  # cleanup is idempotent (the runner may call it after a failed prepare)
  assert_ok driver cleanup
  assert_contains "$out" "Removed 0 sandboxes"
}

test_image_missing ()
{
  job_env 103 "$REG_HOST/ci/no-such-image:latest"
  assert_exit "$SYSTEM_FAIL" driver prepare --tls-verify=false --network none
  assert_contains "$err" "no-such-image"
  assert_job_gone
  assert_ok driver cleanup
}

test_registry_down ()
{
  local port
  port=$(t_free_port)
  job_env 104 "127.0.0.1:$port/ci/bash:latest"
  assert_exit "$SYSTEM_FAIL" driver prepare --tls-verify=false --network none
  assert_job_gone
}

test_sandbox_gone ()
{
  job_env 105 "$JOB_IMAGE"
  assert_ok driver prepare --tls-verify=false --network none
  assert_ok ohbox rm -f "$(job_name)"
  run_stage step_script 'echo hi'
  assert_eq "$rc" "$SYSTEM_FAIL"
  assert_contains "$err" "$(job_name)"
  assert_ok driver cleanup
  assert_job_gone
}

test_concurrent_jobs ()
{
  # Two jobs at once on two slots (and a stale sandbox of a crashed runner
  # on the first slot, which prepare replaces).
  job_env 106 "$JOB_IMAGE" 0
  assert_ok driver prepare --tls-verify=false --network none
  assert_ok driver prepare --tls-verify=false --network none
  run_stage step_script 'echo one > /tmp/who'
  assert_eq "$rc" 0
  job_env 107 "$JOB_IMAGE" 1
  assert_ok driver prepare --tls-verify=false --network none
  run_stage step_script 'cat /tmp/who 2>/dev/null || echo fresh'
  assert_contains "$out" fresh
  assert_ok driver cleanup
  job_env 106 "$JOB_IMAGE" 0
  run_stage step_script 'cat /tmp/who'
  assert_contains "$out" one
  assert_ok driver cleanup
  assert_job_gone
}

test_services ()
{
  # The runner's job payload (JOB_RESPONSE_FILE) lists the services; they
  # share the job's network namespace.
  job_env 108 "$JOB_IMAGE"
  export JOB_RESPONSE_FILE=$JOB_DIR/response.json
  jq -n --arg img "$REG_HOST/ci/busybox:latest" '{id: 108, image: {name: "x"},
    services: [{name: $img, alias: "web", entrypoint: ["httpd"], command: ["-f", "-p", "127.0.0.1:8080", "-h", "/etc"],
                variables: [{key: "SVC_VAR", value: "1"}]}]}' >"$JOB_RESPONSE_FILE"
  assert_ok driver prepare --tls-verify=false --network none
  assert_contains "$out" "Starting service"
  run_stage step_script 'for i in $(seq 100); do wget -q -O - http://127.0.0.1:8080/passwd && exit 0; sleep 0.05; done; exit 1'
  assert_eq "$rc" 0
  assert_contains "$out" "root:"
  # its alias is a host name of the job's; the names the docker executor
  # derives from the image are not valid here (the registry's host has a
  # port: "127.0.0.1:PORT__ci__busybox"), so they are left out
  run_stage step_script 'cat /etc/hosts; wget -q -O - http://web:8080/group'
  assert_eq "$rc" 0
  assert_match "$out" "127.0.0.1.web"
  assert_not_contains "$out" "__ci__busybox"
  assert_contains "$out" "root:x:0:"
  assert_ok driver cleanup
  assert_contains "$out" "Removed 2 sandboxes"
  assert_job_gone
  unset JOB_RESPONSE_FILE
}

run_test config test_config
run_test job-passes test_job_passes
run_test job-fails test_job_fails
run_test image-missing test_image_missing
run_test registry-down test_registry_down
run_test sandbox-gone test_sandbox_gone
run_test concurrent-jobs test_concurrent_jobs
run_test services test_services

# Whatever a failed test left behind (a passing one removed its own).
for id in $(ohbox ps -a -q 2>/dev/null); do
  ohbox rm -f "$id" >/dev/null 2>&1 || echo "# could not remove sandbox $id" >&2
done
