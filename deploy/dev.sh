#!/usr/bin/env bash
# deploy/dev.sh - from a fresh Debian 12 checkout to a running aidc in one command:
# installs missing packages (as root), builds, starts a private PostgreSQL,
# migrates, creates the admin (random password, kept in .dev/), seeds a demo
# tenant and project, and serves the API and portal on http://127.0.0.1:8080.
# Ctrl-C stops aidcd and the private PostgreSQL.
#
# Environment (optional):
#   AIDC_LISTEN          address:port to serve on            (default 127.0.0.1:8080)
#   AIDC_DEV_DIR         state: data dir, passwords          (default ./.dev)
#   AIDC_DEV_PGDATA      PostgreSQL data directory           (default /var/tmp/aidc-dev-pg-$UID)
#   AIDC_DEV_PGPORT      PostgreSQL port on 127.0.0.1        (default 15433)
#   AIDC_DEV_KEEP_PG=1   leave PostgreSQL running on exit
#   AIDC_DEV_REGISTRY    address of the demo image registry  (default 127.0.0.1:15435; "none": no registry)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
state=${AIDC_DEV_DIR:-$root/.dev}
pgdata=${AIDC_DEV_PGDATA:-/var/tmp/aidc-dev-pg-$(id -u)}
pgport=${AIDC_DEV_PGPORT:-15433}
listen=${AIDC_LISTEN:-127.0.0.1:8080}
say() { printf 'dev: %s\n' "$*" >&2; }
die() { printf 'dev: %s\n' "$*" >&2; exit 1; }

deploy/install-deps.sh build run dev

say "building"
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" --target aidcd >"$root/build/dev-build.log" 2>&1 \
    || { tail -30 "$root/build/dev-build.log" >&2; die "build failed (log: build/dev-build.log)"; }

