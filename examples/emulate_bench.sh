#!/usr/bin/env bash
# The figures of examples/emulate-results.md: the scheduler/fifo_batch/wbt table on every
# preset (hdd-5400 with every setting and 6 rounds first; the others with the short set and
# fewer rounds), then `tune --scratch --emulate hdd-5400 --policy slowdisk` twice.
# Run as root from the repository: bash examples/emulate_bench.sh OUTDIR
# (STAGES="tune presets" skips the hdd-5400 table; ROUNDS, SHORT_ROUNDS, JOB_SCALE.)
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
stages=${STAGES:-table tune presets}
if [[ $stages == *table* ]]; then
  "$bin/examples/emulate_bench" hdd-5400 "${ROUNDS:-6}" "$scale" full >"$out/hdd-5400.txt" 2>"$out/hdd-5400.err"
fi
[[ $stages == *tune* ]] && for run in 1 2; do
  start=$(date +%s)
  "$bin/sweetspot" --db "$out/tune-$run.db" tune --scratch --emulate hdd-5400 --policy slowdisk \
    --job-scale "$scale" --seed "$run" >"$out/tune-$run.txt" 2>"$out/tune-$run.err" || true
  echo "tune run $run: $(( $(date +%s) - start )) s" >>"$out/tune-$run.txt"
done
[[ $stages == *presets* ]] && for p in hdd-7200 sdcard emmc; do
  "$bin/examples/emulate_bench" "$p" "${SHORT_ROUNDS:-3}" "$scale" short >"$out/$p.txt" 2>"$out/$p.err"
done
echo done >"$out/DONE"
