// Package tuned is the store's summaries with its speed-ups on: it puts
// the speed-up packages together behind the summaries interface of
// bunstore's core (summaries.go), which Open picks it for unless every
// speed-up is off (bunstore.WithoutTuning; then the core's plain
// summaries answer, keeping and reading none):
//
//   - eventcounts keeps event_counts at write time (Record), gives the
//     totals of common searches and the start of pages at large offsets
//     (PlanSearch), and the newest event of each project (NewestEvents);
//   - projectfigures keeps project_stats at write time (Record) and reads
//     the project list's figures from it (ProjectFigures);
//   - pgpage reads a page, or an export's batch, in one statement on
//     PostgreSQL, decoding pgx's raw values (ReadPage, ReadExport), and
//     the project list's rows likewise, its two statements in one round
//     trip (ReadProjectRows);
//   - textindex answers free text from an index: SQLite's FTS5 table,
//     PostgreSQL's token index (MatchText), and finds a free-text page's
//     events from the FTS5 table in id order (FindTextPage);
//   - proofread reads what a proof of the verifiable log needs in one
//     statement (ReadProof).
//
// Each is on or off by Config; one that is off, or does not run on the
// database, answers as the plain summaries do. Rebuild recomputes what
// is kept from the base tables. The package imports the speed-ups and the
// shared vocabulary (internal/summary), never the core.
package tuned

