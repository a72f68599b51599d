#!/usr/bin/env bash
# install-deps.sh - install the Debian 12 packages aidc needs, if missing.
#
#   deploy/install-deps.sh build    compiler, CMake and the libraries aidcd links
#                                   (libcurl: the Slurm backend talks to slurmrestd;
#                                   libldap: LDAP / Active Directory login)
#   deploy/install-deps.sh run      PostgreSQL 15 (server) for a local database, and what
#                                   the local executor runs jobs with: bubblewrap (their
#                                   sandbox), slirp4netns (options.network "outbound", and
#                                   every interactive session's network and port), skopeo
#                                   and umoci (their images), jupyter-notebook (the
#                                   notebook a session without an image runs)
#   deploy/install-deps.sh test     Check, libcurl, clang-tidy (tests and lint), and
#                                   Slurm 22.05 for deploy/slurm-up.sh: munged,
#                                   slurmctld, slurmd, slurmrestd with JWT auth,
#                                   the CLI (scontrol, sinfo, ...), setpriv, ss;
#                                   a container image registry for
#                                   deploy/registry-up.sh (docker-registry,
#                                   apache2-utils for htpasswd; jq, tar, gzip for
#                                   registry-seed.sh and tests/support/registry-push.sh,
#                                   busybox-static for its runnable test image), the
#                                   local executor's sandbox tools and Jupyter (as for
#                                   run), python3-websocket (a WebSocket client, for
#                                   the checks that talk to a session's notebook),
#                                   OpenLDAP's slapd and ldap-utils (a private
#                                   directory for LDAP login: deploy/slapd-up.sh),
#                                   python3-aiosmtpd (the SMTP receiver of the
#                                   notification tests: tests/smtp)
#   deploy/install-deps.sh dev      the demo registry of deploy/dev.sh (docker-registry,
#                                   jq, tar, gzip; busybox-static for its runnable image)
#   deploy/install-deps.sh bench    wrk and pgbench (benchmarks)
#   deploy/install-deps.sh portal   the portal's browser tests (tests/portal): Debian's
#                                   chromium (Playwright drives it; no browser download),
#                                   fonts-noto-cjk (Chinese text in screenshots), and
#                                   Node.js with npm only when `node`/`npm` are missing
#                                   (a newer Node from elsewhere is kept)
#   deploy/install-deps.sh ops      what the operations tests drive: nginx (replicas
#                                   behind a proxy; `nginx -t` of deploy/nginx),
#                                   pgbouncer (transaction pooling), prometheus (its
#                                   promtool checks deploy/prometheus), systemd
#                                   (`systemd-analyze verify` of deploy/systemd), openssl,
#                                   python3 with yaml (the checks of deploy/k8s and grafana),
#                                   patroni, python3-etcd and etcd-server (tests/scaleout:
#                                   PostgreSQL failover under three replicas)
#
# Several groups may be given. As root it runs apt-get; otherwise it prints
# the command to run and exits 1 when something is missing.
set -euo pipefail

pkgs=()
for group in "$@"; do
    case "$group" in
        build) pkgs+=(gcc make cmake pkg-config libmicrohttpd-dev libpq-dev libjansson-dev
                      libjwt-dev libssl-dev libcurl4-openssl-dev libldap-dev) ;;
        run)   pkgs+=(postgresql-15 postgresql-client-15 curl ca-certificates
                      bubblewrap slirp4netns skopeo umoci jupyter-notebook) ;;
        test)  pkgs+=(check libcurl4-openssl-dev clang-tidy curl clang lld libclang-rt-dev
                      munge slurmctld slurmd slurm-client slurmrestd slurm-wlm-jwt-plugin
                      util-linux iproute2
                      docker-registry apache2-utils jq tar gzip coreutils busybox-static
                      bubblewrap slirp4netns skopeo umoci jupyter-notebook python3-websocket
                      slapd ldap-utils prometheus python3 python3-aiosmtpd) ;;
        dev)   pkgs+=(docker-registry jq tar gzip coreutils curl busybox-static) ;;
        bench) pkgs+=(wrk postgresql-contrib jq linux-perf) ;;
        portal) pkgs+=(chromium fonts-noto-cjk)
                { command -v node && command -v npm; } >/dev/null || pkgs+=(nodejs npm) ;;
        ops)   pkgs+=(nginx-light pgbouncer prometheus systemd openssl python3 python3-yaml
                      patroni python3-etcd etcd-server) ;;
        *) echo "install-deps: unknown group '$group' (build, run, dev, test, bench, portal, ops)" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${pkgs[@]}"; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$st" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run as root:  apt-get install -y ${missing[*]}" >&2
    exit 1
fi

# Installing postgresql-15 would create and start a cluster on port 5432 that
# aidc never uses: ask postgresql-common not to (aidc runs its own clusters).
if [[ " ${missing[*]} " == *" postgresql-15 "* ]] && [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf
fi

# munge, slurmctld and slurmd come with system services: slurmctld/slurmd do
# not start without /etc/slurm/slurm.conf, and a system munged (on
# /run/munge) does not disturb slurm-up.sh, which runs its own daemons.
echo "install-deps: installing ${missing[*]}" >&2
# nginx, pgbouncer, prometheus, slapd, patroni and etcd come with system services (ports
# 80, 6432, 9090, 389, 8008, 2379) that aidc's tests never use (they run their own on
# loopback): keep the packages' scripts from starting them, through a policy-rc.d of our own for this install.
policy=/usr/sbin/policy-rc.d
if [[ " ${missing[*]} " =~ \ (nginx-light|pgbouncer|prometheus|slapd|patroni|etcd-server)\  ]] && [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy
    trap 'rm -f $policy' EXIT
fi
export DEBIAN_FRONTEND=noninteractive
apt_get() { apt-get -o Dpkg::Use-Pty=0 -o APT::Color=0 -qq "$@"; }
if ! apt_get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    apt_get update >/dev/null
    apt_get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi

# docker-registry comes with a system service: an open registry on every
# interface, port 5000, that aidc never uses (deploy/registry-up.sh runs its own
# on loopback, by default on 127.0.0.1:5000 too). When we installed it, and
# systemd runs, stop and disable that service.
if [[ " ${missing[*]} " == *" docker-registry "* ]] && [ -d /run/systemd/system ]; then
    systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
fi
