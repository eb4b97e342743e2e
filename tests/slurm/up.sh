#!/usr/bin/env bash
# tests/slurm/up.sh (from the reference slurm-up.sh) - bring up a real single-node Slurm cluster on this Debian 12 machine.
#
# Starts (without systemd) munged, a private MariaDB instance, slurmdbd, slurmctld
# and slurmd, all bound to localhost, with two partitions (cpu, gpu) on the one
# node and a fake GPU GRES (gpu:<type>:<n>, backed by character-device nodes
# with NVIDIA's device numbers, so Slurm also sets CUDA_VISIBLE_DEVICES). The node has
# the features <type> and ib, for --constraint expressions.
#
# Idempotent: installs packages only when missing, rewrites configs only when
# they differ (restarting the affected daemons), starts only daemons that are
# not already running, and waits until the node is usable and the cluster is
# registered in the accounting database.  Stop with slurm-down.sh.
#
# Settings (environment variables, all optional):
#   SLURM_UP_CLUSTER          cluster name                      [localcluster]
#   SLURM_UP_CPUS             CPUs the node advertises          [8]
#                             (may exceed the real count: SlurmdParameters=config_overrides)
#   SLURM_UP_GPUS             number of fake GPUs               [4]
#   SLURM_UP_GPU_TYPE         GPU type name                     [v100]
#   SLURM_UP_MAX_ARRAY_SIZE   MaxArraySize                      [1001]
#   SLURM_UP_ACCOUNTING       slurmdbd | none                   [slurmdbd]
#   SLURM_UP_DB_PORT          TCP port of the private MariaDB   [6829]
#   SLURM_UP_MIN_JOB_AGE      MinJobAge: seconds a finished job stays visible to
#                             squeue/scontrol; also sets how often sbatch --wait polls
#                             (2 s, then x4 while below MinJobAge/2 and 32 s)  [300]
#   SLURM_UP_CGROUP           how a job's --mem is enforced (a task over it ends OUT_OF_MEMORY):
#                             yes: proctrack/cgroup + task/cgroup with ConstrainRAMSpace
#                               (cgroup v1 memory controller; the kernel kills at the limit);
#                             no: proctrack/linuxproc + task/none, and jobacct_gather/linux
#                               with OverMemoryKill kills a step whose sampled RSS is over it
#                               (Slurm 22.05 then records FAILED, signal 9, not OUT_OF_MEMORY);
#                             auto: yes when /sys/fs/cgroup/memory is a cgroup v1 memory
#                               hierarchy this script may create groups in, else no  [auto]
#   SLURM_UP_ACCT_FREQ        accounting sample interval, seconds (MaxRSS, OverMemoryKill):
#                             short, so that a 4-second task is measured  [1]
#   SLURM_UP_TIMEOUT          seconds to wait for each step     [120]
set -euo pipefail

CLUSTER=${SLURM_UP_CLUSTER:-localcluster}
CPUS=${SLURM_UP_CPUS:-8}
NGPUS=${SLURM_UP_GPUS:-4}
GPU_TYPE=${SLURM_UP_GPU_TYPE:-v100}
MAX_ARRAY=${SLURM_UP_MAX_ARRAY_SIZE:-1001}
ACCOUNTING=${SLURM_UP_ACCOUNTING:-slurmdbd}
DB_PORT=${SLURM_UP_DB_PORT:-6829}
TIMEOUT=${SLURM_UP_TIMEOUT:-120}
MIN_JOB_AGE=${SLURM_UP_MIN_JOB_AGE:-300}
CGROUP=${SLURM_UP_CGROUP:-auto}
ACCT_FREQ=${SLURM_UP_ACCT_FREQ:-1}

ETC=/etc/slurm                 # slurm.conf, gres.conf, slurmdbd.conf (default client path)
RUN=/run/slurm-up              # pid files of the daemons this script started
STATE=/var/lib/slurm-up        # slurmctld/slurmd spool, MariaDB datadir, fake GPU files
LOG=/var/log/slurm-up          # daemon logs
DB_SOCK=$RUN/mysql/mysqld.sock
DB_NAME=slurm_acct_db
DB_USER=slurm
DB_PASS=slurm-up-local-only

