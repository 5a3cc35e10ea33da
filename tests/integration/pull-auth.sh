#!/bin/bash
# pull-auth.sh: `ohbox pull` from registries that want credentials (htpasswd
# Basic auth and the token flow of Docker Hub/GHCR/Quay), credentials from
# --creds, --authfile, $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json
# and ~/.docker/config.json, token caching, and `ohbox login` / `ohbox logout`.
. "$(dirname "$0")/../lib/common.sh"
setup_registries ()
{
  reg_start basic BASIC || return 1
  reg_start token TOKEN || return 1
  img_push BASIC "oci:$IMG_BUSYBOX:latest" test/busybox:latest || return 1
  img_push TOKEN "oci:$IMG_BUSYBOX:latest" public/busybox:latest || return 1
  img_push TOKEN "oci:$IMG_BUSYBOX:latest" private/busybox:latest || return 1
  img_push TOKEN "oci:$IMG_MULTI:latest" private/multi:latest --all || return 1
}
. "$T_LIB/registries.sh"

BB=$BASIC_HOST/test/busybox:latest

# ---- Basic auth

test_basic_no_credentials ()
{
  assert_exit 4 ohbox pull --cert-dir "$BASIC_CERTDIR" "$BB"
  assert_contains "$err" "$BASIC_HOST" "error message"
  assert_eq "" "$(store_blob_files)" "blobs after a refused pull"
}

test_basic_creds ()
{
  assert_ok ohbox pull --cert-dir "$BASIC_CERTDIR" --creds testuser:testpass "$BB"
  assert_match "$out" "^pulled $BB $IMG_BB_MANIFEST linux/amd64\$"
  assert_store_blobs_valid
}

test_basic_wrong_creds ()
{
  assert_exit 4 ohbox pull --cert-dir "$BASIC_CERTDIR" --creds testuser:wrong "$BB"
  assert_contains "$err" "$BASIC_HOST" "error message"
  assert_ok ohbox images -q
  assert_eq "" "$out" "images after a refused pull"
  assert_eq "" "$(store_blob_files)" "blobs after a refused pull"
}

test_basic_authfile ()
{
  t_auth_json "$T_WORK/auth.json" "$BASIC_HOST" testuser testpass
  assert_ok ohbox pull --cert-dir "$BASIC_CERTDIR" --authfile "$T_WORK/auth.json" "$BB"
  assert_match "$out" "^pulled $BB "
}

test_basic_authfile_other_host ()
{
  # credentials for another registry are not sent
  t_auth_json "$T_WORK/auth.json" "127.0.0.1:1" testuser testpass
  assert_exit 4 ohbox pull --cert-dir "$BASIC_CERTDIR" --authfile "$T_WORK/auth.json" "$BB"
}

test_basic_registry_auth_file ()
{
  t_auth_json "$T_WORK/env-auth.json" "$BASIC_HOST" reader readerpass
  export REGISTRY_AUTH_FILE=$T_WORK/env-auth.json
  assert_ok ohbox pull --cert-dir "$BASIC_CERTDIR" "$BB"
  assert_match "$out" "^pulled $BB "
}

test_basic_xdg_runtime_auth ()
{
  t_auth_json "$XDG_RUNTIME_DIR/containers/auth.json" "$BASIC_HOST" reader readerpass
  assert_ok ohbox pull --cert-dir "$BASIC_CERTDIR" "$BB"
  assert_match "$out" "^pulled $BB "
}

test_basic_docker_config ()
{
  t_auth_json "$HOME/.docker/config.json" "$BASIC_HOST" reader readerpass
  assert_ok ohbox pull --cert-dir "$BASIC_CERTDIR" "$BB"
  assert_match "$out" "^pulled $BB "
}

test_basic_creds_override_authfile ()
{
  t_auth_json "$T_WORK/auth.json" "$BASIC_HOST" testuser wrong
  assert_exit 4 ohbox pull --cert-dir "$BASIC_CERTDIR" --authfile "$T_WORK/auth.json" "$BB"
  assert_ok ohbox pull --cert-dir "$BASIC_CERTDIR" --authfile "$T_WORK/auth.json" --creds testuser:testpass "$BB"
}

test_basic_authfile_precedence ()
{
  # --authfile wins over $REGISTRY_AUTH_FILE
  t_auth_json "$T_WORK/good.json" "$BASIC_HOST" testuser testpass
  t_auth_json "$T_WORK/bad.json" "$BASIC_HOST" testuser wrong
  export REGISTRY_AUTH_FILE=$T_WORK/bad.json
  assert_ok ohbox pull --cert-dir "$BASIC_CERTDIR" --authfile "$T_WORK/good.json" "$BB"
}

# ---- token auth

