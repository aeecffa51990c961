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

	"github.com/gowebpki/jcs"

	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// These tests hold CanonicalJSON to RFC 8785's own vectors and examples,
// as the definition the leaf relies on, and on any input to
// github.com/gowebpki/jcs, a second implementation of that RFC alone.

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

// refusedBeyondIJSON are JSON texts RFC 8785 refuses.
var refusedBeyondIJSON = []string{
	`{"a":1,"b":2,"a":3}`, `{"x":{"k":"first","k":"second"}}`, `[1e400]`, `[-1e400]`, `{"a":"1e400","b":1E+309}`,
	`["\"",1.8e308]`, `"a\uD800b"`, `"\uDC00"`, `"\uDE00\uD83D"`, "\"a\xffb\"",
}

// TestCanonicalJSONRefusesBeyondIJSON checks that the JSON texts RFC 8785
// leaves out are errors, not a form of their own: NormalizeEvent brings
// an event into I-JSON before it is canonicalized (ijson_test.go).
func TestCanonicalJSONRefusesBeyondIJSON(t *testing.T) {
	for _, in := range refusedBeyondIJSON {
		if got, err := leaf.CanonicalJSON([]byte(in)); err == nil {
			t.Errorf("CanonicalJSON(%q): got %q, want an error", in, got)
		}
	}
}

// notJSON are texts outside RFC 8259's grammar.
var notJSON = []string{
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `-`, `1.`, `.5`, `1e`, `+1`,
	`0x10`, `1_000`, `NaN`, `Infinity`, `tru`, `nul`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\x01\"",
	`"abc`, `[1 2]`, `{} {}`, `1 2`, `"\ud800" x`, `'a'`, `[1]]`,
}

// TestCanonicalJSONRefusesWhatIsNotJSON checks that text outside RFC 8259's
// grammar is an error, as encoding/json's Valid finds it.
func TestCanonicalJSONRefusesWhatIsNotJSON(t *testing.T) {
	for _, in := range notJSON {
		if json.Valid([]byte(in)) {
			t.Fatalf("test case %q is valid JSON", in)
		}
		if got, err := leaf.CanonicalJSON([]byte(in)); err == nil {
			t.Errorf("CanonicalJSON(%q): got %q, want an error", in, got)
		}
	}
}

// FuzzCanonicalJSONIsTheReference holds CanonicalJSON to
// github.com/gowebpki/jcs on any input: the same bytes, or both refuse.
// The seeds are the RFC's vectors, the texts the tests above refuse, and
// every event, data and preData of the responses recorded from Unleash.
func FuzzCanonicalJSONIsTheReference(f *testing.F) {
	for _, s := range canonicalSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, werr := jcs.Transform(raw)
		got, err := leaf.CanonicalJSON(raw)
		switch {
		case werr != nil && err == nil:
			t.Errorf("CanonicalJSON(%q) = %q; the reference refuses it: %v", raw, got, werr)
		case werr == nil && err != nil:
			t.Errorf("CanonicalJSON(%q): %v; the reference gives %q", raw, err, want)
		case !bytes.Equal(got, want):
			t.Errorf("CanonicalJSON(%q)\n got  %q\n want %q (the reference's)", raw, got, want)
		}
	})
}

// canonicalSeeds returns the seeds of FuzzCanonicalJSONIsTheReference.
func canonicalSeeds(t testing.TB) []string {
	out := append(append([]string{`{"b":[1,2.5,-0,1e21,"\u00e9\u2028"],"a":{"\u20ac":1,"\ud83d\ude00":2,"z":null}}`, "  [true, false] \n", `9007199254740993`, `1e-400`},
		refusedBeyondIJSON...), notJSON...)
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		raw, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(raw))
	}
	if _, err := os.Stat(filepath.Join(unleashfixture.Dir(), "responses", "index.json")); err != nil {
		return out // a checkout without the fixture beside it
	}
	for _, r := range unleashfixture.Recordings(t) {
		var body struct {
			Events []map[string]json.RawMessage `json:"events"`
		}
		if json.Unmarshal([]byte(r.Response.Body), &body) != nil {
			continue
		}
		for _, e := range body.Events {
			whole, _ := json.Marshal(e)
			out = append(out, string(whole), string(e["data"]), string(e["preData"]))
		}
	}
	return out
}

// BenchmarkCanonicalJSON measures the canonical form of an event's data,
// and the reference implementation's beside it.
func BenchmarkCanonicalJSON(b *testing.B) {
	data := []byte(`{"id":"5f1c","name":"flexibleRollout","constraints":[],"parameters":{"groupId":"new-checkout","rollout":"50","stickiness":"default"},"segments":[],"sortOrder":0,"disabled":false,"title":null}`)
	b.Run("leaf", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			var err error
			if buf, err = leaf.AppendCanonicalJSON(buf[:0], data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jcs.Transform(data); err != nil {
				b.Fatal(err)
			}
		}
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
		Tags:    []flagadmin.Tag{{Type: "simple", Value: "checkout"}}, Salt: leaf.NewSalt()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := leaf.LeafHash(e); err != nil {
			b.Fatal(err)
		}
	}
}