T0=$(date +%s)
say() { printf '[slurm-up %3ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
die() { say "ERROR: $*" >&2; exit 1; }

case "$ACCOUNTING" in slurmdbd|none) ;; *) die "SLURM_UP_ACCOUNTING must be slurmdbd or none";; esac
case "$CGROUP" in yes|no|auto) ;; *) die "SLURM_UP_CGROUP must be yes, no or auto";; esac
case "$ACCT_FREQ" in ''|*[!0-9]*|0) die "SLURM_UP_ACCT_FREQ must be a whole number of seconds > 0";; esac
[ "$(id -u)" = 0 ] || die "must run as root"

# ---------------------------------------------------------------- helpers
# running PID: true if PID exists and is not a zombie (pid 1 here may reap orphans
# only every second or two, so a stopped daemon can linger as a zombie)
running() {
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# alive PIDFILE COMM: true if the pid in PIDFILE runs a process named COMM
alive() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(tr -dc 0-9 < "$1")
  [ -n "$pid" ] && running "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}

# wait_for DESCRIPTION PID COMMAND...: retry COMMAND until it succeeds or TIMEOUT
# passes; give up at once if PID (unless "-") has died
wait_for() {
  local what=$1 pid=$2; shift 2
  local end=$(( $(date +%s) + TIMEOUT ))
  until "$@" >/dev/null 2>&1; do
    if [ "$pid" != - ] && ! running "$pid"; then say "$what: process $pid exited"; return 1; fi
    [ "$(date +%s)" -lt "$end" ] || { say "$what: timed out after ${TIMEOUT}s"; return 1; }
    sleep 0.5
  done
  say "$what: ok"
}

# start_bg NAME PIDFILE COMMAND...: run a daemon in the foreground of its own
# session, detached from this script; its pid goes to PIDFILE (sets STARTED_PID)
start_bg() {
  local name=$1 pidfile=$2; shift 2
  setsid "$@" </dev/null >>"$LOG/$name.out" 2>&1 &
  STARTED_PID=$!
  echo "$STARTED_PID" > "$pidfile"
}

show_log() { [ -f "$1" ] && { echo "---- last lines of $1" >&2; tail -n 30 "$1" >&2; }; return 0; }

# put_file PATH MODE OWNER CONTENT: write only if different; return 0 if changed
put_file() {
  local path=$1 mode=$2 owner=$3 content=$4
  if [ -f "$path" ] && [ "$(cat "$path")" = "$content" ]; then
    chmod "$mode" "$path"; chown "$owner" "$path"; return 1
  fi
  printf '%s\n' "$content" > "$path.tmp.$$"
  chmod "$mode" "$path.tmp.$$"; chown "$owner" "$path.tmp.$$"
  mv -f "$path.tmp.$$" "$path"
  return 0
}

stop_pidfile() {  # stop_pidfile PIDFILE COMM
  local pid i
  alive "$1" "$2" || { rm -f "$1"; return 0; }
  pid=$(tr -dc 0-9 < "$1")
  say "stopping $2 (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 300); do running "$pid" || break; sleep 0.1; done
  running "$pid" && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$1"
}

# ---------------------------------------------------------------- 1. packages
PKGS=(slurm-wlm munge)
[ "$ACCOUNTING" = slurmdbd ] && PKGS+=(slurmdbd mariadb-server)
need=()
for b in sbatch slurmctld slurmd munged; do command -v "$b" >/dev/null || need=("${PKGS[@]}"); done
if [ "$ACCOUNTING" = slurmdbd ]; then
  for b in slurmdbd mariadbd mariadb-install-db; do command -v "$b" >/dev/null || need=("${PKGS[@]}"); done
fi
if [ "${#need[@]}" -gt 0 ]; then
  say "installing ${need[*]}"
  # keep package scripts from starting daemons of their own (we start them ourselves)
  made_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  APT=(apt-get -o DPkg::Lock::Timeout=300 -y -q)   # wait for a concurrent apt/dpkg
  if ! "${APT[@]}" install "${need[@]}" >/tmp/slurm-up-apt.log 2>&1; then
    "${APT[@]}" update >>/tmp/slurm-up-apt.log 2>&1 || true
    "${APT[@]}" install "${need[@]}" >>/tmp/slurm-up-apt.log 2>&1 \
      || { [ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d; tail -n 30 /tmp/slurm-up-apt.log >&2; die "apt-get install failed"; }
  fi
  [ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d
  say "packages installed"
fi

# ---------------------------------------------------------------- 2. directories, key, configs
NODE=$(hostname -s)
install -d -m 0755 "$ETC" "$RUN" "$LOG" "$STATE"
install -d -m 0755 -o slurm -g slurm "$STATE/slurmctld" "$STATE/slurmd" "$LOG/slurm"
# (re)own kept state: a package purge + reinstall can give the users new uids
chown -R slurm:slurm "$STATE/slurmctld" "$LOG/slurm"
[ -d "$STATE/mysql" ] && chown -R mysql:mysql "$STATE/mysql"
[ -d "$LOG/mariadb" ] && chown -R mysql:mysql "$LOG/mariadb"
install -d -m 0755 "$STATE/fake-gpu"
install -d -m 0755 -o munge -g munge /run/munge /var/log/munge /var/lib/munge
install -d -m 0700 -o munge -g munge /etc/munge
chown slurm:slurm "$RUN"

if [ ! -s /etc/munge/munge.key ]; then
  say "creating munge key"
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key

# Fake GPUs: slurmd ignores a gres.conf File= that is not a character/block device
# (then the GRES count is still scheduled, but CUDA_VISIBLE_DEVICES is never set),
# so make character devices 195:i (NVIDIA's major; no driver here, nothing opens
# them).  Not /dev/null's 1:3: with ConstrainDevices the devices cgroup would then
# deny /dev/null itself to every job (slurmstepd: "Could not open stdin file").
gpu_last=$(( NGPUS - 1 ))
slurm_changed=
for i in $(seq 0 "$gpu_last"); do
  f=$STATE/fake-gpu/nvidia$i
  [ -c "$f" ] && [ "$(stat -c '%t:%T' "$f")" = "c3:$(printf '%x' "$i")" ] && continue
  rm -f "$f"; slurm_changed=1
  mknod -m 0666 "$f" c 195 "$i" 2>/dev/null || { : > "$f"; say "WARNING: mknod failed; $f is a plain file (CUDA_VISIBLE_DEVICES will not be set)"; }
done

# RealMemory as slurmd itself sees it, so the node is never drained for "Low RealMemory"
MEM=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -n1)
[ -n "$MEM" ] || MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 ))
# Memory is a consumable resource (CR_CPU_Memory), so a job's --mem is its allocation
# and its limit; a job that names no size gets the node's memory per CPU.
DEF_MEM_PER_CPU=$(( MEM / CPUS ))

