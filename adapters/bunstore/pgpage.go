package bunstore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// A page statement on PostgreSQL (searchOneStatement) costs the server
// more to plan than to run when Bun writes its values into the SQL text,
// since every distinct text is planned anew. Written with $n placeholders
// instead, its text depends only on the query's shape, and pgx keeps it
// prepared on each connection (pgx.QueryExecModeCacheStatement): after
// five executions PostgreSQL plans it once, generically, for any values.

// sqlArgs collects the values of a statement that Bun writes with $n
// placeholders. The builders take one: a nil *sqlArgs has them write every
// value as a literal, as Bun does.
//
// Each value is numbered when it is bound, in the order the builder binds
// it, not when Bun writes the query: the text of a query is the same however
// many times, and in whatever order, Bun writes its parts, and a value
// written twice (a part used twice) is one $n.
type sqlArgs struct {
	vals []any
	// written marks the values whose placeholder has been written at least
	// once: one bound but never written would leave a gap in the $n that
	// PostgreSQL cannot type (see values).
	written []bool
}

// bind returns v for a Bun query argument: v itself with a nil a, else the
// placeholder of v, appended to a's values.
func (a *sqlArgs) bind(v any) any {
	if a == nil {
		return v
	}
	a.vals = append(a.vals, v)
	a.written = append(a.written, false)
	return pgParam{a, len(a.vals)}
}

// bindList returns vs for bun.In: vs itself with a nil a, else their
// placeholders.
func bindList[T any](a *sqlArgs, vs []T) any {
	if a == nil {
		return vs
	}
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = a.bind(v)
	}
	return out
}

// values returns the values of $1, $2, ... in order, or an error when one
// was bound but its placeholder never written.
func (a *sqlArgs) values() ([]any, error) {
	for i, w := range a.written {
		if !w {
			return nil, fmt.Errorf("bunstore: the value of $%d is bound but not in the statement", i+1)
		}
	}
	return a.vals, nil
}

// pgParam is the placeholder $n of the nth value bound to a.
type pgParam struct {
	a *sqlArgs
	n int
}

var _ schema.QueryAppender = pgParam{}

// AppendQuery implements schema.QueryAppender: it writes $n.
func (p pgParam) AppendQuery(_ schema.QueryGen, b []byte) ([]byte, error) {
	p.a.written[p.n-1] = true
	return strconv.AppendInt(append(b, '$'), int64(p.n), 10), nil
}

// genericPlanSafe reports whether one generic plan serves q's page
// statement (pageStatement with placeholders) for all values: at most one
// column filter, of one value, or of a few values read apart (splitFilter)
// and then with no visibility restriction. Each column's index (column,
// created_at, id) then reads exactly the matches, newest first, whatever
// the value; a date range is a range of the same index. Else the best plan
// depends on how many events each value has: a generic plan for
// type IN ($1, $2) walks events_created, expecting 1.4% of events per type,
// and reads the whole table for two rare ones. Hidden projects only filter
// rows, except with a date range, where their events are counted
// (totalExpr), so there at most one.
func genericPlanSafe(q flagadmin.EventQuery) bool {
	if q.Text != "" || (len(q.HiddenProjects) > 1 && (q.From != nil || q.Before != nil)) {
		return false
	}
	if splitFilter(q) != nil {
		return !q.RequireProject && len(q.HiddenProjects) == 0
	}
	filters := 0
	for _, n := range []int{len(q.Features), len(q.Projects), len(q.Types), len(q.Environments), len(q.CreatedByUserIDs), len(q.IDs), len(q.GroupIDs)} {
		if n > 1 {
			return false
		}
		filters += n
	}
	return filters <= 1
}

// Bounds of splitFilter.
const (
	splitMaxValues = 8    // values of the one column filter
	splitMaxRows   = 1000 // offset + limit: rows read per value at most
)

