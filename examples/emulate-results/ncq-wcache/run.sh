#!/usr/bin/env bash
# Balanced rounds: every (spec, wbt) cell once per round; the order rotates and reverses.
set -u
out=/tmp/ncq/runs; mkdir -p $out
specs=("hdd-5400" "hdd-5400,ncq=32" "hdd-5400,wcache=8MiB" "hdd-5400,ncq=32,wcache=8MiB")
wbts=(0 2000 75000)
cells=()
for s in "${specs[@]}"; do for w in "${wbts[@]}"; do cells+=("$s|$w"); done; done
n=${#cells[@]}
for r in $(seq 1 ${ROUNDS:-8}); do
  [ -e /tmp/ncq/STOP ] && break
  order=()
  for i in $(seq 0 $((n-1))); do order+=("${cells[$(( (i + r*5) % n ))]}"); done
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
echo done >>/tmp/ncq/progress
