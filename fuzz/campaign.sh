#!/usr/bin/env bash
# The long fuzz campaign, by hand (fuzz/README.md):
#
#   fuzz/campaign.sh SECONDS_PER_TARGET [TARGET...]      (default: every target)
#
# Runs each target in turn on one core (-jobs=1 -workers=1) for SECONDS, from the kept corpus
# (corpus/<target>/) with its dictionary, new inputs going to work/<target>/ (ignored by git).
# Logs: work/<target>.log. Prints each target's executions (libFuzzer's
# stat::number_of_executed_units). Exit 1 if a target found something: the input is in
# artifacts/<target>/.
set -euo pipefail

secs="${1:?seconds per target}"
shift
here="$(cd "$(dirname "$0")" && pwd)"
if (($#)); then targets=("$@"); else targets=(policy surface profile daemon_config emulate_spec); fi

cd "$here"
cargo +nightly fuzz build -s none
status=0
for t in "${targets[@]}"; do
    mkdir -p "work/$t"
    rm -f fuzz-0.log
    # -jobs runs the fuzzer as a child process whose output goes to fuzz-0.log.
    if ! cargo +nightly fuzz run -s none "$t" "work/$t" "corpus/$t" -- \
        -dict="dict/$t.dict" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -jobs=1 -workers=1 -print_final_stats=1 >/dev/null 2>&1; then
        status=1
    fi
    mv -f fuzz-0.log "work/$t.log" 2>/dev/null || true
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "work/$t.log" | grep -o '[0-9]*$' |
        tail -n 1 || true)"
    if grep -q 'ERROR: libFuzzer\|panicked at\|deadly signal' "work/$t.log"; then
        status=1
        echo "$t: ${runs:-?} executions in ${secs}s: FINDING (see work/$t.log, artifacts/$t/)"
    else
        echo "$t: ${runs:-?} executions in ${secs}s: no finding"
    fi
done
exit "$status"
