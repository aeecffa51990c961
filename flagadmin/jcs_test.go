package flagadmin_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// The canonical form is compared with github.com/gowebpki/jcs, a separate,
// strict implementation of RFC 8785 (it refuses duplicate names, unpaired
// surrogates and numbers out of range, where flagadmin gives ECMAScript's
// value): on every input it accepts, the two must write the same bytes.

// TestCanonicalJSONVectors checks the test vectors of RFC 8785's reference
// implementation (testdata/jcs), the examples of the RFC among them.
func TestCanonicalJSONVectors(t *testing.T) {
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	if err != nil || len(inputs) < 10 {
		t.Fatalf("test vectors: got %d files (%v), want 10", len(inputs), err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata/jcs/output", filepath.Base(in)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := flagadmin.CanonicalJSON(raw)
			if err != nil {
				t.Fatalf("CanonicalJSON: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestCanonicalJSONNumbers checks the number serializations of RFC 8785
// appendix B, given as IEEE 754 bits.
func TestCanonicalJSONNumbers(t *testing.T) {
	for _, c := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		f := math.Float64frombits(c.bits)
		// The shortest text that reads back as f, in Go's notation.
		in := strconv.FormatFloat(f, 'g', -1, 64)
		got, err := flagadmin.CanonicalJSON([]byte(in))
		if err != nil {
			t.Errorf("%016x (%s): %v", c.bits, in, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%016x (%s): got %s, want %s", c.bits, in, got, c.want)
		}
	}
}

// TestCanonicalJSONBeyondIJSON checks the values ECMAScript gives the JSON
// texts RFC 8785 leaves out (see jcs.go), and that the strict reference
// refuses each, so the cases are really outside it.
func TestCanonicalJSONBeyondIJSON(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"a duplicate name keeps the last member", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{"duplicates in a nested object", `{"x":{"k":"first","k":"second"}}`, `{"x":{"k":"second"}}`},
		{"a number above the doubles is Infinity, written null", `[1e400,-1e400]`, `[null,null]`},
		{"an unpaired high surrogate keeps its escape", `"a\uD800b"`, `"a\ud800b"`},
		{"an unpaired low surrogate keeps its escape", `"\uDC00"`, `"\udc00"`},
		{"a reversed pair is two unpaired surrogates", `"\uDE00\uD83D"`, `"\ude00\ud83d"`},
		{"an invalid UTF-8 byte reads as U+FFFD", "\"a\xffb\"", "\"a\uFFFDb\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := flagadmin.CanonicalJSON([]byte(c.in))
			if err != nil {
				t.Fatalf("CanonicalJSON: %v", err)
			}
			if string(got) != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
			if _, err := jcs.Transform([]byte(c.in)); err == nil {
				t.Errorf("the strict reference accepts %s: the case is inside RFC 8785", c.in)
			}
			again, err := flagadmin.CanonicalJSON(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("canonicalizing again: got %s (%v), want the same bytes", again, err)
			}
		})
	}
	// Numbers too small for a double are 0, as in ECMAScript.
	got, err := flagadmin.CanonicalJSON([]byte(`[1e-400,-1e-400]`))
	if err != nil || string(got) != `[0,0]` {
		t.Errorf("tiny numbers: got %s (%v), want [0,0]", got, err)
	}
}

// TestCanonicalJSONRefusesWhatIsNotJSON checks that text outside RFC 8259's
// grammar is an error, as encoding/json's Valid finds it.
func TestCanonicalJSONRefusesWhatIsNotJSON(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `-`, `1.`, `.5`, `1e`, `+1`,
		`0x10`, `1_000`, `NaN`, `Infinity`, `tru`, `nul`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\x01\"",
		`"abc`, `[1 2]`, `{} {}`, `1 2`, `"\ud800" x`, `'a'`, `[1]]`,
	} {
		if json.Valid([]byte(in)) {
			t.Fatalf("test case %q is valid JSON", in)
		}
		if got, err := flagadmin.CanonicalJSON([]byte(in)); err == nil {
			t.Errorf("CanonicalJSON(%q): got %q, want an error", in, got)
		}
	}
}

// canonicalSeeds are inputs of the fuzz test and of the comparison with the
// reference.
var canonicalSeeds = []string{
	`{"b":[1,2.5,-0,1e21,1e-7,123456789012345680000],"a":{"z":null,"y":true,"x":false},"":"\u0000\u001f\u007f"}`,
	`{"enabled":true,"strategies":[{"name":"flexibleRollout","parameters":{"rollout":"50","stickiness":"default"}}]}`,
	`[0.1,0.2,0.30000000000000004,1.7976931348623157e308,5e-324,-9007199254740993]`,
	`{"€":1,"\r":2,"😀":3,"ﬃ":4,"\u0080":5,"a\/b":"c\/d","é":"e\u0301"}`,
	`"\"\\\b\f\n\r\t\u2028\u2029 "`,
	`{"deep":[[[[[[{"a":[{}]}]]]]]]}`,
	`  { "spaced" :  [ 1 , 2 ] }  `,
	`12345678901234567890`,
	`-0.0000001`,
}

// TestCanonicalJSONMatchesReference compares the seeds with the reference.
func TestCanonicalJSONMatchesReference(t *testing.T) {
	for _, in := range canonicalSeeds {
		compareWithReference(t, []byte(in))
	}
}

func compareWithReference(t *testing.T, in []byte) {
	t.Helper()
	got, err := flagadmin.CanonicalJSON(in)
	if !json.Valid(in) {
		if err == nil {
			t.Fatalf("CanonicalJSON(%q): got %q for text that is not JSON, want an error", in, got)
		}
		return
	}
	if err != nil {
		t.Fatalf("CanonicalJSON(%q): %v", in, err)
	}
	if !json.Valid(got) {
		t.Fatalf("CanonicalJSON(%q): got %q, which is not JSON", in, got)
	}
	if again, err := flagadmin.CanonicalJSON(got); err != nil || !bytes.Equal(again, got) {
		t.Fatalf("CanonicalJSON(%q) again: got %q (%v), want %q", got, again, err, got)
	}
	want, err := jcs.Transform(in)
	if err != nil {
		return // outside I-JSON: TestCanonicalJSONBeyondIJSON covers what it gives
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("CanonicalJSON(%q):\n got %q\nwant %q (github.com/gowebpki/jcs)", in, got, want)
	}
}

// FuzzCanonicalJSON compares CanonicalJSON with the reference on any input
// the reference accepts, and checks that its output is canonical JSON
// whatever the input.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		compareWithReference(t, in)
	})
}

