// Package witnesstest runs a real, independent witness for tests:
// litewitness of filippo.io/torchwood (a tool of this module, built from
// the module cache), speaking the C2SP tlog-witness protocol, with its key
// in an ssh-agent of its own. Tests skip, saying why, when ssh-agent is
// missing.
package witnesstest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// Witness is a running litewitness.
type Witness struct {
	// URL is its prefix: it answers URL/add-checkpoint.
	URL string
	// VerifierKey is its cosignature verifier key, as it printed it.
	VerifierKey string
	// Name is its name, the name of VerifierKey.
	Name string
	// DB is its database file.
	DB string

	t      testing.TB
	dir    string
	sock   string
	finger string
	addr   string
	cmd    *exec.Cmd
	stderr *syncbuffer.Buffer
}

var (
	buildOnce sync.Once
	tools     = map[string]string{} // litewitness and witnessctl: their binaries
	buildErr  error
)

// binaries builds litewitness and witnessctl once per test process, as
// the module's tools (go tool -n builds them into the build cache and
// prints where).
func binaries(t testing.TB) {
	t.Helper()
	buildOnce.Do(func() {
		for _, tool := range []string{"litewitness", "witnessctl"} {
			out, err := exec.Command("go", "tool", "-n", tool).Output()
			if err != nil {
				buildErr = fmt.Errorf("go tool -n %s (a tool of the module: filippo.io/torchwood/cmd/%s): %v", tool, tool, err)
				return
			}
			tools[tool] = strings.TrimSpace(string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// Start starts a litewitness named name that knows the log of origin with
// the verifier key logKey, and stops it at the end of the test.
func Start(t testing.TB, name, origin, logKey string) *Witness {
	t.Helper()
	for _, tool := range []string{"ssh-agent", "ssh-add", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("litewitness keeps its key in an ssh-agent, and %s is not installed", tool)
		}
	}
	binaries(t)
	dir, err := os.MkdirTemp("", "witness-") // short: a socket path has ~100 bytes at most
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w := &Witness{t: t, dir: dir, sock: filepath.Join(dir, "agent.sock"), DB: filepath.Join(dir, "witness.db")}
	key := filepath.Join(dir, "key")
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key)
	agent := exec.Command("ssh-agent", "-D", "-a", w.sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	waitFor(t, "ssh-agent's socket", func() bool { _, err := os.Stat(w.sock); return err == nil })
	add := exec.Command("ssh-add", key)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+w.sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v\n%s", err, out)
	}
	fields := strings.Fields(run(t, "ssh-keygen", "-l", "-E", "sha256", "-f", key+".pub"))
	if len(fields) < 2 {
		t.Fatalf("ssh-keygen -l: %q", fields)
	}
	w.finger = fields[1]
	run(t, tools["witnessctl"], "add-log", "-db", w.DB, "-origin", origin)
	run(t, tools["witnessctl"], "add-key", "-db", w.DB, "-origin", origin, "-key", logKey)
	w.Name = name
	w.addr = freeAddr(t)
	w.URL = "http://" + w.addr
	w.start()
	t.Cleanup(w.Stop)
	return w
}

// start runs litewitness and waits until it answers.
func (w *Witness) start() {
	t := w.t
	t.Helper()
	w.stderr = &syncbuffer.Buffer{}
	w.cmd = exec.Command(tools["litewitness"], "-name", w.Name, "-db", w.DB, "-ssh-agent", w.sock, "-key", w.finger, "-listen", w.addr)
	w.cmd.Stderr = w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "litewitness to answer", func() bool {
		if w.cmd.ProcessState != nil {
			t.Fatalf("litewitness exited:\n%s", w.stderr)
		}
		resp, err := http.Get(w.URL + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	sc := bufio.NewScanner(strings.NewReader(w.stderr.String()))
	for sc.Scan() {
		_, vkey, ok := strings.Cut(sc.Text(), "vkey=")
		if !ok {
			continue
		}
		if strings.HasPrefix(vkey, `"`) {
			vkey, _ = strconv.Unquote(vkey)
		}
		w.VerifierKey = strings.Fields(vkey)[0]
	}
	if w.VerifierKey == "" {
		t.Fatalf("litewitness printed no verifier key:\n%s", w.stderr)
	}
}

// Stop stops the witness (its database stays).
func (w *Witness) Stop() {
	if w.cmd == nil {
		return
	}
	w.cmd.Process.Kill()
	w.cmd.Wait()
	w.cmd = nil
}

// Restart starts the witness again, at the same address, on its database.
func (w *Witness) Restart() {
	w.t.Helper()
	w.Stop()
	w.start()
}

// Log is what the witness knows of a log (witnessctl list-logs).
type Log struct {
	Origin   string   `json:"origin"`
	Size     int64    `json:"size"`
	RootHash string   `json:"root_hash"`
	Keys     []string `json:"keys"`
}

// Logs returns the logs the witness knows, as its database holds them.
func (w *Witness) Logs() []Log {
	w.t.Helper()
	out := run(w.t, tools["witnessctl"], "list-logs", "-db", w.DB)
	var logs []Log
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var l Log
		if err := dec.Decode(&l); err == io.EOF {
			return logs
		} else if err != nil {
			w.t.Fatalf("witnessctl list-logs: %v\n%s", err, out)
		}
		logs = append(logs, l)
	}
}

// Size returns the size of the tree of origin the witness knows, -1 when
// it does not know the log.
func (w *Witness) Size(origin string) int64 {
	w.t.Helper()
	for _, l := range w.Logs() {
		if l.Origin == origin {
			return l.Size
		}
	}
	return -1
}

// Output is what litewitness wrote to stderr.
func (w *Witness) Output() string { return w.stderr.String() }

// run runs a command and returns its stdout; it fails the test if the
// command fails.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// freeAddr returns a local address nothing listens on (for a moment).
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitFor polls cond every 20 ms until it holds, for at most 30 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
