#!/usr/bin/env bash
# slapd-up.sh - start a private OpenLDAP directory (Debian 12's slapd 2.5) for the
# LDAP login tests (lib/ldapauth.c) and local development: its own slapd.conf, mdb
# database, throw-away CA and server certificate under $SLAPD_DIR, listening on
# 127.0.0.1 only (ldap:// with StartTLS, and ldaps://). Nothing system-wide is used
# or changed; runs as root or as any user. Idempotent: a slapd already started from
# $SLAPD_DIR that answers is reused; otherwise the directory is recreated from the
# seed below (so every start begins from the same data).
#
# Environment (all optional):
#   SLAPD_DIR    state dir: slapd.conf, db/, ca.pem, slapd.log, slapd.pid, env  (default /tmp/aidc-slapd)
#   LDAP_PORT    ldap:// port (StartTLS offered)                               (default 15389)
#   LDAPS_PORT   ldaps:// port                                                 (default 15636)
#
# The seed (base dc=example,dc=org; passwords are "<uid>-pw"):
#   cn=aidc-svc,ou=services      the service account (svc-pw): reads people and groups
#   uid=alice,ou=people          groups physics-staff
#   uid=bob,ou=people            groups aidc-admins
#   uid=carol,ou=people          locked by ppolicy (pwdAccountLockedTime): binds fail with 49
#   uid=dave,ou=people           groups physics-staff, chem-staff
#   uid=eve*(ops),ou=people      a uid with filter metacharacters (escaping); group night-ops
# Anonymous users see nothing; userPassword is readable by nobody. The default
# password policy locks accounts (pwdLockout) but never after failures (pwdMaxFailure 0),
# so tests may try wrong passwords freely.
#
# Needs the Debian 12 packages of `deploy/install-deps.sh test` (slapd, ldap-utils;
# openssl). Output: KEY='value' lines (shell-sourceable) on stdout and in $SLAPD_DIR/env:
#   LDAP_URL LDAPS_URL LDAP_CA_FILE LDAP_BIND_DN LDAP_BIND_PASSWORD LDAP_BASE
#   LDAP_USER_BASE LDAP_GROUP_BASE LDAP_ADMIN_DN LDAP_ADMIN_PASSWORD SLAPD_DIR SLAPD_PID SLAPD_LOG
# slapd-down.sh (next to this script) stops it. tests/run.sh starts one per test run.
set -euo pipefail

SLAPD_DIR=${SLAPD_DIR:-/tmp/aidc-slapd}
LDAP_PORT=${LDAP_PORT:-15389}
LDAPS_PORT=${LDAPS_PORT:-15636}

die() { echo "slapd-up: $*" >&2; exit 1; }
log() { echo "slapd-up: $*" >&2; }

for b in slapd slapadd slappasswd ldapwhoami openssl; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] ||
        die "$b not found (deploy/install-deps.sh test: slapd ldap-utils)"