# cgroup v1 memory controller usable: mounted (not cgroup2) and we may create a group in it
cgroup_v1_memory() {
  local probe=/sys/fs/cgroup/memory/slurm-up-probe.$$
  [ "$(stat -f -c %T /sys/fs/cgroup/memory 2>/dev/null)" = cgroupfs ] || return 1
  [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ] || return 1
  mkdir "$probe" 2>/dev/null || return 1
  rmdir "$probe"
}
if [ "$CGROUP" = auto ]; then
  if cgroup_v1_memory; then CGROUP=yes; else CGROUP=no; fi
fi

# Samples every ACCT_FREQ s give MaxRSS/TotalCPU per step (the default, 30 s, misses
# short tasks). Without cgroups, OverMemoryKill is what enforces --mem.
if [ "$ACCOUNTING" = slurmdbd ]; then
  ACCT_LINES="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=6819
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=$ACCT_FREQ"
else
  ACCT_LINES="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=$ACCT_FREQ"
fi
[ "$CGROUP" = no ] && ACCT_LINES="$ACCT_LINES
JobAcctGatherParams=OverMemoryKill"

if [ "$CGROUP" = yes ]; then
  TASK_LINES="ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup"
else
  TASK_LINES="ProctrackType=proctrack/linuxproc
TaskPlugin=task/none"
fi
# Memory only: the node advertises more CPUs than exist (config_overrides), so a
# cpuset or CPU binding could name CPUs the kernel does not have.
CGROUP_CONF="# written by slurm-up.sh
CgroupPlugin=autodetect
ConstrainCores=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
ConstrainDevices=no"

