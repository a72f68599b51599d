#!/usr/bin/env bash
# files.sh - figures of the files API (api/files.c, api/fileupload.c) against the same
# work done straight on the same disk in the same run (figures, not pass/fail; not run
# by ctest).
#
# From the repository root, after `cmake --build build --target aidcd`, run (as root:
# the spaces belong to the tenant's uid, and the bench writes into one directly)
#     tests/bench/files.sh
# About 2 minutes on 2 CPUs. It starts its own PostgreSQL 15 (deploy/pg-up.sh,
# PGDATA_DIR=/tmp/aidc-bench-files-pg, port 15454) and aidcd (data dir and storage
# root in a temporary directory), makes through the API a tenant, a project and a
# member with an API token (jobs:read, jobs:write), makes the directories "many" and
# "few" in the project's space with POST ?op=mkdir (which makes the space), fills them
# straight on disk with BENCH_ENTRIES and BENCH_SMALL_ENTRIES empty files owned by the
# space's owner, and measures, one request at a time (curl's time_total):
#   1. listing: GET .../files/projects/<p>/many?limit=BENCH_PAGE following next_cursor
#      to the end, BENCH_LIST_PASSES times: total, pages, p50/p99 per page, the first
#      and the last page; the 1,000-entry directory in one page, 50 times; baselines:
#      `ls -f | wc -l`, `find -maxdepth 1 | wc -l` and `ls -l | wc -l` (sorted, every
#      entry stat'ed, as the API does) of the same directories, 3 times each (median);
#   2. download: GET of a BENCH_FILE_MIB MiB file of random bytes to /dev/null against
#      `cat > /dev/null` and `cp` of the same file on the same disk (warm page cache
#      for all), BENCH_ROUNDS rounds alternating (medians): MB/s and the ratios
#      (target: GET >= 0.8 of cp);
#   3. upload: PUT of the same file (curl -T, streamed) against `cp` to the same disk
#      and `cp` + fsync of the copy (aidcd fsyncs an upload before it renames it into
#      place), BENCH_ROUNDS rounds (medians); then the same file as a resumable upload
#      in parts of BENCH_PART_MIB MiB with Content-Range (each part a PUT of its own);
#   4. aidcd's memory: VmRSS and VmHWM after start, then for each part above VmHWM
#      reset before it (/proc/<pid>/clear_refs) and read after it, and VmRSS sampled
#      every 0.1 s during it (highest sample).
# Uploads and downloads are checked byte for byte once (cmp), outside the timings.
# It prints a table. The exit status is 0 whenever the measurements ran.
#
# Environment (all optional):
#   BUILD_DIR             build tree                                  (default ./build)
#   BENCH_ENTRIES         entries of the large directory              (default 100000)
#   BENCH_SMALL_ENTRIES   entries of the small directory              (default 1000)
#   BENCH_PAGE            limit of a listing page (at most 1000)      (default 1000)
#   BENCH_LIST_PASSES     paged listings of the large directory       (default 2)
#   BENCH_FILE_MIB        size of the file up- and downloaded, MiB    (default 2048, less
#                         when the disk has under 3x that plus 2 GiB free)
#   BENCH_PART_MIB        part size of the resumable upload, MiB      (default 64)
#   BENCH_ROUNDS          rounds of parts 2 and 3                     (default 3)
#   BENCH_THREADS         HTTP worker threads of aidcd                (default 2)
#   BENCH_PGDATA_DIR, BENCH_PGPORT  the bench cluster (default /tmp/aidc-bench-files-pg, 15454)
#   BENCH_KEEP_PG=1       leave the cluster running at the end
#   BENCH_OUT             raw outputs                     (default /tmp/aidc-bench-files-out)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/bench"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
N_ENTRIES=${BENCH_ENTRIES:-100000}
N_SMALL=${BENCH_SMALL_ENTRIES:-1000}
PAGE=${BENCH_PAGE:-1000}
LIST_PASSES=${BENCH_LIST_PASSES:-2}
PART_MIB=${BENCH_PART_MIB:-64}
ROUNDS=${BENCH_ROUNDS:-3}
THREADS=${BENCH_THREADS:-2}
BENCH_PGDATA_DIR=${BENCH_PGDATA_DIR:-/tmp/aidc-bench-files-pg}
BENCH_PGPORT=${BENCH_PGPORT:-15454}
OUT=${BENCH_OUT:-/tmp/aidc-bench-files-out}
DB=aidc_bench_files
PASSWORD=bench-password-1234
TENANT=files
PROJECT=data
MEMBER=alice
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGBIN
PSQL="$PGBIN/psql"

