#!/usr/bin/env bash
# The figures of examples/emulate-results.md: the scheduler/fifo_batch/wbt table on every
# preset (every setting, ROUNDS rounds; sdcard with 64 MiB io_load files, which its 10 MB/s
# writes can complete while the job runs), and `tune --scratch --emulate hdd-5400 --policy
# slowdisk` twice, then their sweet spots again on fresh runs (confirm). Three streams run at
# once (hdd-5400; the tunes, then hdd-7200, then confirm; emmc, then sdcard), which is how the
# published figures were made (confirm after the others), on a machine shared with builds.
# Run as root from the repository: bash examples/emulate_bench.sh OUTDIR
# (STAGES picks among "table tune presets confirm"; ROUNDS, JOB_SCALE.)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/emulate-bench}
mkdir -p "$out"
cargo build --release --bin sweetspot --example emulate_bench
bin="$out/bin"
mkdir -p "$bin/examples"
target=${CARGO_TARGET_DIR:-target}
cp "$target/release/sweetspot" "$bin/"
cp "$target/release/examples/emulate_bench" "$bin/examples/"
scale=${JOB_SCALE:-0.3}
rounds=${ROUNDS:-6}
stages=${STAGES:-table tune presets confirm}
table() { "$bin/examples/emulate_bench" "$1" "$rounds" "$scale" full ${2:-} >"$out/$1.txt" 2>"$out/$1.err"; }
if [[ $stages == *table* ]]; then table hdd-5400; fi &
(
  if [[ $stages == *tune* ]]; then
    for run in 1 2; do
      start=$(date +%s)
      "$bin/sweetspot" --db "$out/tune-$run.db" tune --scratch --emulate hdd-5400 \
        --policy policies/slowdisk.toml --job-scale "$scale" --seed "$run" \
        >"$out/tune-$run.txt" 2>"$out/tune-$run.err" || true
      echo "tune run $run: $(( $(date +%s) - start )) s" >>"$out/tune-$run.txt"
    done
  fi
  if [[ $stages == *presets* ]]; then table hdd-7200; fi
  # The two tunes' sweet spots (as they came out here) and wbt alone, on fresh runs.
  if [[ $stages == *confirm* ]]; then
    "$bin/examples/emulate_bench" hdd-5400 "$rounds" "$scale" custom 256 \
      "default (none, wbt 75000)@scheduler=none,wbt_lat_usec=75000,read_ahead_kb=2560" \
      "tune 1 best (mq-dl 4, 256)@scheduler=mq-deadline,fifo_batch=4,wbt_lat_usec=256,read_ahead_kb=1024" \
      "tune 2 best (kyber, 512)@scheduler=kyber,wbt_lat_usec=512,read_ahead_kb=1024" \
      "none, wbt 512 only@scheduler=none,wbt_lat_usec=512,read_ahead_kb=2560" \
      >"$out/confirm.txt" 2>"$out/confirm.err"
  fi
) &
if [[ $stages == *presets* ]]; then table emmc; table sdcard 64; fi &
wait
echo done >"$out/DONE"
