package bunstore_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/storetest"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

func TestLoad(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			storetest.RunLoad(t, func(t *testing.T) storetest.Loader { return open(t, e.url(t)) })
		})
	}
}

// TestLoadHasNoStorageDeadline: a store whose storage deadline (1 ms) is
// far shorter than writing a few thousand events takes as long as it needs
// to Load them, while a Write of the same events is ended by the deadline.
// MySQL is left out: Open itself asks the server for its version under
// the deadline there. The server-side limits the load's own connections go
// without are checked by TestTimeoutTellsTheDatabase.
func TestLoadHasNoStorageDeadline(t *testing.T) {
	for _, e := range []struct {
		name string
		url  func(testing.TB) string
	}{{"SQLite", dbtest.SQLite}, {"Postgres", dbtest.Postgres}} {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			url := e.url(t)
			s := open(t, url, bunstore.WithTimeout(time.Millisecond))
			events := bulkEvents(3000)
			for i := range events {
				events[i].ID = int64(i + 1)
			}
			if err := s.Write(ctx, &flagadmin.Batch{Events: events}); !errors.Is(err, flagadmin.ErrUnavailable) {
				t.Fatalf("Write of %d events under a 1 ms deadline: got %v, want ErrUnavailable", len(events), err)
			}
			start := time.Now()
			err := s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error {
				for chunk := range slices.Chunk(events, 500) {
					if err := emit(chunk); err != nil {
						return err
					}
				}
				return nil
			})
			must(t, "Load under a 1 ms deadline", err)
			t.Logf("loaded %d events in %s", len(events), time.Since(start))
			page, err := open(t, url).SearchEvents(ctx, flagadmin.EventQuery{Limit: 1})
			must(t, "SearchEvents", err)
			if page.Total != len(events) {
				t.Errorf("after the load: %d events, want %d", page.Total, len(events))
			}
		})
	}
}

// TestLoadAnalyzesOnPostgres: after a load, PostgreSQL's planner knows
// how many events and leaves the tables hold, and has the statistics of
// their columns, without waiting for autovacuum (off on the test server):
// a load's steps end with analyzing the tables, reported as a step.
func TestLoadAnalyzesOnPostgres(t *testing.T) {
	ctx := context.Background()
	var steps []string
	s := open(t, dbtest.Postgres(t), bunstore.WithLoadProgress(func(st bunstore.LoadStep) {
		if st.Done {
			steps = append(steps, st.What)
		}
	}))
	events := bulkEvents(2000)
	for i := range events {
		events[i].ID = int64(i + 1)
	}
	must(t, "Load", s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error { return emit(events) }))
	if !slices.Contains(steps, "analyze the tables") {
		t.Errorf("load steps %q: no analyze the tables", steps)
	}
	for _, table := range []string{"events", "log_leaves"} {
		var tuples float64
		var columns int
		err := bunstore.DB(s).QueryRowContext(ctx, `SELECT c.reltuples, (SELECT count(*) FROM pg_stats p WHERE p.schemaname = current_schema() AND p.tablename = c.relname)
			FROM pg_class c WHERE c.oid = (quote_ident(current_schema()) || '.' || ?)::regclass`, table).Scan(&tuples, &columns)
		must(t, "read the statistics of "+table, err)
		if tuples != float64(len(events)) || columns == 0 {
			t.Errorf("%s after a load of %d events: the planner counts %v rows and has statistics of %d columns", table, len(events), tuples, columns)
		}
	}
}

// A load tells how far its long steps are: the leaves appended, and on
// SQLite the full-text index filled range by range, whose every range is
// then searched (the last one partial).
func TestLoadTellsProgress(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		bunstore.SetProgressEvery(t, 5000)
		counts := map[string][]int64{}
		s := open(t, url, bunstore.WithLoadProgress(func(st bunstore.LoadStep) {
			if !st.Done && st.Count > 0 {
				if st.Of != 12_000 {
					t.Errorf("%s: %d of %d, want of 12000", st.What, st.Count, st.Of)
				}
				counts[st.What] = append(counts[st.What], st.Count)
			}
		}))
		events := bulkEvents(12_000)
		for i := range events {
			events[i].ID = int64(i + 1)
		}
		must(t, "Load", s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error { return emit(events) }))
		want := map[string][]int64{"append the log's leaves": {bunstore.AppendBatch, 2 * bunstore.AppendBatch}}
		if strings.HasPrefix(url, "sqlite") {
			want["build the full-text index events_tokens"] = []int64{5000, 10_000}
		}
		if !maps.EqualFunc(counts, want, slices.Equal) {
			t.Errorf("progress: got %v, want %v", counts, want)
		}
		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Text: "100%_done", Limit: 1})
		must(t, "search the text of every event", err)
		if page.Total != len(events) {
			t.Errorf("text found in %d events, want %d", page.Total, len(events))
		}
	})
}

// A load counts its events once they are all written (event_counts,
// computed from them at once): every search the counts serve agrees with
// the reference store afterwards, for every caller, and at offsets that
// skip months and days by their counts.
func TestLoadCountsAgree(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		w := worldgen.MustNew(worldgen.Config{Events: 3000, Projects: 10, Features: 120, Users: 30, Groups: 4, Seed: 5})
		s := open(t, url)
		mem := memstore.New()
		var id int64
		var all []flagadmin.Event
		for b := range w.Events(500) {
			for i := range b {
				id++
				b[i].ID = id
			}
			all = append(all, b...)
		}
		must(t, "Load", s.Load(ctx, w.Batch(), func(emit func([]flagadmin.Event) error) error {
			for b := range slices.Chunk(all, 500) {
				if err := emit(b); err != nil {
					return err
				}
			}
			return nil
		}))
		must(t, "Write the reference", mem.Write(ctx, w.Batch()))
		must(t, "Write the reference's events", mem.Write(ctx, &flagadmin.Batch{Events: slices.Clone(all)}))
		hidden := []string{w.Projects()[1].ID, w.Projects()[3].ID}
		var queries []flagadmin.EventQuery
		for _, p := range w.Probes() {
			q := p.Query()
			queries = append(queries, q)
			q.HiddenProjects, q.RequireProject = hidden, true
			queries = append(queries, q)
		}
		for _, offset := range []int{0, 1200, 2500} {
			queries = append(queries, flagadmin.EventQuery{Limit: 5, Offset: offset}, flagadmin.EventQuery{Limit: 5, Offset: offset, HiddenProjects: hidden, RequireProject: true})
		}
		for _, q := range queries {
			got, err := s.SearchEvents(ctx, q)
			must(t, "search", err)
			want, err := mem.SearchEvents(ctx, q)
			must(t, "search the reference", err)
			if got.Total != want.Total || len(got.Events) != len(want.Events) {
				t.Fatalf("%+v: total %d, %d events; the reference %d, %d", q, got.Total, len(got.Events), want.Total, len(want.Events))
			}
			for i := range got.Events {
				if got.Events[i].ID != want.Events[i].ID {
					t.Fatalf("%+v: event %d is %d, the reference's %d", q, i, got.Events[i].ID, want.Events[i].ID)
				}
			}
		}
	})
}
