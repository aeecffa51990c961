// Package textindex reads free-text event queries from a token index of
// the search texts, a speed-up (bunstore.TextIndex) over scanning them: a
// vocabulary of every token of the texts (stored.SearchTokenPattern), and
// the events that hold each. A query's longest run without a delimiter,
// of 3 or more characters, is found in the few tokens that contain it,
// then in the events that hold one of them, each checked for the whole
// query unless the query is that run (a query whose runs are shorter, by
// its longest run between two delimiters: a whole token). A trigram index
// of the texts would read and intersect the events of every trigram of
// the query, many of them in nearly every event.
//
//   - on SQLite (Match), from the FTS5 tables its dialect makes in a
//     migration: search_tokens and its trigram index search_tokens_text,
//     the vocabulary, and events_tokens, the tokens of each text and of
//     the event's project (the events that a bulk load left pending,
//     events_text_pending, none once the store has indexed them, are
//     scanned), which also gives a query's page and total (FindPage);
//   - on PostgreSQL (Tokens), from search_tokens, its pg_trgm index, and
//     a GIN index of each text's tokens (the events a follower's batches
//     left to the backlog, marked, none once the store has indexed them,
//     are scanned).
//
// MySQL/MariaDB has no substring index.
package textindex

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Match returns the condition that keeps the events whose search texts in
// scope contain text, read from SQLite's token index, and whether it
// answers text (as Tokens); when it does not, the caller scans the texts.
//
// The events that hold a token are an FTS5 query of events_tokens: the
// token as a phrase (its pieces at consecutive positions, where a control
// character splits it), inside both texts, or search_payload only for the
// payload scope (textColumns; a phrase never spans two columns). The
// tokens that contain the longest run, read once from the vocabulary
// (vocabulary), are written into one
// FTS5 query of events_tokens, each token a phrase (its double quotes
// doubled: a changed text is in the vocabulary whole), or "" (no event)
// when none does. A long token (stored.LongSearchToken), of which FTS5 keeps
// the first 32 KiB, finds candidates only: a text without delimiters in
// one is checked in the texts too. The events of the pending range are
// scanned (instr).
func Match(text string, scope flagadmin.TextScope) (sqlq.Fragment, bool) {
	if !usable(text) {
		return sqlq.Fragment{}, false
	}
	column, check := textColumns(scope), sqlq.F("(instr(e.search_payload, ?) > 0 OR instr(e.search_meta, ?) > 0)", text, text)
	if scope == flagadmin.TextPayload {
		check = sqlq.F("instr(e.search_payload, ?) > 0", text)
	}
	holding := func(query sqlq.Fragment) sqlq.Fragment { // the events whose texts match an FTS5 query
		return query.Wrap("SELECT rowid FROM events_tokens WHERE events_tokens MATCH ", "")
	}
	checked := func(events sqlq.Fragment) sqlq.Fragment {
		return sqlq.And(events.Wrap("e.id IN (", ")"), check).Wrap("SELECT e.id FROM events e WHERE ", "")
	}
	tokens := func(length string) sqlq.Fragment { return tokenQuery(column, length).Wrap("(", ")") }
	var arms []sqlq.Fragment
	run, short := longestRun(text), strconv.Itoa(stored.MaxSearchTokenChars)
	switch {
	case utf8.RuneCountInString(run) >= 3 && run == text:
		arms = []sqlq.Fragment{holding(tokens("<= " + short)), checked(holding(tokens("> " + short)))}
	case utf8.RuneCountInString(run) >= 3:
		arms = []sqlq.Fragment{checked(holding(tokens(">= 0")))}
	case longestToken(text) != "":
		arms = []sqlq.Fragment{checked(holding(sqlq.F("?", column+`"`+longestToken(text)+`"`)))}
	default:
		return sqlq.Fragment{}, false
	}
	scan := check.Wrap("SELECT e.id FROM events_text_pending p JOIN events e ON e.id > p.from_id AND e.id <= p.to_id WHERE ", "")
	events := sqlq.Join(" UNION ALL ", append(arms, scan)...)
	if utf8.RuneCountInString(run) >= 3 {
		events = sqlq.Join(" ", vocabulary(run), events)
	}
	return events.Wrap("id IN (", ")"), true
}

