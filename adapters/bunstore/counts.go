package bunstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Event counts kept at write time. Every path that appends events also adds
// them to event_counts in the same transaction: one row for all events, one
// for the events without a project, one per value of each filtered column
// (project, feature, type, creator, environment), and one per UTC day for
// all events and for those without a project (dayVal), and likewise one per
// month (monthOf the day value). Events are never
// deleted, so the counts only grow. A search whose total is the count of
// "all events", of "events with one of these values in one column" or of
// "events of these whole days" (the common pages: no filter, one IS /
// IS_ANY_OF filter, a date range, with the visibility of any caller) reads
// its total from a few rows instead of counting up to millions of index
// entries, and a large offset with no column filter skips whole days by
// their counts (daySeek).
//
// Sharding: the rows every writer touches (all events, today, the common
// types and creators) would make concurrent writers queue on one row lock
// each. So each row is split into countShards shards, the shard being part
// of the dim: shard 0 is the dim itself ("all"), shard k > 0 is
// "all/k" (shardDims). A transaction adds all its deltas to the shard it
// drew at random, and readers sum every shard. Two writers that drew
// different shards touch disjoint rows; two that drew the same one lock
// its rows in the same (sorted) order, so they cannot deadlock.

// Dimensions of event_counts (shard 0; see shardDims).
const (
	countAll          = "all"
	countNoProject    = "no-project"
	countProject      = "project"
	countFeature      = "feature"
	countType         = "type"
	countCreator      = "creator"
	countEnvironment  = "environment"
	countDay          = "day"            // val: dayVal of created_at
	countDayNoProject = "day-no-project" // likewise, events without a project
	// The days summed by month (val: monthOf the day value), for all
	// events and for those without a project: a deep offset skips whole
	// months by them, then whole days of one month (daySeek).
	countMonth          = "month"
	countMonthNoProject = "month-no-project"
)

// The column dims counted again per project (val: inProjectVal) and for
// the events without a project, so that a caller who cannot see some
// projects, or only events with a project, still reads a filtered total
// from a few rows: the value's count less its count in each hidden
// project and without a project.
var countsByProject = map[string]struct{ inProject, noProject string }{
	countFeature:     {"feature-in-project", "feature-no-project"},
	countType:        {"type-in-project", "type-no-project"},
	countCreator:     {"creator-in-project", "creator-no-project"},
	countEnvironment: {"environment-in-project", "environment-no-project"},
}

// countMonthInProject counts the events of a project per month (val:
// inProjectVal of the project and monthOf the day), so that a deep offset
// skips whole months of a caller's hidden projects (monthSeek).
const countMonthInProject = "month-in-project"

// monthOf is the month of a day value: its first seven characters
// ("0000-00" and "9999-99" for the days before 1000 and after 9999).
func monthOf(day string) string { return day[:7] }

// maxCountVal is the longest val of event_counts, in characters
// ({EVENTKEY} on MySQL).
const maxCountVal = 700

