#!/usr/bin/env bash
# lint.sh BUILD_DIR - clang-tidy (bugprone-*, cert-*; see .clang-tidy) over
# every C file of the server and of the node agent (deploy/agent), with the
# build's compile_commands.json.
set -euo pipefail
build=$1
cd "$(dirname "$0")/.."
files=$(git ls-files 'lib/*.c' 'storage/*.c' 'server/*.c' 'api/*.c' 'db/*.c' 'audit/*.c' 'sched/*.c' 'backends/*.c' \
        'billing/*.c' 'images/*.c' \
        'deploy/agent/*.c' 2>/dev/null ||
        ls lib/*.c storage/*.c server/*.c api/*.c db/*.c audit/*.c sched/*.c backends/*.c billing/*.c images/*.c \
           deploy/agent/*.c)
fail=0
for f in $files; do
    out=$(clang-tidy -p "$build" --quiet "$f" 2>/dev/null) || fail=1
    [ -n "$out" ] && { echo "$out"; fail=1; }
done
exit $fail
