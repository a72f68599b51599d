#!/usr/bin/env bash
# tests/run.sh - the whole test suite, from a fresh Debian 12 machine:
# installs what is missing, starts a private PostgreSQL, (as root) a private
# Slurm, two seeded container image registries and an LDAP directory, builds aidc twice (warnings
# as errors; then with AddressSanitizer + UndefinedBehaviorSanitizer), runs
# every test of both builds through ctest (the portal's browser tests too:
# tests/portal, Playwright on Debian's chromium; the operations tests drive
# Debian's nginx, PgBouncer, a streaming replica, promtool and systemd-analyze,
# and tests/scaleout a Patroni cluster with etcd that it starts and stops itself;
# interactive sessions run Debian's jupyter-notebook in the local executor's
# sandbox, with slirp4netns), and stops what it started.
#
# Environment (optional):
#   AIDC_TEST_PGPORT     port of the test PostgreSQL   (default 15434)
#   AIDC_TEST_PGDATA     its data directory            (default /tmp/aidc-test-pg)
#   AIDC_TEST_SLURM_DIR  directory of the test Slurm   (default /tmp/aidc-slurm)
#   AIDC_TEST_SKIP_SLURM 1 = no Slurm (its tests skip)
#   AIDC_TEST_SKIP_REGISTRY 1 = no image registries (their tests skip)
#   AIDC_TEST_SKIP_OIDC  1 = no OpenID provider (the single sign-on tests skip)
#   AIDC_TEST_SKIP_LDAP  1 = no LDAP directory (its tests skip)
#   AIDC_TEST_SKIP_SMTP  1 = no SMTP receiver (the e-mail notification tests skip)
#   AIDC_TEST_JOBS       parallel ctest jobs           (default 3)
#   AIDC_TEST_SKIP_ASAN  1 = only the normal build (quicker local runs)
#   AIDC_TEST_SKIP_FUZZ  1 = no fuzz build (tests/fuzz)
#   CTEST_ARGS           extra arguments for ctest (e.g. "-R http/")
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
say() { printf '\n== %s\n' "$*"; }

say "dependencies"
# "run" and "test" bring what sessions need: bubblewrap, slirp4netns, jupyter-notebook,
# python3-websocket (with --no-install-recommends, as everything here)
deploy/install-deps.sh build run test portal ops

# A real kube-apiserver for the Kubernetes backend's tests, built from Debian's source
# package (deploy/k8s-build.sh: ~8-10 minutes once per machine, kept in $k8s_bin). The
# build runs in the background while the other services start and aidc builds.
k8s_bin=${AIDC_TEST_K8S_BIN:-/tmp/aidc-k8s-bin}
k8s_dir=/tmp/aidc-test-k8s
k8s_skip= k8s_build_pid=
unset AIDC_TEST_K8S_URL AIDC_TEST_K8S_TOKEN AIDC_TEST_K8S_CA AIDC_TEST_K8S_DIR AIDC_TEST_K8S_ETCD_PORT
if [ "${AIDC_TEST_SKIP_K8S:-0}" = 1 ]; then
    k8s_skip="AIDC_TEST_SKIP_K8S=1"
elif [ "$(id -u)" -ne 0 ]; then
    k8s_skip="not root (deploy/k8s-build.sh installs Go and etcd with apt)"
else
    mkdir -p "$root/build"
    K8S_BIN_DIR=$k8s_bin deploy/k8s-build.sh >"$root/build/k8s-build.log" 2>&1 &
    k8s_build_pid=$!
fi

# below the ephemeral range (32768-60999): no client socket can hold it
port=${AIDC_TEST_PGPORT:-15434}
pgdata=${AIDC_TEST_PGDATA:-/tmp/aidc-test-pg}
# 3 on the 2 CPUs CI has: the tests wait on timers, children and the network a good
# part of the time (the sanitizer build's tests: 898 s at 3, ~1,080 s at 2, all passed)
jobs=${AIDC_TEST_JOBS:-3}

