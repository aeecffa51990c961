package bunstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// appliedMigrations counts the rows of bun's migration table.
func appliedMigrations(t *testing.T, s *bunstore.Store) int {
	t.Helper()
	n, err := bunstore.DB(s).NewSelect().TableExpr("bun_migrations").Count(context.Background())
	must(t, "count bun_migrations", err)
	return int(n)
}

func TestMigrateIsIdempotent(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		f := newFixture(t, s)
		before := len(events(t, s))
		must(t, "Migrate again", s.Migrate(ctx))
		must(t, "Migrate a third time", s.Migrate(ctx))
		// A second store on the same database finds it up to date.
		again := open(t, url)
		if got, want := appliedMigrations(t, again), bunstore.MigrationCount(); got != want {
			t.Errorf("applied migrations: got %d, want %d", got, want)
		}
		if got := len(events(t, again)); got != before {
			t.Errorf("events after migrating again: got %d, want %d", got, before)
		}
		if _, err := again.User(ctx, f.account.ID); err != nil {
			t.Errorf("User after migrating again: %v", err)
		}
	})
}

func TestMigrateConcurrently(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		const replicas = 6
		stores := make([]*bunstore.Store, replicas)
		for i := range stores {
			stores[i] = open(t, url, bunstore.WithoutMigrate())
		}
		var wg sync.WaitGroup
		errs := make([]error, replicas)
		for i, s := range stores {
			wg.Go(func() {
				// Two goroutines per store: within and across stores.
				var inner sync.WaitGroup
				var second error
				inner.Go(func() { second = s.Migrate(ctx) })
				errs[i] = s.Migrate(ctx)
				inner.Wait()
				if errs[i] == nil {
					errs[i] = second
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("replica %d: Migrate: %v", i, err)
			}
		}
		if got, want := appliedMigrations(t, stores[0]), bunstore.MigrationCount(); got != want {
			t.Errorf("applied migrations: got %d, want %d (each applied once)", got, want)
		}
		f := newFixture(t, stores[replicas-1])
		if _, err := stores[0].User(ctx, f.account.ID); err != nil {
			t.Errorf("the schema does not work: %v", err)
		}
	})
}

func TestWithoutMigrateLeavesTheSchemaAlone(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		s := open(t, url, bunstore.WithoutMigrate())
		exists, err := tableExists(s, "events")
		must(t, "table lookup", err)
		if exists {
			t.Fatal("events exists before Migrate, want no schema")
		}
		must(t, "Migrate", s.Migrate(context.Background()))
		if exists, err = tableExists(s, "events"); err != nil || !exists {
			t.Fatalf("events after Migrate: exists %v, error %v", exists, err)
		}
	})
}

// tableExists asks the database whether it has a table name in the
// store's schema, with the query every engine answers.
func tableExists(s *bunstore.Store, name string) (bool, error) {
	return catalogHas(s, name,
		"SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
		"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?",
		"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?")
}

// catalogHas asks the store's database whether its catalog counts name,
// with the query of its engine: SQLite's, PostgreSQL's or MySQL's.
func catalogHas(s *bunstore.Store, name, sqlite, pg, mysql string) (bool, error) {
	db := bunstore.DB(s)
	query := mysql
	switch db.Dialect().Name().String() {
	case "sqlite":
		query = sqlite
	case "pg":
		query = pg
	}
	var n int
	err := db.QueryRow(query, name).Scan(&n)
	return n > 0, err
}

// TestGeneratedIDsContinueAboveGivenOnes writes users and groups with ids
// of their own and rows referring to them, then without ids: the ids
// generated are larger than every id stored, before and after more
// explicit ids (PostgreSQL's identity is raised past them; MySQL and
// SQLite move on by themselves).
func TestGeneratedIDsContinueAboveGivenOnes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		must(t, "Write given ids", s.Write(ctx, &flagadmin.Batch{
			Users:  []flagadmin.User{{ID: 3, Name: "Ada", RootRole: flagadmin.RoleAdmin}, {ID: 41, Name: "Eve", RootRole: flagadmin.RoleEditor}},
			Groups: []flagadmin.Group{{ID: 7, Name: "Platform", Users: []int64{41}}},
		}))
		g, err := s.Group(ctx, 7)
		must(t, "Group(7)", err)
		if fmt.Sprint(g.Users) != "[41]" {
			t.Errorf("group 7 users: got %v, want [41]", g.Users)
		}
		b := &flagadmin.Batch{
			Users:  []flagadmin.User{{Name: "New", RootRole: flagadmin.RoleViewer}},
			Groups: []flagadmin.Group{{Name: "New group"}},
		}
		must(t, "Write new user and group", s.Write(ctx, b))
		if b.Users[0].ID <= 41 || b.Groups[0].ID <= 7 {
			t.Errorf("generated ids: got user %d, group %d; want above 41 and 7", b.Users[0].ID, b.Groups[0].ID)
		}
		must(t, "Write an explicit id", s.Write(ctx, &flagadmin.Batch{Users: []flagadmin.User{{ID: 900, Name: "Given", RootRole: flagadmin.RoleViewer}}}))
		b = &flagadmin.Batch{Users: []flagadmin.User{{Name: "Newer", RootRole: flagadmin.RoleViewer}}}
		must(t, "Write after the explicit id", s.Write(ctx, b))
		if b.Users[0].ID <= 900 {
			t.Errorf("id after an explicit 900: got %d, want above", b.Users[0].ID)
		}
	})
}

