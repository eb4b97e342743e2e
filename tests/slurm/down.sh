#!/usr/bin/env bash
# tests/slurm/down.sh - stop the daemons that slurm-up.sh started, and nothing else.
#
# Only processes whose pid is recorded in /run/slurm-up/*.pid and whose process
# name matches are signalled (SIGTERM, then SIGKILL after 30 s).  Configs, the
# database and the slurmctld state are kept, so slurm-up.sh brings the same
# cluster back (job ids continue).  Pass --purge to also delete job state,
# the accounting database and logs (the next slurm-up.sh starts from scratch).
set -uo pipefail

RUN=/run/slurm-up
STATE=/var/lib/slurm-up
LOG=/var/log/slurm-up

[ "$(id -u)" = 0 ] || { echo "slurm-down: must run as root" >&2; exit 1; }

# running PID: true if PID exists and is not a zombie (pid 1 here may reap orphans
# only every second or two, so a stopped daemon can linger as a zombie)
running() {
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

stop() {  # stop PIDFILE COMM
  local f=$RUN/$1 comm=$2 pid i
  [ -s "$f" ] || return 0
  pid=$(tr -dc 0-9 < "$f")
  if [ -n "$pid" ] && running "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ]; then
    echo "[slurm-down] stopping $comm (pid $pid)"
    kill -TERM "$pid" 2>/dev/null
    for i in $(seq 1 300); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then
      echo "[slurm-down] $comm (pid $pid) still running after 30 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null
    fi
  else
    echo "[slurm-down] $comm: not running (stale $f)"
  fi
  rm -f "$f"
}

# order: compute daemon, controller, accounting daemon, database, auth
stop slurmd.pid    slurmd
stop slurmctld.pid slurmctld
stop slurmdbd.pid  slurmdbd
stop mariadb.pid   mariadbd
stop munged.pid    munged

if [ "${1:-}" = --purge ]; then
  echo "[slurm-down] purging $STATE and $LOG"
  rm -rf "$STATE" "$LOG"
fi
echo "[slurm-down] done"
