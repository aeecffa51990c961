// Package sqlite is the store's dialect of SQLite: the statements and
// upserts in which it differs from PostgreSQL and MySQL, what its single
// writer makes unnecessary, and how a bulk load goes on it. bunstore's
// Open picks it for a sqlite: URL; the store asks it what differs and
// never which database it runs on.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/schema"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/indexbuild"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Dialect is SQLite's dialect of the store. The zero value is ready, and
// keeps no statement prepared (New does).
type Dialect struct {
	statements *statements
}

// New returns the dialect of one store, which keeps the statements of
// QueryPrepared prepared on its pools.
func New() Dialect { return Dialect{statements: newStatements()} }

// Name is bun's name of SQLite.
func (Dialect) Name() dialect.Name { return dialect.SQLite }

// NewDB is a bun database over pool, with bun's SQLite dialect.
func (Dialect) NewDB(pool *sql.DB) *bun.DB { return bun.NewDB(pool, sqlitedialect.New()) }

// SchemaFile is the baseline schema of SQLite.
func (Dialect) SchemaFile() string { return "sqlite.sql" }

// FillSchema returns ddl: the file holds nothing to fill in.
func (Dialect) FillSchema(_ context.Context, _ bun.IDB, ddl string) (string, error) { return ddl, nil }

// TableExistsSQL asks sqlite_master.
func (Dialect) TableExistsSQL() string {
	return "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
}

// IndexExistsSQL asks sqlite_master.
func (Dialect) IndexExistsSQL() string {
	return "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
}

// MigrationLock is none: the migrations run in one transaction on the
// writer connection, which holds the database write lock from BEGIN
// IMMEDIATE; other connections and processes wait for it (busy_timeout),
// and SQLite frees it if the process dies.
func (Dialect) MigrationLock() (lock, unlock string) { return "", "" }

// LockAnswers is false: there is no lock statement.
func (Dialect) LockAnswers() bool { return false }

// AfterMigrations drops the planner's samples of the index tables of the
// FTS5 tables (ftsIndexTables) from sqlite_stat4, which an ANALYZE run on
// the database (not by the store) makes: with samples of a table's index,
// SQLite prepares again, at every run, a statement whose range condition
// has a bound value, and FTS5 runs such a statement on its index table
// for each segment a query's term is looked up in. Free text on SQLite
// answered 1.8x the requests without them (BENCHMARKS.md). The other
// tables keep theirs.
func (Dialect) AfterMigrations(ctx context.Context, db *bun.DB, _ func(error)) error {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat4'").Scan(&n); err != nil || n == 0 {
		return err
	}
	_, err := db.ExecContext(ctx, "DELETE FROM sqlite_stat4 WHERE tbl IN "+ftsIndexTables)
	return err
}

// ftsIndexTables are the index tables of the store's FTS5 tables, as an
// SQL list.
const ftsIndexTables = "('events_tokens_idx', 'search_tokens_text_idx')"

// TokenIndex does nothing: the token index of SQLite came later
// (TextTokens).
func (Dialect) TokenIndex(context.Context, *bun.DB) error { return nil }

// DropTextTrigrams does nothing: TextTokens drops the trigram index,
// events_text.
func (Dialect) DropTextTrigrams(context.Context, *bun.DB) error { return nil }

// InlineTokens does nothing: the tokens are split by the writer and by
// events_tokens' tokenizer.
func (Dialect) InlineTokens(context.Context, *bun.DB) error { return nil }

// LimitTextPending does nothing: FTS5 keeps no list beside its index's
// segments, which it merges as they pile up (automerge).
func (Dialect) LimitTextPending(context.Context, *bun.DB) error { return nil }

// MarkLaterText does nothing: the pending range alone keeps the events
// it holds out of SQLite's full-text index (PendingText).
func (Dialect) MarkLaterText(context.Context, *bun.DB) error { return nil }

// DropTokensTrigger does nothing: no trigger of SQLite added tokens.
func (Dialect) DropTokensTrigger(context.Context, *bun.DB) error { return nil }

// textInsertTrigger names the trigger that indexed the texts of each
// inserted event in events_tokens (TextTokens), which
// DropTextInsertTrigger drops: the writer indexes them
// (indexbuild.Backlog.Index).
const textInsertTrigger = "events_tokens_insert"