// TestSchemaReportsWithoutMigrating: Schema tells a database without
// flagadmin's schema (all migrations pending) from one up to date, and
// creates nothing itself.
func TestSchemaReportsWithoutMigrating(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s, err := bunstore.Open(ctx, url, bunstore.WithoutMigrate())
		must(t, "Open", err)
		defer s.Close()
		for range 2 {
			st, err := s.Schema(ctx)
			must(t, "Schema", err)
			if !st.Empty() || len(st.Pending) == 0 {
				t.Fatalf("Schema of a new database: %+v; want empty, every migration pending", st)
			}
		}
		must(t, "Migrate", s.Migrate(ctx))
		st, err := s.Schema(ctx)
		must(t, "Schema", err)
		if st.Empty() || len(st.Pending) > 0 {
			t.Errorf("Schema after Migrate: %+v; want every migration applied", st)
		}
	})
}

// TestMigrateRefusesANewerSchema: a database that has migrations this
// version does not know was migrated by a newer one: Migrate (so Open, so
// serve) refuses it in one line naming them, and Schema reports them.
func TestMigrateRefusesANewerSchema(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		_, err := bunstore.DB(s).ExecContext(ctx, "INSERT INTO bun_migrations (name, group_id, migrated_at) VALUES ('20991231000000', 99, CURRENT_TIMESTAMP)")
		must(t, "record a newer migration", err)
		err = s.Migrate(ctx)
		if !errors.Is(err, bunstore.ErrNewerSchema) || !strings.Contains(err.Error(), "it has migrations 20991231000000, which this one does not know") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Migrate: got %v, want one line of ErrNewerSchema naming 20991231000000", err)
		}
		if _, err := bunstore.Open(ctx, url); !errors.Is(err, bunstore.ErrNewerSchema) {
			t.Errorf("Open: got %v, want ErrNewerSchema", err)
		}
		st, err := s.Schema(ctx)
		must(t, "Schema", err)
		if fmt.Sprint(st.Unknown) != "[20991231000000]" || len(st.Pending) != 0 || len(st.Development) != 0 {
			t.Errorf("Schema: %+v, want 20991231000000 unknown, nothing pending", st)
		}
		if !errors.Is(st.Err(), bunstore.ErrNewerSchema) {
			t.Errorf("Schema's Err: got %v, want ErrNewerSchema", st.Err())
		}
	})
}

// TestMigrateRefusesADevelopmentSchema: a database made by a development
// version of flagadmin holds, in bun_migrations, only names older than the
// baseline: those of the schema before the first release's, or the
// earlier baseline and the migrations after it. Migrate (so Open, so
// serve) refuses it in one line that says so and what to do, changing
// nothing, and Schema reports it.
func TestMigrateRefusesADevelopmentSchema(t *testing.T) {
	for _, c := range []struct {
		name       string
		migrations []string
	}{
		{"first development schema", []string{"20250601000001", "20250601000002", "20250601000015", "20250601000017"}},
		{"earlier baseline", []string{"20261126000000"}},
		{"earlier baseline and later migrations", []string{"20261126000000", "20261127000001", "20261127000002", "20261127000003", "20261127000004", "20261202000001", "20261202000002"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, url string) {
				ctx := context.Background()
				s := open(t, url)
				db := bunstore.DB(s)
				_, err := db.ExecContext(ctx, "DELETE FROM bun_migrations")
				must(t, "delete the migrations", err)
				for _, name := range c.migrations {
					_, err := db.ExecContext(ctx, "INSERT INTO bun_migrations (name, group_id, migrated_at) VALUES (?, 1, CURRENT_TIMESTAMP)", name)
					must(t, "record "+name, err)
				}
				newest := c.migrations[len(c.migrations)-1]
				want := "the database was made by a development version of flagadmin, before the first release's schema, and this flagadmin cannot open it " +
					"(its newest migration is " + newest + "): start a new database and import or seed it again"
				err = s.Migrate(ctx)
				if !errors.Is(err, bunstore.ErrDevelopmentSchema) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("Migrate: got %v, want one line of ErrDevelopmentSchema containing %q", err, want)
				}
				if _, err := bunstore.Open(ctx, url); !errors.Is(err, bunstore.ErrDevelopmentSchema) {
					t.Errorf("Open: got %v, want ErrDevelopmentSchema", err)
				}
				var names []string
				must(t, "read the migrations", db.NewRaw("SELECT name FROM bun_migrations ORDER BY name").Scan(ctx, &names))
				if fmt.Sprint(names) != fmt.Sprint(c.migrations) {
					t.Errorf("bun_migrations after the refusal: %v, want %v unchanged", names, c.migrations)
				}
				st, err := s.Schema(ctx)
				must(t, "Schema", err)
				if fmt.Sprint(st.Development) != fmt.Sprint(c.migrations) || len(st.Unknown) != 0 || len(st.Applied) != 0 {
					t.Errorf("Schema: %+v, want the development migrations %v, nothing applied", st, c.migrations)
				}
				if err := st.Err(); !errors.Is(err, bunstore.ErrDevelopmentSchema) || !strings.Contains(err.Error(), want) {
					t.Errorf("Schema's Err: got %v, want ErrDevelopmentSchema containing %q", err, want)
				}
			})
		})
	}
}

