package bunstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

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
// and SQLite with multi-row INSERTs; the derived tables (counts, the newest
// event of each project) are kept per batch, as in every write. Afterwards
// the generated ids of users, groups and events continue above the largest
// loaded.
//
// All or nothing: an error of events or emit's caller, a lost connection or
// a cancelled ctx rolls everything back, and the store stays empty. A store
// that is not empty is refused with ErrConflict before anything is
// written. Load has no storage deadline: it takes as long as the data does.
func (s *Store) Load(ctx context.Context, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	if b.Then != nil {
		return fmt.Errorf("bunstore: Load takes a batch without Then")
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.fail("load", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.fail("load", err)
	}
	err = s.load(ctx, conn, tx, b, events)
	if err == nil {
		done := s.loadStep("commit")
		if err = tx.Commit(); err == nil {
			done()
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
	if s.dialect == dialect.PG {
		if err := lockExplicitIDs(ctx, tx, "events"); err != nil {
			return err
		}
	}
	// The loaded ids become visible at the commit: no other writer may
	// draw an id meanwhile and commit it first (eventorder.go). A store
	// being loaded is empty and has no other writers; this keeps a reader
	// following ids right even if one tries.
	if err := s.lockEventOrder(ctx, tx); err != nil {
		return err
	}
	work := b.Clone()
	work.Events = nil
	if err := s.write(ctx, tx, work); err != nil {
		return err
	}
	rebuild, err := deferIndexes(ctx, tx, s.dialect, s.loadStep)
	if err != nil {
		return err
	}
	var last int64
	emit := func(batch []flagadmin.Event) error {
		if len(batch) == 0 {
			return nil
		}
		for _, e := range batch {
			if e.ID <= last {
				return fmt.Errorf("%w: event id %d is not above the one before (%d)", flagadmin.ErrConflict, e.ID, last)
			}
			last = e.ID
		}
		if err := eventStats(ctx, tx, batch, !s.oneLastEventRow); err != nil { // project_stats before event_counts (lock order)
			return err
		}
		if err := s.addCountsBun(ctx, tx, batch); err != nil {
			return err
		}
		if s.dialect == dialect.PG {
			return copyEventsWithIDs(ctx, conn, batch)
		}
		return insertEventsWithIDs(ctx, tx, s.dialect, batch)
	}
	if err := events(emit); err != nil {
		return &callbackError{err}
	}
	if err := rebuild(); err != nil {
		return err
	}
	if s.dialect == dialect.PG && last > 0 {
		if err := raiseSequence(ctx, tx, "events", last); err != nil {
			return err
		}
	}
	return s.bumpVersion(ctx, tx)
}

// deferIndexes drops the secondary indexes of events, and on SQLite the
// triggers that keep its full-text table, for the rest of tx, and returns
// the function that builds them again over every loaded row: building an
// index once is far cheaper than keeping it current row by row (the GIN
// trigram indexes of PostgreSQL and SQLite's FTS5 table above all). The
// definitions are read from the catalog, so every index the migrations
// made comes back as it was. PostgreSQL and SQLite change their schema
// inside the transaction: a failed load leaves the indexes as they were.
// MySQL commits schema changes at once, so it keeps its indexes.
//
// step is told of each index built (and of SQLite's full-text table filled):
// what it calls once when the work starts returns what it calls when the
// work is done.
func deferIndexes(ctx context.Context, tx bun.Tx, name dialect.Name, step func(what string) (done func())) (func() error, error) {
	var defs []string
	var drops []string
	// steps[i] names the work of defs[i] for step; "" for none worth telling.
	var steps []string
	fill := ""
	switch name {
	case dialect.PG:
		rows, err := tx.QueryContext(ctx, `SELECT format('%I.%I', schemaname, indexname), indexdef, indexname FROM pg_indexes
			WHERE schemaname = current_schema() AND tablename = 'events'
			AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = (quote_ident(current_schema()) || '.events')::regclass)`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var idx, def, n string
			if err := rows.Scan(&idx, &def, &n); err != nil {
				return nil, err
			}
			drops, defs, steps = append(drops, "DROP INDEX "+idx), append(defs, def), append(steps, "build index "+n)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		defs, steps = append([]string{"SET LOCAL maintenance_work_mem = '256MB'"}, defs...), append([]string{""}, steps...)
	case dialect.SQLite:
		rows, err := tx.QueryContext(ctx, `SELECT type, name, sql FROM sqlite_master
			WHERE tbl_name = 'events' AND type IN ('index', 'trigger') AND sql IS NOT NULL`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var typ, n, def string
			if err := rows.Scan(&typ, &n, &def); err != nil {
				return nil, err
			}
			drops, defs = append(drops, fmt.Sprintf("DROP %s %q", typ, n)), append(defs, def)
			if typ == "index" {
				steps = append(steps, "build index "+n)
			} else {
				steps = append(steps, "") // a trigger: at once
			}
			switch n {
			case "events_text_insert":
				fill = "INSERT INTO events_text (rowid, search_payload, search_meta) SELECT id, search_payload, search_meta FROM events"
			case "events_fts_insert":
				fill = "INSERT INTO events_fts (events_fts) VALUES ('rebuild')"
			}
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		switch {
		case strings.HasPrefix(fill, "INSERT INTO events_text "):
			// FTS5 flushes its pending terms to a new segment each time they
			// pass hashsize (1 MiB by default), and merges segments as they
			// pile up: with 32 MiB the fill of a million events writes a
			// thirtieth of the segments and takes about half the time; the
			// default is set again after.
			defs = append(defs, ftsHashSize(32<<20), fill, ftsHashSize(1<<20))
			steps = append(steps, "", "build the full-text index events_text", "")
		case fill != "":
			defs, steps = append(defs, fill), append(steps, "build the full-text index events_fts")
		}
	default:
		return func() error { return nil }, nil
	}
	for _, d := range drops {
		if _, err := tx.ExecContext(ctx, d); err != nil {
			return nil, err
		}
	}
	return func() error {
		for i, d := range defs {
			done := func() {}
			if steps[i] != "" {
				done = step(steps[i])
			}
			if _, err := tx.ExecContext(ctx, d); err != nil {
				return err
			}
			done()
		}
		return nil
	}, nil
}

// LoadStep is a step of Load after the rows are written, which can take
// minutes for millions of events: the building of an index (PostgreSQL and
// SQLite build the indexes of events once, after the rows), then the commit.
// WithLoadProgress is told of each twice: when it starts, and when it is
// done.
type LoadStep struct {
	// What is the step: "build index events_created_at_idx", "build the
	// full-text index events_text", "commit".
	What string
	// Done is false when the step starts, true when it is done.
	Done bool
	// Took is the time the step took, when Done.
	Took time.Duration
}

// WithLoadProgress makes Load call f as each of its last steps starts and
// ends (see LoadStep), for a progress display; f runs on Load's goroutine.
func WithLoadProgress(f func(LoadStep)) Option {
	return func(o *options) { o.loadProgress = f }
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

// ftsHashSize sets the pending-terms size of SQLite's events_text table.
func ftsHashSize(bytes int) string {
	return fmt.Sprintf("INSERT INTO events_text (events_text, rank) VALUES ('hashsize', %d)", bytes)
}

// insertEventsWithIDs inserts events with their ids by multi-row INSERTs.
func insertEventsWithIDs(ctx context.Context, tx bun.Tx, name dialect.Name, events []flagadmin.Event) error {
	rows := make([]eventRow, len(events))
	for i, e := range events {
		r, err := eventRowOf(e)
		if err != nil {
			return err
		}
		r.ID = e.ID
		rows[i] = r
	}
	chunk := 1000
	if name == dialect.SQLite {
		chunk = 500
	}
	for start := 0; start < len(rows); start += chunk {
		part := rows[start:min(len(rows), start+chunk)]
		if _, err := tx.NewInsert().Model(&part).Returning("").Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// copyEventsWithIDs sends events with their ids by COPY on conn's pgx
// connection, inside the transaction open on it.
func copyEventsWithIDs(ctx context.Context, conn bun.Conn, events []flagadmin.Event) error {
	return onPgx(conn, func(pc *pgx.Conn) error {
		next := 0
		rows := pgx.CopyFromFunc(func() ([]any, error) {
			if next == len(events) {
				return nil, nil
			}
			e := events[next]
			r, err := eventRowOf(e)
			next++
			return []any{e.ID, r.CreatedAt, r.Type, r.CreatedBy, r.CreatedByUserID, r.Environment, r.Project, r.FeatureName,
				r.Data, r.PreData, r.Tags, r.GroupType, r.GroupID, r.SearchPayload, r.SearchMeta}, err
		})
		_, err := pc.CopyFrom(ctx, pgx.Identifier{"events"}, append([]string{"id"}, copyColumns...), rows)
		return err
	})
}

// nounCount is "1 user", "2 users": n of the plural noun kind.
func nounCount(n int64, kind string) string {
	if n == 1 {
		kind = strings.TrimSuffix(kind, "s")
	}
	return fmt.Sprintf("%d %s", n, kind)
}