say "PostgreSQL on 127.0.0.1:$port ($pgdata)"
was_running=0
[ -f "$pgdata/postmaster.pid" ] && kill -0 "$(head -1 "$pgdata/postmaster.pid")" 2>/dev/null && was_running=1
# without fsync: a 10,000-task array's submit (~45 MB of WAL) waited over a minute on
# a disk the other tests kept busy; what the tests check does not need durability
env_out=$(PGDATA_DIR=$pgdata PGPORT=$port PG_NO_FSYNC=1 deploy/pg-up.sh)
stop_pg() {
    if [ "$was_running" = 0 ]; then
        say "stopping the test PostgreSQL"
        PGDATA_DIR=$pgdata deploy/pg-down.sh || true
    fi
}
trap stop_pg EXIT
app_url=$(sed -n "s/^DATABASE_URL='\(.*\)'$/\1/p" <<<"$env_out")
owner_url=$(sed -n "s/^DATABASE_URL_OWNER='\(.*\)'$/\1/p" <<<"$env_out")
super_url=$(sed -n "s/^DATABASE_URL_ADMIN='\(.*\)'$/\1/p" <<<"$env_out")
export AIDC_TEST_APP_URL=$app_url AIDC_TEST_OWNER_URL=$owner_url AIDC_TEST_SUPERUSER_URL=$super_url
export AIDC_TEST_PGDATA_BASE=/tmp

# Slurm (deploy/slurm-up.sh) for the Slurm backend's tests. They skip without
# AIDC_TEST_SLURM_URL, so where Slurm cannot start we say why and go on.
slurm_dir=${AIDC_TEST_SLURM_DIR:-/tmp/aidc-slurm}
unset AIDC_TEST_SLURM_URL AIDC_TEST_SLURM_USER AIDC_TEST_SLURM_JWT AIDC_TEST_SLURM_JWT_KEY AIDC_TEST_SLURM_DIR
slurm_was_running=1   # until run.sh starts it, there is nothing of ours to stop
stop_slurm() {
    if [ "$slurm_was_running" = 0 ]; then
        say "stopping the test Slurm"
        SLURM_DIR=$slurm_dir deploy/slurm-down.sh --quiet || true
    fi
}
trap 'stop_slurm; stop_pg' EXIT
slurm_skip=
if [ "${AIDC_TEST_SKIP_SLURM:-0}" = 1 ]; then
    slurm_skip="AIDC_TEST_SKIP_SLURM=1"
elif [ "$(id -u)" -ne 0 ]; then
    slurm_skip="not root (deploy/slurm-up.sh starts its daemons as root)"
elif ! command -v slurmctld >/dev/null || ! command -v slurmrestd >/dev/null || ! command -v munged >/dev/null; then
    slurm_skip="Slurm is not installed (deploy/install-deps.sh test)"
fi
if [ -n "$slurm_skip" ]; then
    say "Slurm: not started, its tests skip: $slurm_skip"
else
    say "Slurm ($slurm_dir)"
    # running already (someone's cluster): use it, leave it running at exit
    slurm_was_running=0
    ctld=$(tr -dc '0-9' 2>/dev/null <"$slurm_dir/run/slurmctld.pid" || true)
    [ -n "$ctld" ] && [ "$(cat "/proc/$ctld/comm" 2>/dev/null)" = slurmctld ] && slurm_was_running=1
    if slurm_env=$(SLURM_DIR=$slurm_dir deploy/slurm-up.sh); then
        slurm_var() { sed -n "s/^export $1='\(.*\)'$/\1/p" <<<"$slurm_env"; }
        AIDC_TEST_SLURM_URL=$(slurm_var SLURMRESTD_URL)
        AIDC_TEST_SLURM_USER=$(slurm_var SLURM_USER_NAME)
        AIDC_TEST_SLURM_JWT=$(slurm_var SLURM_JWT)
        AIDC_TEST_SLURM_DIR=$(slurm_var SLURM_DIR)
        AIDC_TEST_SLURM_JWT_KEY=$AIDC_TEST_SLURM_DIR/etc/jwt_hs256.key
        export AIDC_TEST_SLURM_URL AIDC_TEST_SLURM_USER AIDC_TEST_SLURM_JWT AIDC_TEST_SLURM_DIR AIDC_TEST_SLURM_JWT_KEY
        echo "slurmrestd at $AIDC_TEST_SLURM_URL as $AIDC_TEST_SLURM_USER"
    else
        echo "Slurm did not come up (above; logs in $slurm_dir/log): its tests skip" >&2
        stop_slurm   # what slurm-up.sh started before it failed
        slurm_was_running=1
    fi
