#!/usr/bin/env bash
# failover.sh - ctest scaleout/failover: three aidcd replicas behind nginx on one PostgreSQL
# managed by Patroni (primary + synchronous streaming standby, etcd as the DCS). Two
# clients create projects through nginx without pause and record every 201; the
# primary's postmaster is killed with SIGKILL. Asserts: the standby is promoted; every
# replica answers a write again on its own port (it reconnected through the multi-host
# URL with target_session_attrs=read-write); every worker lead is held again, by exactly
# one replica and one session on the new primary; every acknowledged project exists on
# the new primary; no request crashed a replica, hung, or got anything but 201 or 503.
# Prints the time without service (the longest gap between two acknowledged writes) and
# the promotion and reconnection times.
#
# usage: failover.sh AIDCD_BINARY SOURCE_DIR      exit 77 (skipped) when not root or a
# package is missing (deploy/install-deps.sh ops); SO_KEEP=1 keeps the directory and logs.
set -u
# shellcheck disable=SC2034 # AIDCD is cluster.sh's
AIDCD=$1 ROOT=$2
# shellcheck source=cluster.sh
. "$ROOT/tests/scaleout/cluster.sh"
# one run at a time on this machine (the ports are fixed; the normal and sanitizer builds
# both register this test)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root (Patroni runs postgres as the OS user postgres)"; exit 77; }
exec 9> /tmp/aidc-scaleout.lock
flock -w 240 9 || { echo "SKIP: another scale-out run holds /tmp/aidc-scaleout.lock"; exit 77; }
why=$(so_missing)
[ -z "$why" ] || { echo "SKIP: $why"; exit 77; }

FAILS=0 W=()
pass() { echo "PASS $*"; }
bad() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
finish() {
    local w; for w in "${W[@]}"; do so_stop_pid "$w"; done
    [ "$FAILS" = 0 ] || SO_KEEP=${SO_KEEP:-1}   # keep the logs of a failure
    so_cleanup
}
trap finish EXIT
trap 'exit 1' INT TERM

t_start=$(so_ms)
so_up 3 || { bad "cluster did not start"; SO_KEEP=1; exit 1; }
P=http://127.0.0.1:$SO_PROXY
jwt=$(curl -sf -X POST -H 'Content-Type: application/json' -d '{"username":"scale","password":"scale-admin-pw"}' \
    "$P/api/v1/auth/login" | jq -r .access_token)
TOKEN=$(curl -sf -X POST -H "Authorization: Bearer $jwt" -H 'Content-Type: application/json' \
    -d '{"name":"scaleout","scopes":["admin","jobs:read","jobs:write"],"expires_in_days":1}' \
    "$P/api/v1/tokens" | jq -r .token)
[ -n "$TOKEN" ] && [ "$TOKEN" != null ] || { bad "no API token"; exit 1; }
AUTH=(-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json')
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "${AUTH[@]}" -d '{"slug":"so","name":"Scale-out"}' \
    "$P/api/v1/tenants")" = 201 ] || { bad "cannot create the tenant"; exit 1; }

# ---- leadership: each lead held by one replica (their /metrics) and one session (pg_locks)
leaders() { # "worker count" per lead, summed over the replicas' aidc_worker_leader gauges
    local i; for i in 0 1 2; do curl -s -m 2 "http://127.0.0.1:${SO_AIDC[$i]}/metrics"; done |
        awk -F'[{}"]' '/^aidc_worker_leader\{/ { n[$3] += $NF } END { for (w in n) print w, n[w] }' | sort
}
lead_locks() { # "key holders" for the lead keys (100 + lead) on node $1
    so_sql "$1" aidc "select objid, count(*) from pg_locks where locktype = 'advisory' and classid = 1634296931
        and objsubid = 2 and objid between 100 and 199 and granted group by objid order by objid" | tr '|' ' '
}
NLEADS=$(curl -s "http://127.0.0.1:${SO_AIDC[0]}/metrics" | grep -c '^aidc_worker_leader{')
one_each() { # every lead held by exactly one replica and one session on node $1
    [ "$NLEADS" -gt 0 ] && [ "$(leaders | awk '$2 == 1' | wc -l)" = "$NLEADS" ] &&
        [ "$(lead_locks "$1" | awk '$2 == 1' | wc -l)" = "$NLEADS" ]
}
L=$(so_leader)
so_until 20 one_each "$L" && pass "before: each of the $NLEADS worker leads held by one replica, one session on pg$L" ||
    bad "before: leads not held once each: $(leaders | tr '\n' ' ') / locks $(lead_locks "$L" | tr '\n' ' ')"