test_token_anonymous_public ()
{
  : >"$TOKEN_TOKEN_LOG"
  assert_ok ohbox pull --cert-dir "$TOKEN_CERTDIR" "$TOKEN_HOST/public/busybox:latest"
  assert_match "$out" "^pulled $TOKEN_HOST/public/busybox:latest $IMG_BB_MANIFEST linux/amd64\$"
  # one token for the repository's pull scope, reused for manifest, config and layers
  assert_int -eq 1 "$(token_log_count TOKEN)" "token requests"
  assert_int -eq 1 "$(token_log_count TOKEN '.user == null and .status == 200
    and (.scopes | index("repository:public/busybox:pull") != null)')" "anonymous token request for the pull scope"
}

test_token_anonymous_private ()
{
  assert_exit 4 ohbox pull --cert-dir "$TOKEN_CERTDIR" "$TOKEN_HOST/private/busybox:latest"
  assert_contains "$err" "private/busybox" "error message"
  assert_eq "" "$(store_blob_files)" "blobs after a refused pull"
}

test_token_creds ()
{
  : >"$TOKEN_TOKEN_LOG"
  assert_ok ohbox pull --cert-dir "$TOKEN_CERTDIR" --creds reader:readerpass "$TOKEN_HOST/private/busybox:latest"
  assert_match "$out" "^pulled $TOKEN_HOST/private/busybox:latest $IMG_BB_MANIFEST linux/amd64\$"
  assert_int -eq 1 "$(token_log_count TOKEN)" "token requests for a 2-layer image"
  assert_int -eq 1 "$(token_log_count TOKEN '.user == "reader" and .status == 200')" "token request as reader"
  assert_int -eq 0 "$(token_log_count TOKEN '.scopes | map(test("push")) | any')" "token requests asking for push"
}

test_token_authfile ()
{
  : >"$TOKEN_TOKEN_LOG"
  t_auth_json "$T_WORK/auth.json" "$TOKEN_HOST" reader readerpass
  assert_ok ohbox pull --cert-dir "$TOKEN_CERTDIR" --authfile "$T_WORK/auth.json" "$TOKEN_HOST/private/busybox:latest"
  assert_int -eq 1 "$(token_log_count TOKEN '.user == "reader" and .status == 200')" "token request as reader"
}

test_token_wrong_creds ()
{
  assert_exit 4 ohbox pull --cert-dir "$TOKEN_CERTDIR" --creds reader:wrong "$TOKEN_HOST/private/busybox:latest"
  assert_contains "$err" "$TOKEN_HOST" "error message"
  assert_eq "" "$(store_blob_files)" "blobs after a refused pull"
}

test_token_multiarch ()
{
  : >"$TOKEN_TOKEN_LOG"
  assert_ok ohbox pull -q --cert-dir "$TOKEN_CERTDIR" --creds reader:readerpass "$TOKEN_HOST/private/multi:latest"
  assert_eq "$IMG_MULTI_AMD64" "$out" "image id"
  # index, manifest, config and two layers: still one token
  assert_int -eq 1 "$(token_log_count TOKEN)" "token requests"
}

test_token_second_pull ()
{
  assert_ok ohbox pull --cert-dir "$TOKEN_CERTDIR" --creds reader:readerpass "$TOKEN_HOST/private/busybox:latest"
  : >"$TOKEN_TOKEN_LOG"
  # another repository, other scope: a new token
  assert_ok ohbox pull --cert-dir "$TOKEN_CERTDIR" --creds reader:readerpass "$TOKEN_HOST/public/busybox:latest"
  assert_match "$out" "already present" "layers shared with the first pull"
  assert_int -eq 1 "$(token_log_count TOKEN '.scopes | index("repository:public/busybox:pull") != null')" \
    "token request for the second repository"
}

# ---- login / logout

test_login_logout ()
{
  local f=$T_WORK/auth.json
  assert_ok ohbox login -u testuser -p testpass --authfile "$f" --cert-dir "$BASIC_CERTDIR" "$BASIC_HOST"
  assert_file_exists "$f"
  assert_jq "$(cat "$f")" ".auths[\"$BASIC_HOST\"].auth == \"$(printf testuser:testpass | base64 -w0)\"" "auth.json"
  assert_eq 600 "$(stat -c %a "$f")" "mode of auth.json (it holds a password)"
  # the stored credentials are used
  assert_ok ohbox pull --cert-dir "$BASIC_CERTDIR" --authfile "$f" "$BB"
  assert_ok ohbox logout --authfile "$f" "$BASIC_HOST"
  assert_jq "$(cat "$f")" ".auths[\"$BASIC_HOST\"] == null" "auth.json after logout"
  assert_exit 3 ohbox logout --authfile "$f" "$BASIC_HOST"
  assert_contains "$err" "not logged in" "second logout"
}

test_login_wrong ()
{
  local f=$T_WORK/auth.json
  assert_exit 4 ohbox login -u testuser -p wrong --authfile "$f" --cert-dir "$BASIC_CERTDIR" "$BASIC_HOST"
  assert_file_absent "$f" "auth.json after a refused login"
  # an existing file is left as it was
  t_auth_json "$f" "example.invalid:5000" someone secret
  local before
  before=$(cat "$f")
  assert_exit 4 ohbox login -u testuser -p wrong --authfile "$f" --cert-dir "$BASIC_CERTDIR" "$BASIC_HOST"
  assert_eq "$before" "$(cat "$f")" "auth.json after a refused login"
}