mkdir -p "$state"
chmod 700 "$state"
state=$(cd "$state" && pwd) # absolute: the local cluster hides it from jobs
secret() {  # a random password, created once and kept in $state/$1
    [ -s "$state/$1" ] || { head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$state/$1"; chmod 600 "$state/$1"; }
    cat "$state/$1"
}
owner_pw=$(secret pg-owner-password)
app_pw=$(secret pg-app-password)
admin_pw=$(secret admin-password)

say "starting PostgreSQL ($pgdata, port $pgport)"
pgenv=$(PGDATA_DIR=$pgdata PGPORT=$pgport AIDC_OWNER_PASSWORD=$owner_pw AIDC_APP_PASSWORD=$app_pw \
        deploy/pg-up.sh)
AIDC_DATABASE_URL=$(sed -n "s/^DATABASE_URL='\(.*\)'$/\1/p" <<<"$pgenv")
AIDC_MIGRATE_DATABASE_URL=$(sed -n "s/^DATABASE_URL_OWNER='\(.*\)'$/\1/p" <<<"$pgenv")
export AIDC_DATABASE_URL AIDC_MIGRATE_DATABASE_URL
export AIDC_DATA_DIR=${AIDC_DATA_DIR:-$state/data} AIDC_PORTAL_DIR=${AIDC_PORTAL_DIR:-$root/portal}
export AIDC_LISTEN=$listen
# the key that signs audit checkpoints (outside the database, like in production)
mkdir -p "$AIDC_DATA_DIR" && chmod 700 "$AIDC_DATA_DIR"
# the storage spaces jobs mount and the Files page shows: beside the jobs' directories,
# where the jobs' users may pass (the state directory is this user's alone)
jobs_root=/var/tmp/aidc-dev-jobs-$(id -u)
mkdir -p "$jobs_root"
[ ! -L "$jobs_root" ] && [ -O "$jobs_root" ] ||
    die "$jobs_root is not this user's own directory (a link, or made by someone else): remove it"
chmod 711 "$jobs_root"
export AIDC_STORAGE_ROOT=${AIDC_STORAGE_ROOT:-$jobs_root/storage}
export AIDC_AUDIT_KEY_FILE=${AIDC_AUDIT_KEY_FILE:-$state/audit-key.pem}
[ -f "$AIDC_AUDIT_KEY_FILE" ] || build/aidcd audit keygen "$AIDC_AUDIT_KEY_FILE" >/dev/null ||
    die "cannot create the audit signing key $AIDC_AUDIT_KEY_FILE"

aidcd_pid=
registry_dir=/var/tmp/aidc-dev-registry-$(id -u)
registry_addr=${AIDC_DEV_REGISTRY:-127.0.0.1:15435}
registry_up=0
cleanup() {
    [ -n "$aidcd_pid" ] && kill "$aidcd_pid" 2>/dev/null && wait "$aidcd_pid" 2>/dev/null
    [ "$registry_up" = 1 ] && REGISTRY_DIR=$registry_dir deploy/registry-down.sh >/dev/null 2>&1
    if [ "${AIDC_DEV_KEEP_PG:-0}" != 1 ]; then
        say "stopping PostgreSQL"
        PGDATA_DIR=$pgdata deploy/pg-down.sh >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
trap 'exit 0' INT TERM

say "migrating"
build/aidcd migrate ||
    die "migrating the dev database failed (above). A dev database made by an older checkout can
     be started afresh: remove $pgdata and run this again"
AIDC_ADMIN_PASSWORD=$admin_pw build/aidcd bootstrap --admin admin >/dev/null
# a second platform admin: sensitive operations wait for another admin's approval
AIDC_ADMIN_PASSWORD=$admin_pw build/aidcd bootstrap --admin admin2 >/dev/null

say "starting aidcd on http://$listen"
build/aidcd serve &
aidcd_pid=$!
base="http://$listen"
for _ in $(seq 100); do
    curl -fsS "$base/readyz" >/dev/null 2>&1 && break
    kill -0 "$aidcd_pid" 2>/dev/null || die "aidcd exited; see the log above"
    sleep 0.1
done
curl -fsS "$base/readyz" >/dev/null || die "aidcd did not become ready"

# Seed the demo tenant through the API (idempotent: 409 means it exists).
token=$(curl -fsS -X POST "$base/api/v1/auth/login" -H 'Content-Type: application/json' \
        -d "{\"username\":\"admin\",\"password\":\"$admin_pw\"}" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
[ -n "$token" ] || die "cannot log in as admin"
api() {  # method path body -> status
    curl -sS -o /dev/null -w '%{http_code}' -X "$1" "$base$2" -H "Authorization: Bearer $token" \
         -H 'Content-Type: application/json' ${3:+-d "$3"}
}
st=$(api POST /api/v1/tenants '{"slug":"demo","name":"Demo tenant"}')
case "$st" in 201|409) ;; *) die "seeding the demo tenant failed ($st)";; esac
api PUT /api/v1/tenants/demo/members/admin '{"role":"tenant_admin"}' >/dev/null
st=$(api POST /api/v1/tenants/demo/projects '{"slug":"getting-started","name":"Getting started"}')
case "$st" in 201|409) ;; *) die "seeding the demo project failed ($st)";; esac
# The local executor: four GPU slots of type "a100" (real GPUs if this machine
# has them - each job sees only its own device nodes - otherwise just slots), and
# room for 16 cores of jobs so a laptop with few cores can still queue work. Each
# job runs in a bubblewrap sandbox as its tenant's own uid, within its CPU and
# memory limits, with no network and none of this machine's files but /usr, /etc
# and /opt (read-only), its /job and /tmp (docs/operations.md, "The local executor").
# Its directories and image cache live under /var/tmp: a job's uid must be able to pass
# every directory above its own, which a checkout in a private home does not allow.
# /var/tmp is everybody's: a directory someone else made there first (or a link) would
# let them hand aidcd's shim a job of their own.
st=$(api POST /api/v1/clusters "{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":4},
      \"cpus\":16,\"memory_gib\":64,\"workdir\":\"$jobs_root/jobs\",\"image_cache\":\"$jobs_root/images\"}}")
