#!/bin/bash
# The start-up judge at wbt_lat_usec 75000 (A), 2000 (B), 512 (C) on --emulate hdd-5400,
# in a balanced order (ABC, CBA, BCA, ACB, CAB, BAC, ...). Phase 1: no_load + light_io_load,
# 4 runs each per invocation; phase 2: io_load, 1 run per invocation, until a deadline.
set -u
B=/tmp/startup/sweetspot-m
DB=/tmp/startup/m.db
OUT=/tmp/startup/results.jsonl
declare -A W=([A]=75000 [B]=2000 [C]=512)
ORDERS=(ABC CBA BCA ACB CAB BAC)
deadline=$(date -d "${1:-22:14}" +%s)
one() { # block setting loads runs
  local w=${W[$2]}
  local j
  j=$($B --db $DB -q bench --scratch --emulate hdd-5400 --set wbt_lat_usec=$w --startup \
      --loads $3 --runs $4 --json 2>>/tmp/startup/measure.err)
  echo "{\"block\":$1,\"setting\":\"$2\",\"wbt\":$w,\"phase\":\"$3\",\"report\":$j}" >> $OUT
  echo "$(date +%T) block $1 $2 $3 done" >> /tmp/startup/measure.log
}
for b in 0 1 2 3 4 5; do
  o=${ORDERS[$((b % 6))]}
  for s in $(echo $o | grep -o .); do one $b $s no_load,light_io_load 4; done
done
b=0
while [ $(( $(date +%s) + 420 )) -lt $deadline ]; do
  o=${ORDERS[$((b % 6))]}
  for s in $(echo $o | grep -o .); do one $b $s io_load 1; done
  b=$((b+1))
done
echo "$(date +%T) finished" >> /tmp/startup/measure.log