fi

# Container image registries (deploy/registry-up.sh) for the image sync tests:
# an anonymous one and one with HTTP basic auth, each purged first and seeded
# with deploy/registry-seed.sh, so every run starts from the seed (tests push and
# delete images with tests/support/registry-push.sh). The tests skip without
# AIDC_TEST_REGISTRY_URL (anonymous) or AIDC_TEST_REGISTRY_AUTH_URL (basic auth),
# so where a registry cannot start we say why and go on.
registry_dir=/tmp/aidc-test-registry           registry_addr=127.0.0.1:15500
registry_auth_dir=/tmp/aidc-test-registry-auth registry_auth_addr=127.0.0.1:15501
unset AIDC_TEST_REGISTRY_URL AIDC_TEST_REGISTRY_AUTH_URL AIDC_TEST_REGISTRY_USER AIDC_TEST_REGISTRY_PASSWORD
registry_stop=()   # the registries run.sh started: stopped (and purged) at exit
stop_registries() {
    [ ${#registry_stop[@]} -gt 0 ] || return 0
    say "stopping the test registries"
    local d
    for d in "${registry_stop[@]}"; do REGISTRY_DIR=$d deploy/registry-down.sh --purge || true; done
}
trap 'stop_registries; stop_slurm; stop_pg' EXIT
reg_var() { sed -n "s/^$1='\(.*\)'$/\1/p" <<<"$2"; }  # NAME ENV_TEXT
# registry_ours DIR: unless a registry already runs from DIR (someone's: it is
# purged and restarted all the same, but left running at exit), stop it at exit
registry_ours() {
    local pid cmd=
    pid=$(tr -dc '0-9' 2>/dev/null <"$1/registry.pid" || true)
    [ -n "$pid" ] && cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" || true)
    case "$cmd" in *"serve $1/config.yml"*) ;; *) registry_stop+=("$1") ;; esac
}
# start_registry DIR ADDR AUTH(none|htpasswd): purge, start, seed; its
# registry-up.sh output (KEY='value') on stdout. Fails with the reason on stderr.
start_registry() {
    local dir=$1 addr=$2 auth=$3 out
    REGISTRY_DIR=$dir deploy/registry-down.sh --purge 2>/dev/null ||
        { echo "cannot purge $dir (not a registry-up.sh directory?)" >&2; return 1; }
    out=$(REGISTRY_DIR=$dir REGISTRY_ADDR=$addr REGISTRY_AUTH=$auth \
          REGISTRY_USER=aidc REGISTRY_PASSWORD=aidc_registry_pw deploy/registry-up.sh 2>&1) ||
        { echo "$out" >&2; return 1; }
    if ! REGISTRY_URL=$(reg_var REGISTRY_URL "$out") REGISTRY_USER=$(reg_var REGISTRY_USER "$out") \
         REGISTRY_PASSWORD=$(reg_var REGISTRY_PASSWORD "$out") SEED_OUT=$dir/seed.tsv \
         deploy/registry-seed.sh >/dev/null 2>"$dir/seed.log"; then
        tail -20 "$dir/seed.log" >&2
        echo "registry-seed.sh failed" >&2
        return 1
    fi
    echo "$out"
}
registry_skip=
if [ "${AIDC_TEST_SKIP_REGISTRY:-0}" = 1 ]; then
    registry_skip="AIDC_TEST_SKIP_REGISTRY=1"
elif [ ! -x /usr/bin/docker-registry ]; then
    registry_skip="docker-registry is not installed (deploy/install-deps.sh test)"
fi
if [ -n "$registry_skip" ]; then
    say "image registries: not started, their tests skip: $registry_skip"
