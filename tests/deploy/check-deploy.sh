#!/usr/bin/env bash
# check-deploy.sh - checks the shipped deployment files of deploy/ with the real tools:
#
#   settings   every AIDC_* name in deploy/{systemd,nginx,container,k8s} is a setting
#              `aidcd --help` lists (a misspelt variable is silently ignored by aidcd)
#   nginx      `nginx -t` of a whole nginx.conf around deploy/nginx/aidc.conf, with a
#              throwaway certificate; its body limits and upstream keepalive agree
#              with aidcd's defaults; TLS at Mozilla's "intermediate" level or
#              stricter (protocols, cipher list, tickets, session cache, HSTS), then
#              that nginx started: `openssl s_client` gets TLS 1.2 and 1.3, and is
#              refused TLS 1.0, 1.1, a cipher outside the list and a session ticket
#   sessions   deploy/nginx/aidc-sessions.conf (one host name per session) beside
#              aidc.conf: nginx -t, the same TLS checks (static, per server; live for
#              a session's name and aidc.example.org), the proxy settings the relay
#              needs; then live in front of a real aidcd (a throwaway database,
#              AIDC_SESSIONS_URL=https://{id}.apps.example.org) serving a real
#              session (a small web app run by the local executor), with curl
#              --resolve: the single-use link and the app through nginx with Host
#              passed through, a WebSocket upgrade (101, bytes both ways), an answer
#              streamed while the app holds its end, no answer buffered to a file,
#              and names that are no session's (evil.apps.example.org,
#              apps.example.org, another domain) refused by nginx itself. ~10 s
#   systemd    `systemd-analyze verify` of deploy/systemd and deploy/agent units (any
#              complaint about them fails), `systemd-analyze security` exposure
#              limits, the hardening and stop/limit settings aidcd.service must have
#   container  deploy/container/Containerfile, statically (no image is built): the
#              final stage's packages provide every library `ldd aidcd` lists, it
#              installs no compiler, CMake or -dev package, runs as a numeric
#              non-root USER; the build stage copies what CMakeLists.txt builds from
#   k8s        every document of deploy/k8s/aidcd.yaml POSTed with ?dryRun=All to a
#              real kube-apiserver: 200/201 expected; and every field name is in the
#              server's OpenAPI schema (1.20 drops unknown fields silently); the
#              grace period covers the preStop sleep and aidcd's drain
#
# Usage: check-deploy.sh [PART...]            (default: all parts)
# Environment:
#   AIDC_BIN          the aidcd binary (default <source>/build/aidcd)
#   AIDC_SOURCE_DIR   the repository (default: two directories above this script)
#   AIDC_TEST_K8S_URL, AIDC_TEST_K8S_TOKEN, AIDC_TEST_K8S_CA   the API server of the
#                     k8s part (tests/run.sh starts one); without them it is skipped
#   AIDC_TEST_APP_URL, AIDC_TEST_OWNER_URL, AIDC_TEST_SUPERUSER_URL   the PostgreSQL
#                     of the sessions part's live check (tests/run.sh sets them; it
#                     creates and drops a database of its own); without them it is
#                     skipped, as without /usr/bin/python3 or slirp4netns
# Exit status: 0 every part passed; 1 a part failed; 77 none failed but one was
# skipped (a tool missing, no API server, no PostgreSQL). Runs as root or not; writes
# only in a temporary directory (and, for the dry run, creates and deletes one
# namespace; for the sessions part, one database).

