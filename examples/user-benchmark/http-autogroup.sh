#!/usr/bin/env bash
# Runs examples/user-benchmark/http-autogroup.toml: starts lighttpd on 127.0.0.1:8089 serving
# one small file, tunes the host-wide scheduler knobs against `ab` with `sweetspot tune --host`,
# and stops lighttpd again (also on error or Ctrl-C). Needs root, lighttpd and apache2-utils.
#   usage: examples/user-benchmark/http-autogroup.sh [sweetspot tune options, e.g. --seed 1]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${SWEETSPOT:-sweetspot}"
work="$(mktemp -d)"
mkdir -p "$work/www"
echo "hello from sweetspot's example" > "$work/www/index.html"
cat > "$work/lighttpd.conf" <<CONF
server.document-root = "$work/www"
server.bind = "127.0.0.1"
server.port = 8089
server.errorlog = "$work/error.log"
CONF
lighttpd -D -f "$work/lighttpd.conf" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do
  (exec 3<>/dev/tcp/127.0.0.1/8089) 2>/dev/null && break
  sleep 0.1
done
"$bin" tune --host --policy "$here/http-autogroup.toml" "$@"
