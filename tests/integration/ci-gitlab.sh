#!/bin/bash
# ci-gitlab.sh: `ohbox ci gitlab` driven exactly as GitLab Runner's custom
# executor drives a driver: the runner's variables as CUSTOM_ENV_*, the job
# response in $JOB_RESPONSE_FILE, its BUILD_FAILURE_EXIT_CODE /
# SYSTEM_FAILURE_EXIT_CODE (set here to unusual values, so that a driver
# ignoring them fails), config (whose job_env the later stages get in their
# environment, as the runner does), prepare, then run SCRIPT_PATH STAGE_NAME
# for each stage with scripts shaped like the ones the runner generates for
# bash, then cleanup. The job image (busybox plus Debian's bash-static) is
# built here and pulled from real registries, one of them private (htpasswd).
# The attacks: a job claiming another running job's variables, and jobs
# without credentials after a private image was pulled by one with them.
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
  reg_start basic PRIV || return 1
  img_push PRIV "oci:$IMG_CI_BASH:latest" ci/private:latest || return 1
}
t_setup_or_die setup setup

JOB_IMAGE=$REG_HOST/ci/bash:latest
PRIV_IMAGE=$PRIV_HOST/ci/private:latest

# job_env JOB_ID IMAGE [SLOT]: the variables the runner gives every stage of
# a job, its job response, and (the first time) the config stage, whose
# job_env the runner adds to the environment of the later stages.
job_env ()
{
  export CUSTOM_ENV_CI_JOB_ID=$1 CUSTOM_ENV_CI_JOB_IMAGE=$2 CUSTOM_ENV_CI_CONCURRENT_ID=${3:-0}
  export CUSTOM_ENV_CI_RUNNER_SHORT_TOKEN=t3stRunr CUSTOM_ENV_CI_RUNNER_ID=7
  export CUSTOM_ENV_CI_PROJECT_DIR=/builds/group/project CUSTOM_ENV_CI_JOB_NAME=test
  export BUILD_FAILURE_EXIT_CODE=$BUILD_FAIL SYSTEM_FAILURE_EXIT_CODE=$SYSTEM_FAIL
  export BUILD_EXIT_CODE_FILE=$T_TMP/exit-code-$1
  unset CUSTOM_ENV_DOCKER_AUTH_CONFIG CUSTOM_ENV_CI_REGISTRY CUSTOM_ENV_CI_REGISTRY_USER CUSTOM_ENV_CI_REGISTRY_PASSWORD
  JOB_DIR=$T_TMP/job-$1
  mkdir -p "$JOB_DIR"
  export JOB_RESPONSE_FILE=$JOB_DIR/response.json
  [ -f "$JOB_RESPONSE_FILE" ] ||
    jq -n --argjson id "$1" '{id: $id, token: "job-token-\($id)", runner_info: {timeout: 3600}, variables: []}' \
      >"$JOB_RESPONSE_FILE"
  unset OHBOX_CI_SANDBOX OHBOX_CI_JOB_KEY
  if [ ! -f "$JOB_DIR/config.json" ]; then
    "$OHBOX_BIN" --root "$T_ROOT" ci gitlab config >"$JOB_DIR/config.json" || return 1
  fi
  eval "$(jq -r '.job_env // {} | to_entries[] | "export \(.key)=\(.value | @sh)"' "$JOB_DIR/config.json")"
}

