package bunstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// TestSearchAgreesWithMemstore loads one generated world, plus events whose
// payloads hold the characters LIKE and GLOB treat specially, into the SQL
// store and into memstore (the reference), and checks that every search
// gives the same page and total: the probes of the world, free-text queries
// through each query plan (index-served and not, window count, offsets
// past the end), and the deprecated search's wider text scope.
func TestSearchAgreesWithMemstore(t *testing.T) {
	for _, db := range []struct {
		name string
		url  func(testing.TB) string
	}{{"sqlite", dbtest.SQLite}, {"postgres", dbtest.Postgres}, {"mysql", dbtest.MySQL}} {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			store, err := bunstore.Open(ctx, db.url(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			mem := memstore.New()
			w := worldgen.MustNew(worldgen.Config{Events: 3000, Projects: 10, Features: 120, Users: 30, Groups: 4, Seed: 3})
			special := specialEvents(w.Config().End)
			for _, s := range []flagadmin.Store{store, mem} {
				if err := s.Write(ctx, w.Batch()); err != nil {
					t.Fatal(err)
				}
				for b := range w.Events(1000) {
					if err := s.Write(ctx, &flagadmin.Batch{Events: b}); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Write(ctx, &flagadmin.Batch{Events: special}); err != nil {
					t.Fatal(err)
				}
			}
			var queries []flagadmin.EventQuery
			for _, p := range w.Probes() {
				queries = append(queries, p.Query())
			}
			project := w.Projects()[1].ID
			// A cursor in the middle of the history (a cursor goes with offset
			// 0 only): a text's page after it, its total whatever the cursor.
			cursor := &flagadmin.EventPosition{CreatedAt: w.Config().Start.Add(w.Config().End.Sub(w.Config().Start) / 2), ID: 1500}
			for _, text := range []string{worldgen.RareWord, "acme-corp", "a*b", "a?c", "[x]", "x]", "*", "?", "[", "100%", "x_y", "ab", "ærø",
				"zz-no-such-text", `"rollout":"50"`, "feature-strategy-update"} {
				for _, q := range []flagadmin.EventQuery{
					{Text: text, Limit: 50},
					{Text: text, Limit: 7, Offset: 3},
					{Text: text, Limit: 50, Offset: 100_000},
					{Text: text, Limit: 20, Projects: []string{project}},
					{Text: text, Limit: 20, TextScope: flagadmin.TextPayloadTypeCreator},
					{Text: text, Limit: 20, After: cursor},
				} {
					queries = append(queries, q)
				}
			}
			queries = append(queries,
				flagadmin.EventQuery{Limit: 50, Offset: 2990},
				flagadmin.EventQuery{Limit: 50, Offset: 5000},
				flagadmin.EventQuery{Limit: 10, Offset: 40, Types: []string{flagadmin.EventFeatureStrategyUpdate}},
				flagadmin.EventQuery{Limit: 10, RequireProject: true, HiddenProjects: []string{project}},
			)
			// Whole days (totals from day rows, large offsets skipping days).
			from := w.Config().Start.AddDate(0, 6, 0)
			before := from.AddDate(0, 6, 0)
			for _, q := range []flagadmin.EventQuery{
				{Limit: 50, From: &from, Before: &before},
				{Limit: 50, From: &from},
				{Limit: 50, Before: &before, Offset: 1200},
				{Limit: 50, Offset: 1500, RequireProject: true},
				{Limit: 50, Offset: 1100, From: &from, RequireProject: true, HiddenProjects: []string{project}},
				{Limit: 50, Offset: 2000, Before: &before, Types: []string{flagadmin.EventFeatureStrategyUpdate}},
			} {
				queries = append(queries, q)
			}
			for _, q := range queries {
				want, err := mem.SearchEvents(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				got, err := store.SearchEvents(ctx, q)
				if err != nil {
					t.Fatalf("%+v: %v", q, err)
				}
				if g, w := bunstore.PageKey(t, got), bunstore.PageKey(t, want); g != w {
					t.Errorf("query %+v:\ngot  %s\nwant %s", q, g, w)
				}
			}
		})
	}
}

// specialEvents have payloads with the characters free-text patterns must
// treat literally.
func specialEvents(at time.Time) []flagadmin.Event {
	var out []flagadmin.Event
	for i, text := range []string{"a*b", "a?c", "[x]", "axb", "abc", "100%", "x_y", "xzy", "Ærø", "***", "??"} {
		data, _ := json.Marshal(map[string]string{"note": text})
		id := int64(1)
		out = append(out, flagadmin.Event{
			CreatedAt: at.Add(time.Duration(i) * time.Millisecond), Type: flagadmin.EventFeatureUpdated,
			CreatedBy: "special", CreatedByUserID: &id, Data: data,
		})
	}
	return out
}
