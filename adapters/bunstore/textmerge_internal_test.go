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

// textSegments returns the number of segments of events_tokens.
func textSegments(t *testing.T, s *Store) int { t.Helper(); return segments(t, s, "events_tokens") }

// segments returns the number of segments of the FTS5 table: the second
// count of FTS5's structure record (the row of id 10 of its _data table:
// a 4-byte cookie, a 4-byte marker in its second version, then the number
// of levels and of segments, as SQLite varints).
func segments(t *testing.T, s *Store, table string) int {
	t.Helper()
	var rec []byte
	if err := s.db.QueryRowContext(context.Background(), "SELECT block FROM "+table+"_data WHERE id = 10").Scan(&rec); err != nil {
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
		t.Fatalf("structure record of %s cut short: %x", table, rec)
		return 0
	}
	varint() // levels
	return varint()
}

// TestTextBacklogMerged: the backlog's transactions each leave a segment
// in events_tokens and in the vocabulary's index, which FTS5 merges only
// as they pile up on a level; once the backlog is done both are merged
// into one segment (every query looks its terms up in each), a bounded
// part per transaction, and the pending range ends after the merge.
func TestTextBacklogMerged(t *testing.T) {
	SetTextLaterFrom(t, 1)
	SetTextBacklogBatch(t, 3)
	ctx := context.Background()
	s, err := Open(ctx, dbtest.SQLite(t), WithTextBacklogHeld())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var events []flagadmin.Event
	for i := range 100 {
		name := fmt.Sprintf("flag-%d", i)
		events = append(events, flagadmin.Event{ID: int64(i + 1), Type: flagadmin.EventFeatureUpdated, CreatedBy: "ada@example.com",
			CreatedAt: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), FeatureName: &name,
			Data: json.RawMessage(fmt.Sprintf(`{"name":"flag-%d","description":"rollout %d of the checkout %x"}`, i, i, i*7919))})
	}
	if err := s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error { return emit(events) }); err != nil {
		t.Fatal(err)
	}
	for {
		from, _, to, err := s.fillTextBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if from == to {
			break
		}
	}
	unmerged := map[string]int{"events_tokens": segments(t, s, "events_tokens"), "search_tokens_text": segments(t, s, "search_tokens_text")}
	var pending int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM events_text_pending").Scan(&pending); err != nil || pending != 1 {
		t.Fatalf("the backlog filled, not merged: %d pending ranges (%v), want 1", pending, err)
	}
	if _, err := s.mergeText(ctx); err != nil {
		t.Fatal(err)
	}
	for table, before := range unmerged {
		if n := segments(t, s, table); before < 2 || n != 1 {
			t.Errorf("%s: %d segments once filled, %d once merged; want several, then 1", table, before, n)
		}
	}
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM events_text_pending").Scan(&pending); err != nil || pending != 0 {
		t.Errorf("merged: %d pending ranges (%v), want none", pending, err)
	}
	var found []int64
	if err := s.db.NewRaw("SELECT rowid FROM events_tokens WHERE events_tokens MATCH '\"checkout\"' ORDER BY rowid").Scan(ctx, &found); err != nil || len(found) != len(events) {
		t.Errorf("events found by a token once merged: %d (%v), want %d", len(found), err, len(events))
	}
}