// textColumns is the column filter of an FTS5 query of events_tokens
// for the texts in scope: both texts, or the payload's alone (never the
// project's column).
func textColumns(scope flagadmin.TextScope) string {
	if scope == flagadmin.TextPayload {
		return "search_payload : "
	}
	return "{search_payload search_meta} : "
}

// tokenQuery is the statement of the FTS5 query (column, textColumns,
// limits it to the texts) of the events holding a token of the
// vocabulary that contains the run (run_tokens: vocabulary), of those
// whose length the condition length keeps: each token a phrase, its
// double quotes doubled, or "" (no event) when none does.
func tokenQuery(column, length string) sqlq.Fragment {
	return sqlq.F(`SELECT coalesce('` + column + `(' || group_concat('"' || replace(token, '"', '""') || '"', ' OR ') || ')', '""')
	FROM run_tokens WHERE length(token) ` + length)
}

// vocabulary is the WITH clause of run_tokens, the tokens of the
// vocabulary that contain run (of 3 or more characters), read once for
// the arms that each keep some of them (materialized: as a subquery of
// each arm, SQLite ran the lookup once per arm, the larger part of a
// query for a feature's name).
//
// The trigram index finds the tokens that hold run's first, middle and
// last trigrams (spreadTrigrams), and instr keeps those that contain run.
// A phrase of all its trigrams finds them alone, but FTS5 reads each
// trigram's entries, about 0.13 ms a trigram here: for a feature's name
// of 20 characters, 3.6 ms against 0.5 ms for three and the check of the
// few tokens that hold them.
func vocabulary(run string) sqlq.Fragment {
	return sqlq.F(`WITH run_tokens AS MATERIALIZED (SELECT t.token FROM search_tokens_text v JOIN search_tokens t ON t.id = v.rowid
	WHERE search_tokens_text MATCH ? AND instr(t.token, ?) > 0)`, spreadTrigrams(run), run)
}

