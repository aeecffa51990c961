#!/bin/sh
# bench-import.sh: the import's figure. Builds an Unleash database of
# EVENTS generated events (internal/worldgen's default world, written as
# Unleash 8.2.0 stores it by scripts/unleashgen, into the schema of the
# fixture's dump), then imports it with "flagadmin import unleash" into
# PostgreSQL and into SQLite, and reports for each: the time of every step
# (the progress lines), events/s, the total time and the importer's peak RSS
# (/usr/bin/time -v). Target: 1,000,000 events in under 3 minutes on each,
# peak RSS under 200 MiB. An import into SQLite that leaves its full-text
# index to the server is then served until the server has filled it, and
# the server's lines about that are printed.
#
#   PG=postgres://postgres@127.0.0.1:5432 EVENTS=1000000 scripts/bench-import.sh
#
# Needs psql, gunzip and /usr/bin/time. It creates and drops the databases
# unleash_bench_source and flagadmin_bench_import on the server of PG, and
# a SQLite file in a temporary directory.
set -eu

PG=${PG:-postgres://postgres@127.0.0.1:5432}
OPTS=${PGOPTS:-sslmode=disable}
EVENTS=${EVENTS:-1000000}
TARGETS=${TARGETS:-"postgres sqlite"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DUMP=${DUMP:-$ROOT/../shared/fixtures/unleash-8.2.0/unleash.sql.gz}
WORK=$(mktemp -d)
SRC=unleash_bench_source
TGT=flagadmin_bench_import
trap 'rm -rf "$WORK"' EXIT

admin() { psql -q -v ON_ERROR_STOP=1 "$PG/postgres?$OPTS" -c "$1"; }

# backlog serves the SQLite database $1 until the server has filled the
# full-text index a large import leaves to it, and prints the server's
# lines about it (the time it took and the writer's longest wait for one
# of its batches).
backlog() {
	"$WORK/flagadmin" serve --db "$1" --addr 127.0.0.1:0 --log-format json >"$WORK/serve.log" 2>&1 &
	pid=$!
	i=0
	while ! grep -q 'holds the texts of every event' "$WORK/serve.log"; do
		if ! kill -0 "$pid" 2>/dev/null || [ $i -ge 3600 ]; then
			echo "the server did not fill the full-text index:" >&2
			cat "$WORK/serve.log" >&2
			kill "$pid" 2>/dev/null || true
			exit 1
		fi
		sleep 1
		i=$((i + 1))
	done
	kill "$pid"
	wait "$pid" || true
	grep 'full-text index' "$WORK/serve.log" | grep -v '"indexed"' || true
}

echo "building flagadmin and unleashgen"
(cd "$ROOT" && go build -o "$WORK/flagadmin" ./cmd/flagadmin && go build -o "$WORK/unleashgen" ./scripts/unleashgen)

echo "source: the Unleash 8.2.0 schema (fixture dump) with $EVENTS generated events"
admin "DROP DATABASE IF EXISTS $SRC WITH (FORCE)"
admin "CREATE DATABASE $SRC"
gunzip -c "$DUMP" | sed '/^\\\(un\)\{0,1\}restrict /d' | psql -q -v ON_ERROR_STOP=1 "$PG/$SRC?$OPTS" >/dev/null
"$WORK/unleashgen" -db "$PG/$SRC?$OPTS" -events "$EVENTS"
psql -q "$PG/$SRC?$OPTS" -c "VACUUM ANALYZE" >/dev/null
psql -At "$PG/$SRC?$OPTS" -c "SELECT 'source size: ' || pg_size_pretty(pg_database_size(current_database())) || ', events ' || count(*) FROM events"

for target in $TARGETS; do
	case $target in
	postgres)
		admin "DROP DATABASE IF EXISTS $TGT WITH (FORCE)"
		admin "CREATE DATABASE $TGT"
		db="$PG/$TGT?$OPTS"
		;;
	sqlite)
		db="sqlite:$WORK/import.db"
		;;
	*)
		echo "unknown target $target" >&2
		exit 1
		;;
	esac
	echo
	echo "== import into $target ($(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg))"
	/usr/bin/time -v "$WORK/flagadmin" import unleash --from "$PG/$SRC?$OPTS" --db "$db" >"$WORK/out" 2>"$WORK/err" || {
		cat "$WORK/err" >&2
		exit 1
	}
	grep -v '^	' "$WORK/err" | grep -v '^Command being timed' || true
	head -1 "$WORK/out"
	grep -E 'Elapsed \(wall clock\)|Maximum resident set size' "$WORK/err" |
		sed 's/^	//; s/Maximum resident set size (kbytes): \(.*\)/peak RSS: \1 KiB/'
	grep -E '^ *(kind|events) ' "$WORK/out"
	if [ "$target" = sqlite ]; then
		backlog "$db"
	fi
done

admin "DROP DATABASE IF EXISTS $TGT WITH (FORCE)"
admin "DROP DATABASE IF EXISTS $SRC WITH (FORCE)"
