#!/usr/bin/env bash
# bench-log.sh measures the verifiable log and retention on the SQL
# stores, for BENCHMARKS.md ("Verifiable log and
# retention"). Three parts:
#
#   ab     the write cost of keeping the tree: BenchmarkLifecycleComplete
#          (adapters/bunstore: 16 goroutines completing lifecycles of 64
#          features with the event order lock, each completion one
#          transaction with its event, and its leaf) of the working tree
#          built without leaves (the build tag flagadmin_bench_noleaves,
#          which changes nothing else) and of the working tree as it is,
#          built once each and run in turns, ROUNDS rounds, so that drift
#          of a shared machine affects both alike. BEFORE_REV, when given,
#          replaces the build without leaves by that revision. PostgreSQL,
#          SQLite and MySQL.
#   sql    the same cost at the SQL level, on PostgreSQL: pgbench, 16
#          clients, a bare events table with the event order lock's
#          trigger, the plain INSERT ("plain") against the INSERT that also
#          appends the leaf, its index read from the leaves by
#          flagadmin_log_size as the store's statement does ("leaf"), and
#          against the same with the log's size kept in a row every writer
#          raises ("leaf+row").
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
# Usage: scripts/bench-log.sh [ab|sql|scale|all] [BEFORE_REV]
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
				# turns the lock and the leaves off).
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

sql() {
	echo "== the statement alone (pgbench, 16 clients, 8 s each, three rounds): tps"
	local schema=sqllog_bench_sql dir="$tmp/sql"
	mkdir -p "$dir"
	local url
	url="$(echo "$PG_DSN" | sed -E 's#\?.*$##')?options=-csearch_path%3D$schema"
	cat > "$dir/setup.sql" <<-SQL
		SET client_min_messages = warning;
		DROP SCHEMA IF EXISTS $schema CASCADE;
		CREATE SCHEMA $schema;
		SET search_path = $schema;
		CREATE TABLE events (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, created_at BIGINT NOT NULL, type TEXT NOT NULL, data TEXT);
		CREATE TABLE event_order (id SMALLINT PRIMARY KEY);
		INSERT INTO event_order VALUES (1);
		CREATE TABLE log_state (id SMALLINT PRIMARY KEY, size BIGINT NOT NULL);
		INSERT INTO log_state VALUES (1, 0);
		CREATE TABLE log_leaves (idx BIGINT PRIMARY KEY, event_id BIGINT NOT NULL, hash BYTEA NOT NULL, pruned BOOLEAN NOT NULL DEFAULT FALSE);
		CREATE UNIQUE INDEX log_leaves_event ON log_leaves (event_id);
		CREATE FUNCTION lock_order() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN PERFORM 1 FROM event_order WHERE id = 1 FOR UPDATE; RETURN NULL; END \$\$;
		CREATE TRIGGER events_order BEFORE INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION lock_order();
		CREATE FUNCTION flagadmin_log_size() RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS \$\$ BEGIN RETURN (SELECT COALESCE(MAX(idx) + 1, 0) FROM log_leaves); END \$\$;
	SQL
	local insert="INSERT INTO events (created_at, type, data) VALUES (1, 'feature-completed', '{\"a\":1}') RETURNING id"
	local leaves="leaves AS (INSERT INTO log_leaves (idx, event_id, hash) SELECT o.start + n.k - 1, n.id, sha256('\\x00'::bytea || p.before || convert_to(n.id::text, 'UTF8') || p.after) FROM o, n JOIN (VALUES (1::bigint, '\\x7b22'::bytea, '\\x7d'::bytea)) AS p (k, before, after) ON p.k = n.k)"
	printf 'BEGIN;\n%s;\nCOMMIT;\n' "$insert" > "$dir/plain.sql"
	printf 'BEGIN;\nWITH ins AS (%s),\nn AS (SELECT id, row_number() OVER (ORDER BY id) AS k FROM ins),\no AS (SELECT flagadmin_log_size() AS start FROM (SELECT count(*) FROM ins) AS inserted),\n%s\nSELECT id FROM n ORDER BY id;\nCOMMIT;\n' \
		"$insert" "$leaves" > "$dir/leaf.sql"
	printf 'BEGIN;\nWITH ins AS (%s),\nn AS (SELECT id, row_number() OVER (ORDER BY id) AS k FROM ins),\no AS (UPDATE log_state SET size = size + (SELECT count(*) FROM ins) WHERE id = 1 RETURNING size - (SELECT count(*) FROM ins) AS start),\n%s\nSELECT id FROM n ORDER BY id;\nCOMMIT;\n' \
		"$insert" "$leaves" > "$dir/leaf+row.sql"
	for round in 1 2 3; do
		for s in plain leaf leaf+row; do
			# Each run on tables made afresh.
			psql "$PG_DSN" -q -f "$dir/setup.sql"
			printf 'round %d %-10s ' "$round" "$s"
			pgbench "$url" -n -c 16 -j 2 -T 8 -f "$dir/$s.sql" 2>&1 | grep -Eo 'tps = [0-9.]+'
		done
	done
	psql "$PG_DSN" -qc "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE"
}

case "$PART" in
ab) ab ;;
sql) sql ;;
scale) scale ;;
all) ab; sql; scale ;;
*) echo "usage: scripts/bench-log.sh [ab|sql|scale|all] [BEFORE_REV]" >&2; exit 2 ;;
esac
