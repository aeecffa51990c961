package bunstore_test

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// TestFreshColumnsCoverFeatureTypes: every feature type has a fresh_<type>
// column in project_stats, so the project list never falls back to
// counting every feature.
func TestFreshColumnsCoverFeatureTypes(t *testing.T) {
	for _, typ := range flagadmin.FeatureTypes() {
		col, ok := bunstore.FreshColumns[typ]
		if !ok {
			t.Errorf("feature type %q has no fresh column", typ)
			continue
		}
		for _, db := range []string{"postgres", "mysql", "sqlite"} {
			if !strings.Contains(bunstore.SchemaFile(db), "\n\t"+col+" BIGINT NOT NULL,") {
				t.Errorf("column %s of type %q is not in project_stats on %s", col, typ, db)
			}
		}
	}
}

// statsWorld is a batch of projects, members and features, and events for
// those projects and one that does not exist.
func statsWorld() (*flagadmin.Batch, []flagadmin.Event) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	b := &flagadmin.Batch{
		Users: []flagadmin.User{
			{ID: 1, Name: "Ada", Email: "ada@example.com"}, {ID: 2, Username: "bob"}, {ID: 3, Email: "cy@example.com"},
		},
		Groups: []flagadmin.Group{{ID: 1, Name: "Team", Users: []int64{2, 3}}, {ID: 2, Name: "Empty"}},
	}
	u := func(id int64, r flagadmin.ProjectRole) flagadmin.ProjectMembership {
		return flagadmin.ProjectMembership{UserID: &id, Role: r}
	}
	g := func(id int64, r flagadmin.ProjectRole) flagadmin.ProjectMembership {
		return flagadmin.ProjectMembership{GroupID: &id, Role: r}
	}
	for i := range 6 {
		p := flagadmin.Project{ID: fmt.Sprintf("p%d", i), Name: fmt.Sprintf("P %d", i%3), CreatedAt: now}
		switch i % 3 {
		case 0:
			p.Members = []flagadmin.ProjectMembership{u(1, flagadmin.ProjectRoleOwner), g(1, flagadmin.ProjectRoleMember)}
		case 1:
			p.Members = []flagadmin.ProjectMembership{g(1, flagadmin.ProjectRoleOwner), u(2, flagadmin.ProjectRoleMember), g(2, flagadmin.ProjectRoleOwner)}
		}
		if i == 5 {
			p.ArchivedAt = &now
		}
		b.Projects = append(b.Projects, p)
	}
	types := flagadmin.FeatureTypes()
	for i := range 120 {
		f := flagadmin.Feature{
			Name: fmt.Sprintf("f%d", i), Project: fmt.Sprintf("p%d", i%6), Type: types[i%len(types)],
			Stale: i%4 == 0, CreatedAt: now.Add(-time.Duration(i) * 24 * time.Hour),
		}
		if i%7 == 0 {
			a := now.Add(-time.Hour)
			f.ArchivedAt = &a
		}
		if i%3 == 0 {
			seen := now.Add(-time.Duration(i) * time.Minute)
			f.LastSeenAt = &seen
		}
		if i%5 == 0 { // in cleanup, archived too (i%7 == 0)
			f.Lifecycle = flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusKept}
		}
		b.Features = append(b.Features, f)
	}
	return b, bulkEvents(2345) // projects p0 .. p6; p6 does not exist
}

// sortedStats orders stats by project id and each one's owners by type and id.
func sortedStats(stats []flagadmin.ProjectStats) []flagadmin.ProjectStats {
	stats = slices.Clone(stats)
	slices.SortFunc(stats, func(a, b flagadmin.ProjectStats) int { return cmp.Compare(a.Project.ID, b.Project.ID) })
	for i := range stats {
		stats[i].Owners = slices.Clone(stats[i].Owners)
		slices.SortFunc(stats[i].Owners, func(a, b flagadmin.ProjectOwner) int {
			return cmp.Or(cmp.Compare(a.OwnerType, b.OwnerType), cmp.Compare(a.ID, b.ID))
		})
	}
	return stats
}

