#!/usr/bin/env bash
# What flagadmin serve --upstream costs in front of a server: the added
# p50 latency of a small proxied request, the throughput of a static asset
# against the upstream directly, and 100 MB up and down through flagadmin
# with its peak RSS (flagadmin-bench gateway; the upstream is a static Go
# server standing in for Unleash, scripts/bench-unleash-ui.sh measures in
# front of the real Unleash). --upstream needs --follow: flagadmin follows
# the fixture's Unleash database (shared/fixtures/unleash-8.2.0), restored
# into uibench_gateway_follow on the server of PG and dropped at the end.
# Extra arguments go to flagadmin-bench gateway, such as --duration 5s
# --concurrency 8.
#
#   scripts/bench-gateway.sh
#   scripts/bench-gateway.sh --requests 2000 --duration 5s
set -euo pipefail
cd "$(dirname "$0")/.."
PG=${PG:-postgres://postgres@127.0.0.1:5432}
OPTS=${PGOPTS:-sslmode=disable}
DUMP=${DUMP:-../shared/fixtures/unleash-8.2.0/unleash.sql.gz}
DB=uibench_gateway_follow
dir=$(mktemp -d)
admin() { psql -q -v ON_ERROR_STOP=1 "$PG/postgres?$OPTS" -c "$1"; }
trap 'rm -rf "$dir"; admin "DROP DATABASE IF EXISTS $DB WITH (FORCE)"' EXIT
go build -o "$dir/flagadmin" ./cmd/flagadmin
go build -o "$dir/flagadmin-bench" ./cmd/flagadmin-bench
admin "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
admin "CREATE DATABASE $DB"
gunzip -c "$DUMP" | sed '/^\\\(un\)\{0,1\}restrict /d' | psql -q -v ON_ERROR_STOP=1 "$PG/$DB?$OPTS" >/dev/null
"$dir/flagadmin-bench" gateway --flagadmin "$dir/flagadmin" --follow "$PG/$DB?$OPTS" "$@"
