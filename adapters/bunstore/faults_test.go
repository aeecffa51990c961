package bunstore_test

import (
	"context"
	"database/sql/driver"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/internal/faultsql"
)

// The statements the fault tests act on, as the store sends them to
// each database (names quoted "events" or `events`, or not at all).
const (
	// eventWrites matches the statements of a transaction that appends
	// events: its INSERT into events (on PostgreSQL, INSERT ... RETURNING
	// takes the event order lock itself, by its trigger), the statement
	// that takes the event order lock before inserting (MySQL, and
	// PostgreSQL before a COPY), and the one that draws ids for a COPY
	// (PostgreSQL; the COPY itself does not pass through the faults). At
	// the commit of such a transaction its events' ids are drawn and the
	// event order lock is held.
	eventWrites = "^INSERT INTO [\"`]?events[\"`]? " +
		"|^SELECT id FROM event_order WHERE id = 1 FOR UPDATE$" +
		`|^SELECT nextval\(pg_get_serial_sequence\('events'`
	// eventOrderLocks matches the statements that take the event order
	// lock: writers' FOR UPDATE, and on MySQL the share lock the readers
	// of the log take to settle what they read.
	eventOrderLocks = `^SELECT id FROM event_order WHERE `
)

// openWithFaults opens a store on url whose pools connect through a new
// faultsql.Faults, and returns both. The store is closed when tb ends.
func openWithFaults(tb testing.TB, url string, opts ...bunstore.Option) (*bunstore.Store, *faultsql.Faults) {
	tb.Helper()
	f := faultsql.New()
	opts = append(opts, bunstore.WithConnector(func(c driver.Connector) driver.Connector { return f.Wrap(c) }))
	return open(tb, url, opts...), f
}

// eventOrderOff turns the event order lock of s (on url, opened by
// openWithFaults with f) off, to show what it prevents, and returns the
// function that turns it back on: its statements become no-ops, and on
// PostgreSQL the events_order trigger, which takes it on every INSERT
// into events, is disabled; so are the inserts into the token index's
// vocabulary, which each writer makes after its events: two writers of the
// same new token would wait for each other on its row, as they do on the
// lock.
func eventOrderOff(tb testing.TB, s *bunstore.Store, f *faultsql.Faults, url string) (on func()) {
	tb.Helper()
	removeLock := f.Add(faultsql.Rule{Match: eventOrderLocks, Rewrite: func(string) string { return "SELECT 1" }})
	removeTokens := f.Add(faultsql.Rule{Match: `^INSERT INTO search_tokens `, Rewrite: func(string) string { return "SELECT 1" }})
	remove := func() { removeLock(); removeTokens() }
	postgres := strings.HasPrefix(url, "postgres")
	trigger := func(verb string) {
		if !postgres {
			return
		}
		if _, err := bunstore.DB(s).ExecContext(context.Background(), "ALTER TABLE events "+verb+" TRIGGER events_order"); err != nil {
			tb.Fatalf("%s the events_order trigger: %v", verb, err)
		}
	}
	trigger("DISABLE")
	return func() {
		remove()
		trigger("ENABLE")
	}
}
