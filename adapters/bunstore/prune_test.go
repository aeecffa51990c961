package bunstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
	"github.com/flagadmin/flagadmin/internal/faultsql"
)

// TestPruningBatchHoldsNoRowWritersTake holds a pruning batch open, with
// its locks, once it has removed its events and marked their leaves
// pruned, right before it records them (its events-pruned event, whose
// writing takes the rows every writer takes, as briefly as any writer),
// and writes events that count in the same rows of event_counts (all
// events, the project, the type, the creator, the environment, the
// feature) meanwhile: on PostgreSQL and MySQL every write must go
// through without waiting for the batch, whichever shard of event_counts
// and row of store_versions it draws. SQLite's one writer connection runs
// a batch and a write in turns by design.
func TestPruningBatchHoldsNoRowWritersTake(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		if strings.HasPrefix(url, "sqlite") {
			t.Skip("one writer connection: a write waits for the batch by design")
		}
		ctx := context.Background()
		s, faults := openWithFaults(t, url)
		event := func(at time.Time) flagadmin.Event {
			return flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ada", CreatedByUserID: ptrTo(int64(7)), CreatedAt: at,
				Project: ptrTo("web"), Environment: ptrTo("production"), FeatureName: ptrTo("checkout")}
		}
		old := &flagadmin.Batch{}
		for i := range 20 {
			old.Events = append(old.Events, event(time.Date(2020, 1, 1, 0, i, 0, 0, time.UTC)))
		}
		must(t, "Write", s.Write(ctx, old))
		before, err := s.Version(ctx)
		must(t, "Version", err)

		held, release := make(chan struct{}), make(chan struct{})
		// Held after the batch's last statement before it records what
		// it pruned.
		faults.Add(faultsql.Rule{Match: "^UPDATE [\"`]?log_leaves[\"`]? SET [\"`]?pruned", After: faultsql.Hold(held, release)})
		type result struct {
			ids []int64
			err error
		}
		pruned := make(chan result, 1)
		go func() {
			before := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
			cutoff := func(*flagadmin.Event) (time.Time, error) { return before, nil }
			ids, err := s.PruneEvents(ctx, 5, cutoff, func(ids []int64) (flagadmin.Event, error) {
				return vlog.PrunedEvent(ids, before, time.Hour, time.Now())
			})
			pruned <- result{ids, err}
		}()
		select {
		case <-held:
		case r := <-pruned:
			t.Fatalf("the pruning batch ended before it was held: pruned %v, error %v", r.ids, r.err)
		}
		const writes = 40
		for i := range writes {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := s.Write(wctx, &flagadmin.Batch{Events: []flagadmin.Event{event(time.Now())}})
			cancel()
			if err != nil {
				close(release)
				<-pruned
				t.Fatalf("write %d while a pruning batch was open: %v", i, err)
			}
		}
		close(release)
		r := <-pruned
		must(t, "PruneEvents", r.err)
		if len(r.ids) != 5 {
			t.Fatalf("pruned %d events, want 5", len(r.ids))
		}
		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Projects: []string{"web"}, Types: []string{string(flagadmin.EventFeatureUpdated)}, Limit: 1})
		must(t, "SearchEvents", err)
		if want := 20 - 5 + writes; page.Total != want {
			t.Errorf("got a total of %d events, want %d", page.Total, want)
		}
		after, err := s.Version(ctx)
		must(t, "Version", err)
		if want := before + writes + 1; after != want {
			t.Errorf("got version %d, want %d (%d writes and the batch after %d)", after, want, writes, before)
		}
	})
}