// TestSchemaRequiresTheLeafColumns: the database itself refuses an event
// without a salt and a leaf without its tombstone (the columns are NOT
// NULL), so that no writer breaks the verifiable log.
func TestSchemaRequiresTheLeafColumns(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := bunstore.DB(open(t, url))
		for _, stmt := range []string{
			"INSERT INTO events (id, created_at, type, created_by, search_payload, search_meta) VALUES (1000, 0, 'feature-created', 'eve', '', '')",
			"INSERT INTO log_leaves (idx, event_id, hash, created_at, type) VALUES (1000, 1000, ?, 0, 'feature-created')",
			"INSERT INTO log_leaves (idx, event_id, hash, type, content) VALUES (1000, 1000, ?, 'feature-created', ?)",
			"INSERT INTO log_leaves (idx, event_id, hash, created_at, content) VALUES (1000, 1000, ?, 0, ?)",
		} {
			hash := make([]byte, 32)
			args := []any{hash, hash}[:strings.Count(stmt, "?")]
			if _, err := db.ExecContext(ctx, stmt, args...); err == nil {
				t.Errorf("%s: written, want it refused", stmt)
			}
		}
	})
}

// A migration adds features_stage (lifecycle_stage, project), in which
// the cleanup counts of project_stats are counted (TestCleanupCountsMigrated),
// to every database, also to one where a run that failed part-way made it
// already.
func TestFeaturesStageIndex(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		if exists, err := indexExists(s, "features_stage"); err != nil || !exists {
			t.Fatalf("features_stage after Open: exists %v, error %v", exists, err)
		}
		_, err := bunstore.DB(s).ExecContext(ctx, "DELETE FROM bun_migrations WHERE name = '20261203090000'")
		must(t, "forget the migration", err)
		must(t, "Migrate with the index there", s.Migrate(ctx))
		if got, want := appliedMigrations(t, s), bunstore.MigrationCount(); got != want {
			t.Errorf("applied migrations: got %d, want %d", got, want)
		}
	})
}

// indexExists asks the database whether the store's schema has an index
// name, as tableExists asks for a table.
func indexExists(s *bunstore.Store, name string) (bool, error) {
	return catalogHas(s, name,
		"SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = ?",
		"SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?",
		"SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND index_name = ?")
}

// A database made before project_stats kept the cleanup counts gets them
// in a migration: the column added and every project's features in cleanup
// counted, also where a run that failed part-way added the column already.
func TestCleanupCountsMigrated(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		b, _ := statsWorld()
		must(t, "Write", s.Write(ctx, b))
		want, err := s.ProjectStats(ctx, flagadmin.ProjectStatsQuery{})
		must(t, "ProjectStats", err)
		if counted := slices.ContainsFunc(want, func(st flagadmin.ProjectStats) bool { return st.CleanupCount > 0 }); !counted {
			t.Fatal("no project of the world has features in cleanup")
		}
		db := bunstore.DB(s)
		for _, before := range []string{"ALTER TABLE project_stats DROP COLUMN cleanup", "UPDATE project_stats SET cleanup = 0"} {
			_, err := db.ExecContext(ctx, before)
			must(t, before, err)
			_, err = db.ExecContext(ctx, "DELETE FROM bun_migrations WHERE name = '20261210090000'")
			must(t, "forget the migration", err)
			must(t, "Migrate after "+before, s.Migrate(ctx))
			got, err := s.ProjectStats(ctx, flagadmin.ProjectStatsQuery{})
			must(t, "ProjectStats", err)
			if g, w := sortedStats(got), sortedStats(want); !reflect.DeepEqual(g, w) {
				t.Fatalf("after %s and the migration:\n got %+v\nwant %+v", before, g, w)
			}
		}
	})
}
