package leaf

import (
	"encoding/json"
	"testing"

	"github.com/gowebpki/jcs"
)

// TestCanonicalStringIsTheLibrarys holds appendCanonicalString, which
// writes plain ASCII strings itself, to the library's canonical form of
// every string: each ASCII character alone and within text, and strings
// the library must escape or keep as they are.
func TestCanonicalStringIsTheLibrarys(t *testing.T) {
	cases := []string{"", "ada@example.com", "feature-strategy-update", "2026-12-02T06:30:15.123Z", "a b~{}[]<>&'/",
		"tab\there", "quote\"d", `back\slash`, "\x7f", "\u0080", "é", "e\u0301", "\u2028\u2029", "😀", "\xff", "a\xffb"}
	for c := range 0x80 {
		cases = append(cases, string(rune(c)), "x"+string(rune(c))+"y")
	}
	for _, s := range cases {
		quoted, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jcs.Transform(quoted)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if got := appendCanonicalString([]byte("prefix"), s); string(got) != "prefix"+string(want) {
			t.Errorf("%q: got %s, want prefix%s", s, got, want)
		}
	}
}