// DropTextInsertTrigger drops the trigger that indexed the texts of each
// inserted event (textInsertTrigger), in the transaction of the
// migrations. With it, every INSERT of events ran a statement of the
// trigger into an FTS5 table, which may abort, so a multi-row INSERT of
// events wrote each page it changed to a statement journal first, to undo
// its own rows on a failure: a follower catching up spent a fifth of its
// time writing that journal to a file, two system calls a page.
func (Dialect) DropTextInsertTrigger(ctx context.Context, db *bun.DB) error {
	_, err := db.ExecContext(ctx, "DROP TRIGGER IF EXISTS "+textInsertTrigger)
	return err
}

// PendingText makes events_text_pending, the range of event ids whose
// search texts events_text lacks (a bulk load leaves them to TextBacklog),
// and makes the triggers that keep events_text leave the events of that
// range alone: their texts are indexed when the backlog reaches them, and
// a contentless table must never be told to forget a row it does not
// hold. It runs in the transaction of the migrations, which db is in: a
// failure leaves the schema as it was.
func (Dialect) PendingText(ctx context.Context, db *bun.DB) error {
	for _, stmt := range pendingText {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// notPending is the condition of a trigger of the full-text index
// (events_text, then events_tokens) or of the writer's statement that
// indexes inserted events (indexInserted) on the event id that it holds
// (new.id, old.id or events.id, not id, which names the range's own row
// in the subquery): outside the pending range.
func notPending(id string) string {
	return "NOT EXISTS (SELECT 1 FROM events_text_pending WHERE " + id + " > from_id AND " + id + " <= to_id)"
}

// pendingText are the statements of PendingText, which made the
// triggers of events_text (since replaced: TextTokens).
var pendingText = []string{
	`CREATE TABLE IF NOT EXISTS events_text_pending (
	id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
	from_id INTEGER NOT NULL,
	to_id INTEGER NOT NULL
)`,
	"DROP TRIGGER IF EXISTS events_text_insert",
	"DROP TRIGGER IF EXISTS events_text_delete",
	"DROP TRIGGER IF EXISTS events_text_update",
	`CREATE TRIGGER events_text_insert AFTER INSERT ON events BEGIN
	INSERT INTO events_text (rowid, search_payload, search_meta)
	SELECT new.id, new.search_payload, new.search_meta WHERE ` + notPending("new.id") + `;
END`,
	`CREATE TRIGGER events_text_delete AFTER DELETE ON events BEGIN
	INSERT INTO events_text (events_text, rowid, search_payload, search_meta)
	SELECT 'delete', old.id, old.search_payload, old.search_meta WHERE ` + notPending("old.id") + `;
END`,
	`CREATE TRIGGER events_text_update AFTER UPDATE OF id, search_payload, search_meta ON events BEGIN
	INSERT INTO events_text (events_text, rowid, search_payload, search_meta)
	SELECT 'delete', old.id, old.search_payload, old.search_meta WHERE ` + notPending("old.id") + `;
	INSERT INTO events_text (rowid, search_payload, search_meta)
	SELECT new.id, new.search_payload, new.search_meta WHERE ` + notPending("new.id") + `;
END`,
}

// TextBacklog indexes the texts of the events a load or a follower's
// batches left pending in events_tokens, a range at a time (the store
// adds their tokens to the vocabulary). Each range's transaction flushes
// its terms to a segment of its own, which FTS5 merges only as segments
// pile up on a level (automerge): once the ranges are done, the segments
// of both tables are merged into one, a part at a time (merge). A query
// looks its terms up in every segment: a feature's name took 4.5 ms to
// find in the vocabulary and 0.19 ms in events_tokens after a backlog of
// 1,000,000 events, 1.0 and 0.05 ms merged.
func (Dialect) TextBacklog() (indexbuild.Backlog, bool) {
	return indexbuild.Backlog{
		Pending: "SELECT from_id, to_id FROM events_text_pending",
		Fill:    TextRefill.Fill,
		Advance: "UPDATE events_text_pending SET from_id = ?",
		Done:    "DELETE FROM events_text_pending WHERE from_id >= to_id",
		Merge:   []string{merge("events_tokens"), merge("search_tokens_text")},
		Changes: "SELECT total_changes()",
		Start:   "INSERT INTO events_text_pending (id, from_id, to_id) VALUES (1, ?, ?)",
		Extend:  "UPDATE events_text_pending SET to_id = ?",
		Index:   indexInserted,
		Order:   orderInserted,
	}, true
}

// indexInserted indexes the texts of the events of a range the writer has
// just inserted, but those of the pending range, as the trigger it
// replaces did (DropTextInsertTrigger). In a database that still has the
// trigger (a store opened WithoutMigrate on one not migrated) FTS5 is
// given each event twice and holds it once.
var indexInserted = "INSERT INTO events_tokens (rowid, search_payload, search_meta, project_token) SELECT id, search_payload, search_meta, " + stored.ProjectTokenSQL("project") + " FROM events WHERE id > ? AND id <= ? AND " +
	notPending("events.id")

// SummaryLocks are none: the migration transaction holds the whole
// database already.
func (Dialect) SummaryLocks([]string, string) []string { return nil }

// ReadTxOptions are nil: a deferred transaction takes its snapshot at the
// first read (WAL); the in-memory database has a single connection anyway.
func (Dialect) ReadTxOptions() *sql.TxOptions { return nil }

// SingleWriter is true: the store's one writer connection runs one
// transaction at a time, each holding the database write lock from BEGIN.
func (Dialect) SingleWriter() bool { return true }

// InsertChunk is 5000 rows (bun writes the values into the statement's
// text, so SQLite's bound on bound values does not apply): when a trigger
// indexed each inserted event (DropTextInsertTrigger), each INSERT into
// events made the FTS5 tables flush their pending terms to a new segment
// (at the statement's savepoint), and fewer, larger statements made a
// follower catching up 1.13-1.15x as fast (BENCHMARKS.md). Events are
// also bounded by their size (stored.Chunks).
func (Dialect) InsertChunk() int { return insertChunk }

// insertChunk bounds the rows of one multi-row INSERT.
const insertChunk = 5000

// PreparedInsert is an INSERT OR FAIL of 16 rows. SQLite parses and
// compiles a statement in the process: a multi-row INSERT of 5,000 events
// written out as text took about as long to parse as to run. A short
// statement kept prepared takes its values bound instead, but the driver
// looks up each bound value among all of a statement's values (the time
// to bind grows with their square): a follower catching up into SQLite
// copied 18,700-19,400, 17,900-18,400 and 14,400-16,300 events/s with 8,
// 16 and 32 rows a statement, in turns (BENCHMARKS.md).
//
// OR FAIL: a statement that may abort on a constraint (ABORT, the
// default) and writes more than one row first writes each page it changes
// to a statement journal, to undo its own rows; past 64 KiB SQLite spills
// that journal to a file, two system calls a page, which took a fifth of
// a follower's time. FAIL ends the statement with the error and keeps the
// rows it wrote, which the store's transaction, failing with it, rolls
// back: nothing of the write is kept either way.
func (Dialect) PreparedInsert(table string, columns []string) (stmt string, rows int) {
	const n = 16
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	return "INSERT OR FAIL INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", n), ", "), n
}

