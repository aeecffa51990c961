#!/usr/bin/env bash
# bench-log.sh measures the verifiable log and retention on the SQL
# stores, for BENCHMARKS.md ("Verifiable log and
# retention"). Three parts:
#
#   ab     the write cost of keeping the tree: BenchmarkLifecycleComplete
#          (adapters/bunstore: 16 goroutines completing lifecycles of 64
#          features, each completion one transaction with its event, and
#          now its leaf) of revision BEFORE (default 2fcc062, the store
#          without the log) and of the working tree, built once each and
#          run in turns, ROUNDS rounds, so that drift of a shared machine
#          affects both alike. PostgreSQL and SQLite.
#   sql    the same cost at the SQL level, on PostgreSQL: pgbench, 16
#          clients, a bare events table with the event order lock's
#          trigger, the plain INSERT against the INSERT that also appends
#          the leaf and raises the log's size (as the store's statement
#          does), and against each of the two alone.
#   scale  BenchmarkLogSQL (cmd/flagadmin/log_sql_bench_test.go) on a store of
#          EVENTS events (default 1,000,000, loaded with bunstore's Load):
#          inclusion proofs over HTTP (p50, p99), "flagadmin log verify"
#          over HTTP (time, peak RSS of the verifier), then pruning half the
#          events in batches of 500 while 4 writers complete lifecycles
#          (the longest a write waited, the writes' p99). PostgreSQL
#          and SQLite (DBS, default "postgres sqlite"). PARTS runs only
#          some of its parts: PARTS=proof measures the proofs alone (the
#          load, then 2,000 proofs; about 5 min per database at 1,000,000
#          events instead of about 10).
#
# Usage: scripts/bench-log.sh [ab|sql|scale|all] [BEFORE_REV]
#
# Settings (environment):
#   PG_DSN    PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable);
#             the scale part makes the database PG_DB (default sqllog_bench_log) there and drops it
#   SQLITE    the SQLite file of the scale part (default /tmp/sqllog-bench/log.db, removed after)
#   ROUNDS    rounds of the ab part (default 4); BENCHTIME its -benchtime (default 3s);
#             ENGINES its databases (default "Postgres SQLite")
#   EVENTS    events of the scale part (default 1000000)
#   PARTS     parts of the scale part, comma-separated: proof, verify, prune (default all)
set -euo pipefail
cd "$(dirname "$0")/.."

PART="${1:-all}"
BEFORE="${2:-2fcc062}"
PG_DSN="${PG_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
SQLITE="${SQLITE:-/tmp/sqllog-bench/log.db}"
ROUNDS="${ROUNDS:-4}"
BENCHTIME="${BENCHTIME:-3s}"
EVENTS="${EVENTS:-1000000}"
PG_DB="${PG_DB:-sqllog_bench_log}"
PARTS="${PARTS:-proof,verify,prune}"

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
	for db in ${DBS:-postgres sqlite}; do
		local url
		if [ "$db" = postgres ]; then
			psql "$PG_DSN" -qc "DROP DATABASE IF EXISTS $PG_DB" >/dev/null
			psql "$PG_DSN" -qc "CREATE DATABASE $PG_DB" >/dev/null
			url="$(echo "$PG_DSN" | sed -E "s#/[^/?]+(\?|\$)#/$PG_DB\1#")"
		else
			rm -rf "$(dirname "$SQLITE")"
			mkdir -p "$(dirname "$SQLITE")"
			url="sqlite:$SQLITE"
		fi
		echo "== $db, $EVENTS events, $PARTS"
		FLAGADMIN_BENCH_LOG_DB="$url" FLAGADMIN_BENCH_LOG_EVENTS="$EVENTS" FLAGADMIN_BENCH_LOG_PARTS="$PARTS" \
			go test ./cmd/flagadmin -run '^$' -bench 'LogSQL' -benchtime 1x -timeout 60m -v | grep -E 'log_sql_bench|Benchmark|^ok|FAIL'
		if [ "$db" = postgres ]; then
			psql "$PG_DSN" -qc "DROP DATABASE IF EXISTS $PG_DB" >/dev/null
		else
			rm -rf "$(dirname "$SQLITE")"
		fi
	done
}

sql() {
	echo "== the statement alone (pgbench, 16 clients, 6 s each, two rounds): tps"
	local schema=sqllog_bench_sql dir="$tmp/sql"
	mkdir -p "$dir"
	psql "$PG_DSN" -q <<-SQL
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
	SQL
	local insert="INSERT INTO events (created_at, type, data) VALUES (1, 'feature-completed', '{\"a\":1}') RETURNING id"
	printf 'BEGIN;\n%s;\nCOMMIT;\n' "$insert" > "$dir/plain.sql"
	printf 'BEGIN;\nWITH ins AS (%s),\nn AS (SELECT id, row_number() OVER (ORDER BY id) AS k FROM ins),\no AS (UPDATE log_state SET size = size + (SELECT count(*) FROM ins) WHERE id = 1 RETURNING size - (SELECT count(*) FROM ins) AS start),\nleaves AS (INSERT INTO log_leaves (idx, event_id, hash) SELECT o.start + n.k - 1, n.id, sha256(%s || p.before || convert_to(n.id::text, %s) || p.after) FROM o, n JOIN (VALUES (1::bigint, %s::bytea, %s::bytea)) AS p (k, before, after) ON p.k = n.k)\nSELECT id FROM n ORDER BY id;\nCOMMIT;\n' \
		"$insert" "'\\x00'::bytea" "'UTF8'" "'\\x7b22'" "'\\x7d'" > "$dir/leaf+size.sql"
	printf 'BEGIN;\nWITH ins AS (%s),\no AS (UPDATE log_state SET size = size + (SELECT count(*) FROM ins) WHERE id = 1 RETURNING size)\nSELECT id FROM ins;\nCOMMIT;\n' "$insert" > "$dir/size.sql"
	printf 'BEGIN;\nWITH ins AS (%s),\nleaves AS (INSERT INTO log_leaves (idx, event_id, hash) SELECT -id, id, sha256(%s || convert_to(id::text, %s)) FROM ins)\nSELECT id FROM ins;\nCOMMIT;\n' \
		"$insert" "'\\x00'::bytea" "'UTF8'" > "$dir/leaf.sql"
	local url
	url="$(echo "$PG_DSN" | sed -E 's#\?.*$##')?options=-csearch_path%3D$schema"
	for round in 1 2; do
		for s in plain leaf+size size leaf; do
			printf 'round %d %-10s ' "$round" "$s"
			pgbench "$url" -n -c 16 -j 2 -T 6 -f "$dir/$s.sql" 2>&1 | grep -Eo 'tps = [0-9.]+'
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
