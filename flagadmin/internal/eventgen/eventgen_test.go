package eventgen_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin/internal/eventgen"
)

// TestGeneratedEncoderIsCurrent: flagadmin's eventjson_gen.go is what
// eventgen writes from today's declaration (run go generate in flagadmin).
func TestGeneratedEncoderIsCurrent(t *testing.T) {
	want, err := eventgen.Source()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../eventjson_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("flagadmin/eventjson_gen.go is not what eventgen writes from the declaration: run go generate ./flagadmin")
	}
}
