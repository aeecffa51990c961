#!/usr/bin/env bash
# bench-floor.sh measures how fast PostgreSQL alone answers the statements
# a request cannot do without, next to flagadmin answering those requests,
# on the same world, connections and machine, one after the other. Two
# paths (PATHS):
#
#   offset    random offsets: flagadmin-bench --kinds varied/offset with
#             the result cache off (the server over HTTP, with the bare
#             net/http ceiling), then pgbench (PostgreSQL's own load tool,
#             in C) on as many connections running only the statement that
#             reads a page of 50 events: the page statement flagadmin runs
#             once the counts have found the page (the range of
#             events_created from the page's first row, kept prepared), at
#             a random day of the world's two years and a random offset
#             into it. flagadmin runs it too, after finding where the page
#             starts (the months and days of event_counts) and the caller's
#             visibility.
#   projects  the project list: flagadmin-bench --kinds varied/projects
#             with the result cache off, then pgbench running only the
#             list's two statements in their read-only transaction, as
#             flagadmin runs them: the projects with their figures, their
#             newest event and a random user's favorites, then the owners
#             of every project. flagadmin runs them after the caller's
#             token, roles and the store's version.
#   query     free text: flagadmin-bench --kinds varied/query with the
#             result cache off, then pgbench running only the statement
#             that answers a query of free text with its page and total, in
#             the form flagadmin sends for a caller who sees every project
#             (the cheapest), for the terms varied/query draws: a feature's
#             name (7 in 10, of 500 drawn from the world), a user's name (2
#             in 10, of 100) or the rare word vandelay (1 in 10). Each
#             transaction first picks its term and its trigrams' patterns
#             (a statement of its own, a few microseconds).
#   postings  free text from a table of postings, which the store does not
#             keep: pgbench running the query path's statement with its
#             terms, but finding their events in floor_postings, every
#             (token, created_at, id) of the events' search_payload, by its
#             index on (token, created_at DESC, id DESC) alone, where the
#             token index makes PostgreSQL read each match's row (for its
#             order and, in a bitmap heap scan, even for a count). The
#             table is built first when missing (minutes; its rows, size
#             and build time are printed) and kept for the next run: drop
#             it with DROP TABLE floor_postings.
#
# If the database alone, answering nothing but those statements, takes the
# p99 a target allows, no server in front of it can meet the target on
# that machine. The p50 and p99 of pgbench come from its log of every
# transaction, without the warm-up.
#
# Usage: scripts/bench-floor.sh
#
# Settings (environment):
#   DB           a PostgreSQL database holding flagadmin-bench's world of EVENTS events
#                (default postgres://postgres@127.0.0.1:5432/bench1m?sslmode=disable);
#                loaded first when missing or empty (minutes). The server runs on a
#                fresh copy; pgbench reads the world itself (it only reads)
#   EVENTS       events in the world (default 1000000)
#   PATHS        the paths to measure, in order (default "offset projects query";
#                postings is measured only when named)
#   CONNECTIONS  default 16
#   DURATION     default 10 (seconds); WARMUP default 3 (seconds), each part
#   RESULTS      results directory (default bench-results, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."

DB="${DB:-postgres://postgres@127.0.0.1:5432/bench1m?sslmode=disable}"
EVENTS="${EVENTS:-1000000}"
PATHS="${PATHS:-offset projects query}"
CONNECTIONS="${CONNECTIONS:-16}"
DURATION="${DURATION:-10}"
WARMUP="${WARMUP:-3}"
RESULTS="${RESULTS:-bench-results}"
OUT="$RESULTS/floor-$(date -u +%Y%m%dT%H%M%SZ)"
for path in $PATHS; do
	case "$path" in
	offset | projects | query | postings) ;;
	*) echo "bench-floor.sh: unknown path $path in PATHS (offset, projects, query, postings)" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT"