say() { printf '\n== %s\n' "$*"; }
die() { echo "bench: $*" >&2; exit 1; }
for c in curl jq awk cmp; do command -v "$c" >/dev/null || die "$c not found (deploy/install-deps.sh bench)"; done
[ -x "$PSQL" ] || die "$PSQL not found"
[ -x "$BUILD_DIR/aidcd" ] || die "$BUILD_DIR/aidcd not found: build first (cmake --build build --target aidcd)"
[ "$(id -u)" = 0 ] || die "run as root: the files are the tenant's uid's, and the bench writes some straight into its space"
(( PAGE >= 1 && PAGE <= 1000 )) || die "BENCH_PAGE: 1-1000"
mkdir -p "$OUT"
rm -f "$OUT"/*.out "$OUT"/*.log
TMP=$(mktemp -d /tmp/aidc-bench-files.XXXXXX)
AIDCD_PID=
WATCH_PID=
WATCH_TICKS=0
# shellcheck source=tests/bench/lib.sh
. "$HERE/lib.sh"
cleanup() {
    local rc=$?
    [ -z "$WATCH_PID" ] || { touch "$OUT/rss.stop"; wait "$WATCH_PID" 2>/dev/null || true; }
    stop_pid "$AIDCD_PID" aidcd
    rm -rf "$TMP"
    stop_bench_pg
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# a run copy: a rebuild of the build tree during the run must not pull it away
cp "$BUILD_DIR/aidcd" "$TMP/aidcd"
AIDCD="$TMP/aidcd"

# the file: 2 GiB unless the disk of the temporary directory is short (source, one copy
# and one upload or partial at a time, plus 2 GiB to spare)
AVAIL_MIB=$(df -P -m "$TMP" | awk 'NR == 2 { print $4 }')
if [ -n "${BENCH_FILE_MIB:-}" ]; then
    FILE_MIB=$BENCH_FILE_MIB
    [ $((3 * FILE_MIB + 2048)) -le "$AVAIL_MIB" ] || die "BENCH_FILE_MIB=$FILE_MIB: needs $((3 * FILE_MIB + 2048)) MiB free in $TMP, $AVAIL_MIB free"
else
    FILE_MIB=2048
    if [ $((3 * FILE_MIB + 2048)) -gt "$AVAIL_MIB" ]; then
        FILE_MIB=$(( (AVAIL_MIB - 2048) / 3 / PART_MIB * PART_MIB ))
        [ "$FILE_MIB" -ge "$PART_MIB" ] || die "only $AVAIL_MIB MiB free in $TMP"
        echo "bench: $AVAIL_MIB MiB free: a file of $FILE_MIB MiB" >&2
    fi
fi
SIZE=$((FILE_MIB * 1048576))
PART=$((PART_MIB * 1048576))

own_pg
# one client address and one credential: no per-client limits
export AIDC_RATE_LIMIT_PER_ADDRESS=0 AIDC_RATE_LIMIT_PER_TOKEN=0 AIDC_MAX_CONNECTIONS_PER_ADDRESS=0
export AIDC_LOG_LEVEL=warn AIDC_DATA_DIR="$TMP/data" AIDC_THREADS="$THREADS" AIDC_WORKERS=1
"$AIDCD" migrate
declare -A FIG

# ---- memory: rss_kib, watch_start, watch_stop (lib.sh) --------------------------------
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# ---- helpers -----------------------------------------------------------------------------
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) print "-"; else print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms_stats() {  # ms_stats FILE (one time in ms a line) -> "n p50 p99 max"
    sort -n "$1" | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "0 - - -"; exit }
        i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
        printf "%d %.1f %.1f %.1f\n", NR, v[i50], v[i99], v[NR] }'
}
mbs() { awk -v n="$1" -v t="$2" 'BEGIN { if (t + 0 <= 0) print "-"; else printf "%.0f", n / 1e6 / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
cat_null() { cat "$1" > /dev/null; }
cp_fsync() { cp "$1" "$2" && sync "$2"; }   # sync FILE: fsync(2) of that file
count_lines() { "$@" | wc -l > /dev/null; }
timed() {  # timed CMD...: run it (a function too), echo its wall-clock seconds
    local t0 t1
    t0=$(now)
    "$@"
    t1=$(now)
    elapsed "$t0" "$t1"
}

# ---- 0. aidcd, tenant, project, member, the space ---------------------------------------
aidcd_start 18800
admin_token
expect 201 -X POST "${AUTH[@]}" -d "{\"slug\":\"$TENANT\",\"name\":\"Files bench\"}" "$BASE/api/v1/tenants"
expect 201 -X POST "${AUTH[@]}" -d "{\"slug\":\"$PROJECT\",\"name\":\"Data\"}" \
    "$BASE/api/v1/tenants/$TENANT/projects"
expect 201 -X POST "${AUTH[@]}" -d "{\"username\":\"$MEMBER\",\"password\":\"$PASSWORD\"}" "$BASE/api/v1/users"
expect 200 -X PUT "${AUTH[@]}" -d '{"role":"member"}' "$BASE/api/v1/tenants/$TENANT/members/$MEMBER"
user_token "$MEMBER" '["jobs:read","jobs:write"]'
AUTHZ=(-H "Authorization: Bearer $TOKEN")
FILES="$BASE/api/v1/tenants/$TENANT/files/projects/$PROJECT"
FIG[rss0]=$(rss_kib "$AIDCD_PID" VmRSS)
FIG[hwm0]=$(rss_kib "$AIDCD_PID" VmHWM)
say "aidcd (pid $AIDCD_PID) on port $AIDC_PORT, $THREADS HTTP threads; VmRSS ${FIG[rss0]} KiB," \
    "VmHWM ${FIG[hwm0]} KiB (two logins: scrypt); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# the directories through the API (the first request makes the space), their entries on disk
expect 201 -X POST "${AUTHZ[@]}" "$FILES/many?op=mkdir"
expect 201 -X POST "${AUTHZ[@]}" "$FILES/few?op=mkdir"
SPACE="$TMP/data/storage/$TENANT/projects/$PROJECT"
[ -d "$SPACE/many" ] || die "the space is not where the bench expects it: $SPACE"
OWNER=$(stat -c %u:%g "$SPACE")
say "filling $SPACE (owner $OWNER): many/ $N_ENTRIES entries, few/ $N_SMALL, big.bin $FILE_MIB MiB"
t0=$(now)
fill() {  # fill DIR N: N empty files f-000001.bin ... owned by the space's owner
    (cd "$1" && seq -f 'f-%06g.bin' 1 "$2" | xargs touch)
    chown -R "$OWNER" "$1"
}
fill "$SPACE/many" "$N_ENTRIES"
fill "$SPACE/few" "$N_SMALL"
t1=$(now)
head -c "$SIZE" /dev/urandom > "$SPACE/big.bin"
chown "$OWNER" "$SPACE/big.bin"
t2=$(now)
echo "  entries made in $(elapsed "$t0" "$t1") s; big.bin in $(elapsed "$t1" "$t2") s;" \
     "$(df -P -m "$TMP" | awk 'NR == 2 { print $4 }') MiB free on that disk"

# ---- 1. listing ------------------------------------------------------------------------
list_all() {  # list_all DIR PASS: every page of DIR following next_cursor; "ms" a line into
    # $OUT/list-PASS.out; sets LIST_N (entries), LIST_PAGES, LIST_WALL (s, curl and jq too)
    local dir=$1 pass=$2 cursor="" code t n t0 t1 first last prev=""
    : > "$OUT/list-$pass.out"
    LIST_N=0 LIST_PAGES=0
    t0=$(now)
    while :; do
        read -r code t < <(curl -s -o "$TMP/page" -w '%{http_code} %{time_total}\n' "${AUTHZ[@]}" \
                               "$FILES/$dir?limit=$PAGE${cursor:+&cursor=$cursor}")
        [ "$code" = 200 ] || die "page $((LIST_PAGES + 1)) of $dir answered $code: $(head -c 300 "$TMP/page")"
        awk -v t="$t" 'BEGIN { printf "%.2f\n", t * 1000 }' >> "$OUT/list-$pass.out"
        read -r n first last cursor < <(jq -r '[(.items | length), (.items[0].name // "-"),
                                               (.items[-1].name // "-"), (.next_cursor // "")] | @tsv' "$TMP/page")
        [ -z "$prev" ] || [[ "$first" > "$prev" ]] || die "page $((LIST_PAGES + 1)) of $dir starts at $first after $prev"
        prev=$last
        LIST_N=$((LIST_N + n)) LIST_PAGES=$((LIST_PAGES + 1))
        [ -n "$cursor" ] || break
    done
    t1=$(now)
    LIST_WALL=$(elapsed "$t0" "$t1")
}
shell_list() {  # shell_list NAME CMD...: CMD 3 times (its output counted by wc -l), median s
    local name=$1 times="" t
    shift
    for _ in 1 2 3; do
        t=$(timed count_lines "$@")
        times="$times $t"
    done
    FIG[$name]=$(echo "$times" | median)
}

say "1. listing $N_ENTRIES entries in pages of $PAGE, $LIST_PASSES passes (one request at a time)"
watch_start list
: > "$OUT/list-all.out"
for pass in $(seq "$LIST_PASSES"); do
    list_all many "$pass"
    [ "$LIST_N" = "$N_ENTRIES" ] || die "pass $pass listed $LIST_N entries of $N_ENTRIES"
    sum=$(awk '{ s += $1 } END { printf "%.2f", s / 1000 }' "$OUT/list-$pass.out")
    read -r _ p50 p99 max < <(ms_stats "$OUT/list-$pass.out")
    echo "  pass $pass: $LIST_N entries in $LIST_PAGES pages; $sum s in requests ($LIST_WALL s with curl" \
         "and jq); per page p50 $p50 ms, p99 $p99 ms, max $max ms; first $(head -1 "$OUT/list-$pass.out")" \
         "ms, last $(tail -1 "$OUT/list-$pass.out") ms"
    cat "$OUT/list-$pass.out" >> "$OUT/list-all.out"
    FIG[list_total]="${FIG[list_total]:-} $sum"
    FIG[list_wall]="${FIG[list_wall]:-} $LIST_WALL"
    FIG[list_first]="${FIG[list_first]:-} $(head -1 "$OUT/list-$pass.out")"
    FIG[list_last]="${FIG[list_last]:-} $(tail -1 "$OUT/list-$pass.out")"
done
FIG[list_pages]=$LIST_PAGES
read -r _ "FIG[list_p50]" "FIG[list_p99]" "FIG[list_max]" < <(ms_stats "$OUT/list-all.out")
# the small directory: one page, 50 times
: > "$OUT/list-few.out"
for _ in $(seq 50); do
    read -r code t < <(curl -s -o "$TMP/page" -w '%{http_code} %{time_total}\n' "${AUTHZ[@]}" \
                           "$FILES/few?limit=$PAGE")
    [ "$code" = 200 ] || die "few/ answered $code"
    awk -v t="$t" 'BEGIN { printf "%.2f\n", t * 1000 }' >> "$OUT/list-few.out"
done
FIG[few_n]=$(jq '.items | length' "$TMP/page")
read -r _ "FIG[few_p50]" "FIG[few_p99]" _ < <(ms_stats "$OUT/list-few.out")
watch_stop list
echo "  few/: ${FIG[few_n]} entries in one page (next_cursor $(jq -r .next_cursor "$TMP/page"));" \
     "50 requests: p50 ${FIG[few_p50]} ms, p99 ${FIG[few_p99]} ms"
shell_list ls_f ls -f "$SPACE/many"
shell_list find find "$SPACE/many" -maxdepth 1
shell_list ls_l ls -l "$SPACE/many"
shell_list few_ls_f ls -f "$SPACE/few"
shell_list few_ls_l ls -l "$SPACE/few"
echo "  baselines, median of 3 (s): many/: ls -f ${FIG[ls_f]}, find -maxdepth 1 ${FIG[find]}," \
     "ls -l ${FIG[ls_l]}; few/: ls -f ${FIG[few_ls_f]}, ls -l ${FIG[few_ls_l]}"
echo "  aidcd: VmRSS at most ${FIG[rss_list]} KiB, VmHWM ${FIG[hwm_list]} KiB; CPU ${FIG[cpu_list]} s"

# ---- 2. download ---------------------------------------------------------------------------
say "2. download of big.bin ($FILE_MIB MiB): GET to /dev/null against cat > /dev/null and cp, $ROUNDS rounds"
curl -sf "${AUTHZ[@]}" "$FILES/big.bin" | cmp - "$SPACE/big.bin" \
    || die "GET big.bin failed or its bytes differ from the file's"
echo "  check: GET answered 200 with the same bytes as big.bin (cmp); page cache warm"
watch_start download
for round in $(seq "$ROUNDS"); do
    sync
    t_cat=$(timed cat_null "$SPACE/big.bin")
    sync
    t_cp=$(timed cp "$SPACE/big.bin" "$TMP/copy.bin")
    rm -f "$TMP/copy.bin"
    sync
    read -r code bytes t_get < <(curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}\n' \
                                     "${AUTHZ[@]}" "$FILES/big.bin")
    [[ "$code" = 200 && "$bytes" = "$SIZE" ]] || die "GET big.bin answered $code with $bytes bytes"
    echo "  round $round: cat $(mbs "$SIZE" "$t_cat") MB/s ($t_cat s), cp $(mbs "$SIZE" "$t_cp") MB/s" \
         "($t_cp s), GET $(mbs "$SIZE" "$t_get") MB/s ($t_get s)"
    FIG[t_cat]="${FIG[t_cat]:-} $t_cat" FIG[t_cp]="${FIG[t_cp]:-} $t_cp" FIG[t_get]="${FIG[t_get]:-} $t_get"
done
watch_stop download
for k in cat cp get; do FIG[dl_$k]=$(mbs "$SIZE" "$(echo "${FIG[t_$k]}" | median)"); done
echo "  medians: cat ${FIG[dl_cat]} MB/s, cp ${FIG[dl_cp]} MB/s, GET ${FIG[dl_get]} MB/s;" \
     "GET/cp $(ratio "${FIG[dl_get]}" "${FIG[dl_cp]}"), GET/cat $(ratio "${FIG[dl_get]}" "${FIG[dl_cat]}");" \
     "aidcd VmRSS at most ${FIG[rss_download]} KiB, VmHWM ${FIG[hwm_download]} KiB;" \
     "CPU ${FIG[cpu_download]} s for $ROUNDS GETs"

# ---- 3. upload -------------------------------------------------------------------------------
put_whole() {  # put_whole NAME: PUT big.bin as NAME; echo curl's seconds
    local code bytes t
    read -r code bytes t < <(curl -s -o "$TMP/put" -w '%{http_code} %{size_upload} %{time_total}\n' \
        "${AUTHZ[@]}" -H 'Content-Type: application/octet-stream' -T "$SPACE/big.bin" "$FILES/$1")
    [[ "$code" = 201 && "$bytes" = "$SIZE" ]] || die "PUT $1 answered $code after $bytes bytes: $(head -c 300 "$TMP/put")"
    echo "$t"
}
put_parts() {  # put_parts NAME: big.bin as NAME in parts of PART bytes (Content-Range), each
    # read by dd and streamed by its own curl; part times (ms) into $OUT/parts.out
    local name=$1 first=0 last len code t want
    : > "$OUT/parts.out"
    while [ "$first" -lt "$SIZE" ]; do
        last=$((first + PART - 1))
        [ "$last" -lt "$SIZE" ] || last=$((SIZE - 1))
        len=$((last - first + 1))
        want=202
        [ "$last" != $((SIZE - 1)) ] || want=201
        read -r code t < <(dd if="$SPACE/big.bin" bs=1M iflag=skip_bytes,count_bytes skip="$first" \
                               count="$len" status=none \
            | curl -s -o "$TMP/put" -w '%{http_code} %{time_total}\n' "${AUTHZ[@]}" -T - \
                   -H 'Content-Type: application/octet-stream' -H 'Transfer-Encoding:' \
                   -H "Content-Length: $len" -H "Content-Range: bytes $first-$last/$SIZE" "$FILES/$name")
        [ "$code" = "$want" ] || die "part $first-$last/$SIZE of $name answered $code: $(head -c 300 "$TMP/put")"
        awk -v t="$t" 'BEGIN { printf "%.1f\n", t * 1000 }' >> "$OUT/parts.out"
        first=$((last + 1))
    done
}
delete() { expect 204 -X DELETE "${AUTHZ[@]}" "$FILES/$1"; }

NPARTS=$(( (SIZE + PART - 1) / PART ))
say "3. upload of $FILE_MIB MiB: PUT (curl -T) against cp and cp + fsync to the same disk," \
    "then in $NPARTS parts of $PART_MIB MiB, $ROUNDS rounds"
watch_start upload
for round in $(seq "$ROUNDS"); do
    sync
    t_cp=$(timed cp "$SPACE/big.bin" "$TMP/copy.bin")
    rm -f "$TMP/copy.bin"
    sync
    t_cps=$(timed cp_fsync "$SPACE/big.bin" "$TMP/copy.bin")
    rm -f "$TMP/copy.bin"
    sync
    t_put=$(put_whole up.bin)
    if [ "$round" = 1 ]; then
        cmp "$SPACE/big.bin" "$SPACE/up.bin" || die "up.bin differs from big.bin"
    fi
    delete up.bin
    sync
    t_parts=$(timed put_parts parts.bin)
    if [ "$round" = 1 ]; then
        cmp "$SPACE/big.bin" "$SPACE/parts.bin" || die "parts.bin differs from big.bin"
        [ -z "$(find "$SPACE" -maxdepth 1 -name '.aidc-upload-*')" ] || die "a partial file was left behind"
    fi
    delete parts.bin
    read -r _ pp50 _ pmax < <(ms_stats "$OUT/parts.out")
    echo "  round $round: cp $(mbs "$SIZE" "$t_cp") MB/s ($t_cp s), cp + fsync $(mbs "$SIZE" "$t_cps") MB/s" \
         "($t_cps s), PUT $(mbs "$SIZE" "$t_put") MB/s ($t_put s), in parts $(mbs "$SIZE" "$t_parts") MB/s" \
         "($t_parts s; per part p50 $pp50 ms, max $pmax ms)"
    FIG[t_ucp]="${FIG[t_ucp]:-} $t_cp" FIG[t_ucps]="${FIG[t_ucps]:-} $t_cps"
    FIG[t_put]="${FIG[t_put]:-} $t_put" FIG[t_parts]="${FIG[t_parts]:-} $t_parts"
done
watch_stop upload
for k in ucp ucps put parts; do FIG[ul_$k]=$(mbs "$SIZE" "$(echo "${FIG[t_$k]}" | median)"); done
echo "  medians: cp ${FIG[ul_ucp]} MB/s, cp + fsync ${FIG[ul_ucps]} MB/s, PUT ${FIG[ul_put]} MB/s," \
     "in parts ${FIG[ul_parts]} MB/s; PUT/cp $(ratio "${FIG[ul_put]}" "${FIG[ul_ucp]}")," \
     "PUT/(cp + fsync) $(ratio "${FIG[ul_put]}" "${FIG[ul_ucps]}");" \
     "aidcd VmRSS at most ${FIG[rss_upload]} KiB, VmHWM ${FIG[hwm_upload]} KiB;" \
     "CPU ${FIG[cpu_upload]} s for $ROUNDS PUTs and $ROUNDS uploads in parts"
FIG[rss1]=$(rss_kib "$AIDCD_PID" VmRSS)

# ---- figures -----------------------------------------------------------------------------
verdict() { awk -v x="$1" -v lim="$2" 'BEGIN { if (x == "" || x == "-") print "n/a";
    else print (x + 0 >= lim + 0) ? "met" : "NOT met" }'; }
per_gib() { awk -v c="$1" -v n="$2" -v m="$FILE_MIB" 'BEGIN { printf "%.2f", c / (n * m / 1024) }'; }
per_entry_us() { awk -v t="$1" -v n="$2" 'BEGIN { if (t == "-") print "-"; else printf "%.1f", t * 1e6 / n }'; }
L_TOTAL=$(echo "${FIG[list_total]}" | median)
R_DL=$(ratio "${FIG[dl_get]}" "${FIG[dl_cp]}")
say "figures ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); one request at a time," \
    "times of curl's time_total; MB = 10^6 bytes)"
printf '  %-58s | %s\n' "what" "figure" \
    "list $N_ENTRIES entries, pages of $PAGE: total s (median of $LIST_PASSES)" \
    "$L_TOTAL s in ${FIG[list_pages]} pages ($(per_entry_us "$L_TOTAL" "$N_ENTRIES") us/entry; with curl + jq $(echo "${FIG[list_wall]}" | median) s)" \
    "  per page p50 / p99 / max ms" "${FIG[list_p50]} / ${FIG[list_p99]} / ${FIG[list_max]}" \
    "  first page / last page ms (median)" "$(echo "${FIG[list_first]}" | median) / $(echo "${FIG[list_last]}" | median)" \
    "  baseline ls -f | wc -l / find -maxdepth 1 / ls -l, s" "${FIG[ls_f]} / ${FIG[find]} / ${FIG[ls_l]} ($(per_entry_us "${FIG[ls_l]}" "$N_ENTRIES") us/entry with ls -l)" \
    "list $N_SMALL entries, one page: p50 / p99 ms (50 requests)" "${FIG[few_p50]} / ${FIG[few_p99]}" \
    "  baseline ls -f / ls -l, ms" "$(awk -v a="${FIG[few_ls_f]}" -v b="${FIG[few_ls_l]}" 'BEGIN { printf "%.1f / %.1f", a * 1000, b * 1000 }')" \
    "download $FILE_MIB MiB: GET / cp / cat, MB/s (median of $ROUNDS)" "${FIG[dl_get]} / ${FIG[dl_cp]} / ${FIG[dl_cat]}" \
    "  GET / cp (target >= 0.8: $(verdict "$R_DL" 0.8))" "$R_DL (GET / cat $(ratio "${FIG[dl_get]}" "${FIG[dl_cat]}"))" \
    "upload $FILE_MIB MiB: PUT / cp / cp + fsync, MB/s (median of $ROUNDS)" "${FIG[ul_put]} / ${FIG[ul_ucp]} / ${FIG[ul_ucps]}" \
    "  PUT / cp, PUT / (cp + fsync)" "$(ratio "${FIG[ul_put]}" "${FIG[ul_ucp]}"), $(ratio "${FIG[ul_put]}" "${FIG[ul_ucps]}")" \
    "  resumable, $NPARTS parts of $PART_MIB MiB, MB/s (median)" "${FIG[ul_parts]} ($(ratio "${FIG[ul_parts]}" "${FIG[ul_put]}") of one PUT)" \
    "aidcd VmRSS / VmHWM MiB after start (HWM: logins' scrypt)" "$(mib "${FIG[rss0]}") / $(mib "${FIG[hwm0]}")" \
    "  during listing: VmRSS highest sample / VmHWM" "$(mib "${FIG[rss_list]}") / $(mib "${FIG[hwm_list]}")" \
    "  during downloads: VmRSS highest sample / VmHWM" "$(mib "${FIG[rss_download]}") / $(mib "${FIG[hwm_download]}")" \
    "  during uploads: VmRSS highest sample / VmHWM" "$(mib "${FIG[rss_upload]}") / $(mib "${FIG[hwm_upload]}")" \
    "  VmRSS at the end" "$(mib "${FIG[rss1]}")" \
    "aidcd CPU s: all listing / per GiB GET / per GiB uploaded" \
    "${FIG[cpu_list]} / $(per_gib "${FIG[cpu_download]}" "$ROUNDS") / $(per_gib "${FIG[cpu_upload]}" $((2 * ROUNDS)))"
[ "$HWM_RESET" = 1 ] || echo "  (VmHWM could not be reset through /proc/$AIDCD_PID/clear_refs: each is the peak since start)"
echo "  raw outputs: $OUT"
