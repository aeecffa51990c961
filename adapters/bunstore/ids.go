package bunstore

import (
	"context"
	"reflect"

	"github.com/uptrace/bun"
)

// User and group ids come from the database: an identity column on
// PostgreSQL, AUTO_INCREMENT on MySQL, INTEGER PRIMARY KEY AUTOINCREMENT on
// SQLite. An insert without an id gets the next one (RETURNING, or
// LastInsertId on MySQL); an insert with an id keeps it, and the next
// generated id is larger. MySQL and SQLite move their counters past an
// explicit id by themselves; PostgreSQL's identity does not, so the
// dialect's RaiseIDs does it after such inserts, under its
// LockExplicitIDs. Event ids are drawn alike (record.go).

// insertWithIDs inserts rows of a table whose ids the database generates:
// first those with an id, in one statement (under d's LockExplicitIDs,
// then raising the ids past them), then one by one the rows with id 0,
// whose generated id is set in rows.
func insertWithIDs[T any](ctx context.Context, d sqlDialect, tx bun.IDB, rows []T, id func(T) int64) error {
	var given []T
	var largest int64
	for _, r := range rows {
		if id(r) != 0 {
			given = append(given, r)
			largest = max(largest, id(r))
		}
	}
	if len(given) > 0 {
		table := tx.Dialect().Tables().Get(reflect.TypeFor[T]()).Name
		if err := d.LockExplicitIDs(ctx, tx, table); err != nil {
			return err
		}
		if err := insertRows(ctx, tx, given); err != nil {
			return err
		}
		if err := d.RaiseIDs(ctx, tx, table, largest); err != nil {
			return err
		}
	}
	for i := range rows {
		if id(rows[i]) == 0 {
			if _, err := tx.NewInsert().Model(&rows[i]).Exec(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// insertRows inserts rows (a slice of models) with one statement; none is a no-op.
func insertRows[T any](ctx context.Context, db bun.IDB, rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := db.NewInsert().Model(&rows).Exec(ctx)
	return err
}