# The job's sandbox, as config named it.
job_name ()
{
  echo "$OHBOX_CI_SANDBOX"
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
  # the name: the job response's id and random bits; the key: 256 random bits
  assert_jq "$out" '.hostname == .job_env.OHBOX_CI_SANDBOX and (.hostname | test("^gitlab-100-[0-9a-f]{8}$"))'
  assert_jq "$out" '.job_env.OHBOX_CI_JOB_KEY | test("^[0-9a-f]{64}$")'
  local first=$out
  assert_ok driver config
  assert_jq "$out" ".hostname != $(jq .hostname <<<"$first") and .job_env.OHBOX_CI_JOB_KEY != $(jq .job_env.OHBOX_CI_JOB_KEY <<<"$first")"
  # the job's own variables do not name it
  CUSTOM_ENV_CI_JOB_ID=555 assert_ok driver config
  assert_jq "$out" '.hostname | test("^gitlab-100-")'
  # without the runner's job response, or without config's job_env: no job
  JOB_RESPONSE_FILE= assert_exit "$SYSTEM_FAIL" driver config
  assert_contains "$err" JOB_RESPONSE_FILE
  OHBOX_CI_SANDBOX= assert_exit "$SYSTEM_FAIL" driver prepare --tls-verify=false --network none
  assert_contains "$err" "ohbox ci gitlab config"
  OHBOX_CI_JOB_KEY=0123 assert_exit "$SYSTEM_FAIL" driver run /dev/null step_script
  assert_job_gone
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
  # Two jobs at once on two slots (and a second prepare of the first job,
  # the runner retrying it, which replaces what the first one started).
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
}

# The attack: job 202 redefines every variable of job 201 (its id, slot and
# runner) while 201 runs. 202's prepare must neither remove 201's sandbox
# nor take its name, and 201's later stages must still run in 201's image;
# run and cleanup handed another job's sandbox refuse it.
test_takeover ()
{
  job_env 201 "$JOB_IMAGE" 0
  assert_ok driver prepare --tls-verify=false --network none
  run_stage step_script 'echo secret-of-201 > /tmp/mark'
  assert_eq "$rc" 0
  local victim=$OHBOX_CI_SANDBOX victim_key=${OHBOX_CI_JOB_KEY:-}
  # 202, with a busybox image (no bash), claims 201's variables
  job_env 202 "$REG_HOST/ci/busybox:latest" 0
  export CUSTOM_ENV_CI_JOB_ID=201 CUSTOM_ENV_CI_CONCURRENT_ID=0 CUSTOM_ENV_CI_RUNNER_SHORT_TOKEN=t3stRunr
  assert_ok driver prepare --tls-verify=false --network none
  assert_not_contains "$out" "$victim"
  local attacker=$OHBOX_CI_SANDBOX attacker_key=${OHBOX_CI_JOB_KEY:-}
  # the stages of 202 given 201's sandbox (its name, 202's key) are refused
  local f
  f=$(stage_script step_script 'echo ran > /tmp/attacker')
  OHBOX_CI_SANDBOX=$victim assert_exit "$SYSTEM_FAIL" driver run "$f" step_script
  assert_contains "$err" "was not created by this job"
  OHBOX_CI_SANDBOX=$victim assert_exit "$SYSTEM_FAIL" driver cleanup
  assert_contains "$err" "was not created by this job"
  # 201 goes on in its own sandbox, from its own image
  job_env 201 "$JOB_IMAGE" 0
  assert_eq "$victim" "$OHBOX_CI_SANDBOX"
  run_stage step_script 'cat /tmp/mark; test ! -e /tmp/attacker && echo "bash ${BASH_VERSION%%.*}"'
  assert_eq "$rc" 0
  assert_contains "$out" secret-of-201
  assert_contains "$out" "bash 5"
  # a sandbox of the job's name that prepare did not make (the name is
  # known from logs): neither removed nor used
  assert_ok ohbox run -d --network none --name gitlab-999-0badf00d "$REG_HOST/ci/busybox:latest" sleep 600
  OHBOX_CI_SANDBOX=gitlab-999-0badf00d assert_exit "$SYSTEM_FAIL" driver prepare --tls-verify=false --network none
  assert_contains "$err" "was not created by this job"
  assert_ok ohbox ps --format json
  assert_jq "$out" 'map(select(.name == "gitlab-999-0badf00d")) | length == 1'
  assert_ok ohbox rm -f gitlab-999-0badf00d
  assert_ok driver cleanup
  job_env 202 "$REG_HOST/ci/busybox:latest" 0
  assert_eq "$attacker" "$OHBOX_CI_SANDBOX"
  assert_ok driver cleanup
  assert_contains "$out" "Removed 1 sandbox of $attacker"
  assert_ok ohbox ps -a -q
  assert_eq "$out" ""
  [ -n "$victim_key" ] && [ -n "$attacker_key" ]
}