// TestProjectStatsMaintained: figures kept through the bulk path (COPY on
// PostgreSQL) and later writes equal the reference store's, and equal what
// the migrations compute from the tables.
func TestProjectStatsMaintained(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		ref := memstore.New()
		b, events := statsWorld()
		refBatch := *b
		must(t, "Write", s.Write(ctx, b))
		must(t, "InsertEvents", s.InsertEvents(ctx, events, 1000))
		refBatch.Events = events
		must(t, "memstore Write", ref.Write(ctx, &refBatch))
		// Later changes: feature updates (one stale, one completed, one
		// archived in cleanup, one out of cleanup), a group member, a
		// deleted user.
		for _, st := range []flagadmin.Store{s, ref} {
			for name, change := range map[string]func(f *flagadmin.Feature){
				"f1": func(f *flagadmin.Feature) { f.Stale = true },
				"f2": func(f *flagadmin.Feature) {
					f.Lifecycle = flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusDiscarded}
				},
				"f10": func(f *flagadmin.Feature) { a := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC); f.ArchivedAt = &a },
				"f15": func(f *flagadmin.Feature) { f.Lifecycle = flagadmin.Lifecycle{Stage: flagadmin.StageArchived} },
			} {
				must(t, "UpdateFeature "+name, st.UpdateFeature(ctx, name, func(f *flagadmin.Feature) (*flagadmin.Event, error) {
					change(f)
					return &flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "x", CreatedAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), Project: &f.Project}, nil
				}))
			}
			must(t, "Write group member", st.Write(ctx, &flagadmin.Batch{GroupMembers: []flagadmin.GroupMember{{GroupID: 1, UserID: 1}}}))
			must(t, "DeleteUser", st.DeleteUser(ctx, 3, func(flagadmin.User) (flagadmin.Event, error) {
				return flagadmin.Event{Type: flagadmin.EventUserDeleted, CreatedBy: "x", CreatedAt: time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)}, nil
			}))
		}
		viewer := int64(1)
		for _, archived := range []bool{false, true} {
			for _, cut := range []time.Time{time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} {
				for _, cutoffs := range []map[flagadmin.FeatureType]time.Time{
					flagadmin.PotentiallyStaleCutoffs(cut),
					{flagadmin.TypeKillSwitch: cut.Add(-10 * 24 * time.Hour)},
					{flagadmin.FeatureType("no-such-type"): cut, flagadmin.TypeRelease: cut}, // counted directly
					nil,
				} {
					q := flagadmin.ProjectStatsQuery{Archived: archived, FavoritesOf: &viewer, PotentiallyStaleBefore: cutoffs}
					want, err := ref.ProjectStats(ctx, q)
					must(t, "memstore ProjectStats", err)
					got, err := s.ProjectStats(ctx, q)
					must(t, "ProjectStats", err)
					if g, w := sortedStats(got), sortedStats(want); !reflect.DeepEqual(g, w) {
						t.Fatalf("archived=%v cut-offs %v:\n got %+v\nwant %+v", archived, cutoffs, g, w)
					}
				}
			}
		}
		q := flagadmin.ProjectStatsQuery{PotentiallyStaleBefore: flagadmin.PotentiallyStaleCutoffs(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))}
		kept, err := s.ProjectStats(ctx, q)
		must(t, "ProjectStats", err)
		must(t, "rebuild the summaries", s.Migrate(ctx, bunstore.WithRebuild()))
		refilled, err := s.ProjectStats(ctx, q)
		must(t, "ProjectStats after the refill", err)
		if g, w := sortedStats(kept), sortedStats(refilled); !reflect.DeepEqual(g, w) {
			t.Fatalf("kept at write time:\n %+v\nrecomputed:\n %+v", g, w)
		}
	})
}

// TestLastUpdatedOfUncountedProject: a project whose id is too long for a
// row of event_counts still shows its newest event (looked up in the
// events), as does one with counted events.
func TestLastUpdatedOfUncountedProject(t *testing.T) {
	for _, e := range engines[:2] { // MySQL keeps project ids under 256 characters
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, e.url(t))
			long, short := strings.Repeat("p", 1001), "short"
			at := time.Date(2026, 3, 4, 5, 6, 7, 8e6, time.UTC)
			b := &flagadmin.Batch{Projects: []flagadmin.Project{{ID: long, Name: "Long", Mode: flagadmin.ModeOpen}, {ID: short, Name: "Short", Mode: flagadmin.ModeOpen}}}
			for i, p := range []string{long, short, long} {
				b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "x", CreatedAt: at.Add(time.Duration(i) * time.Hour), Project: &p})
			}
			must(t, "Write", s.Write(ctx, b))
			stats, err := s.ProjectStats(ctx, flagadmin.ProjectStatsQuery{})
			must(t, "ProjectStats", err)
			got := lastUpdated(stats)
			want := map[string]time.Time{long: at.Add(2 * time.Hour), short: at.Add(time.Hour)}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("lastUpdatedAt: got %v, want %v", got, want)
			}
		})
	}
}

// TestLastUpdatedAfterRetentionPrunedAProject: once retention has pruned
// every event of a project, the project list shows no lastUpdatedAt for
// it, as the events left say (its counted rows still hold the time of
// the newest event they counted); a project with events left shows its
// newest.
func TestLastUpdatedAfterRetentionPrunedAProject(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		old, recent := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 4, 5, 6, 7, 8e6, time.UTC)
		b := &flagadmin.Batch{Projects: []flagadmin.Project{{ID: "gone", Name: "Gone", Mode: flagadmin.ModeOpen}, {ID: "kept", Name: "Kept", Mode: flagadmin.ModeOpen}}}
		for i, e := range []struct {
			project string
			at      time.Time
		}{{"gone", old}, {"kept", old}, {"gone", old.Add(time.Hour)}, {"kept", recent}} {
			b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "x", CreatedAt: e.at.Add(time.Duration(i) * time.Minute), Project: ptrTo(e.project)})
		}
		must(t, "Write", s.Write(ctx, b))
		before := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
		ids, err := s.PruneEvents(ctx, 100, func(*flagadmin.Event) (time.Time, error) { return before, nil }, func(ids []int64) (flagadmin.Event, error) {
			return vlog.PrunedEvent(ids, before, time.Hour, recent.Add(time.Hour))
		})
		must(t, "PruneEvents", err)
		if len(ids) != 3 {
			t.Fatalf("pruned %d events, want 3", len(ids))
		}
		stats, err := s.ProjectStats(ctx, flagadmin.ProjectStatsQuery{})
		must(t, "ProjectStats", err)
		if got, want := lastUpdated(stats), map[string]time.Time{"kept": recent.Add(3 * time.Minute)}; !reflect.DeepEqual(got, want) {
			t.Errorf("lastUpdatedAt: got %v, want %v", got, want)
		}
	})
}

// lastUpdated returns the LastUpdatedAt of each project of stats that has one.
func lastUpdated(stats []flagadmin.ProjectStats) map[string]time.Time {
	out := map[string]time.Time{}
	for _, st := range stats {
		if st.LastUpdatedAt != nil {
			out[st.Project.ID] = *st.LastUpdatedAt
		}
	}
	return out
}