// inProjectVal is the val of the count of the events of project with val
// in a column dim: the project's length in characters, ":", the project
// and the value, which no other pair gives; or, when that is longer than
// a val may be, "#" and its SHA-256 in hex.
func inProjectVal(project, val string) string {
	v := strconv.Itoa(utf8.RuneCountInString(project)) + ":" + project + val
	if utf8.RuneCountInString(v) <= maxCountVal {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "#" + hex.EncodeToString(sum[:])
}

// countShards is the number of shards of every row of event_counts.
const countShards = 8

// shardDims returns the dims of every shard of dim: dim, dim/1, dim/2, ...
func shardDims(dim string) []string {
	out := make([]string, countShards)
	out[0] = dim
	for k := 1; k < countShards; k++ {
		out[k] = dim + "/" + strconv.Itoa(k)
	}
	return out
}

// shardDim is dim's name in shard k.
func shardDim(dim string, k int) string {
	if k == 0 {
		return dim
	}
	return dim + "/" + strconv.Itoa(k)
}

// pickShard draws the shard of a transaction's deltas. SQLite's writers take
// turns anyway: shard 0 keeps its table small.
func (s *Store) pickShard() int {
	if s.dialect == dialect.SQLite {
		return 0
	}
	return rand.IntN(countShards)
}

// eventCountsSchema is the table of counts: (dim, val) → n.
var eventCountsSchema = []table{{name: "event_counts", body: `
		dim {SHORT} NOT NULL,
		val {EVENTKEY} NOT NULL,
		n BIGINT NOT NULL,
		PRIMARY KEY (dim, val)`}}

// creatorText is the SQL of created_by_user_id as text on database name.
func creatorText(name dialect.Name) string {
	if name == dialect.MySQL {
		return "CAST(created_by_user_id AS CHAR)"
	}
	return "CAST(created_by_user_id AS TEXT)"
}

// backfillCounts recomputes event_counts from the events table, all in
// shard 0: the rows of migration 3 (every dim but the days).
func backfillCounts(name dialect.Name) []string {
	text := creatorText(name)
	group := func(dim, col string) string {
		return fmt.Sprintf("INSERT INTO event_counts (dim, val, n) SELECT '%s', %s, COUNT(*) FROM events WHERE %s IS NOT NULL GROUP BY %s",
			dim, col, col, col)
	}
	return []string{
		"DELETE FROM event_counts",
		"INSERT INTO event_counts (dim, val, n) SELECT '" + countAll + "', '', COUNT(*) FROM events",
		"INSERT INTO event_counts (dim, val, n) SELECT '" + countNoProject + "', '', COUNT(*) FROM events WHERE project IS NULL",
		group(countProject, "project"),
		group(countFeature, "feature_name"),
		group(countType, "type"),
		fmt.Sprintf("INSERT INTO event_counts (dim, val, n) SELECT '%s', %s, COUNT(*) FROM events WHERE created_by_user_id IS NOT NULL GROUP BY created_by_user_id", countCreator, text),
		group(countEnvironment, "environment"),
	}
}

// Day values. Days are UTC calendar days written YYYY-MM-DD, which sort
// as the days do for years 1000 to 9999. Times outside those years fall
// in two buckets that sort before and after every day: dayBefore1000 and
// dayAfter9999 (no real day, so no date range of whole days names them).
const (
	dayBefore1000 = "0000-00-00"
	dayAfter9999  = "9999-99-99"
	msPerDay      = 24 * 60 * 60 * 1000
)

// dayMinMs and dayMaxMs bound the times that have a day of their own:
// 1000-01-01T00:00Z (inclusive) and 10000-01-01T00:00Z (exclusive).
var (
	dayMinMs = time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	dayMaxMs = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
)

// dayVal is the day value of a stored time (Unix milliseconds).
func dayVal(ms int64) string {
	switch {
	case ms < dayMinMs:
		return dayBefore1000
	case ms >= dayMaxMs:
		return dayAfter9999
	}
	return time.UnixMilli(ms).UTC().Format(time.DateOnly)
}

// dayBound returns the day value of a bound of a date filter, and whether t
// is one: 00:00Z of a day from 1000-01-01 to 10000-01-01. Events at or after
// t are exactly those whose day value is at least the result.
func dayBound(t time.Time) (string, bool) {
	ms := t.UnixMilli()
	if !t.Equal(time.UnixMilli(ms)) || ms%msPerDay != 0 || ms < dayMinMs || ms > dayMaxMs {
		return "", false
	}
	return dayVal(ms), true
}

// dayStartMs returns the first stored time of the day of value val. It is
// an error for dayBefore1000, which has no first time, and for a value that
// is no day.
func dayStartMs(val string) (int64, error) {
	if val == dayAfter9999 {
		return dayMaxMs, nil
	}
	d, err := time.Parse(time.DateOnly, val)
	if err != nil || val == dayBefore1000 {
		return 0, fmt.Errorf("event_counts: day %q has no start", val)
	}
	return d.UnixMilli(), nil
}

// dayNumSQL is the SQL of the day number of an event's created_at on
// database name: the floor of it in days since the epoch, an integer
// (exact integer arithmetic on every database: % takes the dividend's sign
// everywhere, and the dividend is a multiple of a day; MySQL's / would
// give a decimal, DIV an integer).
func dayNumSQL(name dialect.Name) string {
	div := "/"
	if name == dialect.MySQL {
		div = "DIV"
	}
	return fmt.Sprintf("(created_at - ((created_at %% %[1]d) + %[1]d) %% %[1]d) %[2]s %[1]d", msPerDay, div)
}

// dayValSQL is the SQL of dayVal on database name for the day number d (a
// column or expression), formatted by the database.
func dayValSQL(name dialect.Name, d string) string {
	var format string
	switch name {
	case dialect.PG:
		format = "to_char(DATE '1970-01-01' + CAST({d} AS INTEGER), 'YYYY-MM-DD')"
	case dialect.MySQL:
		format = "DATE_FORMAT(DATE_ADD('1970-01-01', INTERVAL {d} DAY), '%Y-%m-%d')"
	default:
		format = "date({d} * 86400, 'unixepoch')"
	}
	val := fmt.Sprintf("CASE WHEN {d} < %d THEN '%s' WHEN {d} >= %d THEN '%s' ELSE %s END",
		dayMinMs/msPerDay, dayBefore1000, dayMaxMs/msPerDay, dayAfter9999, format)
	return strings.ReplaceAll(val, "{d}", d)
}

// daysOfEvents is a SELECT of (val, n): the number of events per day value
// among those where selects (a condition on events, "" for all), counted
// per day number first so that the database formats one value per day.
func daysOfEvents(name dialect.Name, where string) string {
	if where != "" {
		where = " WHERE " + where
	}
	return fmt.Sprintf("SELECT %s AS val, SUM(c) AS n FROM (SELECT %s AS d, COUNT(*) AS c FROM events%s GROUP BY %[2]s) days GROUP BY %[1]s",
		dayValSQL(name, "d"), dayNumSQL(name), where)
}

// backfillDays recomputes the day rows of event_counts (every shard) from
// the events table, into shard 0.
func backfillDays(name dialect.Name) []string {
	insert := func(dim, where string) string {
		return fmt.Sprintf("INSERT INTO event_counts (dim, val, n) SELECT '%s', val, n FROM (%s) d", dim, daysOfEvents(name, where))
	}
	var dims []string
	for _, dim := range []string{countDay, countDayNoProject} {
		for _, d := range shardDims(dim) {
			dims = append(dims, "'"+d+"'")
		}
	}
	return []string{
		"DELETE FROM event_counts WHERE dim IN (" + strings.Join(dims, ", ") + ")",
		insert(countDay, ""),
		insert(countDayNoProject, "project IS NULL"),
	}
}

// countKey is one row of event_counts.
type countKey struct{ dim, val string }

// countDelta is what a batch of events adds to one row.
type countDelta struct {
	countKey
	n int64
}

// countDeltas returns what events add to the rows of shard, ordered by key
// so that concurrent writers lock the rows in one order (no deadlocks).
func countDeltas(events []flagadmin.Event, shard int) []countDelta {
	m := map[countKey]int64{{countAll, ""}: int64(len(events))}
	add := func(dim string, v *string) {
		if v != nil {
			m[countKey{dim, *v}]++
		}
	}
	for _, e := range events {
		day := dayVal(millis(e.CreatedAt))
		month := monthOf(day)
		m[countKey{countDay, day}]++
		m[countKey{countMonth, month}]++
		if e.Project != nil {
			m[countKey{countMonthInProject, inProjectVal(*e.Project, month)}]++
		}
		if e.Project == nil {
			m[countKey{countNoProject, ""}]++
			m[countKey{countDayNoProject, day}]++
			m[countKey{countMonthNoProject, month}]++
		}
		add(countProject, e.Project)
		var creator *string
		if e.CreatedByUserID != nil {
			id := strconv.FormatInt(*e.CreatedByUserID, 10)
			creator = &id
		}
		for _, c := range [...]struct {
			dim string
			v   *string
		}{{countFeature, e.FeatureName}, {countType, &e.Type}, {countCreator, creator}, {countEnvironment, e.Environment}} {
			if c.v == nil {
				continue
			}
			m[countKey{c.dim, *c.v}]++
			if e.Project == nil {
				m[countKey{countsByProject[c.dim].noProject, *c.v}]++
			} else {
				m[countKey{countsByProject[c.dim].inProject, inProjectVal(*e.Project, *c.v)}]++
			}
		}
	}
	out := make([]countDelta, 0, len(m))
	for k, n := range m {
		out = append(out, countDelta{countKey{shardDim(k.dim, shard), k.val}, n})
	}
	slices.SortFunc(out, func(a, b countDelta) int { return cmp.Or(cmp.Compare(a.dim, b.dim), cmp.Compare(a.val, b.val)) })
	return out
}

// countsUpsert adds deltas to event_counts.
var countsUpsert = upsert{table: "event_counts", columns: [3]string{"dim", "val", "n"}, merge: mergeSum, chunk: 5000}

// addCounts adds events to event_counts, in shard, through exec, in the
// caller's transaction.
func addCounts(ctx context.Context, name dialect.Name, dollar bool, shard int, events []flagadmin.Event, exec func(ctx context.Context, query string, args ...any) error) error {
	if len(events) == 0 {
		return nil
	}
	deltas := countDeltas(events, shard)
	rows := make([][3]any, len(deltas))
	for i, d := range deltas {
		rows[i] = [3]any{d.dim, d.val, d.n}
	}
	return countsUpsert.write(ctx, name, dollar, rows, exec)
}

// addCountsBun adds events to event_counts in a bun transaction.
func (s *Store) addCountsBun(ctx context.Context, db bun.IDB, events []flagadmin.Event) error {
	return addCounts(ctx, s.dialect, false, s.pickShard(), events, func(ctx context.Context, query string, args ...any) error {
		_, err := db.ExecContext(ctx, query, args...)
		return err
	})
}

// addCountsPgx adds events to event_counts in a pgx transaction (the COPY path).
func (s *Store) addCountsPgx(ctx context.Context, tx pgx.Tx, events []flagadmin.Event) error {
	return addCounts(ctx, dialect.PG, true, s.pickShard(), events, func(ctx context.Context, query string, args ...any) error {
		_, err := tx.Exec(ctx, query, args...)
		return err
	})
}

// migrateCountDays is migration 4: the day rows of every event already
// stored, in one transaction (the SQLite migration's own, on SQLite).
func migrateCountDays(ctx context.Context, db *bun.DB) error {
	return execAllTx(ctx, db, backfillDays(db.Dialect().Name()))
}

// unmigrateCountDays undoes migration 4: the counts of migration 3 alone,
// recomputed from the events (which also folds the shards into shard 0).
func unmigrateCountDays(ctx context.Context, db *bun.DB) error {
	return execAllTx(ctx, db, backfillCounts(db.Dialect().Name()))
}

// execAllTx runs statements in order in one transaction: execAll's on
// PostgreSQL, one of its own on MySQL (whose data statements, unlike its
// DDL, roll back); SQLite's migrations already run in one.
func execAllTx(ctx context.Context, db *bun.DB, stmts []string) error {
	if db.Dialect().Name() != dialect.MySQL {
		return execAll(ctx, db, stmts)
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, stmt := range stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// countByProjectColumns are the events columns of the dims of
// countsByProject.
var countByProjectColumns = map[string]string{
	countFeature: "feature_name", countType: "type", countCreator: "created_by_user_id", countEnvironment: "environment",
}

// backfillCountsByProject recomputes the rows of countsByProject from the
// events table, into shard 0: per column, the events grouped by project
// and value, their vals computed here (inProjectVal) as writes compute
// them.
func backfillCountsByProject(ctx context.Context, db bun.IDB) error {
	name := db.Dialect().Name()
	if _, err := db.NewRaw("DELETE FROM event_counts WHERE dim IN (?)", bun.In(byProjectDims())).Exec(ctx); err != nil {
		return err
	}
	exec := func(ctx context.Context, query string, args ...any) error {
		_, err := db.ExecContext(ctx, query, args...)
		return err
	}
	for _, dim := range slices.Sorted(maps.Keys(countByProjectColumns)) {
		col := bun.Safe(countByProjectColumns[dim])
		if dim == countCreator {
			col = bun.Safe(creatorText(name))
		}
		var groups []struct {
			Project *string `bun:"project"`
			Val     string  `bun:"v"`
			N       int64   `bun:"n"`
		}
		err := db.NewRaw("SELECT project, ? AS v, COUNT(*) AS n FROM events WHERE ? IS NOT NULL GROUP BY project, ?",
			col, bun.Safe(countByProjectColumns[dim]), col).Scan(ctx, &groups)
		if err != nil {
			return err
		}
		rows := make([][3]any, 0, len(groups))
		for _, g := range groups {
			if g.Project == nil {
				rows = append(rows, [3]any{countsByProject[dim].noProject, g.Val, g.N})
			} else {
				rows = append(rows, [3]any{countsByProject[dim].inProject, inProjectVal(*g.Project, g.Val), g.N})
			}
		}
		if err := countsUpsert.write(ctx, name, false, rows, exec); err != nil {
			return err
		}
	}
	// Months per project: grouped by day number there, by month here.
	var days []struct {
		Project string `bun:"project"`
		D       int64  `bun:"d"`
		N       int64  `bun:"n"`
	}
	err := db.NewRaw("SELECT project, "+dayNumSQL(name)+" AS d, COUNT(*) AS n FROM events WHERE project IS NOT NULL GROUP BY project, "+dayNumSQL(name)).
		Scan(ctx, &days)
	if err != nil {
		return err
	}
	months := map[string]int64{}
	for _, d := range days {
		months[inProjectVal(d.Project, monthOf(dayVal(d.D*msPerDay)))] += d.N
	}
	rows := make([][3]any, 0, len(months))
	for _, v := range slices.Sorted(maps.Keys(months)) {
		rows = append(rows, [3]any{countMonthInProject, v, months[v]})
	}
	return countsUpsert.write(ctx, name, false, rows, exec)
}

// migrateCountsByProject is the Up of migration event_counts_by_project.
// Like execAll, a transaction of its own on PostgreSQL; the others run
// migrations in one.
func migrateCountsByProject(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() == dialect.PG {
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return backfillCountsByProject(ctx, tx) })
	}
	return backfillCountsByProject(ctx, db)
}

// unmigrateCountsByProject is its Down: the rows of countsByProject removed.
func unmigrateCountsByProject(ctx context.Context, db *bun.DB) error {
	_, err := db.NewRaw("DELETE FROM event_counts WHERE dim IN (?)", bun.In(byProjectDims())).Exec(ctx)
	return err
}

// byProjectDims are the dims of migration event_counts_by_project, every
// shard.
func byProjectDims() []string {
	dims := shardDims(countMonthInProject)
	for _, d := range countsByProject {
		dims = append(dims, shardDims(d.inProject)...)
		dims = append(dims, shardDims(d.noProject)...)
	}
	return dims
}

// monthDims are the dims of the month rows and of the day rows they sum.
var monthDims = [...]struct{ month, day string }{{countMonth, countDay}, {countMonthNoProject, countDayNoProject}}

// backfillMonths recomputes the month rows of event_counts (every shard)
// into shard 0, from the day rows: each month's row is the sum of its
// days' (monthOf, as writes compute it), which is what daySeek relies on.
// Reading the days (a few thousand rows) rather than the events keeps the
// migration short however long the history.
func backfillMonths(ctx context.Context, db bun.IDB) error {
	name := db.Dialect().Name()
	var dims []string
	for _, d := range monthDims {
		dims = append(dims, shardDims(d.month)...)
	}
	if _, err := db.NewRaw("DELETE FROM event_counts WHERE dim IN (?)", bun.In(dims)).Exec(ctx); err != nil {
		return err
	}
	var rows [][3]any
	for _, d := range monthDims {
		var days []dayCount
		err := db.NewRaw("SELECT val, SUM(n) AS n FROM event_counts WHERE dim IN (?) GROUP BY val", bun.In(shardDims(d.day))).
			Scan(ctx, &days)
		if err != nil {
			return err
		}
		months := map[string]int64{}
		for _, day := range days {
			months[monthOf(day.Val)] += day.N
		}
		for _, m := range slices.Sorted(maps.Keys(months)) {
			rows = append(rows, [3]any{d.month, m, months[m]})
		}
	}
	return countsUpsert.write(ctx, name, false, rows, func(ctx context.Context, query string, args ...any) error {
		_, err := db.ExecContext(ctx, query, args...)
		return err
	})
}

// migrateCountMonths is the Up of migration event_counts_months, in one
// transaction (the SQLite migration's own, on SQLite).
func migrateCountMonths(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() == dialect.SQLite {
		return backfillMonths(ctx, db)
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return backfillMonths(ctx, tx) })
}

// unmigrateCountMonths is its Down: the month rows removed.
func unmigrateCountMonths(ctx context.Context, db *bun.DB) error {
	var dims []string
	for _, d := range monthDims {
		dims = append(dims, shardDims(d.month)...)
	}
	_, err := db.NewRaw("DELETE FROM event_counts WHERE dim IN (?)", bun.In(dims)).Exec(ctx)
	return err
}
