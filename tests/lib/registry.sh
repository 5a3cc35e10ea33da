# tests/lib/registry.sh: real registries on 127.0.0.1 for the tests
# (Debian's docker-registry, CNCF distribution 2.8). Source after common.sh.
#
#   reg_start MODE [PREFIX]   starts a registry on a free port; MODE is
#       http        plain HTTP
#       tls         HTTPS with a server certificate from the test CA
#       basic       HTTPS + htpasswd Basic auth
#       token       HTTPS + token auth (tests/lib/token_server.py)
#       http-basic, http-token   the same over plain HTTP
#     and sets, for PREFIX (default REG):
#       PREFIX_MODE PREFIX_PORT PREFIX_HOST (127.0.0.1:PORT) PREFIX_URL
#       PREFIX_CA (CA file, empty for http) PREFIX_CERTDIR (a dir holding ca.crt,
#       for --cert-dir / skopeo --dest-cert-dir; empty for http)
#       PREFIX_USER PREFIX_PASS (an account with pull and push; empty when no auth)
#       PREFIX_DIR PREFIX_LOG PREFIX_PID
#     token mode also: PREFIX_REALM (https in token mode, with the same
#       certificate as the registry; http in http-token mode) PREFIX_SERVICE
#       PREFIX_TOKEN_PORT PREFIX_TOKEN_LOG (one JSON line per token request) and the accounts
#       testuser/testpass (pull+push everywhere), reader/readerpass (pull
#       everywhere), and anonymous pull of public/*; basic mode has testuser and reader.
#   reg_pki_init              the test CA and certificates under $T_TMP/pki (once per script):
#       T_CA T_CA_KEY T_CERTDIR T_SERVER_CRT T_SERVER_KEY T_TOKEN_CRT T_TOKEN_KEY
#   reg_other_ca DIR          a second, unrelated CA in DIR/ca.crt (for "wrong CA" tests;
#                             its key is DIR.ca-key.pem)
#   reg_curl PREFIX CURL-ARGS...      curl with the registry's CA
#   reg_auth_header PREFIX SCOPE      prints an Authorization header line for SCOPE
#   reg_manifest_digest PREFIX NAME REF   the digest the registry reports for NAME:REF
#   reg_skopeo_dest_opts PREFIX       sets REG_SKOPEO_OPTS (array) to push there with skopeo
#   token_log_count PREFIX [JQ-FILTER]   number of token requests (matching the filter)

T_REG_ACCEPT='application/vnd.oci.image.manifest.v1+json,application/vnd.oci.image.index.v1+json,application/vnd.docker.distribution.manifest.v2+json,application/vnd.docker.distribution.manifest.list.v2+json'

_t_openssl ()
{
  openssl "$@" 2>/dev/null
}

reg_pki_init ()
{
  local d=$T_TMP/pki
  T_CA=$d/ca.crt T_CA_KEY=$d/ca.key T_CERTDIR=$d/certs.d
  T_SERVER_CRT=$d/server.crt T_SERVER_KEY=$d/server.key
  T_TOKEN_CRT=$d/token.crt T_TOKEN_KEY=$d/token.key
  [ -f "$d/done" ] && return 0
  mkdir -p "$d" "$T_CERTDIR" || return 1
  _t_openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3 -subj "/CN=ohbox test CA" \
    -keyout "$T_CA_KEY" -out "$T_CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" || return 1
  printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >"$d/server.ext"
  _t_openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$T_SERVER_KEY" -out "$d/server.csr" \
    || return 1
  _t_openssl x509 -req -sha256 -days 3 -in "$d/server.csr" -CA "$T_CA" -CAkey "$T_CA_KEY" -set_serial 2 \
    -extfile "$d/server.ext" -out "$T_SERVER_CRT" || return 1
  # The token signing certificate: digitalSignature and no extendedKeyUsage,
  # which is what distribution's token verifier accepts.
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" >"$d/token.ext"
  _t_openssl req -newkey rsa:2048 -nodes -subj "/CN=ohbox test token signer" -keyout "$T_TOKEN_KEY" \
    -out "$d/token.csr" || return 1
  _t_openssl x509 -req -sha256 -days 3 -in "$d/token.csr" -CA "$T_CA" -CAkey "$T_CA_KEY" -set_serial 3 \
    -extfile "$d/token.ext" -out "$T_TOKEN_CRT" || return 1
  cp "$T_CA" "$T_CERTDIR/ca.crt" || return 1
  touch "$d/done"
}

