// Package pgpage answers a page of an event search on PostgreSQL in one
// statement: the total, the page's ids read from an index, and their rows
// (Statement), prepared when one generic plan serves every value, and
// decoded from pgx's raw values rather than through database/sql (Read).
// It is a speed-up of the store (bunstore.PageStatements): without it, a
// page is the portable total, ids and rows in one read-only transaction.
// An export's batches are decoded from pgx's raw values too (Export).
package pgpage

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// A page statement costs the server more to plan than to run when its
// values are written into the SQL text, since every distinct text is
// planned anew. Written with $n placeholders instead, its text depends only
// on the query's shape, and pgx keeps it prepared on each connection
// (pgx.QueryExecModeCacheStatement): after five executions PostgreSQL
// plans it once, generically, for any values.

// Statement returns the page statement of s (s.Query.Limit > 0) and its
// arguments for Read: Prepared when its generic plan is safe
// (GenericPlanSafe), else Literal.
func Statement(gen schema.QueryGen, s summary.Page) (string, []any) {
	if GenericPlanSafe(s.Query) {
		return Prepared(s)
	}
	return Literal(gen, s)
}

// Prepared returns the page statement of s with placeholders, its values
// hidden from the planner (sqlq.Fragment.Opaque), and its arguments:
// pgx.QueryExecModeCacheStatement, then the values.
func Prepared(s summary.Page) (string, []any) {
	return prepared(statement(s, true))
}

// prepared returns the text of f with placeholders, its values hidden
// from the planner (sqlq.Fragment.Opaque), and the arguments for Read:
// pgx.QueryExecModeCacheStatement, then the values.
func prepared(f sqlq.Fragment) (string, []any) {
	return cached(f.Opaque())
}

// cached returns text and the arguments for Read that keep it prepared:
// pgx.QueryExecModeCacheStatement, then args.
func cached(text string, args []any) (string, []any) {
	return text, append([]any{pgx.QueryExecModeCacheStatement}, args...)
}

// Literal returns the page statement of s with its values written into
// the text by gen, and no arguments.
func Literal(gen schema.QueryGen, s summary.Page) (string, []any) {
	return literal(gen, statement(s, false))
}

// literal returns the text of f with its values written in by gen, and no
// arguments.
func literal(gen schema.QueryGen, f sqlq.Fragment) (string, []any) {
	return string(gen.AppendQuery(nil, f.Text, f.Args...)), nil
}

// SeekRange is the statement of the page of limit events of where (a
// condition on events) after the rows skip (an OFFSET clause) skips,
// which a seek found: rangeRows, its event columns in page order.
func SeekRange(where sqlq.Fragment, limit int, skip sqlq.Fragment) sqlq.Fragment {
	return rangeRows(where, limit, skip)
}

// Rows returns the text and arguments for Read of stmt, a statement of a
// page's event columns (stored.EventColumns) in page order whose text
// repeats with other values (SeekRange): prepared, with the value of
// stamp (a scalar SQL expression of type bigint, read in the statement's
// snapshot) in the total's column in front, or 0 when stamp is empty.
func Rows(stmt, stamp sqlq.Fragment) (string, []any) {
	if stamp.Empty() {
		stamp = sqlq.F("CAST(0 AS bigint)")
	}
	return cached(sqlq.Fill("SELECT ? AS total, p.* FROM (?) AS p ORDER BY p.created_at DESC, p.id DESC", stamp, stmt).Dollar())
}

// Export reads a batch of an export on a connection of db, a database of
// the pgx driver: the first limit events by id among those of where (the
// export's filters and the range of ids it has still to read), decoded as
// a page's are (Read), with a total of 0.
func Export(ctx context.Context, db *bun.DB, where sqlq.Fragment, limit int) ([]flagadmin.Event, error) {
	sel := sqlq.Fill("SELECT CAST(0 AS bigint) AS total, "+columns+" FROM events AS e WHERE ? ORDER BY id ASC LIMIT ?", where, sqlq.F("?", limit))
	text, args := literal(db.QueryGen(), sel)
	page, err := Read(ctx, db.DB, text, args, limit)
	return page.Events, err
}

