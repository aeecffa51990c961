package bunstore_test

import (
	"context"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// engines are the databases the tests run on; PostgreSQL and MySQL skip
// without a server (see internal/dbtest).
var engines = []struct {
	name string
	url  func(testing.TB) string
}{
	{"SQLite", dbtest.SQLite},
	{"Postgres", dbtest.Postgres},
	{"MySQL", dbtest.MySQL},
}

// forMigratedEngines runs test, a suite of many cases, on every engine,
// giving each case a database from a pool of databases Open migrated with
// the default options (migratedSQLite, migratedPostgres, migratedMySQL),
// for suites whose cases each open a store on a database of their own.
func forMigratedEngines(t *testing.T, test func(t *testing.T, newURL func(testing.TB) string)) {
	for _, name := range []string{"SQLite", "Postgres", "MySQL"} {
		t.Run(name, func(t *testing.T) {
			switch name {
			case "SQLite":
				test(t, migratedSQLite("tuned"))
			case "Postgres":
				test(t, migratedPostgres(t))
			default:
				test(t, migratedMySQL(t))
			}
		})
	}
}

// forEachEngine runs test on a fresh database of every engine.
func forEachEngine(t *testing.T, test func(t *testing.T, url string)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { test(t, e.url(t)) })
	}
}

// migratedSQLite gives each test a copy of a SQLite database that Open,
// with opts, migrated once for the test binary (key names the opts): the
// contract suites open hundreds of stores, and copying a migrated file is
// far cheaper than migrating each. Open still runs Migrate on the copy,
// which finds it up to date; the migration itself is tested on empty
// databases (dbtest.SQLite).
func migratedSQLite(key string, opts ...bunstore.Option) func(testing.TB) string {
	return func(t testing.TB) string {
		return dbtest.SQLiteFrom(t, key, func(url string) error {
			s, err := bunstore.Open(context.Background(), url, opts...)
			if err != nil {
				return err
			}
			return s.Close()
		})
	}
}

// migratedPostgres and migratedMySQL give each test of t (a suite) a
// database that Open, with opts, migrated, from a pool reused from test to
// test (dbtest.Pool): a test that ends leaves it as the migration left it
// for the next. Like migratedSQLite, this is for the contract suites,
// whose hundreds of cases would each migrate a database of their own; the
// migration itself is tested on fresh databases (dbtest.Postgres, MySQL).
func migratedPostgres(t *testing.T, opts ...bunstore.Option) func(testing.TB) string {
	return dbtest.PostgresPool(t, buildStore(opts...)).URL
}

func migratedMySQL(t *testing.T, opts ...bunstore.Option) func(testing.TB) string {
	return dbtest.MySQLPool(t, buildStore(opts...)).URL
}

// buildStore migrates the database of a URL by opening a store with opts.
func buildStore(opts ...bunstore.Option) func(url string) error {
	return func(url string) error {
		s, err := bunstore.Open(context.Background(), url, opts...)
		if err != nil {
			return err
		}
		return s.Close()
	}
}

// fixture is a small world: a service account with a token, a project and a
// feature, created through the Service.
type fixture struct {
	svc     *flagadmin.Service
	store   flagadmin.Store
	account flagadmin.User
	secret  string
}

func newFixture(t *testing.T, store flagadmin.Store) fixture {
	t.Helper()
	ctx := context.Background()
	svc := flagadmin.NewService(store)
	account, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "CI bot", Username: "ci-bot", RootRole: flagadmin.RoleEditor, IsService: true})
	must(t, "CreateUser", err)
	secret, _, err := svc.CreateAPIToken(ctx, flagadmin.System, flagadmin.NewAPIToken{Name: "ci", Type: flagadmin.TokenUser, UserID: &account.ID})
	must(t, "CreateAPIToken", err)
	_, err = svc.CreateProject(ctx, flagadmin.System, flagadmin.Project{ID: "web", Name: "Web"})
	must(t, "CreateProject", err)
	_, err = svc.CreateFeature(ctx, flagadmin.System, flagadmin.Feature{Name: "checkout", Project: "web", Tags: []flagadmin.Tag{{Type: "simple", Value: "shop"}}})
	must(t, "CreateFeature", err)
	return fixture{svc: svc, store: store, account: account, secret: secret}
}

// events returns every stored event, newest first.
func events(t *testing.T, s flagadmin.Store) []flagadmin.Event {
	t.Helper()
	page, err := s.SearchEvents(context.Background(), flagadmin.EventQuery{Limit: flagadmin.SearchMaxLimit})
	must(t, "SearchEvents", err)
	return page.Events
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
