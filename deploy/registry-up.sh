#!/usr/bin/env bash
# registry-up.sh - start (creating if needed) a throwaway container image registry
# (Debian's docker-registry = CNCF distribution 2.8, Registry HTTP API v2) for tests
# and local development. Plain HTTP on loopback, no TLS. Idempotent: a second run
# with the same settings reuses the running registry; changed settings restart it
# (stored images are kept).
#
# Environment (all optional):
#   REGISTRY_DIR       state dir: config.yml, data/, htpasswd, log, pid  (default /tmp/aidc-registry)
#   REGISTRY_ADDR      listen address, loopback only                    (default 127.0.0.1:5000)
#   REGISTRY_AUTH      none | htpasswd (HTTP basic auth, bcrypt entries) (default none)
#   REGISTRY_USER      basic-auth user     (only with REGISTRY_AUTH=htpasswd, default aidc)
#   REGISTRY_PASSWORD  basic-auth password (only with REGISTRY_AUTH=htpasswd, default aidc_registry_pw)
#   REGISTRY_BIN       registry binary                                   (default /usr/bin/docker-registry)
#
# Needs the Debian 12 packages of `deploy/install-deps.sh test` (docker-registry,
# curl; apache2-utils for htpasswd with REGISTRY_AUTH=htpasswd).
# Output: KEY='value' lines (shell-sourceable) on stdout and in $REGISTRY_DIR/env:
#   REGISTRY_URL REGISTRY_HOSTPORT REGISTRY_AUTH REGISTRY_USER REGISTRY_PASSWORD REGISTRY_DIR REGISTRY_PID
# Fill it with registry-seed.sh; stop it with registry-down.sh (same REGISTRY_DIR;
# all three next to this script). tests/run.sh starts two for the integration tests
# (anonymous on 127.0.0.1:15500, basic auth on 127.0.0.1:15501); tests shape their
# contents with tests/support/registry-push.sh.
set -euo pipefail

REGISTRY_DIR=${REGISTRY_DIR:-/tmp/aidc-registry}
REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:5000}
REGISTRY_AUTH=${REGISTRY_AUTH:-none}
REGISTRY_USER=${REGISTRY_USER:-aidc}
REGISTRY_PASSWORD=${REGISTRY_PASSWORD:-aidc_registry_pw}
REGISTRY_BIN=${REGISTRY_BIN:-/usr/bin/docker-registry}

die() { echo "registry-up: $*" >&2; exit 1; }
log() { echo "registry-up: $*" >&2; }

[ -x "$REGISTRY_BIN" ] || die "$REGISTRY_BIN not found (deploy/install-deps.sh test)"
command -v curl >/dev/null || die "curl not found (deploy/install-deps.sh test)"
case "$REGISTRY_ADDR" in
    127.*:[0-9]*|localhost:[0-9]*|\[::1\]:[0-9]*) ;;
    *) die "REGISTRY_ADDR must be a loopback host:port, got '$REGISTRY_ADDR'";;
esac
case "$REGISTRY_AUTH" in
    none) REGISTRY_USER=; REGISTRY_PASSWORD= ;;
    htpasswd)
        command -v htpasswd >/dev/null || die "htpasswd not found (deploy/install-deps.sh test)"
        case "$REGISTRY_USER" in ''|*[!A-Za-z0-9._-]*) die "REGISTRY_USER must be [A-Za-z0-9._-]+";; esac
        case "$REGISTRY_PASSWORD" in ''|*[\'\"\\:]*) die "REGISTRY_PASSWORD must be non-empty, without quotes, backslashes or ':'";; esac;;
    *) die "REGISTRY_AUTH must be none or htpasswd, got '$REGISTRY_AUTH'";;
