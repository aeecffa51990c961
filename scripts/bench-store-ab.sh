#!/usr/bin/env bash
# bench-store-ab.sh compares two versions of the SQL store with the store
# benchmarks of adapters/bunstore (no server, no HTTP): the test binary of
# revision BEFORE and of the working tree (AFTER), on one benchmark
# database, run in turns on one machine,
#
#   before, after, after, before, before, after, ...
#
# so that drift of a shared machine affects both alike. Each run is one
# -count of the benchmarks BENCH; then, for each benchmark, the mean and
# range of ns/op of each version, the ratio of the means (AFTER / BEFORE)
# and the ratio of each round's pair.
#
# Usage: scripts/bench-store-ab.sh BEFORE_REV
#
# Settings (environment):
#   BENCH                         -bench of the runs (default BenchmarkDeepPage/postgres)
#   ROUNDS                        pairs of runs (default 6)
#   BENCHTIME                     -benchtime of each run (default 3s)
#   WITH_FILES                    files of the working tree (paths from the repository's
#                                 root, separated by spaces) copied into BEFORE's checkout
#                                 before it is built: a benchmark newer than BEFORE, such as
#                                 adapters/bunstore/textsearch_bench_test.go
#   FLAGADMIN_BENCH_POSTGRES_DSN  default postgres://postgres@127.0.0.1:5432/test?sslmode=disable;
#                                 the other FLAGADMIN_BENCH_* settings of bench-store.sh apply
#   RESULTS                       results directory (default bench-results, git-ignored)
#
# The first run loads the benchmark world when the database does not hold
# it (minutes); both versions must read the same schema (BEFORE may not
# need a migration AFTER makes).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 1 ]; then
	echo "usage: scripts/bench-store-ab.sh BEFORE_REV" >&2
	exit 2
fi
before_rev="$1"
BENCH="${BENCH:-BenchmarkDeepPage/postgres}"
ROUNDS="${ROUNDS:-6}"
BENCHTIME="${BENCHTIME:-3s}"
RESULTS="${RESULTS:-bench-results}"
case "$ROUNDS" in
'' | *[!0-9]* | 0) echo "bench-store-ab.sh: ROUNDS must be a positive whole number, not '$ROUNDS'" >&2; exit 2 ;;
esac
export FLAGADMIN_BENCH_POSTGRES_DSN="${FLAGADMIN_BENCH_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
OUT="$RESULTS/store-ab-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"

tmp="$(mktemp -d)"
cleanup() {
	git worktree remove --force "$tmp/before" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
git worktree add --quiet --detach "$tmp/before" "$before_rev"
for f in ${WITH_FILES:-}; do
	if [ ! -f "$f" ]; then
		echo "bench-store-ab.sh: WITH_FILES names $f, which is not a file of the working tree" >&2
		exit 2
	fi
	cp "$f" "$tmp/before/$f"
done
echo "building the store benchmarks of $before_rev and of the working tree"
(cd "$tmp/before" && go test -c -o "$tmp/before.test" ./adapters/bunstore)
go test -c -o "$tmp/after.test" ./adapters/bunstore

# run VERSION ROUND runs the benchmarks of VERSION once, from its package
# directory (the benchmarks read testdata there).
run() {
	local dir=adapters/bunstore
	[ "$1" = before ] && dir="$tmp/before/adapters/bunstore"
	echo "== $1, round $2"
	(cd "$dir" && "$tmp/$1.test" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME" -test.count 1) |
		grep '^Benchmark' | sed "s/^/$1 $2 /" | tee -a "$OUT/runs.txt"
}
for round in $(seq 1 "$ROUNDS"); do
	if [ $((round % 2)) -eq 1 ]; then
		run before "$round"
		run after "$round"
	else
		run after "$round"
		run before "$round"
	fi
done

echo
echo "== after ($(git rev-parse --short HEAD) and the working tree) relative to before ($before_rev), ns/op, $ROUNDS rounds"
# Each line of runs.txt: version round name iterations ns/op ...
awk '
	{ k = $3; ns = $5; v[$1, k, $2] = ns; n[$1, k]++; s[$1, k] += ns
	  if (!(($1, k) in lo) || ns < lo[$1, k]) lo[$1, k] = ns
	  if (ns > hi[$1, k]) hi[$1, k] = ns
	  if (!(k in seen)) { seen[k] = 1; order[++names] = k }
	  if ($2 > rounds) rounds = $2 }
	END {
		for (i = 1; i <= names; i++) {
			k = order[i]
			printf "%s\n  before: mean %.3f ms (%.3f-%.3f)\n  after:  mean %.3f ms (%.3f-%.3f)\n  after/before: %.2fx; each round:", k,
				s["before", k] / n["before", k] / 1e6, lo["before", k] / 1e6, hi["before", k] / 1e6,
				s["after", k] / n["after", k] / 1e6, lo["after", k] / 1e6, hi["after", k] / 1e6,
				(s["after", k] / n["after", k]) / (s["before", k] / n["before", k])
			for (r = 1; r <= rounds; r++) if (((("before", k, r) in v)) && (("after", k, r) in v)) printf " %.2fx", v["after", k, r] / v["before", k, r]
			printf "\n"
		}
	}' "$OUT/runs.txt" | tee "$OUT/summary.txt"
echo "results in $OUT"
