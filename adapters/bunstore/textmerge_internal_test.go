package bunstore

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/dialects/sqlite"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestTextIndexMergedAfterLoad loads events into a SQLite store with a
// pending-terms size so small that the fill of events_tokens writes a
// segment every few events, and checks that Load leaves the index in one
// segment (a loaded index's many segments made the writes after the load
// wait for their merges) that still finds the events by their text.
func TestTextIndexMergedAfterLoad(t *testing.T) {
	ctx := context.Background()
	refill := sqlite.TextRefill
	t.Cleanup(func() { sqlite.TextRefill = refill })
	sqlite.TextRefill.Before = "INSERT INTO events_tokens (events_tokens, rank) VALUES ('hashsize', 1024)"

	s, err := Open(ctx, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	project := "default"
	err = s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error {
		var events []flagadmin.Event
		for i := range 400 {
			name := fmt.Sprintf("flag-%d", i)
			events = append(events, flagadmin.Event{ID: int64(i + 1), Type: flagadmin.EventFeatureUpdated, CreatedBy: "ada@example.com",
				CreatedAt: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), Project: &project, FeatureName: &name,
				Data: json.RawMessage(fmt.Sprintf(`{"name":"flag-%d","description":"rollout %d of the checkout"}`, i, i))})
		}
		return emit(events)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := textSegments(t, s); n != 1 {
		t.Errorf("after Load: %d segments in events_tokens, want 1", n)
	}
	var found []int64
	if err := s.db.NewRaw("SELECT rowid FROM events_tokens WHERE events_tokens MATCH '\"rollout 7 of\"'").Scan(ctx, &found); err != nil || len(found) != 1 || found[0] != 8 {
		t.Errorf("events found by their text after the merge: %v (%v), want [8]", found, err)
	}
}

// textSegments returns the number of segments of events_tokens: the second
// count of FTS5's structure record (the row of id 10 of events_tokens_data:
// a 4-byte cookie, a 4-byte marker in its second version, then the number
// of levels and of segments, as SQLite varints).
func textSegments(t *testing.T, s *Store) int {
	t.Helper()
	var rec []byte
	if err := s.db.QueryRowContext(context.Background(), "SELECT block FROM events_tokens_data WHERE id = 10").Scan(&rec); err != nil {
		t.Fatal(err)
	}
	i := 4
	if len(rec) >= 8 && string(rec[4:8]) == "\xff\x00\x00\x01" {
		i = 8
	}
	varint := func() int {
		v := 0
		for ; i < len(rec); i++ {
			v = v<<7 | int(rec[i]&0x7f)
			if rec[i]&0x80 == 0 {
				i++
				return v
			}
		}
		t.Fatalf("structure record of events_tokens cut short: %x", rec)
		return 0
	}
	varint() // levels
	return varint()
}
