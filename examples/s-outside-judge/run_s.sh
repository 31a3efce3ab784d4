#!/bin/bash
# Job for `sweetspot bench --job`: runs S's comm_startup_lat (patched copy in
# /tmp/souter/S) with its files in the job's directory on the scratch device.
# usage: run_s.sh LABEL MAXRATE ITERS   (MAXRATE '' = S's automatic cap, 0 = uncapped)
LABEL=$1; MAXRATE=$2; ITERS=$3
OUT=/tmp/souter/out/$LABEL; mkdir -p "$OUT"
export S_BASE_DIR=$PWD/S-work
export S_DEV=$(basename "$(df --output=source . | tail -1)")
export HOME=/tmp/souter/home
unset SUDO_USER
q=/sys/block/$S_DEV/queue
{ echo "cwd=$PWD dev=$S_DEV rotational=$(cat $q/rotational) wbt_lat_usec=$(cat $q/wbt_lat_usec) scheduler=$(cat $q/scheduler) maxrate='$MAXRATE' iters=$ITERS"
  echo "start $(date +%T) $(uptime)"; } > "$OUT/info"
cd /tmp/souter/S/comm_startup_lat
./comm_startup_lat.sh cur-sched 0 2 seq "$ITERS" "replay-startup-io xterm" "$OUT" 120 "" "$MAXRATE" > "$OUT/log" 2>&1
rc=$?
{ echo "end $(date +%T) $(uptime)"
  echo "leftover non-zombie sync/fio/iostat on the machine: $(ps -eo stat=,comm= | awk '$1 !~ /^Z/ && $2 ~ /^(sync|fio|iostat)$/' | wc -l) (zombies: $(ps -eo stat=,comm= | awk '$1 ~ /^Z/ && $2 ~ /^(sync|fio|iostat)$/' | wc -l))"
  echo "D-state: $(ps -eo stat=,comm= | awk '$1 ~ /^D/' | tr '\n' ';')"; } >> "$OUT/info"
grep -q "Latency statistics" "$OUT/log" || rc=${rc/#0/3}
exit $rc
