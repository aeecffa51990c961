package bunstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestPostgresTrigramIndex checks that Migrate creates the pg_trgm index.
func TestPostgresTrigramIndex(t *testing.T) {
	s := open(t, dbtest.Postgres(t))
	var n int
	err := bunstore.DB(s).QueryRow("SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'events_search_trgm'").Scan(&n)
	must(t, "pg_indexes", err)
	if n != 1 {
		t.Errorf("events_search_trgm: got %d indexes, want 1", n)
	}
}

// TestPostgresWithoutTrigram runs the store as a role that may not create
// extensions, in a database without pg_trgm: Migrate logs that once and the
// free-text query still works.
func TestPostgresWithoutTrigram(t *testing.T) {
	adminURL := os.Getenv(dbtest.PostgresEnv)
	if adminURL == "" {
		t.Skipf("set %s (a superuser DSN) to run this test", dbtest.PostgresEnv)
	}
	ctx := context.Background()
	admin, err := sql.Open("pgx", adminURL)
	must(t, "connect", err)
	t.Cleanup(func() { admin.Close() })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "t_" + hex.EncodeToString(b)
	for _, stmt := range []string{"CREATE ROLE " + name + " LOGIN", "CREATE DATABASE " + name} {
		_, err := admin.ExecContext(ctx, stmt)
		must(t, stmt, err)
	}
	t.Cleanup(func() {
		for _, stmt := range []string{"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)", "DROP ROLE IF EXISTS " + name} {
			if _, err := admin.ExecContext(ctx, stmt); err != nil {
				t.Errorf("%s: %v", stmt, err)
			}
		}
	})
	u, err := url.Parse(adminURL)
	must(t, "parse", err)
	u.Path = "/" + name
	super, err := sql.Open("pgx", u.String())
	must(t, "connect", err)
	_, err = super.ExecContext(ctx, "CREATE SCHEMA app AUTHORIZATION "+name)
	super.Close()
	must(t, "create schema", err)

	u.User = url.User(name)
	q := u.Query()
	q.Set("search_path", "app")
	u.RawQuery = q.Encode()
	var logs lockedBuffer
	s := open(t, u.String(), bunstore.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	must(t, "Migrate again", s.Migrate(ctx))
	if got := strings.Count(logs.String(), "pg_trgm extension is not available"); got != 1 {
		t.Errorf("got %d warnings about pg_trgm, want 1; logs:\n%s", got, logs.String())
	}
	f := newFixture(t, s)
	page, err := f.store.SearchEvents(ctx, flagadmin.EventQuery{Text: `"shop"`, Limit: 10})
	must(t, "SearchEvents", err)
	if page.Total != 1 {
		t.Errorf("query without the index: got %d events, want 1 (feature-created with its tag)", page.Total)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
