package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Settled ids: commit order is id order.
//
// Event ids come from an identity (PostgreSQL) or AUTO_INCREMENT (MySQL)
// column, drawn when a row is inserted, and a transaction commits later.
// Two writers could draw 5 and 6 and commit 6 first: a reader following
// the log with id > last (ExportEvents) would read 6, move past 5, and
// never see it. So every transaction that appends events locks the one row
// of event_order right before it draws its events' ids, and holds the lock
// until it commits or rolls back. Ids are then drawn by one transaction at
// a time, each after the one before has ended: when a reader sees id n
// committed, every smaller id is either committed and visible to it too,
// or was rolled back and will never appear (a gap). SQLite needs no lock:
// its single writer connection runs one transaction at a time.
//
// Writers of events commit one at a time, so the time the lock is held is
// the ceiling of their throughput; it is held for two round trips, the
// INSERT and the COMMIT:
//   - On PostgreSQL the INSERT (or COPY) into events takes the lock itself:
//     a statement trigger, events_order (migration event_order_trigger),
//     locks the row before the statement draws its first id. No path that
//     writes events can forget it, and it costs no round trip of its own.
//   - On MySQL, which has no statement triggers, lockEventOrder takes it
//     right before the INSERT.
//   - The transaction raises the version (version.go) right before, not
//     after the INSERT (prepareDraw), so no statement runs between the
//     INSERT and the COMMIT.
//
// The lock is the last one a transaction takes, after its project_stats,
// project_last_events, event_counts and store_versions rows, so it adds no
// deadlock: its holder waits for nothing more.
//
// A better-scaling alternative on PostgreSQL alone would store each
// event's transaction id and have readers stop at the oldest running one
// (pg_snapshot_xmin); MySQL has no portable equivalent, and one rule on
// both databases is worth more here than the throughput of concurrent
// event writers.

// eventOrderSchema is the lock's table: one row.
var eventOrderSchema = []table{{name: "event_order", body: `
		id SMALLINT NOT NULL PRIMARY KEY`}}

// eventOrderSQL takes the lock in the caller's transaction.
const eventOrderSQL = "SELECT id FROM event_order WHERE id = 1 FOR UPDATE"

// prepareDraw readies tx, a write transaction, to draw event ids: it raises
// the version (once per transaction, see bumpVersionOnce) and, on MySQL,
// takes the event order lock. On PostgreSQL the INSERT that follows takes
// the lock (events_order).
func (s *Store) prepareDraw(ctx context.Context, tx bun.IDB) error {
	if err := s.bumpVersionOnce(ctx, tx); err != nil {
		return err
	}
	if s.dialect != dialect.MySQL || s.noEventOrder {
		return nil
	}
	return s.lockEventOrder(ctx, tx)
}

// lockEventOrder takes the event order lock in tx now, on PostgreSQL and
// MySQL: the import's Load takes it before anything else.
func (s *Store) lockEventOrder(ctx context.Context, tx bun.IDB) error {
	if s.dialect == dialect.SQLite {
		return nil
	}
	var id int
	return tx.QueryRowContext(ctx, eventOrderSQL).Scan(&id)
}

// eventOrderTrigger is PostgreSQL's events_order trigger and its function,
// which takes the lock before an INSERT or COPY into events draws an id.
// The table is found on the writer's search_path, as every statement of
// the store finds its tables.
var eventOrderTrigger = []string{
	`CREATE OR REPLACE FUNCTION flagadmin_lock_event_order() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM 1 FROM event_order WHERE id = 1 FOR UPDATE;
		RETURN NULL;
	END $$`,
	"DROP TRIGGER IF EXISTS events_order ON events",
	"CREATE TRIGGER events_order BEFORE INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION flagadmin_lock_event_order()",
}

// migrateEventOrderTrigger is migration event_order_trigger: the trigger on
// PostgreSQL, nothing elsewhere.
func migrateEventOrderTrigger(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() != dialect.PG {
		return nil
	}
	return execAll(ctx, db, eventOrderTrigger)
}

// unmigrateEventOrderTrigger drops the trigger and its function.
func unmigrateEventOrderTrigger(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() != dialect.PG {
		return nil
	}
	return execAll(ctx, db, []string{"DROP TRIGGER IF EXISTS events_order ON events", "DROP FUNCTION IF EXISTS flagadmin_lock_event_order()"})
}

// migrateEventOrder is migration event_order: the table and its row. It
// can run again after a failure part-way (MySQL cannot roll DDL back).
func migrateEventOrder(ctx context.Context, db *bun.DB) error {
	if err := createSchema(ctx, db, eventOrderSchema); err != nil {
		return err
	}
	var n int
	if err := db.NewRaw("SELECT COUNT(*) FROM event_order").Scan(ctx, &n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, "INSERT INTO event_order (id) VALUES (1)")
	return err
}

// unmigrateEventOrder drops event_order.
func unmigrateEventOrder(ctx context.Context, db *bun.DB) error {
	return dropSchema(ctx, db, eventOrderSchema)
}

// afterIDs runs the test hook afterEvents, if set, once a transaction has
// drawn its events' ids and before it commits.
func (s *Store) afterIDs() error {
	if s.afterEvents == nil {
		return nil
	}
	if err := s.afterEvents(); err != nil {
		return &callbackError{err}
	}
	return nil
}

// LastEventID returns the id of the newest committed event, 0 when there
// is none: where a live stream's feed starts (adapters/eventfeed). Every
// smaller id is settled (see above).
func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var id int64
	if err := s.rdb.DB.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM events").Scan(&id); err != nil {
		return 0, s.fail("last event id", err)
	}
	return id, nil
}
