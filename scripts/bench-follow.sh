#!/bin/sh
# bench-follow.sh: the figures of following a live Unleash (--follow),
# measured by scripts/followbench on a copy of the Unleash 8.2.0 fixture
# (the schema and rows Unleash wrote) on PostgreSQL:
#
#   - latency: 100 events/s committed by 4 writers, commit to copy (p99 ≤ 1 s);
#   - idle: the CPU of the follower's backend on the source (≤ 1% of a core);
#   - token: a token deleted in Unleash, until refused at flagadmin (p99 ≤ 5 s);
#   - catchup: BACKLOG events written while the follower is stopped, then
#     caught up (≥ 20,000 events/s, RSS ≤ 150 MiB), into each target and
#     into a store that drops what it is given (the follower's own work);
#     then, into a SQL store, how long after the catch-up began its
#     full-text index held every event (the backlog it fills afterwards).
#
#   PG=postgres://postgres@127.0.0.1:5432 BACKLOG=1000000 TARGETS="memory postgres sqlite" scripts/bench-follow.sh
#
# TARGETS are the stores the copy goes into (default memory): memory,
# postgres (a database on the server of PG, made new for each run), sqlite
# (a file made new for each run). latency, token and catchup run into each;
# idle, into the first. RUNS=catchup measures catching up alone (into
# TARGETS and discard), RUNS=online the rest alone. The source must run on this machine (idle reads the
# backend's CPU in /proc). It creates and drops the databases $SRC
# (unleash_bench_follow) and $COPY (flagadmin_bench_follow) on the server
# of PG; needs psql and gunzip. TAGS are build tags of followbench, e.g.
# cgosqlite,sqlite_fts5,sqlite_stat4 for SQLite's own C in place of
# modernc.org/sqlite.
set -eu

PG=${PG:-postgres://postgres@127.0.0.1:5432}
OPTS=${PGOPTS:-sslmode=disable}
BACKLOG=${BACKLOG:-1000000}
DURATION=${DURATION:-60s}
IDLE=${IDLE:-60s}
TOKENS=${TOKENS:-50}
TARGETS=${TARGETS:-memory}
RUNS=${RUNS:-all}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DUMP=${DUMP:-$ROOT/../shared/fixtures/unleash-8.2.0/unleash.sql.gz}
WORK=$(mktemp -d)
SRC=${SRC:-unleash_bench_follow}
COPY=${COPY:-flagadmin_bench_follow}
trap 'rm -rf "$WORK"; for d in $SRC $COPY; do psql -q "$PG/postgres?$OPTS" -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1 || true; done' EXIT

restore() {
	psql -q -v ON_ERROR_STOP=1 "$PG/postgres?$OPTS" -c "DROP DATABASE IF EXISTS $SRC WITH (FORCE)" -c "CREATE DATABASE $SRC"
	gunzip -c "$DUMP" | sed '/^\\\(un\)\{0,1\}restrict /d' | psql -q -v ON_ERROR_STOP=1 "$PG/$SRC?$OPTS" >/dev/null
}

# target prints a new, empty store of the kind $1 for -target.
target() {
	case $1 in
	memory | discard) echo "$1" ;;
	postgres)
		psql -q -v ON_ERROR_STOP=1 "$PG/postgres?$OPTS" -c "DROP DATABASE IF EXISTS $COPY WITH (FORCE)" -c "CREATE DATABASE $COPY" >/dev/null
		echo "$PG/$COPY?$OPTS" ;;
	sqlite)
		rm -f "$WORK"/copy.db*
		echo "sqlite:$WORK/copy.db" ;;
	*) echo "bench-follow.sh: unknown target $1 (memory, postgres or sqlite)" >&2; exit 2 ;;
	esac
}

TAGS=${TAGS:-}
(cd "$ROOT" && go build ${TAGS:+-tags "$TAGS"} -o "$WORK/followbench" ./scripts/followbench)
echo "$(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
runs=latency,idle,token
[ "$RUNS" = catchup ] && runs=
for kind in $TARGETS; do
	[ -n "$runs" ] || break
	restore
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
	"$WORK/followbench" -db "$PG/$SRC?$OPTS" -target "$(target "$kind")" -run "$runs" -duration "$DURATION" -idle "$IDLE" -tokens "$TOKENS"
	runs=latency,token
done
[ "$RUNS" = online ] && exit 0
for kind in discard $TARGETS; do
	restore
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
	"$WORK/followbench" -db "$PG/$SRC?$OPTS" -run catchup -target "$(target "$kind")" -backlog "$BACKLOG"
done
