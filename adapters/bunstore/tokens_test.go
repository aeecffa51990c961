package bunstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

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

	// A load adds the tokens of the events it inserts, and so does a
	// write after it.
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
	must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{
		{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: []byte(`{"name":"before-the-index"}`)},
	}}))
	for _, stmt := range []string{
		"DROP TABLE search_tokens",
		"DROP INDEX events_payload_tokens", "DROP INDEX events_meta_tokens",
		"DROP FUNCTION flagadmin_search_tokens(text)",
		"DELETE FROM bun_migrations WHERE name = '20261204090000'",
	} {
		_, err := db.ExecContext(ctx, stmt)
		must(t, stmt, err)
	}
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

// TestPostgresTokensOfTheWriter: the tokens a writer adds to the token
// index's vocabulary (stored.TokenSet, less the long tokens) are those the
// GIN indexes hold (flagadmin_search_tokens), less the long-token marker: a token the
// vocabulary lacked would make every query inside it miss its events.
// Texts with every delimiter, other white space and punctuation, multibyte
// characters, and runs around the long-token bound in characters (not
// bytes), then random ones.
func TestPostgresTokensOfTheWriter(t *testing.T) {
	ctx := context.Background()
	db := bunstore.DB(open(t, dbtest.Postgres(t)))
	texts := tokenTestTexts()
	var sqlTokens []string
	err := db.NewRaw(`SELECT coalesce(array_to_json(array_remove(flagadmin_search_tokens(t), '"'))::text, '[]') FROM unnest(?::text[]) WITH ORDINALITY AS x(t, n) ORDER BY n`,
		pgdialect.Array(texts)).Scan(ctx, &sqlTokens)
	must(t, "flagadmin_search_tokens", err)
	for i, text := range texts {
		var want []string
		must(t, "tokens", json.Unmarshal([]byte(sqlTokens[i]), &want))
		slices.Sort(want)
		want = slices.Compact(want)
		set := stored.TokenSet{}
		set.Add(text)
		if got := slices.DeleteFunc(set.Sorted(), stored.LongSearchToken); !slices.Equal(got, want) {
			t.Errorf("text %d %.80q: the writer's tokens %.200q, the index's %.200q", i, text, got, want)
		}
	}
}

