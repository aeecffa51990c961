package bunstore

import (
	"context"

	"github.com/uptrace/bun"
)

// SetAfterChange installs a hook that runs inside the transaction of
// UpdateFeature, DeleteUser and Write, after the state change and before
// the event is inserted; an error from it aborts the transaction.
func SetAfterChange(s *Store, hook func(op string) error) { s.afterChange = hook }

// SetAfterEvents installs a hook that runs inside every transaction that
// appends events, once their ids are drawn and before the commit; an error
// from it aborts the transaction.
func SetAfterEvents(s *Store, hook func() error) { s.afterEvents = hook }

// SetEventOrderLock turns the event order lock off (false) or back on, to
// show what it prevents.
func SetEventOrderLock(s *Store, on bool) { s.noEventOrder = !on }

// DB returns the store's writer database, for tests that inspect the schema.
func DB(s *Store) *bun.DB { return s.db }

// MigrationCount is the number of migrations the package defines.
func MigrationCount() int { return len(newMigrations().Sorted()) }

// Recount rebuilds event_counts from the events table, as the migration
// that introduced it does for an existing database.
func Recount(s *Store) error {
	if err := execAll(context.Background(), s.db, append(backfillCounts(s.dialect), backfillDays(s.dialect)...)); err != nil {
		return err
	}
	if err := backfillCountsByProject(context.Background(), s.db); err != nil {
		return err
	}
	return backfillMonths(context.Background(), s.db)
}

// IDsMigration is the name of migration generated_ids.
const IDsMigration = "20250601000009"