command -v pgbench >/dev/null || { echo "bench-floor.sh: pgbench not found (Debian: postgresql-client)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/flagadmin-bench" ./cmd/flagadmin-bench

# flagadmin_run KIND runs flagadmin-bench on KIND with the result cache off.
flagadmin_run() {
	local name="${1#varied/}"
	"$tmp/flagadmin-bench" --db "$DB" --events "$EVENTS" --connections "$CONNECTIONS" \
		--duration "${DURATION}s" --warmup "${WARMUP}s" --kinds "$1" --result-cache-size 0 \
		--json "$OUT/flagadmin-$name.json" | tee "$OUT/flagadmin-$name.txt"
}

# pgbench_run NAME runs pgbench on $tmp/NAME.sql after a warm-up, then
# prints the p50 and p99 of its transactions from its log.
pgbench_run() {
	local name="$1"
	pgbench -n -M prepared -c "$CONNECTIONS" -j 2 -T "$WARMUP" -f "$tmp/$name.sql" "$DB" >/dev/null
	(cd "$tmp" && pgbench -n -M prepared -c "$CONNECTIONS" -j 2 -T "$DURATION" -f "$name.sql" -l --log-prefix="log-$name" "$DB") |
		tee "$OUT/pgbench-$name.txt"
	# Each line of the log: client, transaction, latency in microseconds, ...
	cat "$tmp/log-$name".* | awk '{print $3}' | sort -n | awk -v n="$CONNECTIONS" -v name="$name" '
		{ v[NR] = $1 }
		END { printf "pgbench %s: %d transactions, p50 %.2f ms, p99 %.2f ms on %d connections\n", name, NR, v[int(NR * 0.50)] / 1000, v[int(NR * 0.99)] / 1000, n }' |
		tee -a "$OUT/pgbench-$name.txt"
}

# offset_floor: random offsets, then their page statement alone.
offset_floor() {
	echo "== flagadmin, varied/offset, result cache off"
	flagadmin_run varied/offset

	# The world's newest day (its end, in ms) and its events per day.
	local newest perday days columns
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
	pgbench_run page
}

# projects_floor: the project list, then its two statements alone.
projects_floor() {
	echo "== flagadmin, varied/projects, result cache off"
	flagadmin_run varied/projects

	# A random user's favorites; the cut-offs of the potentially stale
	# features: created within their type's expected lifetime (40 days,
	# operational 7) before now.
	local users now
	users=$(psql -At "$DB" -c "SELECT COALESCE(MAX(id), 1) FROM users")
	now=$(( $(date +%s) * 1000 ))
	cat > "$tmp/projects.sql" <<EOF
\set user random(1, $users)
BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
SELECT p.id, p.name, p.description, p.mode, p.created_at, p.archived_at, l.newest, f.features, f.stale, f.potentially_stale, f.members, f.last_seen_at, f.cleanup, CASE WHEN fav.user_id IS NULL THEN 0 ELSE 1 END FROM projects p LEFT JOIN (SELECT project, MAX(newest) AS newest FROM event_counts WHERE dim = 0 AND scope = 2 GROUP BY project HAVING SUM(n) > 0) l ON l.project = p.id LEFT JOIN (SELECT ps.project_id, ps.features, ps.stale, fresh_experiment + fresh_operational + fresh_release - COALESCE(r.n, 0) AS potentially_stale, ps.members, ps.last_seen_at, ps.cleanup FROM project_stats ps LEFT JOIN (SELECT project, COUNT(*) AS n FROM features WHERE archived_at IS NULL AND NOT stale AND ((type = (SELECT CAST('experiment' AS text)) AND created_at >= (SELECT CAST($(( now - 40 * 86400000 )) AS bigint))) OR (type = (SELECT CAST('operational' AS text)) AND created_at >= (SELECT CAST($(( now - 7 * 86400000 )) AS bigint))) OR (type = (SELECT CAST('release' AS text)) AND created_at >= (SELECT CAST($(( now - 40 * 86400000 )) AS bigint)))) GROUP BY project) r ON r.project = ps.project_id) f ON f.project_id = p.id LEFT JOIN project_favorites fav ON fav.project_id = p.id AND fav.user_id = (SELECT CAST(:user AS bigint)) WHERE p.archived_at IS NULL;
SELECT pm.project_id, u.id, u.name, u.username, u.email, g.id, g.name FROM project_members pm LEFT JOIN users u ON u.id = pm.user_id LEFT JOIN user_groups g ON g.id = pm.group_id WHERE pm.role = 'Owner';
COMMIT;
EOF
	echo
	echo "== PostgreSQL alone: the project list's two statements in a read-only transaction, $CONNECTIONS connections"
	pgbench_run projects
}

# draw_terms writes to $tmp/terms.sql the pgbench lines that pick a
# free-text term as varied/query does and set :term, :p1, :p2 and :p3.
# The terms, drawn once from the world (the same ones at each run): 500
# features' names, then 100 users' names, then vandelay; and the LIKE
# patterns of each term's first, middle and last trigram of ASCII letters
# and digits, which flagadmin looks its tokens up by. Arrays of SQL
# literals, in the terms' order.
draw_terms() {
	local drawn terms p1 p2 p3
	drawn="SELECT setseed(0.5); WITH t AS (
		SELECT term, n FROM (SELECT name AS term, row_number() OVER (ORDER BY random()) AS n FROM features) f WHERE n <= 500
		UNION ALL SELECT term, 500 + n FROM (SELECT username AS term, row_number() OVER (ORDER BY random()) AS n FROM users) u WHERE n <= 100
		UNION ALL SELECT 'vandelay', 601),
	g AS (SELECT t.term, t.n, array_agg(substr(t.term, i, 3) ORDER BY i) AS g FROM t, generate_series(1, length(t.term) - 2) i
		WHERE substr(t.term, i, 3) ~ '^[a-zA-Z0-9]{3}\$' GROUP BY t.term, t.n)
	SELECT string_agg(quote_literal(term), ',' ORDER BY n), string_agg(quote_literal('%' || g[1] || '%'), ',' ORDER BY n),
		string_agg(quote_literal('%' || g[(cardinality(g) + 1) / 2] || '%'), ',' ORDER BY n), string_agg(quote_literal('%' || g[cardinality(g)] || '%'), ',' ORDER BY n) FROM g"
	IFS='|' read -r terms p1 p2 p3 < <(psql -At "$DB" -c "$drawn" | tail -1)
	cat > "$tmp/terms.sql" <<EOF
\set r random(1, 10)
\set i CASE WHEN :r <= 7 THEN random(1, 500) WHEN :r <= 9 THEN random(501, 600) ELSE 601 END
SELECT (ARRAY[$terms])[:i] AS term, (ARRAY[$p1])[:i] AS p1, (ARRAY[$p2])[:i] AS p2, (ARRAY[$p3])[:i] AS p3 \gset
EOF
}

