// Package summary is what the store's core and its summaries share, as
// database/sql/driver is what database/sql and its drivers share: the
// changes a write transaction hands the summaries (Changes), how they
// serve a search (Plan, Start), the page a summary may read in one
// statement (Page), and a project's figures (Figures), with the
// statements that compute the figures from the base tables (figures.go).
//
// The summaries interface itself is the core's (bunstore's summaries.go);
// the speed-up packages (eventcounts, projectfigures, pgpage, textindex,
// proofread) speak this package's types, and internal/tuned puts them
// together behind that interface. This package imports neither the core
// nor a speed-up.
package summary

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Changes are what one write transaction changed, for the summaries to
// bring what they keep up to date with, in the same transaction.
type Changes struct {
	// Events are the events the transaction appends (their ids are not
	// drawn yet).
	Events []flagadmin.Event
	// Pruned are the events retention removed.
	Pruned []flagadmin.Event
	// Bulk: many events from a writer that runs alone (a load, an
	// import), which need not be spread over rows for concurrent writers.
	Bulk bool
	// Loaded: the transaction, a load's into an empty store, wrote every
	// event the store holds, in batches whose Changes carried none of them;
	// the summaries of events are computed from them at once, far cheaper
	// than adding a million events batch by batch.
	Loaded bool

	// What changed in the base tables the project figures derive from.
	NewProjects     []string            // projects created
	AddedFeatures   []flagadmin.Feature // features created (in projects that existed before)
	UpdatedFeatures []FeatureUpdate     // features changed
	MemberProjects  []string            // projects whose members may have changed
	MemberGroups    []int64             // groups whose users changed
	// A follower's batch carries rows, not their changes:
	Refigured   []string // projects whose figures are computed again
	RefigureAll bool     // every project's figures are
}

// FeatureUpdate is a feature before and after a change (its project does
// not change).
type FeatureUpdate struct{ Old, New flagadmin.Feature }

// Plan is how the summaries serve a search without free text: its total
// read from them, or, at a large offset, where its page starts. The zero
// Plan serves nothing: the store counts the matches and reads past the
// offset.
type Plan struct {
	// Total is the SQL expression (a scalar, without FROM) of the
	// search's total, read from the summaries; empty when they do not
	// give it, or when Seek does.
	Total sqlq.Fragment
	// Seek, when not nil, finds the search's total and where its page
	// starts, reading the summaries in db: the search's read transaction,
	// or a connection outside one (OutsideTx) when stamp is not empty.
	// stamp is then a scalar SQL expression read by the seek's first
	// statement, into Start.Stamp.
	Seek func(ctx context.Context, db bun.IDB, stamp sqlq.Fragment) (Start, error)
	// OutsideTx: the summaries read the page of Seek too (ReadPageIn),
	// each statement reading a stamp, so that the seek and its page may
	// run outside a transaction, each statement in a snapshot of its own:
	// the store's change counter read as the stamp by the first statement
	// and by the last tells whether any write committed in between.
	OutsideTx bool
}

// Start is where the page of a search starts (Plan.Seek): its total, and
// its first event, the match at Offset among those created before Before
// (among all when HasBefore is false).
type Start struct {
	Total     int
	Before    int64 // Unix milliseconds
	HasBefore bool
	Offset    int
	// Stamp is the value of Plan.Seek's stamp read by its first
	// statement; 0 without a stamp, or when that statement found no
	// counted row (then the total is 0 and no page is read).
	Stamp int64
}

// OnePlan reports whether one plan serves the statements of q's page (its
// total, its page's ids) for any of its values, so that they may be kept
// prepared and planned once: no free text, and at most one column filter,
// of one value. Each column's index (column, created_at, id) then reads
// exactly the matches, newest first, whatever the value; a date range is a
// range of the same index, and a cursor too; the projects a caller may not
// see only filter the rows read. Else the best plan depends on the values:
// of type IN (a, b), walking events_created suits two common types and
// reads the whole table for two rare ones.
func OnePlan(q flagadmin.EventQuery) bool {
	if q.Text != "" {
		return false
	}
	values := 0
	for c := range q.ColumnFilters() {
		values += c.Len()
	}
	return values <= 1
}

// Page is what a page of a search is read from in one statement: the
// query, and the SQL the core writes for it.
type Page struct {
	Query flagadmin.EventQuery
	// Total is the expression of the query's total (a scalar, without
	// FROM): read from the summaries (Plan.Total) or counted.
	Total sqlq.Fragment
	// Where returns the WHERE condition of a query's page: its matches
	// after its cursor (q.After). It is called for Query and, for a filter
	// of a few values, for each value alone.
	Where func(q flagadmin.EventQuery) sqlq.Fragment
}