// TestCanonicalEventJSON checks that the event's canonical form is the
// canonical form of its API JSON (Event.MarshalJSON) as it was when the
// log began: groupType and groupId null when absent, tags without color;
// for events with every field set and with none.
func TestCanonicalEventJSON(t *testing.T) {
	uid := int64(-42)
	full := flagadmin.Event{
		ID: 9007199254740993, CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 678e6, time.UTC), Type: "feature-created",
		CreatedBy: "ädä <ada@example.com>\n", CreatedByUserID: &uid, Environment: ptr("production"),
		Project: ptr("default"), FeatureName: ptr("new-checkout"),
		Data:      json.RawMessage(`{"z":1.50,"a":"\u00e9","n":{"b":[1e2,true],"a":null}}`),
		PreData:   json.RawMessage(`{"k":"v"}`),
		Tags:      []flagadmin.Tag{{Type: "simple", Value: "zz", Color: flagadmin.ColorOf("#FFFFFF")}, {Type: "simple", Value: "aa"}, {Type: "team", Value: "core", Color: flagadmin.NullColor}},
		GroupType: ptr("transaction"), GroupID: ptr("01M8564MBTV5HMX3GH6SHGBVKG"),
	}
	for _, e := range []flagadmin.Event{full, {ID: 1, Type: "user-created", CreatedBy: "x"}} {
		api, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(api, &fields); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"groupType", "groupId"} {
			if _, ok := fields[k]; !ok {
				fields[k] = nil
			}
		}
		for _, tag := range fields["tags"].([]any) {
			delete(tag.(map[string]any), "color")
		}
		leafJSON, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jcs.Transform(leafJSON)
		if err != nil {
			t.Fatal(err)
		}
		got, err := flagadmin.CanonicalEventJSON(e)
		if err != nil {
			t.Fatalf("CanonicalEventJSON: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("event %d:\n got %s\nwant %s", e.ID, got, want)
		}
	}
	if !bytes.Contains(mustCanonical(t, full), []byte(`"tags":[{"type":"simple","value":"zz"},{"type":"simple","value":"aa"},{"type":"team","value":"core"}]`)) {
		t.Errorf("tags: want them in the event's order (arrays are not sorted)")
	}
}

