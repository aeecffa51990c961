package stored

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// The tokens of a search text are its longest runs of characters that are
// none of SearchTokenDelimiters: the JSON structural characters, the
// double quote and white space. A text contains a string that holds none
// of them if and only if one of its tokens contains that string, so a
// substring query without a delimiter can be answered from the texts'
// tokens (PostgreSQL's token index, internal/textindex).
const (
	// SearchTokenDelimiters are the characters that end a token.
	SearchTokenDelimiters = "[] \t\n\r\"{}:,"
	// SearchTokenPattern is the regular expression (PostgreSQL's) of a run
	// of SearchTokenDelimiters, at which a text is split into tokens.
	SearchTokenPattern = `[][ \t\n\r"{}:,]+`
	// MaxSearchTokenChars is the most characters of a short token: a
	// longer one (LongSearchToken) is indexed as a marker that no token
	// can be on PostgreSQL (GIN and B-tree entries have a size limit),
	// and an event's text is read to check a query found in one on
	// SQLite (FTS5 keeps the first 32 KiB of a token).
	MaxSearchTokenChars = 256
	// LaterTextColumn is PostgreSQL's column of events that marks those
	// whose tokens its token index leaves to the backlog, which a query
	// scans instead (internal/textindex).
	LaterTextColumn = "text_later"
)

// LongSearchToken reports whether token has more than MaxSearchTokenChars
// characters.
func LongSearchToken(token string) bool {
	return len(token) > MaxSearchTokenChars && utf8.RuneCountInString(token) > MaxSearchTokenChars
}

// TokenSet is a set of the tokens of search texts.
type TokenSet map[string]struct{}

// Add adds the tokens of text to s.
func (s TokenSet) Add(text string) {
	for len(text) > 0 {
		start := strings.IndexFunc(text, func(r rune) bool { return !SearchTokenDelimiter(r) })
		if start < 0 {
			return
		}
		text = text[start:]
		end := strings.IndexAny(text, SearchTokenDelimiters)
		if end < 0 {
			end = len(text)
		}
		s[text[:end]] = struct{}{}
		text = text[end:]
	}
}

// AddEvent adds the tokens of r's search texts to s; none when s is nil.
func (s TokenSet) AddEvent(r Event) {
	if s == nil {
		return
	}
	s.Add(r.SearchPayload)
	s.Add(r.SearchMeta)
}

// Sorted returns the tokens of s in ascending byte order.
func (s TokenSet) Sorted() []string {
	tokens := make([]string, 0, len(s))
	for t := range s {
		tokens = append(tokens, t)
	}
	slices.Sort(tokens)
	return tokens
}

// SearchTokenDelimiter reports whether r ends a token (one of
// SearchTokenDelimiters).
func SearchTokenDelimiter(r rune) bool { return strings.ContainsRune(SearchTokenDelimiters, r) }
