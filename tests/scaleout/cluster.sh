# shellcheck shell=bash
# cluster.sh - sourced by tests/scaleout/failover.sh and tests/bench/scaleout.sh: a
# single-node etcd, two PostgreSQL 15 under Patroni (one primary, one synchronous
# streaming standby), aidc's roles, database and schema on it, up to three aidcd replicas
# and nginx in front of them, all under one temporary directory and on fixed loopback
# ports (17400-17699, this test's range). Everything started is remembered by pid and
# stopped by so_cleanup (never by name: other tests run postgres and etcd here too).
#
# The caller sets AIDCD (the binary) and ROOT (the source tree) before so_init.
# Patroni runs as the OS user postgres (postgres refuses root); setpriv execs, so the pid
# held is Patroni's own. PGPASSWORD must not reach Patroni: libpq would prefer it to the
# pgpass file Patroni writes and pg_basebackup would log in as replicator with the
# superuser's password.

SO_ETCD_PORT=17479 SO_ETCD_PEER=17480
SO_PG=(17532 17533) SO_REST=(17508 17509)
SO_AIDC=(17601 17602 17603) SO_PROXY=17600
SO_ETCD_PID='' SO_NGINX_PID=''
SO_PATRONI=("" "") SO_AIDCD=("" "" "")

so_ms() { date +%s%3N; }
so_log() { echo "scaleout: $*" >&2; }
# so_until SECONDS CMD...: true as soon as CMD succeeds, false after SECONDS
so_until() { local end=$(($(so_ms) + $1 * 1000)); shift
    while :; do "$@" && return 0; [ "$(so_ms)" -lt "$end" ] || return 1; sleep 0.1; done; }
so_port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
so_code() { curl -s -m 2 -o /dev/null -w '%{http_code}' "$1" 2>/dev/null || true; }
so_http_ok() { [ "$(so_code "$1")" = 200 ]; }
# Patroni's REST API: /primary answers 200 on the leader, /sync on the DCS-named sync standby
so_role_is() { so_http_ok "http://127.0.0.1:${SO_REST[$1]}/$2"; }
so_sql() { # so_sql NODE DATABASE SQL: as the superuser, on one node (DATABASE "": postgres)
    PGPASSWORD=$SO_SUPW PGCONNECT_TIMEOUT=2 psql -XAtq -v ON_ERROR_STOP=1 \
        "host=127.0.0.1 port=${SO_PG[$1]} dbname=${2:-postgres} user=postgres" -c "$3" 2>/dev/null; }
so_leader() { # the index of the node whose Patroni says primary, or nothing
    local i; for i in 0 1; do so_role_is "$i" primary && { echo "$i"; return 0; }; done; return 1; }

# so_missing: why the cluster cannot run here (empty when it can)
so_missing() {
    [ "$(id -u)" -eq 0 ] || { echo "not root (Patroni runs postgres as the OS user postgres)"; return; }
    local c; for c in patroni etcd nginx psql setpriv curl jq /usr/lib/postgresql/15/bin/initdb; do
        command -v "$c" >/dev/null || { echo "$c not installed (deploy/install-deps.sh ops)"; return; }
    done
    /usr/bin/python3 -c 'import etcd' 2>/dev/null || { echo "python3-etcd not installed (deploy/install-deps.sh ops)"; return; }
    getent passwd postgres >/dev/null || { echo "no OS user postgres"; return; }
    local p; for p in $SO_ETCD_PORT $SO_ETCD_PEER "${SO_PG[@]}" "${SO_REST[@]}" "${SO_AIDC[@]}" $SO_PROXY; do
        so_port_free "$p" || { echo "port $p is taken (another run of this test?)"; return; }
    done
}

so_init() {
    SO_DIR=$(mktemp -d /tmp/aidc-so.XXXXXX)
    chown postgres:postgres "$SO_DIR" && chmod 0711 "$SO_DIR"
    mkdir -m 700 "$SO_DIR/etcd" "$SO_DIR/aidc"
    SO_SUPW=$(head -c 12 /dev/urandom | base64 | tr '+/' '-_')
    local repw owpw appw
    repw=$(head -c 12 /dev/urandom | base64 | tr '+/' '-_')
    owpw=$(head -c 12 /dev/urandom | base64 | tr '+/' '-_')
    appw=$(head -c 12 /dev/urandom | base64 | tr '+/' '-_')
    SO_OWPW=$owpw SO_APPW=$appw
    local hosts="127.0.0.1:${SO_PG[0]},127.0.0.1:${SO_PG[1]}"
    # libpq tries each host in turn and keeps the one that accepts writes; a short connect
    # timeout so that a host that does not answer costs 2 s, not the default forever
    local q="target_session_attrs=read-write&connect_timeout=2"
    SO_APP_URL="postgresql://aidc_app:$appw@$hosts/aidc?$q"
    SO_OWNER_URL="postgresql://aidc_owner:$owpw@$hosts/aidc?$q"
    for n in 0 1; do
        sed -e "s|__NAME__|pg$n|g" -e "s|__DIR__|$SO_DIR|g" -e "s|__REST__|${SO_REST[$n]}|g" \
            -e "s|__PORT__|${SO_PG[$n]}|g" -e "s|__ETCD__|$SO_ETCD_PORT|g" \
            -e "s|__SUPW__|$SO_SUPW|g" -e "s|__REPW__|$repw|g" \
            "$ROOT/tests/scaleout/patroni.yml.in" > "$SO_DIR/pg$n.yml"
        chmod 600 "$SO_DIR/pg$n.yml" && chown postgres "$SO_DIR/pg$n.yml"
    done
}

