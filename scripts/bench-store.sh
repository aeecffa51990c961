#!/usr/bin/env bash
# bench-store.sh runs the SQL store benchmarks of adapters/bunstore
# (BenchmarkSearch, BenchmarkProjectStats, BenchmarkInsertEvents) on
# PostgreSQL and SQLite, and on MariaDB/MySQL when it is reachable, then
# prints the medians over the runs next to the store's targets.
#
# Usage: scripts/bench-store.sh            (everything, 1,000,000 events)
#
# Settings (environment):
#   FLAGADMIN_BENCH_EVENTS        world size (default 1000000)
#   FLAGADMIN_BENCH_POSTGRES_DSN  default postgres://postgres@127.0.0.1:5432/test?sslmode=disable
#   FLAGADMIN_BENCH_MYSQL_DSN     default mysql://root@127.0.0.1:3306/test
#   FLAGADMIN_BENCH_SQLITE        default /tmp/flagadmin-storebench/bench.db
#   FLAGADMIN_BENCH_REBUILD=1     reload the world even when the database holds it
#   DBS                           which systems, default "postgres sqlite mysql"
#   COUNT                         runs of each benchmark, default 5 (medians over them)
#   SEARCH_TIME                   -benchtime of the searches, default 20x
#   INSERT_TIME                   -benchtime of the bulk insert, default 1x (100,000 events per iteration)
#
# The benchmarks create database flagadmin_storebench (and, while inserting,
# flagadmin_storebench_insert) on the servers of the DSNs, and the SQLite file;
# the first run loads the world (a minute or more per database), later runs
# reuse it while its marker matches. Raw output goes to $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

export FLAGADMIN_BENCH_EVENTS="${FLAGADMIN_BENCH_EVENTS:-1000000}"
PG_DSN="${FLAGADMIN_BENCH_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
MYSQL_DSN="${FLAGADMIN_BENCH_MYSQL_DSN:-mysql://root@127.0.0.1:3306/test}"
SQLITE_PATH="${FLAGADMIN_BENCH_SQLITE:-/tmp/flagadmin-storebench/bench.db}"
DBS="${DBS:-postgres sqlite mysql}"
COUNT="${COUNT:-5}"
SEARCH_TIME="${SEARCH_TIME:-20x}"
INSERT_TIME="${INSERT_TIME:-1x}"
WORK=/tmp/flagadmin-storebench
mkdir -p "$WORK"
OUT="${OUT:-$WORK/results-$(date -u +%Y%m%dT%H%M%SZ).txt}"

# reachable URL: whether a TCP connection to the URL's host and port opens.
reachable() {
	local hostport host port
	hostport="${1#*://}"
	hostport="${hostport#*@}"
	hostport="${hostport%%/*}"
	host="${hostport%:*}"
	port="${hostport##*:}"
	[ "$port" = "$hostport" ] && port="$2"
	timeout 3 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null
}

echo "building the benchmark binary"
go test -c -o "$WORK/bunstore.test" ./adapters/bunstore/

{
	echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) events=$FLAGADMIN_BENCH_EVENTS count=$COUNT search=$SEARCH_TIME insert=$INSERT_TIME"
	echo "# load average at start: $(cut -d" " -f1-3 /proc/loadavg)"
	echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $(free -h | awk '/^Mem:/ {print $2}') RAM"
} >"$OUT"

run() { # run NAME ENVVAR VALUE
	local name="$1" var="$2" value="$3"
	echo "== $name: searches and project stats (first run loads the world)" | tee -a "$OUT"
	env -u FLAGADMIN_BENCH_POSTGRES_DSN -u FLAGADMIN_BENCH_MYSQL_DSN -u FLAGADMIN_BENCH_SQLITE "$var=$value" \
		"$WORK/bunstore.test" -test.run '^$' -test.bench '^(BenchmarkSearch|BenchmarkProjectStats)$' \
		-test.benchtime "$SEARCH_TIME" -test.count "$COUNT" -test.timeout 0 | tee -a "$OUT"
	echo "== $name: bulk insert" | tee -a "$OUT"
	env -u FLAGADMIN_BENCH_POSTGRES_DSN -u FLAGADMIN_BENCH_MYSQL_DSN -u FLAGADMIN_BENCH_SQLITE "$var=$value" \
		"$WORK/bunstore.test" -test.run '^$' -test.bench '^BenchmarkInsertEvents$' \
		-test.benchtime "$INSERT_TIME" -test.count "$COUNT" -test.timeout 0 | tee -a "$OUT"
}

