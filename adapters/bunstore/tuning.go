package bunstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/eventcounts"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/projectfigures"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Tuning is one of the store's speed-ups. Each lives in its own package
// under internal/, is reached from here (tuning), and can be turned off
// with WithoutTuning, which leaves the plain path it speeds up: the
// reference the contract suite holds it to. BENCHMARKS.md measures what
// each buys.
type Tuning string

// The speed-ups of the store.
const (
	// EventCounts keeps event_counts at write time (internal/eventcounts):
	// the totals of common searches read from a few rows, and large offsets
	// skipping whole months and days. Off, totals are counted from an
	// index and pages read past their offset on one.
	EventCounts Tuning = "event-counts"
	// ProjectFigures keeps the project list's figures in project_stats at
	// write time (internal/projectfigures). Off, they are computed from
	// the features and members on every project list.
	ProjectFigures Tuning = "project-figures"
	// PageStatements answers a page of an event search on PostgreSQL in
	// one statement, prepared when its plan allows, and decodes pages and
	// exports from pgx's raw values (internal/pgpage). Off, a page is its
	// total, ids and rows in one read-only transaction, read through
	// database/sql as on the other databases.
	PageStatements Tuning = "page-statements"
	// TextIndex answers free-text queries on SQLite from the events_text
	// FTS5 index (internal/textindex). Off, they scan the search texts.
	// (PostgreSQL's trigram indexes serve its scans by themselves.)
	TextIndex Tuning = "text-index"
	// ProofReads reads what a proof of the verifiable log needs (the log's
	// size, the event's leaf with the check that the caller may see it,
	// the stored hashes around the leaf) in one statement
	// (internal/proofread, for vlog.ProofReader). Off, the
	// Service reads it step by step, one statement each.
	ProofReads Tuning = "proof-reads"
)

// tunings are the speed-ups, in the order options name them.
var tunings = []Tuning{EventCounts, ProjectFigures, PageStatements, TextIndex, ProofReads}

// WithoutTuning turns the named speed-ups off, every one of them when none
// is named: the plain store, whose every answer is computed from the base
// tables by portable SQL, with no summary table read or written. The
// contract suite runs it as the reference the tuned store must agree with.
//
// A summary a store does not keep goes stale as soon as that store writes:
// Open and Migrate mark it so (summary_state). A store that keeps it
// rebuilds it from the base tables when it migrates; opened without
// migrating (WithoutMigrate), it keeps writing it but answers without it,
// and logs that the migrations would rebuild it. Stores with and without
// a summary must not serve one database at the same time.
func WithoutTuning(ts ...Tuning) Option {
	return func(o *options) {
		if len(ts) == 0 {
			ts = tunings
		}
		o.off = append(o.off, ts...)
	}
}

// checkTunings returns an error for a name that is not a Tuning.
func checkTunings(off []Tuning) error {
	for _, t := range off {
		if !slices.Contains(tunings, t) {
			names := make([]string, len(tunings))
			for i, t := range tunings {
				names[i] = string(t)
			}
			return fmt.Errorf("bunstore: unknown tuning %q: want one of %s", t, strings.Join(names, ", "))
		}
	}
	return nil
}

// tuning is the speed-ups the store has on, and the one place the core
// reaches the summaries: once per write transaction (record), once per
// search (planSearch), once per project list (projectFigures).
type tuning struct {
	counts    bool // EventCounts: event_counts kept
	figures   bool // ProjectFigures: project_stats kept
	pages     bool // PageStatements, on PostgreSQL
	textIndex bool // TextIndex, on SQLite
	proofs    bool // ProofReads
	// stale marks the summaries the store keeps but does not read: found
	// stale when it opened without migrating, until Migrate rebuilds them.
	// Meanwhile its writes keep them all the same, so that a rebuild by
	// another process stays true.
	stale *staleSummaries
}

// staleSummaries are the kept summaries a store does not read yet.
type staleSummaries struct{ counts, figures atomic.Bool }

// set marks the summary name stale (or not).
func (st *staleSummaries) set(name string, stale bool) {
	switch name {
	case "event_counts":
		st.counts.Store(stale)
	case "project_stats":
		st.figures.Store(stale)
	}
}

// readCounts reports whether searches and the project list read
// event_counts.
func (t tuning) readCounts() bool { return t.counts && !t.stale.counts.Load() }

// readFigures reports whether the project list reads project_stats.
func (t tuning) readFigures() bool { return t.figures && !t.stale.figures.Load() }

// newTuning is the tuning of a store in the dialect d with off turned off
// (and those d does not run).
func newTuning(d sqlDialect, off []Tuning) tuning {
	on := func(t Tuning) bool { return !slices.Contains(off, t) }
	return tuning{
		counts:    on(EventCounts),
		figures:   on(ProjectFigures),
		pages:     on(PageStatements) && d.PageStatements(),
		textIndex: on(TextIndex) && d.TextIndex(),
		proofs:    on(ProofReads),
		stale:     &staleSummaries{},
	}
}

// summaries are the summary tables (their rows of summary_state) of the
// speed-ups, and whether the store keeps each.
func (t tuning) summaries() map[string]bool {
	return map[string]bool{"event_counts": t.counts, "project_stats": t.figures}
}

// record brings the summaries the store keeps up to date with ch, in the
// write transaction db: project_stats, then event_counts (the lock order,
// record.go).
func (t tuning) record(ctx context.Context, db bun.IDB, ch *changes) error {
	if t.figures {
		c := projectfigures.Change{
			NewProjects: ch.newProjects, Added: ch.addedFeatures,
			MemberProjects: ch.memberProjects, MemberGroups: ch.memberGroups,
			Recompute: ch.refigured, RecomputeAll: ch.refigureAll,
		}
		for _, u := range ch.updatedFeatures {
			c.Updated = append(c.Updated, projectfigures.Update{Old: u.old, New: u.new})
		}
		if err := projectfigures.Apply(ctx, db, c); err != nil {
			return err
		}
	}
	if t.counts {
		if err := eventcounts.Remove(ctx, db, ch.pruned); err != nil {
			return err
		}
		return eventcounts.Add(ctx, db, ch.events, !ch.bulk)
	}
	return nil
}

// planSearch is how q's total and the start of its page are found, on a
// database of dialect d: from event_counts when kept, else (the zero
// plan) from the events.
func (t tuning) planSearch(d sqlDialect, q flagadmin.EventQuery) eventcounts.Plan {
	if !t.readCounts() {
		return eventcounts.Plan{}
	}
	return eventcounts.PlanFor(d.Name(), q)
}

// projectFigures returns the figures of the projects of q, by project
// id: kept in project_stats, or computed from the base tables.
func (t tuning) projectFigures(ctx context.Context, db bun.IDB, q flagadmin.ProjectStatsQuery) (map[string]projectfigures.Figures, error) {
	if t.readFigures() {
		return projectfigures.Kept(ctx, db, q)
	}
	return projectfigures.Computed(ctx, db, q)
}

// rebuild recomputes the summary name from the base tables, in the
// transaction db.
func rebuild(ctx context.Context, db bun.IDB, name string) error {
	switch name {
	case "event_counts":
		return eventcounts.Rebuild(ctx, db)
	case "project_stats":
		return projectfigures.Rebuild(ctx, db)
	}
	return fmt.Errorf("bunstore: no summary %q", name)
}