else
    say "image registries on $registry_addr and $registry_auth_addr (basic auth)"
    registry_ours "$registry_dir"
    if reg_env=$(start_registry "$registry_dir" "$registry_addr" none); then
        AIDC_TEST_REGISTRY_URL=$(reg_var REGISTRY_URL "$reg_env")
        export AIDC_TEST_REGISTRY_URL
        echo "anonymous registry at $AIDC_TEST_REGISTRY_URL ($registry_dir), seeded"
    else
        echo "the anonymous registry did not come up (above): its tests skip" >&2
    fi
    if ! command -v htpasswd >/dev/null; then
        echo "htpasswd is not installed (deploy/install-deps.sh test): the basic-auth registry's tests skip" >&2
    elif registry_ours "$registry_auth_dir" &&
         reg_env=$(start_registry "$registry_auth_dir" "$registry_auth_addr" htpasswd); then
        AIDC_TEST_REGISTRY_AUTH_URL=$(reg_var REGISTRY_URL "$reg_env")
        AIDC_TEST_REGISTRY_USER=$(reg_var REGISTRY_USER "$reg_env")
        AIDC_TEST_REGISTRY_PASSWORD=$(reg_var REGISTRY_PASSWORD "$reg_env")
        export AIDC_TEST_REGISTRY_AUTH_URL AIDC_TEST_REGISTRY_USER AIDC_TEST_REGISTRY_PASSWORD
        echo "basic-auth registry at $AIDC_TEST_REGISTRY_AUTH_URL as $AIDC_TEST_REGISTRY_USER ($registry_auth_dir), seeded"
    else
        echo "the basic-auth registry did not come up (above): its tests skip" >&2
    fi
fi

# The OpenID provider of the single sign-on tests (tests/oidc/provider.mjs: the npm
# package oidc-provider, a certified implementation): one node process for the whole run
# (two issuers: a shared one and one whose key the rotation test turns). The tests skip
# without AIDC_TEST_OIDC_ISSUER, so where it cannot start we say why and go on.
oidc_port=15510 oidc_dir=/tmp/aidc-test-oidc oidc_pid=
unset AIDC_TEST_OIDC_ISSUER AIDC_TEST_OIDC_ROTATE_ISSUER
stop_oidc() {
    [ -n "$oidc_pid" ] || return 0
    kill "$oidc_pid" 2>/dev/null || true
    wait "$oidc_pid" 2>/dev/null || true
}
trap 'stop_oidc; stop_registries; stop_slurm; stop_pg' EXIT
if [ "${AIDC_TEST_SKIP_OIDC:-0}" = 1 ]; then
    say "OpenID provider: not started, its tests skip: AIDC_TEST_SKIP_OIDC=1"
elif ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    say "OpenID provider: not started, its tests skip: node/npm missing (deploy/install-deps.sh portal)"
else
    say "OpenID provider on 127.0.0.1:$oidc_port and :$((oidc_port + 1)) (tests/oidc, log $oidc_dir/provider.log)"
    rm -rf "$oidc_dir" && mkdir -p "$oidc_dir"
    if [ ! -d "$root/tests/oidc/node_modules/oidc-provider" ] &&
       ! (cd "$root/tests/oidc" && npm ci --prefer-offline --no-audit --no-fund >"$oidc_dir/npm.log" 2>&1); then
        tail -20 "$oidc_dir/npm.log" >&2
        echo "npm ci in tests/oidc failed (above): the single sign-on tests skip" >&2
    else
        OP_PORT=$oidc_port OP_KEYS_DIR=$oidc_dir/keys OP_AUTO_LOGIN=1 \
            node "$root/tests/oidc/provider.mjs" >"$oidc_dir/provider.log" 2>&1 &
        oidc_pid=$!
        for _ in $(seq 1 300); do   # up to 30 s: the first start makes its RSA keys
            grep -q '^OP ready' "$oidc_dir/provider.log" 2>/dev/null && break
            kill -0 "$oidc_pid" 2>/dev/null || break
            sleep 0.1
        done
        if grep -q '^OP ready' "$oidc_dir/provider.log"; then
            export AIDC_TEST_OIDC_ISSUER=http://127.0.0.1:$oidc_port
            export AIDC_TEST_OIDC_ROTATE_ISSUER=http://127.0.0.1:$((oidc_port + 1))
            echo "OpenID providers at $AIDC_TEST_OIDC_ISSUER and $AIDC_TEST_OIDC_ROTATE_ISSUER"
        else
            tail -20 "$oidc_dir/provider.log" >&2
            echo "the OpenID provider did not come up (above): the single sign-on tests skip" >&2
            stop_oidc
            oidc_pid=
        fi
    fi
