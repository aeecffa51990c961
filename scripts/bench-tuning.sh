#!/usr/bin/env bash
# bench-tuning.sh: does each piece of the store's tuning pay for itself on
# the varied workload? Runs every speed-up of adapters/bunstore on and off
# (a second store on the same database opened with
# bunstore.WithoutTuning(that speed-up)), in the same run, and prints a
# table with the ratios:
#
#   - project figures: the project list's figures kept in project_stats at
#     write time ("kept") against computed from the features and members
#     on every list ("computed"); 16 goroutines completing lifecycles in
#     one project, then in 16 projects (one writer per project), while 2
#     read the project list's figures. PostgreSQL.
#   - event counts: pages of 50 at random offsets over the whole history,
#     as varied callers (root admins, editors, viewers), the totals read
#     from event_counts and whole months and days skipped by their counts
#     ("counts") against totals counted and pages read past their offset
#     on the index ("counted"). PostgreSQL and SQLite.
#   - page statements: the varied pages (first pages, a random feature,
#     project, type or creator, IS_ANY_OF of 2-8 projects, a month) as
#     varied callers, one statement per page, prepared when its plan allows
#     and decoded from pgx's raw values ("statements"), against the portable
#     page in a read-only transaction through database/sql ("portable").
#     PostgreSQL.
#   - cache invalidation: the varied mix with one lifecycle completion in
#     ten, through the Service: the result cache with its global
#     invalidation ("global") against no cache ("no-cache"), and against a
#     cache that is never invalidated ("never-invalidated": stale answers,
#     the upper bound of any finer invalidation). PostgreSQL.
#
# The benchmarks are in adapters/bunstore/tuning_bench_test.go. 16
# concurrent requests, each arm measured for DURATION in 4 rounds (the arms
# take turns, every other round in reverse order), each after 1 s of
# warm-up. Opening a store without a summary marks it stale in the
# database (summary_state); the benchmarks mark it fresh again, as their
# arms leave it true (see storeWithout in the benchmarks).
#
# Data: the default worldgen world (1,000,000 events, 200 projects, seed
# 20260601).
#   - PostgreSQL: the database $TEMPLATE on $PG_DSN's server holds it; the
#     benchmarks write, so they run on a copy ($TEMPLATE_run, made with
#     CREATE DATABASE ... TEMPLATE and dropped afterwards). When $TEMPLATE
#     does not exist it is loaded first (through the store benchmarks'
#     loader, about 5 minutes on 2 cores); a flagadmin-bench world (its
#     --db) serves as well.
#   - SQLite: $SQLITE, loaded on first use (about 3-10 minutes), then
#     reused while its marker matches. SQLITE= skips SQLite.
#
# Time: about 4-5 minutes with the worlds in place (DURATION=8s; 12s took
# 5m50s at load average 14-21).
#
#   scripts/bench-tuning.sh
#   DURATION=4s SQLITE= scripts/bench-tuning.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PG_DSN=${PG_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
TEMPLATE=${TEMPLATE:-flagadmin_bench_tuning}
SQLITE=${SQLITE-/tmp/flagadmin-tuning/world.db}
DURATION=${DURATION:-8s}
RUN_DB=${TEMPLATE}_run
LOG=$(mktemp /tmp/bench-tuning.XXXXXX)

psql_admin() { psql "$PG_DSN" -v ON_ERROR_STOP=1 -qAt -c "$1"; }
db_url() { # the URL of database $1 on PG_DSN's server
	local base=${PG_DSN%%\?*} query=
	[[ $PG_DSN == *\?* ]] && query="?${PG_DSN#*\?}"
	echo "${base%/*}/$1$query"
}

if [[ -z $(psql_admin "SELECT 1 FROM pg_database WHERE datname = '$TEMPLATE'") ]]; then
	echo "loading the world into $TEMPLATE (once)" >&2
	FLAGADMIN_BENCH_POSTGRES_DSN=$PG_DSN FLAGADMIN_BENCH_DATABASE=$TEMPLATE \
		go test -run '^$' -bench 'BenchmarkProjectStats/postgres/store' -benchtime 1x -timeout 60m ./adapters/bunstore >&2
fi
psql_admin "DROP DATABASE IF EXISTS $RUN_DB"
psql_admin "CREATE DATABASE $RUN_DB TEMPLATE $TEMPLATE"
trap 'psql_admin "DROP DATABASE IF EXISTS $RUN_DB" || true; rm -f "$LOG"' EXIT
if [[ -n $SQLITE ]]; then
	mkdir -p "$(dirname "$SQLITE")"
fi

echo "start $(date -u +%H:%M:%S) UTC, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
FLAGADMIN_TUNING_POSTGRES_URL=$(db_url "$RUN_DB") FLAGADMIN_BENCH_SQLITE=$SQLITE FLAGADMIN_TUNING_DURATION=$DURATION \
	go test -run '^$' -bench 'BenchmarkTuning' -benchtime 1x -timeout 60m ./adapters/bunstore >"$LOG" 2>&1 || {
	cat "$LOG" >&2
	exit 1
}
echo "end   $(date -u +%H:%M:%S) UTC, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "req/s: on/off > 1 means on is faster; ms: on/off < 1 means on is faster"
echo
grep '^TUNING' "$LOG" | awk -F'\t' '
	BEGIN { printf "%-26s | %-62s | %-18s | %10s | %10s | %6s\n", "mechanism", "workload (on vs off)", "metric", "on", "off", "on/off" }
	{
		ratio = ($6 != "-" && $6 + 0 != 0) ? sprintf("%.2f", $5 / $6) : "-"
		printf "%-26s | %-62s | %-18s | %10s | %10s | %6s\n", $2, $3, $4, $5, $6, ratio
	}'