# The key goes next to DIR, not in it: in a certs.d directory a *.key file is
# a client key (containers-certs.d(5)).
reg_other_ca ()
{
  mkdir -p "$1" || return 1
  _t_openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3 -subj "/CN=unrelated CA" \
    -keyout "$1.ca-key.pem" -out "$1/ca.crt" -addext "basicConstraints=critical,CA:TRUE"
}

# _reg_set PREFIX NAME VALUE: PREFIX_NAME=VALUE as a global.
_reg_set ()
{
  printf -v "$1_$2" '%s' "$3"
}

_reg_get ()
{
  local v="$1_$2"
  printf '%s' "${!v-}"
}

_reg_write_acl ()
{
  cat >"$1" <<'EOF'
{"users": {
   "testuser": {"password": "testpass",
                "access": [{"type": "repository", "name": "*", "actions": ["pull", "push"]},
                           {"type": "registry", "name": "catalog", "actions": ["*"]}]},
   "reader":   {"password": "readerpass",
                "access": [{"type": "repository", "name": "*", "actions": ["pull"]}]}},
 "anonymous": [{"type": "repository", "name": "public/*", "actions": ["pull"]}]}
EOF
}

# _reg_start_token PREFIX DIR TLS: starts the token server (HTTPS with the
# test server certificate when TLS is 1), sets PREFIX_TOKEN_* and PREFIX_REALM.
_reg_start_token ()
{
  local p=$1 dir=$2 tls=$3 scheme=http tlsargs=()
  if [ "$tls" = 1 ]; then
    scheme=https
    tlsargs=(--tls-cert "$T_SERVER_CRT" --tls-key "$T_SERVER_KEY")
  fi
  _reg_write_acl "$dir/acl.json" || return 1
  : >"$dir/token.log"
  rm -f "$dir/token.port"
  t_start "$dir/token-server.out" "$T_PY" "$T_LIB/token_server.py" --port 0 --port-file "$dir/token.port" \
    --sign-key "$T_TOKEN_KEY" --sign-cert "$T_TOKEN_CRT" --issuer ohbox-test-issuer \
    --service ohbox-test-registry --acl "$dir/acl.json" --log "$dir/token.log" "${tlsargs[@]}"
  t_wait_port_file "$dir/token.port" "$dir/token-server.out" "token server" || return 1
  local port
  port=$(cat "$dir/token.port")
  _reg_set "$p" TOKEN_PORT "$port"
  _reg_set "$p" TOKEN_PID "$T_PID"
  _reg_set "$p" TOKEN_LOG "$dir/token.log"
  _reg_set "$p" REALM "$scheme://127.0.0.1:$port/token"
  _reg_set "$p" SERVICE ohbox-test-registry
}

_reg_write_config ()
{
  local cfg=$1 dir=$2 port=$3 tls=$4 auth=$5 p=$6
  {
    echo "version: 0.1"
    echo "log: {level: info, accesslog: {disabled: true}}"
    echo "storage:"
    echo "  filesystem: {rootdirectory: \"$dir/data\"}"
    echo "  delete: {enabled: true}"
    echo "  maintenance: {uploadpurging: {enabled: false}}"
    echo "http:"
    echo "  addr: 127.0.0.1:$port"
    echo "  secret: ohbox-test-secret"
    if [ "$tls" = 1 ]; then
      echo "  tls: {certificate: \"$T_SERVER_CRT\", key: \"$T_SERVER_KEY\"}"
    fi
    case $auth in
      basic)
        echo "auth:"
        echo "  htpasswd: {realm: ohbox-test, path: \"$dir/htpasswd\"}"
        ;;
      token)
        echo "auth:"
        echo "  token:"
        echo "    realm: \"$(_reg_get "$p" REALM)\""
        echo "    service: ohbox-test-registry"
        echo "    issuer: ohbox-test-issuer"
        echo "    rootcertbundle: \"$T_CA\""
        ;;
    esac
  } >"$cfg"
}

