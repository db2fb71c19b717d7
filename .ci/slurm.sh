#!/usr/bin/env bash
# One-node SLURM cluster on this machine, for the `cluster` tests (make test-cluster).
#
#   .ci/slurm.sh up      install Debian's slurmctld/slurmd/slurm-client/munge when missing,
#                        write a private config, start munged, slurmctld and slurmd, wait
#                        until `sinfo` shows the node idle
#   .ci/slurm.sh down    cancel every job, stop the three daemons
#   .ci/slurm.sh env     print the line to export for the SLURM client commands
#
# Everything lives in $UQX_SLURM_DIR (default /tmp/uqx-slurm): slurm.conf, the munge key and
# socket, state, spool, logs and pid files; /etc/slurm and /etc/munge are not touched, so a
# real SLURM or munge installation on the machine is left alone. Clients find the cluster
# through SLURM_CONF=$UQX_SLURM_DIR/slurm.conf. Needs root (the daemons run as root) and,
# when the packages are missing, apt. Exit status 3 means "cannot run here" (not root, no
# apt): callers skip the cluster tests then.
set -euo pipefail

DIR=${UQX_SLURM_DIR:-/tmp/uqx-slurm}
CONF=$DIR/slurm.conf
CTLD_PORT=${UQX_SLURMCTLD_PORT:-6817}
SLURMD_PORT=${UQX_SLURMD_PORT:-6818}
PKGS=(slurmctld slurmd slurm-client munge)

log() { echo "slurm.sh: $*" >&2; }

need_root() {
    if [ "$(id -u)" != 0 ]; then
        log "cannot start a SLURM cluster: not root (the daemons run as root)"
        exit 3
    fi
}

install_packages() {
    local missing=()
    for exe in slurmctld slurmd sinfo munged; do
        command -v "$exe" >/dev/null 2>&1 || missing+=("$exe")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        log "cannot start a SLURM cluster: ${missing[*]} missing and apt-get not available"
        exit 3
    fi
    log "installing ${PKGS[*]} (missing: ${missing[*]})"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends "${PKGS[@]}" >"$DIR/apt.log" 2>&1; then
        apt-get update -q >>"$DIR/apt.log" 2>&1 || true
        if ! apt-get install -y -q --no-install-recommends "${PKGS[@]}" >>"$DIR/apt.log" 2>&1
        then
            tail -5 "$DIR/apt.log" >&2
            log "cannot start a SLURM cluster: apt-get install ${PKGS[*]} failed"
            exit 3
        fi
    fi
}

write_config() {
    local host mem cpus
    host=$(hostname -s)
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/munge" "$DIR/log"
    chmod 700 "$DIR/munge"
    if [ ! -s "$DIR/munge/munge.key" ]; then
        dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    fi
    chmod 400 "$DIR/munge/munge.key"
    cat >"$CONF.tmp" <<EOF
# written by .ci/slurm.sh: a one-node cluster for the uqx cluster tests
ClusterName=uqxci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=2
SlurmdTimeout=60
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    mv "$CONF.tmp" "$CONF"
}

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_daemons() {
    if ! pid_alive "$DIR/munge/munged.pid"; then
        munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
            --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" \
            --seed-file="$DIR/munge/munge.seed"
    fi
    export SLURM_CONF=$CONF
    pid_alive "$DIR/slurmctld.pid" || slurmctld -f "$CONF"
    pid_alive "$DIR/slurmd.pid" || slurmd -f "$CONF"
}

wait_idle() {
    local t0 state
    t0=$(date +%s)
    while :; do
        state=$(SLURM_CONF=$CONF sinfo -h -N -o "%T" 2>/dev/null | head -1 || true)
        case "$state" in
            idle|mixed|allocated) log "node $(hostname -s) is $state after $(( $(date +%s) - t0 )) s"
                                  return 0 ;;
        esac
        if [ $(( $(date +%s) - t0 )) -ge 60 ]; then
            log "the node did not come up within 60 s (state: '${state:-no answer}'); logs:"
            tail -n 5 "$DIR"/log/*.log >&2 || true
            return 1
        fi
        sleep 1
    done
}

stop_pid() {  # stop the daemon whose pid file is $1: TERM, then KILL after 10 s
    local pidfile=$1 pid i
    [ -s "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
}

down() {
    if [ -f "$CONF" ] && pid_alive "$DIR/slurmctld.pid"; then
        SLURM_CONF=$CONF scancel --quiet --partition=debug 2>/dev/null || true
        sleep 1
    fi
    stop_pid "$DIR/slurmd.pid"
    stop_pid "$DIR/slurmctld.pid"
    stop_pid "$DIR/munge/munged.pid"
    log "stopped"
}

case "${1:-}" in
    up)
        need_root
        mkdir -p "$DIR"
        install_packages
        write_config
        start_daemons
        wait_idle
        echo "SLURM_CONF=$CONF"
        ;;
    down) down ;;
    env) echo "SLURM_CONF=$CONF" ;;
    *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
