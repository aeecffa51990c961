// Package textindex reads free-text event queries on SQLite from
// events_text, a speed-up (bunstore.TextIndex) over scanning the search
// texts: events_text is a contentless FTS5 table with the trigram
// tokenizer and full detail over both texts (the baseline schema creates
// it and the triggers that keep it; the SQLite dialect fills it again
// after a bulk load), which answers a substring query of 3 or more
// characters exactly from the index (Match), without reading the events.
//
// The other databases have no such query: PostgreSQL's pg_trgm indexes
// (made by its dialect after the migrations) serve the store's LIKE
// filters by themselves, and MySQL/MariaDB has no substring index.
package textindex

import (
	"strings"
	"unicode/utf8"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Match returns the condition that keeps the events whose search texts in
// scope contain text, read from SQLite's events_text, and whether the
// index answers text exactly (usable); when it does not, the caller scans
// the texts.
//
// The query is text as one quoted phrase (its trigrams at consecutive
// positions, so an exact substring), inside search_payload only for the
// payload scope, in either column otherwise (a phrase never spans two
// columns). In an FTS5 string every character is literal but the double
// quote, written twice.
func Match(text string, scope flagadmin.TextScope) (sqlq.Fragment, bool) {
	if !usable(text) {
		return sqlq.Fragment{}, false
	}
	phrase := `"` + strings.ReplaceAll(text, `"`, `""`) + `"`
	if scope == flagadmin.TextPayload {
		phrase = "search_payload : " + phrase
	}
	return sqlq.F("id IN (SELECT rowid FROM events_text WHERE events_text MATCH ?)", phrase), true
}

// usable reports whether events_text answers a query for text exactly. It
// does when text has at least 3 characters (one trigram) and every
// character is indexed as itself: the trigram tokenizer reads U+FFFE,
// U+FFFF and invalid UTF-8 as U+FFFD and skips NUL, so queries with those,
// or with any other control character, are matched by a scan instead.
// Queries from the HTTP API never contain control characters and are
// valid UTF-8.
//
// The tokenizer would also skip a NUL in a stored text, so a text holding
// one would match as if it were not there; no write of the store can
// store one (Bun's SQLite formatting refuses it, as PostgreSQL does).
func usable(text string) bool {
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
