#!/bin/sh
# bench-follow.sh: the figures of following a live Unleash (decisions §17),
# measured by scripts/followbench on a copy of the Unleash 8.2.0 fixture
# (the schema and rows Unleash wrote) on PostgreSQL:
#
#   - latency: 100 events/s committed by 4 writers, commit to copy (p99 ≤ 1 s);
#   - idle: the CPU of the follower's backend on the source (≤ 1% of a core);
#   - token: a token deleted in Unleash, until refused at flagadmin (p99 ≤ 5 s);
#   - catchup: BACKLOG events written while the follower is stopped, then
#     caught up (≥ 20,000 events/s, RSS ≤ 150 MiB), into memory and into a
#     store that drops what it is given (the follower's own work).
#
#   PG=postgres://postgres@127.0.0.1:5432 BACKLOG=1000000 scripts/bench-follow.sh
#
# The copy goes into the in-memory store: SQL stores implement the follow
# port separately. The source must run on this machine (idle reads the
# backend's CPU in /proc). It creates and drops the database
# unleash_bench_follow on the server of PG; needs psql and gunzip.
set -eu

PG=${PG:-postgres://postgres@127.0.0.1:5432}
OPTS=${PGOPTS:-sslmode=disable}
BACKLOG=${BACKLOG:-1000000}
DURATION=${DURATION:-60s}
IDLE=${IDLE:-60s}
TOKENS=${TOKENS:-50}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DUMP=${DUMP:-$ROOT/../shared/fixtures/unleash-8.2.0/unleash.sql.gz}
WORK=$(mktemp -d)
SRC=unleash_bench_follow
trap 'rm -rf "$WORK"; psql -q "$PG/postgres?$OPTS" -c "DROP DATABASE IF EXISTS $SRC WITH (FORCE)" >/dev/null 2>&1 || true' EXIT

restore() {
	psql -q -v ON_ERROR_STOP=1 "$PG/postgres?$OPTS" -c "DROP DATABASE IF EXISTS $SRC WITH (FORCE)" -c "CREATE DATABASE $SRC"
	gunzip -c "$DUMP" | sed '/^\\\(un\)\{0,1\}restrict /d' | psql -q -v ON_ERROR_STOP=1 "$PG/$SRC?$OPTS" >/dev/null
}

(cd "$ROOT" && go build -o "$WORK/followbench" ./scripts/followbench)
echo "$(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
restore
"$WORK/followbench" -db "$PG/$SRC?$OPTS" -run latency,idle,token -duration "$DURATION" -idle "$IDLE" -tokens "$TOKENS"
for target in discard memory; do
	restore
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
	"$WORK/followbench" -db "$PG/$SRC?$OPTS" -run catchup -target "$target" -backlog "$BACKLOG"
done
