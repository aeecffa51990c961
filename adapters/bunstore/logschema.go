package bunstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// logMigration is the name of the migration that adds the verifiable log
// and its retention: the tables of schema/log-*.sql and the leaves of
// the events a database already holds.
const logMigration = "20261127000001"

// migrateLog is the log's migration. It is safe to run again after a
// failure part-way: the tables are created if missing, and the leaves
// rebuilt from the events in one transaction
// that first takes the event order lock, so that no writer of an older
// version appends an event meanwhile.
func migrateLog(ctx context.Context, db *bun.DB) error {
	stmts, err := schemaStatements(ctx, db, "log-")
	if err != nil {
		return err
	}
	return inMigrationTx(ctx, db, func(ctx context.Context, tx bun.IDB) error {
		if err := execAll(ctx, tx, stmts); err != nil {
			return err
		}
		return backfillLeaves(ctx, tx)
	})
}

// logSizeMigration is the name of the migration that drops log_state: the
// log's size is read from its leaves since (schema/logsize-*.sql).
const logSizeMigration = "20261127000003"

// migrateLogSize is the migration logSizeMigration; its statements may
// run again.
func migrateLogSize(ctx context.Context, db *bun.DB) error {
	stmts, err := schemaStatements(ctx, db, "logsize-")
	if err != nil {
		return err
	}
	return inMigrationTx(ctx, db, func(ctx context.Context, tx bun.IDB) error { return execAll(ctx, tx, stmts) })
}

// backfillBatch is how many events the migration reads at a time.
const backfillBatch = 5000

// backfillLeaves makes the leaves of every stored event, in id order, and
// sets the log's size (log_state, until logSizeMigration drops it), under
// the event order lock: what the log would hold had it been kept from the
// first event.
func backfillLeaves(ctx context.Context, tx bun.IDB) error {
	if tx.Dialect().Name() != dialect.SQLite {
		if _, err := tx.ExecContext(ctx, eventOrderSQL); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM log_leaves"); err != nil {
		return err
	}
	var size, after int64
	for {
		var rows []stored.Event
		err := tx.NewRaw("SELECT "+strings.Join(stored.EventColumns, ", ")+" FROM events WHERE id > ? ORDER BY id LIMIT ?", after, backfillBatch).Scan(ctx, &rows)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		leaves := make([]leafRow, len(rows))
		for i, r := range rows {
			e, err := r.Event()
			if err != nil {
				return fmt.Errorf("event %d: %w", r.ID, err)
			}
			hash, err := flagadmin.LeafHash(e)
			if err != nil {
				return fmt.Errorf("event %d: %w", r.ID, err)
			}
			leaves[i] = leafRow{Index: size + int64(i), EventID: r.ID, Hash: hash[:]}
		}
		if err := insertLeafRows(ctx, tx, leaves); err != nil {
			return err
		}
		size += int64(len(rows))
		after = rows[len(rows)-1].ID
	}
	_, err := tx.ExecContext(ctx, "UPDATE log_state SET size = ? WHERE id = 1", size)
	return err
}
