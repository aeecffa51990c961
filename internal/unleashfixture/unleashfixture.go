// Package unleashfixture restores the Unleash 8.2.0 fixture
// (../shared/fixtures/unleash-8.2.0: a dump a real unleash-server wrote, and
// the facts an import must reproduce) into fresh PostgreSQL databases for
// tests. It needs the server of FLAGADMIN_TEST_POSTGRES_DSN and psql (the
// dump loads its rows with COPY ... FROM stdin); without either, tests skip
// saying which is missing. The dump is restored once per server into a
// template database named after its hash (kept, like a cached container
// image); each test gets a copy of it, dropped when the test ends
// (Restore), or, if it only reads, a copy shared by every such test, kept
// beside the template, whose transactions are read-only (ReadOnly).
package unleashfixture

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// Dir is the fixture's directory.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "fixtures", "unleash-8.2.0")
}

// Expected is expected.json: facts (the results of the SQL queries) and
// the secrets Unleash stored only as hashes.
type Expected struct {
	Facts                map[string]json.RawMessage `json:"facts"`
	SecretsNotInDatabase struct {
		PersonalAccessTokens []struct {
			ID     int64  `json:"id"`
			Secret string `json:"secret"`
		} `json:"personalAccessTokens"`
		APITokens []struct {
			TokenName string `json:"tokenName"`
			Secret    string `json:"secret"`
		} `json:"apiTokens"`
	} `json:"secretsNotInDatabase"`
}

// Fact decodes the fact name into v, failing t when it is missing.
func (e *Expected) Fact(t testing.TB, name string, v any) {
	t.Helper()
	raw, ok := e.Facts[name]
	if !ok {
		t.Fatalf("unleashfixture: expected.json has no fact %q", name)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("unleashfixture: fact %q: %v", name, err)
	}
}

// LoadExpected reads expected.json.
func LoadExpected(t testing.TB) *Expected {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), "expected.json"))
	if err != nil {
		t.Fatalf("unleashfixture: %v", err)
	}
	var e Expected
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("unleashfixture: expected.json: %v", err)
	}
	return &e
}

// lockKey is the advisory lock that serialises making and copying the
// template across test binaries running at once.
const lockKey = 7_140_614_201

// template returns the name of a database holding the restored dump,
// restoring it when missing. It is named after the dump's hash and kept
// between runs (a cache, like a container image): the dump is restored
// once per server, not once per test.
func template(t testing.TB, admin *sql.Conn) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), "unleash.sql.gz"))
	if err != nil {
		t.Fatalf("unleashfixture: %v", err)
	}
	sum := sha256.Sum256(data)
	name := "unleash_fixture_" + hex.EncodeToString(sum[:6])
	ctx := context.Background()
	var exists bool
	if err := admin.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatalf("unleashfixture: %v", err)
	}
	if exists {
		return name
	}
	partial := name + "_partial_" + randomHex()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+partial); err != nil {
		t.Fatalf("unleashfixture: create database %s: %v", partial, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `gunzip -c "$1" | sed '/^\\\(un\)\{0,1\}restrict /d' | psql -q -v ON_ERROR_STOP=1 "$2" >/dev/null`,
		"restore", filepath.Join(Dir(), "unleash.sql.gz"), withDatabase(t, os.Getenv(dbtest.PostgresEnv), partial))
	if out, err := cmd.CombinedOutput(); err != nil {
		_, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+partial+" WITH (FORCE)")
		t.Fatalf("unleashfixture: restore the dump: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if _, err := admin.ExecContext(ctx, "ALTER DATABASE "+partial+" RENAME TO "+name); err != nil {
		t.Fatalf("unleashfixture: %v", err)
	}
	return name
}

// ReadOnly returns the URL of a database holding the fixture that tests
// share and must not change: its transactions are read-only (the
// database's default_transaction_read_only), so a write fails. It is made
// from the template once per server and kept beside it: a test that only
// reads the fixture (an import) saves the copy and the drop of a database
// of its own, which cost seconds each.
func ReadOnly(t testing.TB) string {
	t.Helper()
	dsn := adminDSN(t)
	db := openServer(t, dsn)
	defer db.Close()
	ctx := context.Background()
	admin, err := db.Conn(ctx)
	if err != nil {
		t.Fatalf("unleashfixture: cannot reach the server of %s: %v", dbtest.PostgresEnv, err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		t.Fatalf("unleashfixture: %v", err)
	}
	defer func() { _, _ = admin.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", lockKey) }()
	tmpl := template(t, admin)
	name := strings.Replace(tmpl, "unleash_fixture_", "unleash_readonly_", 1)
	var exists bool
	if err := admin.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatalf("unleashfixture: %v", err)
	}
	if !exists {
		// Made under another name and renamed once read-only, so that the
		// name never holds a copy that can be written.
		partial := name + "_partial_" + randomHex()
		for _, stmt := range []string{
			"CREATE DATABASE " + partial + " TEMPLATE " + tmpl,
			"ALTER DATABASE " + partial + " SET default_transaction_read_only = on",
			"ALTER DATABASE " + partial + " RENAME TO " + name,
		} {
			if _, err := admin.ExecContext(ctx, stmt); err != nil {
				_, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+partial+" WITH (FORCE)")
				t.Fatalf("unleashfixture: %s: %v", stmt, err)
			}
		}
	}
	return withDatabase(t, dsn, name)
}

// Restore returns the URL of a new database holding the fixture, dropped
// when t ends; tests may change it.
func Restore(t testing.TB) string {
	t.Helper()
	dsn := adminDSN(t)
	db := openServer(t, dsn)
	ctx := context.Background()
	admin, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		t.Fatalf("unleashfixture: cannot reach the server of %s: %v", dbtest.PostgresEnv, err)
	}
	if _, err := admin.ExecContext(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		admin.Close()
		db.Close()
		t.Fatalf("unleashfixture: %v", err)
	}
	// Released however this ends (t.Fatalf included): a lock left held
	// would make every other test binary wait for it forever.
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			_, _ = admin.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", lockKey)
			admin.Close()
		}
	}
	defer unlock()
	tmpl := template(t, admin)
	name := "unleash_copy_" + randomHex()
	_, err = admin.ExecContext(ctx, "CREATE DATABASE "+name+" TEMPLATE "+tmpl)
	unlock()
	if err != nil {
		db.Close()
		t.Fatalf("unleashfixture: copy the fixture: %v", err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("unleashfixture: drop %s: %v", name, err)
		}
		db.Close()
	})
	return withDatabase(t, dsn, name)
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// adminDSN is the server's DSN; it skips t when there is none or no psql.
func adminDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(dbtest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: the Unleash fixture is restored into PostgreSQL (set it to postgres://user@host:5432/db)", dbtest.PostgresEnv)
	}
	if _, err := os.Stat(filepath.Join(Dir(), "unleash.sql.gz")); err != nil {
		t.Skipf("the Unleash fixture is not at %s (a checkout without shared/ beside it): %v", Dir(), err)
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql is not installed: the Unleash fixture's dump is restored with psql")
	}
	return dsn
}

// withDatabase returns dsn with its database set to name.
func withDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("unleashfixture: %s is not a URL: %v", dbtest.PostgresEnv, err)
	}
	u.Path = "/" + name
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return u.String()
}

func openServer(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("unleashfixture: %v", err)
	}
	return db
}
