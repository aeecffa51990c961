// Package mysql is the store's dialect of MySQL and MariaDB: the
// statements, locks and upserts in which they differ from PostgreSQL and
// SQLite, and how events learn the ids an INSERT drew. bunstore's Open
// picks it for a mysql:// URL; the store asks it what differs and never
// which database it runs on.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/schema"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/indexbuild"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Dialect is the MySQL and MariaDB dialect of the store. The zero value is
// ready.
type Dialect struct{}

// Name is bun's name of MySQL.
func (Dialect) Name() dialect.Name { return dialect.MySQL }

// NewDB is a bun database over pool, with bun's MySQL dialect, which asks
// the server for its version when created.
func (Dialect) NewDB(pool *sql.DB) *bun.DB { return bun.NewDB(pool, mysqldialect.New()) }

// SchemaFile is the baseline schema of MySQL and MariaDB.
func (Dialect) SchemaFile() string { return "mysql.sql" }

// FillSchema fills in {collation}: the binary collation of utf8mb4 the
// server has (binaryCollation).
func (Dialect) FillSchema(ctx context.Context, db bun.IDB, ddl string) (string, error) {
	collation, err := binaryCollation(ctx, db)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(ddl, "{collation}", collation), nil
}

// binaryCollation picks a utf8mb4 collation that compares code points
// exactly and without padding trailing spaces, as the other databases do:
// utf8mb4_0900_bin (MySQL 8) or utf8mb4_nopad_bin (MariaDB), else utf8mb4_bin.
func binaryCollation(ctx context.Context, db bun.IDB) (string, error) {
	for _, c := range []string{"utf8mb4_0900_bin", "utf8mb4_nopad_bin"} {
		var name string
		err := db.QueryRowContext(ctx, "SELECT COLLATION_NAME FROM information_schema.COLLATIONS WHERE COLLATION_NAME = ?", c).Scan(&name)
		switch {
		case err == nil:
			return name, nil
		case !errors.Is(err, sql.ErrNoRows):
			return "", err
		}
	}
	return "utf8mb4_bin", nil
}

// TableExistsSQL asks information_schema about the current database.
func (Dialect) TableExistsSQL() string {
	return "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?"
}

// IndexExistsSQL asks information_schema about the current database.
func (Dialect) IndexExistsSQL() string {
	return "SELECT COUNT(DISTINCT INDEX_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME = ?"
}

// MigrationLock is GET_LOCK on a name derived from the database's, which
// gives up after 5 seconds (answering 0) and is then tried again.
func (Dialect) MigrationLock() (lock, unlock string) {
	return "SELECT GET_LOCK(CONCAT('flagadmin_migrate_', SHA1(DATABASE())), 5)",
		"SELECT RELEASE_LOCK(CONCAT('flagadmin_migrate_', SHA1(DATABASE())))"
}

// LockAnswers is true: GET_LOCK answers 1, 0 or NULL.
func (Dialect) LockAnswers() bool { return true }

// AfterMigrations does nothing: the schema file says it all.
func (Dialect) AfterMigrations(context.Context, *bun.DB, func(error)) error { return nil }

// TokenIndex does nothing: free text is matched by LIKE.
func (Dialect) TokenIndex(context.Context, *bun.DB) error { return nil }

// DropTextTrigrams does nothing: there are none.
func (Dialect) DropTextTrigrams(context.Context, *bun.DB) error { return nil }

// InlineTokens does nothing: there is no token index.
func (Dialect) InlineTokens(context.Context, *bun.DB) error { return nil }

// DropTokensTrigger does nothing: there is no token index.
func (Dialect) DropTokensTrigger(context.Context, *bun.DB) error { return nil }

// DropTextInsertTrigger does nothing: MySQL has no index of the texts.
func (Dialect) DropTextInsertTrigger(context.Context, *bun.DB) error { return nil }

// LimitTextPending does nothing: MySQL has no index of the texts.
func (Dialect) LimitTextPending(context.Context, *bun.DB) error { return nil }

