// Package eventcounts keeps event_counts, a summary of the events table
// written in the same transaction as the events (Add): the number of
// events of each scope (every event, those without a project, those of one
// project) in all, per value of each filtered column (feature, type,
// creator, environment), per UTC day and per UTC month. Events removed
// by retention are taken away from them (Remove).
//
// It is a speed-up of the store (bunstore.EventCounts), read through a
// Plan: a search whose total is a sum of counted rows (no filter, one IS /
// IS_ANY_OF filter, a range of whole days, with the visibility of any
// caller) reads its total from a few rows instead of counting up to
// millions of index entries (Plan.Total), and a large offset with no
// column filter skips whole months, then days, by their counts instead of
// index entries (Plan.Seek). Without it, the store counts the matches and
// reads past the offset on an index.
//
// # Rows
//
// A row holds n, the number of events it counts, and newest, the
// createdAt of the newest of them (Unix milliseconds): with the rows of
// each project's events, the project list's lastUpdatedAt (Newest). It
// is keyed by typed columns: dim (what is counted, Dim), scope
// (which events, Scope), project (the project of ScopeProject, else empty),
// value (the feature, type or environment counted, else empty), num (the
// creator's user id, the day or the month counted, else 0) and shard. A
// project or value longer than MaxKeyBytes bytes is not counted (a row
// would not fit MySQL's index key); a plan that would need it counts the
// matches instead.
//
// # Shards
//
// The rows every writer touches (all events, today, the common types and
// creators) would make concurrent writers queue on one row lock each. So
// each row is split into Shards rows by the shard column: a transaction
// adds all its deltas to the shard it drew at random, and readers sum
// every shard. Two writers that drew different shards touch disjoint rows;
// two that drew the same one lock its rows in one (sorted) order, so they
// cannot deadlock. SQLite's writers take turns anyway and use shard 0.
package eventcounts

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Dim is what a row of event_counts counts.
type Dim int16

// Dims of event_counts.
const (
	// DimEvents counts the events of the scope (value and num empty).
	DimEvents Dim = iota
	// DimFeature counts those of one feature (value).
	DimFeature
	// DimType counts those of one type (value).
	DimType
	// DimCreator counts those of one creator (num: the user id).
	DimCreator
	// DimEnvironment counts those of one environment (value).
	DimEnvironment
	// DimDay counts those of one UTC day (num: days since 1970-01-01), in
	// every scope.
	DimDay
	// DimMonth counts those of one UTC month (num: months since 1970-01),
	// in every scope.
	DimMonth
)

// Scope is which events a row of event_counts counts.
type Scope int16

// Scopes of event_counts.
const (
	ScopeAll       Scope = iota // every event
	ScopeNoProject              // the events without a project
	ScopeProject                // the events of one project (the project column)
)

// MaxKeyBytes bounds the project and the value of a row, in bytes: two of
// them, with the rest of the key, fit MySQL's index key (3072 bytes) and
// PostgreSQL's (about 2700).
const MaxKeyBytes = 1000

// Shards is the number of shards of every row that writers draw from.
const Shards = 8

// PruneShard is the shard retention's negative deltas go to (Remove),
// beyond those writers draw from: a pruning batch then holds no row a
// writer waits for. Pruning batches take turns (the caller's prune lock).
const PruneShard = Shards

// key is a row of event_counts, without its shard.
type key struct {
	dim     Dim
	scope   Scope
	project string
	value   string
	num     int64
}

// compare orders keys: writers lock rows in this order.
func (k key) compare(o key) int {
	return cmp.Or(cmp.Compare(k.dim, o.dim), cmp.Compare(k.scope, o.scope), strings.Compare(k.project, o.project),
		strings.Compare(k.value, o.value), cmp.Compare(k.num, o.num))
}

// delta is what events add to a row: n of them, the newest created at
// newest.
type delta struct{ n, newest int64 }

// counts are deltas of rows, by key.
type counts map[key]delta

