#!/usr/bin/env bash
# slurm-up.sh - start a private single-host Slurm cluster (munged, slurmctld,
# one slurmd per fake GPU node, slurmrestd with JWT auth on loopback).
#
# Everything (config, keys, state, logs, pids) lives under $SLURM_DIR
# (default /tmp/aidc-slurm). Must be run as root. Idempotent: if the cluster
# recorded in $SLURM_DIR is already healthy and its config is unchanged it is
# reused and only a fresh token/env file is produced; otherwise whatever it
# recorded is stopped (slurm-down.sh, by pid) and everything is started clean.
#
# On success prints shell exports (also written to $SLURM_DIR/env):
#   SLURM_DIR SLURM_CONF SLURMRESTD_URL SLURM_USER_NAME SLURM_JWT ...
#
# Tunables (env): SLURM_DIR, SLURMCTLD_PORT (6817), SLURMD_PORT_BASE (6830),
#   SLURMRESTD_HOST (127.0.0.1), SLURMRESTD_PORT (6820), SLURM_API_USER (aidc),
#   SLURMREST_USER (slurmrest), SLURM_JWT_LIFESPAN (86400),
#   SLURM_GPU_NODES ("a100:8 h100:8" -> nodes node-a100, node-h100; one
#     slurmd per entry, repeated types get node-TYPE-2, ...),
#   SLURM_NODE_CPUS (16), SLURM_MIN_JOB_AGE (3600), SLURM_KEEP_STATE (0),
#   SLURM_UP_TIMEOUT (60 seconds per wait),
#   SLURM_MAX_JOB_COUNT (10000, Slurm's default; 40000+ for tests/bench of the poll at 40,000 jobs).
#
# Needs the Debian 12 packages of `deploy/install-deps.sh test` (munge,
# slurmctld, slurmd, slurm-client, slurmrestd, slurm-wlm-jwt-plugin, ...).
# tests/run.sh starts it for the integration tests; slurm-down.sh (next to
# this script) stops it.
set -euo pipefail

SLURM_DIR=${SLURM_DIR:-/tmp/aidc-slurm}
SLURMCTLD_PORT=${SLURMCTLD_PORT:-6817}
SLURMD_PORT_BASE=${SLURMD_PORT_BASE:-6830}
SLURMRESTD_HOST=${SLURMRESTD_HOST:-127.0.0.1}
SLURMRESTD_PORT=${SLURMRESTD_PORT:-6820}
SLURM_API_USER=${SLURM_API_USER:-aidc}
SLURMREST_USER=${SLURMREST_USER:-slurmrest}
SLURM_JWT_LIFESPAN=${SLURM_JWT_LIFESPAN:-86400}
SLURM_GPU_NODES=${SLURM_GPU_NODES:-"a100:8 h100:8"}
SLURM_NODE_CPUS=${SLURM_NODE_CPUS:-16}
SLURM_MIN_JOB_AGE=${SLURM_MIN_JOB_AGE:-3600}
SLURM_MAX_JOB_COUNT=${SLURM_MAX_JOB_COUNT:-10000}
SLURM_KEEP_STATE=${SLURM_KEEP_STATE:-0}
SLURM_UP_TIMEOUT=${SLURM_UP_TIMEOUT:-60}
SLURM_API_VERSION=${SLURM_API_VERSION:-v0.0.38}
# openapi/dbv0.0.3x are fatal at slurmrestd start without slurmdbd
SLURMRESTD_PLUGINS=${SLURMRESTD_PLUGINS:-openapi/v0.0.36,openapi/v0.0.37,openapi/v0.0.38}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
START_TS=$(date +%s.%N)

