package bunstore_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// summaryAt is when the writes of the summaries' tests happen.
var summaryAt = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// writeProject writes, through s, a project with a feature and n events
// of it.
func writeProject(t *testing.T, s *bunstore.Store, project string, n int) {
	t.Helper()
	b := &flagadmin.Batch{Projects: []flagadmin.Project{{ID: project, Name: project, Mode: flagadmin.ModeOpen, CreatedAt: summaryAt}},
		Features: []flagadmin.Feature{{Name: project + "-f", Project: project, Type: flagadmin.TypeRelease, CreatedAt: summaryAt}}}
	for i := range n {
		b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "x",
			CreatedAt: summaryAt.Add(time.Duration(i) * time.Hour), Project: &project})
	}
	must(t, "Write", s.Write(context.Background(), b))
}

// disagreements returns how the answers of got, a store with the
// summaries, differ from those of want, the plain store, on searches
// whose totals the counts give and on the project list: none when they
// agree.
func disagreements(t *testing.T, got, want *bunstore.Store) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, q := range []flagadmin.EventQuery{{Limit: 10}, {Limit: 10, Projects: []string{"b"}}, {Limit: 10, Types: []string{flagadmin.EventFeatureUpdated}}} {
		g, err := got.SearchEvents(ctx, q)
		must(t, "search with the summaries", err)
		w, err := want.SearchEvents(ctx, q)
		must(t, "plain search", err)
		if g.Total != w.Total {
			out = append(out, fmt.Sprintf("search %+v: total %d, plain %d", q, g.Total, w.Total))
		}
	}
	q := flagadmin.ProjectStatsQuery{PotentiallyStaleBefore: flagadmin.PotentiallyStaleCutoffs(summaryAt.AddDate(1, 0, 0))}
	w, err := want.ProjectStats(ctx, q)
	must(t, "plain project list", err)
	switch g, err := got.ProjectStats(ctx, q); {
	case err != nil:
		out = append(out, fmt.Sprintf("project list: %v", err))
	case !reflect.DeepEqual(sortedStats(g), sortedStats(w)):
		out = append(out, fmt.Sprintf("project list %+v, plain %+v", g, w))
	}
	return out
}

// TestOneSetOfSummariesPerDatabase shows the rule of WithoutTuning: a
// store that keeps the summaries answers from them, so after a plain
// store wrote to its database its totals and figures lack those writes;
// Migrate with WithRebuild rebuilds them, and the store answers as the
// plain one again.
func TestOneSetOfSummariesPerDatabase(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		tuned := open(t, url)
		writeProject(t, tuned, "a", 3)
		plain := open(t, url, bunstore.WithoutTuning())
		if d := disagreements(t, tuned, plain); len(d) > 0 {
			t.Fatalf("before the plain store wrote: %s", strings.Join(d, "; "))
		}
		writeProject(t, plain, "b", 4)
		if d := disagreements(t, tuned, plain); len(d) == 0 {
			t.Errorf("after the plain store wrote, the summaries' answers agree with it: want them to lack its writes")
		}
		must(t, "Migrate with WithRebuild", tuned.Migrate(context.Background(), bunstore.WithRebuild()))
		if d := disagreements(t, tuned, plain); len(d) > 0 {
			t.Errorf("after the rebuild: %s", strings.Join(d, "; "))
		}
	})
}

// TestRebuildIsAStepOfMigrate: WithRebuild is reported as a step of its
// own, after the migrations, and rebuilds nothing for the plain store.
func TestRebuildIsAStepOfMigrate(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []bunstore.Option
	}{{"tuned", nil}, {"plain", []bunstore.Option{bunstore.WithoutTuning()}}} {
		t.Run(c.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, url string) {
				s := open(t, url, c.opts...)
				writeProject(t, s, "b", 2)
				var steps []string
				progress := bunstore.WithProgress(func(m bunstore.MigrationStep) {
					steps = append(steps, fmt.Sprintf("%s done=%v", m.Name, m.Done))
				})
				must(t, "Migrate", s.Migrate(ctx, progress, bunstore.WithRebuild()))
				if want := "[summaries done=false summaries done=true]"; fmt.Sprint(steps) != want {
					t.Errorf("steps: got %v, want %s", steps, want)
				}
				plain := open(t, url, bunstore.WithoutTuning())
				if d := disagreements(t, s, plain); len(d) > 0 {
					t.Errorf("after the rebuild: %s", strings.Join(d, "; "))
				}
			})
		})
	}
}

// TestMigrationDropsSummaryState: the migration after the baseline drops
// summary_state, rebuilding first the summaries it marks out of date, so
// that a summary a store without it left behind is not read as it is.
func TestMigrationDropsSummaryState(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		writeProject(t, s, "b", 5)
		st, err := s.Schema(ctx)
		must(t, "Schema", err)
		if len(st.Applied) < 2 || st.Applied[1] <= bunstore.Baseline {
			t.Fatalf("applied migrations %v: want the baseline and the one dropping summary_state", st.Applied)
		}
		drop := st.Applied[1]
		if exists(t, s, "summary_state") {
			t.Fatalf("summary_state exists after the migrations")
		}
		// The database as the baseline leaves it, after a store without
		// event_counts wrote to it: the counts lack its writes.
		db := bunstore.DB(s)
		for _, stmt := range []string{
			"CREATE TABLE summary_state (name VARCHAR(64) NOT NULL PRIMARY KEY, stale BOOLEAN NOT NULL)",
			"INSERT INTO summary_state (name, stale) VALUES ('event_counts', TRUE), ('project_stats', FALSE)",
			"DELETE FROM event_counts",
			"DELETE FROM bun_migrations WHERE name = '" + drop + "'",
		} {
			_, err := db.ExecContext(ctx, stmt)
			must(t, stmt, err)
		}
		must(t, "Migrate", s.Migrate(ctx))
		if exists(t, s, "summary_state") {
			t.Errorf("summary_state exists after the migration")
		}
		if d := disagreements(t, s, open(t, url, bunstore.WithoutTuning())); len(d) > 0 {
			t.Errorf("after the migration: %s", strings.Join(d, "; "))
		}
	})
}

// exists reports whether s's database has table.
func exists(t *testing.T, s *bunstore.Store, table string) bool {
	t.Helper()
	_, err := bunstore.DB(s).ExecContext(context.Background(), "SELECT COUNT(*) FROM "+table)
	return err == nil
}

func TestUnknownTuning(t *testing.T) {
	_, err := bunstore.Open(context.Background(), "sqlite::memory:", bunstore.WithoutTuning("day-seek"))
	if err == nil || !strings.Contains(err.Error(), `unknown tuning "day-seek"`) {
		t.Errorf("got %v, want an error naming the unknown tuning", err)
	}
}