reg_start ()
{
  local mode=$1 p=${2:-REG}
  local tls=0 auth=none
  case $p in
    T|IMG|OHBOX|[!A-Za-z]*|*[!A-Za-z0-9_]*)
      echo "reg_start: prefix \`$p\` would clash with the harness's variables (T_*, IMG_*, OHBOX_*)" >&2
      return 2
      ;;
  esac
  case $mode in
    http) ;;
    tls) tls=1 ;;
    basic) tls=1 auth=basic ;;
    token) tls=1 auth=token ;;
    http-basic) auth=basic ;;
    http-token) auth=token ;;
    *)
      echo "reg_start: unknown mode \`$mode\`" >&2
      return 2
      ;;
  esac
  command -v docker-registry >/dev/null || {
    echo "docker-registry is not installed (contrib/install-deps.sh)" >&2
    return 1
  }
  local dir
  dir=$(mktemp -d "$T_WORK/registry-$p.XXXX") || return 1
  mkdir -p "$dir/data"
  if [ $tls = 1 ] || [ $auth = token ]; then
    reg_pki_init || return 1
  fi
  _reg_set "$p" MODE "$mode"
  _reg_set "$p" DIR "$dir"
  _reg_set "$p" USER ""
  _reg_set "$p" PASS ""
  _reg_set "$p" CA ""
  _reg_set "$p" CERTDIR ""
  if [ $tls = 1 ]; then
    _reg_set "$p" CA "$T_CA"
    _reg_set "$p" CERTDIR "$T_CERTDIR"
  fi
  case $auth in
    basic)
      { htpasswd -Bbn testuser testpass && htpasswd -Bbn reader readerpass; } >"$dir/htpasswd" || return 1
      _reg_set "$p" USER testuser
      _reg_set "$p" PASS testpass
      ;;
    token)
      _reg_start_token "$p" "$dir" "$tls" || return 1
      _reg_set "$p" USER testuser
      _reg_set "$p" PASS testpass
      ;;
  esac
  local scheme=http
  [ $tls = 1 ] && scheme=https
  local attempt port code i
  for attempt in 1 2 3 4 5; do
    port=$(t_free_port) || return 1
    _reg_write_config "$dir/config.yml" "$dir" "$port" "$tls" "$auth" "$p" || return 1
    t_start "$dir/registry.log" docker-registry serve "$dir/config.yml"
    # Poll GET /v2/ until it answers (200, or 401 with auth): ready in < 1 s,
    # given up after 5 s.
    code=000
    for i in $(seq 100); do
      kill -0 "$T_PID" 2>/dev/null || break
      code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 ${T_CA:+--cacert "$T_CA"} \
        "$scheme://127.0.0.1:$port/v2/" 2>/dev/null) || true
      case $code in 200|401) break ;; esac
      sleep 0.05
    done
    case $code in 200|401) break ;; esac
    kill "$T_PID" 2>/dev/null
    if grep -q 'address already in use' "$dir/registry.log"; then
      continue # lost the race for the port: try another one
    fi
    echo "docker-registry did not answer GET /v2/ on $scheme://127.0.0.1:$port (last status $code):" >&2
    tail -n 20 "$dir/registry.log" >&2
    return 1
  done
  case $code in 200|401) ;; *) echo "docker-registry: no free port found" >&2; return 1 ;; esac
  _reg_set "$p" PID "$T_PID"
  _reg_set "$p" LOG "$dir/registry.log"
  _reg_set "$p" PORT "$port"
  _reg_set "$p" HOST "127.0.0.1:$port"
  _reg_set "$p" URL "$scheme://127.0.0.1:$port"
  echo "registry $p ($mode) at $scheme://127.0.0.1:$port" >&9
}

# reg_curl PREFIX CURL-ARGS...: curl -sS with the registry's CA (URL paths are
# given in full by the caller, e.g. "$REG_URL/v2/").
reg_curl ()
{
  local p=$1 ca
  shift
  ca=$(_reg_get "$p" CA)
  curl -sS --max-time 20 ${ca:+--cacert "$ca"} "$@"
}

# reg_auth_header PREFIX SCOPE: prints "Authorization: ..." for the registry's
# pull+push account (Basic, or a Bearer token for SCOPE), nothing without auth.
# Note: in token mode this adds a line to PREFIX_TOKEN_LOG.
reg_auth_header ()
{
  local p=$1 scope=$2 mode user pass tok
  mode=$(_reg_get "$p" MODE)
  user=$(_reg_get "$p" USER)
  pass=$(_reg_get "$p" PASS)
  case $mode in
    basic|http-basic)
      printf 'Authorization: Basic %s' "$(printf '%s:%s' "$user" "$pass" | base64 -w0)"
      ;;
    token|http-token)
      tok=$(reg_curl "$p" -u "$user:$pass" -G "$(_reg_get "$p" REALM)" \
        --data-urlencode "service=$(_reg_get "$p" SERVICE)" --data-urlencode "scope=$scope" |
        jq -er .token) || return 1
      printf 'Authorization: Bearer %s' "$tok"
      ;;
  esac
}

# reg_manifest_digest PREFIX NAME REF: the Docker-Content-Digest of NAME:REF.
reg_manifest_digest ()
{
  local p=$1 name=$2 ref=$3 hdr
  hdr=$(reg_auth_header "$p" "repository:$name:pull") || return 1
  reg_curl "$p" -f -I -H "Accept: $T_REG_ACCEPT" ${hdr:+-H "$hdr"} \
    "$(_reg_get "$p" URL)/v2/$name/manifests/$ref" | tr -d '\r' |
    sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: *//p' | grep .
}

