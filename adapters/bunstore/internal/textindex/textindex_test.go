package textindex

import (
	"slices"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		text  string
		scope flagadmin.TextScope
		// first is the first value: the FTS5 query of the run's spread
		// trigrams, looked up in the vocabulary (then the run, which its
		// tokens are checked for), or the whole token's FTS5 query; ""
		// when the index does not answer.
		first string
		// lengths are the conditions on the vocabulary's tokens, one per
		// arm that reads it: short ones unchecked and long ones checked
		// for a text without delimiters, all checked otherwise.
		lengths []string
	}{
		{"checkout", flagadmin.TextPayload, `"che" "eck" "out"`, []string{"<= 256", "> 256"}},
		{`say "hi"`, flagadmin.TextPayloadTypeCreator, `"say" "say" "say"`, []string{">= 0"}},
		{"日本語", flagadmin.TextPayload, `"日本語" "日本語" "日本語"`, []string{"<= 256", "> 256"}},
		{`"a":"bc"`, flagadmin.TextPayload, `search_payload : "bc"`, nil}, // a whole token
		{`"a":"bc"`, flagadmin.TextPayloadTypeCreator, `{search_payload search_meta} : "bc"`, nil},
		{"ab", flagadmin.TextPayload, "", nil},        // no run of 3, no whole token
		{"a\tbc", flagadmin.TextPayload, "", nil},     // a control character
		{"ab\uFFFEc", flagadmin.TextPayload, "", nil}, // read as U+FFFD
		{"ab\xffcd", flagadmin.TextPayload, "", nil},  // invalid UTF-8
	} {
		f, ok := Match(c.text, c.scope)
		if ok != (c.first != "") || !ok {
			if ok != (c.first != "") {
				t.Errorf("Match(%q): answered %v, want %v", c.text, ok, c.first != "")
			}
			continue
		}
		if f.Args[0] != c.first {
			t.Errorf("Match(%q): first value %v, want %q", c.text, f.Args[0], c.first)
		}
		// Then the run, and the text once per column a check reads.
		for _, arg := range f.Args[1:] {
			if arg != c.text && arg != longestRun(c.text) {
				t.Errorf("Match(%q): value %v, want the text or its run %q", c.text, arg, longestRun(c.text))
			}
		}
		// Every FTS5 query of events_tokens names the texts' columns, so
		// that none reads the projects' (project_token).
		if n, want := strings.Count(f.Text+c.first, " : "), strings.Count(f.Text+c.first, textColumns(c.scope)); n != want || n == 0 {
			t.Errorf("Match(%q) in scope %v: %d column filters, %d of them %q, in %s", c.text, c.scope, n, want, textColumns(c.scope), f.Text)
		}
		var lengths []string
		for _, l := range []string{"<= 256", "> 256", ">= 0"} {
			if strings.Contains(f.Text, "length(token) "+l+")") {
				lengths = append(lengths, l)
			}
		}
		if !slices.Equal(lengths, c.lengths) {
			t.Errorf("Match(%q): the vocabulary read for tokens of length %q, want %q", c.text, lengths, c.lengths)
		}
		// Whatever the arms, the vocabulary's phrase query runs once.
		if n, want := strings.Count(f.Text, "search_tokens_text MATCH"), min(len(c.lengths), 1); n != want {
			t.Errorf("Match(%q): the vocabulary queried %d times, want %d", c.text, n, want)
		}
	}
}

func TestSpreadTrigrams(t *testing.T) {
	for run, want := range map[string]string{
		"abc":                    `"abc" "abc" "abc"`,
		"abcd":                   `"abc" "abc" "bcd"`,
		"abcde":                  `"abc" "bcd" "cde"`,
		"new-push-notifications": `"new" "not" "ons"`,
		`a"b"c`:                  `"a""b" """b""" "b""c"`, // double quotes doubled
		"日本語テキ":                  `"日本語" "本語テ" "語テキ"`,     // in characters
	} {
		if got := spreadTrigrams(run); got != want {
			t.Errorf("spreadTrigrams(%q) = %s, want %s", run, got, want)
		}
	}
}

func TestHoldingRun(t *testing.T) {
	for run, want := range map[string][]any{
		// Three trigrams of ASCII letters and digits, then the run.
		"new-push-notifications": {"%new%", "%ifi%", "%ons%", "new-push-notifications"},
		"abc":                    {"%abc%", "%abc%", "%abc%", "abc"},
		"ab-1234":                {"%123%", "%123%", "%234%", "ab-1234"},
		"zürich-2024":            {"%ric%", "%ich%", "%024%", "zürich-2024"},
		// None: LIKE whole.
		"ab-cd":  {"%ab-cd%"},
		"日本語":    {"%日本語%"},
		"a%b_c!": {"%a!%b!_c!!%"},
	} {
		f := holdingRun(run)
		if !slices.Equal(f.Args, want) {
			t.Errorf("holdingRun(%q): values %q, want %q", run, f.Args, want)
		}
		if spread := len(want) > 1; strings.Contains(f.Text, "strpos(token, ?) > 0") != spread {
			t.Errorf("holdingRun(%q) = %s: checked by strpos %v, want %v", run, f.Text, !spread, spread)
		}
	}
}

func TestLongestToken(t *testing.T) {
	for text, want := range map[string]string{
		`"ab"`:         "ab",
		`"a":"bc"`:     "bc", // the longest
		`"a":"b"`:      "a",  // the first of the longest
		`ab"`:          "",   // a prefix of a token
		`"ab`:          "",   // a suffix
		"ab":           "",
		`":"`:          "",
		` 日本 `:         "日本", // in characters
		`{"x":[1,22]}`: "22",
		"\"a\"\"bb\"":  "bb",
	} {
		if got := longestToken(text); got != want {
			t.Errorf("longestToken(%q) = %q, want %q", text, got, want)
		}
	}
}