// tokenTestTexts are texts to split into tokens: with every delimiter,
// other white space and punctuation, multibyte characters, and runs
// around the long-token bound in characters (not bytes), then random ones.
func tokenTestTexts() []string {
	long := stored.MaxSearchTokenChars
	texts := []string{"", " ", `{"a":["b","c"]}`, "\t\n", "ab\u0001cd", "a\u00a0b\u2028c\vd\fe", `"x":"y", "z":  ""`,
		strings.Repeat("a", long), strings.Repeat("a", long+1), strings.Repeat("\u00e9", long), strings.Repeat("\u00e9", long+1),
		strings.Repeat("\U0001f680", long-1) + " " + strings.Repeat("\u65e5", long+2) + ":" + strings.Repeat("b", 3000),
		"x" + strings.Repeat("\u00e9", long/2) + strings.Repeat("y", long/2) + `"` + strings.Repeat("z", long-1) + "]"}
	for _, d := range stored.SearchTokenDelimiters {
		texts = append(texts, "ab"+string(d)+"cd"+string(d)+string(d)+"e"+string(d))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune(stored.SearchTokenDelimiters + "ab\u00e9\u65e5\U0001f680\v\u00a0'%_\\")
	for range 500 {
		var b strings.Builder
		for range rng.IntN(40) {
			r := alphabet[rng.IntN(len(alphabet))]
			for range 1 + rng.IntN(3)*rng.IntN(150) {
				b.WriteRune(r)
			}
		}
		texts = append(texts, b.String())
	}
	return texts
}

// TestPostgresTokenFunctionInlined: the token index's function is inlined
// into the plans (its body, not a call, in the index condition), on a
// fresh database and on one migrated from the function's first body; and
// it returns what that body did, token for token, in order, with the
// long-token markers, for every test text, texts of 256 and 257
// characters with a long token or none, and NULL.
func TestPostgresTokenFunctionInlined(t *testing.T) {
	ctx := context.Background()
	s := open(t, dbtest.Postgres(t))
	db := bunstore.DB(s)
	long := strconv.Itoa(stored.MaxSearchTokenChars)
	first := func(name string) string { // the function's first body
		return `CREATE OR REPLACE FUNCTION ` + name + `(text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$
	SELECT ARRAY(SELECT CASE WHEN length(t) > ` + long + ` THEN '"' ELSE t END
		FROM unnest(regexp_split_to_array($1, '` + stored.SearchTokenPattern + `')) AS t WHERE t <> '')
$f$`
	}
	_, err := db.ExecContext(ctx, first("tokens_first"))
	must(t, "tokens_first", err)
	n := stored.MaxSearchTokenChars
	texts := append(tokenTestTexts(), strings.Repeat("a", n), strings.Repeat("a", n+1), strings.Repeat("a", n-2)+" b",
		strings.Repeat("a", n-1)+" b", strings.Repeat("ab ", n/3+1), `{"k":"`+strings.Repeat("\u00e9", n)+`"}`)
	var differ []string
	err = db.NewRaw(`SELECT n::text FROM unnest(?::text[] || ARRAY[NULL]) WITH ORDINALITY AS x(t, n)
		WHERE flagadmin_search_tokens(t) IS DISTINCT FROM tokens_first(t) ORDER BY n`, pgdialect.Array(texts)).Scan(ctx, &differ)
	must(t, "compare", err)
	if len(differ) > 0 {
		t.Errorf("the texts numbered %v (from 1; the last is NULL) give other tokens than the first body", differ)
	}

	inlined := func(when string) {
		t.Helper()
		var plan []string
		err := db.NewRaw("EXPLAIN SELECT id FROM events WHERE flagadmin_search_tokens(search_payload) && ARRAY['x'] AND NOT text_later").Scan(ctx, &plan)
		must(t, "EXPLAIN", err)
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, "events_payload_tokens") || !strings.Contains(text, "regexp_split_to_array") {
			t.Errorf("%s: the plan does not read the index by the inlined function:\n%s", when, text)
		}
	}
	inlined("fresh")
	for _, stmt := range []string{first("flagadmin_search_tokens"), "DELETE FROM bun_migrations WHERE name = '20261208090000'"} {
		_, err := db.ExecContext(ctx, stmt)
		must(t, stmt, err)
	}
	must(t, "Migrate", s.Migrate(ctx))
	inlined("migrated from the first body")
}

// TestPostgresTokensTriggerDropped: a database that kept the vocabulary
// by a trigger loses it to the migration (the writer adds the tokens),
// and a write adds its tokens once, after it.
func TestPostgresTokensTriggerDropped(t *testing.T) {
	ctx := context.Background()
	s := open(t, dbtest.Postgres(t))
	db := bunstore.DB(s)
	for _, stmt := range []string{
		`CREATE FUNCTION flagadmin_add_search_tokens() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO search_tokens (token) SELECT DISTINCT t FROM added_events AS e, unnest(flagadmin_search_tokens(e.search_payload)) AS t WHERE t <> '"' ON CONFLICT DO NOTHING;
	RETURN NULL;
END
$f$`,
		"CREATE TRIGGER events_search_tokens AFTER INSERT ON events REFERENCING NEW TABLE AS added_events FOR EACH STATEMENT EXECUTE FUNCTION flagadmin_add_search_tokens()",
		"DELETE FROM bun_migrations WHERE name = '20261206090000'",
	} {
		_, err := db.ExecContext(ctx, stmt)
		must(t, stmt, err)
	}
	must(t, "Migrate", s.Migrate(ctx))
	var n int
	must(t, "pg_trigger", db.QueryRowContext(ctx, "SELECT COUNT(*) FROM pg_trigger WHERE tgname = 'events_search_tokens'").Scan(&n))
	if n != 0 {
		t.Error("the trigger events_search_tokens is still there after the migration")
	}
	must(t, "pg_proc", db.QueryRowContext(ctx, "SELECT COUNT(*) FROM pg_proc WHERE proname = 'flagadmin_add_search_tokens'").Scan(&n))
	if n != 0 {
		t.Error("the function flagadmin_add_search_tokens is still there after the migration")
	}
	must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{
		{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: []byte(`{"name":"after-the-trigger"}`)},
	}}))
	must(t, "search_tokens", db.QueryRowContext(ctx, "SELECT COUNT(*) FROM search_tokens WHERE token = 'after-the-trigger'").Scan(&n))
	if n != 1 {
		t.Errorf("search_tokens holds %q %d times, want once", "after-the-trigger", n)
	}
	page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Text: "ter-the-trig", Limit: 1})
	must(t, "SearchEvents", err)
	if page.Total != 1 {
		t.Errorf("query inside a token written after the migration: %d events, want 1", page.Total)
	}
}