// LockExplicitIDs does nothing: AUTOINCREMENT moves past an explicit id by
// itself, and the writer is single.
func (Dialect) LockExplicitIDs(context.Context, bun.IDB, string) error { return nil }

// RaiseIDs does nothing: AUTOINCREMENT moves past an explicit id by itself.
func (Dialect) RaiseIDs(context.Context, bun.IDB, string, int64) error { return nil }

// InsertEvents inserts rows by multi-row INSERTs, and sets their ids on
// events: the last one's is the connection's last rowid, and the others
// precede it, one by one: the single writer connection draws the rowids of
// one statement in a row (AUTOINCREMENT: above every id ever drawn).
// Cheaper than RETURNING.
func (Dialect) InsertEvents(ctx context.Context, db bun.IDB, rows []stored.Event, events []flagadmin.Event) error {
	for start, part := range stored.Chunks(rows, insertChunk) {
		res, err := db.NewInsert().Model(&part).Returning("").Exec(ctx)
		if err != nil {
			return err
		}
		last, err := res.LastInsertId()
		if err != nil {
			return err
		}
		for i := range part {
			events[start+i].ID = last - int64(len(part)-1-i)
		}
	}
	return nil
}

// Upsert is INSERT ... ON CONFLICT (key) DO UPDATE SET column =
// EXCLUDED.column.
func (Dialect) Upsert(q *bun.InsertQuery, key string, fields []*schema.Field) *bun.InsertQuery {
	return sqlq.OnConflictUpdate(q, key, fields)
}

