// Package textindex reads free-text event queries from an index of the
// search texts, a speed-up (bunstore.TextIndex) over scanning them:
//
//   - on SQLite (Match), from events_text, a contentless FTS5 table with
//     the trigram tokenizer and full detail over both texts (the baseline
//     schema creates it and the triggers that keep it; the SQLite dialect
//     fills it again after a bulk load, or leaves the loaded events
//     pending, to be indexed in the background), which answers a substring query
//     of 3 or more characters exactly from the index, without reading the
//     events;
//   - on PostgreSQL (Tokens), from the token index its dialect makes in a
//     migration: search_tokens, every token of the texts
//     (stored.SearchTokenPattern), which each insert of events adds
//     theirs to, and a GIN index of each text's tokens.
//     A query's longest run without a delimiter, of 3 or more
//     characters, is found in the few tokens that contain it, then in the
//     events that hold one of them, each checked for the whole query (a
//     query whose runs are shorter, by its longest run between two
//     delimiters: a whole token); a trigram index of the texts reads and
//     intersects the events of every trigram of the query, many of them
//     frequent.
//
// MySQL/MariaDB has no substring index.
package textindex

import (
	"strings"
	"unicode/utf8"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
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
// quote, written twice. The events whose texts a bulk load left pending
// (events_text_pending, none once the store has indexed them) are not in
// the index yet: their texts are scanned, as the core's SQLite condition
// does (instr), and their matches added to the index's.
func Match(text string, scope flagadmin.TextScope) (sqlq.Fragment, bool) {
	if !usable(text) {
		return sqlq.Fragment{}, false
	}
	phrase := `"` + strings.ReplaceAll(text, `"`, `""`) + `"`
	scan := sqlq.F("(instr(e.search_payload, ?) > 0 OR instr(e.search_meta, ?) > 0)", text, text)
	if scope == flagadmin.TextPayload {
		phrase = "search_payload : " + phrase
		scan = sqlq.F("instr(e.search_payload, ?) > 0", text)
	}
	return sqlq.Join(" UNION ALL ",
		sqlq.F("SELECT rowid FROM events_text WHERE events_text MATCH ?", phrase),
		scan.Wrap("SELECT e.id FROM events_text_pending p JOIN events e ON e.id > p.from_id AND e.id <= p.to_id WHERE ", ""),
	).Wrap("id IN (", ")"), true
}

// Tokens returns the condition that keeps the events whose search texts
// in scope contain text, read from PostgreSQL's token index, and whether
// it answers text: when text is usable and has a run without delimiters
// (stored.SearchTokenDelimiters) of 3 or more characters, or one with a
// delimiter on each side; when it has neither, the caller matches the
// texts by LIKE, a scan.
//
// Wherever a text contains text, each run of text without delimiters lies
// within one token of the text, and a run between two delimiters is one
// of its tokens. So the events that hold a token containing the longest
// run are candidates, with those that hold a token too long to be indexed
// (indexed as a double quote, which no token can be); without a run of 3,
// the events that hold the longest run between delimiters as a token.
// strpos checks each candidate's text for the whole of text. A text
// without delimiters is in a text exactly when it is in one of its tokens,
// so only the candidates of long tokens are checked (whole).
func Tokens(text string, scope flagadmin.TextScope) (sqlq.Fragment, bool) {
	if !usable(text) {
		return sqlq.Fragment{}, false
	}
	var tokens func(column string) sqlq.Fragment
	run := longestRun(text)
	if utf8.RuneCountInString(run) >= 3 {
		tokens = func(column string) sqlq.Fragment {
			return sqlq.LikeContains("token", run).Wrap("flagadmin_search_tokens("+column+") && ARRAY(SELECT token FROM search_tokens WHERE ", ` UNION ALL SELECT '"')`)
		}
	} else if token := longestToken(text); token != "" {
		tokens = func(column string) sqlq.Fragment {
			return sqlq.F("flagadmin_search_tokens("+column+") @> ARRAY[?]::text[]", token)
		}
	} else {
		return sqlq.Fragment{}, false
	}
	in := func(column string) sqlq.Fragment {
		return sqlq.And(tokens(column), sqlq.F("strpos("+column+", ?) > 0", text))
	}
	if run == text {
		in = func(column string) sqlq.Fragment { return whole(column, text) }
	}
	if scope == flagadmin.TextPayload {
		return in("search_payload"), true
	}
	return sqlq.Join(" OR ", in("search_payload").Wrap("(", ")"), in("search_meta").Wrap("(", ")")).Wrap("(", ")"), true
}

// whole is the condition that keeps the events whose text in column
// contains text, a text without delimiters of 3 or more characters: the
// events that hold a token containing it, all matches (no text is read),
// or a long token (indexed as a double quote) whose text contains it,
// read from their texts. The second set is chosen apart, by id, so that
// both are conditions PostgreSQL answers from indexes alone (a bitmap OR of
// the GIN index and the primary key): written as one condition with the
// texts' check, it checks every candidate's text, which costs more than
// the rest of a query of thousands of matches (1.5 µs a text, most of
// them compressed).
func whole(column, text string) sqlq.Fragment {
	return sqlq.Join(" OR ",
		sqlq.LikeContains("token", text).Wrap("flagadmin_search_tokens("+column+") && ARRAY(SELECT token FROM search_tokens WHERE ", ")"),
		sqlq.F("id = ANY(ARRAY(SELECT lt.id FROM events lt WHERE flagadmin_search_tokens(lt."+column+`) @> ARRAY['"'] AND strpos(lt.`+column+", ?) > 0))", text),
	).Wrap("(", ")")
}

// longestRun returns the longest run of text without delimiters (the
// first of the longest), in characters.
func longestRun(text string) string { return longest(text, false) }

// longestToken returns the longest run of text without delimiters that
// has a delimiter on each side in text (the first of the longest), or "".
func longestToken(text string) string { return longest(text, true) }

// longest returns the first of the longest runs of text without
// delimiters, in characters, of those with a delimiter on each side when
// bounded; "" when there is none.
func longest(text string, bounded bool) string {
	best, n := "", 0
	consider := func(start, end int) {
		if c := utf8.RuneCountInString(text[start:end]); c > n && (!bounded || start > 0 && end < len(text)) {
			best, n = text[start:end], c
		}
	}
	start := 0 // where the current run starts
	for i, r := range text {
		if stored.SearchTokenDelimiter(r) {
			consider(start, i)
			start = i + utf8.RuneLen(r)
		}
	}
	consider(start, len(text))
	return best
}

// usable reports whether an index answers a query for text exactly. It
// does when text has at least 3 characters (one trigram: the least either
// index looks up) and every character is indexed as itself: the trigram tokenizer reads U+FFFE,
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