// spreadTrigrams is the FTS5 query of the texts that hold run's first,
// middle and last trigrams (run has 3 characters or more), each a phrase
// (its double quotes doubled): every text that contains run holds them.
func spreadTrigrams(run string) string {
	r := []rune(run)
	n := len(r)
	var q strings.Builder
	for i, at := range []int{0, (n - 3) / 2, n - 3} {
		if i > 0 {
			q.WriteByte(' ')
		}
		q.WriteString(`"` + strings.ReplaceAll(string(r[at:at+3]), `"`, `""`) + `"`)
	}
	return q.String()
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
//
// The GIN indexes leave out the events marked as left to the backlog
// (stored.LaterTextColumn): each condition on an index keeps the events
// not marked, and the marked ones, chosen apart by their own index, are
// checked by strpos.
func Tokens(text string, scope flagadmin.TextScope) (sqlq.Fragment, bool) {
	if !usable(text) {
		return sqlq.Fragment{}, false
	}
	var tokens func(column string) sqlq.Fragment
	run := longestRun(text)
	if utf8.RuneCountInString(run) >= 3 {
		tokens = func(column string) sqlq.Fragment {
			return holdingRun(run).Wrap("flagadmin_search_tokens("+column+") && ARRAY(SELECT token FROM search_tokens WHERE ", ` UNION ALL SELECT '"') AND NOT `+stored.LaterTextColumn)
		}
	} else if token := longestToken(text); token != "" {
		tokens = func(column string) sqlq.Fragment {
			return sqlq.F("flagadmin_search_tokens("+column+") @> ARRAY[?]::text[] AND NOT "+stored.LaterTextColumn, token)
		}
	} else {
		return sqlq.Fragment{}, false
	}
	check := func(column string) sqlq.Fragment { return sqlq.F("strpos("+column+", ?) > 0", text) }
	in := func(column string) sqlq.Fragment { return sqlq.And(tokens(column), check(column)) }
	if run == text {
		in = func(column string) sqlq.Fragment { return whole(column, text) }
	}
	indexed, marked := in("search_payload").Wrap("(", ")"), check("mk.search_payload")
	if scope != flagadmin.TextPayload {
		indexed = sqlq.Join(" OR ", indexed, in("search_meta").Wrap("(", ")"))
		marked = sqlq.Join(" OR ", marked, check("mk.search_meta")).Wrap("(", ")")
	}
	marked = marked.Wrap("id = ANY(ARRAY(SELECT mk.id FROM events mk WHERE mk."+stored.LaterTextColumn+" AND ", "))")
	return sqlq.Join(" OR ", indexed, marked).Wrap("(", ")"), true
}

// whole is the condition that keeps the events not marked whose text in
// column contains text, a text without delimiters of 3 or more
// characters: the events that hold a token containing it, all matches
// (no text is read), or a long token (indexed as a double quote) whose
// text contains it, read from their texts. The second set is chosen
// apart, by id, so that both are conditions PostgreSQL answers from
// indexes alone (a bitmap OR of the GIN index and the primary key):
// written as one condition with the texts' check, it checks every
// candidate's text, which costs more than the rest of a query of
// thousands of matches (1.5 µs a text, most of them compressed).
func whole(column, text string) sqlq.Fragment {
	return sqlq.Join(" OR ",
		holdingRun(text).Wrap("flagadmin_search_tokens("+column+") && ARRAY(SELECT token FROM search_tokens WHERE ", ") AND NOT "+stored.LaterTextColumn),
		sqlq.F("id = ANY(ARRAY(SELECT lt.id FROM events lt WHERE flagadmin_search_tokens(lt."+column+`) @> ARRAY['"'] AND NOT lt.`+stored.LaterTextColumn+" AND strpos(lt."+column+", ?) > 0))", text),
	).Wrap("(", ")")
}

// holdingRun is the condition that keeps the tokens of PostgreSQL's
// vocabulary that contain run (of 3 or more characters). pg_trgm reads
// the index entries of every trigram of a LIKE pattern's words: for a
// feature's name of 20 characters, 0.42 ms against 0.08 ms for three
// (bench1m, 599,000 tokens). So the index is asked for the tokens that
// hold three of run's trigrams of ASCII letters and digits, its first,
// middle and last (alnumTrigrams; the same one more than once when it has
// fewer, so that the statement's text is one of two whatever the run),
// and strpos keeps those that contain run; a run without such a trigram
// is matched by LIKE whole.
func holdingRun(run string) sqlq.Fragment {
	trigrams := alnumTrigrams(run)
	if len(trigrams) == 0 {
		return sqlq.LikeContains("token", run)
	}
	n := len(trigrams)
	return sqlq.And(
		sqlq.LikeContains("token", trigrams[0]),
		sqlq.LikeContains("token", trigrams[(n-1)/2]),
		sqlq.LikeContains("token", trigrams[n-1]),
		sqlq.F("strpos(token, ?) > 0", run),
	)
}

// alnumTrigrams returns the trigrams of run made of ASCII letters and
// digits only, in order: the characters pg_trgm makes trigrams of
// whatever the database's locale (it skips the others, and a pattern's
// trigram that holds one is not looked up as such).
func alnumTrigrams(run string) []string {
	alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' }
	var out []string
	for i := 0; i+3 <= len(run); i++ {
		if alnum(run[i]) && alnum(run[i+1]) && alnum(run[i+2]) {
			out = append(out, run[i:i+3])
		}
	}
	return out
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