// splitFilter returns, when q filters one column by 2 to splitMaxValues
// distinct values and q.Offset+q.Limit is at most splitMaxRows, one query
// per value, each q with that value alone; else nil. A page of q is then
// read from each value's own index range (PostgreSQL reads an IN list on
// an index as one range per value, but cannot merge them in order: it
// reads every match and sorts).
func splitFilter(q flagadmin.EventQuery) []flagadmin.EventQuery {
	if q.Offset+q.Limit > splitMaxRows {
		return nil
	}
	filters, n := 0, 0
	var one func(c *flagadmin.EventQuery, i int)
	check := func(values int, set func(c *flagadmin.EventQuery, i int)) {
		if values > 0 {
			filters++
			n, one = values, set
		}
	}
	check(len(q.Features), func(c *flagadmin.EventQuery, i int) { c.Features = q.Features[i : i+1] })
	check(len(q.Projects), func(c *flagadmin.EventQuery, i int) { c.Projects = q.Projects[i : i+1] })
	check(len(q.Types), func(c *flagadmin.EventQuery, i int) { c.Types = q.Types[i : i+1] })
	check(len(q.Environments), func(c *flagadmin.EventQuery, i int) { c.Environments = q.Environments[i : i+1] })
	check(len(q.CreatedByUserIDs), func(c *flagadmin.EventQuery, i int) { c.CreatedByUserIDs = q.CreatedByUserIDs[i : i+1] })
	check(len(q.IDs), func(c *flagadmin.EventQuery, i int) { c.IDs = q.IDs[i : i+1] })
	check(len(q.GroupIDs), func(c *flagadmin.EventQuery, i int) { c.GroupIDs = q.GroupIDs[i : i+1] })
	if filters != 1 || n < 2 || n > splitMaxValues {
		return nil
	}
	out := make([]flagadmin.EventQuery, n)
	seen := map[string]bool{}
	for i := range out {
		out[i] = q
		one(&out[i], i)
		key := fmt.Sprint(slicesOfQuery(out[i]))
		if seen[key] {
			return nil // a value twice: its events would be read twice
		}
		seen[key] = true
	}
	return out
}

// slicesOfQuery returns the values of q's column filters.
func slicesOfQuery(q flagadmin.EventQuery) []any {
	return []any{q.Features, q.Projects, q.Types, q.Environments, q.CreatedByUserIDs, q.IDs, q.GroupIDs}
}

// pageStatement returns searchOneStatement's SQL for q (q.Limit > 0) and
// its arguments. With a nil, every value is written into the SQL text and
// there are no arguments. Else the values are $n placeholders and the
// arguments pgx.QueryExecModeCacheStatement and their values, so that the
// text depends on q's shape only.
func (s *Store) pageStatement(q flagadmin.EventQuery, plan totalPlan, a *sqlArgs) (string, []any, error) {
	b, err := s.pageQuery(q, plan, a).AppendQuery(s.rdb.QueryGen(), nil)
	if err != nil || a == nil {
		return string(b), nil, err
	}
	vals, err := a.values()
	if err != nil {
		return "", nil, err
	}
	return string(b), append([]any{pgx.QueryExecModeCacheStatement}, vals...), nil
}

// pageQuery is the query of pageStatement, its values bound by a. The limit
// is written in the text: with a placeholder in LIMIT or OFFSET,
// PostgreSQL estimates the plan for a tenth of the rows and keeps planning
// every execution, which it then does with a nonzero offset, so that paging
// does not prepare a statement per page. A filter of a few values
// (splitFilter) reads each value's newest offset+limit matches apart
// (UNION ALL), then keeps the page.
func (s *Store) pageQuery(q flagadmin.EventQuery, plan totalPlan, a *sqlArgs) schema.QueryAppender {
	total := s.totalExpr(s.rdb, q, plan, a)
	notPast := a.bind(int64(q.Offset)) // the offset, for "(SELECT total FROM t) > ?"
	var ids schema.QueryAppender
	if split := splitFilter(q); a != nil && split != nil {
		parts := make([]string, len(split))
		args := make([]any, len(split))
		for i, one := range split {
			parts[i] = "(?)"
			args[i] = s.seekAfter(s.eventFilter(s.rdb.NewSelect().Model((*eventRow)(nil)).Column("id", "created_at"), one, a), q, a).
				Where("(SELECT total FROM t) > ?", notPast).
				OrderExpr("created_at DESC, id DESC").Limit(int64(q.Offset + q.Limit))
		}
		page := " LIMIT " + strconv.Itoa(q.Limit)
		if q.Offset > 0 {
			page += " OFFSET " + strconv.Itoa(q.Offset)
		}
		ids = bun.SafeQuery("SELECT id FROM ("+strings.Join(parts, " UNION ALL ")+") AS u ORDER BY created_at DESC, id DESC"+page, args...)
	} else {
		offset := q.Offset
		if a != nil {
			offset = 0
		}
		ids = s.pageIDs(s.rdb, q, 0, false, offset, a).Where("(SELECT total FROM t) > ?", notPast)
		if offset != q.Offset {
			ids = bun.SafeQuery("? OFFSET ?", ids, a.bind(int64(q.Offset)))
		}
	}
	return s.rdb.NewRaw("WITH t AS (SELECT ? AS total), p AS (?) SELECT t.total, ? FROM t LEFT JOIN (p JOIN events AS e ON e.id = p.id) ON TRUE ORDER BY e.created_at DESC, e.id DESC",
		total, ids, bun.Safe(pageColumns))
}
