#!/usr/bin/env bash
# bench-log.sh measures the verifiable log (decisions §19) and retention
# (§20) on the SQL stores, for BENCHMARKS.md ("Verifiable log and
# retention"). Two parts, each on PostgreSQL and SQLite:
#
#   ab     the write cost of keeping the tree: BenchmarkLifecycleComplete
#          (adapters/bunstore: 16 goroutines completing lifecycles of 64
#          features, each completion one transaction with its event, and
#          now its leaf) of revision BEFORE (default 2fcc062, the store
#          without the log) and of the working tree, built once each and
#          run in turns, ROUNDS rounds, so that drift of a shared machine
#          affects both alike.
#   scale  BenchmarkLogSQL (cmd/flagadmin/log_bench_test.go) on a store of
#          EVENTS events (default 1,000,000, loaded with bunstore's Load):
#          inclusion proofs over HTTP (p50, p99), "flagadmin log verify"
#          over HTTP (time, peak RSS of the verifier), then pruning half the
#          events in batches of 500 while 4 writers complete lifecycles
#          (the longest a write waited, the writes' p99).
#
# Usage: scripts/bench-log.sh [ab|scale|all] [BEFORE_REV]
#
# Settings (environment):
#   PG_DSN    PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable);
#             the scale part makes the database sqllog_bench_log there and drops it
#   SQLITE    the SQLite file of the scale part (default /tmp/sqllog-bench/log.db, removed after); SQLITE= skips SQLite
#   ROUNDS    rounds of the ab part (default 4); BENCHTIME its -benchtime (default 3s);
#             ENGINES its databases (default "Postgres SQLite")
#   EVENTS    events of the scale part (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."

PART="${1:-all}"
BEFORE="${2:-2fcc062}"
PG_DSN="${PG_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
SQLITE="${SQLITE-/tmp/sqllog-bench/log.db}"
ROUNDS="${ROUNDS:-4}"
BENCHTIME="${BENCHTIME:-3s}"
EVENTS="${EVENTS:-1000000}"

tmp="$(mktemp -d)"
cleanup() {
	git worktree remove --force "$tmp/before" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

ab() {
	echo "== write cost: lifecycle completions/s, $BEFORE (without the log) against the working tree (with it)"
	git worktree add --detach -q "$tmp/before" "$BEFORE"
	(cd "$tmp/before" && go test -c -o "$tmp/before.test" ./adapters/bunstore)
	go test -c -o "$tmp/after.test" ./adapters/bunstore
	local engines="${ENGINES:-Postgres SQLite}"
	for engine in $engines; do
		for round in $(seq "$ROUNDS"); do
			for version in before after; do
				# Every other round in reverse order.
				[ $((round % 2)) -eq 0 ] && version=$([ "$version" = before ] && echo after || echo before)
				(cd adapters/bunstore && FLAGADMIN_TEST_POSTGRES_DSN="$PG_DSN" "$tmp/$version.test" -test.run '^$' \
					-test.bench "LifecycleComplete/$engine/lock\$" -test.benchtime "$BENCHTIME") |
					awk -v v="$version" -v r="$round" -v e="$engine" '/completions\/s/ { for (i = 1; i <= NF; i++) if ($(i+1) == "completions/s") x = $i }
						END { printf "%s round %d %-6s %s completions/s\n", e, r, v, x }'
			done
		done
	done
}

scale() {
	local dbs=("postgres")
	[ -n "$SQLITE" ] && dbs+=("sqlite")
	for db in "${dbs[@]}"; do
		local url
		if [ "$db" = postgres ]; then
			psql "$PG_DSN" -qc "DROP DATABASE IF EXISTS sqllog_bench_log" >/dev/null
			psql "$PG_DSN" -qc "CREATE DATABASE sqllog_bench_log" >/dev/null
			url="$(echo "$PG_DSN" | sed -E 's#/[^/?]+(\?|$)#/sqllog_bench_log\1#')"
		else
			rm -rf "$(dirname "$SQLITE")"
			mkdir -p "$(dirname "$SQLITE")"
			url="sqlite:$SQLITE"
		fi
		echo "== $db, $EVENTS events"
		FLAGADMIN_BENCH_LOG_DB="$url" FLAGADMIN_BENCH_LOG_EVENTS="$EVENTS" \
			go test ./cmd/flagadmin -run '^$' -bench 'LogSQL' -benchtime 1x -timeout 60m -v | grep -E 'log_bench|Benchmark|^ok|FAIL'
		if [ "$db" = postgres ]; then
			psql "$PG_DSN" -qc "DROP DATABASE IF EXISTS sqllog_bench_log" >/dev/null
		else
			rm -rf "$(dirname "$SQLITE")"
		fi
	done
}

case "$PART" in
ab) ab ;;
scale) scale ;;
all) ab; scale ;;
*) echo "usage: scripts/bench-log.sh [ab|scale|all] [BEFORE_REV]" >&2; exit 2 ;;
esac
