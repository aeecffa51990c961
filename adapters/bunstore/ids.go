package bunstore

import (
	"context"
	"reflect"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// User and group ids come from the database: an identity column on
// PostgreSQL, AUTO_INCREMENT on MySQL, INTEGER PRIMARY KEY AUTOINCREMENT on
// SQLite. An insert without an id gets the next one (RETURNING, or
// LastInsertId on MySQL); an insert with an id keeps it, and the next
// generated id is larger. MySQL and SQLite move their counters past an
// explicit id by themselves; PostgreSQL's identity does not, so
// raiseSequence does it after such inserts. Event ids are drawn alike
// (record.go).

// insertWithIDs inserts rows of a table whose ids the database generates:
// first those with an id, in one statement (on PostgreSQL under
// lockExplicitIDs, then raising the sequence past them), then one by one
// the rows with id 0, whose generated id is set in rows.
func insertWithIDs[T any](ctx context.Context, tx bun.IDB, rows []T, id func(T) int64) error {
	var given []T
	var largest int64
	for _, r := range rows {
		if id(r) != 0 {
			given = append(given, r)
			largest = max(largest, id(r))
		}
	}
	if len(given) > 0 {
		pg := tx.Dialect().Name() == dialect.PG
		table := tx.Dialect().Tables().Get(reflect.TypeFor[T]()).Name
		if pg {
			if err := lockExplicitIDs(ctx, tx, table); err != nil {
				return err
			}
		}
		if err := insertRows(ctx, tx, given); err != nil {
			return err
		}
		if pg {
			if err := raiseSequence(ctx, tx, table, largest); err != nil {
				return err
			}
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

// raiseSequence moves PostgreSQL's identity of table past largest, an id
// just inserted explicitly, unless it is past it already. The caller holds
// lockExplicitIDs, or for events the event order lock, so no other
// transaction draws from the sequence in between.
func raiseSequence(ctx context.Context, tx bun.IDB, table string, largest int64) error {
	_, err := tx.ExecContext(ctx, `SELECT setval(s, ?) FROM (SELECT pg_get_serial_sequence(?, 'id')::regclass AS s) q
		WHERE ? > COALESCE(pg_sequence_last_value(s), 0)`, largest, table, largest)
	return err
}

// lockExplicitIDs, on PostgreSQL, waits for the transactions that insert
// into table to end and keeps new ones out until this one ends, so that
// raiseSequence sees every id drawn and none is drawn while it runs. It is
// taken before the insert: taking it after, two such transactions would
// deadlock on each other's insert lock.
func lockExplicitIDs(ctx context.Context, tx bun.IDB, table string) error {
	_, err := tx.ExecContext(ctx, "LOCK TABLE ? IN SHARE ROW EXCLUSIVE MODE", bun.Ident(table))
	return err
}

// insertRows inserts rows (a slice of models) with one statement; none is a no-op.
func insertRows[T any](ctx context.Context, db bun.IDB, rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := db.NewInsert().Model(&rows).Exec(ctx)
	return err
}
