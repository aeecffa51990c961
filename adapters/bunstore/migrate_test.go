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

// TestGeneratedIDsMigration upgrades a database whose user and group ids
// were plain columns, holding rows with ids of their own and rows
// referring to them: the rows survive (on SQLite, where the tables are
// rebuilt, their references too), and the ids generated afterwards are
// larger than every id stored, before and after more explicit ids.
func TestGeneratedIDsMigration(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url, bunstore.WithoutMigrate())
		must(t, "migrate before generated_ids", bunstore.MigrateBefore(s, bunstore.IDsMigration))
		db := bunstore.DB(s)
		secret := "user:old-secret"
		for _, stmt := range []string{
			"INSERT INTO users (id, name, username, email, root_role, is_service) VALUES (3, 'Ada', 'ada', 'ada@example.com', 'Admin', FALSE), (41, 'Eve', '', 'eve@example.com', 'Editor', FALSE)",
			"INSERT INTO user_groups (id, name) VALUES (7, 'Platform')",
			"INSERT INTO group_members (group_id, user_id) VALUES (7, 41)",
			"INSERT INTO api_tokens (secret_hash, name, type, user_id, project, environment, created_at) VALUES ('" +
				flagadmin.HashSecret(secret) + "', 'old', 'user', 41, '', '', 0)",
		} {
			_, err := db.ExecContext(ctx, stmt)
			must(t, "insert old rows", err)
		}
		must(t, "Migrate", s.Migrate(ctx))

		if _, owner, err := s.LookupToken(ctx, flagadmin.HashSecret(secret)); err != nil || owner == nil || owner.ID != 41 {
			t.Fatalf("token of user 41 after the migration: owner %v, error %v", owner, err)
		}
		g, err := s.Group(ctx, 7)
		must(t, "Group(7)", err)
		if fmt.Sprint(g.Users) != "[41]" {
			t.Errorf("group 7 users after the migration: got %v, want [41]", g.Users)
		}
		b := &flagadmin.Batch{
			Users:  []flagadmin.User{{Name: "New", RootRole: flagadmin.RoleViewer}},
			Groups: []flagadmin.Group{{Name: "New group"}},
		}
		must(t, "Write new user and group", s.Write(ctx, b))
		if b.Users[0].ID <= 41 || b.Groups[0].ID <= 7 {
			t.Errorf("ids after the migration: got user %d, group %d; want above 41 and 7", b.Users[0].ID, b.Groups[0].ID)
		}
		must(t, "Write an explicit id", s.Write(ctx, &flagadmin.Batch{Users: []flagadmin.User{{ID: 900, Name: "Given", RootRole: flagadmin.RoleViewer}}}))
		b = &flagadmin.Batch{Users: []flagadmin.User{{Name: "Newer", RootRole: flagadmin.RoleViewer}}}
		must(t, "Write after the explicit id", s.Write(ctx, b))
		if b.Users[0].ID <= 900 {
			t.Errorf("id after an explicit 900: got %d, want above", b.Users[0].ID)
		}
	})
}
