#!/usr/bin/env bash
# bench-unleash-ui.sh: flagadmin in front of the real Unleash (--upstream:
# served from its copy or forwarded), measured against Unleash directly, on an Unleash 8.2.0
# database of EVENTS generated events (flagadmin-bench unleash-ui):
#
#   1. the search of Unleash's event log page (GET /api/admin/search/events
#      with offset, limit and a from/to date range, as a user paging would,
#      on the generated world's last day: --today),
#      signed in as admin in the browser's way (the session cookie): median
#      and p90 of --loads loads directly against Unleash and through
#      flagadmin, interleaved, and the ratio;
#   2. read-your-writes: lifecycle completions forwarded through flagadmin,
#      the time from each request to the first search through flagadmin that
#      shows its event (p50, p99);
#   3. a flag's events (GET /api/admin/search/events?feature=IS:<flag>),
#      each request another flag, on --concurrency connections directly and
#      through flagadmin in turn: requests/s, p50/p99, the ratio;
#   4. the proxy's cost: the added p50 latency of a small proxied request
#      (GET /api/admin/ui-config) and the throughput of the main script of
#      Unleash's web UI (uncompressed, then gzip as a browser asks for it),
#      through flagadmin against Unleash directly and
#      against a bare httputil.ReverseProxy in the same run (the ceiling of
#      a Go proxy on this machine).
#
#   scripts/bench-unleash-ui.sh
#   EVENTS=100000 scripts/bench-unleash-ui.sh --loads 20 --completions 50
#
# The Unleash database is uibench_unleash_$EVENTS on the server of PG: the
# schema of the fixture's dump (shared/fixtures/unleash-8.2.0), filled by
# scripts/unleashgen, plus the user admin with the password unleash4all
# (Unleash creates that user only in a database without users, and the
# generated world has users). It is built once and reused by later runs (a
# database comment names its world, generator version included, once it is
# complete; another world is rebuilt); DROP=1 drops it at the end. Each run
# adds its completions' events to it. flagadmin follows it into TARGET:
# memory (serve --db memory: --follow ... --upstream ..., the default) or
# sqlite (a new SQLite file), built from this tree unless FLAGADMIN names a
# flagadmin binary. Extra arguments go to flagadmin-bench unleash-ui.
#
#   TARGET=sqlite scripts/bench-unleash-ui.sh
#   TARGET=sqlite scripts/bench-unleash-ui.sh --sqlite-file /tmp/copy.db
#   TARGET=sqlite scripts/bench-unleash-ui.sh --sqlite-file /tmp/copy.db --phases feature --concurrency 16
#
# (the second keeps the SQLite copy: a later run resumes following it
# instead of importing the 1,000,000 events again.)
#
# Needs psql, gunzip, node and npm (the Unleash of testdata/unleash,
# installed with npm ci as internal/unleashserver does).
set -euo pipefail

PG=${PG:-postgres://postgres@127.0.0.1:5432}
OPTS=${PGOPTS:-sslmode=disable}
EVENTS=${EVENTS:-1000000}
TARGET=${TARGET:-memory}
DB=uibench_unleash_$EVENTS
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DUMP=${DUMP:-$ROOT/../shared/fixtures/unleash-8.2.0/unleash.sql.gz}
UNLEASH=$ROOT/testdata/unleash
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

admin() { psql -q -v ON_ERROR_STOP=1 "$PG/postgres?$OPTS" "$@"; }

echo "building flagadmin, flagadmin-bench and unleashgen"
FLAGADMIN=${FLAGADMIN:-$WORK/flagadmin}
[ "$FLAGADMIN" != "$WORK/flagadmin" ] || (cd "$ROOT" && go build -o "$WORK/flagadmin" ./cmd/flagadmin)
(cd "$ROOT" && go build -o "$WORK/flagadmin-bench" ./cmd/flagadmin-bench &&
	go build -o "$WORK/unleashgen" ./scripts/unleashgen)

# Unleash 8.2.0, as internal/unleashserver installs it (once per lock file).
stamp=$UNLEASH/node_modules/.flagadmin-installed
want=$(sha256sum "$UNLEASH/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
	echo "installing unleash-server (npm ci in testdata/unleash)"
	(cd "$UNLEASH" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
	echo "$want" >"$stamp"
fi

MARK="bench-unleash-ui: $("$WORK/unleashgen" -fingerprint -events "$EVENTS"), user admin"
have=$(admin -At -c "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '$DB'")
if [ "$have" = "$MARK" ]; then
	echo "reusing the database $DB ($MARK)"
else
	echo "building the database $DB: the Unleash 8.2.0 schema (fixture dump) with $EVENTS generated events"
	admin -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
	admin -c "CREATE DATABASE $DB"
	gunzip -c "$DUMP" | sed '/^\\\(un\)\{0,1\}restrict /d' | psql -q -v ON_ERROR_STOP=1 "$PG/$DB?$OPTS" >/dev/null
	"$WORK/unleashgen" -db "$PG/$DB?$OPTS" -events "$EVENTS"
	# The sign-in of the web UI: admin / unleash4all, an Admin (root role 1),
	# with the password hashed by Unleash's own bcrypt library.
	hash=$(cd "$UNLEASH" && node -e "console.log(require('bcryptjs').hashSync('unleash4all', 10))")
	psql -q -v ON_ERROR_STOP=1 "$PG/$DB?$OPTS" <<-SQL
		WITH u AS (
			INSERT INTO users (username, name, password_hash, created_at)
			VALUES ('admin', 'Admin', '$hash', now()) RETURNING id
		)
		INSERT INTO role_user (role_id, user_id, project) SELECT 1, id, 'default' FROM u;
		VACUUM ANALYZE;
	SQL
	admin -c "COMMENT ON DATABASE $DB IS '$MARK'"
fi
psql -At "$PG/$DB?$OPTS" -c "SELECT 'database $DB: ' || pg_size_pretty(pg_database_size(current_database())) || ', ' || count(*) || ' events' FROM events"

status=0
# The event log page is opened on the generated world's last day: its
# default range (the last year) then holds the newest half of the events,
# as on an Unleash in use, whatever day the benchmark runs.
"$WORK/flagadmin-bench" unleash-ui --flagadmin "$FLAGADMIN" --target "$TARGET" --unleash "$UNLEASH" --db "$PG/$DB?$OPTS" \
	--today "$("$WORK/unleashgen" -last-day -events "$EVENTS")" "$@" || status=$?

if [ "${DROP:-0}" = 1 ]; then
	admin -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
	echo "dropped the database $DB"
fi
exit $status
