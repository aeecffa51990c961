package sqlite

import (
	"context"

	"github.com/uptrace/bun"
)

// The events out of creation order: events_out_of_order holds the id of
// every event that an event with a smaller id is newer than (a larger
// created_at), so that a free-text query whose matches are all below the
// smallest of them reads its page in id order from the full-text index,
// without their rows (textindex.FindPage). A log written in the order of
// its creation leaves it empty.
//
// The writer records the out-of-order events among those it inserts
// (orderInserted: indexbuild.Backlog.Order), a load all of them after its
// index build (orderAll: indexbuild.Step), the migration that makes the
// table those already stored. Triggers follow a change made in the
// database: a changed id or created_at records the event (the smaller of
// its ids, so that every event above it is read as out of order: the
// change may have put it out of order with any of them), and a deleted
// event's entry goes with it (its pairs out of order go with it).
//
// An entry is never wrong to have: the table may hold more than the
// events out of order (an event whose newer predecessor retention
// removed), which only sends their queries to the page's rows.

// orderAll records every event out of creation order: in descending
// created_at, the smallest id of the events strictly newer (a window
// over the covering index events_created, one pass: 0.8 s for 1,000,000
// events in Debian's sqlite3 shell, 7 s through modernc as a migration)
// is below the event's own.
const orderAll = `INSERT OR IGNORE INTO events_out_of_order (id)
SELECT id FROM (SELECT id, min(id) OVER (ORDER BY created_at DESC RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS newer FROM events)
WHERE newer < id`

// orderInserted records the events out of creation order among those
// above an id, its three placeholders (the writer's events, just inserted
// above every other stored id), as orderAll over those events and the
// events newer than the oldest of them (every event newer than one of
// them is one of those): for events inserted in creation order, about
// themselves. The oldest is read from their rows (NOT INDEXED: as
// min(created_at), SQLite walked events_created from its start to the
// first of them, the whole index for the newest events). The events of
// the oldest's creation time stored before them are left out: many
// events share one when Unleash writes them in one transaction, and a
// follower's batch read them all again (24,600 against 38,500 events/s
// caught up). The two ranges of events_created are two arms: as one OR,
// SQLite may scan the whole index.
const orderInserted = `WITH o AS MATERIALIZED (SELECT min(created_at) AS oldest FROM events NOT INDEXED WHERE id > ?)
INSERT OR IGNORE INTO events_out_of_order (id)
SELECT id FROM (SELECT id, min(id) OVER (ORDER BY created_at DESC RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS newer FROM (
	SELECT id, created_at FROM events WHERE created_at > (SELECT oldest FROM o)
	UNION ALL SELECT id, created_at FROM events WHERE created_at = (SELECT oldest FROM o) AND id > ?))
WHERE id > ? AND newer < id`

// orderStatements make events_out_of_order, its triggers, and fill it
// (orderAll). Every statement may run again.
var orderStatements = []string{
	"CREATE TABLE IF NOT EXISTS events_out_of_order (id INTEGER NOT NULL PRIMARY KEY)",
	`CREATE TRIGGER IF NOT EXISTS events_out_of_order_update AFTER UPDATE OF id, created_at ON events BEGIN
	INSERT OR IGNORE INTO events_out_of_order (id) VALUES (min(old.id, new.id));
END`,
	`CREATE TRIGGER IF NOT EXISTS events_out_of_order_delete AFTER DELETE ON events BEGIN
	DELETE FROM events_out_of_order WHERE id = old.id;
END`,
	orderAll,
}

// EventOrder makes events_out_of_order (orderStatements), in the
// transaction of the migrations, which db is in: a failure leaves the
// schema as it was.
func (Dialect) EventOrder(ctx context.Context, db *bun.DB) error {
	for _, stmt := range orderStatements {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}
