package bunstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// lateAndEarly dates n events a minute apart, but for a few late ones
// dated before the three that precede them, a few early ones dated after
// the two that follow them, and a few of the same minute as the one
// before them (in order).
func lateAndEarly() func(i int) time.Time {
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	return func(i int) time.Time {
		minute := func(m int) time.Time { return at.Add(time.Duration(m) * time.Minute) }
		switch {
		case i%53 == 7:
			return minute(i - 3).Add(-time.Second)
		case i%71 == 3:
			return minute(i + 2).Add(time.Second)
		case i%37 == 5:
			return minute(i - 1)
		}
		return minute(i)
	}
}

// outOfOrder returns the ids of s's stored events that an event with a
// smaller id is newer than (created_at), computed here from every event,
// and those events_out_of_order records.
func outOfOrder(t *testing.T, s *Store) (want, recorded []int64) {
	t.Helper()
	ctx := context.Background()
	var rows []struct {
		ID        int64 `bun:"id"`
		CreatedAt int64 `bun:"created_at"`
	}
	if err := s.db.NewRaw("SELECT id, created_at FROM events ORDER BY id").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	newest := int64(-1 << 63)
	for _, r := range rows {
		if r.CreatedAt < newest {
			want = append(want, r.ID)
		}
		newest = max(newest, r.CreatedAt)
	}
	if err := s.db.NewRaw("SELECT id FROM events_out_of_order ORDER BY id").Scan(ctx, &recorded); err != nil {
		t.Fatal(err)
	}
	return want, recorded
}

// TestEventsOutOfOrderRecorded: on SQLite, events_out_of_order holds
// exactly the events out of creation order, those an event with a smaller
// id is newer than, as the writer inserts them one batch after another,
// as a load inserts them, and as the migration that made the table found
// them; a deleted event's entry goes with it; and a free-text page read
// in id order past none of them is the plain store's.
func TestEventsOutOfOrderRecorded(t *testing.T) {
	ctx := context.Background()
	const n = 240
	events := projectEvents(n, lateAndEarly())
	check := func(t *testing.T, s *Store, stage string) {
		t.Helper()
		want, got := outOfOrder(t, s)
		if len(want) == 0 {
			t.Fatalf("%s: no event out of order", stage)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: events_out_of_order holds %v, want %v", stage, got, want)
		}
	}
	t.Run("written", func(t *testing.T) {
		url := dbtest.SQLite(t)
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// Batches of up to 17, a late event first in some, the events
		// after an early one first in others.
		start := 0
		for i := 1; i <= n; i++ {
			if i == n || i%17 == 0 || i%53 == 7 || i%71 == 4 {
				if err := s.Write(ctx, &flagadmin.Batch{Events: events[start:i]}); err != nil {
					t.Fatal(err)
				}
				start = i
			}
		}
		check(t, s, "written in batches")
		plain, err := Open(ctx, url, WithoutTuning(TextIndex))
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		samePages(t, s, plain, "written in batches")
		// The first event out of order deleted in the database, and an
		// event in order: the first's entry goes, the others stay.
		want, _ := outOfOrder(t, s)
		if _, err := s.db.ExecContext(ctx, "DELETE FROM events WHERE id IN (?, ?)", want[0], want[0]+1); err != nil {
			t.Fatal(err)
		}
		check(t, s, "after a delete")
		samePages(t, s, plain, "after a delete")
	})
	t.Run("loaded", func(t *testing.T) {
		s, err := Open(ctx, dbtest.SQLite(t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		loaded := slices.Clone(events)
		for i := range loaded {
			loaded[i].ID = int64(i + 1)
		}
		err = s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error {
			return emit(loaded)
		})
		if err != nil {
			t.Fatal(err)
		}
		check(t, s, "loaded")
	})
	t.Run("migrated", func(t *testing.T) {
		url := dbtest.SQLite(t)
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		// The schema before the migration, with the events in it.
		for _, stmt := range []string{
			"DROP TRIGGER events_out_of_order_update", "DROP TRIGGER events_out_of_order_delete", "DROP TABLE events_out_of_order",
			"DELETE FROM bun_migrations WHERE name = '20261215090000'",
		} {
			if _, err := s.db.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// The events written by a store of that schema: no table to
		// record them in.
		old, err := Open(ctx, url, WithoutMigrate())
		if err != nil {
			t.Fatal(err)
		}
		old.text.statements.Order = ""
		if err := old.Write(ctx, &flagadmin.Batch{Events: events}); err != nil {
			t.Fatal(err)
		}
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		s, err = Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		check(t, s, "migrated")
	})
}

// TestOrderInsertedReadsTheirRange: the writer's statement that records
// the events out of creation order among those it inserted reads their
// range and the events no older than them, with or without the
// planner's statistics: no step of its plan walks a whole table or
// index of events (as SQLite did for min(created_at) of the range, by
// events_created from its start, a second a write at 1,000,000 events).
func TestOrderInsertedReadsTheirRange(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, &flagadmin.Batch{Events: projectEvents(240, lateAndEarly())}); err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"without statistics", "ANALYZE"} {
		if stage == "ANALYZE" {
			if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		var plan []struct {
			ID      int    `bun:"id"`
			Parent  int    `bun:"parent"`
			NotUsed int    `bun:"notused"`
			Detail  string `bun:"detail"`
		}
		if err := s.db.NewRaw("EXPLAIN QUERY PLAN "+s.text.statements.Order, 200, 200, 200).Scan(ctx, &plan); err != nil {
			t.Fatal(err)
		}
		// Every read of a table is a range (SEARCH …(…)); the scans are
		// of the statement's own subqueries.
		searches := 0
		for _, step := range plan {
			switch {
			case strings.HasPrefix(step.Detail, "SEARCH "):
				searches++
				if !strings.Contains(step.Detail, "(") {
					t.Errorf("%s: a step reads a whole index: %s", stage, step.Detail)
				}
			case strings.HasPrefix(step.Detail, "SCAN ") && !strings.HasPrefix(step.Detail, "SCAN (subquery") && step.Detail != "SCAN o":
				t.Errorf("%s: a step reads a whole table: %s", stage, step.Detail)
			}
		}
		if searches < 2 {
			t.Errorf("%s: %d ranges read, want the events' and the newer ones': %+v", stage, searches, plan)
		}
	}
}