// MarkLaterText does nothing: MySQL has no index of the texts.
func (Dialect) MarkLaterText(context.Context, *bun.DB) error { return nil }

// TextTokens does nothing: MySQL has no index of the texts.
func (Dialect) TextTokens(context.Context, *bun.DB) error { return nil }

// SummaryLocks are locking reads of every row, by the primary key: the
// base tables in share mode, the summaries for update, then the event
// order lock, which every writer of events takes.
func (Dialect) SummaryLocks(baseTables []string, eventOrder string) []string {
	var locks []string
	for _, t := range baseTables {
		locks = append(locks, "SELECT COUNT(*) FROM "+t+" FORCE INDEX (PRIMARY) LOCK IN SHARE MODE")
	}
	return append(locks,
		"SELECT COUNT(*) FROM event_counts FORCE INDEX (PRIMARY) FOR UPDATE",
		"SELECT COUNT(*) FROM project_stats FORCE INDEX (PRIMARY) FOR UPDATE",
		eventOrder)
}

// ReadTxOptions are a read-only transaction at REPEATABLE READ, one
// snapshot for all its statements.
func (Dialect) ReadTxOptions() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
}

// SingleWriter is false: writers run side by side, under row locks.
func (Dialect) SingleWriter() bool { return false }

// InsertChunk is 1000 rows.
func (Dialect) InsertChunk() int { return insertChunk }

// insertChunk bounds the rows of one multi-row INSERT.
const insertChunk = 1000

// PreparedInsert is none: each statement is a round trip to the server.
func (Dialect) PreparedInsert(string, []string) (string, int) { return "", 0 }

// LockExplicitIDs does nothing: AUTO_INCREMENT moves past an explicit id
// by itself.
func (Dialect) LockExplicitIDs(context.Context, bun.IDB, string) error { return nil }

// RaiseIDs does nothing: AUTO_INCREMENT moves past an explicit id by
// itself.
func (Dialect) RaiseIDs(context.Context, bun.IDB, string, int64) error { return nil }

// InsertEvents inserts rows, which has no RETURNING, under the event order
// lock the caller holds: by multi-row INSERTs whose ids are the first one
// (LAST_INSERT_ID) and, for more than one row, those read back from it:
// the lock keeps every other writer's ids out of the range.
func (Dialect) InsertEvents(ctx context.Context, db bun.IDB, rows []stored.Event, events []flagadmin.Event) error {
	for start := 0; start < len(rows); start += insertChunk {
		part := rows[start:min(len(rows), start+insertChunk)]
		res, err := db.NewInsert().Model(&part).Returning("").Exec(ctx)
		if err != nil {
			return err
		}
		first, err := res.LastInsertId()
		if err != nil {
			return err
		}
		ids := []int64{first}
		if len(part) > 1 {
			ids = ids[:0]
			if err := db.NewRaw("SELECT id FROM events WHERE id >= ? ORDER BY id LIMIT ?", first, len(part)).Scan(ctx, &ids); err != nil {
				return err
			}
		}
		if len(ids) != len(part) {
			return fmt.Errorf("inserted %d events, read back %d ids", len(part), len(ids))
		}
		for i, id := range ids {
			events[start+i].ID = id
		}
	}
	return nil
}

// Upsert is INSERT ... ON DUPLICATE KEY UPDATE column = VALUES(column);
// key is the primary key, which MySQL finds by itself.
func (Dialect) Upsert(q *bun.InsertQuery, _ string, fields []*schema.Field) *bun.InsertQuery {
	q = q.On("DUPLICATE KEY UPDATE")
	for _, f := range fields {
		q = q.Set("? = VALUES(?)", bun.Ident(f.Name), bun.Ident(f.Name))
	}
	return q
}

// KeepExisting is ON DUPLICATE KEY UPDATE key = key, which changes nothing.
func (Dialect) KeepExisting(key string) string {
	return " ON DUPLICATE KEY UPDATE " + key + " = " + key
}

