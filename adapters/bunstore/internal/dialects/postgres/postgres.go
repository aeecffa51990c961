// Package postgres is the store's dialect of PostgreSQL: the statements,
// locks and upserts in which it differs from MySQL and SQLite, and how a
// bulk load goes on it. bunstore's Open picks it for a postgres:// URL;
// the store asks it what differs and never which database it runs on.
package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/driverconn"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/indexbuild"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
)

// Dialect is PostgreSQL's dialect of the store. The zero value is ready.
type Dialect struct{}

// Name is bun's name of PostgreSQL.
func (Dialect) Name() dialect.Name { return dialect.PG }

// NewDB is a bun database over pool, with bun's PostgreSQL dialect.
func (Dialect) NewDB(pool *sql.DB) *bun.DB { return bun.NewDB(pool, pgdialect.New()) }

// SchemaFile is the baseline schema of PostgreSQL.
func (Dialect) SchemaFile() string { return "postgres.sql" }

// FillSchema returns ddl: the file holds nothing to fill in.
func (Dialect) FillSchema(_ context.Context, _ bun.IDB, ddl string) (string, error) { return ddl, nil }

// TableExistsSQL asks pg_catalog directly, by the index on a relation's
// name and schema: information_schema's views join every relation of the
// database and check privileges on each, which costs a hundred times as
// much (tables, views and foreign tables, as information_schema.tables
// lists).
func (Dialect) TableExistsSQL() string {
	return "SELECT COUNT(*) FROM pg_catalog.pg_class WHERE relnamespace = quote_ident(current_schema())::regnamespace AND relname = ? AND relkind IN ('r', 'p', 'v', 'f')"
}

// IndexExistsSQL asks pg_catalog, as TableExistsSQL does.
func (Dialect) IndexExistsSQL() string {
	return "SELECT COUNT(*) FROM pg_catalog.pg_class WHERE relnamespace = quote_ident(current_schema())::regnamespace AND relname = ? AND relkind IN ('i', 'I')"
}

// MigrationLock is an advisory lock keyed by the current schema.
func (Dialect) MigrationLock() (lock, unlock string) {
	return "SELECT pg_advisory_lock(hashtext('flagadmin.migrate:' || COALESCE(current_schema(), '')))",
		"SELECT pg_advisory_unlock(hashtext('flagadmin.migrate:' || COALESCE(current_schema(), '')))"
}

// LockAnswers is false: pg_advisory_lock returns void, waiting is all it
// does.
func (Dialect) LockAnswers() bool { return false }

// AfterMigrations makes the pg_trgm index of the token index's vocabulary
// (trigram.go), when the extension is available (warn is told when it is
// not).
func (Dialect) AfterMigrations(ctx context.Context, db *bun.DB, warn func(cause error)) error {
	return ensureTrigramIndex(ctx, db, warn)
}

// SummaryLocks lock the tables themselves: the base tables in share mode,
// the summaries exclusively, events in share mode. The event order lock
// is not needed: the lock on events keeps inserts out.
func (Dialect) SummaryLocks(baseTables []string, _ string) []string {
	return []string{
		"LOCK TABLE " + strings.Join(baseTables, ", ") + " IN SHARE MODE",
		"LOCK TABLE event_counts, project_stats IN EXCLUSIVE MODE",
		"LOCK TABLE events IN SHARE MODE",
	}
}

// ReadTxOptions are a read-only transaction at REPEATABLE READ, one
// snapshot for all its statements.
func (Dialect) ReadTxOptions() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
}

// SingleWriter is false: writers run side by side, under row locks.
func (Dialect) SingleWriter() bool { return false }

// InsertChunk is 1000 rows.
func (Dialect) InsertChunk() int { return 1000 }

// PreparedInsert is none: bulk writes go by COPY, statements are planned
// by the server.
func (Dialect) PreparedInsert(string, []string) (string, int) { return "", 0 }

// LockExplicitIDs waits for the transactions that insert into table to end
// and keeps new ones out until this one ends, so that RaiseIDs sees every
// id drawn and none is drawn while it runs. It is taken before the insert:
// taking it after, two such transactions would deadlock on each other's
// insert lock.
func (Dialect) LockExplicitIDs(ctx context.Context, db bun.IDB, table string) error {
	_, err := db.ExecContext(ctx, "LOCK TABLE ? IN SHARE ROW EXCLUSIVE MODE", bun.Ident(table))
	return err
}

