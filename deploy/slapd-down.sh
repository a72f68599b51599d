#!/usr/bin/env bash
# slapd-down.sh - stop the slapd started by deploy/slapd-up.sh from the same SLAPD_DIR
# (default /tmp/aidc-slapd). Idempotent. tests/run.sh calls it with --purge at exit.
#   --purge (or SLAPD_PURGE=1): also delete SLAPD_DIR (database, keys, log).
# Only the process recorded in $SLAPD_DIR/slapd.pid is signalled, and only if its
# command line is slapd's with "-f $SLAPD_DIR/slapd.conf".
set -euo pipefail

SLAPD_DIR=${SLAPD_DIR:-/tmp/aidc-slapd}
SLAPD_PURGE=${SLAPD_PURGE:-0}
[ "${1:-}" = --purge ] && SLAPD_PURGE=1
SLAPD_DIR=$(realpath -m -- "$SLAPD_DIR")
log() { echo "slapd-down: $*" >&2; }

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null &&
          tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q -- "-f $SLAPD_DIR/slapd.conf"; }

pid=$(tr -dc '0-9' 2>/dev/null < "$SLAPD_DIR/slapd.pid" || true)
if alive "$pid"; then
    kill "$pid"
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then log "pid $pid ignored SIGTERM for 10 s: SIGKILL"; kill -9 "$pid"; fi
    log "stopped pid $pid"
else
    log "not running"
fi
rm -f "$SLAPD_DIR/slapd.pid"
if [ "$SLAPD_PURGE" = 1 ] && [ -d "$SLAPD_DIR" ]; then
    # refuse to delete anything that does not look like our state dir
    [ -f "$SLAPD_DIR/slapd.conf" ] || { log "$SLAPD_DIR has no slapd.conf: not purging"; exit 1; }
    rm -rf -- "$SLAPD_DIR"
    log "purged $SLAPD_DIR"
fi