# A runner that died before its cleanup: once the job's time is up, the
# next prepare removes what it left (and only that).
test_leftovers ()
{
  job_env 203 "$JOB_IMAGE"
  jq '.runner_info.timeout = 1' "$JOB_RESPONSE_FILE" >"$JOB_DIR/r" && mv "$JOB_DIR/r" "$JOB_RESPONSE_FILE"
  assert_ok driver prepare --tls-verify=false --network none
  local dead=$OHBOX_CI_SANDBOX rec
  rec=$(grep -l "\"$dead\"" "$OHBOX_RUNROOT"/ci-gitlab/*.json)
  # its time (1 s + the hour the runner has for cleanup) is up
  jq '.expires = 1000' "$rec" >"$rec.new" && mv "$rec.new" "$rec"
  job_env 204 "$JOB_IMAGE"
  assert_ok driver prepare --tls-verify=false --network none
  assert_contains "$out" "Removed sandbox $dead"
  assert_ok ohbox ps -a --format json
  assert_jq "$out" "map(.name) == [\"$OHBOX_CI_SANDBOX\"]"
  [ ! -e "$rec" ] || _t_assert_fail "the record of the removed sandbox is still there"
  assert_ok driver cleanup
  assert_job_gone
  assert_eq "" "$(ls "$OHBOX_RUNROOT/ci-gitlab")"
}

# priv_job JOB_ID: a job of the private image on the htpasswd registry.
priv_job ()
{
  job_env "$1" "$PRIV_IMAGE"
  PRIV_OPTS=(--cert-dir "$PRIV_CERTDIR" --network none)
}

# The runner host has credentials for the private registry (root's
# auth.json, as after `ohbox login`); jobs get only their own.
test_job_credentials ()
{
  t_auth_json "$HOME/.docker/config.json" "$PRIV_HOST" testuser testpass
  # no credentials of its own: the host's are not used
  priv_job 301
  assert_exit "$SYSTEM_FAIL" driver prepare "${PRIV_OPTS[@]}"
  assert_contains "$err" "authentication required"
  assert_job_gone
  # the job's DOCKER_AUTH_CONFIG
  priv_job 302
  export CUSTOM_ENV_DOCKER_AUTH_CONFIG
  CUSTOM_ENV_DOCKER_AUTH_CONFIG=$(jq -cn --arg h "$PRIV_HOST" --arg a "$(printf reader:readerpass | base64 -w0)" \
    '{auths: {($h): {auth: $a}}}')
  assert_ok driver prepare "${PRIV_OPTS[@]}"
  run_stage step_script 'echo "private ${BASH_VERSION%%.*}"'
  assert_eq "$rc" 0
  assert_contains "$out" "private 5"
  assert_ok driver cleanup
  # the store has it now; a job without credentials still does not get it
  # (the default policy asks the registry again for images that needed them)
  priv_job 303
  assert_exit "$SYSTEM_FAIL" driver prepare "${PRIV_OPTS[@]}"
  assert_contains "$out" "needed registry credentials"
  assert_contains "$err" "authentication required"
  assert_job_gone
  # nor by its id, nor by digest under another name
  local id
  id=$(ohbox images --format json | jq -r ".[] | select(.names | index(\"$PRIV_IMAGE\")) | .id")
  [[ $id == sha256:* ]] || _t_assert_fail "no image id: $id"
  priv_job 304
  CUSTOM_ENV_CI_JOB_IMAGE=${id#sha256:} assert_exit "$SYSTEM_FAIL" driver prepare "${PRIV_OPTS[@]}" --pull never
  assert_contains "$err" "not in the store"
  CUSTOM_ENV_CI_JOB_IMAGE=$PRIV_HOST/ci/other@$id assert_exit "$SYSTEM_FAIL" driver prepare "${PRIV_OPTS[@]}"
  assert_contains "$err" "authentication required"
  assert_job_gone
  # the job response's credentials (GitLab's registry with the job token)
  priv_job 305
  jq --arg h "$PRIV_HOST" '.credentials = [{type: "registry", url: $h, username: "reader", password: "readerpass"}]' \
    "$JOB_RESPONSE_FILE" >"$JOB_DIR/r" && mv "$JOB_DIR/r" "$JOB_RESPONSE_FILE"
  assert_ok driver prepare "${PRIV_OPTS[@]}"
  assert_ok driver cleanup
  # $CI_REGISTRY_USER / $CI_REGISTRY_PASSWORD for $CI_REGISTRY
  priv_job 306
  export CUSTOM_ENV_CI_REGISTRY=$PRIV_HOST CUSTOM_ENV_CI_REGISTRY_USER=reader CUSTOM_ENV_CI_REGISTRY_PASSWORD=readerpass
  assert_ok driver prepare "${PRIV_OPTS[@]}"
  assert_ok driver cleanup
  # wrong ones are refused
  priv_job 307
  export CUSTOM_ENV_CI_REGISTRY=$PRIV_HOST CUSTOM_ENV_CI_REGISTRY_USER=reader CUSTOM_ENV_CI_REGISTRY_PASSWORD=wrong
  assert_exit "$SYSTEM_FAIL" driver prepare "${PRIV_OPTS[@]}"
  assert_contains "$err" "refused"
  # the runner's configuration asks for the host's credentials
  priv_job 308
  assert_ok driver prepare "${PRIV_OPTS[@]}" --host-credentials
  assert_ok driver cleanup
  # ... or for if-not-present, which takes what the store has (GitLab's meaning)
  priv_job 309
  assert_ok driver prepare "${PRIV_OPTS[@]}" --pull if-not-present
  assert_contains "$out" "from the store"
  assert_ok driver cleanup
  assert_job_gone
}

# A public image in the store is used as it is by default (no request);
# --pull always asks the registry every time.
test_pull_policy ()
{
  job_env 310 "$JOB_IMAGE"
  assert_ok driver prepare --tls-verify=false --network none
  assert_ok driver cleanup
  job_env 311 "$JOB_IMAGE"
  assert_ok driver prepare --tls-verify=false --network none
  assert_contains "$out" "Using $JOB_IMAGE from the store"
  assert_ok driver cleanup
  job_env 312 "$JOB_IMAGE"
  assert_ok driver prepare --tls-verify=false --network none --pull always
  assert_contains "$out" "pulled $JOB_IMAGE"
  assert_ok driver cleanup
  job_env 313 "$JOB_IMAGE"
  assert_exit "$SYSTEM_FAIL" driver prepare --pull missing-or-not
  assert_contains "$err" "always, if-not-present or never"
  assert_job_gone
}

# A registry that drips the manifest: the runner's --pull-timeout ends the
# pull (a system failure, nothing left); --max-image-size is passed on.
test_pull_limits ()
{
  fp_start REG FP
  fp_set FP '{"drip": 1100, "drip_pad": 4000000, "match": "/manifests/"}'
  job_env 314 "$FP_HOST/ci/bash:latest"
  local start=$SECONDS
  assert_exit "$SYSTEM_FAIL" driver prepare --tls-verify=false --network none --pull-timeout 2s
  assert_int -le $((SECONDS - start)) 20 "seconds before giving up"
  assert_contains "$err" "did not finish within the pull's deadline of 2s"
  assert_job_gone
  fp_set FP '{}'
  job_env 315 "$FP_HOST/ci/bash:latest"
  assert_exit "$SYSTEM_FAIL" driver prepare --tls-verify=false --network none --max-image-size 1M
  assert_contains "$err" "exceed the unpacked size limit of 1.0 MB"
  assert_exit "$SYSTEM_FAIL" driver prepare --pull-timeout 1x
  assert_contains "$err" "--pull-timeout takes a duration"
  assert_job_gone
}

run_test config test_config
run_test job-passes test_job_passes
run_test job-fails test_job_fails
run_test image-missing test_image_missing
run_test registry-down test_registry_down
run_test sandbox-gone test_sandbox_gone
run_test concurrent-jobs test_concurrent_jobs
run_test services test_services
run_test takeover test_takeover
run_test leftovers test_leftovers
run_test job-credentials test_job_credentials
run_test pull-policy test_pull_policy
run_test pull-limits test_pull_limits

t_remove_leftover_sandboxes
