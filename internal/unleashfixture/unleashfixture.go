// Package unleashfixture restores the Unleash 8.2.0 fixture
// (../shared/fixtures/unleash-8.2.0: a dump a real unleash-server wrote, and
// the facts an import must reproduce) into fresh PostgreSQL databases for
// tests. It needs the server of FLAGADMIN_TEST_POSTGRES_DSN and psql (the
// dump loads its rows with COPY ... FROM stdin); without either, tests skip
// saying which is missing.
package unleashfixture

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
	templateMu   sync.Mutex // CREATE DATABASE ... TEMPLATE needs the template unused
)

// adminDSN is the server's DSN, or a skip reason.
func adminDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(dbtest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: the Unleash fixture is restored into PostgreSQL (set it to postgres://user@host:5432/db)", dbtest.PostgresEnv)
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

// template restores the dump once per test binary into a database that
// Restore copies. It is dropped when the process ends only by the server's
// own cleanup: DropTemplate removes it (call it from TestMain).
func template(t testing.TB) string {
	t.Helper()
	dsn := adminDSN(t)
	templateOnce.Do(func() {
		name := "unleash_fixture_" + randomHex()
		db := openServer(t, dsn)
		defer db.Close()
		if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
			templateErr = fmt.Errorf("create database %s: %w", name, err)
			return
		}
		templateName = name
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", `gunzip -c "$1" | sed '/^\\\(un\)\{0,1\}restrict /d' | psql -q -v ON_ERROR_STOP=1 "$2" >/dev/null`,
			"restore", filepath.Join(Dir(), "unleash.sql.gz"), withDatabase(t, dsn, name))
		if out, err := cmd.CombinedOutput(); err != nil {
			templateErr = fmt.Errorf("restore the dump: %v: %s", err, strings.TrimSpace(string(out)))
		}
	})
	if templateErr != nil {
		t.Fatalf("unleashfixture: %v", templateErr)
	}
	return templateName
}

// DropTemplate drops the restored template database, if any. Call it once
// after every test ran (TestMain).
func DropTemplate() {
	if templateName == "" {
		return
	}
	db, err := sql.Open("pgx", os.Getenv(dbtest.PostgresEnv))
	if err != nil {
		return
	}
	defer db.Close()
	_, _ = db.Exec("DROP DATABASE IF EXISTS " + templateName + " WITH (FORCE)")
}

// Restore returns the URL of a new database holding the fixture, dropped
// when t ends; tests may change it.
func Restore(t testing.TB) string {
	t.Helper()
	dsn := adminDSN(t)
	tmpl := template(t)
	name := "unleash_copy_" + randomHex()
	db := openServer(t, dsn)
	templateMu.Lock()
	_, err := db.Exec("CREATE DATABASE " + name + " TEMPLATE " + tmpl)
	templateMu.Unlock()
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
