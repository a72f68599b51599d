#!/usr/bin/env bash
# sessions.sh - figures of interactive sessions (docs/sessions.md): how long a notebook
# takes to become usable, and what aidcd's sessions relay adds to an app's WebSocket
# latency and download throughput, each against the same thing without the relay in
# the same run (figures, not pass/fail; not run by ctest).
#
# From the repository root, after `cmake --build build --target aidcd`, run (as root,
# like the local executor's jobs; Debian's jupyter-notebook and python3-websocket
# installed)
#     tests/bench/sessions.sh
# About 1 minute on 2 CPUs. It starts its own PostgreSQL 15 (deploy/pg-up.sh,
# PGDATA_DIR=/tmp/aidc-bench-sessions-pg, port 15455) and aidcd (data dir in a temporary
# directory; the relay on its default origin http://127.0.0.1:PORT, no nginx), registers
# a local cluster, makes a tenant, a project and a member, and as that member:
#   1. notebook: BENCH_NOTEBOOK_RUNS times, POST .../sessions {"app":"jupyter"} (no
#      image: the host's jupyter-notebook in the local executor's sandbox), wait for
#      "ready" (polled every 20 ms), follow the single-use link, POST <base>api/kernels
#      and run print(6*7) over the kernel's WebSocket, all through the relay; then stop
#      it and wait for its job's end before the next run. Per run: POST -> ready,
#      ready -> "42" printed, the total (target: p50 < 10 s), and from the server's
#      timestamps created_at -> ready_at;
#   2. WebSocket round trips: a web app session (tests/bench/sessions.sh's echo app: a
#      101, then every byte echoed), BENCH_WS_ROUNDS round trips of a BENCH_WS_BYTES
#      byte frame through the relay, straight to the app's forwarded port (127.0.0.1:
#      <port> of jobs/<job>/app.json: the slirp4netns forward, no relay) and to an echo
#      on loopback in the client (neither), in 10 alternating blocks: p50/p90/p99/max
#      (target: the relay adds < 1 ms at p50);
#   3. download: GET of BENCH_DOWNLOAD_MB MB (10^6 bytes) from the same app's memory
#      through the relay against straight from its forwarded port, curl to /dev/null,
#      BENCH_ROUNDS rounds alternating (medians, MB/s); aidcd's VmRSS sampled every
#      0.1 s during the relayed ones (highest sample), its VmHWM (reset before) and its
#      CPU time.
# It prints a table. The exit status is 0 whenever the measurements ran.
#
# Environment (all optional):
#   BUILD_DIR             build tree                                   (default ./build)
#   BENCH_NOTEBOOK_RUNS   notebooks started, one after another         (default 5)
#   BENCH_WS_ROUNDS       WebSocket round trips per path               (default 5000)
#   BENCH_WS_BYTES        bytes of a frame (header included)           (default 64)
#   BENCH_DOWNLOAD_MB     MB of the download                           (default 200)
#   BENCH_ROUNDS          rounds of part 3                             (default 5)
#   BENCH_THREADS         HTTP worker threads of aidcd                 (default 2)
#   BENCH_PGDATA_DIR, BENCH_PGPORT  the bench cluster (default /tmp/aidc-bench-sessions-pg, 15455)
#   BENCH_KEEP_PG=1       leave the cluster running at the end
#   BENCH_OUT             raw outputs                   (default /tmp/aidc-bench-sessions-out)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/bench"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
NB_RUNS=${BENCH_NOTEBOOK_RUNS:-5}
WS_ROUNDS=${BENCH_WS_ROUNDS:-5000}
WS_BYTES=${BENCH_WS_BYTES:-64}
DL_MB=${BENCH_DOWNLOAD_MB:-200}
ROUNDS=${BENCH_ROUNDS:-5}
THREADS=${BENCH_THREADS:-2}
BENCH_PGDATA_DIR=${BENCH_PGDATA_DIR:-/tmp/aidc-bench-sessions-pg}
BENCH_PGPORT=${BENCH_PGPORT:-15455}
OUT=${BENCH_OUT:-/tmp/aidc-bench-sessions-out}
DB=aidc_bench_sessions
PASSWORD=bench-password-1234
TENANT=lab
PROJECT=notebooks
MEMBER=alice
PY=/usr/bin/python3  # Debian's: python3-websocket is installed for it, not for a pyenv one
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGBIN
PSQL="$PGBIN/psql"

