#!/usr/bin/env bash
# tests/prometheus/prom-down.sh [DIR] - stop what prom-up.sh started from DIR.
dir=${1:-${PROM_DIR:-/tmp/aidc-test-prom}}
for f in prometheus exporter; do
    pid=$(tr -dc '0-9' 2>/dev/null <"$dir/$f.pid" || true)
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    rm -f "$dir/$f.pid"
done
exit 0