# ---- the writers: "start_ms end_ms http_code project_id" per POST, through nginx
writer() { # writer NAME: until $SO_DIR/stop exists
    local n=0 t0 out code id
    while [ ! -e "$SO_DIR/stop" ]; do
        n=$((n + 1)); t0=$(so_ms)
        out=$(curl -s -m 30 -w '\n%{http_code}' -X POST "${AUTH[@]}" \
            -d "{\"slug\":\"$1-$n\",\"name\":\"failover $1 $n\"}" "$P/api/v1/tenants/so/projects")
        code=${out##*$'\n'}
        id=-; [ "$code" = 201 ] && id=$(jq -r .id <<<"${out%$'\n'*}" 2>/dev/null)
        echo "$t0 $(so_ms) $code ${id:--}"
    done > "$SO_DIR/writes-$1.log"
}
for w in a b; do writer "$w" & W+=($!); done
acks() { cat "$SO_DIR"/writes-*.log 2>/dev/null | awk -v t="${1:-0}" '$3 == 201 && $1 > t' | wc -l; }
so_until 20 eval '[ "$(acks)" -ge 20 ]' || bad "the writers got no 201s before the kill"

# readers too, when wrk is here (deploy/install-deps.sh bench): 8 connections GETting a
# project through nginx for 20 s across the kill
RD=
if command -v wrk >/dev/null; then
    wrk -t1 -c8 -d20s -H "Authorization: Bearer $TOKEN" "$P/api/v1/tenants/so/projects/a-1" \
        > "$SO_DIR/reads.out" 2>&1 &
    RD=$!; W+=("$RD")
    sleep 1
fi

# ---- kill the primary's postmaster (Patroni, still alive there, hands over at once)
S=$((1 - L))
so_until 30 so_is_sync "$L" "$S" || bad "pg$S is not the synchronous standby named by Patroni"
acked_before=$(acks)
PM=$(so_postmaster "$L"); TK=$(so_ms); kill -9 "$PM"
echo "kill -9 of pg$L's postmaster (pid $PM) with $acked_before writes acknowledged"
so_until 40 so_role_is "$S" primary && TP=$(so_ms) && pass "pg$S promoted $((TP - TK)) ms after the kill" ||
    { bad "pg$S was not promoted"; patronictl -c "$SO_DIR/pg0.yml" list; exit 1; }
so_until 30 eval '[ "$(acks "$TK")" -ge 1 ]' && pass "writes acknowledged again through nginx" ||
    bad "no write acknowledged after the kill"

# every replica, asked directly, writes again: its own connections moved to the new primary
for i in 0 1 2; do
    t0=$(so_ms) ok=0
    while [ $(($(so_ms) - t0)) -lt 30000 ]; do
        c=$(curl -s -m 30 -o /dev/null -w '%{http_code}' -X POST "${AUTH[@]}" \
            -d "{\"slug\":\"direct-$i\",\"name\":\"direct $i\"}" "http://127.0.0.1:${SO_AIDC[$i]}/api/v1/tenants/so/projects")
        [ "$c" = 201 ] && { ok=1; break; }
        sleep 0.1
    done
    [ $ok = 1 ] && pass "replica $i writes again, $(($(so_ms) - TK)) ms after the kill" || bad "replica $i never wrote again"
done
so_until 30 one_each "$S" && pass "after: each lead held again by one replica, one session on pg$S, $(($(so_ms) - TK)) ms after the kill" ||
    bad "after: leads $(leaders | tr '\n' ' ') / locks on pg$S $(lead_locks "$S" | tr '\n' ' ')"
sleep 2 # writes on the new primary, before the writers stop
touch "$SO_DIR/stop"
for w in "${W[@]}"; do wait "$w"; done; W=()
[ -z "$RD" ] || echo "reads across the kill (wrk through nginx): $(awk '/requests in/ { print $1, "requests" }
    /Non-2xx/ { print "(" $5, "not 200)" } /^Requests\/sec/ { print "-", $2, "req/s" }' "$SO_DIR/reads.out" | tr '\n' ' ')"

# ---- every acknowledged write is on the new primary
cat "$SO_DIR"/writes-*.log | sort -n > "$SO_DIR/writes.log"
awk '$3 == 201 { print $4 }' "$SO_DIR/writes.log" > "$SO_DIR/acked.ids"
nack=$(wc -l < "$SO_DIR/acked.ids")
found=$(so_sql "$S" aidc "select count(*) from projects where id::text = any(string_to_array('$(paste -sd, "$SO_DIR/acked.ids")', ','))")
[ "$found" = "$nack" ] && pass "all $nack acknowledged projects exist on the new primary pg$S ($acked_before acknowledged before the kill)" ||
    bad "acknowledged $nack projects, found $found on pg$S"
others=$(awk '$3 != 201 && $3 != 503 { print $3 }' "$SO_DIR/writes.log" | sort | uniq -c | tr '\n' ' ')
[ -z "$others" ] && pass "every answer was 201 or 503 ($(awk '$3 == 503' "$SO_DIR/writes.log" | wc -l) x 503)" ||
    bad "answers other than 201/503: $others"
slowest=$(awk '{ d = $2 - $1; if (d > m) m = d } END { print m + 0 }' "$SO_DIR/writes.log")
[ "$slowest" -lt 15000 ] && pass "slowest request took $slowest ms (none hung)" || bad "a request took $slowest ms"
for i in 0 1 2; do kill -0 "${SO_AIDCD[$i]}" 2>/dev/null || bad "replica $i exited (log: $SO_DIR/aidcd$i.log)"; done
# time without service: the longest gap between two acknowledged writes (by the time their
# answer came) from the last one before the kill on
awk '$3 == 201 { print $2 }' "$SO_DIR/writes.log" | sort -n | awk -v tk="$TK" \
    '{ if (prev && $1 > tk && $1 - prev > m) m = $1 - prev; prev = $1 }
     END { printf "time without service: %d ms (longest gap between two acknowledged writes, from the kill on)\n", m }'
awk -v tk="$TK" '$3 == 201 && $1 > tk { print "first write started after the kill and acknowledged:", $2 - tk, "ms after the kill"; exit }' "$SO_DIR/writes.log"
echo "writes: $(wc -l < "$SO_DIR/writes.log") requests, $nack acknowledged, $(awk '$3 == 503' "$SO_DIR/writes.log" | wc -l) answered 503"
so_until 40 so_role_is "$L" replica && echo "old primary pg$L back as a streaming replica $(($(so_ms) - TK)) ms after the kill" ||
    echo "old primary pg$L not back as a replica within 40 s"
grep -h 'connection lost\|reconnect\|leading on this' "$SO_DIR"/aidcd*.log | cut -c1-160 | tail -5 | sed 's/^/  log: /'
echo "wall: $(( ($(so_ms) - t_start) / 1000 )) s"
echo "RESULT: $([ $FAILS = 0 ] && echo PASS || echo "FAIL ($FAILS)")"
exit $((FAILS > 0))