import (
	"context"
	"database/sql"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/eventcounts"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/pgpage"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/projectfigures"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/proofread"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/textindex"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Database is what the summaries ask of the store's dialect: the
// database's name (which speed-ups run on it), and how a proof's
// statement is written and run.
type Database interface {
	// Name is bun's name of the database.
	Name() dialect.Name
	// IntegerDivision is the operator that divides integers to an
	// integer.
	IntegerDivision() string
	// QueryPrepared runs stmt on db, kept prepared where the database
	// would otherwise plan it anew each time.
	QueryPrepared(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, error)
}

// Config says which speed-ups are on.
type Config struct {
	Counts    bool // event_counts (eventcounts)
	Figures   bool // project_stats (projectfigures)
	Pages     bool // one-statement pages, on PostgreSQL (pgpage)
	TextIndex bool // the index of free text: FTS5 on SQLite, tokens on PostgreSQL (textindex)
	Proofs    bool // one-statement proof reads (proofread)
}

// Summaries are the summaries of a store with the speed-ups of its
// Config on. Create them with New.
type Summaries struct {
	db Database
	on Config
}

// New returns the summaries of a store on the database of d with the
// speed-ups of c on, but for those that do not run on it: the page
// statements run on PostgreSQL only, the text index on SQLite and
// PostgreSQL.
func New(d Database, c Config) *Summaries {
	c.Pages = c.Pages && d.Name() == dialect.PG
	c.TextIndex = c.TextIndex && (d.Name() == dialect.SQLite || d.Name() == dialect.PG)
	return &Summaries{db: d, on: c}
}

// Record brings the summaries kept up to date with ch, in the write
// transaction db: project_stats, then event_counts (the lock order of
// the store's writers).
func (s *Summaries) Record(ctx context.Context, db bun.IDB, ch summary.Changes) error {
	if s.on.Figures {
		if err := projectfigures.Apply(ctx, db, ch); err != nil {
			return err
		}
	}
	if s.on.Counts {
		if err := eventcounts.Remove(ctx, db, ch.Pruned); err != nil {
			return err
		}
		if ch.Loaded {
			return eventcounts.Rebuild(ctx, db)
		}
		return eventcounts.Add(ctx, db, ch.Events, !ch.Bulk)
	}
	return nil
}

// CreateIndexes creates the indexes that the summaries kept read beyond
// their tables' keys, unless they exist, on db: event_counts' partial
// index of comma-joined projects (eventcounts.Indexes).
func (s *Summaries) CreateIndexes(ctx context.Context, db bun.IDB) error {
	if !s.on.Counts {
		return nil
	}
	for _, stmt := range eventcounts.Indexes(s.db.Name()) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// Rebuild recomputes the summaries kept from the base tables, in the
// transaction db, which holds them and their sources still, and creates
// the indexes they read (CreateIndexes): a database migrated by a store
// that kept none lacks them.
func (s *Summaries) Rebuild(ctx context.Context, db bun.IDB) error {
	if err := s.CreateIndexes(ctx, db); err != nil {
		return err
	}
	if s.on.Counts {
		if err := eventcounts.Rebuild(ctx, db); err != nil {
			return err
		}
	}
	if s.on.Figures {
		return projectfigures.Rebuild(ctx, db)
	}
	return nil
}

// PlanSearch returns how event_counts serve q, when kept: its total read
// from a few counted rows, or, at a large offset, where its page starts.
// With the page statements on too, the seek and its page may run outside
// a transaction (summary.Plan.OutsideTx: ReadPageIn reads the stamp).
func (s *Summaries) PlanSearch(q flagadmin.EventQuery) summary.Plan {
	if !s.on.Counts {
		return summary.Plan{}
	}
	p := eventcounts.PlanFor(s.db.Name(), q)
	if p.Seeks() {
		return summary.Plan{OutsideTx: s.on.Pages, Seek: func(ctx context.Context, db bun.IDB, stamp sqlq.Fragment) (summary.Start, error) {
			return p.Seek(ctx, db, s.db.QueryPrepared, stamp)
		}}
	}
	return summary.Plan{Total: p.Total()}
}

// MatchText returns the condition of a free-text query read from the
// text index, when it answers text exactly.
func (s *Summaries) MatchText(text string, scope flagadmin.TextScope) (sqlq.Fragment, bool) {
	switch {
	case !s.on.TextIndex:
		return sqlq.Fragment{}, false
	case s.db.Name() == dialect.PG:
		return textindex.Tokens(text, scope)
	}
	return textindex.Match(text, scope)
}

// ReadPage reads the page of p in one statement on db (pgpage), with the
// page statements on.
func (s *Summaries) ReadPage(ctx context.Context, db *bun.DB, p summary.Page) (flagadmin.EventPage, bool, error) {
	if !s.on.Pages {
		return flagadmin.EventPage{}, false, nil
	}
	text, args := pgpage.Statement(db.QueryGen(), p)
	page, err := pgpage.Read(ctx, db.DB, text, args, p.Query.Limit)
	return page, true, err
}

// ReadPageIn reads the page on conn (in its transaction, if any) as a
// range of its index (pgpage.SeekRange), kept prepared and decoded from
// pgx's raw values (pgpage.ReadOn), with the stamp, with the page
// statements on.
func (s *Summaries) ReadPageIn(ctx context.Context, conn bun.Conn, where sqlq.Fragment, limit int, skip, stamp sqlq.Fragment) ([]flagadmin.Event, int64, bool, error) {
	if !s.on.Pages {
		return nil, 0, false, nil
	}
	text, args := pgpage.Rows(pgpage.SeekRange(where, limit, skip), stamp)
	page, err := pgpage.ReadOn(ctx, conn, text, args, limit)
	return page.Events, int64(page.Total), true, err
}

// ReadTextPage reads the page of a free-text query in one statement on db
// (pgpage.TextPage), with the page statements on.
func (s *Summaries) ReadTextPage(ctx context.Context, db *bun.DB, q flagadmin.EventQuery, matches, after sqlq.Fragment) (flagadmin.EventPage, bool, error) {
	if !s.on.Pages {
		return flagadmin.EventPage{}, false, nil
	}
	page, err := pgpage.TextPage(ctx, db, q, matches, after)
	return page, true, err
}

// FindTextPage finds the events of a free-text query's page and its
// total from SQLite's FTS5 table in id order (textindex.FindPage), with
// the text index on.
func (s *Summaries) FindTextPage(ctx context.Context, db bun.IDB, q flagadmin.EventQuery, rest sqlq.Fragment) ([]int64, int, bool, error) {
	if !s.on.TextIndex || s.db.Name() != dialect.SQLite {
		return nil, 0, false, nil
	}
	return textindex.FindPage(ctx, db, s.db.QueryPrepared, q, rest)
}

// ReadExport reads a batch of an export on db, decoded from pgx's raw
// values (pgpage.Export), with the page statements on.
func (s *Summaries) ReadExport(ctx context.Context, db *bun.DB, where sqlq.Fragment, limit int) ([]flagadmin.Event, bool, error) {
	if !s.on.Pages {
		return nil, false, nil
	}
	events, err := pgpage.Export(ctx, db, where, limit)
	return events, true, err
}

// ProjectFigures is the SQL of the figures of q's projects read from
// project_stats (projectfigures.Kept), when kept.
func (s *Summaries) ProjectFigures(q flagadmin.ProjectStatsQuery) summary.KeptFigures {
	if !s.on.Figures {
		return summary.KeptFigures{}
	}
	return projectfigures.Kept(q)
}

// NewestEvents is eventcounts.Newest when event_counts are kept.
func (s *Summaries) NewestEvents() summary.NewestEvents {
	if !s.on.Counts {
		return summary.NewestEvents{}
	}
	return eventcounts.Newest(s.db.Name())
}

// ReadProjectRows reads the project list's rows into to in one read-only
// transaction of its own on db, sent in one round trip and decoded from
// pgx's raw values (pgpage.ProjectRows), with the page statements on.
func (s *Summaries) ReadProjectRows(ctx context.Context, db *bun.DB, list, owners sqlq.Fragment, to summary.ProjectRows) (bool, error) {
	if !s.on.Pages {
		return false, nil
	}
	return true, pgpage.ProjectRows(ctx, db.DB, list, owners, to)
}

// ReadProof reads what the proof q needs in one statement on db
// (proofread), with the proof reads on; filter is the search's condition
// on q's event. The statement is kept prepared where the database would
// plan it anew each time: its text depends only on the tree's size and
// the caller's visibility.
func (s *Summaries) ReadProof(ctx context.Context, db *bun.DB, q vlog.ProofQuery, filter sqlq.Fragment) (vlog.ProofRows, bool, error) {
	if !s.on.Proofs {
		return vlog.ProofRows{}, false, nil
	}
	rows, err := s.db.QueryPrepared(ctx, db, proofread.Statement(q, filter, s.db.IntegerDivision()))
	if err != nil {
		return vlog.ProofRows{}, true, err
	}
	out, err := proofread.Scan(rows, q)
	return out, true, err
}