fi

# A private LDAP directory (deploy/slapd-up.sh: OpenLDAP with StartTLS, LDAPS and a
# seeded ou=people/ou=groups) for the LDAP login tests. slapd runs as any user. The
# tests skip without AIDC_TEST_LDAP_URL, so where it cannot start we say why and go on.
slapd_dir=/tmp/aidc-test-slapd
unset AIDC_TEST_LDAP_URL AIDC_TEST_LDAPS_URL AIDC_TEST_LDAP_CA AIDC_TEST_LDAP_BIND_DN \
      AIDC_TEST_LDAP_BIND_PASSWORD AIDC_TEST_LDAP_BASE AIDC_TEST_LDAP_LOG
slapd_started=0   # 1: run.sh started it (a slapd already running from slapd_dir is left running)
stop_slapd() {
    if [ "$slapd_started" = 1 ]; then
        say "stopping the test LDAP directory"
        SLAPD_DIR=$slapd_dir deploy/slapd-down.sh --purge || true
    fi
}
trap 'stop_slapd; stop_oidc; stop_registries; stop_slurm; stop_pg' EXIT
slapd_skip=
if [ "${AIDC_TEST_SKIP_LDAP:-0}" = 1 ]; then
    slapd_skip="AIDC_TEST_SKIP_LDAP=1"
elif ! command -v slapd >/dev/null && [ ! -x /usr/sbin/slapd ]; then
    slapd_skip="slapd is not installed (deploy/install-deps.sh test)"
fi
if [ -n "$slapd_skip" ]; then
    say "LDAP directory: not started, its tests skip: $slapd_skip"