// TextPage reads the page of q, a free-text query (q.Limit > 0), on a
// connection of db, a database of the pgx driver, in one statement: its
// q.Limit events at q.Offset among those of matches (a condition on
// events, q's filters) after the cursor after (a condition on created_at
// and id; empty without one), in page order, with the total of matches
// whatever the cursor. The matches are found once (their ids and creation
// times, kept for the statement), then counted and paged, and only the
// page's rows are read; one snapshot serves the page and the total, which
// comes in a row of its own when the page is empty.
//
// A query of free text alone (with the caller's visibility) is kept
// prepared, its values hidden from the planner (sqlq.Fragment.Opaque): its plan, the
// text's candidates from the token index, is the same whatever the text,
// and planning the statement cost more than running it for most texts
// (a feature's name: 3.1-3.6 ms written literally, 1.4-1.8 ms prepared).
// With other filters it is written literally, planned for its values:
// which index serves a type or a date range with the text depends on how
// many events they hold.
func TextPage(ctx context.Context, db *bun.DB, q flagadmin.EventQuery, matches, after sqlq.Fragment) (flagadmin.EventPage, error) {
	text, args := TextStatement(db.QueryGen(), q, matches, after)
	return Read(ctx, db.DB, text, args, q.Limit)
}

// TextStatement returns the statement of TextPage and its arguments for
// Read: prepared, with pgx.QueryExecModeCacheStatement then the values,
// for free text alone (textAlone), else written literally.
func TextStatement(gen schema.QueryGen, q flagadmin.EventQuery, matches, after sqlq.Fragment) (string, []any) {
	ids := sqlq.F("SELECT id FROM m")
	if !after.Empty() {
		ids = after.Wrap("SELECT id FROM m WHERE ", "")
	}
	skip := sqlq.F(order + " LIMIT " + strconv.Itoa(q.Limit))
	if q.Offset > 0 {
		skip = sqlq.F(order+" LIMIT "+strconv.Itoa(q.Limit)+" OFFSET ?", int64(q.Offset))
	}
	sel := sqlq.Fill("WITH m AS MATERIALIZED (?), t AS (SELECT COUNT(*) AS total FROM m), p AS (?) "+rowsOfIDs,
		matches.Wrap("SELECT id, created_at FROM events WHERE ", ""), sqlq.Join("", ids, skip))
	if textAlone(q) {
		return prepared(sel)
	}
	return literal(gen, sel)
}

// textAlone reports whether q filters by its free text alone, and by what
// the caller may see (RequireProject, HiddenProjects).
func textAlone(q flagadmin.EventQuery) bool {
	if q.From != nil || q.Before != nil {
		return false
	}
	for _, n := range columnFilters(q) {
		if n > 0 {
			return false
		}
	}
	return true
}

// columns are the columns of a page's events, from events AS e.
var columns = "e." + strings.Join(stored.EventColumns, ", e.")

// statement is the page statement: the total (t), the page's rows (p,
// none when the offset is past the total); with an empty page, one row
// with the total and null event columns. The limit is written in the
// text: with a placeholder in LIMIT, PostgreSQL estimates the plan for a
// tenth of the rows. A prepared statement takes the offset as a value, so
// that paging does not prepare a statement per page.
//
// A query of at most one column filter of one value (GenericPlanSafe,
// with no splitFilter) reads its page as a range of the filter's index
// (column, created_at, id), or of events_created (rangeRows). Any other
// query reads the page's ids from an index, then their rows by id, so
// that the plan of the ids alone decides which index serves it; a filter
// of a few values (splitFilter) reads each value's newest offset+limit
// matches apart (UNION ALL), then keeps the page.
func statement(s summary.Page, prepared bool) sqlq.Fragment {
	q := s.Query
	notPast := sqlq.F("(SELECT total FROM t) > ?", int64(q.Offset))
	limit := " LIMIT " + strconv.Itoa(q.Limit)
	where := sqlq.And(s.Where(q), notPast)
	split := splitFilter(q)
	if split == nil && GenericPlanSafe(q) {
		var skip sqlq.Fragment
		if q.Offset > 0 {
			skip = sqlq.F("OFFSET ?", int64(q.Offset))
		}
		return sqlq.Fill("WITH t AS (SELECT ? AS total), p AS (?) SELECT t.total, p.* FROM t LEFT JOIN p ON TRUE ORDER BY p.created_at DESC, p.id DESC",
			s.Total, rangeRows(where, q.Limit, skip))
	}
	var ids sqlq.Fragment
	if prepared && split != nil {
		parts := make([]sqlq.Fragment, len(split))
		for i, one := range split {
			parts[i] = sqlq.And(s.Where(one), notPast).
				Wrap("(SELECT id, created_at FROM events WHERE ", order+" LIMIT "+strconv.Itoa(q.PageEnd())+")")
		}
		ids = sqlq.Join(" UNION ALL ", parts...).Wrap("SELECT id FROM (", ") AS u"+order+page(q.Limit, q.Offset))
	} else {
		ids = where.Wrap("SELECT id FROM events WHERE ", order+limit)
		if q.Offset > 0 {
			ids = sqlq.Join(" ", ids, sqlq.F("OFFSET ?", int64(q.Offset)))
		}
	}
	return sqlq.Fill("WITH t AS (SELECT ? AS total), p AS (?) "+rowsOfIDs, s.Total, ids)
}

