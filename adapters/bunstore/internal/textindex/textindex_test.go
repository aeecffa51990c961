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
		if ok != (c.query != "") || ok && (len(f.Args) != 1 || f.Args[0] != c.query) {
			t.Errorf("Match(%q): got %v %v, want %q", c.text, f.Args, ok, c.query)
		}
	}
}
