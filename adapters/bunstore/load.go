package bunstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/indexbuild"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// contentTables are the tables Contents counts, by the name it reports.
var contentTables = []struct{ name, table string }{
	{"users", "users"}, {"groups", "user_groups"}, {"projects", "projects"},
	{"features", "features"}, {"tokens", "api_tokens"}, {"events", "events"},
}

// Contents returns how many users (service accounts included), groups,
// projects, features, tokens and events the store holds, by those names.
// An empty store has every count 0.
func (s *Store) Contents(ctx context.Context) (map[string]int64, error) {
	out, err := contents(ctx, s.rdb)
	return out, s.fail("count contents", err)
}

func contents(ctx context.Context, db bun.IDB) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range contentTables {
		var n int64
		if err := db.NewSelect().TableExpr(t.table).ColumnExpr("COUNT(*)").Scan(ctx, &n); err != nil {
			return nil, err
		}
		out[t.name] = n
	}
	return out, nil
}

// Load writes a whole world into an empty store in one transaction: the
// rows of b (as Write does; b.Then must be nil), then every batch of events
// that events passes to emit, each event keeping its ID, which must be
// positive and larger than the one before. It is the bulk path of imports:
// PostgreSQL receives the events with COPY inside the transaction, MySQL
// and SQLite with multi-row INSERTs, each batch through record with its
// ids given, as every write: the summaries are kept per batch. Afterwards
// the generated ids of users, groups and events continue above the largest
// loaded.
//
// All or nothing: an error of events or emit's caller, a lost connection or
// a cancelled ctx rolls everything back, and the store stays empty. A store
// that is not empty is refused with ErrConflict before anything is
// written. Load has no storage deadline: on PostgreSQL and MySQL it runs on
// a connection of its own, without the server-side limits of WithTimeout,
// and takes as long as the data does.
func (s *Store) Load(ctx context.Context, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	return s.loadAll(ctx, b, events, nil)
}

