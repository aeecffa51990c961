package bunstore

import (
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// textFilter keeps the events whose search texts contain text, a literal
// (see the package documentation and textindex.go).
func (s *Store) textFilter(sel *bun.SelectQuery, text string, scope flagadmin.TextScope) *bun.SelectQuery {
	switch s.dialect {
	case dialect.PG, dialect.MySQL:
		// On PostgreSQL each LIKE is served by its column's trigram index
		// (an OR by both, a BitmapOr); MySQL scans.
		pattern := "%" + likeEscaper.Replace(text) + "%"
		if scope == flagadmin.TextPayload {
			return sel.Where("search_payload LIKE ? ESCAPE '!'", pattern)
		}
		return sel.Where("(search_payload LIKE ? ESCAPE '!' OR search_meta LIKE ? ESCAPE '!')", pattern, pattern)
	default:
		if ftsUsable(text) {
			// Exact: no recheck against the texts.
			return sel.Where("id IN (SELECT rowid FROM events_text WHERE events_text MATCH ?)", ftsQuery(text, scope))
		}
		// SQLite's LIKE folds ASCII case; instr is an exact substring test.
		if scope == flagadmin.TextPayload {
			return sel.Where("instr(search_payload, ?) > 0", text)
		}
		return sel.Where("(instr(search_payload, ?) > 0 OR instr(search_meta, ?) > 0)", text, text)
	}
}

// ftsUsable reports whether events_text (sqliteTextIndex) answers a query
// for text exactly. It does when text has at least 3 characters (one
// trigram) and every character is indexed as itself: the trigram tokenizer
// reads U+FFFE, U+FFFF and invalid UTF-8 as U+FFFD and skips NUL, so
// queries with those, or with any other control character, are matched by
// a scan instead. Queries from the HTTP API never contain control
// characters and are valid UTF-8.
func ftsUsable(text string) bool {
	if !utf8.ValidString(text) || utf8.RuneCountInString(text) < 3 {
		return false
	}
	for _, r := range text {
		if r < 0x20 || r == 0x7f || r >= utf8.RuneError && r <= 0xFFFF {
			return false
		}
	}
	return true
}

// ftsQuery is the FTS5 query for text in scope: text as one quoted phrase
// (its trigrams at consecutive positions, so an exact substring), inside
// search_payload only for the payload scope, in either column otherwise (a
// phrase never spans two columns). In an FTS5 string every character is
// literal but the double quote, written twice.
func ftsQuery(text string, scope flagadmin.TextScope) string {
	phrase := `"` + strings.ReplaceAll(text, `"`, `""`) + `"`
	if scope == flagadmin.TextPayload {
		return "search_payload : " + phrase
	}
	return phrase
}

// likeEscaper makes a text a literal LIKE pattern with ESCAPE '!'.
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
