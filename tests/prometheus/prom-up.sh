#!/usr/bin/env bash
# tests/prometheus/prom-up.sh - a private Prometheus (Debian's /usr/bin/prometheus)
# scraping tests/prometheus/dcgm_exporter.py every second, for the efficiency tests.
# Both run in the background from DIR; prints the variables the tests read:
#   PROMETHEUS_URL=http://127.0.0.1:PORT  DCGM_DIR=<the exporter's directory>
# and exits 1 (saying why) when either does not come up. Stop with prom-down.sh.
# Environment: PROM_DIR (/tmp/aidc-test-prom), PROM_PORT (15590), EXPORTER_PORT (PROM_PORT+1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${PROM_DIR:-/tmp/aidc-test-prom}
port=${PROM_PORT:-15590}
eport=${EXPORTER_PORT:-$((port + 1))}
prom=$(command -v prometheus || echo /usr/bin/prometheus)
[ -x "$prom" ] || { echo "prometheus is not installed (deploy/install-deps.sh test)" >&2; exit 1; }
"$here/prom-down.sh" "$dir" >/dev/null 2>&1 || true
rm -rf "$dir" && mkdir -p "$dir/dcgm" "$dir/data"
chmod 1777 "$dir/dcgm" # tests running as any user write their own files there
cat >"$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: dcgm
    static_configs:
      - targets: ['127.0.0.1:$eport']
YML
/usr/bin/python3 "$here/dcgm_exporter.py" "$eport" "$dir/dcgm" >"$dir/exporter.log" 2>&1 &
echo $! >"$dir/exporter.pid"
"$prom" --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
    --storage.tsdb.retention.time=2h --web.listen-address="127.0.0.1:$port" \
    >"$dir/prometheus.log" 2>&1 &
echo $! >"$dir/prometheus.pid"
# ready when both answer - and both are ours: a port someone else holds answers too
# (while our process dies of EADDRINUSE), so the exporter must serve our marker and
# Prometheus must name our data directory
token=$$-$RANDOM
echo "# aidc test exporter $token" >"$dir/dcgm/00-marker.prom"
for _ in $(seq 1 100); do
    if curl -fsS "http://127.0.0.1:$port/api/v1/status/flags" 2>/dev/null | grep -qF "\"$dir/data\"" &&
       curl -fsS "http://127.0.0.1:$eport/metrics" 2>/dev/null | grep -qF "$token"; then
        echo "PROMETHEUS_URL=http://127.0.0.1:$port"
        echo "DCGM_DIR=$dir/dcgm"
        exit 0
    fi
    sleep 0.1
done
tail -n 5 "$dir/prometheus.log" "$dir/exporter.log" >&2
echo "Prometheus or the exporter did not come up (logs in $dir)" >&2
"$here/prom-down.sh" "$dir" || true
exit 1
