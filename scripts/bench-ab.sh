#!/usr/bin/env bash
# bench-ab.sh compares two versions of flagadmin end to end on PostgreSQL
# (or SQLite, SQLITE_WORLD):
# the load tool (cmd/flagadmin-bench) of revision BEFORE and of the working
# tree (AFTER), each with its own copy of the world, run in turns on one
# machine in one session, with the server's result cache on and then off:
#
#   before (cache on), after (cache on), after (cache off), before (cache off)
#
# so that drift of a shared machine affects both alike: each pair is
# adjacent, and the version that runs second in one pair runs first in
# the next (and in the next round, with ROUNDS). Each run prints its
# table (requests/s, latency percentiles, share of the bare net/http ceiling
# measured in the same run); then flagadmin-bench compare prints AFTER
# relative to BEFORE kind by kind, for each cache setting of each round.
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
#   SQLITE_WORLD                  instead of PostgreSQL, the SQLite file of a world (one
#                                 flagadmin-bench --db sqlite:FILE --build-only made): each
#                                 run of either version works on a fresh copy of it, so
#                                 the two versions must share its schema (each version
#                                 migrates the file before copying it)
#   SQLITE_WORLD_BEFORE           with SQLITE_WORLD, BEFORE's own file of the same world,
#                                 for versions whose schemas differ (a copy of the world
#                                 made before AFTER migrated it)
#   EVENTS                        events in the world (default 1000000)
#   CONNECTIONS                   default 16
#   DURATION, WARMUP              per kind, default 8s and 2s
#   KINDS                         --kinds of flagadmin-bench (default: every kind both
#                                 versions have: varied/,search/,deprecated/,projects,lifecycle/,mixed/)
#   CACHES                        the result cache settings to run, in order: cached (the
#                                 server's default) and uncached (--result-cache-size 0);
#                                 default "cached uncached"
#   ROUNDS                        rounds of those pairs (default 1): on a noisy machine one
#                                 pair can differ by more than the change; a round's files
#                                 end in -rN when there are several
#   AFTER_TAGS                    build tags of AFTER's load tool and server, e.g.
#                                 cgosqlite,sqlite_fts5,sqlite_stat4 for SQLite's own C
#                                 (mattn/go-sqlite3) in place of modernc.org/sqlite: with
#                                 BEFORE HEAD, the two drivers on the same code
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
CACHES="${CACHES:-cached uncached}"
ROUNDS="${ROUNDS:-1}"
for c in $CACHES; do
	case "$c" in
	cached | uncached) ;;
	*) echo "bench-ab.sh: unknown cache setting $c in CACHES (cached, uncached)" >&2; exit 2 ;;
	esac
done
case "$ROUNDS" in
'' | *[!0-9]* | 0) echo "bench-ab.sh: ROUNDS must be a number of rounds, 1 or more, not \"$ROUNDS\"" >&2; exit 2 ;;
esac
WORLD_FROM="${WORLD_FROM:-}"
SQLITE_WORLD="${SQLITE_WORLD:-}"
SQLITE_WORLD_BEFORE="${SQLITE_WORLD_BEFORE:-}"
if [ -n "$SQLITE_WORLD" ] && [ ! -f "$SQLITE_WORLD" ]; then
	echo "bench-ab.sh: SQLITE_WORLD $SQLITE_WORLD is not a file" >&2
	exit 2
fi
if [ -n "$SQLITE_WORLD_BEFORE" ] && { [ -z "$SQLITE_WORLD" ] || [ ! -f "$SQLITE_WORLD_BEFORE" ]; }; then
	echo "bench-ab.sh: SQLITE_WORLD_BEFORE must be a file, with SQLITE_WORLD set" >&2
	exit 2
fi
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
AFTER_TAGS="${AFTER_TAGS:-}"
go build ${AFTER_TAGS:+-tags "$AFTER_TAGS"} -o "$tmp/bench-after" ./cmd/flagadmin-bench
{ git rev-parse HEAD; [ -z "$AFTER_TAGS" ] || echo "built with -tags $AFTER_TAGS"; } > "$OUT/after-rev"

# run VERSION CACHE SUFFIX: one run of VERSION with the result cache
# setting CACHE, its table and JSON to $OUT as VERSION-CACHE-SUFFIX.
run() {
	local version="$1" cache="$2" name="$1-$2$3" world="$1"
	[ "$version" = before ] && world="$world_before"
	set --
	[ "$cache" = uncached ] && set -- --result-cache-size 0
	local db="sqlite:$SQLITE_WORLD"
	[ "$version" = before ] && [ -n "$SQLITE_WORLD_BEFORE" ] && db="sqlite:$SQLITE_WORLD_BEFORE"
	if [ -z "$SQLITE_WORLD" ]; then
		db="$(with_db "$PG_DSN" "flagadmin_bench_ab_$world")"
		if [ -n "$WORLD_FROM" ]; then
			case "$("$tmp/bench-$version" --help 2>&1 || true)" in
			*--world-from*) set -- "$@" --world-from "$WORLD_FROM" ;;
			esac
		fi
	fi
	echo
	echo "== $name"
	"$tmp/bench-$version" --db "$db" --events "$EVENTS" \
		--connections "$CONNECTIONS" --duration "$DURATION" --warmup "$WARMUP" --kinds "$KINDS" \
		--json "$OUT/$name.json" "$@" | tee "$OUT/$name.txt"
}

# The pairs in turns: the version that runs second in a pair runs first
# in the next one, across the rounds too.
suffixes=()
first=before second=after
for round in $(seq 1 "$ROUNDS"); do
	suffix=""
	[ "$ROUNDS" -gt 1 ] && suffix="-r$round"
	suffixes+=("$suffix")
	for c in $CACHES; do
		run "$first" "$c" "$suffix"
		run "$second" "$c" "$suffix"
		read -r first second <<<"$second $first"
	done
done

for suffix in "${suffixes[@]}"; do
	for c in $CACHES; do
		echo
		echo "== after relative to before, result cache $c${suffix:+, round ${suffix#-r}}"
		"$tmp/bench-after" compare "$OUT/before-$c$suffix.json" "$OUT/after-$c$suffix.json" | tee "$OUT/after-vs-before-$c$suffix.txt"
	done
done
echo
echo "results in $OUT"