// loadAll is Load, with fence, when not nil, run in its transaction before
// anything is written (loaded false) and once everything is (loaded true):
// an error of either rolls the load back (LoadFollow's lease and state).
func (s *Store) loadAll(ctx context.Context, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error,
	fence func(ctx context.Context, tx bun.Tx, loaded bool) error) error {
	if b.Then != nil {
		return fmt.Errorf("bunstore: Load takes a batch without Then")
	}
	db := s.db
	if s.openUnbounded != nil {
		// The store's own connections carry the server-side limits of
		// its storage deadline (WithTimeout), which a load must not have.
		unbounded, err := s.openUnbounded()
		if err != nil {
			return s.fail("load", err)
		}
		defer unbounded.Close()
		db = unbounded
	}
	if db == s.db {
		s.prepareInserts(ctx)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return s.fail("load", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.fail("load", err)
	}
	if fence != nil {
		err = fence(ctx, tx, false)
	}
	if err == nil {
		err = s.load(ctx, conn, tx, b, events)
	}
	if err == nil && fence != nil {
		err = fence(ctx, tx, true)
	}
	if err == nil {
		done := s.loadStep("commit")
		if err = tx.Commit(); err == nil {
			done()
			s.wakeTextBacklog()
		}
	}
	if err != nil {
		_ = tx.Rollback()
		return s.fail("load", err)
	}
	return nil
}

func (s *Store) load(ctx context.Context, conn bun.Conn, tx bun.Tx, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	have, err := contents(ctx, tx)
	if err != nil {
		return err
	}
	if err := notEmpty(have); err != nil {
		return &callbackError{err}
	}
	t := &txn{Tx: tx, conn: conn}
	// The loaded ids become visible at the commit: no other writer may
	// draw an id meanwhile and commit it first. A store being loaded is
	// empty and has no other writers; holding the event order lock from
	// the start keeps a reader following ids right even if one tries.
	if err := s.lockEventOrder(ctx, t); err != nil {
		return err
	}
	work := b.Clone()
	work.Events = nil
	ch, err := write(ctx, s.sqlDialect, t, work)
	if err != nil {
		return err
	}
	if err := s.record(ctx, t, ch); err != nil {
		return err
	}
	rebuild, tokensLater, err := s.deferIndexes(ctx, tx)
	if err != nil {
		return err
	}
	emit := func(batch []flagadmin.Event) error {
		if len(batch) == 0 {
			return nil
		}
		return s.record(ctx, t, &changes{events: batch, givenIDs: true, bulk: true, leavesInTx: true, countedAfter: true, textLater: true, tokensLater: tokensLater, orderLater: true})
	}
	if err := events(emit); err != nil {
		return &callbackError{err}
	}
	done := s.loadStep("count the events")
	if err := s.summaries.Record(ctx, t, summary.Changes{Loaded: true}); err != nil {
		return err
	}
	done()
	if err := s.appendLoaded(ctx, t); err != nil {
		return err
	}
	if err := rebuild(); err != nil {
		return err
	}
	return s.sqlDialect.AnalyzeLoaded(ctx, tx, s.loadStep)
}

// appendLoaded appends the leaves of the loaded events in tx, by the
// path of every leaf (leaves.go), before the indexes are built again:
// the load and its leaves commit together.
func (s *Store) appendLoaded(ctx context.Context, tx *txn) error {
	if !keepLeaves {
		return nil
	}
	const what = "append the log's leaves"
	done := s.loadStep(what)
	var of int64
	err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM events WHERE id > COALESCE((SELECT MAX(event_id) FROM log_leaves), 0)").Scan(&of)
	if err != nil {
		return err
	}
	var count int64
	for {
		n, err := s.appendIn(ctx, tx, sqlq.Fragment{})
		if err != nil {
			return err
		}
		if (count+int64(n))/progressEvery > count/progressEvery && n == appendBatch {
			s.loadCount(what, count+int64(n), of)
		}
		count += int64(n)
		if n < appendBatch {
			break
		}
	}
	done()
	return nil
}

// deferIndexes drops the secondary indexes of events, and on SQLite the
// triggers that keep its full-text table, for the rest of tx, and returns
// the function that builds them again over every loaded row: building an
// index once is far cheaper than keeping it current row by row (the GIN
// token indexes of PostgreSQL and SQLite's FTS5 table above all). The
// dialect reads the definitions from the catalog, so every index the
// migrations made comes back as it was. PostgreSQL and SQLite change their
// schema inside the transaction: a failed load leaves the indexes as they
// were. MySQL commits schema changes at once, so it keeps its indexes.
//
// WithLoadProgress is told of each index built (and of SQLite's full-text
// table filled, as it goes). tokensLater reports whether the loaded
// events' tokens go to the vocabulary of the texts with the index
// (indexbuild.Step.Tokens, or the backlog after the load) rather than as
// they are inserted.
func (s *Store) deferIndexes(ctx context.Context, tx bun.Tx) (rebuild func() error, tokensLater bool, err error) {
	drops, builds, err := s.sqlDialect.DeferIndexes(ctx, tx)
	if err != nil {
		return nil, false, err
	}
	if err := execAll(ctx, tx, drops); err != nil {
		return nil, false, err
	}
	tokensLater = slices.ContainsFunc(builds, func(b indexbuild.Step) bool { return b.Tokens })
	return func() error {
		later, err := s.textLater(ctx, tx, builds)
		if err != nil {
			return err
		}
		for _, b := range builds {
			if b.When == indexbuild.TextNow && later || b.When == indexbuild.TextLater && !later {
				continue
			}
			done := func() {}
			if b.What != "" {
				done = s.loadStep(b.What)
			}
			run := func() error { _, err := tx.ExecContext(ctx, b.SQL); return err }
			if b.ByIDs {
				run = func() error { return s.buildByIDs(ctx, tx, b) }
			}
			if err := run(); err != nil {
				return err
			}
			done()
		}
		return nil
	}, tokensLater, nil
}

// textLaterFrom is the number of events from which a load leaves the
// full-text index of their texts to be filled after it commits, where the
// database can (SQLite: by textBacklog, in the background), instead of
// filling it inside the load: at 1,000,000 events the fill and the merge
// after it are more than half of an import, and the events can be read at
// once. Until the backlog is done, a free-text search scans the texts of
// the events it has not reached (textindex.Match).
var textLaterFrom int64 = 100_000

// textLater reports whether the load in tx leaves the full-text index to
// be filled after it: when the dialect's steps after a load, builds, can
// (some step is for one or the other: SQLite's; PostgreSQL's backlog takes
// a follower's batches only) and it holds textLaterFrom events or more.
func (s *Store) textLater(ctx context.Context, tx bun.Tx, builds []indexbuild.Step) (bool, error) {
	if !slices.ContainsFunc(builds, func(b indexbuild.Step) bool { return b.When != indexbuild.Always }) {
		return false, nil
	}
	var n int64
	err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM events").Scan(&n)
	return n >= textLaterFrom, err
}

// progressEvery is how many events a long step of a load covers between
// two reports of how far it is: an index build by ids covers that many
// ids at a time, the leaves' append tells as it passes each multiple.
var progressEvery int64 = 50_000

// buildByIDs runs the step b over the events' ids, progressEvery at a
// time, telling how many events it has covered after each.
func (s *Store) buildByIDs(ctx context.Context, tx bun.Tx, b indexbuild.Step) error {
	var first, last, of int64
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id), 0), COUNT(*) FROM events").Scan(&first, &last, &of); err != nil {
		return err
	}
	var count int64
	for from := first - 1; from < last; from += progressEvery {
		to := min(from+progressEvery, last)
		res, err := tx.ExecContext(ctx, b.SQL, from, to)
		if err != nil {
			return err
		}
		if b.Tokens {
			if err := s.fillTokens(ctx, tx, from, to); err != nil {
				return err
			}
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		count += n
		if to < last {
			s.loadCount(b.What, count, of)
		}
	}
	return nil
}