# SC2317: the parts are called as "part_$name" and cleanup from a trap;
# SC2015: `A && B || problem` means "a problem unless A and B", as intended
# shellcheck disable=SC2317,SC2015
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${AIDC_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
bin=${AIDC_BIN:-$src/build/aidcd}
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac  # it goes into unit files, which want absolute paths
work=$(mktemp -d "${TMPDIR:-/tmp}/aidc-deploy-check.XXXXXX") || exit 1
k8s_ns_created=

say() { printf 'check-deploy: %s\n' "$*" >&2; }
# problem MSG: the current part fails (it goes on, to report every problem at once)
problem() { say "$part: FAIL: $*"; bad=1; }
have() { command -v "$1" >/dev/null 2>&1; }

cleanup() {
    nginx_down
    sessions_down
    if [ -n "$k8s_ns_created" ]; then
        k8s_call DELETE "/api/v1/namespaces/$k8s_ns_created" -H 'Content-Type: application/json' \
            --data '{"propagationPolicy":"Background"}' >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- what aidcd says about its settings ---------------------------------------------------
help_text=
load_help() {
    [ -n "$help_text" ] && return 0
    [ -x "$bin" ] || return 1
    help_text=$("$bin" --help) || return 1
}
# help_default NAME: the default `aidcd --help` prints for NAME (empty if none)
help_default() {
    awk -v n="$1" '$1 == n { on = 1; next }
                   on && /^ +default: / { sub(/^ +default: /, ""); print; exit }
                   on && /^  AIDC_/ { exit }' <<<"$help_text"
}
# env_value FILE NAME: the value of an active NAME=value line of an env file
env_value() {
    sed -n "s/^$2=[\"']\\{0,1\\}\\([^\"']*\\)[\"']\\{0,1\\}\$/\\1/p" "$1" | tail -1
}

part_settings() {
    load_help || { say "settings: cannot run $bin --help (AIDC_BIN)"; return 77; }
    local known used name
    known=$(sed -n 's/^  \(AIDC_[A-Z0-9_]*\)[[:space:]].*/\1/p' <<<"$help_text" | sort -u)
    [ -n "$known" ] || { problem "no AIDC_* settings in the output of $bin --help"; return; }
    # and the build's options (the Containerfile's cmake sets AIDC_TESTS)
    known+=$'\n'$(sed -n 's/^option(\(AIDC_[A-Z0-9_]*\)[[:space:]].*/\1/p' "$src/CMakeLists.txt")
    # comments too: a name in an example line is copied into real files
    used=$(find "$src/deploy/systemd" "$src/deploy/nginx" "$src/deploy/container" "$src/deploy/k8s" \
                -type f -print0 2>/dev/null | xargs -0 -r grep -ohE 'AIDC_[A-Z0-9_]+' | sort -u)
    for name in $used; do
        grep -qx "$name" <<<"$known" ||
            problem "$name (in $(grep -rlE "$name([^A-Z0-9_]|\$)" "$src/deploy/systemd" "$src/deploy/nginx" \
                "$src/deploy/container" "$src/deploy/k8s" | sed "s|^$src/||" | paste -sd, -))" \
                "is not a setting of $bin (aidcd --help)"
    done
}

# ---- nginx ----------------------------------------------------------------------------------
part_nginx() {
    local conf=$src/deploy/nginx/aidc.conf dir=$work/nginx rc
    nginx_tools nginx || return 77
    [ -f "$conf" ] || { problem "$conf missing"; return; }
    nginx_dir "$dir" || return
    nginx_first=$(nginx_port)
    nginx_place "$dir" "$conf"
    place_check "$dir" aidc.conf
    nginx_conf "$dir" aidc.conf
    nginx_test "$dir"
    rc=$?

    # agree with aidcd: body limits, upstream keepalive shorter than aidcd's idle timeout
    if load_help; then
        local body ingest idle keep
        body=$(help_default AIDC_MAX_BODY_BYTES)
        ingest=$(help_default AIDC_AUDIT_INGEST_MAX_BYTES)
        idle=$(help_default AIDC_HTTP_IDLE_TIMEOUT_SECONDS)
        [ "$(nginx_size "$(server_directive client_max_body_size "$conf")")" = "$body" ] ||
            problem "the server's client_max_body_size is not AIDC_MAX_BODY_BYTES ($body bytes)"
        [ "$(nginx_size "$(sed -n '/location = \/api\/v1\/audit\/commands/,/}/s/^[[:space:]]*client_max_body_size[[:space:]]*\([^;]*\);.*/\1/p' "$conf")")" = "$ingest" ] ||
            problem "client_max_body_size of /api/v1/audit/commands is not AIDC_AUDIT_INGEST_MAX_BYTES ($ingest bytes)"
        keep=$(sed -n '/^upstream /,/^}/s/^[[:space:]]*keepalive_timeout[[:space:]]*\([0-9]*\)s\{0,1\};.*/\1/p' "$conf")
        [ -n "$keep" ] && [ "$keep" -lt "$idle" ] ||
            problem "the upstream's keepalive_timeout (${keep:-none}) must be below AIDC_HTTP_IDLE_TIMEOUT_SECONDS ($idle s)"
    fi
    tls_static "$conf"
    [ "$rc" -eq 0 ] || return
    have timeout || { say "nginx: no timeout(1): the live TLS check is skipped"; return; }
    nginx_up "$dir" "$conf" || return
    tls_live aidc.example.org
    nginx_down
}

# nginx_tools PART: nginx and openssl are here (else says why: the part is skipped)
nginx_tools() {
    have nginx || { say "$1: nginx not installed (deploy/install-deps.sh ops)"; return 1; }
    have openssl || { say "$1: openssl not installed"; return 1; }
}

# nginx_dir DIR: the test's places (nginx_place moves the host's there) and throwaway
# certificates: ssl/ for aidc.example.org, ssl-apps/ a wildcard one for the sessions
nginx_dir() {
    local d=$1
    mkdir -p "$d/ssl" "$d/ssl-apps" "$d/cache" "$d/log" "$d/tmp"
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=aidc.example.org \
        -keyout "$d/ssl/privkey.pem" -out "$d/ssl/fullchain.pem" >/dev/null 2>&1 &&
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj '/CN=*.apps.example.org' \
        -addext 'subjectAltName=DNS:*.apps.example.org' \
        -keyout "$d/ssl-apps/privkey.pem" -out "$d/ssl-apps/fullchain.pem" >/dev/null 2>&1 ||
        { problem "openssl could not make a test certificate"; return 1; }
}

# nginx_port: the first of two ports for the test server's 80 and 443, below the
# ephemeral range (32768-60999): a port there can be the local end of any of the
# suite's client connections at that moment, and nginx's bind then fails
nginx_port() { echo $((20000 + (RANDOM * 32768 + RANDOM) % 6000 * 2)); }

# nginx_place DIR CONF...: each CONF as DIR/<its name>, with its places on a real host
# moved into DIR, its ports 80/443 moved to $nginx_first/$nginx_first+1 (80 and 443 need
# root, and may be taken), an error_log without a level at notice (the checks read
# warnings) and, when $nginx_relay is set, the sessions relay's upstream server
# (10.0.0.11:8081) replaced by it
nginx_place() {
    local dir=$1 conf port=$nginx_first
    shift
    for conf in "$@"; do
        sed -e "s#/etc/ssl/aidc/#$dir/ssl/#g" -e "s#/etc/ssl/aidc-apps/#$dir/ssl-apps/#g" \
            -e "s#/var/cache/nginx/#$dir/cache/#g" -e "s#/var/log/nginx/#$dir/log/#g" \
            -E -e "s/^([[:space:]]*listen[[:space:]]+(\[::\]:)?)80([;[:space:]])/\1$port\3/" \
            -e "s/^([[:space:]]*listen[[:space:]]+(\[::\]:)?)443([;[:space:]])/\1$((port + 1))\3/" \
            -e "s/^([[:space:]]*server[[:space:]]+)10\.0\.0\.11:8081([;[:space:]])/\1${nginx_relay:-10.0.0.11:8081}\2/" \
            -e "s/^([[:space:]]*error_log[[:space:]]+[^[:space:];]+);/\1 notice;/" \
            "$conf" >"$dir/${conf##*/}"
    done
}

# place_check DIR NAME: DIR/NAME (placed) listens and writes only where the test moved it
place_check() {
    local f=$1/$2 line port=$nginx_first
    while read -r line; do
        problem "$2 listens where the test does not move it (teach it, above): $line"
    done < <(grep -nE '^[[:space:]]*listen[[:space:]]' "$f" | grep -vE ":?($port|$((port + 1)))[;[:space:]]")
    # a path this test does not move would be created or opened on the host itself
    while read -r line; do
        problem "$2 names a path the test does not know (teach it, above): $line"
    done < <(grep -nE '^[[:space:]]*(ssl_certificate|ssl_certificate_key|ssl_trusted_certificate|ssl_dhparam|ssl_password_file|ssl_crl|proxy_cache_path|proxy_temp_path|client_body_temp_path|access_log|error_log|root|alias|include|pid)[[:space:]]+/' \
                 "$f" | grep -v -- "$1/")
}

# nginx_conf DIR NAME...: DIR/nginx.conf, an http {} block that includes DIR/NAME... in
# that order (as Debian's includes conf.d/*.conf: alphabetical)
nginx_conf() {
    local dir=$1 name
    shift
    {
        cat <<EOF
# what an nginx.conf around deploy/nginx/$*; every path in $dir
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/log/error.log notice;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
EOF
        for name in "$@"; do echo "    include $dir/$name;"; done
        echo "}"
    } >"$dir/nginx.conf"
}

# nginx_test DIR: nginx -t of DIR/nginx.conf; every warning is a problem too; its status
nginx_test() {
    local dir=$1 out rc line
    out=$(nginx -e "$dir/log/error.log" -p "$dir/" -c "$dir/nginx.conf" -t 2>&1)
    rc=$?
    # warnings are mistakes too (a duplicate, an ignored directive, a redefined listen)
    while read -r line; do
        problem "$line"
    done < <(grep -E '\[(warn|alert|emerg|crit)\]' <<<"$out")
    [ "$rc" -eq 0 ] || problem "nginx -t failed (exit $rc)$(grep -qE '\[(alert|emerg|crit)\]' <<<"$out" || printf ': %s' "$out")"
    return "$rc"
}

# nginx_up DIR CONF...: nginx started on DIR/nginx.conf, CONF... placed on $nginx_first
# (a new pair of ports when another process took one meanwhile); sets nginx_pid.
# Status 1 (the problem reported) when it did not come up.
nginx_pid=
nginx_up() {
    local dir=$1 i try up
    for ((try = 1; ; try++)); do
        nginx_place "$@"
        : >"$dir/log/error.log"
        nginx -e "$dir/log/error.log" -p "$dir/" -c "$dir/nginx.conf" -g 'daemon off;' \
            >"$dir/log/stdout.log" 2>&1 &
        nginx_pid=$!
        up=0
        # nginx starts its workers once every listen socket is bound (logged at notice):
        # a connect would also reach whoever else holds the port. 30 s: the suite keeps
        # both cores busy while this runs
        for ((i = 0; i < 600; i++)); do
            grep -q 'start worker process' "$dir/log/error.log" && { up=1; break; }
            kill -0 "$nginx_pid" 2>/dev/null || break
            sleep 0.05 # polling a log: there is nothing to block on
        done
        [ "$up" -eq 1 ] && return 0
        nginx_down
        if [ "$try" -lt 5 ] && grep -q 'Address already in use' "$dir/log/error.log" "$dir/log/stdout.log"; then
            nginx_first=$(nginx_port)
            continue
        fi
        problem "nginx did not come up on 127.0.0.1:$nginx_first,$((nginx_first + 1)) (30 s at most): $(cat "$dir/log/error.log" "$dir/log/stdout.log" | tail -5 | tr '\n' ' ')"
        return 1
    done
}
nginx_down() {
    [ -n "${nginx_pid:-}" ] || return 0
    kill "$nginx_pid" 2>/dev/null
    wait "$nginx_pid" 2>/dev/null
    nginx_pid=
}

# Mozilla's "intermediate" TLS profile (ssl-config.mozilla.org, guidelines 5.7), the
# floor for deploy/nginx/aidc.conf: docs/secrets.md. Stricter is fine (a subset of these
# ciphers, no DHE); anything outside them or an older protocol fails the check.
mozilla_intermediate_ciphers=ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305

# tls_static CONF: the TLS directives of the file itself
tls_static() {
    local conf=$1 live v srv n=0 name
    # the directives in force: comments stripped
    live=$(sed -e 's/#.*//' "$conf")
    while read -r v; do
        problem "an old protocol is enabled: $v"
    done < <(grep -nE '(SSLv2|SSLv3|TLSv1(\.[01])?)([;[:space:]]|$)' <<<"$live")
    # Every server that speaks TLS has the whole profile of its own: the default server
    # of a port sets how each handshake there begins (nginx 1.22: the protocol versions,
    # tickets, the session cache), and which server is the default depends on the order
    # of the files
    local -a servers
    mapfile -t -d '' servers < <(awk '/^server[[:space:]]*\{/ { on = 1; buf = "" }
        on { buf = buf $0 "\n" } on && /^\}/ { printf "%s%c", buf, 0; on = 0 }' <<<"$live")
    for srv in "${servers[@]}"; do
        grep -qE '^[[:space:]]*listen[[:space:]][^;]*[[:space:]]ssl([[:space:];]|$)' <<<"$srv" || continue
        n=$((n + 1))
        name=$(sed -n 's/^[[:space:]]*server_name[[:space:]]*\([^;[:space:]]*\).*/\1/p' <<<"$srv" | head -1)
        tls_server "$srv" "the TLS server ${name:-?}"
    done
    [ "$n" -gt 0 ] || problem "no server listens with ssl"
    # HSTS of two years, in the server and in every location that has add_header of
    # its own (such a location inherits none of the server's)
    while read -r v; do
        problem "$v"
    done < <(awk '
        /^[[:space:]]*location[[:space:]]/ { inloc = 1; hdr = 0; hsts = 0; name = $0 }
        inloc && /add_header/ { hdr = 1 }
        /add_header[[:space:]]+Strict-Transport-Security[[:space:]]+"max-age=63072000"[[:space:]]+always;/ {
            if (inloc) hsts = 1; else server_hsts = 1
        }
        inloc && /^[[:space:]]*}/ { if (hdr && !hsts) print "location without HSTS:" name; inloc = 0 }
        END { if (!server_hsts) print "no Strict-Transport-Security max-age=63072000 always in the server" }
    ' <<<"$live")
    grep -qE '^[[:space:]]*listen[[:space:]]+443[[:space:]]+ssl' <<<"$live" ||
        problem "the HTTPS server does not listen on 443 with ssl"
}

# tls_server TEXT WHAT: one server block (TEXT, WHAT names it) sets the whole profile
tls_server() {
    local srv=$1 what=$2 v c n
    grep -qE '^[[:space:]]*ssl_protocols[[:space:]]+TLSv1\.2[[:space:]]+TLSv1\.3;' <<<"$srv" ||
        problem "$what: ssl_protocols must be exactly TLSv1.2 TLSv1.3"
    n=$(grep -cE '^[[:space:]]*ssl_ciphers[[:space:]]' <<<"$srv")
    [ "$n" -eq 1 ] || problem "$what: ssl_ciphers must be set once (found $n)"
    v=$(sed -n 's/^[[:space:]]*ssl_ciphers[[:space:]]*\([^;]*\);.*/\1/p' <<<"$srv" | head -1)
    v=${v//[\"\']/}
    [ -n "$v" ] || problem "$what: ssl_ciphers has no list"
    local IFS=:
    for c in $v; do
        grep -qx -- "$c" <<<"${mozilla_intermediate_ciphers//:/$'\n'}" ||
            problem "$what: ssl_ciphers: $c is not in Mozilla's intermediate list"
    done
    unset IFS
    for v in 'ssl_prefer_server_ciphers off' 'ssl_session_tickets off' 'ssl_session_timeout 1d'; do
        grep -qE "^[[:space:]]*${v// /[[:space:]]+};" <<<"$srv" || problem "$what: no \"$v;\""
    done
    grep -qE '^[[:space:]]*ssl_session_cache[[:space:]]+shared:[A-Za-z_]+:[0-9]+m;' <<<"$srv" ||
        problem "$what: no shared ssl_session_cache"
    grep -qE '^[[:space:]]*ssl_ecdh_curve[[:space:]]+X25519:prime256v1:secp384r1;' <<<"$srv" ||
        problem "$what: ssl_ecdh_curve must be X25519:prime256v1:secp384r1"
}

# tls_live NAME: the nginx of nginx_up answers TLS 1.2 and 1.3 for the server name
# NAME (SNI) on $nginx_first+1 and refuses TLS 1.1 and 1.0 and a cipher outside the list,
# and issues no session ticket. The client is allowed everything (@SECLEVEL=0): the
# refusal must be the server's.
tls_live() {
    local name=$1 port=$((nginx_first + 1)) v
    # hello ARGS...: handshake with the client options ARGS; $cipher is the cipher agreed
    # on ("(NONE)" or empty: refused), $out the whole session's text
    local out cipher
    hello() {
        out=$(timeout 10 openssl s_client -connect "127.0.0.1:$port" -servername "$name" \
              "$@" </dev/null 2>&1)
        cipher=$(sed -n 's/^New, [^,]*, Cipher is \(.*\)$/\1/p' <<<"$out" | head -1)
    }
    for v in -tls1_2 -tls1_3; do
        hello "$v"
        [ -n "$cipher" ] && [ "$cipher" != "(NONE)" ] ||
            problem "nginx refused a $v handshake for $name: $(grep -m1 -iE 'alert|error' <<<"$out")"
    done
    for v in -tls1_1 -tls1; do
        hello "$v" -cipher 'DEFAULT:@SECLEVEL=0'
        [ "$cipher" = "(NONE)" ] || [ -z "$cipher" ] || problem "nginx accepted a $v handshake for $name ($cipher)"
    done
    hello -tls1_2 -cipher 'AES128-SHA:ECDHE-RSA-AES128-SHA:@SECLEVEL=0'
    [ "$cipher" = "(NONE)" ] || [ -z "$cipher" ] ||
        problem "nginx accepted $cipher for $name (not in Mozilla's intermediate list)"
    hello -tls1_2
    ! grep -q 'TLS session ticket:' <<<"$out" || problem "nginx issued a TLS session ticket for $name"
    say "$part: live TLS check of $name on 127.0.0.1:$port ran (TLS 1.2 and 1.3 must pass; 1.0, 1.1, AES128-SHA, tickets must not)"
}
# server_directive NAME FILE: NAME's value at the top of a server block (4 spaces in)
server_directive() { sed -n "s/^    $1[[:space:]]*\\([^;]*\\);.*/\\1/p" "$2" | head -1; }
# nginx_size 1m|5m|64k|123 -> bytes
nginx_size() {
    case $1 in
        *[mM]) echo $((${1%?} * 1048576)) ;;
        *[kK]) echo $((${1%?} * 1024)) ;;
        [0-9]*) echo "$1" ;;
        *) echo "" ;;
    esac
}