so_start_etcd() {
    etcd --name so --data-dir "$SO_DIR/etcd" \
        --listen-client-urls "http://127.0.0.1:$SO_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$SO_ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$SO_ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$SO_ETCD_PEER" \
        --initial-cluster "so=http://127.0.0.1:$SO_ETCD_PEER" --initial-cluster-state new \
        --logger=zap --log-level=warn > "$SO_DIR/etcd.log" 2>&1 9>&- &
    SO_ETCD_PID=$!
    so_until 20 eval 'curl -sf -m 1 "http://127.0.0.1:$SO_ETCD_PORT/health" | grep -q true'
}

so_start_patroni() { # so_start_patroni N
    (cd "$SO_DIR" && exec env -u PGPASSWORD -u PGCONNECT_TIMEOUT HOME="$SO_DIR" \
        setpriv --reuid=postgres --regid=postgres --init-groups patroni "$SO_DIR/pg$1.yml") \
        > "$SO_DIR/patroni$1.log" 2>&1 9>&- &
    SO_PATRONI[$1]=$!
}

# so_is_sync PRIMARY STANDBY: postgres streams synchronously AND Patroni's /sync key names
# the standby (only then may it be promoted without losing an acknowledged commit)
so_is_sync() {
    [ "$(so_sql "$1" "" "select sync_state from pg_stat_replication where application_name = 'pg$2' and state = 'streaming'")" = sync ] &&
        so_role_is "$2" sync
}

# so_setup_db: aidc's roles and database, as deploy/pg-up.sh makes them, then `aidcd migrate`
# and the admin "scale"
so_setup_db() {
    local l; l=$(so_leader) || return 1
    PGPASSWORD=$SO_SUPW psql -XAq -v ON_ERROR_STOP=1 "host=127.0.0.1 port=${SO_PG[$l]} dbname=postgres user=postgres" \
        -v owner_pw="$SO_OWPW" -v app_pw="$SO_APPW" >/dev/null <<'SQL' || return 1
SET password_encryption = 'scram-sha-256';
CREATE ROLE aidc_owner LOGIN NOSUPERUSER CREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'owner_pw';
CREATE ROLE aidc_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'app_pw';
CREATE DATABASE aidc OWNER aidc_owner;
REVOKE ALL ON DATABASE aidc FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE aidc TO aidc_app;
\c aidc
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO aidc_app;
SQL
    AIDC_MIGRATE_DATABASE_URL=$SO_OWNER_URL AIDC_DATABASE_URL=$SO_APP_URL AIDC_DATA_DIR=$SO_DIR/aidc \
        "$AIDCD" migrate > "$SO_DIR/migrate.log" 2>&1 || return 1
    AIDC_MIGRATE_DATABASE_URL=$SO_OWNER_URL AIDC_DATABASE_URL=$SO_APP_URL AIDC_DATA_DIR=$SO_DIR/aidc \
        AIDC_ADMIN_PASSWORD=scale-admin-pw "$AIDCD" bootstrap --admin scale > "$SO_DIR/bootstrap.log" 2>&1
}

# so_start_aidcd I [THREADS]: replica I (0-2) on its port; shares the data dir (JWT and
# audit keys) with the others, as replicas must
so_start_aidcd() {
    AIDC_DATABASE_URL=$SO_APP_URL AIDC_MIGRATE_DATABASE_URL=$SO_OWNER_URL \
    AIDC_DATA_DIR=$SO_DIR/aidc AIDC_PORTAL_DIR=$ROOT/portal \
    AIDC_LISTEN=127.0.0.1:${SO_AIDC[$1]} AIDC_SESSIONS_LISTEN=127.0.0.1:0 \
    AIDC_THREADS=${2:-2} AIDC_LOG_LEVEL=info \
    AIDC_RATE_LIMIT_PER_ADDRESS=0 AIDC_RATE_LIMIT_PER_TOKEN=0 AIDC_MAX_CONNECTIONS_PER_ADDRESS=0 \
        "$AIDCD" serve > "$SO_DIR/aidcd$1.log" 2>&1 9>&- &
    SO_AIDCD[$1]=$!
    so_until 30 so_http_ok "http://127.0.0.1:${SO_AIDC[$1]}/readyz"
}

