package bunstore

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// summaries are the store's speed-ups: what it keeps beside the base
// tables, in the same write transaction, to answer from a few rows
// (event_counts, project_stats), and what it reads in fewer statements
// than the portable path (a page, an export's batch, a proof, free text
// from an index). The store is one body of portable SQL that computes
// every answer from the base tables; the summaries may answer a question
// in its stead at these points, and nowhere else:
//
//   - a write transaction's changes (Record, in record): what they keep
//     brought up to date, in the transaction;
//   - a search (PlanSearch and MatchText, in SearchEvents and filter):
//     its total, where a page at a large offset starts, and the condition
//     of its free text;
//   - a page, a free-text query's page and an export's batch (ReadPage,
//     ReadTextPage, ReadExport) read in one statement, the rows of a
//     page found by a seek (ReadPageIn), and the events of a free-text
//     query's page found from an index (FindTextPage);
//   - the project list (ProjectFigures, NewestEvents, ReadProjectRows):
//     its figures and the newest event of each project, and its rows read
//     in fewer steps than the portable path;
//   - a proof of the verifiable log (ReadProof) read in one statement;
//   - and Rebuild, which recomputes what they keep from the base tables
//     (Migrate with WithRebuild).
//
// A method that does not answer says so (ok false, a zero Plan, ""), and
// the core answers from the base tables. Open picks the summaries once:
// the tuned ones (internal/tuned, which puts the speed-up packages
// together), or plain, which keeps and reads nothing, when WithoutTuning
// turns every speed-up off. The core imports none of the speed-up
// packages; they and internal/tuned never import the core, and speak the
// types of internal/summary (summaryboundary_test.go keeps it so).
//
// What a store keeps is chosen at Open, not recorded in the database: a
// database must be served by stores with one set of summaries. A store
// that keeps a summary reads it, and it lacks the writes of any store
// that did not keep it (WithoutTuning names what then goes wrong, and
// how to switch).
type summaries interface {
	// Record brings what the summaries keep up to date with ch, in the
	// write transaction db, before the version and the events (the lock
	// order of record.go).
	Record(ctx context.Context, db bun.IDB, ch summary.Changes) error
	// Rebuild recomputes what the summaries keep from the base tables, in
	// the transaction db, which holds them and their sources still
	// (rebuildSummaries).
	Rebuild(ctx context.Context, db bun.IDB) error
	// CreateIndexes creates the indexes that what the summaries keep is
	// read by beyond its tables' keys, unless they exist, on db (a
	// migration).
	CreateIndexes(ctx context.Context, db bun.IDB) error

	// PlanSearch returns how the summaries serve q, a query without free
	// text: its total, or where its page starts; the zero Plan when they
	// do not.
	PlanSearch(q flagadmin.EventQuery) summary.Plan
	// MatchText returns the condition that keeps the events whose search
	// texts in scope contain text, read from an index, and whether the
	// index answers text exactly; when it does not, the core scans the
	// texts (sqlDialect.Contains).
	MatchText(text string, scope flagadmin.TextScope) (sqlq.Fragment, bool)
	// ReadPage reads the page of p (p.Query.Limit > 0, found without a
	// seek) in one statement on db, and reports whether it did.
	ReadPage(ctx context.Context, db *bun.DB, p summary.Page) (flagadmin.EventPage, bool, error)
	// ReadPageIn reads the page of limit events of where (a condition on
	// events) after the rows skip (an OFFSET clause) skips, which a seek
	// found, on conn (in its transaction, if any), with the value of stamp
	// (a scalar SQL expression, or empty) in the statement's snapshot (0
	// when empty, or when the page has no event), and reports whether it
	// did.
	ReadPageIn(ctx context.Context, conn bun.Conn, where sqlq.Fragment, limit int, skip, stamp sqlq.Fragment) ([]flagadmin.Event, int64, bool, error)
	// ReadTextPage reads the page of q, a free-text query (q.Limit > 0),
	// in one statement on db: its events at q.Offset among those of
	// matches (q's filters) after the cursor after (empty without one),
	// with the total of matches whatever the cursor. It reports whether it
	// did.
	ReadTextPage(ctx context.Context, db *bun.DB, q flagadmin.EventQuery, matches, after sqlq.Fragment) (flagadmin.EventPage, bool, error)
	// FindTextPage finds the ids of the page of q, a free-text query
	// (q.Limit > 0), in page order, and its total, in the read
	// transaction db: the events whose texts hold q.Text and that rest
	// (q's other conditions on events, empty without any) keeps. It
	// reports whether it found them.
	FindTextPage(ctx context.Context, db bun.IDB, q flagadmin.EventQuery, rest sqlq.Fragment) ([]int64, int, bool, error)
	// ReadExport reads a batch of an export on db: the first limit events
	// by id among those of where. It reports whether it did.
	ReadExport(ctx context.Context, db *bun.DB, where sqlq.Fragment, limit int) ([]flagadmin.Event, bool, error)

	// ProjectFigures is the SQL of the figures of the projects of q read
	// from what the summaries keep (summary.KeptFigures), or none (Empty)
	// when they keep none.
	ProjectFigures(q flagadmin.ProjectStatsQuery) summary.KeptFigures
	// NewestEvents is the SQL of the creation time (Unix milliseconds) of
	// the newest event of each project of the list that the summaries
	// count (summary.NewestEvents), or none (Empty) when they count none.
	NewestEvents() summary.NewestEvents
	// ReadProjectRows reads the rows of the project list's statement
	// (list) and of its owners' (owners) into to, in one read-only
	// transaction of its own on db (both statements see one snapshot), and
	// reports whether it did.
	ReadProjectRows(ctx context.Context, db *bun.DB, list, owners sqlq.Fragment, to summary.ProjectRows) (bool, error)

	// ReadProof reads what the proof q needs in one statement on db, and
	// reports whether it did; filter is the search's condition on q's
	// event (its id and what the caller may see).
	ReadProof(ctx context.Context, db *bun.DB, q vlog.ProofQuery, filter sqlq.Fragment) (vlog.ProofRows, bool, error)
}

