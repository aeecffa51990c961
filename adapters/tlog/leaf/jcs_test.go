package leaf_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// CanonicalJSON is github.com/gowebpki/jcs: these tests hold it to RFC
// 8785's own vectors and examples, as the definition the leaf relies on.

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
			got, err := leaf.CanonicalJSON(raw)
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
		got, err := leaf.CanonicalJSON([]byte(in))
		if err != nil {
			t.Errorf("%016x (%s): %v", c.bits, in, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%016x (%s): got %s, want %s", c.bits, in, got, c.want)
		}
	}
}

// TestCanonicalJSONRefusesBeyondIJSON checks that the JSON texts RFC 8785
// leaves out are errors, not a form of their own: NormalizeEvent brings
// an event into I-JSON before it is canonicalized (ijson_test.go).
func TestCanonicalJSONRefusesBeyondIJSON(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"b":2,"a":3}`, `{"x":{"k":"first","k":"second"}}`, `[1e400]`, `[-1e400]`,
		`"a\uD800b"`, `"\uDC00"`, `"\uDE00\uD83D"`, "\"a\xffb\"",
	} {
		if got, err := leaf.CanonicalJSON([]byte(in)); err == nil {
			t.Errorf("CanonicalJSON(%q): got %q, want an error", in, got)
		}
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
		if got, err := leaf.CanonicalJSON([]byte(in)); err == nil {
			t.Errorf("CanonicalJSON(%q): got %q, want an error", in, got)
		}
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
		Tags:    []flagadmin.Tag{{Type: "simple", Value: "checkout"}}, Salt: leaf.NewSalt()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := leaf.LeafHash(e); err != nil {
			b.Fatal(err)
		}
	}
}
