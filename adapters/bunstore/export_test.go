package bunstore

import (
	"context"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/projectfigures"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// hooks returns the store's test hooks, adding them.
func (s *Store) hooks() *testHooks {
	if s.test == nil {
		s.test = &testHooks{}
	}
	return s.test
}

// SetAfterChange installs a hook that runs inside the transaction of
// every write (UpdateFeature, DeleteUser, DeleteToken, Write, ...), after
// its state change and before its events are recorded, with the
// operation's name; an error from it aborts the transaction.
func SetAfterChange(s *Store, hook func(op string) error) { s.hooks().afterChange = hook }

// SetAfterEvents installs a hook that runs inside every transaction that
// appends events, once their ids are drawn and before the commit; an error
// from it aborts the transaction.
func SetAfterEvents(s *Store, hook func() error) { s.hooks().afterEvents = hook }

// SetAfterRecord installs a hook that runs at the end of every write
// transaction, with every lock it takes held, right before its commit,
// with the operation's name; an error from it aborts the transaction.
func SetAfterRecord(s *Store, hook func(op string) error) { s.hooks().afterRecord = hook }

// SetEventOrderLock turns the event order lock off (false) or back on, to
// show what it prevents: the statement that takes it, and on PostgreSQL
// the events_order trigger.
func SetEventOrderLock(t testing.TB, s *Store, on bool) {
	t.Helper()
	s.hooks().eventOrderOff = !on
	if s.sqlDialect.Name() != dialect.PG {
		return
	}
	verb := map[bool]string{true: "ENABLE", false: "DISABLE"}[on]
	if _, err := s.db.ExecContext(context.Background(), "ALTER TABLE events "+verb+" TRIGGER events_order"); err != nil {
		t.Fatalf("%s the events_order trigger: %v", verb, err)
	}
}

// DB returns the store's writer database, for tests that inspect the schema.
func DB(s *Store) *bun.DB { return s.db }

// ReaderDB returns the store's pool of reads: DB's, except on a SQLite
// file.
func ReaderDB(s *Store) *bun.DB { return s.rdb }

// Baseline is the name of the baseline migration.
const Baseline = baseline

// MigrationCount is the number of migrations the package defines.
// The count does not depend on the dialect, which only the migrations' runs use.
func MigrationCount() int { return len(newMigrations(nil, nil, migrateOptions{}).Sorted()) }

// FreshColumns is the fresh_<type> column of each feature type.
var FreshColumns = projectfigures.FreshColumns

// SchemaFile is the baseline schema of a database: postgres, mysql or
// sqlite.
func SchemaFile(name string) string {
	b, err := schemaFiles.ReadFile("schema/" + name + ".sql")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// AppendEventsBare appends events in a transaction that takes the event
// order lock, inserts them and commits, and does nothing else (no
// counters, no leaves of the verifiable log): the cheapest writer that
// follows the lock's rule, for the tests that need the lock to change
// hands as fast as it can. The store's log is incomplete after it.
func AppendEventsBare(ctx context.Context, s *Store, events []flagadmin.Event) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		rows := make([]stored.Event, len(events))
		for i, e := range events {
			e.Salt = leaf.NewSalt()
			r, err := stored.EventOf(e)
			if err != nil {
				return err
			}
			r.ID = 0
			rows[i] = r
		}
		if err := s.lockEventOrder(ctx, tx); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(&rows).Returning("").Exec(ctx)
		return err
	})
}
