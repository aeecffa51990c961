package bunstore

import (
	"context"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
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
// show what it prevents: on MySQL the statement that takes it, on
// PostgreSQL the events_order trigger.
func SetEventOrderLock(t testing.TB, s *Store, on bool) {
	t.Helper()
	s.noEventOrder = !on
	if s.dialect != dialect.PG {
		return
	}
	verb := map[bool]string{true: "ENABLE", false: "DISABLE"}[on]
	if _, err := s.db.ExecContext(context.Background(), "ALTER TABLE events "+verb+" TRIGGER events_order"); err != nil {
		t.Fatalf("%s the events_order trigger: %v", verb, err)
	}
}

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

// SetLastEventShards turns the spreading of project_last_events over rows
// off (false: every writer raises row 0) or back on, to measure it.
func SetLastEventShards(s *Store, on bool) { s.oneLastEventRow = !on }

// SetDaySeek turns the day seek of large offsets off (false: pages read
// past the offset on the index) or back on, to measure it.
func SetDaySeek(s *Store, on bool) { s.noDaySeek = !on }

// SetPreparedPages turns the prepared page statements off (false: values
// written into the SQL text) or back on, to measure them.
func SetPreparedPages(s *Store, on bool) { s.literalPages = !on }
