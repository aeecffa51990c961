package flagadmin

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gowebpki/jcs"
)

// TestECMAScriptNumberIsRFC8785s: the normalizer writes numbers as the
// RFC 8785 library does, on the edges of fixed notation and at random.
func TestECMAScriptNumberIsRFC8785s(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e20, 1e21, 123456789012345680000, 1e-6, 1e-7, 1.5e-7, 9007199254740992,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 0.000001234, 333333333.33333329}
	for range 20000 {
		cases = append(cases, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)))
	}
	for _, f := range cases {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, err := jcs.NumberToJSON(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendECMAScriptNumber(nil, f)); got != want {
			t.Errorf("%v: got %s, want %s", f, got, want)
		}
	}
}
