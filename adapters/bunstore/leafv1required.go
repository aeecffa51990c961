package bunstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
)

// leafV1RequiredMigration is the migration that makes the columns of leaf
// format v1 required (schema/leafv1required-*.sql).
const leafV1RequiredMigration = "20261202000002"

// errOldWriterPruned is the refusal of migrateLeafV1Required: a leaf an
// older flagadmin wrote cannot be made again once its event is pruned.
var errOldWriterPruned = errors.New("the verifiable log cannot be repaired")

// migrateLeafV1Required is the migration leafV1RequiredMigration. A
// flagadmin older than leaf format v1, still writing to a database
// migrated to it, writes events without a salt and leaves of the old
// format without their tombstone: the log no longer reads. This migration
// makes the database refuse such writes: the columns NOT NULL on
// PostgreSQL and MySQL, triggers that abort the insert on SQLite (whose
// ALTER TABLE cannot change a column).
//
// Rows such a writer wrote already (since the v1 migration) are repaired
// first, under the event order lock: each event without a salt gets one,
// each leaf without a tombstone is made again from its event, at its
// index; the stored interior hashes and the checkpoints from the first
// such leaf on, which vouched for the old leaves, are deleted. A leaf
// whose event was pruned since cannot be made again: the migration then
// stops before changing anything, naming it.
//
// On PostgreSQL and SQLite it is one transaction. On MySQL, whose DDL
// commits at once, the columns are changed after the repair: a row an
// older writer adds meanwhile makes the change fail (strict mode), and
// the migration, run again, repairs it.
func migrateLeafV1Required(ctx context.Context, db *bun.DB, o migrateOptions) error {
	stmts, err := schemaStatements(ctx, db, "leafv1required-")
	if err != nil {
		return err
	}
	repair := func(ctx context.Context, tx bun.IDB) error {
		if tx.Dialect().Name() != dialect.SQLite {
			if _, err := tx.ExecContext(ctx, eventOrderSQL); err != nil {
				return err
			}
		}
		return repairOldWrites(ctx, tx, o)
	}
	if db.Dialect().Name() == dialect.MySQL {
		if err := inMigrationTx(ctx, db, repair); err != nil {
			return err
		}
		return execAll(ctx, db, stmts)
	}
	return inMigrationTx(ctx, db, func(ctx context.Context, tx bun.IDB) error {
		if err := repair(ctx, tx); err != nil {
			return err
		}
		return execAll(ctx, tx, stmts)
	})
}

// repairOldWrites gives a salt to every event without one, and makes
// again, at its index, every leaf without its tombstone (written by a
// flagadmin older than leaf format v1), in tx, which holds the event order
// lock. When it made a leaf again, it deletes the stored interior hashes
// and the checkpoints that cover that leaf.
func repairOldWrites(ctx context.Context, tx bun.IDB, o migrateOptions) error {
	var unsalted []int64
	if err := tx.NewRaw("SELECT id FROM events WHERE salt IS NULL ORDER BY id").Scan(ctx, &unsalted); err != nil {
		return err
	}
	salted := make([]stored.Event, len(unsalted))
	for i, id := range unsalted {
		salted[i] = stored.Event{ID: id, Salt: leaf.NewSalt()}
	}
	if err := saveSalts(ctx, tx, salted); err != nil {
		return err
	}
	var old []struct {
		Index   int64 `bun:"idx"`
		EventID int64 `bun:"event_id"`
		Found   bool  `bun:"found"`
	}
	err := tx.NewRaw(`SELECT l.idx, l.event_id, EXISTS (SELECT 1 FROM events e WHERE e.id = l.event_id) AS found
		FROM log_leaves l WHERE l.content IS NULL OR l.created_at IS NULL OR l.type IS NULL ORDER BY l.idx`).Scan(ctx, &old)
	if err != nil || len(old) == 0 {
		return err
	}
	for _, l := range old {
		if !l.Found {
			return &callbackError{fmt.Errorf("%w: leaf %d (event %d) was written by a flagadmin older than leaf format v1 and its event "+
				"was pruned since, so it cannot be made again; nothing was changed", errOldWriterPruned, l.Index, l.EventID)}
		}
	}
	columns := strings.Join(append(append([]string{}, stored.EventColumns...), "salt"), ", ")
	for _, l := range old {
		var rows []stored.Event
		if err := tx.NewRaw("SELECT "+columns+" FROM events WHERE id = ?", l.EventID).Scan(ctx, &rows); err != nil {
			return err
		}
		e, err := rows[0].Event()
		if err != nil {
			return fmt.Errorf("event %d: %w", l.EventID, err)
		}
		e.Salt = rows[0].Salt
		r, err := leafOf(e)
		if err != nil {
			return fmt.Errorf("event %d: %w", l.EventID, err)
		}
		_, err = tx.NewRaw("UPDATE log_leaves SET hash = ?, created_at = ?, project = ?, type = ?, content = ? WHERE idx = ?",
			r.Hash, r.CreatedAt, r.Project, r.Type, r.Content, l.Index).Exec(ctx)
		if err != nil {
			return err
		}
	}
	o.report(leafV1RequiredMigration, fmt.Sprintf("made again %d leaves written by an older flagadmin, from leaf %d", len(old), old[0].Index))
	if _, err := tx.ExecContext(ctx, "DELETE FROM log_hashes"); err != nil {
		return err
	}
	_, err = tx.NewRaw("DELETE FROM log_checkpoints WHERE size > ?", old[0].Index).Exec(ctx)
	return err
}