// RaiseIDs moves the identity of table past largest unless it is past it
// already: an identity does not move past an explicit id by itself.
func (Dialect) RaiseIDs(ctx context.Context, db bun.IDB, table string, largest int64) error {
	_, err := db.ExecContext(ctx, `SELECT setval(s, ?) FROM (SELECT pg_get_serial_sequence(?, 'id')::regclass AS s) q
		WHERE ? > COALESCE(pg_sequence_last_value(s), 0)`, largest, table, largest)
	return err
}

// Upsert is INSERT ... ON CONFLICT (key) DO UPDATE SET column =
// EXCLUDED.column.
func (Dialect) Upsert(q *bun.InsertQuery, key string, fields []*schema.Field) *bun.InsertQuery {
	return sqlq.OnConflictUpdate(q, key, fields)
}

// KeepExisting is ON CONFLICT (key) DO NOTHING.
func (Dialect) KeepExisting(key string) string { return " ON CONFLICT (" + key + ") DO NOTHING" }

// Before is the row comparison (created_at, id) < (ms, id), which EXPLAIN
// shows as the index condition (Index Only Scan Backward on
// events_created, or on events_project with project = ? AND
// ROW(created_at, id) < ROW(?, ?)).
func (Dialect) Before(ms, id int64) sqlq.Fragment {
	return sqlq.F("(created_at, id) < (?, ?)", ms, id)
}

// Contains is a LIKE, a scan of the texts: the token index answers free
// text (internal/textindex, through the summaries).
func (Dialect) Contains(column, text string) sqlq.Fragment { return sqlq.LikeContains(column, text) }

// AsyncCommit, joined to an UPDATE, makes the statement's own transaction
// commit without waiting for its WAL record to reach the disk
// (synchronous_commit off, for this transaction only: set_config's local
// setting holds until its end, after the commit record is written). A
// sink's position write then costs no disk flush, which bounds one sink's
// delivery rate otherwise (one flush per event). The risk is the
// database's own crash (not flagadmin's), which may undo the advances of
// its last fraction of a second (at most 3 × wal_writer_delay): those
// events are sent again, with their ids, and none is skipped, since a
// position only ever moves back. See flagadmin.SinkStore.AdvanceSink.
func (Dialect) AsyncCommit() string {
	return " FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit"
}

// IgnoreDuplicates is ON CONFLICT DO NOTHING.
func (Dialect) IgnoreDuplicates(q *bun.InsertQuery) *bun.InsertQuery {
	return q.On("CONFLICT DO NOTHING")
}

// IntegerDivision is /, which divides integers to an integer.
func (Dialect) IntegerDivision() string { return "/" }

// LatestLock is "": in a write transaction (READ COMMITTED) each
// statement's snapshot is taken when it starts.
func (Dialect) LatestLock() string { return "" }

// LatestShareLock is "", as LatestLock.
func (Dialect) LatestShareLock() string { return "" }

// SettleLockSQL is "": a statement's snapshot sees every transaction that
// committed before it started.
func (Dialect) SettleLockSQL() string { return "" }

// CopiesEvents is true: COPY means far less parsing than INSERT.
func (Dialect) CopiesEvents() bool { return true }

// CopyFrom sends the rows with pgx's COPY, on the pgx connection under
// conn and under any wrappers bunstore.WithConnector put around it: the
// COPY does not pass through them, so a wrapper that injects faults into
// statements does not see it.
func (Dialect) CopyFrom(ctx context.Context, conn bun.Conn, table string, columns []string, next func() ([]any, error)) error {
	return conn.Raw(func(dc any) error {
		sc, ok := driverconn.As[*stdlib.Conn](dc)
		if !ok {
			return fmt.Errorf("postgres driver connection %T is not pgx's", dc)
		}
		_, err := sc.Conn().CopyFrom(ctx, pgx.Identifier{table}, columns, pgx.CopyFromFunc(next))
		return err
	})
}

// TextProjects does nothing: PostgreSQL's token index reads each
// candidate's project from its row.
func (Dialect) TextProjects(context.Context, *bun.DB) error { return nil }

// EventOrder does nothing: PostgreSQL reads a free-text page by its
// window over the matches (pgpage.TextPage), not in id order.
func (Dialect) EventOrder(context.Context, *bun.DB) error { return nil }

// PendingText does nothing: no load leaves texts to be indexed after it.
func (Dialect) PendingText(context.Context, *bun.DB) error { return nil }

