package bunstore

import (
	"context"

	"github.com/jackc/pgx/v5"
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
// The lock is the last one a transaction takes before store_versions
// (version.go), after its project_stats, project_last_events and
// event_counts rows, so it adds no deadlock: its holder waits for nothing
// but a store_versions row, whose holder waits for nothing. It is held for
// the events' INSERT, the version bump and the commit: writers of events
// commit one at a time (BENCHMARKS.md has the cost).
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

// lockEventOrder takes the event order lock in tx, on PostgreSQL and
// MySQL, right before the transaction draws event ids.
func (s *Store) lockEventOrder(ctx context.Context, tx bun.IDB) error {
	if s.dialect == dialect.SQLite || s.noEventOrder {
		return nil
	}
	var id int
	return tx.QueryRowContext(ctx, eventOrderSQL).Scan(&id)
}

// lockEventOrderPgx is lockEventOrder in a pgx transaction (the COPY path).
func (s *Store) lockEventOrderPgx(ctx context.Context, tx pgx.Tx) error {
	if s.noEventOrder {
		return nil
	}
	var id int
	return tx.QueryRow(ctx, eventOrderSQL).Scan(&id)
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
