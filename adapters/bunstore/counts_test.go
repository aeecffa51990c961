package bunstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// TestCountedTotals checks the totals read from event_counts against
// memstore's counting, for every query shape that uses them (no filter, one
// IS / IS_ANY_OF filter per column, repeated values, hidden projects) and
// shapes that must fall back to counting rows, with their pages (small and
// large offsets, past the end), after loading events through
// the bulk path (COPY on PostgreSQL) and again after rebuilding the counts
// from the events table (the migration's backfill).
func TestCountedTotals(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		store, err := bunstore.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		mem := memstore.New()
		w := worldgen.MustNew(worldgen.Config{Events: 4000, Projects: 8, Features: 60, Users: 20, Groups: 3, Seed: 7})
		for _, s := range []flagadmin.Store{store, mem} {
			if err := s.Write(ctx, w.Batch()); err != nil {
				t.Fatal(err)
			}
		}
		for b := range w.Events(700) {
			if err := store.InsertEvents(ctx, b, 300); err != nil {
				t.Fatal(err)
			}
			if err := mem.Write(ctx, &flagadmin.Batch{Events: b}); err != nil {
				t.Fatal(err)
			}
		}
		p0, p1, p2, p3 := w.Projects()[0].ID, w.Projects()[1].ID, w.Projects()[2].ID, w.Projects()[3].ID
		// A few project-less events written through the transactional
		// path, and events naming several projects (comma-joined, or "*"
		// for every project) over the months.
		extra := []flagadmin.Event{
			{CreatedAt: w.Config().End, Type: flagadmin.EventUserCreated, CreatedBy: "system"},
			{CreatedAt: w.Config().End, Type: flagadmin.EventUserCreated, CreatedBy: "system"},
		}
		for i, project := range []string{p0 + "," + p1, p2 + "," + p0, flagadmin.AllProjects, p0 + "," + p2 + "," + p1, p0 + ",x" + p1} {
			for j := range 8 {
				at := w.Config().End.AddDate(0, 0, -(i*8+j)*9-1)
				extra = append(extra, flagadmin.Event{CreatedAt: at, Type: flagadmin.EventAPITokenCreated, CreatedBy: "system", Project: &project})
			}
		}
		for _, s := range []flagadmin.Store{store, mem} {
			if err := s.Write(ctx, &flagadmin.Batch{Events: append([]flagadmin.Event(nil), extra...)}); err != nil {
				t.Fatal(err)
			}
		}
		page, err := mem.SearchEvents(ctx, flagadmin.EventQuery{Limit: 1, Projects: []string{p0}})
		if err != nil || len(page.Events) == 0 {
			t.Fatalf("no events in project %s: %v", p0, err)
		}
		e := page.Events[0]
		uid := int64(-42)
		if e.CreatedByUserID != nil {
			uid = *e.CreatedByUserID
		}
		env := "production"
		from, before := w.Config().End.AddDate(0, -14, 0).Truncate(24*time.Hour), w.Config().End.Truncate(24*time.Hour)
		queries := []flagadmin.EventQuery{
			{},
			{Projects: []string{p0}},
			{Projects: []string{p0, p1, p0, "no-such-project"}},
			{Features: []string{*e.FeatureName, *e.FeatureName}},
			{Types: []string{e.Type, flagadmin.EventFeatureCreated}},
			{CreatedByUserIDs: []int64{uid, -42}},
			{Environments: []string{env}},
			{RequireProject: true},
			{RequireProject: true, HiddenProjects: []string{p1, p2, p1}},
			{RequireProject: true, HiddenProjects: []string{p1}, Projects: []string{p0, p1}},
			{RequireProject: true, HiddenProjects: []string{p1}, Types: []string{e.Type}},
			{Projects: []string{p0}, Types: []string{e.Type}},
			{Types: []string{flagadmin.EventUserCreated}},
			{Offset: 4000},
			{Offset: 1500, RequireProject: true},
			{Offset: 3990, RequireProject: true, HiddenProjects: []string{p1}},
			{Offset: 2, Projects: []string{p0, p2}},
			{RequireProject: true, HiddenProjects: []string{p1, flagadmin.AllProjects}},
			{RequireProject: true, HiddenProjects: []string{p2, flagadmin.AllProjects}, Types: []string{flagadmin.EventAPITokenCreated}},
			{RequireProject: true, HiddenProjects: []string{p1, flagadmin.AllProjects}, Projects: []string{p0, p0 + "," + p2 + "," + p1, flagadmin.AllProjects}},
			{Offset: 1500, RequireProject: true, HiddenProjects: []string{p1, flagadmin.AllProjects}},
			{Offset: 3900, RequireProject: true, HiddenProjects: []string{p2, flagadmin.AllProjects}},
			{RequireProject: true, HiddenProjects: []string{p1, flagadmin.AllProjects}, From: &from, Before: &before},
			{Offset: 1200, RequireProject: true, HiddenProjects: []string{p2, flagadmin.AllProjects}, From: &from, Before: &before},
			// No comma-joined project names p3 or "*": a seek that first
			// asks (on SQLite) leaves their part out.
			{Offset: 1500, RequireProject: true, HiddenProjects: []string{p3, flagadmin.AllProjects}},
			{Offset: 1200, RequireProject: true, HiddenProjects: []string{p3, flagadmin.AllProjects}, From: &from, Before: &before},
		}
		check := func(stage string) {
			t.Helper()
			for _, q := range queries {
				q.Limit = 5
				want, err := mem.SearchEvents(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				got, err := store.SearchEvents(ctx, q)
				if err != nil {
					t.Fatalf("%s %+v: %v", stage, q, err)
				}
				if g, w := bunstore.PageKey(t, got), bunstore.PageKey(t, want); g != w {
					t.Errorf("%s: query %+v:\ngot  %.300s\nwant %.300s", stage, q, g, w)
				}
			}
		}
		check("after bulk insert")
		if err := store.Migrate(ctx, bunstore.WithRebuild()); err != nil {
			t.Fatal(err)
		}
		check("after recount")
	})
}