// Before is the expanded form created_at < ms OR (created_at = ms AND id
// < id): MariaDB 10.11 makes no range of the row comparison (type index
// or ref, "Using where": a scan from the newest event down to the cursor),
// but does of this form (type range over created_at and id).
func (Dialect) Before(ms, id int64) sqlq.Fragment {
	return sqlq.F("(created_at < ? OR (created_at = ? AND id < ?))", ms, ms, id)
}

// Contains is a LIKE, which scans.
func (Dialect) Contains(column, text string) sqlq.Fragment { return sqlq.LikeContains(column, text) }

// AsyncCommit is "": MySQL has no switch of one transaction's flush.
func (Dialect) AsyncCommit() string { return "" }

// IgnoreDuplicates is INSERT IGNORE.
func (Dialect) IgnoreDuplicates(q *bun.InsertQuery) *bun.InsertQuery { return q.Ignore() }

// IntegerDivision is DIV: MySQL's / divides to a decimal.
func (Dialect) IntegerDivision() string { return "DIV" }

// LatestLock is UPDATE: a plain read in a REPEATABLE READ transaction sees
// its snapshot, and a locking read sees the latest committed rows.
func (Dialect) LatestLock() string { return "UPDATE" }

// LatestShareLock is LOCK IN SHARE MODE, which MySQL and MariaDB both
// read.
func (Dialect) LatestShareLock() string { return " LOCK IN SHARE MODE" }

// SettleLockSQL takes the event order lock in share mode: it waits for the
// writer that holds the lock to commit, and keeps writers from drawing ids
// until the caller's transaction ends. InnoDB builds the snapshot of a
// statement by walking its list of running transactions without stopping
// commits, so a snapshot taken while two writers commit one after the
// other can miss the first and see the second.
func (Dialect) SettleLockSQL() string {
	return "SELECT id FROM event_order WHERE id = 1 LOCK IN SHARE MODE"
}

// CopiesEvents is false: a bulk insert goes by multi-row INSERTs.
func (Dialect) CopiesEvents() bool { return false }

// CopyFrom returns errors.ErrUnsupported: MySQL has no COPY.
func (Dialect) CopyFrom(context.Context, bun.Conn, string, []string, func() ([]any, error)) error {
	return errors.ErrUnsupported
}

// TextProjects does nothing: MySQL has no index of the texts.
func (Dialect) TextProjects(context.Context, *bun.DB) error { return nil }

// EventOrder does nothing: MySQL has no index of the texts.
func (Dialect) EventOrder(context.Context, *bun.DB) error { return nil }

// PendingText does nothing: no load leaves texts to be indexed after it.
func (Dialect) PendingText(context.Context, *bun.DB) error { return nil }

// TextBacklog is none: no load leaves texts to be indexed after it.
func (Dialect) TextBacklog() (indexbuild.Backlog, bool) { return indexbuild.Backlog{}, false }

// DeferIndexes returns none: MySQL commits schema changes at once, so a
// failed load could not restore them, and it keeps its indexes.
func (Dialect) DeferIndexes(context.Context, bun.IDB) ([]string, []indexbuild.Step, error) {
	return nil, nil, nil
}

// AnalyzeLoaded does nothing: InnoDB recalculates its statistics itself
// after large changes.
func (Dialect) AnalyzeLoaded(context.Context, bun.IDB, func(string) func()) error { return nil }

// PreparedOffset is OFFSET ?: MySQL takes a literal or a placeholder
// there, nothing else.
func (Dialect) PreparedOffset() string { return "OFFSET ?" }

// QueryPrepared runs stmt as bun writes it, its values in the text.
func (Dialect) QueryPrepared(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, error) {
	return db.QueryContext(ctx, stmt.Text, stmt.Args...)
}

// ClosePrepared does nothing: the driver keeps its prepared statements
// with its connections, which close with the pool.
func (Dialect) ClosePrepared() {}

// QueryPlannedOnce is QueryPrepared.
func (d Dialect) QueryPlannedOnce(ctx context.Context, db bun.IDB, stmt sqlq.Fragment) (*sql.Rows, error) {
	return d.QueryPrepared(ctx, db, stmt)
}
