#!/bin/bash
# Balanced order driver: rounds ABC, CBA, BCA, ACB, CAB, BAC, ...; per setting a
# capped run (S's auto 4000 KB/s cap) and an uncapped run, mode order alternating by round.
cd /tmp/souter
declare -A V=([A]=75000 [B]=2000 [C]=512)
ORDERS=(ABC CBA BCA ACB CAB BAC ABC CBA BCA ACB CAB BAC)
CAP_IT=5; UNC_IT=3
for r in "${!ORDERS[@]}"; do
  o=${ORDERS[$r]}
  modes="capped"  # from 22:37: capped only (uncapped runs stalled the shared machine)
  for ((k=0;k<3;k++)); do
    s=${o:$k:1}; v=${V[$s]}
    for m in $modes; do
      [[ -f STOP ]] && exit 0
      grep -qs "Latency statistics" out/r$((r+1))-$s-$v-$m/log && continue  # done before a restart
      if [[ $m == capped ]]; then rate='""'; it=$CAP_IT; else rate=0; it=$UNC_IT; fi
      label=r$((r+1))-$s-$v-$m
      pre="$(ps -eo comm= | grep -cxE 'sync|fio|iostat') $(ps -eo stat= | grep -c '^D')"
      cmd="./sweetspot bench --scratch --emulate hdd-5400 --job '/tmp/souter/run_s.sh $label $rate $it' --loads no_load --runs 1 --set wbt_lat_usec=$v --json"
      echo "$(date +%T) START $label :: $cmd :: $(uptime)" >> drive.log
      eval "$cmd" > out/$label.json 2> out/$label.stderr
      rc=$?
      echo "$(date +%T) END $label rc=$rc pre(sync/fio/iostat, D)=$pre post=$(ps -eo comm= | grep -cxE 'sync|fio|iostat') $(ps -eo stat= | grep -c '^D') :: $(uptime)" >> drive.log
    done
  done
done
