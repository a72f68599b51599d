# lib.sh - shell helpers shared by the benchmarks (run.sh, jobs.sh); sourced.
# Expects BENCH_PGDATA_DIR, BENCH_PGPORT and ROOT to be set by the caller.

stop_pid() {  # stop_pid PID NAME: SIGTERM, wait up to 10 s, then SIGKILL
    local pid=$1 _
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        echo "bench: $2 (pid $pid) did not stop in 10 s: killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

stop_bench_pg() {  # stop the bench cluster unless BENCH_KEEP_PG=1
    if [ "${BENCH_KEEP_PG:-0}" = 1 ]; then
        echo "bench: cluster left running (PGDATA_DIR=$BENCH_PGDATA_DIR, port $BENCH_PGPORT;" \
             "stop it with PGDATA_DIR=$BENCH_PGDATA_DIR deploy/pg-down.sh)" >&2
    else
        PGDATA_DIR=$BENCH_PGDATA_DIR "$ROOT/deploy/pg-down.sh" 2>/dev/null || true
    fi
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() { local p=$1; while ! port_free "$p"; do p=$((p + 1)); done; echo "$p"; }

# ---- CPU accounting (clock ticks) ---------------------------------------------
proc_ticks() {  # utime + stime of one process (all its threads)
    local f
    f=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    # shellcheck disable=SC2086
    set -- $f
    echo $(( ${12} + ${13} ))
}
reaped_ticks() {  # utime + stime of the children a process has reaped (exited ones)
    local f
    f=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    # shellcheck disable=SC2086
    set -- $f
    echo $(( ${14} + ${15} ))
}
pg_ticks() {  # every process of the bench cluster: postmaster, its children, and the exited ones
    local pm t p
    pm=$(head -1 "$BENCH_PGDATA_DIR/postmaster.pid" 2>/dev/null) || { echo 0; return; }
    # a backend or autovacuum worker that ends between two readings leaves the live sum:
    # its time moves to the postmaster's reaped children
    t=$(reaped_ticks "$pm")
    for p in "$pm" $(ps -o pid= --ppid "$pm" 2>/dev/null); do
        t=$(( t + $(proc_ticks "$p") ))
    done
    echo "$t"
}

pg_ticks_by_app() {  # pg_ticks_by_app ADMIN_URL: "pid name ticks" per PostgreSQL process, named
    # by its application_name (aidcd names each pool's connections: aidcd for the HTTP and
    # write threads, aidcd-admitter, aidcd-waker, ...) or else its backend type
    local pid name
    "$PSQL" -X -qAt -F ' ' -d "$1" -c "SELECT pid, replace(coalesce(nullif(application_name, ''),
        backend_type), ' ', '_') FROM pg_stat_activity WHERE pid <> pg_backend_pid()" |
    while read -r pid name; do echo "$pid $name $(proc_ticks "$pid")"; done
}
pg_app_split() {  # pg_app_split BEFORE AFTER REQUESTS: "name µs/request, ..." largest first; per
    # process (one that started during the run counts whole; one that ended is missing)
    awk 'FILENAME == ARGV[1] { b[$1] = $3; next } { d = $3 - b[$1]; if (d > 0) t[$2] += d }
         END { for (k in t) print t[k], k }' "$1" "$2" |
    sort -rn | awk -v n="$3" -v hz="$CLK_TCK" '{ printf "%s%s %.0f", (NR > 1 ? ", " : ""), $2,
        $1 * 1e6 / hz / (n < 1 ? 1 : n) } END { print "" }'
}

# ---- aidcd under test (AIDCD, PASSWORD, OUT, TMP, ROOT, THREADS set by the caller) ----------
aidcd_start() {  # aidcd_start FIRST_PORT: bootstrap the admin "bench", serve; sets AIDC_PORT BASE AIDCD_PID
    AIDC_ADMIN_PASSWORD=$PASSWORD "$AIDCD" bootstrap --admin bench >/dev/null
    AIDC_PORT=$(pick_port "$1")
    BASE="http://127.0.0.1:$AIDC_PORT"
    # benchmarks set guarantees freely: no second admin to approve them
    AIDC_APPROVAL_QUOTA_THRESHOLD=${AIDC_APPROVAL_QUOTA_THRESHOLD:-1000000} \
    AIDC_LISTEN="127.0.0.1:$AIDC_PORT" AIDC_PORTAL_DIR="$ROOT/portal" "$AIDCD" serve \
        > "$OUT/aidcd.log" 2>&1 &
    AIDCD_PID=$!
    for _ in $(seq 150); do
        kill -0 "$AIDCD_PID" 2>/dev/null || die "aidcd exited during start (log: $OUT/aidcd.log)"
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/readyz" || true)" = 200 ] && break
        sleep 0.1
    done
}