# ---- nginx for the sessions: one host name per session ----------------------------------------
# aidc-sessions.conf beside aidc.conf (in conf.d's order) through nginx -t and the TLS
# checks, then live in front of a real aidcd serving a real session (a small web app run
# by the local executor): the session's host name reaches the app with Host passed
# through, a WebSocket upgrade gets its 101 and bytes both ways, an answer streams (its
# first part arrives while the app still holds the rest), and names that are no
# session's are refused by nginx itself.
sess_host=
part_sessions() {
    local conf=$src/deploy/nginx/aidc-sessions.conf portal=$src/deploy/nginx/aidc.conf
    local dir=$work/sessions rc v live
    nginx_tools sessions || return 77
    [ -f "$conf" ] || { problem "$conf missing"; return; }
    nginx_dir "$dir" || return
    nginx_first=$(nginx_port)
    nginx_relay=
    nginx_place "$dir" "$conf" "$portal"
    place_check "$dir" aidc-sessions.conf
    nginx_conf "$dir" aidc-sessions.conf aidc.conf
    nginx_test "$dir"
    rc=$?
    tls_static "$conf"
    # what the relay and the apps need of the proxy (the live check below shows it works)
    live=$(sed -n '/^[[:space:]]*location \/ {/,/^    }/p' "$conf" | sed 's/#.*//')
    # shellcheck disable=SC2016 # nginx's variables, literally
    for v in 'proxy_http_version 1.1' 'proxy_set_header Host $host' \
             'proxy_set_header Upgrade $http_upgrade' 'proxy_set_header Connection $aidc_sessions_connection' \
             'proxy_buffering off' 'proxy_request_buffering off'; do
        grep -qE "^[[:space:]]*$(sed -e 's/[$.]/\\&/g' -e 's/ /[[:space:]]+/g' <<<"$v");" <<<"$live" ||
            problem "aidc-sessions.conf: no \"$v;\" in location /"
    done
    if load_help; then
        v=$(help_default AIDC_SESSIONS_MAX_BODY_BYTES)
        [ "$(nginx_size "$(server_directive client_max_body_size "$conf")")" = "$v" ] ||
            problem "aidc-sessions.conf: client_max_body_size is not AIDC_SESSIONS_MAX_BODY_BYTES ($v bytes)"
    fi
    [ "$rc" -eq 0 ] || return
    have timeout || { say "sessions: no timeout(1): the live checks are skipped"; return 77; }

    # ---- live: a real aidcd with one session behind it
    local why
    why=$(sessions_missing) && { say "sessions: the live check is skipped: $why"; return 77; }
    sessions_aidcd "$dir" || return
    sessions_start || return
    sess_host=$sess_id.apps.example.org
    nginx_relay=127.0.0.1:$sess_relay_port
    # nginx starts while the session does
    if nginx_up "$dir" "$conf" "$portal"; then
        # the sessions' TLS profile holds with the refusing server first (the default
        # server of the port), and the portal's server is unaffected by it
        tls_live "$sess_host"
        tls_live aidc.example.org
        sessions_wait_ready && sessions_through_nginx "$dir"
    fi
    sessions_stop
    nginx_down
}

# sessions_missing: why the live check cannot run here (status 1: nothing missing)
sessions_missing() {
    if [ -z "${AIDC_TEST_APP_URL:-}" ] || [ -z "${AIDC_TEST_OWNER_URL:-}" ]; then
        echo "no test PostgreSQL (AIDC_TEST_APP_URL, AIDC_TEST_OWNER_URL; tests/run.sh sets them)"
    elif [ ! -x "$bin" ]; then
        echo "no aidcd at $bin (AIDC_BIN)"
    elif ! have psql || ! have curl; then
        echo "psql and curl are needed"
    elif [ ! -x /usr/bin/python3 ]; then
        echo "no /usr/bin/python3 (the session's app and the WebSocket client)"
    elif ! have slirp4netns; then
        echo "no slirp4netns (the local executor forwards a session's port with it)"
    else
        return 1
    fi
}

