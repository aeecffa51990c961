package bunstore

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/projectfigures"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
)

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

// SetProgressEvery makes a load tell how far its long steps are every n
// events, until the test ends.
func SetProgressEvery(t interface{ Cleanup(func()) }, n int64) {
	setUntilCleanup(t, &progressEvery, n)
}

// AppendBatch is how many leaves the store appends per transaction.
const AppendBatch = appendBatch

// SetTextLaterFrom makes a load of n events or more leave the full-text
// index to be filled after it, where the database can, until the test
// ends.
func SetTextLaterFrom(t interface{ Cleanup(func()) }, n int64) {
	setUntilCleanup(t, &textLaterFrom, n)
}

// SetTextBacklogBatch makes the store index the texts a load left pending
// n events a transaction, until the test ends.
func SetTextBacklogBatch(t interface{ Cleanup(func()) }, n int64) {
	setUntilCleanup(t, &textBacklogBatch, n)
}

// WithTextBacklogHeld keeps the store from filling the full-text index's
// backlog by itself: the test does, with FillTextBatch.
func WithTextBacklogHeld() Option { return func(o *options) { o.textBacklogHeld = true } }

// FillTextBatch indexes the next batch of pending texts, and reports
// whether it did; with none left to index, it merges the index and ends
// the pending range instead, and reports false.
func FillTextBatch(ctx context.Context, s *Store) (more bool, err error) {
	from, _, to, err := s.fillTextBatch(ctx)
	if err != nil || from < to {
		return err == nil, err
	}
	_, err = s.mergeText(ctx)
	return false, err
}

// TextIndexRows returns how many rows events_tokens counts: the first
// varint of FTS5's averages record (the row of id 1 of events_tokens_data),
// which each insert raises and each delete lowers.
func TextIndexRows(ctx context.Context, s *Store) (int64, error) {
	var rec []byte
	if err := s.db.QueryRowContext(ctx, "SELECT block FROM events_tokens_data WHERE id = 1").Scan(&rec); err != nil {
		return 0, err
	}
	if len(rec) == 0 {
		return 0, nil // nothing indexed yet
	}
	var v int64
	for _, b := range rec {
		v = v<<7 | int64(b&0x7f)
		if b&0x80 == 0 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("averages record of events_tokens cut short: %x", rec)
}

// SetTextBacklogRetry makes the store fill the backlog again d after a
// failure, until the test ends.
func SetTextBacklogRetry(t interface{ Cleanup(func()) }, d time.Duration) {
	setUntilCleanup(t, &textBacklogRetry, d)
}

// SetTextLaterBatch makes a follower's batch of n events or more leave
// their texts to the backlog, until the test ends.
func SetTextLaterBatch(t interface{ Cleanup(func()) }, n int) {
	setUntilCleanup(t, &textLaterBatch, n)
}

// SetTextBacklogQuiet makes the backlog wait d after a follower's batch
// that left its texts to it, until the test ends.
func SetTextBacklogQuiet(t interface{ Cleanup(func()) }, d time.Duration) {
	setUntilCleanup(t, &textBacklogQuiet, d)
}

// setUntilCleanup sets *p to v until the test of t ends.
func setUntilCleanup[T any](t interface{ Cleanup(func()) }, p *T, v T) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

// PageKey describes a page by its total and its events, ids left out (two
// stores may number the same events differently only if ids were
// skipped).
func PageKey(t *testing.T, p flagadmin.EventPage) string {
	t.Helper()
	for i := range p.Events {
		p.Events[i].ID = 0
	}
	b, err := json.Marshal(p.Events)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("total %d, %d events: %s", p.Total, len(p.Events), b)
}

// SetTextMergeQuiet makes the store merge its full-text index d after its
// last write that indexed texts, until the test ends.
func SetTextMergeQuiet(t interface{ Cleanup(func()) }, d time.Duration) {
	setUntilCleanup(t, &textMergeQuiet, d)
}

// TextIndexSegments returns how many segments each of SQLite's FTS5
// tables holds, events_tokens' and the vocabulary's (search_tokens_text):
// the segments their b-tree tables (%_idx) name.
func TextIndexSegments(ctx context.Context, s *Store) (events, vocabulary int, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(DISTINCT segid) FROM events_tokens_idx),
		(SELECT COUNT(DISTINCT segid) FROM search_tokens_text_idx)`).Scan(&events, &vocabulary)
	return events, vocabulary, err
}
