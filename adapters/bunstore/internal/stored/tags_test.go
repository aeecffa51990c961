package stored

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// tagsByJSON is the reference: what encoding/json decodes.
func tagsByJSON(s string) ([]flagadmin.Tag, error) {
	tags := []flagadmin.Tag{}
	err := json.Unmarshal([]byte(s), &tags)
	return tags, err
}

func checkTags(t *testing.T, s string) {
	t.Helper()
	want, wantErr := tagsByJSON(s)
	got, gotErr := Tags(&s)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("Tags(%q): error %v, want error %v", s, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("Tags(%q) = %#v, want %#v", s, got, want)
	}
	if fast, ok := parseCanonicalTags(s); ok && (wantErr != nil || !reflect.DeepEqual(fast, want)) {
		t.Fatalf("parseCanonicalTags(%q) = %#v, accepted; encoding/json gives %#v, %v", s, fast, want, wantErr)
	}
}

func TestTagsOfAgreesWithEncodingJSON(t *testing.T) {
	canonical := func(tags []flagadmin.Tag) string {
		b, err := json.Marshal(tags)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []string{
		"[]",
		canonical([]flagadmin.Tag{{Value: "team-checkout", Type: "team"}}),
		canonical([]flagadmin.Tag{{Value: "a", Type: "b"}, {Value: "c<&>d", Type: "ünï"}, {Value: `q"uote`, Type: `back\slash`}}),
		canonical([]flagadmin.Tag{{Value: "tab\there", Type: "\u2028"}}),
		`[{"type":"t","value":"v"}]`,
		canonical([]flagadmin.Tag{{Value: "web", Type: "area", Color: flagadmin.ColorOf("#34A853")}, {Value: "v", Type: "t"}, {Value: "growth", Type: "team", Color: flagadmin.NullColor}}),
		`[{"type":"t","value":"v","color":"#FFFFFF"}]`,
		`[{"type":"t","value":"v","color":null}]`,
		`[{"type":"t","value":"v","color":nul}]`,
		`[{"type":"t","value":"v","color":1}]`,
		`[{"type":"t","value":"v","color":"#FFF"]`,
		`[{"type":"t","value":"v","color":"a\u0062"}]`,
		`[{"value":"v","type":"t","color":"#FFFFFF"}]`,
		`[{"type":"t","value":"v","color":"#FFFFFF","extra":1}]`,
		`[ {"value":"v","type":"t"} ]`,
		`[{"value":"v","type":"t"},]`,
		`[{"value":"v","type":"t"}{"value":"v","type":"t"}]`,
		`[{"value":"v","type":"t","extra":1}]`,
		`[{"value":"v"}]`,
		`[{"value":"v","type":"t"`,
		`[{"value":"v","type":"t"}`,
		"[{\"value\":\"\xff\",\"type\":\"t\"}]",
		"[{\"value\":\"a\x01\",\"type\":\"t\"}]",
		`[{"value":"\u00e9","type":"t"}]`,
		`[{"value":"","type":""}]`,
		`[{"value":"v","type":"t"}]x`,
		`null`,
		``,
		`[`,
		`]`,
	}
	for _, s := range cases {
		checkTags(t, s)
	}
}

func FuzzTagsOf(f *testing.F) {
	for _, s := range []string{"[]", `[{"value":"v","type":"t"}]`, `[{"type":"t","value":"v","color":null},{"type":"t","value":"v","color":"#FFFFFF"}]`, `[{"value":"a","type":"b"},{"value":"c","type":"d"}]`, `[{"value":"\u00e9","type":"t"}]`} {
		f.Add(s)
	}
	f.Fuzz(checkTags)
}
