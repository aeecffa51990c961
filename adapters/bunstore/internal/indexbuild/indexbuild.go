// Package indexbuild describes the statements that make a table's indexes
// again once a bulk load has written its rows: the store drops the
// indexes before the rows and builds each once after them, which is far
// cheaper than keeping it current row by row.
package indexbuild

// Step is a statement run after a load, and what it does for a progress
// display ("" for nothing worth telling, such as setting a parameter).
//
// A step ByIDs has two placeholders in its SQL, the bounds of a range of
// event ids (above the first, up to the second): it is run over every
// event, one range at a time, so that its progress can be told.
type Step struct {
	SQL   string
	What  string
	ByIDs bool
	// Tokens: the step indexes the texts of each range, whose tokens the
	// store then adds to the dialect's vocabulary of the texts.
	Tokens bool
	// When says whether the step runs for every load or only for one
	// that indexes the loaded texts itself, or only for one that leaves
	// them to a Backlog.
	When When
}

// When is which loads run a Step.
type When int

// The loads a Step runs for.
const (
	// Always: every load.
	Always When = iota
	// TextNow: a load that indexes the search texts of its events itself.
	TextNow
	// TextLater: a load that leaves them pending, to be indexed by a
	// Backlog after it commits.
	TextLater
)

// Backlog are the statements that index the search texts of the events a
// load left pending, a range of ids at a time, each range in a write
// transaction of its own: Pending reads the range still pending (from_id,
// to_id: the events above the first up to the second; no row when none
// is), Fill indexes the texts of the events of a range (its two
// placeholders the range's bounds, as for a Step ByIDs; the store adds
// their tokens to the dialect's vocabulary, where it keeps one), Advance moves the
// pending range's start to its placeholder, and Done ends it once empty.
// Between the last range and Done, each of Merge merges part of an
// index's segments, in transactions of its own until none does any work:
// Changes reads how many rows the connection has changed so far, and a
// Merge that changes no more than its own row merged nothing (as FTS5's
// 'merge' command does). A writer
// leaves the texts of the events it inserts to the backlog by Start (a
// range from its two placeholders, when none is pending) or Extend (the
// pending range's end moved to its placeholder), before it inserts them.
//
// Where Mark is not empty, it is the boolean column of events that the
// writer sets on the events it leaves to the backlog, and that Fill
// clears: the index leaves out the events it marks (PostgreSQL's partial
// GIN indexes), which a query scans instead. Where it is empty, the
// pending range alone keeps them out (SQLite).
//
// Where Index is not empty, the database does not index the texts of an
// inserted row by itself: the writer indexes those of the events it has
// just inserted, those of the pending range left out, by Index (its two
// placeholders the range of their ids, as Fill's) in the transaction that
// inserted them, unless it leaves them to the backlog or to a load's
// index build (SQLite, whose trigger made every multi-row INSERT of
// events write a statement journal).
//
// Where Order is not empty, the writer records which of the events it
// has just inserted are out of creation order (newer events with smaller
// ids: a free-text page read in id order must not be read so past them),
// by Order (each of its placeholders the id below theirs) in the
// transaction that inserted them, whether it indexes their texts or not,
// unless a load's index build records them (SQLite).
type Backlog struct {
	Pending, Fill, Advance, Done string
	Merge                        []string
	Changes                      string
	Start, Extend                string
	Mark                         string
	Index                        string
	Order                        string
}
