package bunstore_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// v0Release is the last migration of the release before leaf format v1.
const v0Release = "20261127000004"

// v0Events is how many events the database of v0Log holds: more than
// the rebuild reads at a time (5000), so that it reports its progress
// twice.
const v0Events = 5003

// v0Log opens a database as the release before leaf format v1 left it:
// its migrations only, v0Events events without salts written by that
// release (rows of its schema, event i of id 2i), a leaf per event of the
// old format, stored interior hashes and a signed checkpoint.
func v0Log(t *testing.T, url string) *bunstore.Store {
	t.Helper()
	ctx := context.Background()
	s := open(t, url, bunstore.WithoutMigrate())
	must(t, "Migrate to the release before v1", s.Migrate(ctx, bunstore.MigrateUpTo(v0Release)))
	db := bunstore.DB(s)
	const chunk = 250
	for first := 1; first <= v0Events; first += chunk {
		var events, leaves []string
		var eventArgs, leafArgs []any
		for i := first; i < first+chunk && i <= v0Events; i++ {
			var project, data, tags any
			if i%3 != 0 {
				project = fmt.Sprintf("p%d", i%2)
			}
			if i%2 == 0 {
				data = fmt.Sprintf(`{"n": %d, "name": "f%d", "on": true}`, i, i)
				tags = `[{"type":"simple","value":"x"},{"type":"area","value":"web","color":"#34A853"}]`
			}
			events = append(events, "(?, ?, ?, 'ådå', ?, ?, ?, ?, '', '')")
			eventArgs = append(eventArgs, i*2, int64(1767225600000+i*60000+i), flagadmin.EventFeatureUpdated, project, fmt.Sprintf("f%d", i), data, tags)
			old := sha256.Sum256([]byte(fmt.Sprintf("v0 leaf %d", i)))
			leaves = append(leaves, "(?, ?, ?)")
			leafArgs = append(leafArgs, i-1, i*2, old[:])
		}
		_, err := db.ExecContext(ctx, "INSERT INTO events (id, created_at, type, created_by, project, feature_name, data, tags, search_payload, search_meta) VALUES "+
			strings.Join(events, ", "), eventArgs...)
		must(t, "insert v0 events", err)
		_, err = db.ExecContext(ctx, "INSERT INTO log_leaves (idx, event_id, hash) VALUES "+strings.Join(leaves, ", "), leafArgs...)
		must(t, "insert v0 leaves", err)
	}
	if strings.HasPrefix(url, "postgres") { // as the release's writes did: ids are drawn above the given ones
		_, err := db.ExecContext(ctx, "SELECT setval(pg_get_serial_sequence('events', 'id'), ?)", 2*v0Events)
		must(t, "raise the events' identity", err)
	}
	_, err := db.ExecContext(ctx, "INSERT INTO log_hashes (level, idx, hash) VALUES (1, 0, ?), (1, 1, ?)", make([]byte, 32), make([]byte, 32))
	must(t, "insert v0 interior hashes", err)
	_, err = db.ExecContext(ctx, "INSERT INTO log_checkpoints (size, root, note, signed_at) VALUES (?, ?, ?, 1767225600000)", v0Events, make([]byte, 32), []byte("old\n"))
	must(t, "insert a v0 checkpoint", err)
	return s
}

// count returns the number of rows of query.
func count(t *testing.T, s *bunstore.Store, query string) int64 {
	t.Helper()
	var n int64
	must(t, query, bunstore.DB(s).QueryRowContext(context.Background(), query).Scan(&n))
	return n
}

