#!/usr/bin/env bash
# bench-ab.sh compares two versions of flagadmin end to end on PostgreSQL:
# the load tool (cmd/flagadmin-bench) of revision BEFORE and of the working
# tree (AFTER), each with its own copy of the world, run in turns on one
# machine in one session, with the server's result cache on and then off:
#
#   before (cache on), after (cache on), after (cache off), before (cache off)
#
# so that drift of a shared machine affects both alike: each pair is
# adjacent, and the version that runs second in the first pair runs first
# in the second. Each run prints its
# table (requests/s, latency percentiles, share of the bare net/http ceiling
# measured in the same run); then flagadmin-bench compare prints AFTER
# relative to BEFORE kind by kind, for each cache setting.
#
# Usage: scripts/bench-ab.sh BEFORE_REV
#        scripts/bench-ab.sh noleaves
#
# noleaves: BEFORE is the working tree built without the verifiable log's
# leaves (build tag flagadmin_bench_noleaves, which changes nothing else),
# for the write cost of the log end to end, e.g.
# EVENTS=100000 KINDS=lifecycle/ scripts/bench-ab.sh noleaves.
#
# Settings (environment):
#   FLAGADMIN_BENCH_POSTGRES_DSN  PostgreSQL server (default
#                                 postgres://postgres@127.0.0.1:5432/test?sslmode=disable);
#                                 the worlds are databases flagadmin_bench_ab_before (or
#                                 _noleaves) and flagadmin_bench_ab_after there, loaded when
#                                 missing (minutes)
#                                 and migrated in place by each version's own migrations
#   WORLD_FROM                    a database on that server holding the world (such as
#                                 one flagadmin-bench --db loaded): a missing world database
#                                 is created as a copy of it (--world-from: seconds, where
#                                 a load takes minutes); checked and migrated as any other
#                                 (a BEFORE whose load tool lacks --world-from loads its own)
#   EVENTS                        events in the world (default 1000000)
#   CONNECTIONS                   default 16
#   DURATION, WARMUP              per kind, default 8s and 2s
#   KINDS                         --kinds of flagadmin-bench (default: every kind both
#                                 versions have: varied/,search/,deprecated/,projects,lifecycle/,mixed/)
#   RESULTS                       results directory (default bench-results, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."

BEFORE="${1:?usage: scripts/bench-ab.sh BEFORE_REV}"
PG_DSN="${FLAGADMIN_BENCH_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
EVENTS="${EVENTS:-1000000}"
CONNECTIONS="${CONNECTIONS:-16}"
DURATION="${DURATION:-8s}"
WARMUP="${WARMUP:-2s}"
KINDS="${KINDS:-varied/,search/,deprecated/,projects,lifecycle/,mixed/}"
WORLD_FROM="${WORLD_FROM:-}"
RESULTS="${RESULTS:-bench-results}"
OUT="$RESULTS/ab-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"

# with_db URL NAME prints URL with its database (the path) replaced by NAME.
with_db() {
	local url="$1" name="$2" query="" rest
	case "$url" in *\?*) query="?${url#*\?}"; url="${url%%\?*}" ;; esac
	rest="${url#*://}"
	case "$rest" in */*) url="${url%/"${rest#*/}"}"; url="${url%/}" ;; esac
	echo "$url/$name$query"
}

tmp="$(mktemp -d)"
trap 'git worktree remove --force "$tmp/before" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
world_before=before
if [ "$BEFORE" = noleaves ]; then
	echo "building flagadmin-bench of the working tree without leaves and with them"
	go build -tags flagadmin_bench_noleaves -o "$tmp/bench-before" ./cmd/flagadmin-bench
	echo "noleaves (the working tree built with -tags flagadmin_bench_noleaves)" > "$OUT/before-rev"
	world_before=noleaves
else
	echo "building flagadmin-bench at $BEFORE and at the working tree"
	git worktree add --detach -q "$tmp/before" "$BEFORE"
	(cd "$tmp/before" && go build -o "$tmp/bench-before" ./cmd/flagadmin-bench)
	git rev-parse "$BEFORE" > "$OUT/before-rev"
fi
go build -o "$tmp/bench-after" ./cmd/flagadmin-bench
git rev-parse HEAD > "$OUT/after-rev"

# run VERSION CACHE-FLAGS...: one run, its table and JSON to $OUT.
run() {
	local version="$1" name="$1-$2" world="$1"
	[ "$version" = before ] && world="$world_before"
	shift 2
	if [ -n "$WORLD_FROM" ]; then
		case "$("$tmp/bench-$version" --help 2>&1 || true)" in
		*--world-from*) set -- --world-from "$WORLD_FROM" "$@" ;;
		esac
	fi
	echo
	echo "== $name"
	"$tmp/bench-$version" --db "$(with_db "$PG_DSN" "flagadmin_bench_ab_$world")" --events "$EVENTS" \
		--connections "$CONNECTIONS" --duration "$DURATION" --warmup "$WARMUP" --kinds "$KINDS" \
		--json "$OUT/$name.json" "$@" | tee "$OUT/$name.txt"
}

run before cached
run after cached
run after uncached --result-cache-size 0
run before uncached --result-cache-size 0

for c in cached uncached; do
	echo
	echo "== after relative to before, result cache $c"
	"$tmp/bench-after" compare "$OUT/before-$c.json" "$OUT/after-$c.json" | tee "$OUT/after-vs-before-$c.txt"
done
echo
echo "results in $OUT"