else
    say "LDAP directory on 127.0.0.1:15389 (StartTLS) and 15636 (LDAPS) ($slapd_dir)"
    slapd_pid=$(tr -dc '0-9' 2>/dev/null <"$slapd_dir/slapd.pid" || true)
    [ -n "$slapd_pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$slapd_pid/cmdline" |
        grep -q -- "-f $slapd_dir/slapd.conf" || slapd_started=1
    if slapd_env=$(SLAPD_DIR=$slapd_dir LDAP_PORT=15389 LDAPS_PORT=15636 deploy/slapd-up.sh); then
        AIDC_TEST_LDAP_URL=$(reg_var LDAP_URL "$slapd_env")
        AIDC_TEST_LDAPS_URL=$(reg_var LDAPS_URL "$slapd_env")
        AIDC_TEST_LDAP_CA=$(reg_var LDAP_CA_FILE "$slapd_env")
        AIDC_TEST_LDAP_BIND_DN=$(reg_var LDAP_BIND_DN "$slapd_env")
        AIDC_TEST_LDAP_BIND_PASSWORD=$(reg_var LDAP_BIND_PASSWORD "$slapd_env")
        AIDC_TEST_LDAP_BASE=$(reg_var LDAP_BASE "$slapd_env")
        AIDC_TEST_LDAP_LOG=$(reg_var SLAPD_LOG "$slapd_env")
        export AIDC_TEST_LDAP_URL AIDC_TEST_LDAPS_URL AIDC_TEST_LDAP_CA AIDC_TEST_LDAP_BIND_DN \
               AIDC_TEST_LDAP_BIND_PASSWORD AIDC_TEST_LDAP_BASE AIDC_TEST_LDAP_LOG
        echo "slapd at $AIDC_TEST_LDAP_URL and $AIDC_TEST_LDAPS_URL, base $AIDC_TEST_LDAP_BASE"
    else
        echo "the LDAP directory did not come up (above): its tests skip" >&2
        stop_slapd
        slapd_started=0
    fi
fi

# A private Prometheus scraping a DCGM-format exporter (tests/prometheus: Debian's
# prometheus, every second) for the efficiency tests (GPU utilization, the idle report).
# They skip their GPU part without AIDC_TEST_PROMETHEUS_URL, so where it cannot start we
# say why and go on.
prom_dir=/tmp/aidc-test-prom prom_started=0
unset AIDC_TEST_PROMETHEUS_URL AIDC_TEST_DCGM_DIR
stop_prom() {
    [ "$prom_started" = 1 ] && tests/prometheus/prom-down.sh "$prom_dir" || true
}
trap 'stop_prom; stop_slapd; stop_oidc; stop_registries; stop_slurm; stop_pg' EXIT
if prom_env=$(PROM_DIR=$prom_dir PROM_PORT=15590 tests/prometheus/prom-up.sh); then
    prom_started=1
    AIDC_TEST_PROMETHEUS_URL=$(sed -n 's/^PROMETHEUS_URL=//p' <<<"$prom_env")
    AIDC_TEST_DCGM_DIR=$(sed -n 's/^DCGM_DIR=//p' <<<"$prom_env")
    export AIDC_TEST_PROMETHEUS_URL AIDC_TEST_DCGM_DIR
    say "Prometheus at $AIDC_TEST_PROMETHEUS_URL (exporter files in $AIDC_TEST_DCGM_DIR)"
else
    say "Prometheus: not started (above), the efficiency tests' GPU part skips"
fi

# The SMTP receiver of the notification tests (tests/smtp: Debian's python3-aiosmtpd,
# STARTTLS with a fresh self-signed certificate, AUTH): one for the whole run. The e-mail
# tests skip without AIDC_TEST_SMTP_URL, so where it cannot start we say why and go on.
smtp_pid=
unset AIDC_TEST_SMTP_URL AIDC_TEST_SMTP_CA AIDC_TEST_SMTP_USER AIDC_TEST_SMTP_PASSWORD_FILE \
      AIDC_TEST_SMTP_DIR
stop_smtp() {
    [ -n "$smtp_pid" ] || return 0
    kill "$smtp_pid" 2>/dev/null || true
}
trap 'stop_smtp; stop_prom; stop_slapd; stop_oidc; stop_registries; stop_slurm; stop_pg' EXIT
if [ "${AIDC_TEST_SKIP_SMTP:-0}" = 1 ]; then
    say "SMTP receiver: not started, the e-mail tests skip: AIDC_TEST_SKIP_SMTP=1"
elif smtp_env=$(SMTP_DIR=/tmp/aidc-test-smtp SMTP_PORT=15525 tests/smtp/smtp-up.sh); then
    smtp_pid=$(reg_var SMTP_PID "$smtp_env")
    export AIDC_TEST_SMTP_URL=$(reg_var SMTP_URL "$smtp_env")
    export AIDC_TEST_SMTP_CA=$(reg_var SMTP_CA_FILE "$smtp_env")
    export AIDC_TEST_SMTP_USER=$(reg_var SMTP_USER "$smtp_env")
    export AIDC_TEST_SMTP_PASSWORD_FILE=$(reg_var SMTP_PASSWORD_FILE "$smtp_env")
    export AIDC_TEST_SMTP_DIR=$(reg_var SMTP_DIR "$smtp_env")
    say "SMTP receiver at $AIDC_TEST_SMTP_URL (STARTTLS, AUTH), mail in $AIDC_TEST_SMTP_DIR"
else
    say "SMTP receiver: did not start (above), the e-mail tests skip"
fi

build_only() {  # name, cmake options...
    local dir=$1; shift
    say "build $dir ($*)"
    cmake -S "$root" -B "$root/$dir" -DAIDC_WERROR=ON -DAIDC_TESTS=ON "$@" >/dev/null
    if ! cmake --build "$root/$dir" -j"$(nproc)" >"$root/$dir/build.log" 2>&1; then
        grep -E 'error|warning' "$root/$dir/build.log" | head -40 >&2 || tail -40 "$root/$dir/build.log" >&2
        echo "build $dir failed (full log: $dir/build.log)" >&2
        exit 1
    fi
}
test_dir() {  # name
    say "tests of $1"
    local rc=0
    (cd "$root/$1" && ctest --output-on-failure -j"$jobs" ${CTEST_ARGS:-}) | tee "$root/$1/ctest.out" ||
        rc=$?
    # where the run's minutes went (CI keeps this output when a run fails)
    echo "slowest tests of $1:"
    grep -E ' Test +#[0-9]+: ' "$root/$1/ctest.out" | awk '{ for (i = 1; i < NF; i++)
        if ($(i + 1) == "sec") printf "%8.1f s  %s\n", $i, $4 }' | sort -rn | head -12 || true
    return "$rc"
}