// add adds n events, the newest created at newest, to the row of k, unless
// k's project or value is too long to be counted.
func (c counts) add(k key, n, newest int64) {
	if len(k.project) > MaxKeyBytes || len(k.value) > MaxKeyBytes {
		return
	}
	d, ok := c[k]
	if ok {
		newest = max(newest, d.newest)
	}
	c[k] = delta{d.n + n, newest}
}

// scopeOf is the scope of the events of project (nil: without a project)
// and the project column of its rows.
func scopeOf(project *string) (Scope, string) {
	if project == nil {
		return ScopeNoProject, ""
	}
	return ScopeProject, *project
}

// events adds n events of project (nil: without one), the newest created
// at newest, to DimEvents.
func (c counts) events(project *string, n, newest int64) {
	scope, p := scopeOf(project)
	c.add(key{dim: DimEvents, scope: ScopeAll}, n, newest)
	c.add(key{dim: DimEvents, scope: scope, project: p}, n, newest)
}

// column adds n events of project with value (or num, for DimCreator) in
// the column of dim, the newest created at newest: in every event's scope
// and in the project's (or the events without one).
func (c counts) column(dim Dim, project *string, value string, num int64, n, newest int64) {
	scope, p := scopeOf(project)
	c.add(key{dim: dim, scope: ScopeAll, value: value, num: num}, n, newest)
	c.add(key{dim: dim, scope: scope, project: p, value: value, num: num}, n, newest)
}

// day adds n events of project created on day (days since 1970-01-01),
// the newest at newest: the day's rows and its month's, each of every
// event and of the events' own scope (without a project, or of the
// project).
func (c counts) day(project *string, day int64, n, newest int64) {
	scope, p := scopeOf(project)
	month := monthOfDay(day)
	c.add(key{dim: DimDay, scope: ScopeAll, num: day}, n, newest)
	c.add(key{dim: DimDay, scope: scope, project: p, num: day}, n, newest)
	c.add(key{dim: DimMonth, scope: ScopeAll, num: month}, n, newest)
	c.add(key{dim: DimMonth, scope: scope, project: p, num: month}, n, newest)
}

// event adds e.
func (c counts) event(e flagadmin.Event) {
	at := e.CreatedAt.UnixMilli()
	c.events(e.Project, 1, at)
	for _, col := range []struct {
		dim   Dim
		value *string
	}{{DimFeature, e.FeatureName}, {DimType, &e.Type}, {DimEnvironment, e.Environment}} {
		if col.value != nil {
			c.column(col.dim, e.Project, *col.value, 0, 1, at)
		}
	}
	if e.CreatedByUserID != nil {
		c.column(DimCreator, e.Project, "", *e.CreatedByUserID, 1, at)
	}
	c.day(e.Project, dayOf(at), 1, at)
}

// Add adds events to event_counts, in the caller's write transaction: all
// its deltas in one shard, in key order (see Shards). With spread, the
// shard is drawn at random, for concurrent writers; without, it is shard
// 0, for bulk writers (imports, generated histories), which run alone and
// would otherwise leave Shards rows where one does.
func Add(ctx context.Context, db bun.IDB, events []flagadmin.Event, spread bool) error {
	if len(events) == 0 {
		return nil
	}
	c := counts{}
	for _, e := range events {
		c.event(e)
	}
	shard := 0
	if spread && db.Dialect().Name() != dialect.SQLite {
		shard = rand.IntN(Shards)
	}
	return c.write(ctx, db, shard)
}

// Remove takes events away from event_counts (retention pruned them), in
// the caller's write transaction: the deltas are negative, added to
// PruneShard, so the rows' sums drop by the events removed. A row's newest is left as it is: pruning removes the oldest
// events, and Newest leaves out the projects whose count fell to 0.
func Remove(ctx context.Context, db bun.IDB, events []flagadmin.Event) error {
	if len(events) == 0 {
		return nil
	}
	c := counts{}
	for _, e := range events {
		c.event(e)
	}
	for k, d := range c {
		c[k] = delta{n: -d.n} // newest 0: the upsert keeps the stored one
	}
	return c.write(ctx, db, PruneShard)
}