// DeferIndexes returns the statements that drop the secondary indexes of
// events, read from the catalog, and those that make them again, each as
// it was. PostgreSQL changes its schema inside the transaction: a failed
// load leaves the indexes as they were.
func (Dialect) DeferIndexes(ctx context.Context, tx bun.IDB) (drops []string, builds []indexbuild.Step, err error) {
	var rows []struct {
		Name  string `bun:"name"`
		Index string `bun:"indexname"`
		Def   string `bun:"def"`
	}
	err = tx.NewRaw(`SELECT format('%I.%I', schemaname, indexname) AS name, indexname, indexdef AS def FROM pg_indexes
		WHERE schemaname = current_schema() AND tablename = 'events'
		AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = (quote_ident(current_schema()) || '.events')::regclass)`).Scan(ctx, &rows)
	if err != nil {
		return nil, nil, err
	}
	builds = []indexbuild.Step{{SQL: "SET LOCAL maintenance_work_mem = '256MB'"}}
	for _, r := range rows {
		drops, builds = append(drops, "DROP INDEX "+r.Name), append(builds, indexbuild.Step{SQL: r.Def, What: "build index " + r.Index})
	}
	return drops, builds, nil
}

// AnalyzeLoaded gathers the statistics of every table of the store in tx,
// once a load has filled them: the planner would otherwise plan for the
// empty tables it last saw until autovacuum comes by (never, where
// autovacuum is off), and pick plans that cost a proof or a search tens of
// milliseconds at a million events. ANALYZE in the load's transaction
// counts the rows it wrote, and its statistics commit with them.
func (Dialect) AnalyzeLoaded(ctx context.Context, tx bun.IDB, step func(what string) (done func())) error {
	var tables []string
	if err := tx.NewRaw("SELECT format('%I.%I', schemaname, tablename) FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename").Scan(ctx, &tables); err != nil {
		return err
	}
	if len(tables) == 0 {
		return nil
	}
	done := step("analyze the tables")
	if _, err := tx.ExecContext(ctx, "ANALYZE "+strings.Join(tables, ", ")); err != nil {
		return err
	}
	done()
	return nil
}

// PreparedOffset is OFFSET (SELECT CAST(? AS bigint)). With OFFSET $n
// PostgreSQL plans each run for its offset: a generic plan, costed for a
// tenth of the rows skipped, looks dearer than one for a small offset, so
// every Bind of a random offset's page planned it again (0.29-0.37 ms of
// its 1.2 ms). The value of a subquery is unknown to every plan alike,
// custom or generic, and after five runs PostgreSQL keeps the generic
// one: the same plan (the index read backwards, then the rows), planned
// in 0.012 ms.
func (Dialect) PreparedOffset() string { return "OFFSET (SELECT CAST(? AS bigint))" }

// QueryPrepared runs stmt with $n placeholders, which pgx keeps prepared
// on the connection (pgx.QueryExecModeCacheStatement): its text then
// depends only on its shape, so it is parsed once per connection.
// PostgreSQL still plans it for each run's values when that promises a
// better plan than its generic one (plan_cache_mode auto). db is a
// *bun.DB or a bun.Tx: pgx must see the values, which bun's own
// QueryContext would write into the text.
func (Dialect) QueryPrepared(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, error) {
	return queryPrepared(ctx, db, stmt.Dollar)
}

// ClosePrepared does nothing: the driver keeps its prepared statements
// with its connections, which close with the pool.
func (Dialect) ClosePrepared() {}

// QueryPlannedOnce is QueryPrepared with the values hidden from the
// planner (sqlq.Fragment.Opaque), so that PostgreSQL keeps its generic
// plan after five runs instead of planning each run for its values.
func (Dialect) QueryPlannedOnce(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, error) {
	return queryPrepared(ctx, db, stmt.Opaque)
}

// queryPrepared runs the statement text returns, kept prepared.
func queryPrepared(ctx context.Context, db bun.IDB, text func() (string, []any)) (*sql.Rows, error) {
	query, args := text()
	args = append([]any{pgx.QueryExecModeCacheStatement}, args...)
	switch db := db.(type) {
	case *bun.DB:
		return db.DB.QueryContext(ctx, query, args...)
	case bun.Tx:
		return db.Tx.QueryContext(ctx, query, args...)
	case bun.Conn:
		return db.Conn.QueryContext(ctx, query, args...)
	}
	return nil, fmt.Errorf("postgres: QueryPrepared on a %T", db)
}