# query_floor: free text, then its statement alone.
query_floor() {
	echo "== flagadmin, varied/query, result cache off"
	flagadmin_run varied/query

	draw_terms
	cp "$tmp/terms.sql" "$tmp/query.sql"
	cat >> "$tmp/query.sql" <<EOF
WITH m AS MATERIALIZED (SELECT id, created_at FROM events WHERE (((flagadmin_search_tokens(search_payload) && ARRAY(SELECT token FROM search_tokens WHERE token LIKE (SELECT CAST(:p1 AS text)) ESCAPE '!' AND token LIKE (SELECT CAST(:p2 AS text)) ESCAPE '!' AND token LIKE (SELECT CAST(:p3 AS text)) ESCAPE '!' AND strpos(token, (SELECT CAST(:term AS text))) > 0) AND NOT text_later OR id = ANY(ARRAY(SELECT lt.id FROM events lt WHERE flagadmin_search_tokens(lt.search_payload) @> ARRAY['"'] AND NOT lt.text_later AND strpos(lt.search_payload, (SELECT CAST(:term AS text))) > 0)))) OR id = ANY(ARRAY(SELECT mk.id FROM events mk WHERE mk.text_later AND strpos(mk.search_payload, (SELECT CAST(:term AS text))) > 0)))), t AS (SELECT COUNT(*) AS total FROM m), p AS (SELECT id FROM m ORDER BY created_at DESC, id DESC LIMIT 50) SELECT t.total, e.id, e.created_at, e.type, e.created_by, e.created_by_user_id, e.environment, e.project, e.feature_name, e.data, e.pre_data, e.tags, e.group_type, e.group_id FROM t LEFT JOIN (p JOIN events AS e ON e.id = p.id) ON TRUE ORDER BY e.created_at DESC, e.id DESC;
EOF
	echo
	echo "== PostgreSQL alone: the free-text statement of a caller who sees every project, $CONNECTIONS connections"
	pgbench_run query
}

