#!/usr/bin/env bash
# run-e2e.sh BUILD_DIR [playwright args...] - the portal's browser tests, as ctest runs
# them (test portal/e2e): installs the pinned npm packages when needed, then
# `playwright test` over specs/ against a world that global-setup.js starts
# (BUILD_DIR/tests/portal_world: a fresh database and aidcd serving the checkout's
# portal/). Screenshots and failure artifacts go to AIDC_PORTAL_OUT (default
# BUILD_DIR/portal-results; ctest's halves: BUILD_DIR/portal-results/e2e-1 and e2e-2).
#
# Exits 77 (ctest: skipped) only without a test PostgreSQL (AIDC_TEST_APP_URL, set by
# tests/run.sh); a missing browser or node is a failure, not a skip: install them with
# deploy/install-deps.sh portal. Extra arguments go to playwright, e.g.
#   tests/portal/run-e2e.sh build specs/smoke.spec.js -g 'login'
set -euo pipefail
build=$(cd "${1:?usage: run-e2e.sh BUILD_DIR [playwright args]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ -z "${AIDC_TEST_APP_URL:-}" ]; then
    echo "skipped: AIDC_TEST_APP_URL not set (run through tests/run.sh)"
    exit 77
fi
chromium=${CHROMIUM_PATH:-/usr/bin/chromium}
missing=
[ -x "$chromium" ] || missing="$missing $chromium"
command -v node >/dev/null || missing="$missing node"
command -v npm >/dev/null || missing="$missing npm"
if [ -n "$missing" ]; then
    echo "run-e2e: missing:$missing (install with: deploy/install-deps.sh portal)" >&2
    exit 1
fi

cd "$here"
# npm ci when no install finished since the lock last changed (a version bump); no
# browser download: the tests drive Debian's chromium. ctest starts both halves at
# once: the lock on package-lock.json makes the second wait for the first's install
# (npm ci makes node_modules at its start, so its presence proves nothing), and the
# stamp is written only after npm ci succeeded.
stamp=node_modules/.aidc-installed
exec 9<package-lock.json
flock 9
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
    echo "run-e2e: npm ci in $here"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefer-offline --no-audit --no-fund
    touch "$stamp"
fi
flock -u 9
exec 9<&-

export AIDC_BUILD_DIR=$build
export AIDC_PORTAL_OUT=${AIDC_PORTAL_OUT:-$build/portal-results}
export AIDC_PORTAL_DIR=${AIDC_PORTAL_DIR:-$root/portal}
export AIDC_PORTAL_WORLD=${AIDC_PORTAL_WORLD:-$build/tests/portal_world}
exec npx --no-install playwright test "$@"