// upsertChunk bounds the rows of one upsert statement.
const upsertChunk = 2000

// write adds c to the rows of shard, in key order, by multi-row upserts.
func (c counts) write(ctx context.Context, db bun.IDB, shard int) error {
	keys := slices.SortedFunc(maps.Keys(c), key.compare)
	for start := 0; start < len(keys); start += upsertChunk {
		part := keys[start:min(len(keys), start+upsertChunk)]
		args := make([]any, 0, 8*len(part))
		for _, k := range part {
			args = append(args, int16(k.dim), int16(k.scope), k.project, k.value, k.num, shard, c[k].n, c[k].newest)
		}
		query := "INSERT INTO event_counts (dim, scope, project, value, num, shard, n, newest) VALUES " +
			strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?), ", len(part)-1) + "(?, ?, ?, ?, ?, ?, ?, ?)" + onConflict(db.Dialect().Name())
		if _, err := db.ExecContext(ctx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// onConflict is the upsert clause adding a row's n to the stored one and
// keeping the newer newest.
func onConflict(name dialect.Name) string {
	switch name {
	case dialect.MySQL:
		return " ON DUPLICATE KEY UPDATE n = n + VALUES(n), newest = GREATEST(newest, VALUES(newest))"
	case dialect.PG:
		return " ON CONFLICT (dim, scope, project, value, num, shard) DO UPDATE SET n = event_counts.n + EXCLUDED.n, newest = GREATEST(event_counts.newest, EXCLUDED.newest)"
	default:
		return " ON CONFLICT (dim, scope, project, value, num, shard) DO UPDATE SET n = n + excluded.n, newest = max(newest, excluded.newest)"
	}
}

// Newest is the SQL of the createdAt of the newest event of each project
// of the project list (projects AS p) with counted events, from its rows
// (every shard), for the database name: on SQLite, a lookup of each
// project's rows in the key; elsewhere, the rows of every project grouped
// once and joined. Each is the cheaper where it is chosen: SQLite builds
// an index of the grouped rows for every list (the lookups made the
// store's list of 200 projects 0.77x as long: BENCHMARKS.md, "Where
// nothing is cached"), and PostgreSQL runs the lookups as one subplan a
// project, which took twice as long as grouping the rows once.
func Newest(name dialect.Name) summary.NewestEvents {
	if name == dialect.SQLite {
		return summary.NewestEvents{Column: sqlq.F("(SELECT CASE WHEN SUM(n) > 0 THEN MAX(newest) END FROM event_counts WHERE " + projectEventRows + " AND project = p.id)")}
	}
	return summary.NewestEvents{Column: sqlq.F("l.newest"),
		Joins: sqlq.F("LEFT JOIN (SELECT project, MAX(newest) AS newest FROM event_counts WHERE " + projectEventRows + " GROUP BY project HAVING SUM(n) > 0) l ON l.project = p.id")}
}

// projectEventRows selects the rows that count each project's events.
var projectEventRows = fmt.Sprintf("dim = %d AND scope = %d", DimEvents, ScopeProject)

// Rebuild recomputes event_counts from the events table, all in shard 0,
// in the caller's transaction: the events grouped by project and by each
// column, and by project and day, added with the same functions as
// writes add each event, so the rows are those writes would have left.
func Rebuild(ctx context.Context, db bun.IDB) error {
	if _, err := db.ExecContext(ctx, "DELETE FROM event_counts"); err != nil {
		return err
	}
	c := counts{}
	if err := rebuildEvents(ctx, db, c); err != nil {
		return err
	}
	for _, col := range []struct {
		dim    Dim
		column string
	}{{DimFeature, "feature_name"}, {DimType, "type"}, {DimCreator, "created_by_user_id"}, {DimEnvironment, "environment"}} {
		if err := rebuildColumn(ctx, db, c, col.dim, col.column); err != nil {
			return err
		}
	}
	if err := rebuildDays(ctx, db, c); err != nil {
		return err
	}
	return c.write(ctx, db, 0)
}

// rebuildEvents adds the events per project to c.
func rebuildEvents(ctx context.Context, db bun.IDB, c counts) error {
	var groups []struct {
		Project *string `bun:"project"`
		N       int64   `bun:"n"`
		Newest  int64   `bun:"newest"`
	}
	if err := db.NewRaw("SELECT project, COUNT(*) AS n, MAX(created_at) AS newest FROM events GROUP BY project").Scan(ctx, &groups); err != nil {
		return err
	}
	for _, g := range groups {
		c.events(g.Project, g.N, g.Newest)
	}
	return nil
}

// rebuildColumn adds the events per project and value of column (the
// column of dim) to c.
func rebuildColumn(ctx context.Context, db bun.IDB, c counts, dim Dim, column string) error {
	value := column
	if dim == DimCreator {
		value = "''"
	}
	num := "0"
	if dim == DimCreator {
		num = column
	}
	var groups []struct {
		Project *string `bun:"project"`
		Value   string  `bun:"value"`
		Num     int64   `bun:"num"`
		N       int64   `bun:"n"`
		Newest  int64   `bun:"newest"`
	}
	query := fmt.Sprintf("SELECT project, %s AS value, %s AS num, COUNT(*) AS n, MAX(created_at) AS newest FROM events WHERE %s IS NOT NULL GROUP BY project, %[4]s",
		value, num, column, column)
	if err := db.NewRaw(query).Scan(ctx, &groups); err != nil {
		return err
	}
	for _, g := range groups {
		c.column(dim, g.Project, g.Value, g.Num, g.N, g.Newest)
	}
	return nil
}

// rebuildDays adds the events per project and day to c.
func rebuildDays(ctx context.Context, db bun.IDB, c counts) error {
	var groups []struct {
		Project *string `bun:"project"`
		Day     int64   `bun:"day"`
		N       int64   `bun:"n"`
		Newest  int64   `bun:"newest"`
	}
	day := daySQL(db.Dialect().Name())
	if err := db.NewRaw("SELECT project, "+day+" AS day, COUNT(*) AS n, MAX(created_at) AS newest FROM events GROUP BY project, "+day).Scan(ctx, &groups); err != nil {
		return err
	}
	for _, g := range groups {
		c.day(g.Project, g.Day, g.N, g.Newest)
	}
	return nil
}

// msPerDay is the length of a UTC day in milliseconds.
const msPerDay = 24 * 60 * 60 * 1000

// dayOf is the UTC day of a stored time (Unix milliseconds): the floor of
// it in days since 1970-01-01.
func dayOf(ms int64) int64 {
	d := ms / msPerDay
	if ms%msPerDay < 0 {
		d--
	}
	return d
}

// daySQL is the SQL of dayOf(created_at) on database name: exact integer
// arithmetic on every database (% takes the dividend's sign everywhere,
// and the dividend is a multiple of a day; MySQL's / would give a decimal,
// DIV an integer).
func daySQL(name dialect.Name) string {
	div := "/"
	if name == dialect.MySQL {
		div = "DIV"
	}
	return fmt.Sprintf("((created_at - ((created_at %% %[1]d) + %[1]d) %% %[1]d) %[2]s %[1]d)", msPerDay, div)
}

// monthOfDay is the UTC month of a day, in months since 1970-01.
func monthOfDay(day int64) int64 {
	t := time.UnixMilli(day * msPerDay).UTC()
	return int64(t.Year()-1970)*12 + int64(t.Month()) - 1
}

// monthStart is the first day of a month (both since 1970).
func monthStart(month int64) int64 {
	t := time.Date(1970, time.Month(month+1), 1, 0, 0, 0, 0, time.UTC)
	return dayOf(t.UnixMilli())
}

// dayBound returns the day of a bound of a date filter, and whether t is
// one: 00:00Z of a day, to the millisecond. Events at or after t are
// exactly those whose day is at least the result.
func dayBound(t time.Time) (int64, bool) {
	ms := t.UnixMilli()
	if !t.Equal(time.UnixMilli(ms)) || ms%msPerDay != 0 {
		return 0, false
	}
	return ms / msPerDay, true
}
