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

// oldWriterEvent and oldWriterLeaf are the rows a flagadmin older than
// leaf format v1 writes for an event of id (its leaf at idx): the columns
// it knows, the event without a salt, the leaf without its tombstone.
const (
	oldWriterEvent = "INSERT INTO events (id, created_at, type, created_by, project, feature_name, data, search_payload, search_meta) " +
		"VALUES (?, 1767225600000, 'feature-updated', 'old', 'p0', 'f', '{\"on\": true}', '', '')"
	oldWriterLeaf = "INSERT INTO log_leaves (idx, event_id, hash) VALUES (?, ?, ?)"
)

// writeEvents writes n events through the store, as this version does.
func writeEvents(t *testing.T, s *bunstore.Store, n int) {
	t.Helper()
	project := "p0"
	for i := range n {
		feature := fmt.Sprintf("f%d", i)
		must(t, "Write", s.Write(context.Background(), &flagadmin.Batch{Events: []flagadmin.Event{{Type: flagadmin.EventFeatureCreated,
			CreatedBy: "eve", Project: &project, FeatureName: &feature, CreatedAt: time.Date(2026, 2, 1, 0, 0, i, 0, time.UTC)}}}))
	}
}

// TestLeafV1RequiredRefusesAnOlderWriter: on a database migrated to leaf
// format v1, the writes of a flagadmin older than it (an event without a
// salt, a leaf without its tombstone) fail, and the log still reads.
func TestLeafV1RequiredRefusesAnOlderWriter(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		writeEvents(t, s, 3)
		db := bunstore.DB(s)
		old := sha256.Sum256([]byte("v0 leaf"))
		for _, c := range []struct {
			what, stmt string
			args       []any
		}{
			{"an event without a salt", oldWriterEvent, []any{1000}},
			{"a leaf without its tombstone", oldWriterLeaf, []any{3, 999, old[:]}},
		} {
			_, err := db.ExecContext(ctx, c.stmt, c.args...)
			if err == nil {
				t.Errorf("%s: written, want it refused", c.what)
				continue
			}
			t.Logf("%s: %v", c.what, err)
		}
		leaves, err := s.LogLeaves(ctx, 0, 10)
		if err != nil || len(leaves) != 3 {
			t.Errorf("LogLeaves after the older writer's attempts: %d leaves, %v; want the 3 written", len(leaves), err)
		}
	})
}

// TestLeafV1RequiredRepairsOlderWrites: rows an older flagadmin wrote
// after the v1 migration and before this one are repaired by it: the
// event gets a salt, its leaf is made again at its index, and the
// checkpoints that vouched for the old leaf and the stored interior
// hashes are deleted; a leaf of the older writer whose event was pruned
// since cannot be made again, and the migration says so and changes
// nothing.
func TestLeafV1RequiredRepairsOlderWrites(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url, bunstore.WithoutMigrate())
		must(t, "Migrate to v1", s.Migrate(ctx, bunstore.MigrateUpTo(bunstore.LeafV1Migration)))
		writeEvents(t, s, 3)
		db := bunstore.DB(s)
		old := sha256.Sum256([]byte("v0 leaf"))
		_, err := db.ExecContext(ctx, oldWriterEvent, 1000)
		must(t, "the older writer's event", err)
		_, err = db.ExecContext(ctx, oldWriterLeaf, 3, 1000, old[:])
		must(t, "the older writer's leaf", err)
		for _, size := range []int{3, 4} {
			_, err = db.ExecContext(ctx, "INSERT INTO log_checkpoints (size, root, note, signed_at) VALUES (?, ?, ?, 1767225600000)", size, make([]byte, 32), []byte("cp\n"))
			must(t, "a checkpoint", err)
		}
		if _, err := s.LogLeaves(ctx, 0, 10); err == nil {
			t.Fatal("LogLeaves reads the older writer's leaf")
		}

		// Its event pruned since: refused, nothing changed.
		_, err = db.ExecContext(ctx, "DELETE FROM events WHERE id = 1000")
		must(t, "prune the event", err)
		err = s.Migrate(ctx)
		if err == nil || !strings.Contains(err.Error(), "leaf 3 (event 1000) was written by a flagadmin older than leaf format v1 and its event was pruned since") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Migrate with a pruned leaf of an older writer: %v", err)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM log_checkpoints"); n != 2 {
			t.Errorf("checkpoints after the refusal: %d, want the 2 stored", n)
		}
		_, err = db.ExecContext(ctx, oldWriterEvent, 1000)
		must(t, "the older writer's event again", err)

		must(t, "Migrate", s.Migrate(ctx))
		leaves, err := s.LogLeaves(ctx, 0, 10)
		must(t, "LogLeaves after the repair", err)
		var events []flagadmin.Event
		must(t, "ExportEvents", s.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error { events = append(events, e); return nil }))
		if len(leaves) != 4 || len(events) != 4 || leaves[3].EventID != 1000 {
			t.Fatalf("after the repair: %d leaves, %d events, want 4 each, leaf 3 of event 1000", len(leaves), len(events))
		}
		for i, l := range leaves {
			e := events[i]
			e.Salt = l.Salt
			if ok, err := leaf.LeafMatches(l, e); len(l.Salt) != leaf.SaltSize || !ok || err != nil || leaf.LeafOf(l) != l.Hash {
				t.Errorf("leaf %d after the repair: salt %x, matches its event %v (%v)", i, l.Salt, ok, err)
			}
		}
		var sizes []int64
		must(t, "read the checkpoints", db.NewRaw("SELECT size FROM log_checkpoints").Scan(ctx, &sizes))
		if fmt.Sprint(sizes) != "[3]" {
			t.Errorf("checkpoints after the repair: sizes %v, want only the one of 3 events, before the repaired leaf", sizes)
		}
		if _, err := db.ExecContext(ctx, oldWriterEvent, 1001); err == nil {
			t.Errorf("an older writer's event after the migration: written, want it refused")
		}
	})
}

// TestMigrateRefusesANewerSchema: a database that has migrations this
// version does not know was migrated by a newer one: Migrate (so Open, so
// serve) refuses it in one line naming them, and Schema reports them.
func TestMigrateRefusesANewerSchema(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		_, err := bunstore.DB(s).ExecContext(ctx, "INSERT INTO bun_migrations (name, group_id, migrated_at) VALUES ('20991231000000', 99, CURRENT_TIMESTAMP)")
		must(t, "record a newer migration", err)
		err = s.Migrate(ctx)
		if !errors.Is(err, bunstore.ErrNewerSchema) || !strings.Contains(err.Error(), "it has migrations 20991231000000, which this one does not know") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Migrate: got %v, want one line of ErrNewerSchema naming 20991231000000", err)
		}
		if _, err := bunstore.Open(ctx, url); !errors.Is(err, bunstore.ErrNewerSchema) {
			t.Errorf("Open: got %v, want ErrNewerSchema", err)
		}
		st, err := s.Schema(ctx)
		must(t, "Schema", err)
		if fmt.Sprint(st.Unknown) != "[20991231000000]" || len(st.Pending) != 0 {
			t.Errorf("Schema: %+v, want 20991231000000 unknown, nothing pending", st)
		}
	})
}
