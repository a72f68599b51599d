#!/usr/bin/env bash
# selftest.sh LOGS_CLEAN - the leak finder itself (ctest secrets/logs_clean_selftest):
# on a temporary record and log tree, a clean tree passes, and a secret planted in a
# log - as is, percent-encoded, JSON-escaped, inside a Basic credential's base64, a
# binary key as hex or base64url - fails naming the file and line, with the secret
# masked. Runs in well under a second.
set -uo pipefail
bin=${1:?usage: selftest.sh LOGS_CLEAN}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

jwt='eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg'
pw='p@ss w/rd:"x1"'
key_hex=00ff10203040506070809aabbccddeeff0112233
printf 't %s\nt %s\nx %s\nt short\n' "$jwt" "$pw" "$key_hex" >"$tmp/secrets.txt"

mkdir -p "$tmp/logs/a"
clean='{"ts":"2026-01-01T00:00:00.000Z","level":"info","msg":"request","path":"/api/v1/me"}'
printf '%s\n%s\n' "$clean" "$clean" >"$tmp/logs/a/aidcd.log"

# A clean tree passes; the short secret (under 8 bytes) is not looked for.
echo 'short words are no secret' >>"$tmp/logs/a/aidcd.log"
out=$("$bin" "$tmp/secrets.txt" "$tmp/logs") || fail "a clean tree failed: $out"
grep -q 'none found' <<<"$out" || fail "no 'none found' for a clean tree: $out"

# Nothing recorded or no log: passes, saying so.
out=$("$bin" "$tmp/none.txt" "$tmp/logs") || fail "no record failed: $out"
grep -q 'nothing to check' <<<"$out" || fail "no record: $out"
out=$("$bin" "$tmp/secrets.txt" "$tmp/nologs") || fail "no logs failed: $out"
grep -q 'nothing to check' <<<"$out" || fail "no logs: $out"

# plant NAME TEXT: TEXT on line 3 of a log must fail, reported as file:3 and masked
plant() {
    local name=$1 text=$2
    rm -rf "$tmp/logs/b"
    mkdir -p "$tmp/logs/b"
    printf '%s\n%s\n%s\n' "$clean" "$clean" "{\"msg\":\"x $text y\"}" >"$tmp/logs/b/x.out"
    if out=$("$bin" "$tmp/secrets.txt" "$tmp/logs"); then
        fail "$name: a planted secret passed"
        return
    fi
    grep -q "LEAK $tmp/logs/b/x.out:3: " <<<"$out" || fail "$name: no file:line in: $out"
    grep -qF -- "$text" <<<"$out" && fail "$name: the report shows the secret: $out"
    grep -qF -- "$jwt" <<<"$out" && fail "$name: the report shows the JWT: $out"
    return 0
}
plant "JWT as is" "Bearer $jwt"
plant "JWT in a URL" "https://h/cb?token=$jwt&x=1"
plant "password percent-encoded" "password=p%40ss%20w%2Frd%3A%22x1%22"
plant "password percent-encoded, lower case" "p%40ss%20w%2frd%3a%22x1%22"
plant "password JSON-escaped" 'pw: p@ss w\/rd:\"x1\"'
plant "password JSON-escaped, / as is" 'pw: p@ss w/rd:\"x1\"'
plant "password in a Basic credential" "Basic $(printf 'user:%s' "$pw" | base64 -w0)"
plant "password base64 at offset 1" "$(printf 'ab%s' "$pw" | base64 -w0)"
plant "key as hex" "key=$key_hex"
plant "key as HEX" "key=$(tr a-f A-F <<<"$key_hex")"
plant "key as base64url" "$(xxd -r -p <<<"$key_hex" | base64 -w0 | tr '+/' '-_' | tr -d =)"

if [ "$fails" -ne 0 ]; then
    echo "$fails failures"
    exit 1
fi
echo "logs_clean self-test: all cases pass"