// LoadStep is a step of Load after the rows are written, which can take
// minutes for millions of events: counting the events, appending their
// leaves, the building of an index (PostgreSQL and SQLite build the
// indexes of events once, after the rows), then the commit.
// WithLoadProgress is told of each when it starts and when it is done, and
// of the long ones how far they are in between (Count of Of).
type LoadStep struct {
	// What is the step: "count the events", "append the log's leaves",
	// "build index events_created", "build the full-text index
	// events_tokens", "merge the full-text index events_tokens", or "leave the
	// full-text index events_tokens to fill after the load" (SQLite),
	// "analyze the tables" (PostgreSQL), "commit".
	What string
	// Done is false when the step starts or tells how far it is, true when
	// it is done.
	Done bool
	// Count of Of is how far a step that is not done is, when it tells
	// (the events whose leaves are appended, those whose text is indexed);
	// both 0 when it starts.
	Count, Of int64
	// Took is the time the step took, when Done.
	Took time.Duration
}

// WithLoadProgress makes Load call f as each of its last steps starts and
// ends (see LoadStep), for a progress display; f runs on Load's goroutine.
func WithLoadProgress(f func(LoadStep)) Option {
	return func(o *options) { o.loadProgress = f }
}

// loadCount tells WithLoadProgress's function that the step what is
// count of of done.
func (s *Store) loadCount(what string, count, of int64) {
	if s.loadProgress != nil {
		s.loadProgress(LoadStep{What: what, Count: count, Of: of})
	}
}

// loadStep tells WithLoadProgress's function that the step what starts, and
// returns what tells it that it is done.
func (s *Store) loadStep(what string) (done func()) {
	if s.loadProgress == nil {
		return func() {}
	}
	start := time.Now()
	s.loadProgress(LoadStep{What: what})
	return func() { s.loadProgress(LoadStep{What: what, Done: true, Took: time.Since(start)}) }
}

// notEmpty is an ErrConflict naming what have holds, or nil when nothing.
func notEmpty(have map[string]int64) error {
	var held []string
	for _, t := range contentTables {
		if n := have[t.name]; n > 0 {
			held = append(held, nounCount(n, t.name))
		}
	}
	if len(held) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the store is not empty: it holds %s", flagadmin.ErrConflict, joinList(held))
}

// joinList joins items as "a, b and c".
func joinList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	out := items[0]
	for _, it := range items[1 : len(items)-1] {
		out += ", " + it
	}
	return out + " and " + items[len(items)-1]
}

// nounCount is "1 user", "2 users": n of the plural noun kind.
func nounCount(n int64, kind string) string {
	if n == 1 {
		kind = strings.TrimSuffix(kind, "s")
	}
	return fmt.Sprintf("%d %s", n, kind)
}
