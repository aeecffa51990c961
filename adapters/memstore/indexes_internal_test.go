package memstore

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// TestIndexesFollowTheEvents: byFeature and byProject hold exactly the
// ids of the events of each feature and project, in id order, through
// writes and prunings of the oldest events (dropped from the front) and of
// events behind a held project's (dropped from the middle); a feature's or
// a project's search reads them.
func TestIndexesFollowTheEvents(t *testing.T) {
	ctx := context.Background()
	s := New()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	write := func(project string, at time.Time, n int) {
		t.Helper()
		b := &flagadmin.Batch{}
		for i := range n {
			e := flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "x", CreatedAt: at.Add(time.Duration(i) * time.Minute), Project: &project}
			if i%4 != 3 { // every fourth without a feature
				name := fmt.Sprintf("f%d", i%3)
				e.FeatureName = &name
			}
			b.Events = append(b.Events, e)
		}
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	write("default", now.Add(-72*time.Hour), 12)
	write("held", now.Add(-60*time.Hour), 8)
	write("default", now.Add(-48*time.Hour), 12)
	write("default", now, 6)
	check := func(step string) {
		t.Helper()
		for _, c := range []struct {
			name   string
			index  idIndex
			column func(*flagadmin.Event) *string
			query  func(value string) flagadmin.EventQuery
		}{
			{"byFeature", s.w.byFeature, func(e *flagadmin.Event) *string { return e.FeatureName },
				func(v string) flagadmin.EventQuery {
					return flagadmin.EventQuery{Features: []string{v, "no-such-feature"}, Limit: 100}
				}},
			{"byProject", s.w.byProject, func(e *flagadmin.Event) *string { return e.Project },
				func(v string) flagadmin.EventQuery {
					return flagadmin.EventQuery{Projects: []string{v, "no-such-project"}, Limit: 100}
				}},
		} {
			want := idIndex{}
			for i := range s.w.events {
				if v := c.column(&s.w.events[i].Event); v != nil {
					want[*v] = append(want[*v], s.w.events[i].ID)
				}
			}
			if !reflect.DeepEqual(c.index, want) {
				t.Fatalf("%s: %s %v, want %v", step, c.name, c.index, want)
			}
			for _, v := range slices.Sorted(maps.Keys(want)) {
				page, err := s.SearchEvents(ctx, c.query(v))
				if err != nil {
					t.Fatal(err)
				}
				var got []int64
				for _, e := range page.Events {
					got = append(got, e.ID)
				}
				slices.Sort(got)
				if page.Total != len(want[v]) || !slices.Equal(got, want[v]) {
					t.Errorf("%s: %s %s found %v (total %d), want %v", step, c.name, v, got, page.Total, want[v])
				}
			}
		}
	}
	check("written")
	if err := s.HoldProject(ctx, "held", now, flagadmin.Event{Type: flagadmin.EventLogHoldAdded, CreatedBy: "x", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	prune := func(before time.Time) {
		t.Helper()
		_, err := s.PruneEvents(ctx, 10, func(*flagadmin.Event) (time.Time, error) { return before, nil }, func(ids []int64) (flagadmin.Event, error) {
			return vlog.PrunedEvent(ids, before, 24*time.Hour, now)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	prune(now.Add(-66 * time.Hour)) // the oldest 10: from the front
	check("the oldest pruned")
	prune(now.Add(-24 * time.Hour)) // the last 2 of the oldest, 8 behind the held project's: from the middle
	check("pruned behind a held project")
	// held 8, 4 of the second default batch, recent 6, the hold and the
	// two prunings' events.
	if len(s.w.events) != 8+4+6+3 {
		t.Fatalf("%d events left, want 21", len(s.w.events))
	}
}

// TestEventAtWithGaps: eventAt finds each event by its id, and no other
// id, in a world whose ids are dense in places and have gaps in others
// (prunings from the middle, ids skipped by a source), where the bounds
// its search takes from the first and last ids must hold every event.
func TestEventAtWithGaps(t *testing.T) {
	for _, ids := range [][]int64{
		{},
		{5},
		{1, 2, 3, 4, 5, 6},
		{3, 4, 5, 9, 10, 20, 21, 22, 100},
		{1, 50, 51, 52, 53},
		{10, 11, 12, 13, 90},
	} {
		w := &world{}
		for _, id := range ids {
			w.events = append(w.events, storedEvent{Event: flagadmin.Event{ID: id}})
		}
		for id := int64(0); id <= 110; id++ {
			want := slices.Index(ids, id)
			i, ok := w.eventAt(id)
			if ok != (want >= 0) || ok && i != want {
				t.Errorf("ids %v: eventAt(%d) = %d, %v; want %d, %v", ids, id, i, ok, want, want >= 0)
			}
		}
	}
}
