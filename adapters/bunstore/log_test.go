package bunstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestLogMigrationMakesTheLeavesOfStoredEvents drops the log's tables of
// a database that holds events, as a database made before the log was,
// and migrates it again: the migration makes one leaf per event, in id
// order, each the event's flagadmin.LeafHash, and the log goes on from
// there.
func TestLogMigrationMakesTheLeavesOfStoredEvents(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		b := &flagadmin.Batch{}
		for i := range 30 {
			b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ådå",
				CreatedAt: time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC), FeatureName: ptrTo(fmt.Sprintf("f%d", i)),
				Data: json.RawMessage(fmt.Sprintf(`{"b": %d, "a": 1e2}`, i)), Tags: []flagadmin.Tag{{Type: "simple", Value: "x"}}})
		}
		must(t, "Write", s.Write(ctx, b))
		db := bunstore.DB(s)
		for _, stmt := range []string{
			"DROP TABLE log_leaves", "DROP TABLE log_hashes", "DROP TABLE log_checkpoints",
			"DROP TABLE log_holds", "DROP TABLE log_prune", "DELETE FROM bun_migrations WHERE name IN ('20261127000001', '20261127000003')",
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		must(t, "Migrate", s.Migrate(ctx))
		must(t, "Write after", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{{Type: flagadmin.EventFeatureCreated, CreatedBy: "eve", CreatedAt: time.Now()}}}))
		var events []flagadmin.Event
		must(t, "ExportEvents", s.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error { events = append(events, e); return nil }))
		leaves, err := s.LogLeaves(ctx, 0, 100)
		must(t, "LogLeaves", err)
		size, err := s.LogSize(ctx)
		must(t, "LogSize", err)
		if len(leaves) != len(events) || size != int64(len(events)) {
			t.Fatalf("got %d leaves, size %d, for %d events", len(leaves), size, len(events))
		}
		for i, e := range events {
			want, err := flagadmin.LeafHash(e)
			must(t, "LeafHash", err)
			if leaves[i].Index != int64(i) || leaves[i].EventID != e.ID || leaves[i].Hash != want {
				t.Errorf("leaf %d: got index %d, event %d, hash %x; want event %d, hash %x", i, leaves[i].Index, leaves[i].EventID, leaves[i].Hash, e.ID, want)
			}
		}
	})
}

func ptrTo[T any](v T) *T { return &v }
