#!/usr/bin/env bash
# Rounds 3.. without wbt 0 (its cells take 2 min each; rounds 1-2 have them).
set -u
while [ $(grep -c . /tmp/ncq/progress) -lt 23 ]; do sleep 5; done
touch /tmp/ncq/STOP
while ! tail -1 /tmp/ncq/progress | grep -q done; do sleep 5; done
rm /tmp/ncq/STOP
out=/tmp/ncq/runs
specs=("hdd-5400" "hdd-5400,ncq=32" "hdd-5400,wcache=8MiB" "hdd-5400,ncq=32,wcache=8MiB")
cells=()
for s in "${specs[@]}"; do for w in 2000 75000; do cells+=("$s|$w"); done; done
n=${#cells[@]}
for r in 3 4 5 6; do
  [ -e /tmp/ncq/STOP ] && break
  order=()
  for i in $(seq 0 $((n-1))); do order+=("${cells[$(( (i + r*3) % n ))]}"); done
  if (( r % 2 == 0 )); then rev=(); for ((i=n-1;i>=0;i--)); do rev+=("${order[$i]}"); done; order=("${rev[@]}"); fi
  for c in "${order[@]}"; do
    [ -e /tmp/ncq/STOP ] && break
    spec=${c%|*}; w=${c#*|}
    tag="r${r}_$(echo $spec | tr ',=' '__')_w$w"
    start=$(date +%s)
    TMPDIR=/dev/shm/ncq /tmp/ncq-bin/sweetspot --db /tmp/ncq/bench.db bench --scratch --emulate "$spec" --job-scale 0.3 \
      --loads no_load,io_load --runs 1 --set wbt_lat_usec=$w -q --csv >$out/$tag.csv 2>$out/$tag.err
    echo "$r|$spec|$w|$?|$(( $(date +%s) - start ))|$(date +%T)" >>/tmp/ncq/progress
  done
done
echo done2 >>/tmp/ncq/progress