// TestPostgresWholeRunReadsNoText: a query without delimiters is answered
// from the token index without reading the candidates' texts, but those
// of events with a long token (which the index cannot tell apart); a query
// with a delimiter checks each candidate's text. Read from the plan: only
// a scan of the long tokens' events (alias lt), or of the events left to
// the backlog (alias mk), filters by strpos.
func TestPostgresWholeRunReadsNoText(t *testing.T) {
	ctx := context.Background()
	s := open(t, dbtest.Postgres(t))
	db := bunstore.DB(s)
	must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{
		{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: []byte(`{"name":"a-needle-here"}`)},
		{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: []byte(`{"name":"` + noise(300) + `needle"}`)},
	}}))
	for _, c := range []struct {
		query     string
		checksAll bool // every candidate's text is read
	}{{"needle", false}, {`"a-needle-here"`, true}} {
		for _, scope := range []flagadmin.TextScope{flagadmin.TextPayload, flagadmin.TextPayloadTypeCreator} {
			cond, ok := textindex.Tokens(c.query, scope)
			if !ok {
				t.Fatalf("textindex.Tokens does not answer %q", c.query)
			}
			var plan string
			err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
					return err
				}
				return tx.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) SELECT id FROM events WHERE "+cond.Text, cond.Args...).Scan(&plan)
			})
			must(t, "EXPLAIN", err)
			if checksAll := filtersOutsideLongTokens(t, plan); checksAll != c.checksAll {
				t.Errorf("query %q scope %d: every candidate's text read: %v, want %v\n%s", c.query, scope, checksAll, c.checksAll, plan)
			}
		}
	}
}

// textCheck is strpos of an event's text (not of a token of the
// vocabulary, which holdingRun checks).
var textCheck = regexp.MustCompile(`strpos\((\w+\.)?search_(payload|meta),`)

