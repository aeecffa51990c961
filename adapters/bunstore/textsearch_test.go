package bunstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// textNotes are payload texts with the characters a free-text query must
// match literally: LIKE, GLOB and FTS5 syntax, quotes, backslashes,
// characters encoding/json escapes, non-ASCII letters and characters the
// FTS5 trigram tokenizer reads differently (U+FFFD, U+FFFE, U+FFFF).
var textNotes = []string{
	"100% off", "a_b_c", "bang!bang", "wild*card", "what?now", "[bracket]", "x]y", "^caret$",
	`say "hello"`, "it's o''neil", `back\slash`, `c:\path\to`, "<tag>&amp;", "r&d", "line\u2028sep",
	"ZÜRICH Straße", "ærø", "İstanbul", "日本語テキスト", "emoji 🚀 launch", "e\u0301clair",
	"rep\ufffdlacement", "non\uffffchar", "non\ufffechar", "and OR not NEAR(a b)", `col:"x" {a b}`,
	"ab", "xy", "a", "vandelay-industries", "abcabcabd",
	// Tokens (runs without a JSON structural character, quote or space) of
	// 256 and 257 characters, and one longer than an index entry may be:
	// PostgreSQL's token index keeps those over 256 characters apart.
	strings.Repeat("a", 255) + "q", strings.Repeat("b", 256) + "r", noise(3000) + "needle" + noise(20),
}

// noise is n characters of hexadecimal that compress poorly, the same on
// every run: a long token stays long in an index entry.
func noise(n int) string {
	var b strings.Builder
	for i := uint32(1); b.Len() < n; i++ {
		fmt.Fprintf(&b, "%08x", i*2654435761)
	}
	return b.String()[:n]
}

// textEvents are events with each note in their data, and creators with
// characters of their own (the deprecated search matches them too).
func textEvents(at time.Time) []flagadmin.Event {
	var out []flagadmin.Event
	uid := int64(1)
	for i, note := range textNotes {
		data, _ := json.Marshal(map[string]string{"note": note})
		out = append(out, flagadmin.Event{
			CreatedAt: at.Add(time.Duration(i) * time.Second), Type: flagadmin.EventFeatureUpdated,
			CreatedBy: fmt.Sprintf("user-%d", i%3), CreatedByUserID: &uid, Data: data,
		})
	}
	// \u escapes written by hand: the search texts hold the characters.
	out = append(out,
		flagadmin.Event{CreatedAt: at.Add(time.Hour), Type: flagadmin.EventFeatureCreated, CreatedBy: `o'brien "the \ admin"`,
			Data: json.RawMessage(`{"note":"caf\u00e9 \u0026 cr\u00e8me","q":"\"quoted\"","b":"a\\b","nl":"x\ny","nul":"\u0000"}`)},
		flagadmin.Event{CreatedAt: at.Add(2 * time.Hour), Type: flagadmin.EventFeatureArchived, CreatedBy: "ÆBLE 100%_!",
			PreData: json.RawMessage(`{"note":"pre \ud83d\ude80 data"}`), Tags: []flagadmin.Tag{{Type: "simple", Value: "Ta[g]*?"}}},
	)
	return out
}

// textQueries are the lower-cased queries run over textEvents.
var textQueries = []string{
	"100%", "%", "0%", "_", "a_b", "a_c", "!", "bang!", "*", "wild*", "d*c", "?", "t?n", "[", "[b", "]",
	"]y", "^", `"`, `"hello"`, `""`, `say "`, "'", "o''", "''n", `\`, `\s`, `c:\path`, `\\`, `\u`, `\n`, `\"`,
	"<tag>", "&", "r&d", "\u2028", "zürich", "straße", "ß", "ærø", "i̇stanbul", "日本", "本語テ", "🚀", "🚀 l", "e\u0301c",
	"\ufffd", "p\ufffdl", "n\uffffc", "n\ufffec", "n\ufffdc", "near(", "or not", "and", `col:"x"`, "{a b}", ":",
	"ab", "a", "b", "xy", "abcabd", "cabd", "abcabcabd", "café", "café & crème", `"quoted"`, `a\\b`, `x\ny`, `\u0000`,
	"o'brien", "the \\ admin", "æble", "100%_!", "feature-updated", "feature-created", "user-1", "\n", "pre 🚀",
	"ta[g]*?", `"simple"`, "vandelay", "zz-no-such-text", "updated\nuser", "note\":\"100%",
	"aaq", strings.Repeat("a", 255) + "q", "bbr", strings.Repeat("b", 256) + "r", "needle", noise(3000)[2990:] + "needle" + noise(3),
	noise(40), "needle-not-there", `:"vandelay`, `note":"vandelay-industries"}`, `"vandelay-industries"`, `industries"`,
	`{"note":"zürich`, `日本語テキスト"`, `abcabcabd" `,
	// The first, middle and last trigrams of a token, not in that order
	// or not joined: the vocabulary finds such a token, and no event
	// holds the query.
	"vandustries", "vanustryies", "cabcab", "abcab-abd",
	// Runs shorter than 3 characters, one between two delimiters: a token.
	`"ab"`, `"a"`, `:"xy"}`, `"a":`, `"b"`, `{"note":"a"}`, `"ab" `,
}

