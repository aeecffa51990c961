package bunstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// TestPostgresTrigramIndex checks that Migrate makes the pg_trgm index of
// the token index's vocabulary, and that the migration that drops the
// trigram indexes of the events' texts (one per text, and an earlier one
// over both) drops them from a database that has them.
func TestPostgresTrigramIndex(t *testing.T) {
	ctx := context.Background()
	s := open(t, dbtest.Postgres(t))
	db := bunstore.DB(s)
	indexes := func() map[string]bool {
		t.Helper()
		var names []string
		// The definitions of this schema's indexes alone: a condition on
		// pg_indexes.indexdef may be computed for the indexes of every
		// schema, among them those another test is dropping ("could not
		// open relation").
		err := db.NewRaw(`SELECT indexname FROM (SELECT indexname, indexdef FROM pg_indexes
			WHERE schemaname = current_schema() OFFSET 0) AS i WHERE indexdef LIKE '%gin_trgm_ops%'`).Scan(ctx, &names)
		must(t, "pg_indexes", err)
		got := map[string]bool{}
		for _, n := range names {
			got[n] = true
		}
		return got
	}
	want := map[string]bool{"search_tokens_trgm": true}
	if got := indexes(); !maps.Equal(got, want) {
		t.Errorf("trigram indexes: got %v, want %v", got, want)
	}
	var schema string
	err := db.QueryRowContext(ctx, "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'").Scan(&schema)
	must(t, "pg_trgm schema", err)
	for _, stmt := range []string{
		"CREATE INDEX events_payload_trgm ON events USING gin (search_payload " + schema + ".gin_trgm_ops)",
		"CREATE INDEX events_meta_trgm ON events USING gin (search_meta " + schema + ".gin_trgm_ops)",
		"CREATE INDEX events_search_trgm ON events USING gin ((search_payload || E'\\n' || search_meta) " + schema + ".gin_trgm_ops)",
		"DELETE FROM bun_migrations WHERE name = '20261205090000'",
	} {
		_, err := db.ExecContext(ctx, stmt)
		must(t, stmt, err)
	}
	must(t, "Migrate", s.Migrate(ctx))
	if got := indexes(); !maps.Equal(got, want) {
		t.Errorf("trigram indexes after the migration: got %v, want %v", got, want)
	}
	f := newFixture(t, s)
	for _, q := range []flagadmin.EventQuery{
		{Text: `"shop"`, Limit: 10},
		{Text: `"shop"`, Limit: 10, TextScope: flagadmin.TextPayloadTypeCreator},
		{Text: "feature-created", Limit: 10, TextScope: flagadmin.TextPayloadTypeCreator},
	} {
		page, err := f.store.SearchEvents(ctx, q)
		must(t, "SearchEvents", err)
		if page.Total != 1 {
			t.Errorf("query %q scope %d: got %d events, want 1 (feature-created with its tag)", q.Text, q.TextScope, page.Total)
		}
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
	var logs syncbuffer.Buffer
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
