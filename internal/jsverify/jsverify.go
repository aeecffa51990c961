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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/eventjson"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Timeouts.
const (
	installTimeout = 5 * time.Minute
	runTimeout     = 2 * time.Minute
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
	install(t)
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

var installed struct {
	once sync.Once
	err  error
	skip string
}

// install runs "npm ci" in Dir unless node_modules was installed from the
// same lock file, once per process and under a file lock across processes.
func install(t testing.TB) {
	t.Helper()
	installed.once.Do(func() {
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				installed.skip = tool + " is not installed: the independent verifier of the log's leaves is a Node script"
				return
			}
		}
		installed.err = installLocked()
	})
	if installed.skip != "" {
		t.Skip(installed.skip)
	}
	if installed.err != nil {
		t.Fatalf("jsverify: %v", installed.err)
	}
}

func installLocked() error {
	dir := Dir()
	lockFile, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(lockFile)
	want := hex.EncodeToString(sum[:])
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "flagadmin-jsverify-npm-ci.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	stamp := filepath.Join(dir, "node_modules", ".flagadmin-installed")
	if have, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(have)) == want {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return os.WriteFile(stamp, []byte(want+"\n"), 0o644)
}
