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
		if !strings.Contains(bunstore.ProjectStatsSchema(), "\n\t\t"+col+" BIGINT NOT NULL,") {
			t.Errorf("column %s of type %q is not in project_stats", col, typ)
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
		// Later changes: a feature update, a group member, a deleted user.
		for _, st := range []flagadmin.Store{s, ref} {
			must(t, "UpdateFeature", st.UpdateFeature(ctx, "f1", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
				f.Stale = true
				return &flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "x", CreatedAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), Project: &f.Project}, nil
			}))
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
		must(t, "RefillProjectStats", bunstore.RefillProjectStats(s))
		must(t, "RefillLastEvents", bunstore.RefillLastEvents(s))
		refilled, err := s.ProjectStats(ctx, q)
		must(t, "ProjectStats after the refill", err)
		if g, w := sortedStats(kept), sortedStats(refilled); !reflect.DeepEqual(g, w) {
			t.Fatalf("kept at write time:\n %+v\nrecomputed:\n %+v", g, w)
		}
	})
}

// newestEvents returns the newest createdAt of the events of each project
// among projects.
func newestEvents(events []flagadmin.Event, projects []flagadmin.Project) map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range projects {
		for _, e := range events {
			if e.Project != nil && *e.Project == p.ID && e.CreatedAt.After(out[p.ID]) {
				out[p.ID] = e.CreatedAt
			}
		}
	}
	return out
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

// tableColumns lists the columns of table (name, type, nullability; on
// SQLite, the statements that define it and its indexes).
func tableColumns(t *testing.T, s *bunstore.Store, table string) []string {
	t.Helper()
	db := bunstore.DB(s)
	var q string
	switch db.Dialect().Name().String() {
	case "pg":
		q = "SELECT column_name || ' ' || data_type || ' ' || is_nullable FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position"
	case "mysql":
		q = "SELECT CONCAT(column_name, ' ', column_type, ' ', is_nullable) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position"
	default:
		q = "SELECT COALESCE(sql, name) FROM sqlite_master WHERE tbl_name = ? ORDER BY name" // its definition and indexes
	}
	var cols []string
	must(t, "columns of "+table, db.NewRaw(q, table).Scan(context.Background(), &cols))
	return cols
}

// TestLastEventsMigrationDownAndUp: rolling migration project_last_events
// back sets project_stats.last_event_at to each project's newest event,
// the largest of its rows whatever their shards; applying it again gives
// the project list the same lastUpdatedAt and the tables the definitions of
// a fresh database's.
func TestLastEventsMigrationDownAndUp(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, e.url(t), bunstore.WithoutMigrate())
			must(t, "migrate before project_last_events", bunstore.MigrateBefore(s, bunstore.LastEventsMigration))
			must(t, "Migrate", s.Migrate(ctx)) // project_last_events and the later migrations, one group
			b, events := statsWorld()
			must(t, "Write", s.Write(ctx, b))
			must(t, "InsertEvents", s.InsertEvents(ctx, events, 1000))
			want := newestEvents(events, b.Projects)
			// Rows as concurrent writers leave them: p1's newest on shard 7
			// and the time of an older event of p1 on shard 0.
			db := bunstore.DB(s)
			_, err := db.NewRaw("UPDATE project_last_events SET shard = 7 WHERE project = 'p1'").Exec(ctx)
			must(t, "move p1's row", err)
			_, err = db.NewRaw("INSERT INTO project_last_events (project, shard, last_event_at) VALUES ('p1', 0, ?)",
				events[1].CreatedAt.UnixMilli()).Exec(ctx)
			must(t, "add a row of p1", err)
			// Active and archived projects.
			list := func() []flagadmin.ProjectStats {
				t.Helper()
				var out []flagadmin.ProjectStats
				for _, archived := range []bool{false, true} {
					stats, err := s.ProjectStats(ctx, flagadmin.ProjectStatsQuery{Archived: archived})
					must(t, "ProjectStats", err)
					out = append(out, stats...)
				}
				return out
			}
			before := list()
			if got := lastUpdated(before); !reflect.DeepEqual(got, want) {
				t.Fatalf("lastUpdatedAt: got %v, want %v", got, want)
			}

			must(t, "roll back", bunstore.RollBack(s))
			var rows []struct {
				ProjectID   string `bun:"project_id"`
				LastEventAt *int64 `bun:"last_event_at"`
			}
			must(t, "read project_stats", db.NewRaw("SELECT project_id, last_event_at FROM project_stats").Scan(ctx, &rows))
			got := map[string]time.Time{}
			for _, r := range rows {
				if r.LastEventAt != nil {
					got[r.ProjectID] = time.UnixMilli(*r.LastEventAt).UTC()
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("project_stats.last_event_at after the rollback: got %v, want %v", got, want)
			}
			if exists, err := tableExists(s, "project_last_events"); err != nil || exists {
				t.Errorf("project_last_events after the rollback: exists %v, error %v; want it dropped", exists, err)
			}

			must(t, "Migrate again", s.Migrate(ctx))
			if g, w := sortedStats(list()), sortedStats(before); !reflect.DeepEqual(g, w) {
				t.Errorf("project list after the rollback and migrating again:\n got %+v\nwant %+v", g, w)
			}
			fresh := open(t, e.url(t))
			for _, table := range []string{"project_stats", "project_last_events"} {
				if g, w := tableColumns(t, s, table), tableColumns(t, fresh, table); !reflect.DeepEqual(g, w) {
					t.Errorf("columns of %s after down and up: got %q, want a fresh database's %q", table, g, w)
				}
			}
		})
	}
}