# reg_skopeo_dest_opts PREFIX: REG_SKOPEO_OPTS=(options for skopeo copy to it).
reg_skopeo_dest_opts ()
{
  local p=$1 user
  REG_SKOPEO_OPTS=()
  case $(_reg_get "$p" MODE) in
    http|http-*) REG_SKOPEO_OPTS+=(--dest-tls-verify=false) ;;
    *) REG_SKOPEO_OPTS+=(--dest-cert-dir "$(_reg_get "$p" CERTDIR)") ;;
  esac
  user=$(_reg_get "$p" USER)
  if [ -n "$user" ]; then
    REG_SKOPEO_OPTS+=(--dest-creds "$user:$(_reg_get "$p" PASS)")
  fi
}

# reg_skopeo_src_opts PREFIX: REG_SKOPEO_OPTS=(options to read from it with
# skopeo inspect, which uses the same option names without "src-").
reg_skopeo_src_opts ()
{
  local p=$1 user
  REG_SKOPEO_OPTS=()
  case $(_reg_get "$p" MODE) in
    http|http-*) REG_SKOPEO_OPTS+=(--tls-verify=false) ;;
    *) REG_SKOPEO_OPTS+=(--cert-dir "$(_reg_get "$p" CERTDIR)") ;;
  esac
  user=$(_reg_get "$p" USER)
  if [ -n "$user" ]; then
    REG_SKOPEO_OPTS+=(--creds "$user:$(_reg_get "$p" PASS)")
  fi
}

# token_log_count PREFIX [JQ-FILTER]: how many token requests were logged
# (only those for which FILTER is true, e.g. '.status == 200').
token_log_count ()
{
  local log
  log=$(_reg_get "$1" TOKEN_LOG)
  jq -c "select(${2:-true})" "$log" | wc -l
}

# ---------------------------------------------------------------- fault proxy
#
#   fp_start UPSTREAM-PREFIX [PREFIX] [fault_proxy.py options...]
#       starts tests/lib/fault_proxy.py (plain HTTP) in front of a registry
#       started by reg_start; sets PREFIX_HOST PREFIX_PORT PREFIX_URL
#       PREFIX_LOG (JSON lines) PREFIX_CONTROL (control file) and
#       PREFIX_MODE=http, so reg_* and img_push work through it. PREFIX defaults to FP.
#   fp_set PREFIX JSON      replaces the faults (and restarts their counts), e.g.
#       fp_set FP '{"status_429": 2}'; fp_set FP '{}' clears them
#   fp_count PREFIX [JQ-FILTER]   number of logged requests matching FILTER, e.g.
#       fp_count FP '.method == "GET" and (.path | endswith("'$hex'"))'

fp_start ()
{
  local up=$1 p=${2:-FP} dir ca
  shift
  [ $# -gt 0 ] && shift
  dir=$(mktemp -d "$T_WORK/proxy-$p.XXXX") || return 1
  : >"$dir/requests.log"
  : >"$dir/control.json"
  ca=$(_reg_get "$up" CA)
  t_start "$dir/proxy.out" "$T_PY" "$T_LIB/fault_proxy.py" --upstream "$(_reg_get "$up" URL)" \
    ${ca:+--upstream-ca "$ca"} --port 0 --port-file "$dir/port" --log "$dir/requests.log" \
    --control "$dir/control.json" "$@"
  t_wait_port_file "$dir/port" "$dir/proxy.out" "fault proxy" || return 1
  local port
  port=$(cat "$dir/port")
  _reg_set "$p" MODE http
  _reg_set "$p" USER "$(_reg_get "$up" USER)"
  _reg_set "$p" PASS "$(_reg_get "$up" PASS)"
  _reg_set "$p" CA ""
  _reg_set "$p" CERTDIR ""
  _reg_set "$p" PID "$T_PID"
  _reg_set "$p" PORT "$port"
  _reg_set "$p" HOST "127.0.0.1:$port"
  _reg_set "$p" URL "http://127.0.0.1:$port"
  _reg_set "$p" LOG "$dir/requests.log"
  _reg_set "$p" CONTROL "$dir/control.json"
  echo "fault proxy $p at http://127.0.0.1:$port -> $(_reg_get "$up" URL)" >&9
}

fp_set ()
{
  local control tmp
  control=$(_reg_get "$1" CONTROL)
  tmp=$control.tmp.$$
  printf '%s\n' "$2" >"$tmp" && mv -f "$tmp" "$control"
}

fp_count ()
{
  jq -c "select(${2:-true})" "$(_reg_get "$1" LOG)" | wc -l
}