for db in $DBS; do
	case "$db" in
	postgres)
		if reachable "$PG_DSN" 5432; then
			psql "$PG_DSN" -Atc 'SELECT version()' 2>/dev/null | sed 's/^/# /' >>"$OUT" || true
			run postgres FLAGADMIN_BENCH_POSTGRES_DSN "$PG_DSN"
		else
			echo "== postgres: $PG_DSN is not reachable, skipped" | tee -a "$OUT"
		fi
		;;
	mysql)
		if reachable "$MYSQL_DSN" 3306; then
			run mysql FLAGADMIN_BENCH_MYSQL_DSN "$MYSQL_DSN"
		else
			echo "== mysql: $MYSQL_DSN is not reachable, skipped" | tee -a "$OUT"
		fi
		;;
	sqlite)
		run sqlite FLAGADMIN_BENCH_SQLITE "$SQLITE_PATH"
		;;
	*)
		echo "unknown database $db (use postgres, sqlite, mysql)" >&2
		exit 2
		;;
	esac
done

echo
echo "Medians over $COUNT runs ($OUT)"
# One "name unit value" line per metric of every result line, sorted, then
# the median per name and unit, then a table with the store's targets.
awk '/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i += 2) print name, $(i + 1), $i
}' "$OUT" | sort -k1,1 -k2,2 -k3,3g | awk '
function flush() {
	if (n == 0) return
	med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	print key, med
	n = 0
}
{ k = $1 " " $2; if (k != key) { flush(); key = k }; v[++n] = $3 }
END { flush() }' | awk '
# target NAME: the median p50 a PostgreSQL search must stay under (ms), per
# the store's targets; the other databases are held to PostgreSQL (SQLite: within 3x).
function target(name,   probe) {
	if (name !~ /^BenchmarkSearch\/postgres\//) return ""
	probe = name; sub(/.*\//, "", probe)
	if (probe == "none" || probe == "type-large") return 40
	if (probe == "query") return 50
	if (probe ~ /^offset/) return ""
	return 10
}
{
	name = $1; unit = $2; val = $3
	if (!(name in seen)) { seen[name] = 1; order[++count] = name }
	m[name, unit] = val
}
END {
	printf "%-58s %10s %10s %10s %12s %8s\n", "benchmark", "ms/op", "p50-ms", "p99-ms", "events/s", "target"
	for (i = 1; i <= count; i++) {
		name = order[i]
		nsop = ((name, "ns/op") in m) ? sprintf("%.2f", m[name, "ns/op"] / 1e6) : "-"
		p50 = ((name, "p50-ms") in m) ? sprintf("%.2f", m[name, "p50-ms"]) : "-"
		p99 = ((name, "p99-ms") in m) ? sprintf("%.2f", m[name, "p99-ms"]) : "-"
		eps = ((name, "events/s") in m) ? sprintf("%.0f", m[name, "events/s"]) : "-"
		t = target(name); verdict = ""
		if (t != "" && p50 != "-") verdict = (p50 + 0 < t) ? "<" t " ok" : "<" t " MISS"
		if (eps != "-" && name ~ /\/postgres\//) verdict = (eps + 0 >= 50000) ? ">=50k ok" : ">=50k MISS"
		printf "%-58s %10s %10s %10s %12s %8s\n", name, nsop, p50, p99, eps, verdict
		if (name ~ /^BenchmarkSearch\/sqlite\//) {
			pg = name; sub(/\/sqlite\//, "/postgres/", pg)
			if ((pg, "p50-ms") in m && m[pg, "p50-ms"] > 0) ratio[name] = m[name, "p50-ms"] / m[pg, "p50-ms"]
		}
	}
	n = 0
	for (name in ratio) n++
	if (n > 0) {
		print ""
		print "SQLite p50 / PostgreSQL p50 (target: within 3x)"
		for (i = 1; i <= count; i++) {
			name = order[i]
			if (name in ratio) printf "%-58s %8.2fx %s\n", name, ratio[name], (ratio[name] <= 3 ? "ok" : "MISS")
		}
	}
}'