SLURM_CONF="# written by slurm-up.sh - single-node cluster on localhost
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurm/slurmctld.log
SlurmdLogFile=$LOG/slurm/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
MpiDefault=none
$TASK_LINES
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=$DEF_MEM_PER_CPU
GresTypes=gpu
SchedulerType=sched/backfill
MaxArraySize=$MAX_ARRAY
ReturnToService=2
KillWait=5
OverTimeLimit=0
MinJobAge=$MIN_JOB_AGE
MailProg=/bin/true
InactiveLimit=0
SlurmctldTimeout=120
SlurmdTimeout=300
JobCompType=jobcomp/none
$ACCT_LINES
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM Gres=gpu:$GPU_TYPE:$NGPUS Features=$GPU_TYPE,ib State=UNKNOWN
PartitionName=cpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$NODE MaxTime=INFINITE State=UP"

GRES_CONF="# written by slurm-up.sh - fake GPUs (device nodes 195:N, no hardware)
AutoDetect=off
NodeName=$NODE Name=gpu Type=$GPU_TYPE File=$STATE/fake-gpu/nvidia[0-$gpu_last]"

DBD_CONF="# written by slurm-up.sh
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=slurm
LogFile=$LOG/slurm/slurmdbd.log
PidFile=$RUN/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME"

# slurm_changed may already be set above (fake GPU devices recreated)
dbd_changed=
if put_file "$ETC/slurm.conf" 0644 root:root "$SLURM_CONF"; then slurm_changed=1; say "wrote $ETC/slurm.conf"; fi
if put_file "$ETC/gres.conf" 0644 root:root "$GRES_CONF"; then slurm_changed=1; say "wrote $ETC/gres.conf"; fi
if [ "$CGROUP" = yes ]; then
  if put_file "$ETC/cgroup.conf" 0644 root:root "$CGROUP_CONF"; then slurm_changed=1; say "wrote $ETC/cgroup.conf"; fi
elif [ -e "$ETC/cgroup.conf" ]; then
  rm -f "$ETC/cgroup.conf"; slurm_changed=1; say "removed $ETC/cgroup.conf"
fi
if [ "$ACCOUNTING" = slurmdbd ]; then
  if put_file "$ETC/slurmdbd.conf" 0600 slurm:slurm "$DBD_CONF"; then dbd_changed=1; say "wrote $ETC/slurmdbd.conf"; fi
fi

# ---------------------------------------------------------------- 3. munged
if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  say "munged: already running"
else
  say "starting munged"
  rm -f /run/munge/munged.pid
  runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
  wait_for "munged" - sh -c 'munge -n | unmunge' || { show_log /var/log/munge/munged.log; die "munged did not come up"; }
  # remember that this script started it (slurm-down.sh stops only what is recorded in $RUN)
  wait_for "munged pid file" - test -s /run/munge/munged.pid && cp /run/munge/munged.pid "$RUN/munged.pid"
fi