// TestLeafUnchangedByTheEventJSON: the leaves of existing logs stay what
// they were when the API JSON changed (groupType and groupId left out when
// absent, tags with their color): the hashes below were computed before
// that change, and an event decoded from the API JSON of today, as
// `flagadmin log verify` reads it, still hashes to them.
func TestLeafUnchangedByTheEventJSON(t *testing.T) {
	uid := int64(3)
	grouped := flagadmin.Event{ID: 2298, CreatedAt: time.Date(2026, 11, 23, 21, 49, 34, 314e6, time.UTC), Type: "feature-completed",
		CreatedBy: "admin", CreatedByUserID: &uid, Project: ptr("default"), FeatureName: ptr("new-onboarding-flow"),
		Data:      json.RawMessage(`{"status":"kept","statusValue":"guided","kept":true}`),
		Tags:      []flagadmin.Tag{{Type: "area", Value: "web"}, {Type: "team", Value: "growth"}},
		GroupType: ptr("transaction"), GroupID: ptr("01M8565GQB3V82G1290YFBVC94")}
	ungrouped := flagadmin.Event{ID: 500, CreatedAt: time.Date(2026, 11, 23, 21, 48, 14, 657e6, time.UTC), Type: "feature-untagged",
		CreatedBy: "bob.editor@example.com", CreatedByUserID: &uid, Project: ptr("default"), FeatureName: ptr("free-shipping-threshold"),
		PreData: json.RawMessage(`{"type":"simple","value":"needs-review"}`),
		Tags: []flagadmin.Tag{{Type: "simple", Value: "needs-review", Color: flagadmin.ColorOf("#FFFFFF")},
			{Type: "team", Value: "checkout", Color: flagadmin.NullColor}}}
	for _, c := range []struct {
		e    flagadmin.Event
		wire string
		want string
	}{
		{grouped, `"groupType":"transaction","groupId":"01M8565GQB3V82G1290YFBVC94"}`, "11b1d584c161db4d53e78e5f25428d77b7dd43c859b19cd551ecde0388628368"},
		{ungrouped, `"tags":[{"type":"simple","value":"needs-review","color":"#FFFFFF"},{"type":"team","value":"checkout","color":null}]}`, "220565e4585a1d3959362aad31370b596a9c528a769e6bcce644d56407772c3e"},
	} {
		api, err := json.Marshal(c.e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(api, []byte(c.wire)) {
			t.Errorf("event %d: the API JSON %s does not end with %s", c.e.ID, api, c.wire)
		}
		var back flagadmin.Event
		if err := json.Unmarshal(api, &back); err != nil {
			t.Fatal(err)
		}
		for _, e := range []flagadmin.Event{c.e, back} {
			h, err := flagadmin.LeafHash(e)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%x", h); got != c.want {
				t.Errorf("event %d: leaf %s, want %s as before", e.ID, got, c.want)
			}
		}
	}
}