test_login_keeps_other_entries ()
{
  local f=$T_WORK/auth.json
  t_auth_json "$f" "example.invalid:5000" someone secret
  assert_ok ohbox login -u reader -p readerpass --authfile "$f" --cert-dir "$BASIC_CERTDIR" "$BASIC_HOST"
  assert_jq "$(cat "$f")" ".auths[\"example.invalid:5000\"].auth == \"$(printf someone:secret | base64 -w0)\"
    and .auths[\"$BASIC_HOST\"].auth == \"$(printf reader:readerpass | base64 -w0)\"" "auth.json"
}

test_login_password_stdin ()
{
  local f=$T_WORK/auth.json
  login_stdin ()
  {
    printf '%s\n' "$1" | ohbox login -u testuser --password-stdin --authfile "$f" --cert-dir "$BASIC_CERTDIR" \
      "$BASIC_HOST"
  }
  assert_ok login_stdin testpass
  assert_jq "$(cat "$f")" ".auths[\"$BASIC_HOST\"].auth == \"$(printf testuser:testpass | base64 -w0)\""
}

test_login_default_paths ()
{
  # $REGISTRY_AUTH_FILE when set...
  export REGISTRY_AUTH_FILE=$T_WORK/env.json
  assert_ok ohbox login -u testuser -p testpass --cert-dir "$BASIC_CERTDIR" "$BASIC_HOST"
  assert_jq "$(cat "$REGISTRY_AUTH_FILE")" ".auths[\"$BASIC_HOST\"].auth != null" "\$REGISTRY_AUTH_FILE"
  # ...else $XDG_RUNTIME_DIR/containers/auth.json
  unset REGISTRY_AUTH_FILE
  assert_ok ohbox login -u reader -p readerpass --cert-dir "$BASIC_CERTDIR" "$BASIC_HOST"
  assert_jq "$(cat "$XDG_RUNTIME_DIR/containers/auth.json")" \
    ".auths[\"$BASIC_HOST\"].auth == \"$(printf reader:readerpass | base64 -w0)\"" "XDG_RUNTIME_DIR auth.json"
  # and pull finds it there
  assert_ok ohbox pull --cert-dir "$BASIC_CERTDIR" "$BB"
  assert_ok ohbox logout "$BASIC_HOST"
  assert_jq "$(cat "$XDG_RUNTIME_DIR/containers/auth.json")" ".auths[\"$BASIC_HOST\"] == null" "after logout"
  # the tag is resolved at the registry again: refused without credentials
  assert_exit 4 ohbox pull --cert-dir "$BASIC_CERTDIR" "$BB"
}

test_login_token_registry ()
{
  local f=$T_WORK/auth.json
  assert_ok ohbox login -u reader -p readerpass --authfile "$f" --cert-dir "$TOKEN_CERTDIR" "$TOKEN_HOST"
  assert_jq "$(cat "$f")" ".auths[\"$TOKEN_HOST\"].auth == \"$(printf reader:readerpass | base64 -w0)\""
  assert_ok ohbox pull --authfile "$f" --cert-dir "$TOKEN_CERTDIR" "$TOKEN_HOST/private/busybox:latest"
  assert_exit 4 ohbox login -u reader -p wrong --authfile "$T_WORK/other.json" --cert-dir "$TOKEN_CERTDIR" "$TOKEN_HOST"
  assert_file_absent "$T_WORK/other.json"
}

test_login_tls_errors ()
{
  # login verifies TLS like pull does
  assert_exit 5 ohbox login -u testuser -p testpass --authfile "$T_WORK/auth.json" "$BASIC_HOST"
  assert_file_absent "$T_WORK/auth.json"
}

run_test basic_no_credentials test_basic_no_credentials
run_test basic_creds test_basic_creds
run_test basic_wrong_creds test_basic_wrong_creds
run_test basic_authfile test_basic_authfile
run_test basic_authfile_other_host test_basic_authfile_other_host
run_test basic_registry_auth_file test_basic_registry_auth_file
run_test basic_xdg_runtime_auth test_basic_xdg_runtime_auth
run_test basic_docker_config test_basic_docker_config
run_test basic_creds_override_authfile test_basic_creds_override_authfile
run_test basic_authfile_precedence test_basic_authfile_precedence
run_test token_anonymous_public test_token_anonymous_public
run_test token_anonymous_private test_token_anonymous_private
run_test token_creds test_token_creds
run_test token_authfile test_token_authfile
run_test token_wrong_creds test_token_wrong_creds
run_test token_multiarch test_token_multiarch
run_test token_second_pull test_token_second_pull
run_test login_logout test_login_logout
run_test login_wrong test_login_wrong
run_test login_keeps_other_entries test_login_keeps_other_entries
run_test login_password_stdin test_login_password_stdin
run_test login_default_paths test_login_default_paths
run_test login_token_registry test_login_token_registry
run_test login_tls_errors test_login_tls_errors