done
PATH=$PATH:/usr/sbin
case "$LDAP_PORT$LDAPS_PORT" in *[!0-9]*|'') die "LDAP_PORT and LDAPS_PORT must be numbers";; esac
SLAPD_DIR=$(realpath -m -- "$SLAPD_DIR")
case "$SLAPD_DIR" in *[[:space:]\'\"\\]*) die "SLAPD_DIR must not contain spaces, quotes or backslashes";; esac

BASE=dc=example,dc=org
URL=ldap://127.0.0.1:$LDAP_PORT
LDAPS_URL=ldaps://127.0.0.1:$LDAPS_PORT
SVC_DN=cn=aidc-svc,ou=services,$BASE SVC_PW=svc-pw
ADMIN_DN=cn=admin,$BASE ADMIN_PW=admin-pw
# the tools read neither ~/.ldaprc nor /etc/ldap/ldap.conf nor LDAP* variables
export LDAPNOINIT=1

emit() {
    {
        echo "LDAP_URL='$URL'"
        echo "LDAPS_URL='$LDAPS_URL'"
        echo "LDAP_CA_FILE='$SLAPD_DIR/ca.pem'"
        echo "LDAP_BIND_DN='$SVC_DN'"
        echo "LDAP_BIND_PASSWORD='$SVC_PW'"
        echo "LDAP_BASE='$BASE'"
        echo "LDAP_USER_BASE='ou=people,$BASE'"
        echo "LDAP_GROUP_BASE='ou=groups,$BASE'"
        echo "LDAP_ADMIN_DN='$ADMIN_DN'"
        echo "LDAP_ADMIN_PASSWORD='$ADMIN_PW'"
        echo "SLAPD_DIR='$SLAPD_DIR'"
        echo "SLAPD_PID='$1'"
        echo "SLAPD_LOG='$SLAPD_DIR/slapd.log'"
    } | tee "$SLAPD_DIR/env"
}
answers() { timeout 5 ldapwhoami -x -o nettimeout=2 -H "$URL" -D "$SVC_DN" -w "$SVC_PW" >/dev/null 2>&1; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null &&
          tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q -- "-f $SLAPD_DIR/slapd.conf"; }

# ---- 1. reuse one started from this dir, on these ports ---------------------------
pid=$(tr -dc '0-9' 2>/dev/null < "$SLAPD_DIR/slapd.pid" || true)
if alive "$pid"; then
    if grep -q -- "$URL/ $LDAPS_URL/" "/proc/$pid/cmdline" 2>/dev/null && answers; then
        log "already running (pid $pid)"
        emit "$pid"
        exit 0
    fi
    log "pid $pid runs other ports or does not answer: restarting it"
    SLAPD_DIR=$SLAPD_DIR "$(dirname "${BASH_SOURCE[0]}")/slapd-down.sh" 2>/dev/null
fi
if [ -d "$SLAPD_DIR" ] && [ -n "$(ls -A "$SLAPD_DIR")" ]; then
    # refuse to wipe anything that does not look like our state dir
    [ -f "$SLAPD_DIR/slapd.conf" ] || die "$SLAPD_DIR is not empty and has no slapd.conf: not using it"
    rm -rf -- "$SLAPD_DIR"
fi
answers && die "$URL already answers (another directory): pick another LDAP_PORT"
mkdir -p "$SLAPD_DIR/db"
chmod 700 "$SLAPD_DIR"
cd "$SLAPD_DIR"

# ---- 2. a throw-away CA and a server certificate for 127.0.0.1 and localhost -------
ossl() { openssl "$@" 2>>"$SLAPD_DIR/openssl.log" || die "openssl $1 failed ($SLAPD_DIR/openssl.log)"; }
ossl req -x509 -newkey rsa:2048 -nodes -days 7 -subj /CN=aidc-test-ldap-ca -keyout ca.key -out ca.pem
ossl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
ossl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 7 -out server.pem \
    -extfile server.ext
chmod 600 ca.key server.key
chmod 644 ca.pem

# ---- 3. slapd.conf: mdb, ppolicy, TLS; the service account reads, nobody else ------
h() { slappasswd -s "$1"; }
cat > slapd.conf <<EOF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload ppolicy
pidfile $SLAPD_DIR/slapd.pid
argsfile $SLAPD_DIR/slapd.args
TLSCACertificateFile $SLAPD_DIR/ca.pem
TLSCertificateFile $SLAPD_DIR/server.pem
TLSCertificateKeyFile $SLAPD_DIR/server.key
database mdb
maxsize 10485760
suffix "$BASE"
rootdn "$ADMIN_DN"
rootpw $(h "$ADMIN_PW")
directory $SLAPD_DIR/db
index objectClass,uid,member eq
overlay ppolicy
ppolicy_default "cn=default,ou=policies,$BASE"
ppolicy_use_lockout
access to attrs=userPassword by self =xw by anonymous auth by * none
access to * by dn.exact="$SVC_DN" read by self read by * none
EOF

# ---- 4. the seed, loaded offline ----------------------------------------------------
person() { # uid given-name mail-local-part
    printf 'dn: uid=%s,ou=people,%s\nobjectClass: inetOrgPerson\nuid: %s\ncn: %s Example\n' \
        "$1" "$BASE" "$1" "$2"
    printf 'sn: Example\ngivenName: %s\nmail: %s@example.org\nuserPassword: %s\n' \
        "$2" "$3" "$(h "$1-pw")"
    # carol: ppolicy's "locked by an administrator" (needs pwdLockout in the policy)
    [ "$1" != carol ] || printf 'pwdAccountLockedTime: 000001010000Z\n'
    printf '\n'
}
group() { # cn member-uid...
    printf 'dn: cn=%s,ou=groups,%s\nobjectClass: groupOfNames\ncn: %s\n' "$1" "$BASE" "$1"
    local u
    shift
    for u in "$@"; do printf 'member: uid=%s,ou=people,%s\n' "$u" "$BASE"; done
    printf '\n'
}
{
    printf 'dn: %s\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example Org\n\n' "$BASE"
    for ou in people groups services policies; do
        printf 'dn: ou=%s,%s\nobjectClass: organizationalUnit\nou: %s\n\n' "$ou" "$BASE" "$ou"
    done
    printf 'dn: cn=default,ou=policies,%s\nobjectClass: device\nobjectClass: pwdPolicy\ncn: default\n' "$BASE"
    printf 'pwdAttribute: userPassword\npwdLockout: TRUE\npwdMaxFailure: 0\n\n'
    printf 'dn: %s\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\n' "$SVC_DN"
    printf 'cn: aidc-svc\nuserPassword: %s\n\n' "$(h "$SVC_PW")"
    person alice Alice alice
    person bob Bob bob
    person carol Carol carol
    person dave Dave dave
    person 'eve*(ops)' Eve eve
    group physics-staff alice dave
    group aidc-admins bob
    group chem-staff dave
    group night-ops 'eve*(ops)'
} > seed.ldif
slapadd -q -f slapd.conf -l seed.ldif 2>slapadd.log || { cat slapadd.log >&2; die "slapadd failed"; }

# ---- 5. start; -d stats keeps it in the foreground (so $! is slapd) and logs every
#         BIND/SRCH/RESULT to slapd.log; setsid: it outlives the calling shell --------
: > slapd.log
setsid slapd -f "$SLAPD_DIR/slapd.conf" -h "$URL/ $LDAPS_URL/" -d stats \
    >>slapd.log 2>&1 </dev/null &
pid=$!
for i in $(seq 100); do
    answers && break
    kill -0 "$pid" 2>/dev/null || { tail -20 slapd.log >&2; die "slapd exited"; }
    [ "$i" = 100 ] && { tail -20 slapd.log >&2; kill "$pid"; die "no answer on $URL"; }
    sleep 0.05
done
log "started pid $pid on $URL and $LDAPS_URL, log $SLAPD_DIR/slapd.log"
emit "$pid"
