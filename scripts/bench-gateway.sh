#!/usr/bin/env bash
# What flagadmin serve --upstream costs in front of a server: the added
# p50 latency of a small proxied request, the throughput of a static asset
# against the upstream directly, and 100 MB up and down through flagadmin
# with its peak RSS (flagadmin-bench gateway; the upstream is a static Go
# server standing in for Unleash). Extra arguments go to flagadmin-bench
# gateway, such as --duration 5s --concurrency 8.
#
#   scripts/bench-gateway.sh
#   scripts/bench-gateway.sh --requests 2000 --duration 5s
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/flagadmin" ./cmd/flagadmin
go build -o "$dir/flagadmin-bench" ./cmd/flagadmin-bench
"$dir/flagadmin-bench" gateway --flagadmin "$dir/flagadmin" "$@"
