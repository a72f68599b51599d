#!/usr/bin/env bash
# registry-down.sh - stop the registry started by deploy/registry-up.sh from the
# same REGISTRY_DIR (default /tmp/aidc-registry). Idempotent. tests/run.sh calls it
# with --purge at exit for the registries it started.
#   --purge (or REGISTRY_PURGE=1): also delete REGISTRY_DIR (images, config, htpasswd).
# Only the process recorded in $REGISTRY_DIR/registry.pid is signalled, and only if
# its command line is "docker-registry serve $REGISTRY_DIR/config.yml".
set -euo pipefail

REGISTRY_DIR=${REGISTRY_DIR:-/tmp/aidc-registry}
REGISTRY_PURGE=${REGISTRY_PURGE:-0}
[ "${1:-}" = --purge ] && REGISTRY_PURGE=1
REGISTRY_DIR=$(realpath -m -- "$REGISTRY_DIR")
log() { echo "registry-down: $*" >&2; }

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null &&
          tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q -- "serve $REGISTRY_DIR/config.yml"; }

pid=$(cat "$REGISTRY_DIR/registry.pid" 2>/dev/null || true)
if alive "$pid"; then
    kill "$pid"
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then log "pid $pid ignored SIGTERM for 10 s: SIGKILL"; kill -9 "$pid"; fi
    log "stopped pid $pid"
else
    log "not running"
fi
rm -f "$REGISTRY_DIR/registry.pid"
if [ "$REGISTRY_PURGE" = 1 ] && [ -d "$REGISTRY_DIR" ]; then
    # refuse to delete anything that does not look like our state dir
    [ -f "$REGISTRY_DIR/config.yml" ] || { log "$REGISTRY_DIR has no config.yml: not purging"; exit 1; }
    rm -rf -- "$REGISTRY_DIR"
    log "purged $REGISTRY_DIR"
fi
