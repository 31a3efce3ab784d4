#!/usr/bin/env bash
# A short fuzz run of every target, for CI or a quick local check (fuzz/README.md).
#
#   fuzz/smoke.sh [SECONDS_PER_TARGET]      (default 20)
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`); without them it says
# so and exits 0, so a CI step may call it unconditionally. Runs each target on one core from
# the kept corpus (fuzz/corpus/<target>/, read only: new inputs go to a temporary directory)
# with its dictionary. Exit 1 when a target crashes: the input is in
# fuzz/artifacts/<target>/ (keep it under fuzz/regressions/<target>/ once the parser is fixed).
set -euo pipefail

secs="${1:-20}"
here="$(cd "$(dirname "$0")" && pwd)"
targets=(policy surface profile daemon_config emulate_spec)

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz smoke: no nightly toolchain (rustup toolchain install nightly): skipped"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz smoke: cargo-fuzz is not installed (cargo install cargo-fuzz): skipped"
    exit 0
fi

cd "$here"
# One build for all the targets (no sanitizer: the parsers are safe Rust, and a panic, an
# overflow (debug assertions are on) or a stack overflow is caught without one).
cargo +nightly fuzz build -s none

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
for t in "${targets[@]}"; do
    mkdir -p "$work/$t"
    log="$work/$t.log"
    echo "fuzz smoke: $t for ${secs}s"
    if cargo +nightly fuzz run -s none "$t" "$work/$t" "corpus/$t" -- \
        -dict="dict/$t.dict" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 >"$log" 2>&1; then
        runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)"
        echo "fuzz smoke: $t: ${runs:-?} executions, no finding"
    else
        tail -n 40 "$log"
        failed+=("$t")
    fi
done
if ((${#failed[@]})); then
    echo "fuzz smoke: findings in: ${failed[*]} (inputs under fuzz/artifacts/)"
    exit 1
fi