# postings_floor: the free-text statement alone, its events found in a
# table of postings (built when missing) instead of the token index.
postings_floor() {
	if [ "$(psql -At "$DB" -c "SELECT to_regclass('floor_postings') IS NOT NULL")" != t ]; then
		echo "== building floor_postings: every (token, created_at, id) of the events' search_payload"
		local start=$SECONDS
		psql -q -v ON_ERROR_STOP=1 "$DB" <<'EOF'
SET maintenance_work_mem = '512MB';
SET work_mem = '256MB';
CREATE UNLOGGED TABLE floor_postings AS SELECT DISTINCT t AS token, e.created_at, e.id FROM events AS e, unnest(flagadmin_search_tokens(e.search_payload)) AS t WHERE t <> '"' AND NOT e.text_later;
CREATE INDEX floor_postings_key ON floor_postings (token, created_at DESC, id DESC);
VACUUM ANALYZE floor_postings;
EOF
		echo "built in $((SECONDS - start)) s"
	fi
	psql -At -F ', ' "$DB" -c "SELECT count(*) || ' postings', pg_size_pretty(pg_relation_size('floor_postings')) || ' table', pg_size_pretty(pg_relation_size('floor_postings_key')) || ' index', pg_size_pretty(pg_relation_size('events')) || ' events table' FROM floor_postings"
	draw_terms
	cp "$tmp/terms.sql" "$tmp/postings.sql"
	cat >> "$tmp/postings.sql" <<EOF
WITH k AS MATERIALIZED (SELECT token FROM search_tokens WHERE token LIKE (SELECT CAST(:p1 AS text)) ESCAPE '!' AND token LIKE (SELECT CAST(:p2 AS text)) ESCAPE '!' AND token LIKE (SELECT CAST(:p3 AS text)) ESCAPE '!' AND strpos(token, (SELECT CAST(:term AS text))) > 0), m AS MATERIALIZED (SELECT DISTINCT id, created_at FROM floor_postings WHERE token = ANY(ARRAY(SELECT token FROM k))), t AS (SELECT COUNT(*) AS total FROM m), p AS (SELECT id FROM m ORDER BY created_at DESC, id DESC LIMIT 50) SELECT t.total, e.id, e.created_at, e.type, e.created_by, e.created_by_user_id, e.environment, e.project, e.feature_name, e.data, e.pre_data, e.tags, e.group_type, e.group_id FROM t LEFT JOIN (p JOIN events AS e ON e.id = p.id) ON TRUE ORDER BY e.created_at DESC, e.id DESC;
EOF
	echo
	echo "== PostgreSQL alone: the free-text statement from floor_postings, $CONNECTIONS connections"
	pgbench_run postings
}

for path in $PATHS; do
	"${path}_floor"
	echo
done
echo "results in $OUT"