// order is the order of a page's events.
const order = " ORDER BY created_at DESC, id DESC"

// rowsOfIDs selects, after a page's total (the table t, one row), the
// rows of the events whose ids the table p holds, in page order; with no
// id, one row with the total and null event columns.
var rowsOfIDs = "SELECT t.total, " + columns + " FROM t LEFT JOIN (p JOIN events AS e ON e.id = p.id) ON TRUE ORDER BY e.created_at DESC, e.id DESC"

// rangeRows is the statement of the limit events of where (a condition on
// events) in page order, read as a range of an index: from the newest
// match, or, with skip (an OFFSET clause), from the first row after the
// rows it skips, which the index alone finds. An index entry points at
// its row in the heap, so the range reads each row once: 20 to 50
// buffers, against some 200 for 50 rows looked up by id, each a descent
// of the primary key.
func rangeRows(where sqlq.Fragment, limit int, skip sqlq.Fragment) sqlq.Fragment {
	rows := where
	if !skip.Empty() {
		first := sqlq.Join(" ", where.Wrap("SELECT created_at, id FROM events WHERE ", order+" LIMIT 1"), skip)
		rows = sqlq.And(where, first.Wrap("(e.created_at, e.id) <= (", ")"))
	}
	return rows.Wrap("SELECT "+columns+" FROM events AS e WHERE ", order+" LIMIT "+strconv.Itoa(limit))
}

// page is " LIMIT limit[ OFFSET offset]".
func page(limit, offset int) string {
	p := " LIMIT " + strconv.Itoa(limit)
	if offset > 0 {
		p += " OFFSET " + strconv.Itoa(offset)
	}
	return p
}

// GenericPlanSafe reports whether one generic plan serves q's page
// statement for all values: when one plan serves its statements
// (summary.OnePlan: at most one column filter, of one value), or for a
// filter of a few values read apart (splitFilter) with no visibility
// restriction. A generic plan for type IN ($1, $2) walks events_created,
// expecting 1.4% of events per type. Hidden projects only filter rows,
// except with a date range, where their events in it are counted (the
// total) from events_project, which reads exactly those events whatever
// the projects (their values hidden from the planner:
// sqlq.Fragment.Opaque).
func GenericPlanSafe(q flagadmin.EventQuery) bool {
	if q.Text == "" && splitFilter(q) != nil {
		return !q.RequireProject && len(q.HiddenProjects) == 0
	}
	return summary.OnePlan(q)
}

// columnFilters are the numbers of values of q's column filters.
func columnFilters(q flagadmin.EventQuery) []int {
	var out []int
	for c := range q.ColumnFilters() {
		out = append(out, c.Len())
	}
	return out
}

// Bounds of splitFilter.
const (
	splitMaxValues = 8    // values of the one column filter
	splitMaxRows   = 1000 // offset + limit: rows read per value at most
)

// splitFilter returns, when q filters one column by 2 to splitMaxValues
// distinct values and q.PageEnd() is at most splitMaxRows, one query
// per value, each q with that value alone; else nil. A page of q is then
// read from each value's own index range (PostgreSQL reads an IN list on
// an index as one range per value, but cannot merge them in order: it
// reads every match and sorts).
func splitFilter(q flagadmin.EventQuery) []flagadmin.EventQuery {
	if q.PageEnd() > splitMaxRows {
		return nil
	}
	one, ok := oneColumn(q)
	if n := one.Len(); !ok || n < 2 || n > splitMaxValues {
		return nil
	}
	out := make([]flagadmin.EventQuery, one.Len())
	seen := map[string]bool{}
	for i := range out {
		c := one
		c.Strings, c.Ints = sliceAt(one.Strings, i), sliceAt(one.Ints, i)
		out[i] = q.WithColumnFilter(c)
		key := fmt.Sprint(c.Strings, c.Ints)
		if seen[key] {
			return nil // a value twice: its events would be read twice
		}
		seen[key] = true
	}
	return out
}

// sliceAt returns the i-th element of s alone, or nil when s is empty.
func sliceAt[T any](s []T, i int) []T {
	if len(s) == 0 {
		return nil
	}
	return s[i : i+1]
}

// oneColumn returns q's one column filter, when q filters exactly one
// column; ok is false otherwise.
func oneColumn(q flagadmin.EventQuery) (one flagadmin.ColumnFilter, ok bool) {
	filters := 0
	for c := range q.ColumnFilters() {
		if c.Len() > 0 {
			filters++
			one = c
		}
	}
	return one, filters == 1
}