// filtersOutsideLongTokens reports whether a node of plan (EXPLAIN's JSON)
// other than a scan of the long tokens' events (alias lt, numbered lt_1
// for the second text) or of the events marked as left to the backlog
// (alias mk) filters by strpos of a text.
func filtersOutsideLongTokens(t *testing.T, plan string) bool {
	t.Helper()
	type node struct {
		Alias  string `json:"Alias"`
		Filter string `json:"Filter"`
		Plans  []node `json:"Plans"`
	}
	var roots []struct {
		Plan node `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(plan), &roots); err != nil || len(roots) != 1 {
		t.Fatalf("EXPLAIN: %v\n%s", err, plan)
	}
	var walk func(n node) bool
	walk = func(n node) bool {
		// PostgreSQL numbers a repeated alias.
		longTokens := n.Alias == "lt" || strings.HasPrefix(n.Alias, "lt_")
		marked := n.Alias == "mk" // the events left to the backlog, scanned
		if !longTokens && !marked && textCheck.MatchString(n.Filter) {
			return true
		}
		return slices.ContainsFunc(n.Plans, walk)
	}
	return walk(roots[0].Plan)
}

// TestSQLiteTokensOfTheIndex: events_tokens' tokenizer splits each text
// into the writer's tokens (stored.TokenSet, the vocabulary's), each
// further split at its control characters, which no query holds (a query
// with one is scanned): a token of the vocabulary is then found as a
// phrase of its pieces in every event that holds it. Texts with every
// delimiter, other white space and punctuation, multibyte characters,
// random ones, then every ASCII character between two letters.
func TestSQLiteTokensOfTheIndex(t *testing.T) {
	ctx := context.Background()
	db := bunstore.DB(open(t, dbtest.SQLite(t), bunstore.WithTextBacklogHeld()))
	texts := tokenTestTexts()
	for c := rune(1); c < 0x80; c++ { // every ASCII character but NUL, which no text holds
		texts = append(texts, "ab"+string(c)+"cd "+string(c)+"e"+string(c))
	}
	for i, text := range texts {
		texts[i] = strings.ToLower(text) // as every search text is
		_, err := db.ExecContext(ctx, "INSERT INTO events_tokens (rowid, search_payload, search_meta) VALUES (?, ?, '')", i+1, texts[i])
		must(t, "index a text", err)
	}
	_, err := db.ExecContext(ctx, "CREATE VIRTUAL TABLE temp.tokens_instances USING fts5vocab(main, events_tokens, instance)")
	must(t, "fts5vocab", err)
	var rows []struct {
		Doc  int    `bun:"doc"`
		Term string `bun:"term"`
	}
	must(t, "the index's tokens", db.NewRaw("SELECT DISTINCT doc, term FROM temp.tokens_instances ORDER BY doc, term").Scan(ctx, &rows))
	indexed := make([][]string, len(texts))
	for _, r := range rows {
		indexed[r.Doc-1] = append(indexed[r.Doc-1], r.Term)
	}
	control := func(r rune) bool { return r < 0x20 || r == 0x7f }
	for i, text := range texts {
		set := stored.TokenSet{}
		set.Add(text)
		var want []string
		for _, token := range set.Sorted() {
			for _, piece := range strings.FieldsFunc(token, control) {
				want = append(want, piece)
			}
		}
		slices.Sort(want)
		want = slices.Compact(want)
		if !slices.Equal(indexed[i], want) {
			t.Errorf("text %d %.80q: the index's tokens %.200q, the writer's %.200q", i, text, indexed[i], want)
		}
	}
}

// TestSQLiteLongTokensChecked: FTS5 keeps the first 32 KiB of a token, so
// two long tokens that begin alike are one to events_tokens: a query
// found in a long token is checked in the texts, and a query found in a
// short one is not (every event holding it contains the query).
func TestSQLiteLongTokensChecked(t *testing.T) {
	ctx := context.Background()
	s := open(t, dbtest.SQLite(t))
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	prefix := strings.Repeat("x", 33_000)
	var events []flagadmin.Event
	for i, note := range []string{prefix + "needle", prefix + "other", "short-needle"} {
		events = append(events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ada", CreatedAt: at.Add(time.Duration(i) * time.Second),
			Data: json.RawMessage(`{"note":"` + note + `"}`)})
	}
	must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: events}))
	for query, want := range map[string]int{"needle": 2, "xxxxxxxxneedle": 1, "xxxxxxxx": 2, "short-needle": 1, "other": 1} {
		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Text: query, Limit: 10})
		must(t, "SearchEvents", err)
		if page.Total != want || len(page.Events) != want {
			t.Errorf("query %q: total %d, %d events; want %d", query, page.Total, len(page.Events), want)
		}
	}
}

// TestSQLiteTokenIndexMigrated: a database made before SQLite's token
// index (its texts in events_text, a trigram index) gets the index in a
// migration that leaves every event to the backlog, which fills it and its
// vocabulary; free text finds what the plain store finds throughout.
func TestSQLiteTokenIndexMigrated(t *testing.T) {
	ctx := context.Background()
	url := dbtest.SQLite(t)
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	{
		s := open(t, url)
		must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: textEvents(at)}))
		// The schema before the migration: events_text and its triggers.
		for _, stmt := range []string{
			"DROP TRIGGER events_tokens_delete", "DROP TRIGGER events_tokens_update",
			"DROP TABLE events_tokens", "DROP TRIGGER search_tokens_insert", "DROP TABLE search_tokens_text", "DROP TABLE search_tokens",
			"CREATE VIRTUAL TABLE events_text USING fts5(search_payload, search_meta, content='', tokenize='trigram case_sensitive 1')",
			"INSERT INTO events_text (rowid, search_payload, search_meta) SELECT id, search_payload, search_meta FROM events",
			`CREATE TRIGGER events_text_insert AFTER INSERT ON events BEGIN
	INSERT INTO events_text (rowid, search_payload, search_meta) VALUES (new.id, new.search_payload, new.search_meta);
END`,
			"DELETE FROM bun_migrations WHERE name IN ('20261209090000', '20261212090000', '20261214090000')",
		} {
			_, err := bunstore.DB(s).ExecContext(ctx, stmt)
			must(t, stmt, err)
		}
		must(t, "Close", s.Close())
	}
	s := open(t, url, bunstore.WithTextBacklogHeld())
	plain := open(t, url, bunstore.WithTextBacklogHeld(), bunstore.WithoutTuning(bunstore.TextIndex))
	if from, to := pendingRange(t, s); from != 0 || to != int64(len(textEvents(at))) {
		t.Fatalf("after the migration: pending (%d, %d], want (0, %d]", from, to, len(textEvents(at)))
	}
	compareText(t, s, plain, "after the migration")
	must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: textEvents(at.Add(time.Hour))}))
	fillBacklog(t, s)
	compareText(t, s, plain, "after the backlog")
	indexHoldsEachText(t, s)
}

// TestSQLiteNoSamplesOfTheTextIndex: after an ANALYZE of the database
// (which the store never runs), a store that opens it drops the planner's
// samples of the FTS5 tables' index tables, with which SQLite prepared
// FTS5's lookup of each segment again at every run; the other tables keep
// theirs.
func TestSQLiteNoSamplesOfTheTextIndex(t *testing.T) {
	ctx := context.Background()
	url := dbtest.SQLite(t)
	samples := func(s *bunstore.Store) (fts, others int) {
		t.Helper()
		must(t, "samples", bunstore.DB(s).QueryRowContext(ctx, `SELECT
			COUNT(*) FILTER (WHERE tbl IN ('events_tokens_idx', 'search_tokens_text_idx')),
			COUNT(*) FILTER (WHERE tbl NOT IN ('events_tokens_idx', 'search_tokens_text_idx')) FROM sqlite_stat4`).Scan(&fts, &others))
		return fts, others
	}
	s := open(t, url)
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := range 20 {
		must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: textEvents(at.Add(time.Duration(i) * time.Hour))}))
	}
	_, err := bunstore.DB(s).ExecContext(ctx, "ANALYZE")
	must(t, "ANALYZE", err)
	if fts, others := samples(s); fts == 0 || others == 0 {
		t.Fatalf("after ANALYZE: %d samples of the text index, %d of the other tables; want some of each", fts, others)
	}
	must(t, "Close", s.Close())
	s = open(t, url)
	if fts, others := samples(s); fts != 0 || others == 0 {
		t.Errorf("reopened: %d samples of the text index, want none; %d of the other tables, want some", fts, others)
	}
	page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Text: "launch", Limit: 5})
	must(t, "SearchEvents", err)
	if page.Total == 0 {
		t.Errorf("free text after the samples were dropped: no match for %q", "launch")
	}
}

// TestPostgresMarkLaterTextMigration: a database whose token indexes
// took every event, made before a follower's batches could leave their
// texts to the backlog, gets the marks' column (no event marked), the
// pending range and its token indexes again over the events not marked,
// and answers free text from them as before, for the events stored
// before the migration and after it.
func TestPostgresMarkLaterTextMigration(t *testing.T) {
	ctx := context.Background()
	s := open(t, dbtest.Postgres(t))
	db := bunstore.DB(s)
	for _, stmt := range []string{
		"DROP TABLE events_text_pending",
		"DROP INDEX events_text_later",
		"DROP INDEX events_payload_tokens", "DROP INDEX events_meta_tokens",
		"ALTER TABLE events DROP COLUMN text_later",
		"CREATE INDEX events_payload_tokens ON events USING gin (flagadmin_search_tokens(search_payload))",
		"CREATE INDEX events_meta_tokens ON events USING gin (flagadmin_search_tokens(search_meta))",
		"DELETE FROM bun_migrations WHERE name = '20261211090000'",
	} {
		_, err := db.ExecContext(ctx, stmt)
		must(t, stmt, err)
	}
	must(t, "InsertEvents", s.InsertEvents(ctx, bulkEvents(300), 100))
	must(t, "Migrate", s.Migrate(ctx))
	must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{
		{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: []byte(`{"name":"after-the-migration"}`)},
	}}))
	var defs []string
	must(t, "pg_indexes", db.NewRaw("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'events' AND indexname IN ('events_payload_tokens', 'events_meta_tokens', 'events_text_later') ORDER BY indexname").Scan(ctx, &defs))
	if len(defs) != 3 || !strings.HasSuffix(defs[0], "WHERE (NOT text_later)") || !strings.HasSuffix(defs[1], "WHERE (NOT text_later)") || !strings.HasSuffix(defs[2], "WHERE text_later") {
		t.Errorf("the indexes after the migration:\n%s", strings.Join(defs, "\n"))
	}
	var marked, pending int
	must(t, "count", db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM events WHERE text_later), (SELECT COUNT(*) FROM events_text_pending)").Scan(&marked, &pending))
	if marked != 0 || pending != 0 {
		t.Errorf("after the migration: %d events marked, %d ranges pending; want none", marked, pending)
	}
	for q, want := range map[string]int{"00%_do": 300, "er-the-migr": 1} {
		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Text: q, Limit: 1})
		must(t, "SearchEvents", err)
		if page.Total != want {
			t.Errorf("query %q: %d events, want %d", q, page.Total, want)
		}
		explainReads(t, db, q, flagadmin.TextPayloadTypeCreator, []string{"events_payload_tokens", "events_meta_tokens", "events_text_later"})
	}
}

// TestSQLiteTextInsertTriggerMigration: a database made before the writer
// indexed the texts of the events it inserts, whose trigger did: a store
// opened on it without migrating writes events that the index holds once
// (the trigger indexes them, the writer does not again), and once
// migrated the trigger is gone and the writer indexes each event it
// writes, once; free text finds the events written before and after.
func TestSQLiteTextInsertTriggerMigration(t *testing.T) {
	ctx := context.Background()
	url := dbtest.SQLite(t)
	db := bunstore.DB(open(t, url))
	for _, stmt := range []string{
		`CREATE TRIGGER events_tokens_insert AFTER INSERT ON events BEGIN
	INSERT INTO events_tokens (rowid, search_payload, search_meta)
	SELECT new.id, new.search_payload, new.search_meta WHERE NOT EXISTS (SELECT 1 FROM events_text_pending WHERE new.id > from_id AND new.id <= to_id);
END`,
		"DELETE FROM bun_migrations WHERE name = '20261212090000'",
	} {
		_, err := db.ExecContext(ctx, stmt)
		must(t, stmt, err)
	}
	s := open(t, url, bunstore.WithoutMigrate())
	write := func(name string) {
		t.Helper()
		must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{
			{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: []byte(`{"name":"` + name + `"}`)},
		}}))
	}
	// indexed is how many rows of the index hold token.
	indexed := func(token string) int {
		t.Helper()
		var n int
		must(t, "events_tokens", bunstore.DB(s).QueryRowContext(ctx, "SELECT COUNT(*) FROM events_tokens WHERE events_tokens MATCH ?", `"`+token+`"`).Scan(&n))
		return n
	}
	write("before-the-migration")
	if n := indexed("before-the-migration"); n != 1 {
		t.Errorf("an event written before the migration is indexed %d times, want once", n)
	}
	must(t, "Migrate", s.Migrate(ctx))
	var triggers int
	must(t, "sqlite_master", bunstore.DB(s).QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'events_tokens_insert'").Scan(&triggers))
	if triggers != 0 {
		t.Errorf("the trigger is still there after the migration")
	}
	write("after-the-migration")
	if n := indexed("after-the-migration"); n != 1 {
		t.Errorf("an event written after the migration is indexed %d times, want once", n)
	}
	for q, want := range map[string]int{"e-the-migration": 1, "the-migration": 2, "after-the-m": 1} {
		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Text: q, Limit: 5})
		must(t, "SearchEvents", err)
		if page.Total != want {
			t.Errorf("query %q: %d events, want %d", q, page.Total, want)
		}
	}
}

// TestPostgresTextPendingBounded holds PostgreSQL's full-text indexes to a
// short pending list, the entries of recent inserts that every search
// reads whole: a database made before the migration that bounds them has
// PostgreSQL's default (4 MB, the tokens of thousands of events); after
// it, a run of single writes leaves few events in the list, and free text
// still finds every one of them.
func TestPostgresTextPendingBounded(t *testing.T) {
	ctx := context.Background()
	url := dbtest.Postgres(t)
	db := bunstore.DB(open(t, url))
	indexes := []string{"events_payload_tokens", "events_meta_tokens", "search_tokens_trgm"}
	// limits are the pending list limits of indexes, "" for the default.
	limits := func(db *bun.DB) []string {
		t.Helper()
		out := make([]string, len(indexes))
		for i, name := range indexes {
			must(t, "reloptions", db.QueryRowContext(ctx, `SELECT COALESCE((SELECT option_value FROM pg_options_to_table(c.reloptions)
				WHERE option_name = 'gin_pending_list_limit'), '') FROM pg_class c WHERE c.oid = to_regclass(?)`, name).Scan(&out[i]))
		}
		return out
	}
	if got := limits(db); !slices.Equal(got, []string{"64", "64", "64"}) {
		t.Fatalf("a new database's pending list limits: %q, want 64 kB each", got)
	}
	// The database as the versions before the migration left it.
	for _, name := range indexes {
		_, err := db.ExecContext(ctx, "ALTER INDEX "+name+" RESET (gin_pending_list_limit)")
		must(t, "reset", err)
	}
	_, err := db.ExecContext(ctx, "DELETE FROM bun_migrations WHERE name = '20261213090000'")
	must(t, "bun_migrations", err)
	if _, err := db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pgstattuple"); err != nil {
		t.Skipf("pgstattuple, which reads the pending list's size, is not available: %v", err)
	}
	s := open(t, url, bunstore.WithoutMigrate())
	// pendingAfter writes n events one by one, each with a token of its
	// own, and returns how many events the token index's pending list holds.
	pendingAfter := func(prefix string, n int) int {
		t.Helper()
		for i := range n {
			must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada",
				Data: []byte(fmt.Sprintf(`{"name":"%s-%d","description":"one of a run of single writes, each with a token of its own"}`, prefix, i))}}}))
		}
		var pending int
		must(t, "pgstatginindex", bunstore.DB(s).QueryRowContext(ctx, "SELECT pending_tuples FROM pgstatginindex('events_payload_tokens')").Scan(&pending))
		return pending
	}
	const writes = 300
	if pending := pendingAfter("before", writes); pending != writes {
		t.Fatalf("before the migration %d of %d events written one by one are in the pending list, want all", pending, writes)
	}
	must(t, "Migrate", s.Migrate(ctx))
	if got := limits(bunstore.DB(s)); !slices.Equal(got, []string{"64", "64", "64"}) {
		t.Fatalf("after the migration the pending list limits are %q, want 64 kB each", got)
	}
	if pending := pendingAfter("after", writes); pending >= writes/2 {
		t.Errorf("after the migration %d of %d events written one by one are in the pending list", pending, writes)
	}
	for _, q := range []string{"before-7", "after-299", "after-0"} {
		page, err := s.SearchEvents(ctx, flagadmin.EventQuery{Text: q, Limit: 5})
		must(t, "SearchEvents", err)
		if page.Total < 1 {
			t.Errorf("query %q found nothing", q)
		}
	}
}
