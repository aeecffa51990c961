#!/usr/bin/env bash
# bench.sh runs the end-to-end benchmark (cmd/flagadmin-bench)
# on PostgreSQL and on SQLite with one command: for each database it loads
# (or reuses) a world of 1,000,000 events, 200 projects and 20,000 features,
# starts the server as a child process, measures the bare net/http ceiling,
# drives every kind of request for $DURATION each on $CONNECTIONS
# connections, and prints the table; again with the server's result cache
# off; then the project list alone on a world of 10,000 projects and
# 200,000 features; then SQLite relative to PostgreSQL, with and without
# the cache. JSON results and the printed tables go to $RESULTS/<time>/.
#
# Usage: scripts/bench.sh
#
# Settings (environment):
#   FLAGADMIN_BENCH_POSTGRES_DSN  PostgreSQL server, as for scripts/bench-store.sh
#                                 (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable);
#                                 the worlds go to databases flagadmin_bench_http and
#                                 flagadmin_bench_http_10k on that server, created when missing
#                                 (not flagadmin_bench, which bench-store.sh drops and reloads)
#   SQLITE_DIR                    directory of the SQLite worlds (default /tmp/flagadmin-bench)
#   DBS                           databases, default "postgres sqlite"
#   EVENTS                        events in each world (default 1000000)
#   CONNECTIONS                   default 16
#   DURATION, WARMUP              per kind of request, default 30s and 2s
#   LARGE=0                       skip the 10,000-project world
#   UNCACHED=0                    skip the second run on each database with the server's
#                                 result cache off (--result-cache-size 0), which
#                                 measures every request reading from the database
#   REBUILD=1                     reload the worlds even when the databases hold them
#   RESULTS                       results directory (default bench-results, git-ignored)
#   EXTRA                         more flags for flagadmin-bench, such as --access-log
#
# The first run loads each world (minutes per database); later runs reuse it
# while its marker names the same world; a world loaded under an older schema
# is migrated in place first (the store's migrations, as in an upgrade).
# Each run works on a fresh copy of the world (CREATE DATABASE ... TEMPLATE,
# or a copy of the SQLite file), dropped afterwards, so the lifecycle phase's
# writes never change the world: budget twice the world's disk space.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_DSN="${FLAGADMIN_BENCH_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
SQLITE_DIR="${SQLITE_DIR:-/tmp/flagadmin-bench}"
DBS="${DBS:-postgres sqlite}"
EVENTS="${EVENTS:-1000000}"
CONNECTIONS="${CONNECTIONS:-16}"
DURATION="${DURATION:-30s}"
WARMUP="${WARMUP:-2s}"
LARGE="${LARGE:-1}"
UNCACHED="${UNCACHED:-1}"
RESULTS="${RESULTS:-bench-results}"
EXTRA="${EXTRA:-}"
OUT="$RESULTS/$(date -u +%Y%m%dT%H%M%SZ)"
BIN="$SQLITE_DIR/flagadmin-bench"
mkdir -p "$OUT" "$SQLITE_DIR"

# with_db URL NAME prints URL with its database (the path) replaced by NAME.
with_db() {
	local url="$1" name="$2" query="" rest
	case "$url" in *\?*) query="?${url#*\?}"; url="${url%%\?*}" ;; esac
	rest="${url#*://}"
	case "$rest" in */*) url="${url%/"${rest#*/}"}"; url="${url%/}" ;; esac
	echo "$url/$name$query"
}

echo "building flagadmin-bench"
go build -o "$BIN" ./cmd/flagadmin-bench

rebuild=()
[ "${REBUILD:-0}" = 1 ] && rebuild=(--rebuild)

# bench NAME DB [FLAGS...]: one run, its table to $OUT/NAME.txt, its JSON to $OUT/NAME.json.
bench() {
	local name="$1" db="$2"
	shift 2
	echo
	echo "== $name ($db)"
	# shellcheck disable=SC2086 # EXTRA is split on purpose
	"$BIN" --db "$db" --events "$EVENTS" --connections "$CONNECTIONS" --duration "$DURATION" --warmup "$WARMUP" \
		--json "$OUT/$name.json" "${rebuild[@]}" "$@" $EXTRA | tee "$OUT/$name.txt"
}

for db in $DBS; do
	case "$db" in
	postgres)
		bench postgres "$(with_db "$PG_DSN" flagadmin_bench_http)"
		if [ "$UNCACHED" = 1 ]; then
			bench postgres-uncached "$(with_db "$PG_DSN" flagadmin_bench_http)" --result-cache-size 0
		fi
		;;
	sqlite)
		bench sqlite "sqlite:$SQLITE_DIR/http.db"
		if [ "$UNCACHED" = 1 ]; then
			bench sqlite-uncached "sqlite:$SQLITE_DIR/http.db" --result-cache-size 0
		fi
		;;
	*) echo "unknown database $db (use postgres, sqlite)" >&2; exit 2 ;;
	esac
done

if [ "$LARGE" = 1 ]; then
	for db in $DBS; do
		case "$db" in
		postgres) bench postgres-10k-projects "$(with_db "$PG_DSN" flagadmin_bench_http_10k)" --projects 10000 --features 200000 --kinds projects ;;
		sqlite) bench sqlite-10k-projects "sqlite:$SQLITE_DIR/http-10k.db" --projects 10000 --features 200000 --kinds projects ;;
		esac
	done
fi

if [ -f "$OUT/postgres.json" ] && [ -f "$OUT/sqlite.json" ]; then
	echo
	echo "== SQLite relative to PostgreSQL (target: every search within 3x)"
	"$BIN" compare "$OUT/postgres.json" "$OUT/sqlite.json" | tee "$OUT/sqlite-vs-postgres.txt"
fi
if [ -f "$OUT/postgres-uncached.json" ] && [ -f "$OUT/sqlite-uncached.json" ]; then
	echo
	echo "== SQLite relative to PostgreSQL, both with the result cache off"
	"$BIN" compare "$OUT/postgres-uncached.json" "$OUT/sqlite-uncached.json" | tee "$OUT/sqlite-vs-postgres-uncached.txt"
fi
echo
echo "results in $OUT"
