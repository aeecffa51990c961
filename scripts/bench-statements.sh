#!/usr/bin/env bash
# bench-statements.sh measures what a kind of request costs PostgreSQL
# alone, statement by statement: it runs flagadmin-bench's KIND for a few
# seconds on one connection with the result cache off, PostgreSQL logging
# every statement with its values (log_min_duration_statement = 0 on the
# world's database, reset after), turns the log into pgbench scripts
# (scripts/stmtreplay: each distinct statement, and each distinct
# sequence of statements one request sent, such as an admin's page and
# the page of a caller who cannot see some projects; each transaction
# sends them kept prepared with the values of one of up to 100 of their
# logged runs, which it first picks into pgbench's variables from a table:
# one more round trip, about 0.05 ms), then runs each with pgbench on CONNECTIONS
# connections and prints how many a second the database answers, with
# the p50 and p99 of each, next to how often the run sent it; last, the
# sequences together, each as often as the run sent it (the kind's mix).
# No server is in the way: the mix's rate and p99 bound what a server
# sending these statements for as many clients could answer on that
# machine.
#
# Usage: scripts/bench-statements.sh
#
# Settings (environment):
#   DB           a PostgreSQL database holding flagadmin-bench's world of EVENTS events
#                (default postgres://postgres@127.0.0.1:5432/bench1m?sslmode=disable),
#                on this machine (its log is read); loaded first when missing (minutes).
#                The run only reads the world; the logged values go into tables of a
#                schema stmtreplay, dropped at the end
#   EVENTS       events in the world (default 1000000)
#   KIND         the request kind of flagadmin-bench (default varied/offset)
#   CAPTURE      seconds of the logged run (default 2)
#   PGLOG        PostgreSQL's log file (default the newest /var/log/postgresql/postgresql-*.log)
#   CONNECTIONS  pgbench's connections (default 16); DURATION seconds each (default 5)
#   MIN_SHARE    the sequences run: those of at least this percentage of the
#                requests (default 5); every statement runs
#   RESULTS      results directory (default bench-results, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."

DB="${DB:-postgres://postgres@127.0.0.1:5432/bench1m?sslmode=disable}"
EVENTS="${EVENTS:-1000000}"
KIND="${KIND:-varied/offset}"
CAPTURE="${CAPTURE:-2}"
PGLOG="${PGLOG:-$(ls -t /var/log/postgresql/postgresql-*.log 2>/dev/null | head -n 1)}"
CONNECTIONS="${CONNECTIONS:-16}"
DURATION="${DURATION:-5}"
MIN_SHARE="${MIN_SHARE:-5}"
RESULTS="${RESULTS:-bench-results}"
OUT="$RESULTS/statements-$(date -u +%Y%m%dT%H%M%SZ)"
command -v pgbench >/dev/null || { echo "bench-statements.sh: pgbench not found (Debian: postgresql-client)" >&2; exit 1; }
[ -r "$PGLOG" ] || { echo "bench-statements.sh: cannot read PostgreSQL's log (PGLOG=$PGLOG)" >&2; exit 1; }
mkdir -p "$OUT"

tmp="$(mktemp -d)"
go build -o "$tmp/flagadmin-bench" ./cmd/flagadmin-bench
# The world first (a load when missing), before the log is read.
"$tmp/flagadmin-bench" --db "$DB" --events "$EVENTS" --build-only >/dev/null

dbname="$(psql -At "$DB" -c 'SELECT current_database()')"
cleanup() {
	psql -q "$DB" -c "ALTER DATABASE \"$dbname\" RESET log_min_duration_statement" -c "DROP SCHEMA IF EXISTS stmtreplay CASCADE" || true
	rm -rf "$tmp"
}
trap cleanup EXIT
from=$(($(stat -c %s "$PGLOG") + 1))
psql -q "$DB" -c "ALTER DATABASE \"$dbname\" SET log_min_duration_statement = 0"
echo "== $KIND on one connection for ${CAPTURE}s, every statement logged"
"$tmp/flagadmin-bench" --db "$DB" --events "$EVENTS" --in-place --kinds "$KIND" --result-cache-size 0 \
	--connections 1 --duration "${CAPTURE}s" --warmup 0s | tee "$OUT/capture.txt" | grep -E "^\[" || true
psql -q "$DB" -c "ALTER DATABASE \"$dbname\" RESET log_min_duration_statement"
tail -c "+$from" "$PGLOG" > "$OUT/statements.log"
go run ./scripts/stmtreplay -log "$OUT/statements.log" -out "$OUT"
# The tables of the logged values the scripts pick from.
psql -q "$DB" -c "DROP SCHEMA IF EXISTS stmtreplay CASCADE" -c "CREATE SCHEMA stmtreplay"
for f in "$OUT"/*.values.sql; do
	if [ -s "$f" ]; then psql -q -v ON_ERROR_STOP=1 "$DB" -f "$f"; fi
done

requests=$(awk -F '\t' '$1 ~ /^seq-/ { n += $2 } END { print n + 0 }' "$OUT/index.tsv")
[ "$requests" -gt 0 ] || { echo "bench-statements.sh: no request's statements in the log" >&2; exit 1; }
echo
echo "== PostgreSQL alone, $CONNECTIONS connections, ${DURATION}s each ($requests requests logged)"
printf '%-8s %7s %11s %8s %8s  %s\n' script logged "per second" "p50 ms" "p99 ms" what | tee "$OUT/table.txt"
# bench NAME COUNT ABOUT SCRIPT... runs pgbench on the scripts (each
# FILE or FILE@WEIGHT) and prints a row of the table.
bench() {
	local name="$1" count="$2" about="$3" tps p50 p99 scripts=()
	shift 3
	for f in "$@"; do scripts+=(-f "$PWD/$OUT/$f"); done
	# Each line of pgbench's log: client, transaction, latency in
	# microseconds, ...
	rm -f "$tmp"/log.*
	# A failing run prints "error" in the row, and the table goes on.
	tps=$( (cd "$tmp" && pgbench -n -M prepared -c "$CONNECTIONS" -j 2 -T "$DURATION" -l --log-prefix=log "${scripts[@]}" "$DB" 2>&1 || true) |
		awk '/^tps = / { printf "%.0f", $3 } /aborted|ERROR/ { print "error"; exit }')
	read -r p50 p99 < <(cat "$tmp"/log.* 2>/dev/null | awk '{ print $3 }' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.2f %.2f\n", v[int(NR * 0.50) + 1] / 1000, v[int(NR * 0.99) + 1] / 1000; else print "- -" }')
	printf '%-8s %7s %11s %8s %8s  %s\n' "$name" "$count" "${tps:-error}" "$p50" "$p99" "$about" | tee -a "$OUT/table.txt"
}

mix=()
mixed=0
while IFS=$'\t' read -r name count about; do
	if [[ "$name" == seq-* ]]; then
		[ $((count * 100)) -ge $((requests * MIN_SHARE)) ] || continue
		mix+=("$name.sql@$count")
		mixed=$((mixed + count))
	fi
	# A transaction's BEGIN or COMMIT alone is no statement to measure:
	# the sequences hold them.
	if [[ "$name" == stmt-* && "$about" =~ ^(BEGIN|COMMIT|ROLLBACK)( |$) ]]; then
		continue
	fi
	bench "$name" "$count" "$about" "$name.sql"
done < "$OUT/index.tsv"
# The kind's requests as the run sent them: its sequences, each as often
# as it was logged.
bench mix "$mixed" "the sequences above, each weighted by how often it was logged" "${mix[@]}"
echo "results in $OUT"
