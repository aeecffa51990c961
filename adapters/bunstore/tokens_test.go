package bunstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/textindex"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestPostgresTokenDelimiters: the token index splits a text exactly at
// the characters the store's query side treats as delimiters
// (stored.SearchTokenDelimiters): a query that holds none of them is
// answered from the tokens, and is exact only if no other character
// splits a text.
func TestPostgresTokenDelimiters(t *testing.T) {
	ctx := context.Background()
	db := bunstore.DB(open(t, dbtest.Postgres(t)))
	tokens := func(text string) []string {
		t.Helper()
		var out []string
		err := db.NewRaw("SELECT unnest(flagadmin_search_tokens(?))", text).Scan(ctx, &out)
		must(t, "flagadmin_search_tokens", err)
		return out
	}
	for _, d := range stored.SearchTokenDelimiters {
		if got := tokens("ab" + string(d) + "cd"); strings.Join(got, "|") != "ab|cd" {
			t.Errorf("%q splits ab%scd into %q, want [ab cd]", d, string(d), got)
		}
	}
	// Characters that are not delimiters, among them other white space and
	// what LIKE, regular expressions and JSON escapes use.
	for _, r := range "\v\f\u00a0\u2028\u3000\\'!%_*?.^$|()+-/;=<>@#~`\u00e9\u65e5\U0001f680\ufffd" {
		if got := tokens("ab" + string(r) + "cd"); len(got) != 1 || got[0] != "ab"+string(r)+"cd" {
			t.Errorf("%q splits a token: got %q", r, got)
		}
	}
	if got := tokens(` {"a": ["b", "c"]},` + "\n"); strings.Join(got, "|") != "a|b|c" {
		t.Errorf("JSON: got %q, want [a b c] (no empty token)", got)
	}
}

// TestPostgresTokenIndex: the token index holds the tokens of events
// written one by one, copied in bulk, loaded into an empty store, and
// stored before the migration that makes it; its condition is answered
// from its GIN indexes.
func TestPostgresTokenIndex(t *testing.T) {
	ctx := context.Background()
	s := open(t, dbtest.Postgres(t))
	db := bunstore.DB(s)
	count := func(text string) int {
		t.Helper()
		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Text: text, Limit: 1})
		must(t, "SearchEvents "+text, err)
		return page.Total
	}
	hasToken := func(s *bunstore.Store, token string) bool {
		t.Helper()
		var n int
		must(t, "search_tokens", bunstore.DB(s).QueryRowContext(ctx, "SELECT COUNT(*) FROM search_tokens WHERE token = ?", token).Scan(&n))
		return n == 1
	}

	must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{
		{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: []byte(`{"name":"written-one-by-one"}`)},
	}}))
	must(t, "InsertEvents", s.InsertEvents(ctx, bulkEvents(300), 100)) // COPY
	for _, c := range []struct {
		token, query string
		want         int
	}{
		{"written-one-by-one", "en-one-by", 1},
		{"100%_done", "00%_do", 300},
		{"f7", "f7", 6},
	} {
		if !hasToken(s, c.token) {
			t.Errorf("search_tokens lacks %q", c.token)
		}
		if got := count(c.query); got != c.want {
			t.Errorf("query %q: %d events, want %d", c.query, got, c.want)
		}
	}

	// A load turns the trigger off for its inserts and fills
	// search_tokens at once; the trigger is on again after it.
	loaded := open(t, dbtest.Postgres(t))
	must(t, "Load", loaded.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error {
		return emit([]flagadmin.Event{{ID: 1, Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: []byte(`{"name":"loaded-in-bulk"}`)}})
	}))
	must(t, "Write", loaded.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{
		{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: []byte(`{"name":"written-after-the-load"}`)},
	}}))
	for _, token := range []string{"loaded-in-bulk", "written-after-the-load"} {
		if !hasToken(loaded, token) {
			t.Errorf("after a load, search_tokens lacks %q", token)
		}
	}

	// A database migrated before the token index: events stored without
	// it are indexed by the migration that makes it.
	for _, stmt := range []string{
		"DROP TRIGGER events_search_tokens ON events", "DROP TABLE search_tokens",
		"DROP INDEX events_payload_tokens", "DROP INDEX events_meta_tokens",
		"DROP FUNCTION flagadmin_add_search_tokens()", "DROP FUNCTION flagadmin_search_tokens(text)",
		"DELETE FROM bun_migrations WHERE name = '20261204090000'",
	} {
		_, err := db.ExecContext(ctx, stmt)
		must(t, stmt, err)
	}
	must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{
		{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: []byte(`{"name":"before-the-index"}`)},
	}}))
	must(t, "Migrate", s.Migrate(ctx))
	if got := count("ore-the-ind"); got != 1 {
		t.Errorf("an event stored before the migration: %d found, want 1", got)
	}
	if !hasToken(s, "written-one-by-one") || !hasToken(s, "before-the-index") {
		t.Error("the migration did not fill search_tokens from the events")
	}

	// The condition reads the GIN indexes; a query whose runs are all
	// shorter than 3 characters, by a run between two delimiters (a token).
	for _, q := range []string{"needle", `"ab"`} {
		for scope, want := range map[flagadmin.TextScope][]string{
			flagadmin.TextPayload:            {"events_payload_tokens"},
			flagadmin.TextPayloadTypeCreator: {"events_payload_tokens", "events_meta_tokens"},
		} {
			explainReads(t, db, q, scope, want)
		}
	}
	for _, q := range []string{`a"b`, "a b", "a:b", "{ab", "ab]", "ab", `""`, `":"`} {
		if _, ok := textindex.Tokens(q, flagadmin.TextPayload); ok {
			t.Errorf("textindex.Tokens answers %q, which has no run of 3 characters without a delimiter, nor one between two", q)
		}
	}
	for _, q := range []string{"abc", `"abc`, `"name":"ab"`, "ab cde", `"x":"y"`, " a ", `"ab"`} {
		if _, ok := textindex.Tokens(q, flagadmin.TextPayload); !ok {
			t.Errorf("textindex.Tokens does not answer %q, which has a run of 3 characters without a delimiter or one between two", q)
		}
	}
}

// explainReads checks that textindex.Tokens answers q in scope from the
// GIN indexes want (its expressions are theirs): with sequential scans
// off, the plan names them.
func explainReads(t *testing.T, db *bun.DB, q string, scope flagadmin.TextScope, want []string) {
	t.Helper()
	ctx := context.Background()
	cond, ok := textindex.Tokens(q, scope)
	if !ok {
		t.Fatalf("textindex.Tokens does not answer %q", q)
	}
	var plan []string
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		return tx.NewRaw("EXPLAIN SELECT id FROM events WHERE "+cond.Text, cond.Args...).Scan(ctx, &plan)
	})
	must(t, "EXPLAIN", err)
	for _, ix := range want {
		if !strings.Contains(strings.Join(plan, "\n"), ix) {
			t.Errorf("query %q scope %d: the plan does not read %s:\n%s", q, scope, ix, strings.Join(plan, "\n"))
		}
	}
}
