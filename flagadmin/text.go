package flagadmin

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxQuotedInput is how many characters of a caller's input a message
// quotes at most; longer input is cut and followed by "…".
const MaxQuotedInput = 100

// QuoteInput quotes s for a message as %q does, keeping at most its first
// MaxQuotedInput characters (an invalid byte counts as one) and marking a
// cut with "…" after the closing quote. Every message that repeats a
// caller's input quotes it with QuoteInput, so no message grows with the input.
func QuoteInput(s string) string {
	n, cut := 0, len(s)
	for i := range s { // i steps over runes; an invalid byte is one step
		if n == MaxQuotedInput {
			cut = i
			break
		}
		n++
	}
	if cut == len(s) {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:cut]) + "…"
}

// CheckText enforces the rule of every text value a caller sends (filters,
// path segments, body strings): valid UTF-8 without a NUL character.
// Stores cannot hold or compare such text (PostgreSQL
// refuses both, SQLite's statements break on NUL), so the Service (and a
// package built over it, such as flagadmin/vlog) refuses it before any
// storage work, naming param.
func CheckText(param, s string) *ValidationError {
	switch {
	case !utf8.ValidString(s):
		return invalid(param, "must be valid UTF-8 text")
	case strings.IndexByte(s, 0) >= 0:
		return invalid(param, "must not contain a NUL character")
	}
	return nil
}