// TestLeafV1MigrationRebuildsTheLog migrates a database of the release
// before leaf format v1: every event gets a salt of its own, every leaf,
// at its index, its v1 hash and tombstone, which its event matches
// (leaf.LeafMatches) and its fields hash to (leaf.LeafOf); the
// old interior hashes and checkpoints are gone, the rebuild reports its
// progress, and the log goes on.
func TestLeafV1MigrationRebuildsTheLog(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := v0Log(t, url)
		var progress []string
		must(t, "Migrate", s.Migrate(ctx, bunstore.WithProgress(func(m bunstore.MigrationStep) {
			if m.Name == bunstore.LeafV1Migration && m.Progress != "" {
				progress = append(progress, m.Progress)
			}
		})))
		if want := fmt.Sprintf("[rebuilt 5000 of %d leaves rebuilt %d of %d leaves]", v0Events, v0Events, v0Events); fmt.Sprint(progress) != want {
			t.Errorf("progress of the rebuild: got %q, want %s", progress, want)
		}
		must(t, "Write after", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{{Type: flagadmin.EventFeatureCreated, CreatedBy: "eve", CreatedAt: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}}}))
		var events []flagadmin.Event
		must(t, "ExportEvents", s.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error { events = append(events, e); return nil }))
		leaves, err := s.LogLeaves(ctx, 0, 2*v0Events)
		must(t, "LogLeaves", err)
		if len(events) != v0Events+1 || len(leaves) != len(events) {
			t.Fatalf("got %d leaves for %d events, want %d of each", len(leaves), len(events), v0Events+1)
		}
		salts := map[string]bool{}
		for i, l := range leaves {
			e := events[i]
			if l.Index != int64(i) || l.EventID != e.ID || i < v0Events && e.ID != int64(2*(i+1)) {
				t.Fatalf("leaf %d: got index %d, event %d; want the leaf of event %d at its index", i, l.Index, l.EventID, e.ID)
			}
			if len(l.Salt) != leaf.SaltSize || salts[string(l.Salt)] {
				t.Errorf("leaf %d: salt %x, want %d bytes of its own", i, l.Salt, leaf.SaltSize)
			}
			salts[string(l.Salt)] = true
			e.Salt = l.Salt
			if ok, err := leaf.LeafMatches(l, e); !ok || err != nil {
				t.Errorf("leaf %d: its event does not match it (%v)", i, err)
			}
			if leaf.LeafOf(l) != l.Hash {
				t.Errorf("leaf %d: LeafOf %x, hash %x", i, leaf.LeafOf(l), l.Hash)
			}
		}
		if n := count(t, s, "SELECT COUNT(*) FROM log_hashes"); n != 0 {
			t.Errorf("interior hashes of the old leaves: %d left, want none", n)
		}
		if _, err := s.LatestCheckpoint(ctx); !errors.Is(err, flagadmin.ErrNotFound) {
			t.Errorf("LatestCheckpoint after the rebuild: got %v, want ErrNotFound (the old one is gone)", err)
		}
		// Running the migrations again changes nothing.
		must(t, "Migrate again", s.Migrate(ctx))
		again, err := s.LogLeaves(ctx, 0, 2*v0Events)
		must(t, "LogLeaves", err)
		for i := range again {
			if again[i].Hash != leaves[i].Hash || string(again[i].Salt) != string(leaves[i].Salt) {
				t.Errorf("leaf %d after migrating again: changed", i)
			}
		}
	})
}

// TestLeafV1MigrationRefusesPrunedLeaves: a database whose log has a leaf
// whose event was pruned before leaf format v1 cannot be rebuilt (a v1
// leaf commits to the event's content): the migration stops with one
// line naming the leaf, and leaves the database as it was.
func TestLeafV1MigrationRefusesPrunedLeaves(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := v0Log(t, url)
		db := bunstore.DB(s)
		for _, stmt := range []string{"UPDATE log_leaves SET pruned = TRUE WHERE idx IN (2, 3)", "DELETE FROM events WHERE id IN (6, 8)"} {
			_, err := db.ExecContext(ctx, stmt)
			must(t, stmt, err)
		}
		hashes := func() string {
			var rows []struct {
				Idx  int64  `bun:"idx"`
				Hash []byte `bun:"hash"`
			}
			must(t, "read the leaves", db.NewRaw("SELECT idx, hash FROM log_leaves ORDER BY idx").Scan(ctx, &rows))
			return fmt.Sprint(rows)
		}
		before := hashes()
		err := s.Migrate(ctx)
		if err == nil {
			t.Fatal("Migrate: got no error")
		}
		msg := err.Error()
		t.Logf("the refusal: %s", msg)
		for _, want := range []string{"cannot be rebuilt under leaf format v1", "2 of its leaves, the first leaf 2 (event 6), are of events pruned"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q: want it to say %q", msg, want)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("error %q: want one line", msg)
		}
		if got := hashes(); got != before {
			t.Errorf("leaves after the refusal: changed")
		}
		if n := count(t, s, "SELECT COUNT(*) FROM log_hashes") + count(t, s, "SELECT COUNT(*) FROM log_checkpoints"); n != 3 {
			t.Errorf("interior hashes and checkpoints after the refusal: %d, want the 3 stored", n)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM bun_migrations WHERE name = '"+bunstore.LeafV1Migration+"'"); n != 0 {
			t.Errorf("the migration is recorded as applied")
		}
		if _, err := db.ExecContext(ctx, "SELECT salt FROM events"); err == nil {
			t.Errorf("events has a salt column after the refusal, want the schema as it was")
		}
	})
}