# the same URL naming another database (everything after the last '/', query kept)
url_with_db() {
    local url=$1 db=$2 q=
    case "$url" in *\?*) q="?${url#*\?}"; url=${url%%\?*} ;; esac
    echo "${url%/*}/$db$q"
}
sql() { psql -X -q -v ON_ERROR_STOP=1 -At -d "$1" -c "$2"; }

# sessions_aidcd DIR: a throwaway database, migrated; aidcd serving it with the relay
# behind "nginx" (AIDC_SESSIONS_URL https://{id}.apps.example.org); sets sess_port,
# sess_relay_port, sess_pid, sess_db (dropped at exit)
sess_pid='' sess_db='' sess_db_admin='' sess_data=''
sessions_aidcd() {
    local dir=$1 name=aidc_t_deploy_sessions_$$ owner create out i line
    sess_data=$dir/data
    # jobs run as their tenant's uid, and must pass through to their directories
    chmod o+x "$work" "$dir" && mkdir -m 711 "$sess_data" ||
        { problem "cannot make $sess_data"; return 1; }
    owner=$(sql "$AIDC_TEST_OWNER_URL" "SELECT current_user" 2>&1) ||
        { problem "cannot connect as the owner role: $owner"; return 1; }
    if [ -n "${AIDC_TEST_SUPERUSER_URL:-}" ]; then
        sess_db_admin=$AIDC_TEST_SUPERUSER_URL create="CREATE DATABASE $name OWNER \"$owner\""
    else
        sess_db_admin=$AIDC_TEST_OWNER_URL create="CREATE DATABASE $name"
    fi
    out=$(sql "$sess_db_admin" "$create" 2>&1) || { problem "cannot create database $name: $out"; return 1; }
    sess_db=$name
    sess_env=(env -u AIDC_CONFIG_FILE
        AIDC_DATABASE_URL="$(url_with_db "$AIDC_TEST_APP_URL" "$name")"
        AIDC_MIGRATE_DATABASE_URL="$(url_with_db "$AIDC_TEST_OWNER_URL" "$name")"
        AIDC_DATA_DIR="$sess_data" AIDC_JWT_KEY_FILE="$sess_data/jwt.key"
        AIDC_PORTAL_DIR="$src/portal" AIDC_LISTEN=127.0.0.1:0 AIDC_THREADS=2 AIDC_WORKERS=1
        AIDC_SESSIONS_LISTEN=127.0.0.1:0 AIDC_SESSIONS_URL='https://{id}.apps.example.org'
        AIDC_TRUSTED_PROXIES=127.0.0.1/32
        AIDC_SYNC_INTERVAL_MS=100 AIDC_ADMISSION_INTERVAL_MS=200 AIDC_LOG_LEVEL=info)
    "${sess_env[@]}" "$bin" migrate >"$dir/migrate.log" 2>&1 ||
        { problem "aidcd migrate failed: $(tail -3 "$dir/migrate.log")"; return 1; }
    sess_password=deploy-$$-$RANDOM$RANDOM
    "${sess_env[@]}" AIDC_ADMIN_PASSWORD="$sess_password" "$bin" bootstrap --admin deployadmin \
        >"$dir/bootstrap.log" 2>&1 ||
        { problem "aidcd bootstrap failed: $(tail -3 "$dir/bootstrap.log")"; return 1; }
    "${sess_env[@]}" "$bin" serve >"$dir/aidcd.log" 2>&1 &
    sess_pid=$!
    # the "listening" line names the ports aidcd picked; 30 s (the suite keeps the CPUs busy)
    for ((i = 0; i < 600; i++)); do
        line=$(grep -m1 '"msg":"listening"' "$dir/aidcd.log" 2>/dev/null)
        [ -n "$line" ] && break
        kill -0 "$sess_pid" 2>/dev/null || break
        sleep 0.05 # polling a log: there is nothing to block on
    done
    sess_port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' <<<"$line")
    sess_relay_port=$(sed -n 's/.*"sessions_port":\([0-9]*\).*/\1/p' <<<"$line")
    [ -n "$sess_port" ] && [ -n "$sess_relay_port" ] && [ "$sess_relay_port" -gt 0 ] ||
        { problem "aidcd did not start with its sessions relay: $(tail -3 "$dir/aidcd.log")"; return 1; }
}

# api METHOD PATH [BODY]: one API call as $sess_token; the body in $work/api.out, the
# status on stdout
api() {
    curl -sS --max-time 20 -o "$work/api.out" -w '%{http_code}' -X "$1" \
        -H "Authorization: Bearer $sess_token" -H 'Content-Type: application/json' \
        ${3:+--data "$3"} "http://127.0.0.1:$sess_port$2"
}
# api_ok WANT METHOD PATH [BODY]: api, a problem unless it answered WANT
api_ok() {
    local st
    st=$(api "${@:2}")
    [ "$st" = "$1" ] || { problem "$2 $3 answered $st (want $1): $(head -c 300 "$work/api.out")"; return 1; }
}
# login USER PASSWORD: sess_token = the user's JWT
login() {
    sess_token=$(curl -sS --max-time 20 -H 'Content-Type: application/json' \
        -d "{\"username\":\"$1\",\"password\":\"$2\"}" "http://127.0.0.1:$sess_port/api/v1/auth/login" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])' 2>/dev/null)
    [ -n "$sess_token" ] || { problem "$1 cannot log in"; return 1; }
}

# The session's web app: docs/sessions.md's rules (0.0.0.0:$PORT, under its base URL,
# the relay's token); GET ... answers what it was sent, a WebSocket upgrade gets 101 and
# its bytes echoed, GET .../stream sends "first" and holds the rest until a GET of
# .../release (20 s at most), GET .../big sends 32 MiB
sess_app='import base64, hashlib, http.server, os, threading
TOKEN = "token " + os.environ["AIDC_SESSION_TOKEN"]
release = threading.Event()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        if self.headers.get("Upgrade", "").lower() == "websocket":
            acc = base64.b64encode(hashlib.sha1((self.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            self.send_response(101); self.send_header("Upgrade", "websocket"); self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", acc); self.end_headers(); self.wfile.flush()
            while True:
                d = self.rfile.read1(65536)
                if not d: break
                self.wfile.write(d); self.wfile.flush()
            return
        if self.path.endswith("/stream"):
            self.send_response(200); self.send_header("Content-Type", "text/plain"); self.send_header("Transfer-Encoding", "chunked"); self.end_headers()
            self.wfile.write(b"6\r\nfirst\n\r\n"); self.wfile.flush()
            release.wait(20)
            self.wfile.write(b"7\r\nsecond\n\r\n0\r\n\r\n"); self.wfile.flush()
            return
        if self.path.endswith("/big"):
            self.send_response(200); self.send_header("Content-Type", "application/octet-stream"); self.send_header("Content-Length", str(32 << 20)); self.end_headers()
            block = b"x" * 65536
            for _ in range(512): self.wfile.write(block)
            return
        if self.path.endswith("/release"):
            release.set()
        body = ("path=%s forwarded-host=%s token=%s\n" % (self.path, self.headers.get("X-Forwarded-Host"), self.headers.get("Authorization") == TOKEN)).encode()
        self.send_response(200); self.send_header("Content-Type", "text/plain"); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
http.server.ThreadingHTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()'

# sessions_start: a local cluster, a tenant with a member, and the member's web app
# session: sess_id (the member's token stays in sess_token)
sess_id=
sessions_start() {
    local body
    login deployadmin "$sess_password" || return 1
    api_ok 201 POST /api/v1/clusters \
        '{"name":"local","kind":"local","options":{"cpus":8,"memory_gib":16}}' &&
    api_ok 201 POST /api/v1/tenants '{"slug":"lab","name":"Lab"}' &&
    api_ok 201 POST /api/v1/tenants/lab/projects '{"slug":"web","name":"Web"}' &&
    api_ok 201 POST /api/v1/users "{\"username\":\"ann\",\"password\":\"$sess_password\"}" &&
    api_ok 200 PUT /api/v1/tenants/lab/members/ann '{"role":"member"}' &&
    login ann "$sess_password" || return 1
    body=$(python3 -c 'import json,sys; print(json.dumps({"project": "web", "app": "web", "cpus": 1,
        "memory_gib": 1, "command": ["/usr/bin/python3", "-c", sys.argv[1]]}))' "$sess_app")
    api_ok 201 POST /api/v1/tenants/lab/sessions "$body" || return 1
    sess_id=$(json_get id <"$work/api.out")
}
# json_get KEY...: the value at KEY (a path of keys) of the JSON on stdin, "" if none
json_get() {
    python3 -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1:]:
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$@" 2>/dev/null
}

