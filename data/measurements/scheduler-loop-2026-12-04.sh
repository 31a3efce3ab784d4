#!/bin/bash
# Interleaved io_load runs per scheduler on one file-backed ext4 loop device.
set -u
D=/tmp/meas; BIN=/work/main/target/release/sweetspot
truncate -s 1G /var/tmp/meas-backing.img
LOOP=$(losetup -f --show /var/tmp/meas-backing.img); NAME=$(basename $LOOP)
ORIG=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/block/$NAME/queue/scheduler)
cleanup() { echo "$ORIG" > /sys/block/$NAME/queue/scheduler; umount /mnt/meas 2>/dev/null; losetup -d $LOOP; rm -f /var/tmp/meas-backing.img; }
trap cleanup EXIT; trap "exit 1" TERM INT
mkfs.ext4 -q $LOOP; mkdir -p /mnt/meas; mount $LOOP /mnt/meas
echo "loop=$LOOP orig=$ORIG" > $D/info
for r in $(seq 1 ${ROUNDS:-8}); do
  for s in $(printf "none\nmq-deadline\nkyber\n" | shuf --random-source=<(yes $r)); do
    out=$($BIN bench --device $NAME --dir /mnt/meas --set scheduler=$s --loads io_load --runs 1 --csv --db $D/db -q 2>>$D/err)
    echo "$r,$s,$(echo "$out" | tail -1)" >> $D/rows.csv
  done
done