esac
REGISTRY_DIR=$(realpath -m -- "$REGISTRY_DIR")
case "$REGISTRY_DIR" in *[[:space:]\'\"\\]*) die "REGISTRY_DIR must not contain spaces, quotes or backslashes";; esac
REGISTRY_URL="http://$REGISTRY_ADDR"

mkdir -p "$REGISTRY_DIR/data"
chmod 700 "$REGISTRY_DIR"
[ -s "$REGISTRY_DIR/http.secret" ] || head -c 24 /dev/urandom | base64 | tr -d '/+=\n' > "$REGISTRY_DIR/http.secret"

# ---- 1. config.yml (regenerated every run; a change restarts the registry) ----
auth_block=""
if [ "$REGISTRY_AUTH" = htpasswd ]; then
    # bcrypt (-B) is the only hash distribution accepts; regenerate only if the
    # stored password no longer verifies, so the config (and file) stays stable.
    if ! { [ -s "$REGISTRY_DIR/htpasswd" ] &&
           htpasswd -vb "$REGISTRY_DIR/htpasswd" "$REGISTRY_USER" "$REGISTRY_PASSWORD" >/dev/null 2>&1; }; then
        htpasswd -Bbn "$REGISTRY_USER" "$REGISTRY_PASSWORD" > "$REGISTRY_DIR/htpasswd.new" 2>/dev/null
        mv "$REGISTRY_DIR/htpasswd.new" "$REGISTRY_DIR/htpasswd"
    fi
    auth_block="auth:
  htpasswd:
    realm: aidc-registry
    path: $REGISTRY_DIR/htpasswd"
fi
cat > "$REGISTRY_DIR/config.yml.new" <<EOF
# written by registry-up.sh; REGISTRY_AUTH=$REGISTRY_AUTH htpasswd-sum=$( [ "$REGISTRY_AUTH" = htpasswd ] && sha256sum < "$REGISTRY_DIR/htpasswd" | cut -c1-16 || echo -)
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/data
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: $REGISTRY_ADDR
  secret: $(cat "$REGISTRY_DIR/http.secret")
  draintimeout: 2s
  headers:
    X-Content-Type-Options: [nosniff]
$auth_block
EOF

# ---- 2. reuse or stop a registry already started from this dir ---------------
pid=""
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null &&
          tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q -- "serve $REGISTRY_DIR/config.yml"; }
if [ -s "$REGISTRY_DIR/registry.pid" ]; then
    pid=$(cat "$REGISTRY_DIR/registry.pid")
    if alive "$pid"; then
        if cmp -s "$REGISTRY_DIR/config.yml" "$REGISTRY_DIR/config.yml.new"; then
            log "already running (pid $pid)"
        else
            log "settings changed: restarting pid $pid"
            kill "$pid"
            for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
            alive "$pid" && kill -9 "$pid"
            pid=""
        fi
    else
        pid=""
    fi
fi
mv "$REGISTRY_DIR/config.yml.new" "$REGISTRY_DIR/config.yml"

# ---- 3. start --------------------------------------------------------------------
if [ -z "$pid" ]; then
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$REGISTRY_URL/v2/" || true)
    [ "$code" = 000 ] || die "$REGISTRY_ADDR is already in use by another process (GET /v2/ -> $code); pick another REGISTRY_ADDR"
    : > "$REGISTRY_DIR/registry.log"
    # env -i: distribution reads REGISTRY_* variables as config overrides
    # (REGISTRY_AUTH would replace the auth section), so start it without them.
    # setsid: own session, survives the calling shell; stdin closed.
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin setsid "$REGISTRY_BIN" serve "$REGISTRY_DIR/config.yml" \
        >>"$REGISTRY_DIR/registry.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" > "$REGISTRY_DIR/registry.pid"
    log "started pid $pid, log $REGISTRY_DIR/registry.log"
fi

# ---- 4. wait until /v2/ answers (200 without auth, 401 with) -----------------------
want=200; [ "$REGISTRY_AUTH" = htpasswd ] && want=401
for i in $(seq 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$REGISTRY_URL/v2/" || true)
    [ "$code" = "$want" ] && break
    # gone, not alive: until it execs, the new process is still this script's bash,
    # whose command line alive does not recognise
    state=; read -r _ _ state _ 2>/dev/null < "/proc/$pid/stat" || state=Z
    [ "$state" != Z ] || { tail -20 "$REGISTRY_DIR/registry.log" >&2; die "registry exited"; }
    [ "$i" = 100 ] && { tail -20 "$REGISTRY_DIR/registry.log" >&2; die "no answer on $REGISTRY_URL/v2/ (last $code)"; }
    sleep 0.1
done
if [ "$REGISTRY_AUTH" = htpasswd ]; then
    code=$(curl -s -o /dev/null -w '%{http_code}' -u "$REGISTRY_USER:$REGISTRY_PASSWORD" "$REGISTRY_URL/v2/")
    [ "$code" = 200 ] || die "basic auth check failed: GET /v2/ with credentials -> $code"
fi

{
    echo "REGISTRY_URL='$REGISTRY_URL'"
    echo "REGISTRY_HOSTPORT='$REGISTRY_ADDR'"
    echo "REGISTRY_AUTH='$REGISTRY_AUTH'"
    echo "REGISTRY_USER='$REGISTRY_USER'"
    echo "REGISTRY_PASSWORD='$REGISTRY_PASSWORD'"
    echo "REGISTRY_DIR='$REGISTRY_DIR'"
    echo "REGISTRY_PID='$pid'"
} | tee "$REGISTRY_DIR/env"