// TestTextSearchAgreesWithMemstore checks every free-text query of
// textQueries, in both scopes and at two pages, against memstore.
func TestTextSearchAgreesWithMemstore(t *testing.T) {
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		store := open(t, url)
		mem := memstore.New()
		for _, s := range []flagadmin.Store{store, mem} {
			must(t, "Write", s.Write(ctx, &flagadmin.Batch{Events: textEvents(at)}))
		}
		for _, text := range textQueries {
			for _, q := range []flagadmin.EventQuery{
				{Text: text, Limit: 50},
				{Text: text, Limit: 2, Offset: 1},
				{Text: text, Limit: 50, TextScope: flagadmin.TextPayloadTypeCreator},
				{Text: text, Limit: 2, Offset: 2, TextScope: flagadmin.TextPayloadTypeCreator},
			} {
				want, err := mem.SearchEvents(ctx, q)
				must(t, "memstore", err)
				got, err := store.SearchEvents(ctx, q)
				if err != nil {
					t.Fatalf("%+q: %v", q.Text, err)
				}
				if g, w := bunstore.PageKey(t, got), bunstore.PageKey(t, want); g != w {
					t.Errorf("query %+q scope %d offset %d:\ngot  %s\nwant %s", q.Text, q.TextScope, q.Offset, g, w)
				}
			}
		}
	})
}

// TestTextPageIsOneStatementOnPostgres: on PostgreSQL, a free-text page
// and its total are read in one statement (on pgx, which Bun's hooks do
// not see), a page past the last match too; with the page statements off,
// the core reads them in a transaction of several. The statements counted
// are those that match the text (the store's background work, such as
// appending the log's leaves, runs statements of its own meanwhile).
func TestTextPageIsOneStatementOnPostgres(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		opts []bunstore.Option
	}{{"one statement", nil}, {"page statements off", []bunstore.Option{bunstore.WithoutTuning(bunstore.PageStatements)}}} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t, dbtest.Postgres(t), c.opts...)
			mem := memstore.New()
			for _, st := range []flagadmin.Store{s, mem} {
				must(t, "Write", st.Write(ctx, &flagadmin.Batch{Events: textEvents(at)}))
			}
			stmts := &textStatements{}
			bunstore.ReaderDB(s).AddQueryHook(stmts)
			for _, q := range []flagadmin.EventQuery{{Text: "vandelay", Limit: 50}, {Text: "a", Limit: 2, Offset: 1}, {Text: "a", Limit: 2, Offset: 500}} {
				stmts.n.Store(0)
				got, err := s.SearchEvents(ctx, q)
				must(t, "SearchEvents", err)
				want, err := mem.SearchEvents(ctx, q)
				must(t, "memstore", err)
				if g, w := bunstore.PageKey(t, got), bunstore.PageKey(t, want); g != w {
					t.Errorf("query %q offset %d:\ngot  %s\nwant %s", q.Text, q.Offset, g, w)
				}
				if n := stmts.n.Load(); (c.opts == nil) != (n == 0) {
					t.Errorf("query %q offset %d: %d statements of the text through Bun", q.Text, q.Offset, n)
				}
			}
		})
	}
}

// textStatements counts the statements Bun runs that match a free text
// (read search_payload).
type textStatements struct{ n atomic.Int64 }

func (c *textStatements) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *textStatements) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if strings.Contains(e.Query, "search_payload") {
		c.n.Add(1)
	}
}