expect() {  # expect STATUS curl-args...: one request, die unless it answers STATUS
    local want=$1 got
    shift
    got=$(curl -s -o "$TMP/resp" -w '%{http_code}' "$@" || true)
    [ "$got" = "$want" ] || { cat "$TMP/resp" >&2 2>/dev/null; echo >&2;
                              die "expected $want, got $got from: curl $*"; }
}

user_token() {  # user scopes-json: log in and make an API token; sets TOKEN and AUTH (curl args)
    local jwt
    expect 200 -X POST -H 'Content-Type: application/json' \
        -d "{\"username\":\"$1\",\"password\":\"$PASSWORD\"}" "$BASE/api/v1/auth/login"
    jwt=$(jq -r .access_token "$TMP/resp")
    expect 201 -X POST -H "Authorization: Bearer $jwt" -H 'Content-Type: application/json' \
        -d "{\"name\":\"bench\",\"scopes\":$2,\"expires_in_days\":1}" "$BASE/api/v1/tokens"
    TOKEN=$(jq -r .token "$TMP/resp")
    if [ -z "$TOKEN" ] || [ "$TOKEN" = null ]; then die "no API token"; fi
    AUTH=(-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json')
}

admin_token() {  # log in as "bench" and make an API token; sets TOKEN and AUTH (curl args)
    user_token bench '["admin","jobs:read","jobs:write"]'
}

own_pg() {  # the bench's own PostgreSQL cluster with database $DB (kept when BENCH_REUSE=1)
    say "PostgreSQL: own cluster in $BENCH_PGDATA_DIR on port $BENCH_PGPORT"
    local env_out
    env_out=$(PGDATA_DIR=$BENCH_PGDATA_DIR PGPORT=$BENCH_PGPORT AIDC_DB=$DB "$ROOT/deploy/pg-up.sh")
    eval "$env_out"
    if [ "${BENCH_REUSE:-0}" != 1 ]; then
        "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL_ADMIN" \
            -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
        env_out=$(PGDATA_DIR=$BENCH_PGDATA_DIR PGPORT=$BENCH_PGPORT AIDC_DB=$DB "$ROOT/deploy/pg-up.sh")
        eval "$env_out"
    fi
    export AIDC_DATABASE_URL=$DATABASE_URL AIDC_MIGRATE_DATABASE_URL=$DATABASE_URL_OWNER
}

# ---- aidcd's memory and CPU during a measurement (needs AIDCD_PID, OUT, FIG, proc_ticks) ----
rss_kib() {  # rss_kib PID VmRSS|VmHWM -> KiB (pure bash: the sampler runs it often)
    local k v _
    while read -r k v _; do
        [ "$k" = "$2:" ] && { echo "$v"; return; }
    done < "/proc/$1/status" 2>/dev/null || true
    echo 0
}
HWM_RESET=1
watch_start() {  # watch_start NAME: VmHWM reset, VmRSS sampled every 0.1 s until watch_stop
    echo 5 2>/dev/null > "/proc/$AIDCD_PID/clear_refs" || HWM_RESET=0
    rm -f "$OUT/rss.stop"
    echo 0 > "$OUT/rss-$1.out"
    WATCH_TICKS=$(proc_ticks "$AIDCD_PID")
    ( max=0
      while [ ! -e "$OUT/rss.stop" ]; do
          v=$(rss_kib "$AIDCD_PID" VmRSS)
          [ "$v" -gt "$max" ] && { max=$v; echo "$max" > "$OUT/rss-$1.out"; }
          sleep 0.1
      done ) &
    WATCH_PID=$!
}
watch_stop() {  # watch_stop NAME: FIG[rss_NAME] highest VmRSS sampled, FIG[hwm_NAME] VmHWM,
    # FIG[cpu_NAME] aidcd's CPU seconds (user + system, all threads) since watch_start
    FIG[cpu_$1]=$(awk -v a="$WATCH_TICKS" -v b="$(proc_ticks "$AIDCD_PID")" -v hz="$(getconf CLK_TCK)" \
                  'BEGIN { printf "%.2f", (b - a) / hz }')
    touch "$OUT/rss.stop"
    wait "$WATCH_PID" 2>/dev/null || true
    WATCH_PID=
    FIG[rss_$1]=$(cat "$OUT/rss-$1.out")
    FIG[hwm_$1]=$(rss_kib "$AIDCD_PID" VmHWM)
}
