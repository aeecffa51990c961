// Package jsverify runs verify.mjs, an independent verifier of the event
// log's leaves (format flagadmin-leaf-v1) in JavaScript: RFC 8785 by npm's
// canonicalize, pinned in package.json and package-lock.json, and SHA-256
// by node:crypto. Tests use it to hold flagadmin's leaves to what another
// language's strict RFC 8785 implementation computes from the API's JSON.
// It installs its node_modules with "npm ci" once per lock file; without
// Node and npm, Run skips the test saying so.
package jsverify

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/eventjson"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/npmci"
)

// Timeouts.
const (
	runTimeout = 2 * time.Minute
)

// Dir is this package's directory, where verify.mjs and package.json are.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Line is one input line of verify.mjs: an event as the API shows it, its
// salt and the leaf hash to check, both in hex.
type Line struct {
	Salt  string          `json:"salt"`
	Event json.RawMessage `json:"event"`
	Leaf  string          `json:"leaf"`
}

// LineOf returns e's line: the event as the API writes it (eventjson, the
// one encoder of events) and the leaf flagadmin computes (LeafHash).
func LineOf(e flagadmin.Event) (Line, error) {
	leaf, err := leaf.LeafHash(e)
	if err != nil {
		return Line{}, err
	}
	return Line{Salt: hex.EncodeToString(e.Salt), Event: eventjson.AppendEvent(nil, &e), Leaf: hex.EncodeToString(leaf[:])}, nil
}

// Run runs verify.mjs on lines and returns what it printed and whether it
// found every leaf right (exit status 0). Any other failure to run it
// fails t; without node or npm, t is skipped.
func Run(t testing.TB, lines []Line) (output string, ok bool) {
	t.Helper()
	installer.Ensure(t)
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "verify.mjs")
	cmd.Dir = Dir()
	cmd.Stdin = &in
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), true
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return string(out), false
	}
	t.Fatalf("node verify.mjs: %v\n%s", err, out)
	return "", false
}

// installer installs Dir's npm packages for the tests.
var installer = npmci.New(Dir(), "flagadmin-jsverify-npm-ci.lock", "the independent verifier of the log's leaves is a Node script")
