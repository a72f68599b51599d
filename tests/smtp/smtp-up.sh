#!/usr/bin/env bash
# Start the test SMTP receiver (tests/smtp/smtp-sink.py on Debian's python3-aiosmtpd) for the
# notification tests: STARTTLS with a fresh self-signed certificate (SAN IP:127.0.0.1), AUTH
# PLAIN/LOGIN (only after STARTTLS) as user aidc with a random password, each message stored as
# one .eml file. Prints shell assignments: SMTP_URL SMTP_CA_FILE SMTP_USER SMTP_PASSWORD_FILE
# SMTP_DIR SMTP_PID. Usage: SMTP_DIR=/tmp/x SMTP_PORT=15525 tests/smtp/smtp-up.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${SMTP_DIR:-/tmp/aidc-test-smtp} port=${SMTP_PORT:-15525}
/usr/bin/python3 -c 'import aiosmtpd' 2>/dev/null || {
    echo "python3-aiosmtpd is not installed (deploy/install-deps.sh test)" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$dir/mail" && chmod 700 "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj /CN=127.0.0.1 \
    -addext 'subjectAltName=IP:127.0.0.1,DNS:localhost' \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
pw=$(openssl rand -hex 16)
(umask 077 && printf '%s\n' "$pw" >"$dir/password")
/usr/bin/python3 "$here/smtp-sink.py" --dir "$dir/mail" --port "$port" --cert "$dir/cert.pem" \
    --key "$dir/key.pem" --auth "aidc:$pw" >"$dir/sink.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    grep -q 'smtp-sink pid' "$dir/sink.log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
done
if ! grep -q 'smtp-sink pid' "$dir/sink.log"; then
    cat "$dir/sink.log" >&2
    kill "$pid" 2>/dev/null || true
    exit 1
fi
echo "SMTP_URL='smtp://127.0.0.1:$port'"
echo "SMTP_CA_FILE='$dir/cert.pem'"
echo "SMTP_USER='aidc'"
echo "SMTP_PASSWORD_FILE='$dir/password'"
echo "SMTP_DIR='$dir/mail'"
echo "SMTP_PID='$pid'"
