package bunstore_test

import (
	"context"
	"fmt"
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
	db := bunstore.DB(s)
	var n int
	var err error
	switch db.Dialect().Name().String() {
	case "sqlite":
		err = db.QueryRow("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?", name).Scan(&n)
	case "pg":
		err = db.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?", name).Scan(&n)
	default:
		err = db.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", name).Scan(&n)
	}
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
