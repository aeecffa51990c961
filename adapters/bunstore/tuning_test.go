package bunstore_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestSummariesGoStaleWithoutTuning writes through a tuned store, then
// through a plain one on the same database, whose writes do not keep the
// summaries: a tuned store then refuses to open without migrating, and
// migrating rebuilds the summaries, after which the tuned store answers as
// the plain one.
func TestSummariesGoStaleWithoutTuning(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		batch := func(project string, n int) *flagadmin.Batch {
			b := &flagadmin.Batch{Projects: []flagadmin.Project{{ID: project, Name: project, Mode: flagadmin.ModeOpen, CreatedAt: at}},
				Features: []flagadmin.Feature{{Name: project + "-f", Project: project, Type: flagadmin.TypeRelease, CreatedAt: at}}}
			for i := range n {
				b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "x", CreatedAt: at.Add(time.Duration(i) * time.Hour), Project: &project})
			}
			return b
		}
		tuned := open(t, url)
		must(t, "Write through the tuned store", tuned.Write(ctx, batch("a", 3)))
		plain := open(t, url, bunstore.WithoutTuning())
		must(t, "Write through the plain store", plain.Write(ctx, batch("b", 4)))
		tuned.Close()

		for _, c := range []struct {
			opts  []bunstore.Option
			stale string
		}{
			{[]bunstore.Option{bunstore.WithoutMigrate()}, "event_counts"},
			{[]bunstore.Option{bunstore.WithoutMigrate(), bunstore.WithoutTuning(bunstore.EventCounts)}, "project_stats"},
		} {
			_, err := bunstore.Open(ctx, url, c.opts...)
			if want := "the summary " + c.stale + " is out of date"; err == nil || !strings.HasPrefix(err.Error(), "bunstore: "+want) {
				t.Fatalf("open a tuned store without migrating: got %v, want %q", err, want)
			}
		}

		again := open(t, url) // migrates: rebuilds
		for _, q := range []flagadmin.EventQuery{{Limit: 10}, {Limit: 10, Projects: []string{"b"}}, {Limit: 10, Types: []string{flagadmin.EventFeatureUpdated}}} {
			got, err := again.SearchEvents(ctx, q)
			must(t, "tuned search", err)
			want, err := plain.SearchEvents(ctx, q)
			must(t, "plain search", err)
			if got.Total != want.Total || want.Total == 0 {
				t.Errorf("%+v: tuned total %d, plain %d", q, got.Total, want.Total)
			}
		}
		q := flagadmin.ProjectStatsQuery{PotentiallyStaleBefore: flagadmin.PotentiallyStaleCutoffs(at.AddDate(1, 0, 0))}
		got, err := again.ProjectStats(ctx, q)
		must(t, "tuned project list", err)
		want, err := plain.ProjectStats(ctx, q)
		must(t, "plain project list", err)
		if !reflect.DeepEqual(sortedStats(got), sortedStats(want)) {
			t.Errorf("project list after the rebuild:\n got %+v\nwant %+v", got, want)
		}
	})
}

func TestUnknownTuning(t *testing.T) {
	_, err := bunstore.Open(context.Background(), "sqlite::memory:", bunstore.WithoutTuning("day-seek"))
	if err == nil || !strings.Contains(err.Error(), `unknown tuning "day-seek"`) {
		t.Errorf("got %v, want an error naming the unknown tuning", err)
	}
}