# Everything is compiled while deploy/k8s-build.sh still runs (on a fresh machine it
# takes longer than all three builds), and the fuzz targets, which need no service and
# fuzz for a fixed time each, run then too.
build_only build -DCMAKE_BUILD_TYPE=RelWithDebInfo
# libFuzzer targets (tests/fuzz, docs/fuzzing.md): clang builds only the parsers
# (~15 s); each target replays its corpus and fuzzes 5 s (~45 s in all)
fuzz=1
[ "${AIDC_TEST_SKIP_FUZZ:-0}" = 1 ] && fuzz=0
[ "$fuzz" = 0 ] || build_only build-fuzz -DCMAKE_C_COMPILER=clang -DAIDC_FUZZ=ON
asan=1
[ "${AIDC_TEST_SKIP_ASAN:-0}" = 1 ] && asan=0
[ "$asan" = 0 ] || build_only build-asan -DCMAKE_BUILD_TYPE=Debug -DAIDC_SANITIZE=ON -DAIDC_LINT=OFF
[ "$fuzz" = 0 ] || test_dir build-fuzz

# the Kubernetes control plane, once its build is done
k8s_started=0
stop_k8s() {
    if [ "$k8s_started" = 1 ]; then
        say "stopping the test Kubernetes API server"
        K8S_DIR=$k8s_dir deploy/k8s-down.sh --purge >/dev/null 2>&1 || true
    fi
}
trap 'stop_k8s; stop_smtp; stop_prom; stop_slapd; stop_oidc; stop_registries; stop_slurm; stop_pg' EXIT
if [ -n "$k8s_build_pid" ]; then
    say "Kubernetes API server ($k8s_dir; waiting for deploy/k8s-build.sh, log build/k8s-build.log)"
    if ! wait "$k8s_build_pid"; then
        tail -20 "$root/build/k8s-build.log" >&2
        k8s_skip="deploy/k8s-build.sh failed (above)"
    elif k8s_env=$(K8S_DIR=$k8s_dir K8S_BIN_DIR=$k8s_bin K8S_PORT=16443 K8S_ETCD_PORT=23890 \
                   deploy/k8s-up.sh 2>"$root/build/k8s-up.log"); then
        export AIDC_TEST_K8S_ETCD_PORT=23890 # the outage test restarts it on the same ports
        k8s_started=1
        k8s_var() { sed -n "s/^$1='\(.*\)'$/\1/p" <<<"$k8s_env"; }
        AIDC_TEST_K8S_URL=$(k8s_var K8S_API_URL) AIDC_TEST_K8S_TOKEN=$(k8s_var K8S_TOKEN)
        AIDC_TEST_K8S_CA=$(k8s_var K8S_CA_FILE) AIDC_TEST_K8S_DIR=$(k8s_var K8S_DIR)
        export AIDC_TEST_K8S_URL AIDC_TEST_K8S_TOKEN AIDC_TEST_K8S_CA AIDC_TEST_K8S_DIR
        echo "kube-apiserver at $AIDC_TEST_K8S_URL"
    else
        tail -20 "$root/build/k8s-up.log" >&2
        k8s_skip="deploy/k8s-up.sh failed (above)"
        # what it did start (etcd, perhaps the API server) is not left running
        K8S_DIR=$k8s_dir deploy/k8s-down.sh >/dev/null 2>&1 || true
    fi
fi
[ -z "$k8s_skip" ] || say "Kubernetes: not started, its tests skip: $k8s_skip"

test_dir build
if [ "$asan" = 1 ]; then
    export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    test_dir build-asan
fi
say "all tests passed"
