package bunstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestSummariesGoStaleWithoutTuning writes through a tuned store, then
// through a plain one on the same database, whose writes do not keep the
// summaries: a tuned store opened without migrating then answers without
// them (as the plain one does) and says so, and migrating rebuilds them,
// after which the tuned store reads them and answers as the plain one.
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

		agree := func(stage string, s *bunstore.Store) {
			t.Helper()
			for _, q := range []flagadmin.EventQuery{{Limit: 10}, {Limit: 10, Projects: []string{"b"}}, {Limit: 10, Types: []string{flagadmin.EventFeatureUpdated}}} {
				got, err := s.SearchEvents(ctx, q)
				must(t, "tuned search", err)
				want, err := plain.SearchEvents(ctx, q)
				must(t, "plain search", err)
				if got.Total != want.Total || want.Total == 0 {
					t.Errorf("%s: %+v: tuned total %d, plain %d", stage, q, got.Total, want.Total)
				}
			}
			q := flagadmin.ProjectStatsQuery{PotentiallyStaleBefore: flagadmin.PotentiallyStaleCutoffs(at.AddDate(1, 0, 0))}
			got, err := s.ProjectStats(ctx, q)
			must(t, "tuned project list", err)
			want, err := plain.ProjectStats(ctx, q)
			must(t, "plain project list", err)
			if !reflect.DeepEqual(sortedStats(got), sortedStats(want)) {
				t.Errorf("%s: project list:\n got %+v\nwant %+v", stage, got, want)
			}
		}
		var log bytes.Buffer
		stale := open(t, url, bunstore.WithoutMigrate(), bunstore.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		agree("opened without migrating", stale)
		for _, name := range []string{"event_counts", "project_stats"} {
			if !strings.Contains(log.String(), "the summary "+name+" is out of date") {
				t.Errorf("the store opened without migrating did not say that %s is out of date: %q", name, log.String())
			}
		}
		must(t, "Migrate", stale.Migrate(ctx)) // rebuilds, and reads them again
		agree("after the rebuild", stale)
		again := open(t, url)
		agree("opened after the rebuild", again)
		log.Reset()
		open(t, url, bunstore.WithoutMigrate(), bunstore.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		if log.Len() > 0 {
			t.Errorf("a store opened after the rebuild logged %q", log.String())
		}
	})
}

func TestUnknownTuning(t *testing.T) {
	_, err := bunstore.Open(context.Background(), "sqlite::memory:", bunstore.WithoutTuning("day-seek"))
	if err == nil || !strings.Contains(err.Error(), `unknown tuning "day-seek"`) {
		t.Errorf("got %v, want an error naming the unknown tuning", err)
	}
}