// plain are the summaries of the plain store: they keep nothing and
// answer nothing, so every answer is computed from the base tables by the
// core's portable SQL, the reference the contract suite holds the tuned
// store to.
type plain struct{}

// Record keeps nothing.
func (plain) Record(context.Context, bun.IDB, summary.Changes) error { return nil }

// Rebuild has nothing to rebuild.
func (plain) Rebuild(context.Context, bun.IDB) error { return nil }

// CreateIndexes implements summaries: no index, nothing being kept.
func (plain) CreateIndexes(context.Context, bun.IDB) error { return nil }

// PlanSearch serves nothing: the matches are counted.
func (plain) PlanSearch(flagadmin.EventQuery) summary.Plan { return summary.Plan{} }

// MatchText does not answer: the texts are scanned.
func (plain) MatchText(string, flagadmin.TextScope) (sqlq.Fragment, bool) {
	return sqlq.Fragment{}, false
}

// ReadPage does not read: the core reads the page.
func (plain) ReadPage(context.Context, *bun.DB, summary.Page) (flagadmin.EventPage, bool, error) {
	return flagadmin.EventPage{}, false, nil
}

// ReadPageIn does not read: the core reads the rows.
func (plain) ReadPageIn(context.Context, bun.Conn, sqlq.Fragment, int, sqlq.Fragment, sqlq.Fragment) ([]flagadmin.Event, int64, bool, error) {
	return nil, 0, false, nil
}

// ReadTextPage does not read: the core reads the page.
func (plain) ReadTextPage(context.Context, *bun.DB, flagadmin.EventQuery, sqlq.Fragment, sqlq.Fragment) (flagadmin.EventPage, bool, error) {
	return flagadmin.EventPage{}, false, nil
}

// FindTextPage does not find: the core reads the page by its window.
func (plain) FindTextPage(context.Context, bun.IDB, flagadmin.EventQuery, sqlq.Fragment) ([]int64, int, bool, error) {
	return nil, 0, false, nil
}

// ReadExport does not read: the core reads the batch.
func (plain) ReadExport(context.Context, *bun.DB, sqlq.Fragment, int) ([]flagadmin.Event, bool, error) {
	return nil, false, nil
}

// ProjectFigures keeps none: the core computes them.
func (plain) ProjectFigures(flagadmin.ProjectStatsQuery) summary.KeptFigures {
	return summary.KeptFigures{}
}

// NewestEvents counts none: the core looks each project's up.
func (plain) NewestEvents() summary.NewestEvents { return summary.NewestEvents{} }

// ReadProjectRows reads nothing: the core reads the rows through
// database/sql.
func (plain) ReadProjectRows(context.Context, *bun.DB, sqlq.Fragment, sqlq.Fragment, summary.ProjectRows) (bool, error) {
	return false, nil
}

// ReadProof does not read: the verifiable log reads a proof step by step.
func (plain) ReadProof(context.Context, *bun.DB, vlog.ProofQuery, sqlq.Fragment) (vlog.ProofRows, bool, error) {
	return vlog.ProofRows{}, false, nil
}

// summarised is what ch changed, for the summaries (summaries.Record).
func (ch *changes) summarised() summary.Changes {
	updated := make([]summary.FeatureUpdate, len(ch.updatedFeatures))
	for i, u := range ch.updatedFeatures {
		updated[i] = summary.FeatureUpdate{Old: u.old, New: u.new}
	}
	events := ch.events
	if ch.countedAfter {
		events = nil
	}
	return summary.Changes{
		Events: events, Pruned: ch.pruned, Bulk: ch.bulk,
		NewProjects: ch.newProjects, AddedFeatures: ch.addedFeatures, UpdatedFeatures: updated,
		MemberProjects: ch.memberProjects, MemberGroups: ch.memberGroups,
		Refigured: ch.refigured, RefigureAll: ch.refigureAll,
	}
}

// rebuildSummaries recomputes what sums keep from the base tables, in the
// transaction tx. It first locks what they are computed from, in the lock
// order of writers (record.go), so that no writer changes it meanwhile
// and none waits for it in a circle: the base tables against changes,
// then the summaries against writers, then events against inserts
// (sqlDialect.SummaryLocks). SQLite's migration transaction holds the
// whole database already.
func rebuildSummaries(ctx context.Context, d sqlDialect, tx bun.IDB, sums summaries) error {
	for _, lock := range d.SummaryLocks(baseTables, eventOrderSQL) {
		// Some are SELECTs: their rows are read and dropped.
		rows, err := tx.QueryContext(ctx, lock)
		if err != nil {
			return err
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	return sums.Rebuild(ctx, tx)
}

// baseTables are the tables the summaries derive from, but events.
var baseTables = []string{"users", "user_groups", "group_members", "projects", "project_members", "project_favorites", "features", "api_tokens"}
