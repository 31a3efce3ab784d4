#!/bin/sh
# The daemon's idle footprint over 60 s on the release binary: RSS (anonymous and
# file-backed, /proc/PID/status), CPU % (utime + stime from /proc/PID/stat over the window),
# and the stripped binary's size. Two cases: no enrolled device, and an enrolled loop device
# (ext4, mounted) waiting for an idle window that never comes (load_avg_max = 0).
#
#   cargo build --release && sh examples/daemon_footprint.sh [target/release/sweetspot] [SECONDS]
#
# Needs root (losetup, mount). Everything it makes is removed at the end, also on Ctrl-C.
set -eu
BIN=$(readlink -f "${1:-target/release/sweetspot}")
SECS=${2:-60}
W=$(mktemp -d)
LOOP=
cleanup() {
    [ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
    mountpoint -q "$W/mnt" 2>/dev/null && umount "$W/mnt"
    [ -n "$LOOP" ] && losetup -d "$LOOP"
    rm -rf "$W"
}
trap cleanup EXIT INT TERM
HZ=$(getconf CLK_TCK)
cp "$BIN" "$W/stripped" && strip "$W/stripped"
echo "binary: $(stat -c %s "$BIN") bytes, stripped $(stat -c %s "$W/stripped") bytes"

measure() { # $1: label, $2: config file
    "$BIN" --db "$W/$1.db" daemon --config "$2" 2>"$W/$1.log" &
    PID=$!
    sleep 2
    t0=$(awk '{print $14 + $15}' "/proc/$PID/stat")
    sleep "$SECS"
    t1=$(awk '{print $14 + $15}' "/proc/$PID/stat")
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status")
    anon=$(awk '/^RssAnon/ {print $2}' "/proc/$PID/status")
    file=$(awk '/^RssFile/ {print $2}' "/proc/$PID/status")
    cpu=$(echo "$t0 $t1 $HZ $SECS" | awk '{printf "%.3f", 100 * ($2 - $1) / $3 / $4}')
    printf '%s: RSS %s KiB (anon %s, file %s), CPU %s%% over %s s\n' \
        "$1" "$rss" "$anon" "$file" "$cpu" "$SECS"
    kill -TERM "$PID"; wait "$PID" || true; PID=
}

printf 'poll_s = 5\n' >"$W/none.toml"
measure "no enrolled device" "$W/none.toml"

truncate -s 256M "$W/disk.img"
LOOP=$(losetup -f --show "$W/disk.img")
mkfs.ext4 -q "$LOOP" && mkdir "$W/mnt" && mount "$LOOP" "$W/mnt"
printf 'enroll = ["loop:%s"]\npoll_s = 5\n[idle]\nload_avg_max = 0\n' "$W/disk.img" >"$W/one.toml"
measure "one enrolled device waiting" "$W/one.toml"
grep -h "" "$W"/*.log | sed 's/^/  log: /' | head -5
