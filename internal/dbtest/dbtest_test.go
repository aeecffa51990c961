package dbtest

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"
)

func TestSQLiteIsAFreshFile(t *testing.T) {
	a, b := SQLite(t), SQLite(t)
	if !strings.HasPrefix(a, "sqlite:/") || a == b {
		t.Errorf("got %q and %q, want two different sqlite: file URLs", a, b)
	}
	dir := strings.TrimSuffix(strings.TrimPrefix(a, "sqlite:"), "/flagadmin.db")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Errorf("the directory of %q: %v", a, err)
	}
}

// TestSQLiteFromCopiesOneBuild checks that build runs once per key and that
// every test gets a file of its own holding what build wrote.
func TestSQLiteFromCopiesOneBuild(t *testing.T) {
	builds := 0
	build := func(content string) func(string) error {
		return func(url string) error {
			builds++
			return os.WriteFile(strings.TrimPrefix(url, "sqlite:"), []byte(content), 0o644)
		}
	}
	// A key of this run alone: the templates are kept per test binary,
	// and a second run (-count 2) must build them again.
	key := t.TempDir()
	a := SQLiteFrom(t, key, build("built"))
	b := SQLiteFrom(t, key, build("built again"))
	other := SQLiteFrom(t, key+"/other", build("other"))
	if builds != 2 {
		t.Errorf("build ran %d times for two keys, want 2", builds)
	}
	if a == b {
		t.Fatalf("two copies share the file %q", a)
	}
	if err := os.WriteFile(strings.TrimPrefix(a, "sqlite:"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{a: "changed", b: "built", other: "other"} {
		got, err := os.ReadFile(strings.TrimPrefix(url, "sqlite:"))
		if err != nil || string(got) != want {
			t.Errorf("%s holds %q (%v), want %q", url, got, err, want)
		}
	}
}

// TestSQLiteTemplateRefusesAnOpenDatabase checks that a build leaving a
// write-ahead log with content is an error rather than a copy missing it.
func TestSQLiteTemplateRefusesAnOpenDatabase(t *testing.T) {
	_, err := buildSQLiteTemplate(func(url string) error {
		path := strings.TrimPrefix(url, "sqlite:")
		if err := os.WriteFile(path, []byte("db"), 0o644); err != nil {
			return err
		}
		return os.WriteFile(path+"-wal", []byte("frames"), 0o644)
	})
	if err == nil || !strings.Contains(err.Error(), "template.db-wal") {
		t.Errorf("got error %v, want one naming template.db-wal", err)
	}
}

// TestPostgresSchemaLifecycle checks that each test gets its own schema,
// first on the search_path, and that it is gone after the test.
func TestPostgresSchemaLifecycle(t *testing.T) {
	if os.Getenv(PostgresEnv) == "" {
		t.Skipf("set %s to run against a PostgreSQL server", PostgresEnv)
	}
	var schema string
	t.Run("inner", func(t *testing.T) {
		u, err := url.Parse(Postgres(t))
		if err != nil {
			t.Fatal(err)
		}
		schema = u.Query().Get("search_path")
		if !strings.HasPrefix(schema, "t_") {
			t.Fatalf("search_path %q, want a t_ schema", schema)
		}
		db := openAdmin(t, "pgx", u.String(), PostgresEnv)
		defer db.Close()
		var current string
		if err := db.QueryRow("SELECT current_schema()").Scan(&current); err != nil || current != schema {
			t.Errorf("current_schema(): got %q (%v), want %q", current, err, schema)
		}
	})
	db := openAdmin(t, "pgx", os.Getenv(PostgresEnv), PostgresEnv)
	defer db.Close()
	if n := count(t, db, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = $1", schema); n != 0 {
		t.Errorf("schema %s still exists after the test", schema)
	}
}

// TestMySQLDatabaseLifecycle checks that each test gets its own database
// and that it is gone after the test.
func TestMySQLDatabaseLifecycle(t *testing.T) {
	if os.Getenv(MySQLEnv) == "" {
		t.Skipf("set %s to run against a MySQL or MariaDB server", MySQLEnv)
	}
	var name string
	t.Run("inner", func(t *testing.T) {
		u, err := url.Parse(MySQL(t))
		if err != nil {
			t.Fatal(err)
		}
		name = strings.TrimPrefix(u.Path, "/")
		db := openAdmin(t, "mysql", mysqlDSN(u), MySQLEnv)
		defer db.Close()
		var current string
		if err := db.QueryRow("SELECT DATABASE()").Scan(&current); err != nil || current != name || !strings.HasPrefix(name, "t_") {
			t.Errorf("DATABASE(): got %q (%v), want the t_ database %q", current, err, name)
		}
	})
	u, _ := url.Parse(os.Getenv(MySQLEnv))
	db := openAdmin(t, "mysql", mysqlDSN(u), MySQLEnv)
	defer db.Close()
	if n := count(t, db, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name); n != 0 {
		t.Errorf("database %s still exists after the test", name)
	}
}

// TestSkipsWithoutServer checks that without a DSN and without Docker the
// helpers skip, saying which variable to set.
func TestSkipsWithoutServer(t *testing.T) {
	if err := dockerHealthy(); err == nil {
		t.Skip("a Docker provider is healthy: the helpers would start containers instead of skipping")
	}
	for _, c := range []struct {
		env    string
		helper func(testing.TB) string
		box    *container
	}{{PostgresEnv, Postgres, &postgresContainer}, {MySQLEnv, MySQL, &mysqlContainer}} {
		t.Setenv(c.env, "")
		var skipped bool
		t.Run(c.env, func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			c.helper(t)
			t.Error("the helper returned, want a skip")
		})
		if !skipped {
			t.Errorf("%s unset: the test was not skipped", c.env)
		}
		if !strings.Contains(c.box.skip, c.env) {
			t.Errorf("skip message %q does not name %s", c.box.skip, c.env)
		}
	}
}

func count(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMySQLDSN(t *testing.T) {
	cases := []struct{ url, want string }{
		{"mysql://root@127.0.0.1:3306/test", "root@tcp(127.0.0.1:3306)/test"},
		{"mysql://u:p%40ss@db.example/x", "u:p@ss@tcp(db.example:3306)/x"},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := mysqlDSN(u); !strings.HasPrefix(got, c.want) {
			t.Errorf("mysqlDSN(%s): got %q, want prefix %q", c.url, got, c.want)
		}
	}
}
