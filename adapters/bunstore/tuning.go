package bunstore

import (
	"fmt"
	"slices"
	"strings"
)

// Tuning is one of the store's speed-ups. Each lives in its own package
// under internal/, is reached through the store's summaries
// (summaries.go, internal/tuned), and can be turned off with
// WithoutTuning, which leaves the plain path it speeds up: the reference
// the contract suite holds it to. BENCHMARKS.md measures what each buys.
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
	// TextIndex answers free-text queries from an index of the search
	// texts (internal/textindex): the token index (the texts' tokens, for
	// queries with a run of 3 characters without a JSON structural
	// character, double quote or space, or with a run between two of
	// them), in FTS5 tables on SQLite. Off, they
	// match the texts by LIKE: a scan. Both indexes are kept whether it is
	// on or off.
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
// Which summaries a store keeps (event_counts with EventCounts,
// project_stats with ProjectFigures) is chosen here, at Open, and is not
// recorded in the database, so a database must be served by stores with
// one set of them. A store that keeps a summary reads it without checking
// it: the writes of a store without it are missing from it, so searches'
// totals and pages at large offsets are wrong, and the project list shows
// wrong figures or fails (a project without its row), for as long as it
// lacks them. Stores that do not keep a summary
// never read it, so turning one off needs nothing more. To turn one on
// for a database that stores without it wrote to, stop those stores, then
// rebuild it before serving: Migrate with WithRebuild, from a store that
// keeps it (flagadmin migrate --rebuild-summaries).
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