# so_start_nginx N: nginx on SO_PROXY in front of replicas 0..N-1 (a running nginx is
# replaced). POSTs are never passed to a second replica (a client retries with its key).
so_start_nginx() {
    so_stop_pid "$SO_NGINX_PID"; SO_NGINX_PID=
    local ng=$SO_DIR/nginx i
    mkdir -p "$ng"
    {
        printf 'daemon off;\nuser root;\nworker_processes 1;\npid %s/nginx.pid;\nerror_log %s/error.log warn;\n' "$ng" "$ng"
        printf 'events { worker_connections 1024; }\nhttp {\n  access_log off;\n'
        printf '  client_body_temp_path %s/body; proxy_temp_path %s/proxy;\n' "$ng" "$ng"
        printf '  fastcgi_temp_path %s/fcgi; uwsgi_temp_path %s/uwsgi; scgi_temp_path %s/scgi;\n' "$ng" "$ng" "$ng"
        printf '  upstream aidc {\n'
        for ((i = 0; i < $1; i++)); do
            printf '    server 127.0.0.1:%d max_fails=1 fail_timeout=2s;\n' "${SO_AIDC[$i]}"
        done
        printf '    keepalive 32;\n  }\n  server {\n    listen 127.0.0.1:%d;\n' "$SO_PROXY"
        printf '    location / {\n      proxy_pass http://aidc;\n      proxy_http_version 1.1;\n'
        printf '      proxy_set_header Connection "";\n      proxy_set_header Host $host;\n'
        printf '      proxy_next_upstream error timeout http_502;\n'
        printf '      proxy_connect_timeout 2s;\n      proxy_read_timeout 60s;\n    }\n  }\n}\n'
    } > "$ng/nginx.conf"
    nginx -p "$ng" -e stderr -c "$ng/nginx.conf" > "$ng/stderr.log" 2>&1 9>&- &
    SO_NGINX_PID=$!
    so_until 10 so_http_ok "http://127.0.0.1:$SO_PROXY/healthz"
}

# so_up REPLICAS: the whole cluster; prints its steps with their times
so_up() {
    local t0
    so_init
    t0=$(so_ms); so_start_etcd || { so_log "etcd did not start (log: $SO_DIR/etcd.log)"; return 1; }
    so_log "etcd pid $SO_ETCD_PID healthy after $(( $(so_ms) - t0 )) ms"
    t0=$(so_ms); so_start_patroni 0
    so_until 60 so_role_is 0 primary || { so_log "pg0 did not bootstrap (log: $SO_DIR/patroni0.log)"; return 1; }
    so_log "pg0 bootstrapped and primary after $(( $(so_ms) - t0 )) ms"
    # migrate before the standby exists: it then clones the migrated database at once
    t0=$(so_ms); so_setup_db || { so_log "database set-up failed (logs: $SO_DIR/migrate.log, bootstrap.log)"; return 1; }
    so_log "roles, database, migrations, admin after $(( $(so_ms) - t0 )) ms"
    t0=$(so_ms); so_start_patroni 1
    so_until 60 so_is_sync 0 1 || { so_log "pg1 never became the sync standby (log: $SO_DIR/patroni1.log)"; return 1; }
    so_log "pg1 cloned and streaming as the synchronous standby after $(( $(so_ms) - t0 )) ms"
    local i
    for ((i = 0; i < $1; i++)); do
        so_start_aidcd "$i" || { so_log "aidcd $i did not start (log: $SO_DIR/aidcd$i.log)"; return 1; }
    done
    so_start_nginx "$1" || { so_log "nginx did not start (log: $SO_DIR/nginx/error.log)"; return 1; }
    so_log "$1 aidcd replicas and nginx on 127.0.0.1:$SO_PROXY"
}

so_stop_pid() { # SIGTERM, up to 15 s, then SIGKILL; only a pid this script started
    local pid=$1 _
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

# so_postmaster N: the pid of node N's postmaster (while it runs)
so_postmaster() { head -1 "$SO_DIR/pg$1/postmaster.pid" 2>/dev/null; }

so_cleanup() {
    local i pm=()
    [ -n "${SO_DIR:-}" ] || return 0
    so_stop_pid "$SO_NGINX_PID"
    for i in 0 1 2; do so_stop_pid "${SO_AIDCD[$i]}"; done
    for i in 0 1; do pm+=("$(so_postmaster "$i")"); done
    # SIGTERM to Patroni stops its postgres (fast shutdown) before Patroni exits
    for i in 0 1; do so_stop_pid "${SO_PATRONI[$i]}"; done
    for i in 0 1; do # a postmaster left by a killed Patroni: stop it by its own pid
        [ -n "${pm[$i]}" ] && [ "$(cat "/proc/${pm[$i]}/comm" 2>/dev/null)" = postgres ] &&
            kill -QUIT "${pm[$i]}" 2>/dev/null
    done
    so_stop_pid "$SO_ETCD_PID"
    if [ "${SO_KEEP:-0}" = 1 ]; then so_log "kept $SO_DIR"; else rm -rf "$SO_DIR"; fi
}
