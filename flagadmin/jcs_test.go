package flagadmin_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

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

// BenchmarkLeafHash measures the leaf hash of a typical event: what a
// write adds to keep the tree.
func BenchmarkLeafHash(b *testing.B) {
	uid := int64(3)
	e := flagadmin.Event{ID: 123456, CreatedAt: time.Now(), Type: "feature-strategy-update", CreatedBy: "ada@example.com",
		CreatedByUserID: &uid, Environment: ptr("production"), Project: ptr("default"), FeatureName: ptr("new-checkout"),
		Data:    json.RawMessage(`{"id":"5f1c","name":"flexibleRollout","constraints":[],"parameters":{"groupId":"new-checkout","rollout":"50","stickiness":"default"},"segments":[],"sortOrder":0,"disabled":false,"title":null}`),
		PreData: json.RawMessage(`{"id":"5f1c","name":"flexibleRollout","constraints":[],"parameters":{"groupId":"new-checkout","rollout":"25","stickiness":"default"},"segments":[],"sortOrder":0,"disabled":false,"title":null}`),
		Tags:    []flagadmin.Tag{{Type: "simple", Value: "checkout"}}, Salt: flagadmin.NewSalt()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := flagadmin.LeafHash(e); err != nil {
			b.Fatal(err)
		}
	}
}