# ---------------------------------------------------------------- 4. MariaDB + slurmdbd
if [ "$ACCOUNTING" = slurmdbd ]; then
  if alive "$RUN/mariadb.pid" mariadbd; then
    say "mariadb: already running"
  else
    rm -f "$RUN/mariadb.pid" "$DB_SOCK"
    if [ ! -d "$STATE/mysql/mysql" ]; then
      say "initialising private MariaDB datadir $STATE/mysql"
      install -d -m 0750 -o mysql -g mysql "$STATE/mysql"
      mariadb-install-db --no-defaults --user=mysql --datadir="$STATE/mysql" \
        --auth-root-authentication-method=socket --skip-test-db >"$LOG/mariadb-install.log" 2>&1 \
        || { show_log "$LOG/mariadb-install.log"; die "mariadb-install-db failed"; }
    fi
    install -d -m 0755 -o mysql -g mysql "$LOG/mariadb" "$RUN/mysql"
    say "starting mariadbd on 127.0.0.1:$DB_PORT"
    start_bg mariadb "$RUN/mariadb.pid" /usr/sbin/mariadbd --no-defaults --user=mysql \
      --datadir="$STATE/mysql" --socket="$DB_SOCK" --pid-file="$RUN/mysql/mariadbd.pid" \
      --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
      --log-error="$LOG/mariadb/error.log" --innodb-buffer-pool-size=256M \
      --innodb-log-file-size=64M --innodb-lock-wait-timeout=900 --max-allowed-packet=64M
    wait_for "mariadb" "$STARTED_PID" mariadb-admin --no-defaults --socket="$DB_SOCK" ping \
      || { show_log "$LOG/mariadb/error.log"; die "mariadbd did not come up"; }
  fi
  mariadb --no-defaults --socket="$DB_SOCK" -uroot <<SQL || die "could not create the database user"
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'127.0.0.1';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';
SQL

  if [ -n "$dbd_changed" ]; then stop_pidfile "$RUN/slurmdbd.pid" slurmdbd; fi
  if alive "$RUN/slurmdbd.pid" slurmdbd; then
    say "slurmdbd: already running"
  else
    say "starting slurmdbd"
    start_bg slurmdbd "$RUN/slurmdbd.pid" /usr/sbin/slurmdbd -D
    wait_for "slurmdbd" "$STARTED_PID" sacctmgr -n list cluster \
      || { show_log "$LOG/slurm/slurmdbd.log"; die "slurmdbd did not come up"; }
  fi
  if [ -z "$(sacctmgr -n -P list cluster format=Cluster where cluster="$CLUSTER")" ]; then
    say "registering cluster $CLUSTER in slurmdbd"
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
  fi
fi

# ---------------------------------------------------------------- 5. slurmctld + slurmd
if [ -n "$slurm_changed" ]; then
  stop_pidfile "$RUN/slurmd.pid" slurmd
  stop_pidfile "$RUN/slurmctld.pid" slurmctld
fi
if alive "$RUN/slurmctld.pid" slurmctld; then
  say "slurmctld: already running"
else
  say "starting slurmctld"
  start_bg slurmctld "$RUN/slurmctld.pid" /usr/sbin/slurmctld -D
  wait_for "slurmctld" "$STARTED_PID" scontrol ping \
    || { show_log "$LOG/slurm/slurmctld.log"; die "slurmctld did not come up"; }
fi
SLURMD_PID=-; SLURMD_T0=0
if alive "$RUN/slurmd.pid" slurmd; then
  say "slurmd: already running"
else
  say "starting slurmd"
  SLURMD_T0=$(( $(date +%s) - 1 ))
  start_bg slurmd "$RUN/slurmd.pid" /usr/sbin/slurmd -D
  SLURMD_PID=$STARTED_PID
fi

# usable = state idle/mixed/allocated/completing without the "*" of a non-responding
# node, and (when slurmd was just started) registered by that slurmd: slurmctld
# restores the old node state from its state file before slurmd registers.
node_ok() {
  local st t
  if [ "$SLURMD_T0" != 0 ]; then
    t=$(scontrol show node "$NODE" -o 2>/dev/null | sed -n 's/.*SlurmdStartTime=\([^ ]*\).*/\1/p')
    [ -n "$t" ] && [ "$t" != None ] && [ "$(date -d "$t" +%s 2>/dev/null || echo 0)" -ge "$SLURMD_T0" ] || return 1
  fi
  st=$(sinfo -h -N -n "$NODE" -o %T 2>/dev/null | sort -u)
  case "$st" in idle|mixed|allocated|completing) return 0;; esac
  case "$st" in *drain*|down*) scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true;; esac
  return 1
}
wait_for "node $NODE usable" "$SLURMD_PID" node_ok \
  || { sinfo -N -l >&2 || true; show_log "$LOG/slurm/slurmd.log"; show_log "$LOG/slurm/slurmctld.log"; die "node never became idle"; }

if [ "$ACCOUNTING" = slurmdbd ]; then
  registered() { [ -n "$(sacctmgr -n -P list cluster format=ControlHost where cluster="$CLUSTER" 2>/dev/null)" ]; }
  wait_for "cluster $CLUSTER registered with slurmdbd" - registered \
    || { show_log "$LOG/slurm/slurmctld.log"; show_log "$LOG/slurm/slurmdbd.log"; die "slurmctld did not register with slurmdbd"; }
fi

say "cluster $CLUSTER up: $(sinfo -h -o '%P %a %D %T' | tr '\n' ';') accounting=$ACCOUNTING"
