#!/usr/bin/env bash
# scaleout.sh - read-path throughput with 1, 2 and 3 aidcd replicas behind nginx, on the
# Patroni cluster of tests/scaleout (primary + synchronous standby; the reads go to the
# primary). One authenticated GET (a project, by API token) with wrk through nginx;
# the baseline, measured in the same run, is one replica behind the same nginx (and, for
# the proxy's own cost, that replica asked directly; and one replica with the threads of
# all three, to tell the replicas' gain from the threads'). Rounds alternate the set-ups so a
# load change on the machine falls on all of them. Prints req/s, latency and ratios to
# the baseline, with the load average. A benchmark, not a test: it fails only when
# something does not start.
#
# usage: tests/bench/scaleout.sh [AIDCD_BINARY]     (root; deploy/install-deps.sh ops bench)
#   BENCH_DURATION seconds per measurement (default 8)   BENCH_ROUNDS (default 2)
#   BENCH_CONNECTIONS wrk connections (default 32)        BENCH_THREADS aidcd threads (default 2)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
AIDCD=$(realpath "${1:-$ROOT/build/aidcd}")
DURATION=${BENCH_DURATION:-8} ROUNDS=${BENCH_ROUNDS:-2} CONNS=${BENCH_CONNECTIONS:-32}
THREADS=${BENCH_THREADS:-2}
# shellcheck source=../scaleout/cluster.sh
. "$ROOT/tests/scaleout/cluster.sh"
die() { echo "bench: $*" >&2; exit 1; }
command -v wrk >/dev/null || die "wrk not found (deploy/install-deps.sh bench)"
[ -x "$AIDCD" ] || die "no aidcd at $AIDCD (build first)"
why=$(so_missing); [ -z "$why" ] || die "$why"
exec 9> /tmp/aidc-scaleout.lock
flock -w 240 9 || die "another scale-out run holds /tmp/aidc-scaleout.lock"
trap so_cleanup EXIT
trap 'exit 1' INT TERM

# so_up starts the replicas with 2 threads; the bench's count, if another, by restarting them
so_up 3 || { SO_KEEP=1; die "cluster did not start"; }
if [ "$THREADS" != 2 ]; then
    for i in 0 1 2; do so_stop_pid "${SO_AIDCD[$i]}"; so_start_aidcd "$i" "$THREADS" || die "aidcd $i"; done
fi
P=http://127.0.0.1:$SO_PROXY
jwt=$(curl -sf -X POST -H 'Content-Type: application/json' -d '{"username":"scale","password":"scale-admin-pw"}' \
    "$P/api/v1/auth/login" | jq -r .access_token)
TOKEN=$(curl -sf -X POST -H "Authorization: Bearer $jwt" -H 'Content-Type: application/json' \
    -d '{"name":"bench","scopes":["admin","jobs:read"],"expires_in_days":1}' "$P/api/v1/tokens" | jq -r .token)
AUTH=(-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json')
curl -sf -o /dev/null -X POST "${AUTH[@]}" -d '{"slug":"so","name":"Scale-out"}' "$P/api/v1/tenants" || die "tenant"
curl -sf -o /dev/null -X POST "${AUTH[@]}" -d '{"slug":"p1","name":"Bench project"}' "$P/api/v1/tenants/so/projects" || die "project"
PATH_GET=/api/v1/tenants/so/projects/p1
[ "$(so_code "$P$PATH_GET")" = 401 ] || die "the GET must need the token"

declare -A RPS P50 P99
measure() { # measure KEY BASE_URL
    local out; out=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency -H "Authorization: Bearer $TOKEN" "$2$PATH_GET")
    local rps non2xx
    rps=$(awk '/^Requests\/sec:/ { printf "%d", $2 }' <<<"$out")
    non2xx=$(awk '/Non-2xx/ { print $5 }' <<<"$out")
    [ -z "$non2xx" ] || die "$1: $non2xx non-2xx answers"
    RPS[$1]="${RPS[$1]:-} $rps"
    P50[$1]="${P50[$1]:-} $(awk '$1 == "50%" { print $2 }' <<<"$out")"
    P99[$1]="${P99[$1]:-} $(awk '$1 == "99%" { print $2 }' <<<"$out")"
    echo "  round $r $1: $rps req/s (load $(cut -d' ' -f1 /proc/loadavg))"
}
echo "== scale-out read path: GET $PATH_GET by API token, wrk -t2 -c$CONNS -d${DURATION}s, $ROUNDS rounds"
echo "   $(nproc) CPUs, aidcd $THREADS threads per replica, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
    measure direct1 "http://127.0.0.1:${SO_AIDC[0]}"
    for n in 1 2 3; do
        so_start_nginx "$n" || die "nginx with $n replicas"
        curl -sf -o /dev/null "${AUTH[@]}" "$P$PATH_GET" || die "GET through nginx"
        measure "nginx$n" "$P"
    done
    # one replica with the threads of all three: is a gain the replicas' or the threads'?
    so_stop_pid "${SO_AIDCD[0]}"; so_start_aidcd 0 $((THREADS * 3)) || die "aidcd 0 with $((THREADS * 3)) threads"
    so_start_nginx 1 || die "nginx with 1 replica"
    measure wide1 "$P"
    so_stop_pid "${SO_AIDCD[0]}"; so_start_aidcd 0 "$THREADS" || die "aidcd 0"
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
base=$(median <<<"${RPS[nginx1]}")
echo "== results ($(date -u +%Y-%m-%dT%H:%MZ), load after: $(cut -d' ' -f1-3 /proc/loadavg)); median of $ROUNDS rounds"
printf '  %-28s %10s %8s %10s %10s\n' set-up req/s ratio "p50" "p99"
for k in direct1 nginx1 nginx2 nginx3 wide1; do
    m=$(median <<<"${RPS[$k]}")
    case $k in
        direct1) label="1 replica, no proxy" ;;
        wide1) label="1 replica x$((THREADS * 3)) thr, nginx" ;;
        *) label="${k#nginx} replica(s) behind nginx" ;;
    esac
    printf '  %-28s %10s %8s %10s %10s   (rounds:%s)\n' "$label" "$m" \
        "$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.2f", b ? a / b : 0 }')" \
        "$(tr ' ' '\n' <<<"${P50[$k]}" | grep . | tail -1)" "$(tr ' ' '\n' <<<"${P99[$k]}" | grep . | tail -1)" "${RPS[$k]}"
done
echo "  ratio: to 1 replica behind nginx, measured in this run (p50/p99: the last round)"