# sessions_wait_ready: the session is ready within 90 s (a problem if not, with why)
sessions_wait_ready() {
    local i state=
    for ((i = 0; i < 450; i++)); do
        [ "$(api GET "/api/v1/tenants/lab/sessions/$sess_id")" = 200 ] &&
            state=$(json_get state <"$work/api.out")
        case $state in
            ready) return 0 ;;
            ended) break ;;
        esac
        sleep 0.2 # the session watcher looks every 2 s: nothing to block on
    done
    local reason job
    reason=$(json_get reason <"$work/api.out") job=$(json_get job id <"$work/api.out")
    api GET "/api/v1/tenants/lab/jobs/$job/logs?stream=stderr" >/dev/null
    problem "the session did not become ready in 90 s (state ${state:-?}, reason ${reason:-none});" \
        "its job's stderr: $(tail -c 300 "$work/api.out"); aidcd's last warnings:" \
        "$(grep -E '"level":"(warn|error)"' "$work/sessions/aidcd.log" | tail -3)"
    return 1
}

# sessions_stop: the session stopped (its job's processes end with it), aidcd stopped
sessions_stop() {
    local i
    if [ -n "$sess_id" ] && [ -n "$sess_pid" ]; then
        api POST "/api/v1/tenants/lab/sessions/$sess_id/stop" >/dev/null
        for ((i = 0; i < 150; i++)); do
            [ "$(api GET "/api/v1/tenants/lab/sessions/$sess_id")" = 200 ] &&
                case $(json_get job state <"$work/api.out") in succeeded | failed | cancelled) break ;; esac
            sleep 0.2 # the dispatcher stops the job: nothing to block on
        done
    fi
    sessions_down
}
# sessions_down: aidcd, what its local executor left running, the database (also at exit)
sessions_down() {
    local p
    if [ -n "${sess_pid:-}" ]; then
        kill -TERM "$sess_pid" 2>/dev/null
        wait "$sess_pid" 2>/dev/null
        sess_pid=
    fi
    # a job's shim ("aidcd local-shim <data dir>/jobs/<id>") ends its job on SIGTERM
    if [ -n "${sess_data:-}" ]; then
        for p in /proc/[0-9]*; do
            { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF "local-shim $sess_data/jobs/" &&
                kill -TERM "${p#/proc/}" 2>/dev/null
        done
    fi
    if [ -n "${sess_db:-}" ]; then
        sql "$sess_db_admin" "DROP DATABASE IF EXISTS $sess_db WITH (FORCE)" >/dev/null 2>&1
        sess_db=
    fi
}

# sessions_through_nginx DIR: the ready session, through nginx only
sessions_through_nginx() {
    local dir=$1 https=$((nginx_first + 1)) http=$nginx_first base link out code cookie name
    base=https://$sess_host:$https/sessions/$sess_id
    # c ARGS...: curl as a browser at https://<session>.apps.example.org: to this nginx
    c() { curl -sS -k --max-time 10 --resolve "$sess_host:$https:127.0.0.1" "$@"; }

    # in through the single-use link, on the session's host name
    api_ok 200 POST "/api/v1/tenants/lab/sessions/$sess_id/open" || return
    link=$(json_get url <"$work/api.out")
    case $link in
        "https://$sess_host/_aidc/open?key="*) ;;
        *) problem "the link of POST .../open is $link, not on https://$sess_host (AIDC_SESSIONS_URL)"; return ;;
    esac
    out=$(c -o /dev/null -c "$dir/jar" -w '%{http_code} %{redirect_url}' "https://$sess_host:$https${link#https://"$sess_host"}" 2>&1)
    [ "$out" = "302 $base/" ] || { problem "the link through nginx answered '$out', not 302 to $base/"; return; }
    cookie=$(awk '$6 == "aidc_app" { print $7 }' "$dir/jar")
    [ -n "$cookie" ] || { problem "no aidc_app cookie from the link through nginx"; return; }

    # the app, with the Host nginx got passed to aidcd (which sends it on as X-Forwarded-Host)
    out=$(c -b "$dir/jar" "$base/hello?x=1" 2>&1)
    [ "$out" = "path=/sessions/$sess_id/hello?x=1 forwarded-host=$sess_host token=True" ] ||
        problem "GET $base/hello through nginx: '$out' (want the app's echo with forwarded-host=$sess_host)"

    # a WebSocket upgrade: 101, then bytes both ways
    out=$(/usr/bin/python3 - "$https" "$sess_host" "$sess_id" "$cookie" <<'PY' 2>&1
import base64, os, socket, ssl, sys
port, host, sid, cookie = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname=host)
s.sendall((f"GET /sessions/{sid}/ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
           f"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
           f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n"
           f"Origin: https://{host}\r\nCookie: aidc_app={cookie}\r\n\r\n").encode())
head = b""
while b"\r\n\r\n" not in head:
    d = s.recv(4096)
    if not d:
        break
    head += d
status = head.split(b"\r\n", 1)[0].decode(errors="replace")
if " 101 " not in status + " ":
    sys.exit(f"upgrade answered: {status}")
rest = head.split(b"\r\n\r\n", 1)[1]
s.sendall(b"ping through nginx")
while len(rest) < 18:
    d = s.recv(4096)
    if not d:
        break
    rest += d