elapsed() { awk -v s="$START_TS" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}'; }
log() { printf '[slurm-up +%ss] %s\n' "$(elapsed)" "$*" >&2; }
die() {
  printf '[slurm-up] ERROR: %s\n' "$*" >&2
  for f in "$SLURM_DIR"/log/*.log "$SLURM_DIR"/log/*.out; do
    [ -f "$f" ] || continue
    printf '==> %s (tail) <==\n' "$f" >&2
    tail -n 20 "$f" >&2 || true
  done
  exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root"
case $SLURM_DIR in /*) ;; *) die "SLURM_DIR must be an absolute path";; esac
case $SLURM_DIR in *[[:space:]]*) die "SLURM_DIR must not contain whitespace";; esac
SLURM_DIR=${SLURM_DIR%/}
for b in munged slurmctld slurmd slurmrestd scontrol sinfo curl setpriv; do
  command -v "$b" >/dev/null 2>&1 || die "missing binary: $b (deploy/install-deps.sh test)"
done

ETC=$SLURM_DIR/etc
RUN=$SLURM_DIR/run
LOGD=$SLURM_DIR/log
MUNGE_DIR=$SLURM_DIR/munge
MUNGE_SOCK=$MUNGE_DIR/munge.socket
CONF=$ETC/slurm.conf
JWT_KEY=$ETC/jwt_hs256.key
JOBS_DIR=$SLURM_DIR/jobs
HOST=$(hostname -s 2>/dev/null || hostname)
SLURMRESTD_URL="http://${SLURMRESTD_HOST}:${SLURMRESTD_PORT}"
export SLURM_CONF=$CONF
unset SLURM_JWT || true   # never let a caller's token leak into our CLI calls

# ---------------------------------------------------------------- pid helpers
# pid_ok PIDFILE COMM -> prints pid and returns 0 if the recorded process is
# alive, has the expected comm and was started for this SLURM_DIR.
pid_ok() {
  local pf=$1 comm=$2 pid
  [ -s "$pf" ] || return 1
  pid=$(tr -dc '0-9' <"$pf")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$SLURM_DIR/" || return 1
  echo "$pid"
}

# daemons started by this run, as "PIDFILE:COMM"; wait_for fails fast if one
# of them wrote its pid file and is gone again (fatal config error etc.)
STARTED=()
check_started() {
  local e pf comm
  for e in "${STARTED[@]}"; do
    pf=${e%:*}; comm=${e##*:}
    if [ -s "$pf" ] && ! pid_ok "$pf" "$comm" >/dev/null; then
      die "$comm exited during startup (see logs)"
    fi
  done
}
wait_for() { # wait_for DESCRIPTION CMD...
  local what=$1; shift
  local deadline=$(( $(date +%s) + SLURM_UP_TIMEOUT ))
  until "$@" >/dev/null 2>&1; do
    check_started
    [ "$(date +%s)" -lt "$deadline" ] || die "timed out waiting for $what"
    sleep 0.2
  done
}

# ---------------------------------------------------------------- nodes
NODE_NAMES=()
NODE_TYPES=()
NODE_COUNTS=()
for spec in $SLURM_GPU_NODES; do
  t=${spec%%:*}; c=${spec##*:}
  [[ $t =~ ^[a-z0-9]+$ && $c =~ ^[1-9][0-9]*$ ]] || die "bad SLURM_GPU_NODES entry '$spec' (want TYPE:COUNT)"
  name=node-$t; k=2
  while [[ " ${NODE_NAMES[*]:-} " == *" $name "* ]]; do name=node-$t-$k; k=$((k+1)); done
  NODE_NAMES+=("$name"); NODE_TYPES+=("$t"); NODE_COUNTS+=("$c")
done
[ "${#NODE_NAMES[@]}" -gt 0 ] || die "SLURM_GPU_NODES is empty"

# ---------------------------------------------------------------- users
ensure_user() {
  local u=$1
  if ! getent passwd "$u" >/dev/null; then
    log "creating system user $u"
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$u"
  fi
}
ensure_user "$SLURMREST_USER"
ensure_user "$SLURM_API_USER"
getent passwd munge >/dev/null || die "user munge missing (munge package?)"

# ---------------------------------------------------------------- config
gen_config() {
  local i port
  cat <<EOF
# generated by slurm-up.sh - do not edit (SLURM_DIR=$SLURM_DIR)
ClusterName=aidc
SlurmctldHost=${HOST}(127.0.0.1)
SlurmctldPort=${SLURMCTLD_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${MUNGE_SOCK},cred_expire=10
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=${JWT_KEY}
StateSaveLocation=${SLURM_DIR}/state
SlurmdSpoolDir=${SLURM_DIR}/spool/%n
SlurmctldPidFile=${RUN}/slurmctld.pid
SlurmdPidFile=${RUN}/slurmd-%n.pid
SlurmctldLogFile=${LOGD}/slurmctld.log
SlurmdLogFile=${LOGD}/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=${ETC}/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=${LOGD}/jobcomp.log
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=3,sched_interval=5
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
JobRequeue=1
ReturnToService=2
MinJobAge=${SLURM_MIN_JOB_AGE}
MaxJobCount=${SLURM_MAX_JOB_COUNT}
KillWait=5
InactiveLimit=0
SlurmdTimeout=60
SlurmctldTimeout=60
SlurmdParameters=config_overrides
EOF
  for i in "${!NODE_NAMES[@]}"; do
    port=$(( SLURMD_PORT_BASE + i ))
    echo "NodeName=${NODE_NAMES[$i]} NodeHostname=${HOST} NodeAddr=127.0.0.1 Port=${port} CPUs=${SLURM_NODE_CPUS} Boards=1 SocketsPerBoard=1 CoresPerSocket=${SLURM_NODE_CPUS} ThreadsPerCore=1 RealMemory=64000 Gres=gpu:${NODE_TYPES[$i]}:${NODE_COUNTS[$i]} Feature=${NODE_TYPES[$i]} State=UNKNOWN"
  done
  echo "PartitionName=gpu Nodes=ALL Default=YES PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP"
  echo "PartitionName=preempt Nodes=ALL Default=NO PriorityTier=1 PreemptMode=REQUEUE MaxTime=INFINITE State=UP"
}
gen_gres() {
  local i
  echo "AutoDetect=off"
  for i in "${!NODE_NAMES[@]}"; do
    # gres/gpu drops file-less GPUs, so point File= at fake device files
    echo "NodeName=${NODE_NAMES[$i]} Name=gpu Type=${NODE_TYPES[$i]} File=${SLURM_DIR}/dev/${NODE_NAMES[$i]}/nvidia[0-$(( NODE_COUNTS[$i] - 1 ))]"
  done
}

install -d -m 0755 "$SLURM_DIR" "$ETC" "$RUN" "$LOGD" "$SLURM_DIR/spool" "$SLURM_DIR/dev"
install -d -m 0700 "$SLURM_DIR/state"
install -d -m 1777 "$JOBS_DIR"
install -d -m 0755 -o munge -g munge "$MUNGE_DIR"

NEW_CONF=$(gen_config)
NEW_GRES=$(gen_gres)
config_changed=0
if [ ! -f "$CONF" ] || [ "$(cat "$CONF")" != "$NEW_CONF" ]; then config_changed=1; fi
if [ ! -f "$ETC/gres.conf" ] || [ "$(cat "$ETC/gres.conf")" != "$NEW_GRES" ]; then config_changed=1; fi

# ---------------------------------------------------------------- reuse?
healthy=1
[ "$config_changed" = 0 ] || healthy=0
pid_ok "$MUNGE_DIR/munged.pid" munged >/dev/null || healthy=0
pid_ok "$RUN/slurmctld.pid" slurmctld >/dev/null || healthy=0
for n in "${NODE_NAMES[@]}"; do pid_ok "$RUN/slurmd-$n.pid" slurmd >/dev/null || healthy=0; done
pid_ok "$RUN/slurmrestd.pid" slurmrestd >/dev/null || healthy=0
if [ "$healthy" = 1 ] && ! scontrol ping 2>/dev/null | grep -q 'is UP'; then healthy=0; fi

if [ "$healthy" = 1 ]; then
  log "cluster in $SLURM_DIR already running; reusing it"
else
  # stop whatever this SLURM_DIR still has running (by recorded pid only)
  cancel=1; [ "$SLURM_KEEP_STATE" = 1 ] && cancel=0
  SLURM_DIR=$SLURM_DIR SLURM_DOWN_CANCEL_JOBS=$cancel "$HERE/slurm-down.sh" --quiet || true

  for p in "$SLURMCTLD_PORT" "$SLURMRESTD_PORT" $(for i in "${!NODE_NAMES[@]}"; do echo $(( SLURMD_PORT_BASE + i )); done); do
    if ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then
      die "TCP port $p is already in use by another process (set SLURMCTLD_PORT/SLURMD_PORT_BASE/SLURMRESTD_PORT)"
    fi
  done

  printf '%s\n' "$NEW_CONF" >"$CONF"
  printf '%s\n' "$NEW_GRES" >"$ETC/gres.conf"
  : >"$ETC/plugstack.conf"
  chmod 0644 "$CONF" "$ETC/gres.conf" "$ETC/plugstack.conf"

  if [ ! -s "$JWT_KEY" ]; then
    log "generating HS256 JWT key"
    (umask 077; dd if=/dev/urandom of="$JWT_KEY" bs=32 count=1 status=none)
  fi
  chown root:root "$JWT_KEY"; chmod 0600 "$JWT_KEY"

  if [ ! -s "$MUNGE_DIR/munge.key" ]; then
    (umask 077; dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none)
  fi
  chown munge:munge "$MUNGE_DIR/munge.key"; chmod 0400 "$MUNGE_DIR/munge.key"

  if [ "$SLURM_KEEP_STATE" != 1 ]; then
    # clean slate: no old jobs, job ids restart at 1, fresh logs
    rm -rf "${SLURM_DIR:?}/state" "${SLURM_DIR:?}/spool"
    rm -f "$LOGD"/*.log "$LOGD"/*.out
    install -d -m 0700 "$SLURM_DIR/state"
    install -d -m 0755 "$SLURM_DIR/spool"
  fi
  for i in "${!NODE_NAMES[@]}"; do
    n=${NODE_NAMES[$i]}
    install -d -m 0755 "$SLURM_DIR/spool/$n" "$SLURM_DIR/dev/$n"
    for g in $(seq 0 $(( NODE_COUNTS[$i] - 1 ))); do
      # character devices aliasing /dev/null (1:3) keep gres/gpu quiet; a
      # plain file also works (slurmd only logs "not a valid character ...")
      f=$SLURM_DIR/dev/$n/nvidia$g
      [ -c "$f" ] || { rm -f "$f"; mknod -m 0666 "$f" c 1 3 2>/dev/null || install -m 0666 /dev/null "$f"; }
    done
  done

  # ---------------------------------------------------------------- munged
  log "starting munged"
  rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock" "$MUNGE_DIR/munged.pid"
  touch "$LOGD/munged.log"; chown munge:munge "$LOGD/munged.log"; chmod 0640 "$LOGD/munged.log"
  setpriv --reuid=munge --regid=munge --init-groups \
    munged --socket="$MUNGE_SOCK" --key-file="$MUNGE_DIR/munge.key" \
      --pid-file="$MUNGE_DIR/munged.pid" --log-file="$LOGD/munged.log" \
      --seed-file="$MUNGE_DIR/munged.seed" --num-threads=4 \
      </dev/null >>"$LOGD/munged.out" 2>&1 || die "munged failed to start"
  STARTED+=("$MUNGE_DIR/munged.pid:munged")
  wait_for "munged" sh -c "munge -n -S '$MUNGE_SOCK' | unmunge -S '$MUNGE_SOCK'"

  # ---------------------------------------------------------------- slurmctld
  log "starting slurmctld"
  rm -f "$RUN"/*.pid
  STARTED+=("$RUN/slurmctld.pid:slurmctld")
  env AIDC_SLURM_DIR="$SLURM_DIR" slurmctld -f "$CONF" -i </dev/null >>"$LOGD/slurmctld.out" 2>&1 \
    || die "slurmctld failed to start"
  wait_for "slurmctld" sh -c "scontrol ping | grep -q 'is UP'"

  # ---------------------------------------------------------------- slurmd(s)
  for n in "${NODE_NAMES[@]}"; do
    log "starting slurmd $n"
    STARTED+=("$RUN/slurmd-$n.pid:slurmd")
    env AIDC_SLURM_DIR="$SLURM_DIR" slurmd -f "$CONF" -N "$n" </dev/null >>"$LOGD/slurmd-$n.out" 2>&1 \
      || die "slurmd $n failed to start"
  done

  # ---------------------------------------------------------------- slurmrestd
  log "starting slurmrestd on $SLURMRESTD_HOST:$SLURMRESTD_PORT as $SLURMREST_USER"
  (
    cd "$SLURM_DIR"
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF="$CONF" SLURM_JWT=daemon \
      setsid slurmrestd -f "$CONF" -a rest_auth/jwt -s "$SLURMRESTD_PLUGINS" -u "$SLURMREST_USER" \
        "${SLURMRESTD_HOST}:${SLURMRESTD_PORT}" </dev/null >>"$LOGD/slurmrestd.log" 2>&1
  ) &
  rpid=$!
  echo "$rpid" >"$RUN/slurmrestd.pid"
  # the background subshell execs env -> setsid -> slurmrestd (same pid)
  for _ in $(seq 1 100); do
    pid_ok "$RUN/slurmrestd.pid" slurmrestd >/dev/null && break
    [ -d "/proc/$rpid" ] || break
    sleep 0.1
  done
  STARTED+=("$RUN/slurmrestd.pid:slurmrestd")
  check_started
fi

# ---------------------------------------------------------------- readiness
nodes_idle() {
  local n st
  for n in "${NODE_NAMES[@]}"; do
    st=$(sinfo -h -N -n "$n" -o '%T' 2>/dev/null | head -n1)
    case "$st" in idle|mixed|allocated) ;; *) return 1;; esac
  done
}
wait_for "nodes ${NODE_NAMES[*]} idle" nodes_idle
log "nodes idle: ${NODE_NAMES[*]}"

SLURM_JWT=$(scontrol token username="$SLURM_API_USER" lifespan="$SLURM_JWT_LIFESPAN" 2>/dev/null | sed -n 's/^SLURM_JWT=//p')
[ -n "$SLURM_JWT" ] || die "scontrol token failed"

rest_ok() {
  curl -fsS -o /dev/null --max-time 2 \
    -H "X-SLURM-USER-NAME: $SLURM_API_USER" -H "X-SLURM-USER-TOKEN: $SLURM_JWT" \
    "$SLURMRESTD_URL/slurm/$SLURM_API_VERSION/ping"
}
pid_ok "$RUN/slurmrestd.pid" slurmrestd >/dev/null || die "slurmrestd is not running"
wait_for "slurmrestd at $SLURMRESTD_URL" rest_ok

ENV_TEXT=$(cat <<EOF
export SLURM_DIR='$SLURM_DIR'
export SLURM_CONF='$CONF'
export SLURMRESTD_URL='$SLURMRESTD_URL'
export SLURM_API_VERSION='$SLURM_API_VERSION'
export SLURM_USER_NAME='$SLURM_API_USER'
export SLURM_JWT='$SLURM_JWT'
export SLURM_JOB_WORKDIR='$JOBS_DIR'
export SLURM_PARTITION_DEFAULT='gpu'
export SLURM_PARTITION_PREEMPTIBLE='preempt'
export SLURM_NODES='$(IFS=,; echo "${NODE_NAMES[*]}")'
EOF
)
(umask 077; printf '%s\n' "$ENV_TEXT" >"$SLURM_DIR/env")
printf '%s\n' "$ENV_TEXT"
log "ready in $(elapsed)s; env written to $SLURM_DIR/env"
