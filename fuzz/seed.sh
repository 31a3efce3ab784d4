#!/usr/bin/env bash
# Seeds the fuzz corpora (fuzz/corpus/<target>/) from the repository's own files, and from the
# hand-written inputs in fuzz/seeds/<target>/ (valid profiles, daemon configs and emulate
# specs that no other file holds). Copies without overwriting; minimise afterwards with
# `cargo fuzz cmin` (fuzz/README.md).
set -euo pipefail
fuzz="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$fuzz")"

# seed TARGET FILE...: copies each FILE to corpus/TARGET/, prefixed with its directory.
seed() {
    local t="$1"
    shift
    mkdir -p "$fuzz/corpus/$t"
    for f in "$@"; do
        [ -f "$f" ] || continue
        local rel="${f#"$repo"/}"
        cp -n "$f" "$fuzz/corpus/$t/seed-${rel//\//_}"
    done
}

seed policy "$repo"/policies/*.toml "$repo"/tests/policies/*.toml \
    "$repo"/tests/invalid_policies/*.toml "$repo"/examples/user-benchmark/*.toml
seed surface "$repo"/data/surfaces/*.toml "$repo"/tests/surfaces/*.toml \
    "$repo"/tests/invalid_surfaces/*.toml
seed profile "$repo"/tests/invalid_profiles/*.toml "$fuzz"/seeds/profile/*
seed daemon_config "$repo"/examples/daemon.toml "$fuzz"/seeds/daemon_config/*
seed emulate_spec "$fuzz"/seeds/emulate_spec/*
# The presets, by name.
for p in hdd-5400 hdd-7200 sdcard emmc; do
    printf '%s' "$p" >"$fuzz/corpus/emulate_spec/seed-preset-$p"
done
