package unleashfixture

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Recording is one exchange recorded from unleash-server 8.2.0 on the
// fixture's database (responses/*.json).
type Recording struct {
	// File is the recording's file name in responses/.
	File    string `json:"-"`
	Request struct {
		Method  string            `json:"method"`
		Path    string            `json:"path"`
		Headers map[string]string `json:"headers"`
		Body    *string           `json:"body"`
	} `json:"request"`
	Response struct {
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	} `json:"response"`
}

// Recordings reads every recording responses/index.json lists, in its
// order, or skips t when the fixture is not beside the checkout.
func Recordings(t testing.TB) []Recording {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(Dir(), "responses", "index.json"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("the recorded Unleash responses are not at %s (a checkout without shared/ beside it)", filepath.Join(Dir(), "responses"))
	}
	if err != nil {
		t.Fatal(err)
	}
	var index []struct {
		File string `json:"file"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	out := make([]Recording, 0, len(index))
	for _, e := range index {
		out = append(out, ReadRecording(t, e.File))
	}
	return out
}

// ReadRecording reads the recording responses/name.
func ReadRecording(t testing.TB, name string) Recording {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), "responses", name))
	if err != nil {
		t.Fatal(err)
	}
	r := Recording{File: name}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}