sys.exit(0 if rest == b"ping through nginx" else f"echo: {rest!r}")
PY
    ) || problem "WebSocket through nginx: $out"

    # not buffered: the first part arrives while the app holds back the rest
    c -N -b "$dir/jar" -o "$dir/stream.out" "$base/stream" 2>"$dir/stream.err" &
    local streaming=$! i first=0
    for ((i = 0; i < 100; i++)); do
        grep -q first "$dir/stream.out" 2>/dev/null && { first=1; break; }
        sleep 0.05 # curl writes as it gets: nothing to block on
    done
    if [ "$first" = 0 ]; then
        problem "the first part of a streamed answer did not come through nginx in 5 s while the app held the rest (proxy_buffering?)"
    elif grep -q second "$dir/stream.out"; then
        problem "the app's second part came before it was released (the check is broken)"
    fi
    c -o /dev/null -b "$dir/jar" "$base/release"
    wait "$streaming" || problem "the streamed answer through nginx failed: $(cat "$dir/stream.err")"
    [ "$(cat "$dir/stream.out")" = $'first\nsecond' ] ||
        problem "the streamed answer through nginx was '$(cat "$dir/stream.out")'"

    # nor held in nginx's buffers: a client slower than the app (32 MiB at 32 MB/s; the
    # relay gives hundreds) makes a buffering nginx write what it cannot pass on to a
    # temporary file, which it logs at warn
    out=$(c -b "$dir/jar" --limit-rate 32M -o /dev/null -w '%{http_code} %{size_download}' "$base/big" 2>&1)
    [ "$out" = "200 $((32 << 20))" ] || problem "GET $base/big through nginx: '$out' (want 200 and 32 MiB)"
    ! grep -qs 'buffered to a temporary file' "$dir"/log/*error.log ||
        problem "nginx buffered an answer of the app to a temporary file (proxy_buffering off?)"

    # names that are no session's: nginx refuses the TLS handshake (no answer at all)
    for name in evil.apps.example.org apps.example.org a.b.apps.example.org other.example.net; do
        code=$(curl -sS -k --max-time 10 -o /dev/null -w '%{http_code}' \
               --resolve "$name:$https:127.0.0.1" "https://$name:$https/sessions/$sess_id/hello" 2>/dev/null)
        [ "$code" = 000 ] || problem "https://$name (no session's name) was answered $code through nginx"
    done
    # ... and a request naming one in Host on the session's connection, and on port 80
    code=$(c --http1.1 -o /dev/null -w '%{http_code}' -H 'Host: evil.apps.example.org' \
           -b "$dir/jar" "$base/hello" 2>/dev/null)
    [ "$code" = 000 ] || [ "$code" = 421 ] ||
        problem "Host: evil.apps.example.org over the session's TLS connection was answered $code through nginx"
    code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' \
           --resolve "evil.apps.example.org:$http:127.0.0.1" "http://evil.apps.example.org:$http/" 2>/dev/null)
    [ "$code" = 000 ] || problem "http://evil.apps.example.org was answered $code through nginx"
    # plain HTTP to a session's name: to https, on the same name
    out=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code} %{redirect_url}' \
          --resolve "$sess_host:$http:127.0.0.1" "http://$sess_host:$http/sessions/$sess_id/x?y=1" 2>&1)
    [ "$out" = "301 https://$sess_host/sessions/$sess_id/x?y=1" ] ||
        problem "http://$sess_host/... answered '$out', not 301 to https://$sess_host/..."
    say "sessions: live check through nginx to a real session ran (link, app with Host passed, WebSocket, streaming, no buffering, refused names)"
}

# ---- systemd ------------------------------------------------------------------------------
part_systemd() {
    local dir=$work/systemd agent unit out line usec stop limit env maxc f v
    have systemd-analyze || { say "systemd: systemd-analyze not installed (deploy/install-deps.sh ops)"; return 77; }
    [ -x "$bin" ] || { say "systemd: no aidcd at $bin (AIDC_BIN): ExecStart= cannot be checked"; return 77; }
    agent=$(dirname "$bin")/aidc-agent
    [ -x "$agent" ] || agent=/bin/true
    mkdir -p "$dir/all"
    cp -r "$src"/deploy/systemd/. "$dir/all/" && cp "$src"/deploy/agent/*.service "$dir/all/" ||
        { problem "cannot copy the units"; return; }
    # verify wants ExecStart's program to exist: the one just built
    find "$dir/all" -type f \( -name '*.service' -o -name '*.conf' \) -exec \
        sed -i -e "s#/usr/local/bin/aidcd\\b#$bin#g" -e "s#/usr/local/bin/aidc-agent\\b#$agent#g" {} +
    local units=() ours
    for unit in "$dir"/all/*.service; do units+=("$unit"); done
    # a line about one of them (by path or by unit name) is a complaint about ours
    ours=$(cd "$dir/all" && find . -type f \( -name '*.service' -o -name '*.conf' \) |
           sed -e 's#^\./##' -e 's#.*/##' -e 's/\./\\./g' | paste -sd'|' -)
    # the directory of a unit is on the load path: aidcd.service.d/ is verified with it
    out=$(cd "$dir/all" && systemd-analyze verify "${units[@]}" 2>&1) ||
        problem "systemd-analyze verify failed"
    while read -r line; do
        [ -n "$line" ] || continue
        if grep -qE "$dir/|(^|[^A-Za-z0-9_.-])($ours)([^A-Za-z0-9_.-]|\$)" <<<"$line"; then
            problem "systemd-analyze verify: ${line//$dir\/all\//}"
        else
            say "systemd: note (not about our units): $line"
        fi
    done <<<"$out"

    # systemd's own exposure score (0-100 here; 10 per point it prints): each unit
    # alone, then aidcd.service with the local executor's drop-in
    for unit in "$dir"/all/*.service; do
        mkdir -p "$dir/alone/${unit##*/}" && cp "$unit" "$dir/alone/${unit##*/}/"
        security "$dir/alone/${unit##*/}/${unit##*/}" 20 "${unit##*/}"
    done
    [ -d "$dir/all/aidcd.service.d" ] &&
        security "$dir/all/aidcd.service" 45 "aidcd.service with aidcd.service.d/"

    # what aidcd.service must say (issue 10), checked in the file itself
    f=$src/deploy/systemd/aidcd.service
    for v in NoNewPrivileges=yes ProtectSystem=strict CapabilityBoundingSet= PrivateTmp=yes \
             PrivateDevices=yes SystemCallFilter=@system-service MemoryDenyWriteExecute=yes \
             Restart=on-failure; do
        grep -qx "$v" "$f" || problem "aidcd.service: no $v"
    done
    for v in RestrictAddressFamilies LimitNOFILE TimeoutStopSec ReadWritePaths; do
        grep -qE "^$v=." "$f" || problem "aidcd.service: no $v="
    done
    grep -qE '^(User=[a-z_][a-z0-9_-]*|DynamicUser=yes)$' "$f" ||
        problem "aidcd.service: neither User= (a dedicated user) nor DynamicUser=yes"
    v=$(sed -n 's/^Environment=AIDC_DATA_DIR=//p' "$f")
    [ -n "$v" ] && grep -qE "^ReadWritePaths=(.* )?$v( |\$)" "$f" ||
        problem "aidcd.service: ReadWritePaths= does not name AIDC_DATA_DIR (${v:-not set by the unit})"
    grep -qE '^After=.*aidcd-migrate\.service' "$f" && grep -qE '^Wants=.*aidcd-migrate\.service' "$f" ||
        problem "aidcd.service: not after (and wanting) aidcd-migrate.service"
    grep -qx 'Type=oneshot' "$src/deploy/systemd/aidcd-migrate.service" ||
        problem "aidcd-migrate.service: not Type=oneshot"

    # stop and file limits against aidcd's settings (the example env file's, else defaults)
    if load_help; then
        env=$src/deploy/systemd/aidcd.env
        v=$(env_value "$env" AIDC_SHUTDOWN_TIMEOUT_SECONDS)
        v=${v:-$(help_default AIDC_SHUTDOWN_TIMEOUT_SECONDS)}
        stop=$(sed -n 's/^TimeoutStopSec=//p' "$f" | tail -1)
        usec=$(systemd-analyze timespan "${stop:-0}" 2>/dev/null | sed -n 's/^ *μs: *//p')
        [ -n "$usec" ] && [ "$usec" -gt $((v * 1000000)) ] ||
            problem "aidcd.service: TimeoutStopSec=${stop:-unset} is not above AIDC_SHUTDOWN_TIMEOUT_SECONDS ($v s)"
        maxc=$(env_value "$env" AIDC_MAX_CONNECTIONS)
        maxc=${maxc:-$(help_default AIDC_MAX_CONNECTIONS)}
        limit=$(sed -n 's/^LimitNOFILE=\([0-9]*\).*/\1/p' "$f" | tail -1)
        [ -n "$limit" ] && [ "$limit" -ge $((maxc + 1024)) ] ||
            problem "aidcd.service: LimitNOFILE=${limit:-unset} leaves no room above AIDC_MAX_CONNECTIONS ($maxc + 1024 for the rest)"
    fi
}
# security UNITFILE MAX WHAT: systemd-analyze security's exposure must not exceed MAX
security() {
    local out
    out=$(cd "$(dirname "$1")" && systemd-analyze security --offline=true --threshold="$2" \
          "./${1##*/}" 2>&1)
    local rc=$? level
    level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$out")
    if [ "$rc" -ne 0 ]; then
        problem "$3: exposure ${level:-?} is above $(awk -v t="$2" 'BEGIN { print t / 10 }') (systemd-analyze security)"
        grep -E '^✗' <<<"$out" | head -20 >&2
    fi
}

