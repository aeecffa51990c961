package textindex

import (
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		text  string
		scope flagadmin.TextScope
		query string // "" when the index does not answer
	}{
		{"checkout", flagadmin.TextPayload, `search_payload : "checkout"`},
		{`say "hi"`, flagadmin.TextPayloadTypeCreator, `"say ""hi"""`},
		{"日本語", flagadmin.TextPayload, `search_payload : "日本語"`},
		{"ab", flagadmin.TextPayload, ""},        // no trigram
		{"a\tbc", flagadmin.TextPayload, ""},     // a control character
		{"ab\uFFFEc", flagadmin.TextPayload, ""}, // read as U+FFFD
		{"ab\xffcd", flagadmin.TextPayload, ""},  // invalid UTF-8
	} {
		f, ok := Match(c.text, c.scope)
		// The phrase, then the text once per column the pending events'
		// texts are scanned in.
		scanned := 2
		if c.scope == flagadmin.TextPayload {
			scanned = 1
		}
		if ok != (c.query != "") || ok && (len(f.Args) != 1+scanned || f.Args[0] != c.query) {
			t.Errorf("Match(%q): got %v %v, want %q", c.text, f.Args, ok, c.query)
		}
		for _, arg := range f.Args[min(1, len(f.Args)):] {
			if arg != c.text {
				t.Errorf("Match(%q): the pending texts are scanned for %v, want the text", c.text, arg)
			}
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