func mustCanonical(t *testing.T, e flagadmin.Event) []byte {
	t.Helper()
	b, err := flagadmin.CanonicalEventJSON(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLeafHash checks the leaf hash against RFC 6962's leaf hash of the
// Merkle library the log adapter uses, and that a stored event whose JSON
// text differs but whose value is the same has the same leaf hash.
func TestLeafHash(t *testing.T) {
	e := flagadmin.Event{ID: 7, CreatedAt: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), Type: "feature-created",
		CreatedBy: "ada", Data: json.RawMessage(`{"b":100,"a":"x"}`)}
	got, err := flagadmin.LeafHash(e)
	if err != nil {
		t.Fatal(err)
	}
	canonical := mustCanonical(t, e)
	if want := rfc6962.DefaultHasher.HashLeaf(canonical); !bytes.Equal(got[:], want) {
		t.Errorf("LeafHash: got %x, want %x (rfc6962 HashLeaf)", got, want)
	}
	if want := sha256.Sum256(append([]byte{0}, canonical...)); got != want {
		t.Errorf("LeafHash: got %x, want SHA-256(0x00 || canonical JSON) %x", got, want)
	}
	respelled := e
	respelled.Data = json.RawMessage(`{ "a" : "\u0078", "b" : 1e2 }`) // as a jsonb column may give it back
	if h, _ := flagadmin.LeafHash(respelled); h != got {
		t.Errorf("LeafHash of the same data written otherwise: got %x, want %x", h, got)
	}
	changed := e
	changed.CreatedBy = "eve"
	if h, _ := flagadmin.LeafHash(changed); h == got {
		t.Errorf("LeafHash of a changed event: got the same hash")
	}
	broken := e
	broken.PreData = json.RawMessage(`{"a":`)
	if _, err := flagadmin.LeafHash(broken); !errors.Is(err, flagadmin.ErrValidation) {
		t.Errorf("LeafHash of an event whose preData is not JSON: got %v, want ErrValidation", err)
	}
}

// TestLeafParts: the leaf hash is SHA-256 of 0x00, the part before the
// id, the id's decimal digits and the part after, for ids up to 2^53 (a
// store computes it so in SQL).
func TestLeafParts(t *testing.T) {
	e := flagadmin.Event{CreatedAt: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), Type: "feature-created",
		CreatedBy: "ådå", Project: ptr("p"), Data: json.RawMessage(`{"b":100,"a":"x"}`), PreData: json.RawMessage(`[1e21]`),
		Tags: []flagadmin.Tag{{Type: "simple", Value: "t"}}}
	before, after, err := flagadmin.LeafParts(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{0, 1, 7, 123456789, 1 << 53} {
		e.ID = id
		want, err := flagadmin.LeafHash(e)
		if err != nil {
			t.Fatal(err)
		}
		joined := append(append(append([]byte{0}, before...), strconv.FormatInt(id, 10)...), after...)
		if got := sha256.Sum256(joined); got != want {
			t.Errorf("id %d: SHA-256 of the parts %x, LeafHash %x", id, got, want)
		}
	}
	e.Data = json.RawMessage(`{`)
	if _, _, err := flagadmin.LeafParts(e); !errors.Is(err, flagadmin.ErrValidation) {
		t.Errorf("LeafParts of data that is not JSON: got %v, want ErrValidation", err)
	}
}

// BenchmarkLeafHash measures the leaf hash of a typical event: what a
// write adds to keep the tree.
func BenchmarkLeafHash(b *testing.B) {
	uid := int64(3)
	e := flagadmin.Event{ID: 123456, CreatedAt: time.Now(), Type: "feature-strategy-update", CreatedBy: "ada@example.com",
		CreatedByUserID: &uid, Environment: ptr("production"), Project: ptr("default"), FeatureName: ptr("new-checkout"),
		Data:    json.RawMessage(`{"id":"5f1c","name":"flexibleRollout","constraints":[],"parameters":{"groupId":"new-checkout","rollout":"50","stickiness":"default"},"segments":[],"sortOrder":0,"disabled":false,"title":null}`),
		PreData: json.RawMessage(`{"id":"5f1c","name":"flexibleRollout","constraints":[],"parameters":{"groupId":"new-checkout","rollout":"25","stickiness":"default"},"segments":[],"sortOrder":0,"disabled":false,"title":null}`),
		Tags:    []flagadmin.Tag{{Type: "simple", Value: "checkout"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := flagadmin.LeafHash(e); err != nil {
			b.Fatal(err)
		}
	}
}
