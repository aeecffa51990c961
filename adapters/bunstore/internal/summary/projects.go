package summary

import (
	"database/sql"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
)

// ProjectRows take the rows of the project list's two statements, which
// the core writes and turns into the list: its projects, then the owners
// of every project, one by one, in that order.
type ProjectRows interface {
	Project(ProjectRow) error
	Owner(OwnerRow) error
}

// ProjectRow is a row of the list's statement: a project, the time of its
// newest event, its figures and whether the caller marked it favorite.
type ProjectRow struct {
	ID, Name, Description, Mode string
	CreatedAt                   int64 // Unix milliseconds
	ArchivedAt                  sql.NullInt64
	// LastEvent is the creation time of the project's newest event,
	// null when the statement found none.
	LastEvent sql.NullInt64
	// Counts are its features, stale, potentially stale, members and
	// cleanup counts, null when the statement reads no figures.
	Counts   [5]sql.NullInt64
	LastSeen sql.NullInt64 // Unix milliseconds
	Favorite int64         // 1 when the caller marked it favorite, else 0
}

// OwnerRow is a row of the owners' statement: an owner of Project, a
// user (User valid, with Name, Username and Email) or a group (Group
// valid, with GroupName).
type OwnerRow struct {
	Project               string
	User                  sql.NullInt64
	Name, Username, Email string
	Group                 sql.NullInt64
	GroupName             string
}

// NewestEvents is the SQL of the createdAt (Unix milliseconds) of the
// newest event of each of the project list's projects (projects AS p)
// from what the summaries count: Column, null for a project none of whose
// events they count, over Joins, the joins of the tables it reads (none
// for a subquery of its own).
type NewestEvents struct {
	Column, Joins sqlq.Fragment
}

// Empty reports whether n reads nothing: the summaries count no events.
func (n NewestEvents) Empty() bool { return n.Column.Empty() }

// KeptFigures is the SQL of the figures of the project list's projects
// (projects AS p) read from what the summaries keep: Columns, the figures
// features, stale, potentially_stale, members, last_seen_at and cleanup
// in order, over Joins, the joins of the tables they read.
type KeptFigures struct {
	Columns, Joins sqlq.Fragment
}

// Empty reports whether k holds no figures: the summaries keep none.
func (k KeptFigures) Empty() bool { return k.Columns.Empty() }