// KeepExisting is ON CONFLICT (key) DO NOTHING, after WHERE true: SQLite's
// parser needs a WHERE before the upsert clause of an INSERT ... SELECT.
func (Dialect) KeepExisting(key string) string {
	return " WHERE true ON CONFLICT (" + key + ") DO NOTHING"
}

// Before is the row comparison (created_at, id) < (ms, id), a range of the
// index.
func (Dialect) Before(ms, id int64) sqlq.Fragment {
	return sqlq.F("(created_at, id) < (?, ?)", ms, id)
}

// Contains is instr(column, text) > 0, an exact substring test (SQLite's
// LIKE folds ASCII case).
func (Dialect) Contains(column, text string) sqlq.Fragment {
	return sqlq.F("instr("+column+", ?) > 0", text)
}

// AsyncCommit is "": the store's synchronous=NORMAL in WAL mode flushes at
// checkpoints, not at commits.
func (Dialect) AsyncCommit() string { return "" }

// IgnoreDuplicates is ON CONFLICT DO NOTHING.
func (Dialect) IgnoreDuplicates(q *bun.InsertQuery) *bun.InsertQuery {
	return q.On("CONFLICT DO NOTHING")
}

// IntegerDivision is /, which divides integers to an integer.
func (Dialect) IntegerDivision() string { return "/" }

// LatestLock is "": the single writer reads what it wrote last.
func (Dialect) LatestLock() string { return "" }

// LatestShareLock is "", as LatestLock.
func (Dialect) LatestShareLock() string { return "" }

// SettleLockSQL is "": a read sees every transaction committed before it
// began.
func (Dialect) SettleLockSQL() string { return "" }

// CopiesEvents is false: a bulk insert goes by multi-row INSERTs.
func (Dialect) CopiesEvents() bool { return false }

// CopyFrom returns errors.ErrUnsupported: SQLite has no COPY.
func (Dialect) CopyFrom(context.Context, bun.Conn, string, []string, func() ([]any, error)) error {
	return errors.ErrUnsupported
}

// DeferIndexes returns the statements that drop the secondary indexes of
// events and the triggers that keep events_tokens, read from
// sqlite_master, and those that make them again and, where events_tokens
// exists, either fill it and the vocabulary (TextNow) or record the loaded
// events as pending in events_text_pending, for TextBacklog (TextLater).
// SQLite changes its schema inside the transaction: a failed load leaves
// them as they were.
func (Dialect) DeferIndexes(ctx context.Context, tx bun.IDB) (drops []string, builds []indexbuild.Step, err error) {
	var rows []struct {
		Type string `bun:"type"`
		Name string `bun:"name"`
		SQL  string `bun:"sql"`
	}
	err = tx.NewRaw(`SELECT type, name, sql FROM sqlite_master
		WHERE tbl_name = 'events' AND type IN ('index', 'trigger') AND sql IS NOT NULL`).Scan(ctx, &rows)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		b := indexbuild.Step{SQL: r.SQL} // a trigger: at once
		if r.Type == "index" {
			b.What = "build index " + r.Name
		}
		drops, builds = append(drops, fmt.Sprintf("DROP %s %q", r.Type, r.Name)), append(builds, b)
	}
	var tables int
	if err := tx.NewRaw(Dialect{}.TableExistsSQL(), "events_tokens").Scan(ctx, &tables); err != nil {
		return nil, nil, err
	}
	if tables > 0 {
		refill := TextRefill
		builds = append(builds, indexbuild.Step{SQL: refill.Before, When: indexbuild.TextNow},
			indexbuild.Step{SQL: refill.Fill, What: "build the full-text index events_tokens", ByIDs: true, Tokens: true, When: indexbuild.TextNow},
			indexbuild.Step{SQL: refill.After, When: indexbuild.TextNow},
			indexbuild.Step{SQL: refill.Merge, What: "merge the full-text index events_tokens", When: indexbuild.TextNow},
			indexbuild.Step{SQL: optimize("search_tokens_text"), What: "merge the full-text index search_tokens_text", When: indexbuild.TextNow},
			indexbuild.Step{SQL: pendAll, What: "leave the full-text index events_tokens to fill after the load", When: indexbuild.TextLater})
	}
	if err := tx.NewRaw(Dialect{}.TableExistsSQL(), "events_out_of_order").Scan(ctx, &tables); err != nil {
		return nil, nil, err
	}
	if tables > 0 {
		builds = append(builds, indexbuild.Step{SQL: orderAll, What: "record the events out of creation order"})
	}
	return drops, builds, err
}

