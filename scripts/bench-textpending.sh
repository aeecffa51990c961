#!/usr/bin/env bash
# bench-textpending.sh measures free text on PostgreSQL after a run of
# single writes, with the pending lists of the full-text GIN indexes (the
# entries of recent inserts, which every search reads whole) at
# PostgreSQL's default limit of 4 MB and at the store's 64 kB, in turns.
# Each turn sets the limit on the world's token indexes, merges their
# pending lists, runs lifecycle/complete (single writes on 16 connections,
# each adding an event), prints how many events the pending list then
# holds (with pgstattuple, created when the role may in a schema of its
# own, bench_tools, out of the store's), then runs
# varied/query with the result cache off. The same build serves both
# turns: only the limit differs.
#
# It runs on the world itself (flagadmin-bench --in-place), which each
# turn's writes grow, and leaves the store's limit set.
#
# Usage: scripts/bench-textpending.sh
#
# Settings (environment):
#   DB           a PostgreSQL database holding flagadmin-bench's world of EVENTS events
#                (default postgres://postgres@127.0.0.1:5432/bench1m?sslmode=disable);
#                built first when missing (minutes)
#   EVENTS       events in the world (default 1000000)
#   ROUNDS       turns of each limit, default then 64 kB (default 2)
#   CONNECTIONS  default 16
#   DURATION     default 8 (seconds); WARMUP default 2 (seconds), each part
set -euo pipefail
cd "$(dirname "$0")/.."

DB="${DB:-postgres://postgres@127.0.0.1:5432/bench1m?sslmode=disable}"
EVENTS="${EVENTS:-1000000}"
ROUNDS="${ROUNDS:-2}"
CONNECTIONS="${CONNECTIONS:-16}"
DURATION="${DURATION:-8}"
WARMUP="${WARMUP:-2}"
INDEXES="events_payload_tokens events_meta_tokens"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/flagadmin-bench" ./cmd/flagadmin-bench

run() {
	"$tmp/flagadmin-bench" --db "$DB" --events "$EVENTS" --in-place --connections "$CONNECTIONS" \
		--duration "${DURATION}s" --warmup "${WARMUP}s" --kinds "$1" --result-cache-size 0 --ceiling=false |
		grep -E "^ +kind |^ +$1 +[0-9]"
}

# The world, and the store's schema (its migrations), before the first turn.
run varied/none >/dev/null
psql -q "$DB" -c "CREATE SCHEMA IF NOT EXISTS bench_tools" -c "CREATE EXTENSION IF NOT EXISTS pgstattuple SCHEMA bench_tools" 2>/dev/null || true
echo "$(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for round in $(seq "$ROUNDS"); do
	for limit in default 64; do
		for ix in $INDEXES; do
			if [ "$limit" = default ]; then
				psql -q "$DB" -c "ALTER INDEX $ix RESET (gin_pending_list_limit)"
			else
				psql -q "$DB" -c "ALTER INDEX $ix SET (gin_pending_list_limit = $limit)"
			fi
			psql -qAt "$DB" -c "SELECT gin_clean_pending_list('$ix')" >/dev/null
		done
		echo "== round $round, pending list limit $limit (kB), load average $(cut -d' ' -f1 /proc/loadavg)"
		run lifecycle/complete
		echo "events in the pending list of events_payload_tokens: $(psql -qAt "$DB" -c "SELECT pending_tuples FROM bench_tools.pgstatginindex('events_payload_tokens')" 2>/dev/null || echo "? (no pgstattuple)")"
		run varied/query
	done
done