say() { printf '\n== %s\n' "$*"; }
die() { echo "bench: $*" >&2; exit 1; }
for c in curl jq awk; do command -v "$c" >/dev/null || die "$c not found (deploy/install-deps.sh bench)"; done
[ -x "$PSQL" ] || die "$PSQL not found"
[ -x "$BUILD_DIR/aidcd" ] || die "$BUILD_DIR/aidcd not found: build first (cmake --build build --target aidcd)"
[ "$(id -u)" = 0 ] || die "run as root: the local executor runs the sessions' apps as their tenant's uid"
"$PY" -c 'import websocket' 2>/dev/null || die "$PY cannot import websocket (apt-get install python3-websocket)"
command -v jupyter-notebook >/dev/null || die "no jupyter-notebook (apt-get install jupyter-notebook)"
command -v slirp4netns >/dev/null || die "no slirp4netns: the local executor forwards an app's port with it"
mkdir -p "$OUT"
rm -f "$OUT"/*.out "$OUT"/*.log
TMP=$(mktemp -d /tmp/aidc-bench-sessions.XXXXXX)
chmod 711 "$TMP" # the local executor's jobs pass through it to AIDC_DATA_DIR
# the sessions' jobs run as the tenant's uid and must pass through to their directories
chmod 711 "$TMP"
AIDCD_PID=
WATCH_PID=
WATCH_TICKS=0
# shellcheck source=tests/bench/lib.sh
. "$HERE/lib.sh"
# a job's shim ("aidcd local-shim <data dir>/jobs/<id>") ends its job on SIGTERM
reap_shims() {
    local p
    for p in /proc/[0-9]*; do
        { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null | grep -qF "local-shim $TMP/data/jobs/" &&
            kill -TERM "${p#/proc/}" 2>/dev/null
    done
    return 0
}
cleanup() {
    local rc=$?
    [ -z "$WATCH_PID" ] || { touch "$OUT/rss.stop"; wait "$WATCH_PID" 2>/dev/null || true; }
    stop_pid "$AIDCD_PID" aidcd
    reap_shims
    rm -rf "$TMP"
    stop_bench_pg
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# a run copy: a rebuild of the build tree during the run must not pull it away
cp "$BUILD_DIR/aidcd" "$TMP/aidcd"
AIDCD="$TMP/aidcd"

own_pg
export AIDC_RATE_LIMIT_PER_ADDRESS=0 AIDC_RATE_LIMIT_PER_TOKEN=0 AIDC_MAX_CONNECTIONS_PER_ADDRESS=0
export AIDC_LOG_LEVEL=warn AIDC_DATA_DIR="$TMP/data" AIDC_THREADS="$THREADS" AIDC_WORKERS=1
RELAY_PORT=$(pick_port 18950)
export AIDC_SESSIONS_LISTEN="127.0.0.1:$RELAY_PORT"
"$AIDCD" migrate
declare -A FIG

# ---- memory and CPU: rss_kib, watch_start, watch_stop (lib.sh) ------------------------
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) print "-"; else print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mbs() { awk -v n="$1" -v t="$2" 'BEGIN { if (t + 0 <= 0) print "-"; else printf "%.0f", n / 1e6 / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }

# ---- 0. aidcd, a local cluster, tenant, project, member -------------------------------
aidcd_start 18900
admin_token
expect 201 -X POST "${AUTH[@]}" \
    -d '{"name":"local","kind":"local","options":{"cpus":16,"memory_gib":32}}' "$BASE/api/v1/clusters"
expect 201 -X POST "${AUTH[@]}" -d "{\"slug\":\"$TENANT\",\"name\":\"Sessions bench\"}" "$BASE/api/v1/tenants"
expect 201 -X POST "${AUTH[@]}" -d "{\"slug\":\"$PROJECT\",\"name\":\"Notebooks\"}" \
    "$BASE/api/v1/tenants/$TENANT/projects"
expect 201 -X POST "${AUTH[@]}" -d "{\"username\":\"$MEMBER\",\"password\":\"$PASSWORD\"}" "$BASE/api/v1/users"
expect 200 -X PUT "${AUTH[@]}" -d '{"role":"member"}' "$BASE/api/v1/tenants/$TENANT/members/$MEMBER"
user_token "$MEMBER" '["jobs:read","jobs:write"]'
SESSIONS="$BASE/api/v1/tenants/$TENANT/sessions"
FIG[rss0]=$(rss_kib "$AIDCD_PID" VmRSS)
say "aidcd (pid $AIDCD_PID) on port $AIDC_PORT, relay on $RELAY_PORT, $THREADS HTTP threads;" \
    "VmRSS ${FIG[rss0]} KiB; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- 1. a notebook: POST to print(6*7) ---------------------------------------------------
say "1. notebook: POST .../sessions {\"app\":\"jupyter\"} to print(6*7) through the relay, $NB_RUNS runs"
"$PY" "$HERE/sessions_client.py" notebook "$BASE" "$TENANT" "$TOKEN" "$PROJECT" "$NB_RUNS" \
    | tee "$OUT/notebook.out" | awk '{ printf "  run %s: ready %.2f s, then 42 printed %.2f s later: %.2f s" \
        " (server: ready_at %.2f s after created_at)\n", $2, $3, $4, $5, $6 }'
for k in 3:ready 4:kernel 5:total 6:readyat; do
    FIG[nb_${k#*:}]=$(awk -v c="${k%:*}" '{ printf "%s ", $c }' "$OUT/notebook.out" | median)
    FIG[nb_${k#*:}_max]=$(awk -v c="${k%:*}" 'BEGIN { m = 0 } $c > m { m = $c } END { print m }' "$OUT/notebook.out")
done

# ---- the echo app of parts 2 and 3 ------------------------------------------------------
# A 101 and every byte echoed for a WebSocket upgrade; GET .../big?n=BYTES sends that many
# bytes from memory (1 MiB writes); anything else: 200 "ok".
APP='import http.server, os, base64, hashlib
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
        n = int(self.path.split("n=", 1)[1]) if "/big?n=" in self.path else 0
        self.send_response(200); self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n or 3)); self.end_headers()
        if not n:
            self.wfile.write(b"ok\n"); return
        block = b"x" * 1048576
        while n > 0:
            self.wfile.write(block[:min(n, len(block))]); n -= len(block)
http.server.ThreadingHTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()'
say "a web app session (the echo app) for parts 2 and 3"
BODY=$(jq -n --arg app "$APP" --arg p "$PROJECT" \
    '{project: $p, app: "web", cpus: 1, memory_gib: 1, command: ["/usr/bin/python3", "-c", $app]}')
expect 201 -X POST "${AUTH[@]}" -d "$BODY" "$SESSIONS"
SID=$(jq -r .id "$TMP/resp")
JOB=$(jq -r .job.id "$TMP/resp")
for _ in $(seq 600); do
    expect 200 "${AUTH[@]}" "$SESSIONS/$SID"
    state=$(jq -r .state "$TMP/resp")
    [ "$state" = ready ] && break
    [ "$state" != ended ] || die "the web app session ended: $(jq -r .reason "$TMP/resp")"
    sleep 0.1
done
[ "$state" = ready ] || die "the web app session is not ready after 60 s"
APP_JSON="$TMP/data/jobs/$JOB/app.json"
DIRECT_PORT=$(jq -r .port "$APP_JSON") || die "no $APP_JSON"
expect 200 -X POST "${AUTH[@]}" "$SESSIONS/$SID/open"
LINK=$(jq -r .url "$TMP/resp")
expect 302 -c "$TMP/jar" "$LINK"
COOKIE=$(awk '$6 == "aidc_app" { print $7 }' "$TMP/jar")
[ -n "$COOKIE" ] || die "the link set no aidc_app cookie"
RELAYED="http://127.0.0.1:$RELAY_PORT/sessions/$SID"
DIRECT="http://127.0.0.1:$DIRECT_PORT/sessions/$SID"
echo "  session $SID ready; the app is forwarded to 127.0.0.1:$DIRECT_PORT ($APP_JSON);" \
     "the relay: $RELAYED/"

# ---- 2. WebSocket round trips --------------------------------------------------------------
say "2. WebSocket round trips of $WS_BYTES bytes: relay, straight to the forwarded port, loopback echo;" \
    "$WS_ROUNDS each in 10 alternating blocks"
watch_start ws
"$PY" "$HERE/sessions_client.py" latency "$RELAY_PORT" "$SID" "$COOKIE" "$DIRECT_PORT" \
    "$WS_ROUNDS" 10 "$WS_BYTES" | tee "$OUT/latency.out" |
    awk '{ printf "  %-8s %d round trips: p50 %s us, p90 %s us, p99 %s us, max %s us, mean %s us\n", $1, $2, $3, $4, $5, $6, $7 }'
watch_stop ws
for p in relay direct loopback; do
    read -r _ _ "FIG[ws_${p}_p50]" "FIG[ws_${p}_p90]" "FIG[ws_${p}_p99]" "FIG[ws_${p}_max]" _ \
        < <(grep "^$p " "$OUT/latency.out")
done
FIG[ws_added_p50]=$(awk -v a="${FIG[ws_relay_p50]}" -v b="${FIG[ws_direct_p50]}" 'BEGIN { printf "%.0f", a - b }')
FIG[ws_added_p99]=$(awk -v a="${FIG[ws_relay_p99]}" -v b="${FIG[ws_direct_p99]}" 'BEGIN { printf "%.0f", a - b }')
echo "  the relay adds ${FIG[ws_added_p50]} us at p50, ${FIG[ws_added_p99]} us at p99;" \
     "aidcd CPU ${FIG[cpu_ws]} s for the relayed round trips and the others' waits"

# ---- 3. download ---------------------------------------------------------------------------
SIZE=$((DL_MB * 1000000))
get() {  # get URL [curl args]: GET to /dev/null; echo its seconds (dies unless 200 and SIZE bytes)
    local code bytes t url=$1
    shift
    read -r code bytes t < <(curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}\n' \
                                 "$@" "$url/big?n=$SIZE")
    [[ "$code" = 200 && "$bytes" = "$SIZE" ]] || die "GET $url/big answered $code with $bytes bytes"
    echo "$t"
}
say "3. download of $DL_MB MB from the app's memory: relay against straight to the forwarded port," \
    "$ROUNDS rounds alternating"
get "$RELAYED" -b "aidc_app=$COOKIE" > /dev/null  # warm: the app's first big buffer, the relay's thread
for round in $(seq "$ROUNDS"); do
    t_direct=$(get "$DIRECT")
    watch_start dl
    t_relay=$(get "$RELAYED" -b "aidc_app=$COOKIE")
    watch_stop dl
    echo "  round $round: straight $(mbs "$SIZE" "$t_direct") MB/s ($t_direct s), relay" \
         "$(mbs "$SIZE" "$t_relay") MB/s ($t_relay s); aidcd VmRSS at most ${FIG[rss_dl]} KiB," \
         "VmHWM ${FIG[hwm_dl]} KiB, CPU ${FIG[cpu_dl]} s"
    FIG[t_direct]="${FIG[t_direct]:-} $t_direct" FIG[t_relay]="${FIG[t_relay]:-} $t_relay"
    FIG[dl_rss]="${FIG[dl_rss]:-} ${FIG[rss_dl]}" FIG[dl_hwm]="${FIG[dl_hwm]:-} ${FIG[hwm_dl]}"
    FIG[dl_cpu]="${FIG[dl_cpu]:-} ${FIG[cpu_dl]}"
done
FIG[dl_direct]=$(mbs "$SIZE" "$(echo "${FIG[t_direct]}" | median)")
FIG[dl_relay]=$(mbs "$SIZE" "$(echo "${FIG[t_relay]}" | median)")
FIG[dl_rss_max]=$(echo "${FIG[dl_rss]}" | tr ' ' '\n' | sort -n | tail -1)
FIG[dl_hwm_max]=$(echo "${FIG[dl_hwm]}" | tr ' ' '\n' | sort -n | tail -1)
FIG[dl_cpu_gb]=$(awk -v c="$(echo "${FIG[dl_cpu]}" | median)" -v n="$SIZE" 'BEGIN { printf "%.2f", c / (n / 1e9) }')
expect 202 -X POST "${AUTH[@]}" "$SESSIONS/$SID/stop"
FIG[rss1]=$(rss_kib "$AIDCD_PID" VmRSS)

# ---- figures -----------------------------------------------------------------------------
verdict() {  # verdict X LIMIT: X < LIMIT
    awk -v x="$1" -v lim="$2" 'BEGIN { if (x == "" || x == "-") print "n/a"; else print (x + 0 < lim + 0) ? "met" : "NOT met" }'
}
say "figures ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); MB = 10^6 bytes)"
printf '  %-62s | %s\n' "what" "figure" \
    "notebook POST -> ready, p50 (max) of $NB_RUNS" "${FIG[nb_ready]} s (${FIG[nb_ready_max]})" \
    "  ready -> kernel started and print(6*7) answered, p50 (max)" "${FIG[nb_kernel]} s (${FIG[nb_kernel_max]})" \
    "  POST -> 42 printed, p50 (max) (target < 10 s: $(verdict "${FIG[nb_total]}" 10))" "${FIG[nb_total]} s (${FIG[nb_total_max]})" \
    "  server: created_at -> ready_at, p50" "${FIG[nb_readyat]} s" \
    "WebSocket round trip p50 / p99: relay" "${FIG[ws_relay_p50]} / ${FIG[ws_relay_p99]} us" \
    "  straight to the forwarded port (slirp4netns)" "${FIG[ws_direct_p50]} / ${FIG[ws_direct_p99]} us" \
    "  loopback echo in the client (neither)" "${FIG[ws_loopback_p50]} / ${FIG[ws_loopback_p99]} us" \
    "  added by the relay at p50 / p99 (target < 1000 us at p50: $(verdict "${FIG[ws_added_p50]}" 1000))" "${FIG[ws_added_p50]} / ${FIG[ws_added_p99]} us" \
    "download $DL_MB MB: relay / straight, MB/s (median of $ROUNDS)" "${FIG[dl_relay]} / ${FIG[dl_direct]} ($(ratio "${FIG[dl_relay]}" "${FIG[dl_direct]}"))" \
    "  aidcd VmRSS after start / highest sample while relaying / VmHWM, MiB" "$(mib "${FIG[rss0]}") / $(mib "${FIG[dl_rss_max]}") / $(mib "${FIG[dl_hwm_max]}")" \
    "  aidcd CPU per GB relayed, s" "${FIG[dl_cpu_gb]}" \
    "aidcd VmRSS at the end, MiB" "$(mib "${FIG[rss1]}")"
[ "$HWM_RESET" = 1 ] || echo "  (VmHWM could not be reset through /proc/$AIDCD_PID/clear_refs: each is the peak since start)"
echo "  raw outputs: $OUT"
