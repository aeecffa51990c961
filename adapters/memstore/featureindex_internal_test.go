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

// TestFeatureIndexFollowsTheEvents: byFeature holds exactly the ids of
// the events of each feature, in id order, through writes and prunings of
// the oldest events (dropped from the front) and of events behind a held
// project's (dropped from the middle); a feature's search reads them.
func TestFeatureIndexFollowsTheEvents(t *testing.T) {
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
		want := map[string][]int64{}
		for _, e := range s.w.events {
			if e.FeatureName != nil {
				want[*e.FeatureName] = append(want[*e.FeatureName], e.ID)
			}
		}
		if !reflect.DeepEqual(s.w.byFeature, want) {
			t.Fatalf("%s: byFeature %v, want %v", step, s.w.byFeature, want)
		}
		for _, f := range slices.Sorted(maps.Keys(want)) {
			page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Features: []string{f, "no-such-feature"}, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, e := range page.Events {
				got = append(got, e.ID)
			}
			slices.Sort(got)
			if page.Total != len(want[f]) || !slices.Equal(got, want[f]) {
				t.Errorf("%s: feature %s found %v (total %d), want %v", step, f, got, page.Total, want[f])
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