case "$st" in 201|409) ;; *) die "registering the local cluster failed ($st)";; esac
# Sensitive changes need a second admin's approval (docs/approvals.md): admin asks,
# admin2 approves. approved METHOD PATH BODY -> the request's status, or the approve
# call's once it needed one (the caller checks that the change happened).
token2=$(curl -fsS -X POST "$base/api/v1/auth/login" -H 'Content-Type: application/json' \
         -d "{\"username\":\"admin2\",\"password\":\"$admin_pw\"}" |
         sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
approved() {
    local out st approval
    out=$(curl -sS -w '\n%{http_code}' -X "$1" "$base$2" \
          -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d "$3")
    st=${out##*$'\n'}
    if [ "$st" = 202 ]; then
        approval=$(sed -n 's/.*"approval":{"id":"\([^"]*\)".*/\1/p' <<<"${out%$'\n'*}")
        st=$(curl -sS -o /dev/null -w '%{http_code}' -X POST \
             "$base/api/v1/approvals/$approval/approve" -H "Authorization: Bearer $token2")
    fi
    echo "$st"
}
quota='{"resources":{"gpu:a100":{"guaranteed":2,"limit":4},"storage_gib":{"guaranteed":0,"limit":50}}}'
st=$(approved PUT /api/v1/tenants/demo/quota "$quota")
# once the approved PUT has run, the same PUT raises nothing and answers 200 at once
[ "$st" != 200 ] || st=$(api PUT /api/v1/tenants/demo/quota "$quota")
[ "$st" = 200 ] || die "setting the demo quota failed ($st)"
# Demo prices from the start of this month, so usage and invoices have something to show.
month=$(date -u +%Y-%m-01T00:00:00Z)
has_price() {
    curl -fsS "$base/api/v1/prices?resource=$1" -H "Authorization: Bearer $token" |
        grep -q '"resource"'
}
for price in 'gpu:a100 8.00' 'cpu 0.05' 'memory_gib 0.01'; do
    set -- $price
    has_price "$1" && continue
    st=$(approved POST /api/v1/prices \
         "{\"resource\":\"$1\",\"unit_price\":\"$2\",\"currency\":\"CNY\",\"effective_from\":\"$month\"}")
    has_price "$1" || die "setting the demo price of $1 failed ($st)"
done

# A demo image registry (Debian's CNCF distribution on loopback) with four small framework
# images (their catalog entries only: nothing runs in them) and one real image to run,
# library/busybox:stable, synced by aidc as public presets; not fatal: without it there
# are no images.
registry_msg="none (AIDC_DEV_REGISTRY=none)"
if [ "$registry_addr" != none ]; then
    say "starting the demo image registry ($registry_addr)"
    if REGISTRY_DIR=$registry_dir REGISTRY_ADDR=$registry_addr deploy/registry-up.sh >/dev/null &&
       REGISTRY_DIR=$registry_dir deploy/registry-seed.sh >/dev/null 2>"$state/registry-seed.log" &&
       REGISTRY_URL=http://$registry_addr tests/support/registry-push.sh push library/busybox stable \
           --busybox >/dev/null 2>>"$state/registry-seed.log"; then
        registry_up=1
        st=$(api POST /api/v1/registries "{\"name\":\"demo\",\"url\":\"http://$registry_addr\",
              \"options\":{\"public_prefixes\":[\"pytorch/\",\"tensorflow/\",\"library/\"]}}")
        case "$st" in 201|409) ;; *) die "registering the demo registry failed ($st)";; esac
        [ "$st" = 409 ] && api POST /api/v1/registries/demo/sync >/dev/null
        registry_msg="demo (http://$registry_addr; $registry_addr/library/busybox:stable runs; GET /api/v1/images)"
    else
        say "the demo image registry did not start (see above, $state/registry-seed.log): no images"
        registry_msg="not running (see $state/registry-seed.log)"
    fi
fi

cat >&2 <<MSG

  aidc is running:   $base
  portal login:      admin / $admin_pw      (kept in $state/admin-password)
  second admin:      admin2, same password  (approves what admin asks for: docs/approvals.md)
  API:               curl -X POST $base/api/v1/auth/login -H 'Content-Type: application/json' \\
                          -d '{"username":"admin","password":"$admin_pw"}'
  spec:              $base/api/v1/openapi.json
  demo tenant:       demo (project getting-started; 2 a100 guaranteed, 4 with borrowing)
  local cluster:     local (4 a100 GPU slots; each job in a sandbox of its own on this machine)
  image registry:    $registry_msg
  prices:            8.00 CNY per a100 GPU-hour, 0.05 per core-hour, 0.01 per GiB-hour
                     (usage: GET /api/v1/tenants/demo/usage; invoices: docs/billing.md)

  Submit a job:
    curl -X POST $base/api/v1/tenants/demo/jobs -H "Authorization: Bearer \$TOKEN" \\
         -H 'Content-Type: application/json' \\
         -d '{"project":"getting-started","name":"hello","gpus":1,"gpu_type":"a100",
              "command":["sh","-c","echo hello from GPU \$CUDA_VISIBLE_DEVICES; sleep 30"]}'

  Ctrl-C stops aidcd and its PostgreSQL.

MSG
wait "$aidcd_pid"
