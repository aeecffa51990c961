package bunstore

import (
	"context"
	"strings"
	"testing"

	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// TestHiddenCountsReadTheListedIndex: the total of a caller who may not
// see some projects takes off, besides the hidden projects' own counts,
// those of the comma-joined projects naming one of them, which it finds
// among the counts of every project. On PostgreSQL and SQLite it reads
// them from the partial index of comma-joined projects' counts
// (event_counts_listed, created by a migration), not from the rows of
// every project. MySQL has no partial index.
func TestHiddenCountsReadTheListedIndex(t *testing.T) {
	for _, db := range []struct {
		name string
		url  func(testing.TB) string
	}{{"sqlite", dbtest.SQLite}, {"postgres", dbtest.Postgres}} {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, db.url(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			w := worldgen.MustNew(worldgen.Config{Events: 2000, Projects: 60, Features: 120, Users: 10, Groups: 2, Seed: 5})
			if err := s.Write(ctx, w.Batch()); err != nil {
				t.Fatal(err)
			}
			events := collect(w)
			p1, p2 := w.Projects()[1].ID, w.Projects()[2].ID
			joined := p1 + "," + p2
			events = append(events, flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "test", CreatedAt: w.Config().End, Project: &joined})
			if err := s.InsertEvents(ctx, events, 500); err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
				t.Fatal(err)
			}
			q := flagadmin.EventQuery{Limit: 50, RequireProject: true, HiddenProjects: []string{p1, flagadmin.AllProjects}}
			plan := s.summaries.PlanSearch(q)
			if plan.Total.Empty() {
				t.Fatal("the counts do not give the total of a caller hiding a project")
			}
			total := plan.Total.Wrap("SELECT ", "")
			text := string(s.db.QueryGen().AppendQuery(nil, total.Text, total.Args...))
			readsListed(t, s, text, "a new database")
			// A database migrated before the index was made gets it in a
			// migration.
			for _, stmt := range []string{"DROP INDEX event_counts_listed", "DELETE FROM bun_migrations WHERE name = '20261217090000'"} {
				if _, err := s.db.ExecContext(ctx, stmt); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			readsListed(t, s, text, "after the migration")
			// The total is still right.
			var got int64
			if err := s.db.NewRaw(text).Scan(ctx, &got); err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, e := range events {
				if e.Project != nil && !flagadmin.ProjectHidden(*e.Project, q.HiddenProjects) {
					want++
				}
			}
			if got != int64(want) {
				t.Errorf("total %d, want %d", got, want)
			}
		})
	}
}

// readsListed fails t unless the plan of the statement text on s reads
// event_counts_listed.
func readsListed(t *testing.T, s *Store, text, when string) {
	t.Helper()
	if s.sqlDialect.Name() == dialect.PG {
		root, json := planOf(t, s, text, nil)
		for n := range root.all() {
			if n.Relation == "event_counts" && n.Index == "event_counts_listed" {
				return
			}
		}
		t.Errorf("%s: the comma-joined projects' counts are not read from event_counts_listed:\n%s", when, json)
		return
	}
	var steps []struct {
		ID      int    `bun:"id"`
		Parent  int    `bun:"parent"`
		NotUsed int    `bun:"notused"`
		Detail  string `bun:"detail"`
	}
	if err := s.db.NewRaw("EXPLAIN QUERY PLAN "+text).Scan(context.Background(), &steps); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, step := range steps {
		if strings.Contains(step.Detail, "event_counts_listed") {
			return
		}
		all = append(all, step.Detail)
	}
	t.Errorf("%s: the comma-joined projects' counts are not read from event_counts_listed:\n%s", when, strings.Join(all, "\n"))
}
