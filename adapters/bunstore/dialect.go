package bunstore

import (
	"context"
	"database/sql"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/indexbuild"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// sqlDialect is what differs between the databases the store runs on:
// a statement or a clause, a lock, an upsert's form, how ids are drawn and
// how a bulk load goes. The store is one body of SQL for all three; each
// database answers these questions in a package of its own under
// internal/dialects (postgres, mysql, sqlite), which imports bun and the
// store's helper packages but never the store. Open picks the dialect once,
// from the URL's scheme; the rest of the store asks it, never which
// database it is.
type sqlDialect interface {
	// Name is bun's name of the database, for the helper packages that
	// write SQL of their own (stored) and the summaries (internal/tuned).
	Name() dialect.Name
	// NewDB is a bun database over pool, which speaks this dialect.
	NewDB(pool *sql.DB) *bun.DB

	// SchemaFile is the baseline schema's file under schema/.
	SchemaFile() string
	// FillSchema fills in what the schema file leaves to the server
	// (MySQL's binary collation), asking db.
	FillSchema(ctx context.Context, db bun.IDB, ddl string) (string, error)
	// TableExistsSQL counts the tables of the store's schema named by its
	// one argument.
	TableExistsSQL() string
	// IndexExistsSQL counts the indexes of the store's schema named by its
	// one argument.
	IndexExistsSQL() string
	// MigrationLock is the pair of statements that take and release the
	// lock migrations run under, held by a session of their own; both ""
	// when the migrations hold the database's write lock instead, in one
	// transaction on the writer connection (SQLite).
	MigrationLock() (lock, unlock string)
	// LockAnswers reports whether MigrationLock's statement answers 1 when
	// it took the lock (0 when its wait timed out, NULL when refused);
	// else it answers nothing and waits until it holds the lock.
	LockAnswers() bool
	// AfterMigrations runs, under the migration lock, once the migrations
	// and the summaries are done: what the schema files cannot say for
	// every server (the
	// trigram index of PostgreSQL's token vocabulary, when pg_trgm is
	// there; warn is told when it is not).
	AfterMigrations(ctx context.Context, db *bun.DB, warn func(cause error)) error
	// TokenIndex makes, in a migration, the index of the search texts'
	// tokens over the events stored, where the database has one
	// (PostgreSQL), and keeps it from then on; elsewhere it does nothing.
	TokenIndex(ctx context.Context, db *bun.DB) error
	// DropTextTrigrams drops, in a migration, the trigram indexes of the
	// events' search texts where a database has them (PostgreSQL: the
	// token index answers free text); elsewhere it does nothing.
	DropTextTrigrams(ctx context.Context, db *bun.DB) error
	// DropTokensTrigger drops, in a migration, the trigger that added the
	// tokens of inserted events to the token index's vocabulary where a
	// database has it (PostgreSQL: the writer adds them, tokenKeeper);
	// elsewhere it does nothing.
	DropTokensTrigger(ctx context.Context, db *bun.DB) error
	// InlineTokens gives, in a migration, the function of the token
	// index a body the database inlines, where there is one.
	InlineTokens(ctx context.Context, db *bun.DB) error
	// DropTextInsertTrigger drops, in a migration, the trigger that
	// indexed the texts of each inserted event where a database has it
	// (SQLite: the writer indexes them, indexbuild.Backlog.Index);
	// elsewhere it does nothing.
	DropTextInsertTrigger(ctx context.Context, db *bun.DB) error
	// TextTokens makes, in a migration, a token index of the search texts
	// in place of an index of their trigrams, where the database had
	// such an index and fills the new one in the background (TextBacklog):
	// every stored event is left pending.
	TextTokens(ctx context.Context, db *bun.DB) error
	// TextProjects gives, in a migration, the full-text index each
	// event's project, where the index can hold it (SQLite), so that a
	// search leaves out a caller's hidden projects from the index alone.
	TextProjects(ctx context.Context, db *bun.DB) error
	// EventOrder makes and fills, in a migration, the record of the
	// events out of creation order that a free-text page read in id
	// order from the full-text index depends on (SQLite:
	// indexbuild.Backlog.Order); elsewhere it does nothing.
	EventOrder(ctx context.Context, db *bun.DB) error
	// PendingText makes, in a migration, where a bulk load may leave the
	// full-text index of the loaded events to be filled after it commits
	// (SQLite: the range of their ids, which the index's triggers leave
	// alone); elsewhere it does nothing.
	PendingText(ctx context.Context, db *bun.DB) error
	// MarkLaterText makes, in a migration, where a follower's large
	// batches may leave their texts to the backlog by marking their
	// events (PostgreSQL: the column of indexbuild.Backlog.Mark, the
	// pending range, the token indexes made partial); elsewhere it does
	// nothing.
	MarkLaterText(ctx context.Context, db *bun.DB) error
	// LimitTextPending bounds, in a migration, the entries of recent
	// inserts a full-text index keeps beside its tree, which every search
	// reads whole (PostgreSQL: the pending lists of its GIN indexes);
	// elsewhere it does nothing.
	LimitTextPending(ctx context.Context, db *bun.DB) error
	// TextBacklog returns the statements that fill the full-text index
	// with the texts a load or a follower's batches left pending, and
	// whether the database has such a backlog (SQLite, PostgreSQL).
	TextBacklog() (indexbuild.Backlog, bool)
	// SummaryLocks are the statements that keep the summaries' sources
	// still while they are rebuilt, in the writers' lock order: the base
	// tables against changes, the summaries against writers, events
	// against inserts (eventOrder takes the event order lock). None on a
	// database whose migration transaction holds it all already.
	SummaryLocks(baseTables []string, eventOrder string) []string

	// ReadTxOptions are the options of a read transaction that sees one
	// snapshot of the database; nil for the default transaction.
	ReadTxOptions() *sql.TxOptions
	// SingleWriter reports whether the database runs one write
	// transaction at a time, holding its write lock from BEGIN (SQLite's
	// single writer connection): then there are no row locks to take, no
	// event order lock, and no hot row to spread writers over.
	SingleWriter() bool
	// InsertChunk bounds the rows of one multi-row INSERT; events are
	// also bounded by their size (stored.Chunks).
	InsertChunk() int
	// PreparedInsert is the short INSERT of rows rows into table's
	// columns, each value a parameter, that the writer connection keeps
	// prepared for the events and the leaves of bulk writes, where many
	// statements cost no more than one (preparedInserts); "" and 0 where
	// rows go by multi-row INSERTs only.
	PreparedInsert(table string, columns []string) (stmt string, rows int)

	// LockExplicitIDs, where the database needs it for RaiseIDs, keeps the
	// transactions that insert into table out until this one ends, having
	// waited for those running. It is taken before inserting rows with
	// their ids.
	LockExplicitIDs(ctx context.Context, db bun.IDB, table string) error
	// RaiseIDs makes the ids the database draws for table continue above
	// largest, an id just inserted explicitly, where the counter does not
	// move past it by itself. The caller keeps other drawers out
	// (LockExplicitIDs, or the event order lock for events).
	RaiseIDs(ctx context.Context, db bun.IDB, table string, largest int64) error

	// Upsert makes q, an INSERT of rows of a table whose primary key is
	// key, replace a stored row of the same key: every column of fields
	// set to the row's.
	Upsert(q *bun.InsertQuery, key string, fields []*schema.Field) *bun.InsertQuery
	// KeepExisting ends an INSERT ... SELECT so that a row whose key (a
	// column of the primary key) exists is left as it is.
	KeepExisting(key string) string
	// Before is the condition of the rows before the position (ms, id) in
	// the order (created_at, id), written so the database reads it as a
	// range of the index on (created_at, id).
	Before(ms, id int64) sqlq.Fragment
	// Contains is the condition that column contains text, a literal.
	Contains(column, text string) sqlq.Fragment
	// AsyncCommit is a FROM clause for an UPDATE whose transaction may
	// commit without waiting for its record to be flushed, or "".
	AsyncCommit() string
	// IgnoreDuplicates makes q, an INSERT, skip the rows whose key is
	// stored already and insert the others.
	IgnoreDuplicates(q *bun.InsertQuery) *bun.InsertQuery
	// IntegerDivision is the operator that divides integers to an
	// integer.
	IntegerDivision() string

	// LatestLock is the lock strength X of SELECT ... FOR X with which a
	// read in a write transaction sees the rows committed last, and locks
	// them, where a plain read sees the transaction's snapshot, taken at
	// its first read; "" where a plain read sees them already (each
	// statement has a snapshot of its own, or there is one writer). A
	// transaction holding a lock that the rows' writers take reads so what
	// they committed before it took the lock.
	LatestLock() string
	// LatestShareLock is the clause that ends a SELECT to the same end as
	// LatestLock, locking the rows read in share mode; "" where LatestLock
	// is.
	LatestShareLock() string

	// SettleLockSQL takes the event order lock in share mode: an export
	// settles under it the highest id it reads, where a statement's
	// snapshot may miss a commit that came before one it sees (export.go);
	// "" where snapshots never do.
	SettleLockSQL() string
	// CopiesEvents reports whether a bulk insert of events, and every
	// insert of leaves, goes by COPY (CopyFrom).
	CopiesEvents() bool
	// CopyFrom sends rows into table with COPY, on conn, inside the
	// transaction it runs: each a value per column of columns, in order,
	// from next until it returns none. Where CopiesEvents is false the
	// database has no COPY, and it returns errors.ErrUnsupported.
	CopyFrom(ctx context.Context, conn bun.Conn, table string, columns []string, next func() ([]any, error)) error
	// DeferIndexes returns, for a load in tx, the statements that drop
	// the secondary indexes of events (and what keeps derived tables of
	// them), and those that make them again after the rows; none where
	// schema changes do not roll back with tx.
	DeferIndexes(ctx context.Context, tx bun.IDB) (drops []string, builds []indexbuild.Step, err error)
	// AnalyzeLoaded gathers the planner's statistics of the store's
	// tables in tx after a load, where the database does not by itself;
	// step is told when the work starts and returns what tells it the
	// work is done.
	AnalyzeLoaded(ctx context.Context, tx bun.IDB, step func(what string) (done func())) error

	// PreparedOffset is the OFFSET clause, its value a placeholder, of a
	// statement kept prepared (QueryPrepared) that pages at any offset:
	// written so that the database plans it once for every offset.
	PreparedOffset() string
	// QueryPrepared runs stmt, a statement whose text repeats with other
	// values, on db: kept prepared by the connection where the database
	// would otherwise plan it anew each time, at more cost than running it.
	QueryPrepared(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, error)
	// QueryPlannedOnce is QueryPrepared for a statement whose one plan
	// serves all its values: where the database would plan each run for
	// its values, it plans the statement once.
	QueryPlannedOnce(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, error)
	// ClosePrepared waits for what the dialect prepares in the background
	// on the store's pools, starts no more, and closes the statements it
	// keeps: Store.Close calls it before it closes the pools, so that no
	// work of the store outlives it.
	ClosePrepared()
}

// tokenKeeper is the ability of a dialect whose schema keeps a vocabulary
// of the search texts' tokens (PostgreSQL's token index): every insert of
// events adds theirs (stored.TokenSet), in its transaction, so that no
// search misses an event.
type tokenKeeper interface {
	// AddSearchTokens adds to the vocabulary those of tokens it does not
	// hold.
	AddSearchTokens(ctx context.Context, db bun.IDB, tokens []string) error
}

// eventInserter is the ability of a dialect whose INSERT does not return
// the ids it drew (MySQL, and SQLite, where the last rowid is cheaper than
// RETURNING): it learns them itself. A dialect without it inserts events
// by INSERT ... RETURNING (leaves.go).
type eventInserter interface {
	// InsertEvents inserts rows, whose ids the database draws, and sets
	// on events (their events, in order) the ids drawn. The caller holds
	// the event order lock where there is one.
	InsertEvents(ctx context.Context, db bun.IDB, rows []stored.Event, events []flagadmin.Event) error
}
