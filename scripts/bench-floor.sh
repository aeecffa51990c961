#!/usr/bin/env bash
# bench-floor.sh measures how fast PostgreSQL alone answers the one
# statement a random offset's page cannot do without, next to flagadmin
# answering those pages, on the same world, connections and machine, one
# after the other:
#
#   1. flagadmin-bench --kinds varied/offset with the result cache off
#      (the server over HTTP, with the bare net/http ceiling);
#   2. pgbench (PostgreSQL's own load tool, in C), on as many connections,
#      running only the statement that reads a page of 50 events: the page
#      statement flagadmin runs once the counts have found the page (the
#      range of events_created from the page's first row, kept prepared),
#      at a random day of the world's two years and a random offset into
#      it. flagadmin runs it too, after finding where the page starts
#      (the months and days of event_counts) and the caller's visibility.
#
# If the database alone, answering nothing but that statement, takes the
# p99 a target allows, no server in front of it can meet the target on
# that machine. The p50 and p99 of pgbench come from its log of every
# statement, without the warm-up.
#
# Usage: scripts/bench-floor.sh
#
# Settings (environment):
#   DB           a PostgreSQL database holding flagadmin-bench's world of EVENTS events
#                (default postgres://postgres@127.0.0.1:5432/bench1m?sslmode=disable);
#                loaded first when missing or empty (minutes). The server runs on a
#                fresh copy; pgbench reads the world itself (it only reads)
#   EVENTS       events in the world (default 1000000)
#   CONNECTIONS  default 16
#   DURATION     default 10 (seconds); WARMUP default 3 (seconds), each part
#   RESULTS      results directory (default bench-results, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."

DB="${DB:-postgres://postgres@127.0.0.1:5432/bench1m?sslmode=disable}"
EVENTS="${EVENTS:-1000000}"
CONNECTIONS="${CONNECTIONS:-16}"
DURATION="${DURATION:-10}"
WARMUP="${WARMUP:-3}"
RESULTS="${RESULTS:-bench-results}"
OUT="$RESULTS/floor-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"
command -v pgbench >/dev/null || { echo "bench-floor.sh: pgbench not found (Debian: postgresql-client)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/flagadmin-bench" ./cmd/flagadmin-bench

echo "== flagadmin, varied/offset, result cache off"
"$tmp/flagadmin-bench" --db "$DB" --events "$EVENTS" --connections "$CONNECTIONS" \
	--duration "${DURATION}s" --warmup "${WARMUP}s" --kinds varied/offset --result-cache-size 0 \
	--json "$OUT/flagadmin.json" | tee "$OUT/flagadmin.txt"

# The world's newest day (its end, in ms) and its events per day.
read -r newest perday < <(psql -At -F ' ' "$DB" -c \
	"SELECT (MAX(created_at) / 86400000 + 1) * 86400000, COUNT(*) * 86400000 / GREATEST(MAX(created_at) - MIN(created_at), 1) FROM events")
days=$(( EVENTS / (perday > 0 ? perday : 1) ))
columns="e.id, e.created_at, e.type, e.created_by, e.created_by_user_id, e.environment, e.project, e.feature_name, e.data, e.pre_data, e.tags, e.group_type, e.group_id"
cat > "$tmp/page.sql" <<EOF
\set day random(1, $days)
\set skip random(0, $(( perday > 0 ? perday - 1 : 0 )))
\set before $newest - :day * 86400000
SELECT $columns FROM events AS e WHERE created_at < :before AND (e.created_at, e.id) <= (SELECT created_at, id FROM events WHERE created_at < :before ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET (SELECT CAST(:skip AS bigint))) ORDER BY created_at DESC, id DESC LIMIT 50;
EOF

echo
echo "== PostgreSQL alone: the page statement ($days days of $perday events, offsets 0-$((perday - 1)) into a day), $CONNECTIONS connections"
pgbench -n -M prepared -c "$CONNECTIONS" -j 2 -T "$WARMUP" -f "$tmp/page.sql" "$DB" >/dev/null
(cd "$tmp" && pgbench -n -M prepared -c "$CONNECTIONS" -j 2 -T "$DURATION" -f page.sql -l --log-prefix=page "$DB") | tee "$OUT/pgbench.txt"
# Each line of the log: client, transaction, latency in microseconds, ...
cat "$tmp"/page.* | awk '{print $3}' | sort -n | awk -v n="$CONNECTIONS" '
	{ v[NR] = $1 }
	END { printf "pgbench page statement: %d statements, p50 %.2f ms, p99 %.2f ms on %d connections\n", NR, v[int(NR * 0.50)] / 1000, v[int(NR * 0.99)] / 1000, n }' |
	tee -a "$OUT/pgbench.txt"
echo "results in $OUT"
