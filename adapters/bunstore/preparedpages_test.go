package bunstore_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// statementLog records the statements Bun's query hooks see, but for a
// transaction's own.
type statementLog struct {
	mu    sync.Mutex
	texts []string
}

func (l *statementLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (l *statementLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	switch strings.ToUpper(strings.Fields(e.Query + " x")[0]) {
	case "BEGIN", "COMMIT", "ROLLBACK":
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.texts = append(l.texts, e.Query)
}

// take returns the statements recorded since the last take.
func (l *statementLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	texts := l.texts
	l.texts = nil
	return texts
}

// write writes w's world, then its events, to s.
func write(t *testing.T, s flagadmin.Store, w *worldgen.World) {
	t.Helper()
	ctx := context.Background()
	if err := s.Write(ctx, w.Batch()); err != nil {
		t.Fatal(err)
	}
	for b := range w.Events(500) {
		if err := s.Write(ctx, &flagadmin.Batch{Events: b}); err != nil {
			t.Fatal(err)
		}
	}
}

// answersPrepared runs q on store until Bun's query hooks (log) see none
// of its statements, each run answering as the in-memory store mem does,
// and fails if they still see some after 30 s: the statements are
// prepared in the background, a run at a time.
func answersPrepared(t *testing.T, mem, store flagadmin.Store, log *statementLog, q flagadmin.EventQuery, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for run := 0; ; run++ {
		log.take()
		answersAsMemory(t, mem, store, q, fmt.Sprintf("%s, run %d", what, run))
		seen := log.take()
		if len(seen) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after %d runs, still run with values written into them:\n%s", what, run+1, strings.Join(seen, "\n"))
		}
		time.Sleep(5 * time.Millisecond) // a preparation in the background
	}
}

// answersAsMemory fails unless s answers q as the in-memory store mem
// does, or if mem finds nothing (a test that cannot tell).
func answersAsMemory(t *testing.T, mem, s flagadmin.Store, q flagadmin.EventQuery, what string) {
	t.Helper()
	ctx := context.Background()
	want, err := mem.SearchEvents(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if want.Total == 0 {
		t.Fatalf("%s matches nothing: a test that cannot tell", what)
	}
	got, err := s.SearchEvents(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got.Total != want.Total || !reflect.DeepEqual(got.Events, want.Events) {
		t.Fatalf("%s: total %d, %d events; want %d, %d", what, got.Total, len(got.Events), want.Total, len(want.Events))
	}
}

// TestOnePlanPagesKeptPrepared: the page of a query that one plan serves
// for any value (no free text, at most one column filter of one value) is
// read by statements kept prepared where the dialect keeps them (SQLite,
// PostgreSQL): once prepared, they run without their values written into
// them, which Bun's query hooks would see, and answer as the in-memory
// store does, for the values they were first run with and for others: an
// offset, a cursor, a date range, the projects a caller may not see.
func TestOnePlanPagesKeptPrepared(t *testing.T) {
	ctx := context.Background()
	w := worldgen.MustNew(worldgen.Config{Events: 1500, Projects: 6, Features: 30, Users: 10, Groups: 2, Seed: 11})
	mem := memstore.New()
	write(t, mem, w)
	for _, e := range engines {
		for _, c := range []struct {
			name string
			opts []bunstore.Option
		}{
			{"tuned", nil},
			{"plain", []bunstore.Option{bunstore.WithoutTuning()}},
		} {
			t.Run(e.name+"/"+c.name, func(t *testing.T) {
				if e.name == "MySQL" {
					t.Skip("MySQL runs every statement with its values written into it (the dialect keeps none prepared)")
				}
				url := e.url(t)
				store := open(t, url, c.opts...)
				write(t, store, w)
				log := &statementLog{}
				bunstore.ReaderDB(store).AddQueryHook(log)
				p0, p1 := w.Projects()[0].ID, w.Projects()[1].ID
				first, err := mem.SearchEvents(ctx, flagadmin.EventQuery{Limit: 200, Offset: 20})
				if err != nil || len(first.Events) == 0 {
					t.Fatalf("no events: %v", err)
				}
				cursor := flagadmin.PositionOf(first.Events[9])
				var features []string
				for _, e := range first.Events {
					if e.FeatureName != nil && !slices.Contains(features, *e.FeatureName) {
						features = append(features, *e.FeatureName)
					}
				}
				if len(features) < 2 {
					t.Fatalf("the newest events name %d features", len(features))
				}
				f0, f1 := features[0], features[1]
				end := w.Config().End
				from, before := end.AddDate(0, -3, 0), end.AddDate(0, -1, 0)
				// Each shape twice: with two values, each prepared or not.
				shapes := [][2]flagadmin.EventQuery{
					{{Features: []string{f0}}, {Features: []string{f1}}},
					{{Features: []string{f0}, Offset: 3}, {Features: []string{f1}, Offset: 1}},
					{{Projects: []string{p0}, After: &cursor}, {Projects: []string{p1}, After: &cursor}},
					{{Projects: []string{p0}, From: &from, Before: &before}, {Projects: []string{p1}, From: ptrTo(end.AddDate(0, -8, 0)), Before: &from}},
					{{Types: []string{flagadmin.EventFeatureCreated}, RequireProject: true, HiddenProjects: []string{p1}}, {Types: []string{flagadmin.EventFeatureUpdated}, RequireProject: true, HiddenProjects: []string{p0}}},
					{{Offset: 7, RequireProject: true, HiddenProjects: []string{p0}}, {Offset: 2, RequireProject: true, HiddenProjects: []string{p1}}},
				}
				for i, shape := range shapes {
					for j, q := range shape {
						q.Limit = 10
						answersPrepared(t, mem, store, log, q, fmt.Sprintf("shape %d, query %d", i, j))
					}
				}
				if t.Failed() {
					return
				}
				// A query two plans serve (two values) keeps its values in its
				// statements, seen by the hooks each time.
				q := flagadmin.EventQuery{Limit: 10, Features: []string{f0, f1}, Types: []string{flagadmin.EventFeatureCreated}}
				for run := range 3 {
					if _, err := store.SearchEvents(ctx, q); err != nil {
						t.Fatal(err)
					}
					if seen := log.take(); len(seen) == 0 && (c.name == "plain" || !strings.HasPrefix(url, "postgres")) {
						t.Fatalf("run %d of a query of two filters: no statement seen", run)
					}
				}
			})
		}
	}
}

// TestTextPagesKeptPrepared: on SQLite, whose tuned store finds a
// free-text query's page in its FTS5 index, the statements that find it
// and read its events are kept prepared, whatever the text: once
// prepared, a query runs without statements whose values are written into
// them (which Bun's query hooks would see), and answers as the in-memory
// store does: a feature's name, an author's (with the texts of the
// deprecated search) with an offset, with a column filter, with projects
// the caller may not see.
func TestTextPagesKeptPrepared(t *testing.T) {
	w := worldgen.MustNew(worldgen.Config{Events: 1500, Projects: 6, Features: 30, Users: 10, Groups: 2, Seed: 11})
	mem := memstore.New()
	write(t, mem, w)
	store := open(t, dbtest.SQLite(t))
	write(t, store, w)
	log := &statementLog{}
	bunstore.ReaderDB(store).AddQueryHook(log)
	f0, f1 := w.Features()[0].Name, w.Features()[1].Name
	// Two words of the newest events' authors, each in many events.
	first, err := mem.SearchEvents(context.Background(), flagadmin.EventQuery{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var authors []string
	for _, e := range first.Events {
		for _, word := range strings.Fields(e.CreatedBy) {
			if len(word) >= 3 && !slices.Contains(authors, word) {
				authors = append(authors, word)
			}
		}
	}
	if len(authors) < 2 {
		t.Fatalf("the newest events' authors: %q", authors)
	}
	u0, u1 := authors[0], authors[1]
	p0, p1 := w.Projects()[0].ID, w.Projects()[1].ID
	// Each shape twice: with two values, each prepared or not.
	shapes := [][2]flagadmin.EventQuery{
		{{Text: f0}, {Text: f1}},
		{{Text: u0, Offset: 12}, {Text: u1, Offset: 3}},
		{{Text: u0, Types: []string{flagadmin.EventFeatureCreated}}, {Text: u1, Types: []string{flagadmin.EventFeatureUpdated}}},
		{{Text: u0, RequireProject: true, HiddenProjects: []string{p0}}, {Text: u1, RequireProject: true, HiddenProjects: []string{p1}}},
	}
	for i, shape := range shapes {
		for j, q := range shape {
			q.Limit = 10
			if i > 0 { // an author's name: in the texts of the deprecated search
				q.TextScope = flagadmin.TextPayloadTypeCreator
			}
			answersPrepared(t, mem, store, log, q, fmt.Sprintf("shape %d, query %d", i, j))
		}
	}
}