// AnalyzeLoaded does nothing: SQLite plans without statistics unless
// ANALYZE made some, which the schema never does.
func (Dialect) AnalyzeLoaded(context.Context, bun.IDB, func(string) func()) error { return nil }

// PreparedOffset is OFFSET ?: SQLite plans without the value.
func (Dialect) PreparedOffset() string { return "OFFSET ?" }

// QueryPrepared runs stmt on db: in a transaction of one of the store's
// pools, kept prepared on the pool (statements), its values bound where
// SQLite's planner does not read them; the first time, or on anything
// else, as bun writes it, its values in the text.
func (d Dialect) QueryPrepared(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, error) {
	if d.statements != nil {
		if rows, ok, err := d.statements.query(ctx, db, stmt); ok {
			return rows, err
		}
	}
	return db.QueryContext(ctx, stmt.Text, stmt.Args...)
}

// ClosePrepared waits for the statements being prepared in the
// background, prepares no more, and closes those kept (statements.close).
func (d Dialect) ClosePrepared() {
	if d.statements != nil {
		d.statements.close()
	}
}

// QueryPlannedOnce is QueryPrepared.
func (d Dialect) QueryPlannedOnce(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, error) {
	return d.QueryPrepared(ctx, db, stmt)
}

// TextRefill are the statements that fill events_tokens from the events,
// for a bulk load that dropped its triggers: Fill (over the events of a
// range of ids, run range by range), between Before and After, then
// Merge. FTS5 flushes its pending terms to a new segment each
// time they pass hashsize (1 MiB by default), and merges segments as they
// pile up: with 32 MiB (Before) the fill of a million events writes a
// thirtieth of the segments and takes about half the time; After sets the
// default again.
//
// Merge then merges the index into one segment (FTS5's optimize). A fill
// leaves up to three large segments on each level, so the writes after
// it soon cascade into merges of those, and FTS5 merges a term's whole
// list of rows at once: a common token's, of nearly every event. On
// SQLite's one writer connection every write waits for such a merge
// (2.4 s on 1,000,000 events; 28 ms at most once merged: measured with
// scripts/bench-log.sh, docs/benchmarks-archive.md). Merged, the next merges are of the
// segments written since, small until they have grown to the index's size.
var TextRefill = struct{ Before, Fill, After, Merge string }{
	hashSize(32 << 20),
	"INSERT INTO events_tokens (rowid, search_payload, search_meta, project_token) SELECT id, search_payload, search_meta, " + stored.ProjectTokenSQL("project") + " FROM events WHERE id > ? AND id <= ?",
	hashSize(1 << 20),
	optimize("events_tokens"),
}

// optimize is the statement that merges the segments of the FTS5 table
// into one at once.
func optimize(table string) string {
	return "INSERT INTO " + table + " (" + table + ") VALUES ('optimize')"
}

// pendAll records every event as pending in events_text_pending (none
// when there is none): the load's, in an empty store.
const pendAll = `INSERT OR REPLACE INTO events_text_pending (id, from_id, to_id)
	SELECT 1, lo, hi FROM (SELECT MIN(id) - 1 AS lo, MAX(id) AS hi FROM events) WHERE hi IS NOT NULL`

// merge is the statement that merges the segments of the FTS5 table
// into one, writing about 1,000 pages (4 MB) at most: with a negative
// count FTS5 merges segments of every level.
func merge(table string) string {
	return "INSERT INTO " + table + " (" + table + ", rank) VALUES ('merge', -1000)"
}

// hashSize sets the pending-terms size of events_tokens.
func hashSize(bytes int) string {
	return fmt.Sprintf("INSERT INTO events_tokens (events_tokens, rank) VALUES ('hashsize', %d)", bytes)
}