# ---- container image ------------------------------------------------------------------------
part_container() {
    local cf=$src/deploy/container/Containerfile lines final build_stage pkgs p lib path pkg
    local user uid req s covered
    for p in dpkg dpkg-query ldd awk; do
        have "$p" || { say "container: $p not found (a Debian host is needed)"; return 77; }
    done
    [ -x "$bin" ] || { say "container: no aidcd at $bin (AIDC_BIN)"; return 77; }
    [ -f "$cf" ] || { problem "$cf missing"; return; }
    # logical lines: comments out, continuations joined (as the builders read it)
    lines=$(grep -vE '^[[:space:]]*#' "$cf" |
            awk '{ if (sub(/\\[[:space:]]*$/, "")) { buf = buf $0 " "; next } print buf $0; buf = "" }')
    final=$(awk 'toupper($1) == "FROM" { s = "" } { s = s $0 "\n" } END { printf "%s", s }' <<<"$lines")
    grep -qiE '^FROM[[:space:]]+\S*debian:12-slim' <<<"$final" ||
        problem "the final stage is not debian:12-slim"

    # a numeric, non-root user (Kubernetes' runAsNonRoot can only verify a number)
    user=$(awk 'toupper($1) == "USER" { u = $2 } END { print u }' <<<"$final")
    uid=${user%%:*}
    if ! [[ $uid =~ ^[0-9]+$ ]] || [ "$uid" -eq 0 ] || ! [[ $user =~ ^[0-9]+(:[0-9]+)?$ ]]; then
        problem "the final stage's USER is '${user:-none}': it must be a numeric uid[:gid] other than 0"
    fi
    grep -qE '^ENTRYPOINT.*aidcd' <<<"$final" || problem "the final stage's ENTRYPOINT is not aidcd"

    # its packages, and no build tools among them or run by it
    pkgs=$(apt_installs <<<"$final" | sort -u)
    [ -n "$pkgs" ] || problem "the final stage installs no package (apt-get install)"
    for p in $pkgs; do
        if [[ $p =~ -dev$ || $p =~ ^(gcc|g\+\+|cpp|cc|c\+\+|clang|make|cmake|ninja-build|meson|pkg-config|pkgconf|build-essential|binutils|autoconf|automake|libtool)(-[0-9.]+)?$ ]]; then
            problem "the final stage installs the build tool or header package $p"
        fi
    done
    # the first word of each command of each RUN
    p=$(grep -iE '^RUN' <<<"$final" | sed -E 's/^RUN[[:space:]]+//I' | sed -E 's/&&|\|\||;|\|/\n/g' |
        awk '{ for (i = 1; i <= NF && $i ~ /=/; i++); print $i }' |
        grep -xE '(gcc|g\+\+|cc|c\+\+|clang|make|cmake|ninja|meson|ld|as)(-[0-9.]+)?' | sort -u | paste -sd' ' -)
    [ -z "$p" ] || problem "the final stage runs the build tools: $p"

    # Every library aidcd loads comes from a package the final stage installs, one of
    # their dependencies, or debian:12-slim itself (Debian's minbase: the required
    # and essential packages and apt), by the dependencies this host's dpkg knows.
    local -A closure=()
    local seeds
    mapfile -t seeds <<<"$pkgs"
    while read -r p; do closure[$p]=1; done < <(
        { printf 'SEED\t%s\n' "${seeds[@]}" apt
          dpkg-query -W -f='${Package}\t${Pre-Depends}, ${Depends}\t${Priority}\t${Essential}\n'; } |
        awk -F'\t' '$1 == "SEED" { seed[$2] = 1; next }
            {   # "a (>= 1), b:any | c" -> ",a,b,c" (any alternative counts)
                d = $2; gsub(/\([^)]*\)/, "", d); gsub(/:any|[ ]/, "", d); gsub(/\|/, ",", d)
                deps[$1] = deps[$1] "," d
                if ($3 == "required" || $4 == "yes") seed[$1] = 1 }
            END {
                n = 0; for (p in seed) q[n++] = p
                for (i = 0; i < n; i++) {
                    if (q[i] in got) continue
                    got[q[i]] = 1; m = split(deps[q[i]], a, ",")
                    for (j = 1; j <= m; j++) if (a[j] != "" && !(a[j] in got)) q[n++] = a[j]
                }
                for (p in got) print p }')
    local ldd_out libs
    ldd_out=$(ldd "$bin" 2>&1) || { problem "ldd $bin failed: $ldd_out"; return; }
    grep -q 'not found' <<<"$ldd_out" && problem "$bin has unresolved libraries: $(grep 'not found' <<<"$ldd_out")"
    libs=$(awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' <<<"$ldd_out")
    local -A owner=()
    owners "$(cut -d' ' -f2 <<<"$libs")"
    while read -r lib path; do
        pkg=${owner[$path]:-}
        [ -n "$pkg" ] || { problem "no Debian package owns $path ($lib): the image cannot get it from apt"; continue; }
        [ -n "${closure[$pkg]:-}" ] ||
            problem "$lib ($path) is in package $pkg, which the final stage neither installs nor gets through the packages it installs: add $pkg to its apt-get install"
    done <<<"$libs"
    # libcurl verifies slurmrestd's, the Kubernetes API's and registries' certificates
    grep -qx ca-certificates <<<"$pkgs" || problem "the final stage does not install ca-certificates"

    # the build stage copies every directory CMakeLists.txt builds from
    build_stage=$(grep -iE '^COPY[[:space:]].*--from=' <<<"$final" | sed -n 's/.*--from=\([^[:space:]]*\).*/\1/p' | head -1)
    local stage
    stage=$(awk -v n="$build_stage" 'toupper($1) == "FROM" { on = (tolower($NF) == tolower(n) && toupper($(NF-1)) == "AS") }
                                      on' <<<"$lines")
    [ -n "$stage" ] || { problem "no build stage named '${build_stage:-?}' (COPY --from= of the final stage)"; return; }
    local sources
    sources=$(awk 'toupper($1) == "COPY" { for (i = 2; i < NF; i++) if ($i !~ /^--/) print $i }' <<<"$stage" |
              sed -e 's#^\./##' -e 's#/$##' -e 's#^$#.#')
    for req in CMakeLists.txt $(cmake_inputs); do
        covered=
        for s in $sources; do
            if [ "$s" = . ] || [ "$s" = "$req" ] || [[ $req == "$s"/* ]]; then covered=1; break; fi
        done
        [ -n "$covered" ] || problem "the build stage does not COPY $req, which CMakeLists.txt builds from"
    done
    grep -q -- '-DAIDC_TESTS=OFF' <<<"$stage" ||
        problem "the build stage's cmake does not set -DAIDC_TESTS=OFF (tests/ is not copied)"
}
# apt_installs: the package names of `apt-get install` commands in the RUN lines on stdin
apt_installs() {
    grep -iE '^RUN' | awk '{
        n = split($0, cmd, /&&|\|\||;/)
        for (i = 1; i <= n; i++) {
            m = split(cmd[i], w, /[ \t]+/); apt = 0; inst = 0
            for (j = 1; j <= m; j++) {
                if (w[j] == "apt-get" || w[j] == "apt") apt = 1
                else if (apt && !inst && w[j] == "install") inst = 1
                else if (inst && w[j] != "" && w[j] !~ /^-/) { sub(/=.*/, "", w[j]); print w[j] }
            }
        }
    }'
}
# owners PATHS: owner[PATH]=the Debian package that installed PATH, for each of the
# newline-separated PATHS. dpkg knows a file by the path its package ships, which
# with merged /usr may be the other spelling, or the symlink's target: all of them are
# asked in one dpkg -S (each call reads dpkg's whole file list).
owners() {
    local p q line pkg file
    local -A asked=()
    while read -r p; do
        [ -n "$p" ] || continue
        for q in "$p" "/usr$p" "${p#/usr}" "$(readlink -f "$p")"; do asked[$q]=$p; done
    done <<<"$1"
    while read -r line; do
        pkg=${line%%: *} file=${line#*: }
        pkg=${pkg%%,*} pkg=${pkg%%:*}
        p=${asked[$file]:-}
        [ -n "$p" ] && [ -z "${owner[$p]:-}" ] && owner[$p]=$pkg
    done < <(dpkg -S "${!asked[@]}" 2>/dev/null)
}
# cmake_inputs: the repository directories the top-level CMakeLists.txt reads, without
# tests/ (the image builds with AIDC_TESTS=OFF)
cmake_inputs() {
    # shellcheck disable=SC2016 # the literal text ${CMAKE_SOURCE_DIR}
    grep -vE '^[[:space:]]*#' "$src/CMakeLists.txt" |
        grep -oE '(\$\{CMAKE_SOURCE_DIR\}/)?[A-Za-z_][A-Za-z0-9_.-]*/[][A-Za-z0-9_./*-]*' |
        sed -e 's#^\${CMAKE_SOURCE_DIR}/##' -e 's#/$##' | while read -r p; do
            if [ -d "$src/$p" ]; then echo "$p"
            elif [ -d "$src/$(dirname "$p")" ] && [ "$(dirname "$p")" != . ]; then dirname "$p"
            fi
        done | grep -vE '^tests(/|$)' | sort -u
}

# ---- Kubernetes -----------------------------------------------------------------------------
# k8s_call METHOD PATH [curl args]: the status code; the body in $work/k8s.out
k8s_call() {
    curl -sS -o "$work/k8s.out" -w '%{http_code}' --max-time 30 --cacert "$AIDC_TEST_K8S_CA" \
         -H @"$work/k8s.auth" -H 'Accept: application/json' -X "$1" "${@:3}" "$AIDC_TEST_K8S_URL$2"
}
# k8s_resource APIVERSION KIND: "plural namespaced" from the server's discovery
k8s_resource() {
    local path st
    case $1 in */*) path=/apis/$1 ;; *) path=/api/$1 ;; esac
    st=$(k8s_call GET "$path") || return 1
    [ "$st" = 200 ] || return 1
    jq -r --arg k "$2" '.resources[] | select(.kind == $k and (.name | contains("/") | not))
                        | "\(.name) \(.namespaced)"' "$work/k8s.out" | head -1
}
# top FILE KEY: a top-level scalar of one YAML document; meta FILE KEY: one of metadata's
top() { sed -n "s/^$2:[[:space:]]*[\"']\\{0,1\\}\\([^\"' ]*\\).*/\\1/p" "$1" | head -1; }
meta() {
    awk -v k="$2" '/^metadata:/ { on = 1; next } on && /^[^ #]/ { on = 0 }
                   on && $1 == k ":" { gsub(/["'\'']/, "", $2); print $2; exit }' "$1"
}

part_k8s() {
    local manifest=$src/deploy/k8s/aidcd.yaml dir=$work/k8s doc kind api name ns ns0 res plural namespaced url st n=0
    [ -f "$manifest" ] || { problem "$manifest missing"; return; }
    k8s_static "$manifest"
    if [ -z "${AIDC_TEST_K8S_URL:-}" ] || [ -z "${AIDC_TEST_K8S_TOKEN:-}" ] || [ -z "${AIDC_TEST_K8S_CA:-}" ]; then
        say "k8s: no test API server (AIDC_TEST_K8S_URL, AIDC_TEST_K8S_TOKEN, AIDC_TEST_K8S_CA; tests/run.sh starts one)"
        return 77
    fi
    have curl && have jq || { say "k8s: curl and jq are needed"; return 77; }
    (umask 077 && printf 'Authorization: Bearer %s\n' "$AIDC_TEST_K8S_TOKEN" >"$work/k8s.auth")
    st=$(k8s_call GET /version 2>"$work/curl.err")
    [ "$st" = 200 ] || { problem "the API server $AIDC_TEST_K8S_URL does not answer GET /version ($st $(cat "$work/curl.err"))"; return; }
    mkdir -p "$dir"
    awk -v d="$dir" 'BEGIN { f = sprintf("%s/doc-%02d.yaml", d, n) }
                     /^---[[:space:]]*$/ { n++; f = sprintf("%s/doc-%02d.yaml", d, n); next }
                     { print > f }' "$manifest"
    for doc in "$dir"/doc-*.yaml; do grep -q '^kind:' "$doc" || rm -f "$doc"; done

    # The manifest's namespace becomes one of this run's own (created for real,
    # deleted at exit), so the dry run neither meets nor touches anyone's "aidc".
    ns0=
    for doc in "$dir"/doc-*.yaml; do
        [ "$(top "$doc" kind)" = Namespace ] && { ns0=$(meta "$doc" name); break; }
    done
    [ -n "$ns0" ] || for doc in "$dir"/doc-*.yaml; do
        ns0=$(meta "$doc" namespace); [ -n "$ns0" ] && break
    done
    if [ -n "$ns0" ]; then
        ns=aidc-deploy-check-$$
        for doc in "$dir"/doc-*.yaml; do
            sed -i -E "s/^([[:space:]]*(- )?namespace:[[:space:]]*)[\"']?${ns0}[\"']?[[:space:]]*\$/\\1$ns/" "$doc"
            [ "$(top "$doc" kind)" = Namespace ] && sed -i -E "s/^  name:[[:space:]]*[\"']?${ns0}[\"']?[[:space:]]*\$/  name: $ns/" "$doc"
        done
    fi

    # Namespaces first (a dry run creates nothing), then the real one, then the rest
    local order=() rest=() checked=()
    for doc in "$dir"/doc-*.yaml; do
        if [ "$(top "$doc" kind)" = Namespace ]; then order+=("$doc"); else rest+=("$doc"); fi
    done
    order+=(CREATE-NAMESPACE "${rest[@]}")
    for doc in "${order[@]}"; do
        if [ "$doc" = CREATE-NAMESPACE ]; then
            [ -n "$ns0" ] || continue
            st=$(k8s_call POST /api/v1/namespaces -H 'Content-Type: application/json' \
                 --data "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}")
            [ "$st" = 201 ] || { problem "cannot create the test namespace $ns ($st): $(cat "$work/k8s.out")"; return; }
            k8s_ns_created=$ns
            continue
        fi
        n=$((n + 1))
        kind=$(top "$doc" kind) api=$(top "$doc" apiVersion) name=$(meta "$doc" name)
        res=$(k8s_resource "$api" "$kind")
        if [ -z "$res" ] && [ "$kind" = PodDisruptionBudget ] && [ "$api" = policy/v1 ]; then
            # kube-apiserver 1.20 serves PodDisruptionBudget as policy/v1beta1 only
            # (policy/v1 came in 1.21); for this dry run only, the same spec as v1beta1
            api=policy/v1beta1
            sed -i 's#^apiVersion:[[:space:]]*policy/v1[[:space:]]*$#apiVersion: policy/v1beta1#' "$doc"
            say "k8s: note: $kind/$name checked as policy/v1beta1 (this API server has no policy/v1)"
            res=$(k8s_resource "$api" "$kind")
        fi
        [ -n "$res" ] || { problem "$kind/$name: the API server serves no $kind in $api"; continue; }
        read -r plural namespaced <<<"$res"
        case $api in */*) url=/apis/$api ;; *) url=/api/$api ;; esac
        if [ "$namespaced" = true ]; then
            ns=$(meta "$doc" namespace)
            [ -n "$ns" ] || { problem "$kind/$name has no metadata.namespace"; continue; }
            url=$url/namespaces/$ns
        fi
        st=$(k8s_call POST "$url/$plural?dryRun=All" -H 'Content-Type: application/yaml' --data-binary @"$doc")
        case $st in
            200 | 201 | 202) say "k8s: $kind/$name: $st (dry run)" ;;
            *) problem "$kind/$name: $st $(jq -r '.message // empty' "$work/k8s.out" 2>/dev/null || cat "$work/k8s.out")"
               continue ;;
        esac
        checked+=("$doc" "$kind/$name")
    done
    [ "$n" -gt 0 ] || problem "no Kubernetes object in $manifest"
    [ ${#checked[@]} -eq 0 ] || unknown_fields "${checked[@]}"
}
# k8s_static MANIFEST: the Deployment's grace period covers its preStop sleep and
# aidcd's drain (AIDC_SHUTDOWN_TIMEOUT_SECONDS of its ConfigMap, else the default)
k8s_static() {
    local line
    python3 -c 'import yaml' 2>/dev/null || return 0
    load_help || return 0
    while read -r line; do
        problem "$line"
    done < <(python3 - "$1" "$(help_default AIDC_SHUTDOWN_TIMEOUT_SECONDS)" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
settings = {}
for d in docs:
    if d["kind"] == "ConfigMap":
        settings.update(d.get("data") or {})
drain = int(settings.get("AIDC_SHUTDOWN_TIMEOUT_SECONDS", sys.argv[2]))
for d in docs:
    if d["kind"] != "Deployment":
        continue
    pod = d["spec"]["template"]["spec"]
    grace = pod.get("terminationGracePeriodSeconds", 30)
    for c in pod["containers"]:
        cmd = (((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command") or []
        sleep = int(cmd[-1]) if cmd and cmd[0].endswith("sleep") else 0
        if grace <= sleep + drain:
            print(f"Deployment/{d['metadata']['name']}: terminationGracePeriodSeconds {grace} is not "
                  f"above the preStop sleep ({sleep}) + AIDC_SHUTDOWN_TIMEOUT_SECONDS ({drain})")
PY
    )
}

# unknown_fields DOC WHAT [DOC WHAT...]: every field of each DOC is one the API
# server's OpenAPI schema knows (as kubectl's validation does): a server before 1.25
# drops unknown fields, a typo included, without a word
unknown_fields() {
    local st what path
    if ! python3 -c 'import yaml' 2>/dev/null; then
        say "k8s: note: python3 with yaml (python3-yaml) missing: field names not checked"
        return
    fi
    st=$(k8s_call GET /openapi/v2) && [ "$st" = 200 ] ||
        { problem "cannot read the API server's /openapi/v2 ($st)"; return; }
    while IFS=$'\t' read -r what path; do
        problem "$what: a field the API server does not know: $path"
    done < <(python3 - "$work/k8s.out" "$@" <<'PY'
import json, sys, yaml
defs = json.load(open(sys.argv[1]))["definitions"]
def walk(value, schema, path, out):
    while "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if isinstance(value, dict):
        props = schema.get("properties")
        if props is None:  # a map (labels, data): any key, values of one schema
            extra = schema.get("additionalProperties")
            for k, v in value.items():
                if isinstance(extra, dict):
                    walk(v, extra, f"{path}.{k}", out)
            return
        for k, v in value.items():
            p = f"{path}.{k}" if path else k
            if k in props:
                walk(v, props[k], p, out)
            else:
                out.append(p)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            walk(v, schema["items"], f"{path}[{i}]", out)
args = sys.argv[2:]
for doc_file, what in zip(args[0::2], args[1::2]):
    doc = yaml.safe_load(open(doc_file))
    group, _, version = doc.get("apiVersion", "").rpartition("/")
    gvk = (group, version, doc.get("kind"))
    roots = [n for n, d in defs.items() for g in d.get("x-kubernetes-group-version-kind", [])
             if (g.get("group", ""), g.get("version"), g.get("kind")) == gvk]
    out = []
    if roots:
        walk(doc, defs[roots[0]], "", out)
    else:
        out.append("(all: no schema for it)")
    for p in out:
        print(f"{what}\t{p}")
PY
    )
}

# ---- main -------------------------------------------------------------------------------------
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(settings nginx sessions systemd container k8s)
failed=0 skipped=0
for part in "${parts[@]}"; do
    case $part in settings | nginx | sessions | systemd | container | k8s) ;;
        *) say "unknown part '$part' (settings nginx sessions systemd container k8s)"; exit 2 ;; esac
    bad=0
    "part_$part"
    rc=$?
    if [ "$bad" -eq 0 ] && [ "$rc" -eq 77 ]; then
        say "$part: SKIPPED"; skipped=1
    elif [ "$bad" -ne 0 ] || [ "$rc" -ne 0 ]; then
        say "$part: FAILED"; failed=1
    else
        say "$part: ok"
    fi
done
[ "$failed" -eq 0 ] || exit 1
[ "$skipped" -eq 0 ] || exit 77
exit 0
