package leaf

import (
	"encoding/json"
	"testing"

	"github.com/gowebpki/jcs"
)

// TestCanonicalStringIsTheReferences holds appendCanonicalString to
// github.com/gowebpki/jcs's canonical form of every string:
// each ASCII character alone and within text, and strings that must be
// escaped or kept as they are.
func TestCanonicalStringIsTheReferences(t *testing.T) {
	cases := []string{"", "ada@example.com", "feature-strategy-update", "2026-12-02T06:30:15.123Z", "a b~{}[]<>&'/",
		"tab\there", "quote\"d", `back\slash`, "\x7f", "\u0080", "é", "e\u0301", "\u2028\u2029", "😀", "\xff", "a\xffb"}
	for c := range 0x80 {
		cases = append(cases, string(rune(c)), "x"+string(rune(c))+"y")
	}
	for _, s := range cases {
		checkCanonicalString(t, s)
	}
}

// FuzzCanonicalStringIsTheReferences is TestCanonicalStringIsTheReferences
// on any string.
func FuzzCanonicalStringIsTheReferences(f *testing.F) {
	for _, s := range []string{"ada@example.com", "tab\there", "é", "\u2028", "😀", "a\xffb", "\x00\x1f\x7f"} {
		f.Add(s)
	}
	f.Fuzz(checkCanonicalString)
}

// checkCanonicalString checks appendCanonicalString(s) against the
// reference's canonical form of s as encoding/json quotes it (a byte that
// is not UTF-8 written as U+FFFD).
func checkCanonicalString(t *testing.T, s string) {
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
