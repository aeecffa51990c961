#!/usr/bin/env bash
# bench-log.sh measures the verifiable log and retention on the SQL
# stores, for BENCHMARKS.md ("Verifiable log and
# retention"). Two parts:
#
#   ab     the write cost of keeping the tree: BenchmarkLifecycleComplete
#          (adapters/bunstore: 16 goroutines completing lifecycles of 64
#          features with the event order lock, each completion one
#          transaction with its event, whose leaf is appended after the
#          commit) of the working tree
#          built without leaves (the build tag flagadmin_bench_noleaves,
#          which changes nothing else) and of the working tree as it is,
#          built once each and run in turns, ROUNDS rounds, so that drift
#          of a shared machine affects both alike. BEFORE_REV, when given,
#          replaces the build without leaves by that revision. PostgreSQL,
#          SQLite and MySQL.
#   scale  BenchmarkLogSQL (cmd/flagadmin/log_sql_bench_test.go) on a store of
#          EVENTS events (default 1,000,000, loaded with bunstore's Load):
#          inclusion proofs over HTTP (p50, p99), "flagadmin log verify"
#          over HTTP (time, peak RSS of the verifier), then pruning half the
#          events (tlog's pruner: batches sized to 25 ms, 50 to 500 events) while
#          4 writers complete lifecycles (the longest a write waited, the
#          writes' p99, the batches' durations, each write that waited
#          longer than 50 ms). PostgreSQL and SQLite (DBS, default
#          "postgres sqlite"). PARTS="prune" runs only the pruning (after
#          the load); PARTS="proof" the proofs alone, 2,000 in one read of
#          the store and 2,000 step by step, in turns (about 5 min per
#          database at 1,000,000 events).
#
# Usage: scripts/bench-log.sh [ab|scale|all] [BEFORE_REV]
#
# Settings (environment):
#   PG_DSN    PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable);
#   PG_DB     the database the scale part makes there and drops (default sqllog_bench_log)
#   SQLITE    the SQLite file of the scale part (default /tmp/sqllog-bench/log.db, removed after)
#   MYSQL_DSN MySQL server of the ab part (default mysql://root@127.0.0.1:3306/test)
#   ROUNDS    rounds of the ab part (default 6); BENCHTIME its -benchtime (default 5s);
#             ENGINES its databases (default "Postgres SQLite MySQL")
#   EVENTS    events of the scale part (default 1000000)
#   PARTS     the scale part's parts: any of "proof verify prune" (unset: all three; empty: none, the load only)
#   KEEP      1 keeps the scale part's store (and its signing key, beside it) after
#             the run, and runs on it as it is when it holds events, without
#             loading it again: to run a part again on a shared machine
#             (KEEP=1 PARTS="" loads only). The default, 0, makes the store
#             afresh and removes it after.
#   PRUNE     events the pruning removes (default half); ALONE how long the writes run
#             alone first (default 5s): ALONE=3m PRUNE=1 PARTS=prune measures the
#             writes' waits on the machine with no pruning
set -euo pipefail
cd "$(dirname "$0")/.."

PART="${1:-all}"
BEFORE="${2:-}"
PG_DSN="${PG_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
PG_DB="${PG_DB:-sqllog_bench_log}"
SQLITE="${SQLITE:-/tmp/sqllog-bench/log.db}"
ROUNDS="${ROUNDS:-6}"
BENCHTIME="${BENCHTIME:-5s}"
MYSQL_DSN="${MYSQL_DSN:-mysql://root@127.0.0.1:3306/test}"
EVENTS="${EVENTS:-1000000}"
PARTS="${PARTS-proof verify prune}"

tmp="$(mktemp -d)"
cleanup() {
	git worktree remove --force "$tmp/before" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

ab() {
	if [ -n "$BEFORE" ]; then
		echo "== write cost: lifecycle completions/s, $BEFORE against the working tree"
		git worktree add --detach -q "$tmp/before" "$BEFORE"
		(cd "$tmp/before" && go test -c -o "$tmp/before.test" ./adapters/bunstore)
	else
		echo "== write cost: lifecycle completions/s, the working tree without leaves (before) and with them (after)"
		go test -c -tags flagadmin_bench_noleaves -o "$tmp/before.test" ./adapters/bunstore
	fi
	go test -c -o "$tmp/after.test" ./adapters/bunstore
	local engines="${ENGINES:-Postgres SQLite MySQL}"
	for engine in $engines; do
		for round in $(seq "$ROUNDS"); do
			for version in before after; do
				# Every other round in reverse order.
				[ $((round % 2)) -eq 0 ] && version=$([ "$version" = before ] && echo after || echo before)
				# ^lock$: the sub-benchmark with the event order lock (nolock
				# turns it off).
				(cd adapters/bunstore && FLAGADMIN_TEST_POSTGRES_DSN="$PG_DSN" FLAGADMIN_TEST_MYSQL_DSN="$MYSQL_DSN" "$tmp/$version.test" -test.run '^$' \
					-test.bench "LifecycleComplete/$engine/^lock\$" -test.benchtime "$BENCHTIME") |
					awk -v v="$version" -v r="$round" -v e="$engine" '/completions\/s/ { for (i = 1; i <= NF; i++) if ($(i+1) == "completions/s") x = $i; n++ }
						END { if (n != 1) { print "expected one benchmark, got " n > "/dev/stderr"; exit 1 }
							printf "%s round %d %-6s %s completions/s\n", e, r, v, x }'
			done
		done
	done
}

scale() {
	local keep="${KEEP:-0}"
	for db in ${DBS:-postgres sqlite}; do
		local url key
		if [ "$db" = postgres ]; then
			key="$(dirname "$SQLITE")-$PG_DB.key"
			if [ "$keep" != 1 ] || [ "$(psql "$PG_DSN" -qAtc "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")" != 1 ]; then
				psql "$PG_DSN" -qc "DROP DATABASE IF EXISTS $PG_DB" >/dev/null
				psql "$PG_DSN" -qc "CREATE DATABASE $PG_DB" >/dev/null
				rm -f "$key" "$key.pub" "$key.checkpoint"
			fi
			url="$(echo "$PG_DSN" | sed -E "s#/[^/?]+(\\?|\$)#/$PG_DB\\1#")"
		else
			key="$(dirname "$SQLITE")/log.key"
			if [ "$keep" != 1 ] || [ ! -f "$SQLITE" ]; then
				rm -rf "$(dirname "$SQLITE")"
				mkdir -p "$(dirname "$SQLITE")"
			fi
			url="sqlite:$SQLITE"
		fi
		echo "== $db, $EVENTS events"
		FLAGADMIN_BENCH_LOG_DB="$url" FLAGADMIN_BENCH_LOG_EVENTS="$EVENTS" FLAGADMIN_BENCH_LOG_PARTS="$PARTS" \
			FLAGADMIN_BENCH_LOG_PRUNE="${PRUNE:-}" FLAGADMIN_BENCH_LOG_ALONE="${ALONE:-}" FLAGADMIN_BENCH_LOG_KEY="$key" \
			go test ./cmd/flagadmin -run '^$' -bench 'LogSQL' -benchtime 1x -timeout 60m -v | grep -E 'log_sql_bench|Benchmark|^ok|FAIL'
		[ "$keep" = 1 ] && continue
		if [ "$db" = postgres ]; then
			psql "$PG_DSN" -qc "DROP DATABASE IF EXISTS $PG_DB" >/dev/null
			rm -f "$key" "$key.pub" "$key.checkpoint"
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
