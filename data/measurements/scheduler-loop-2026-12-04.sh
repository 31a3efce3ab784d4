#!/bin/bash
# Interleaved io_load runs per scheduler on one file-backed ext4 loop device, as root:
#   ROUNDS=12 data/measurements/scheduler-loop-2026-12-04.sh   # rows in $D/rows.csv
# Each round runs every scheduler once, in an order shuffled by the round number. The loop
# queue's scheduler is put back, the filesystem unmounted and the device detached on exit.
# (The run of 2026-12-04 used this script before its safety checks were added: the same
# steps without `set -e`, the mountpoint check and the HUP trap. The CSV's two comment lines
# and its header were added by hand.)
set -euo pipefail
D=${D:-/tmp/meas}; BIN=${BIN:-target/release/sweetspot}; MNT=/mnt/meas
SCHEDS=${SCHEDS:-"none mq-deadline kyber"}
mkdir -p "$D" "$MNT"
truncate -s 1G /var/tmp/meas-backing.img
LOOP=$(losetup -f --show /var/tmp/meas-backing.img); NAME=$(basename "$LOOP")
ORIG=$(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$NAME/queue/scheduler")
cleanup() {
  echo "$ORIG" > "/sys/block/$NAME/queue/scheduler" || true
  umount "$MNT" 2>/dev/null || true
  losetup -d "$LOOP" || true
  rm -f /var/tmp/meas-backing.img
}
trap cleanup EXIT; trap "exit 1" TERM INT HUP
mkfs.ext4 -q "$LOOP"; mount "$LOOP" "$MNT"
mountpoint -q "$MNT" || { echo "$MNT is not mounted" >&2; exit 1; }
echo "loop=$LOOP orig=$ORIG" > "$D/info"
for r in $(seq 1 "${ROUNDS:-12}"); do
  for s in $(printf "%s\n" $SCHEDS | shuf --random-source=<(yes "$r")); do
    out=$("$BIN" bench --device "$NAME" --dir "$MNT" --set "scheduler=$s" --loads io_load \
      --runs 1 --csv --db "$D/db" -q 2>>"$D/err")
    echo "$r,$s,$(echo "$out" | tail -1)" >> "$D/rows.csv"
  done
done
