package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// binary is the flagadmin binary the end-to-end tests run, built once.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// buildBinary builds cmd/flagadmin into a temporary directory, once.
func buildBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the flagadmin binary; skipped with -short")
	}
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "flagadmin-e2e-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "flagadmin")
		out, err := exec.Command("go", "build", "-o", binary.path, ".").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// freeAddr returns a local address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// process is a running flagadmin binary.
type process struct {
	cmd    *exec.Cmd
	stderr *syncbuffer.Buffer
	done   chan struct{}
	err    error
}

// startBinary runs bin serve with the environment env (added to this process's).
func startBinary(t *testing.T, bin string, env ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, "serve"), stderr: &syncbuffer.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitReady polls GET /ready until it answers 200.
func (p *process) waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("flagadmin exited before it was ready: %v\n%s", p.err, p.stderr)
		default:
		}
		resp, err := http.Get(base + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("flagadmin was not ready within a minute:\n%s", p.stderr)
}

// stop sends SIGTERM and checks a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("flagadmin did not exit within 30s of SIGTERM:\n%s", p.stderr)
	}
	if p.err != nil {
		t.Fatalf("flagadmin exited with %v after SIGTERM, want exit code 0:\n%s", p.err, p.stderr)
	}
}

// exitCode waits for the process to end and returns its exit code.
func (p *process) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("flagadmin did not exit:\n%s", p.stderr)
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// apiError is the error body of every error response.
type apiError struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

func decode[T any](t *testing.T, what string, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v in %s", what, err, body)
	}
	return v
}

type eventJSON struct {
	ID              int64           `json:"id"`
	Type            string          `json:"type"`
	CreatedBy       string          `json:"createdBy"`
	CreatedByUserID *int64          `json:"createdByUserId"`
	Project         *string         `json:"project"`
	FeatureName     *string         `json:"featureName"`
	Data            json.RawMessage `json:"data"`
	PreData         json.RawMessage `json:"preData"`
}

// TestEndToEnd runs the binary on a temporary SQLite database with a seed
// file and calls the five operations over HTTP.
func TestEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.json")
	if err := os.WriteFile(seed, []byte(testSeed), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	base := "http://" + addr
	env := []string{"FLAGADMIN_ADDR=" + addr, "FLAGADMIN_DB=sqlite:" + filepath.Join(dir, "e2e.db"), "FLAGADMIN_SEED=" + seed,
		"FLAGADMIN_ADMIN_TOKENS=", "FLAGADMIN_LOG_LEVEL=info", "FLAGADMIN_LOG_FORMAT=text"}
	p := startBinary(t, bin, env...)
	p.waitReady(t, base)
	const admin = "*:*.e2e-admin"

	t.Run("health", func(t *testing.T) {
		if status, body := call(t, http.MethodGet, base+"/health", "", ""); status != http.StatusOK {
			t.Errorf("GET /health: %d %s", status, body)
		}
	})
	t.Run("no token", func(t *testing.T) {
		status, body := call(t, http.MethodGet, base+"/api/admin/projects", "", "")
		if e := decode[apiError](t, "401 body", body); status != http.StatusUnauthorized || e.Name != "AuthenticationRequired" || e.ID == "" {
			t.Errorf("got %d %s, want 401 AuthenticationRequired with an id", status, body)
		}
	})
	t.Run("complete lifecycle", func(t *testing.T) {
		url := base + "/api/admin/projects/default/features/new-checkout/lifecycle/complete"
		status, body := call(t, http.MethodPost, url, admin, `{"status":"kept","statusValue":"v2"}`)
		if status != http.StatusOK || len(body) != 0 {
			t.Errorf("got %d %q, want 200 with an empty body", status, body)
		}
		status, body = call(t, http.MethodPost, base+"/api/admin/projects/default/features/nope/lifecycle/complete", admin, `{"status":"kept"}`)
		if e := decode[apiError](t, "404 body", body); status != http.StatusNotFound || e.Name != "NotFoundError" {
			t.Errorf("unknown feature: got %d %s, want 404 NotFoundError", status, body)
		}
	})
	t.Run("search events", func(t *testing.T) {
		status, body := call(t, http.MethodGet, base+"/api/admin/search/events?type=IS:feature-completed", admin, "")
		page := decode[struct {
			Events []eventJSON `json:"events"`
			Total  int         `json:"total"`
		}](t, "search", body)
		if status != http.StatusOK || page.Total != 1 || len(page.Events) != 1 {
			t.Fatalf("got %d %s, want 200 with the one feature-completed event", status, body)
		}
		e := page.Events[0]
		if e.FeatureName == nil || *e.FeatureName != "new-checkout" || e.CreatedBy != "e2e" || e.CreatedByUserID == nil || *e.CreatedByUserID != -42 {
			t.Errorf("got event %s, want new-checkout completed by the e2e admin token (-42)", body)
		}
		if d := decode[map[string]any](t, "data", e.Data); d["status"] != "kept" || d["statusValue"] != "v2" || d["kept"] != true {
			t.Errorf("got data %s, want status kept, statusValue v2, kept true", e.Data)
		}
		status, body = call(t, http.MethodGet, base+"/api/admin/search/events?limit=0", admin, "")
		if e := decode[apiError](t, "400 body", body); status != http.StatusBadRequest || e.Name != "BadDataError" {
			t.Errorf("limit=0: got %d %s, want 400 BadDataError", status, body)
		}
	})
	t.Run("deprecated search", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/admin/events/search", strings.NewReader(`{"query":"checkout","limit":10}`))
		req.Header.Set("Authorization", admin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got := struct {
			Version     int         `json:"version"`
			Events      []eventJSON `json:"events"`
			TotalEvents int         `json:"totalEvents"`
		}{}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || got.Version != 1 || got.TotalEvents != 2 || len(got.Events) != 2 {
			t.Errorf("got %d %+v, want 200, version 1 and the 2 events that mention checkout", resp.StatusCode, got)
		}
		if len(got.Events) == 2 && got.Events[0].Type != "feature-completed" {
			t.Errorf("got first event %q, want the newest, feature-completed", got.Events[0].Type)
		}
		if resp.Header.Get("Deprecation") != "true" {
			t.Errorf("Deprecation header %q, want true", resp.Header.Get("Deprecation"))
		}
	})
	t.Run("list projects", func(t *testing.T) {
		status, body := call(t, http.MethodGet, base+"/api/admin/projects", admin, "")
		got := decode[struct {
			Version  int `json:"version"`
			Projects []struct {
				ID           string `json:"id"`
				FeatureCount int    `json:"featureCount"`
				MemberCount  int    `json:"memberCount"`
				Health       int    `json:"health"`
				Owners       []struct {
					OwnerType string `json:"ownerType"`
					Name      string `json:"name"`
				} `json:"owners"`
			} `json:"projects"`
		}](t, "projects", body)
		if status != http.StatusOK || got.Version != 1 || len(got.Projects) != 1 {
			t.Fatalf("got %d %s, want 200, version 1 and one project", status, body)
		}
		p := got.Projects[0]
		if p.ID != "default" || p.FeatureCount != 1 || p.MemberCount != 1 || len(p.Owners) != 1 || p.Owners[0].Name != "Ada" {
			t.Errorf("got %s, want project default with 1 feature, 1 member, owner Ada", body)
		}
	})
	t.Run("delete service account", func(t *testing.T) {
		if status, _ := call(t, http.MethodGet, base+"/api/admin/projects", "user:ci-secret", ""); status != http.StatusOK {
			t.Fatalf("the service account's token: got %d before the delete, want 200", status)
		}
		status, body := call(t, http.MethodDelete, base+"/api/admin/service-account/10", admin, "")
		if status != http.StatusOK || len(body) != 0 {
			t.Errorf("got %d %q, want 200 with an empty body", status, body)
		}
		status, body = call(t, http.MethodGet, base+"/api/admin/projects", "user:ci-secret", "")
		if e := decode[apiError](t, "401 body", body); status != http.StatusUnauthorized || e.Name != "AuthenticationRequired" {
			t.Errorf("the deleted account's token: got %d %s, want 401", status, body)
		}
		status, body = call(t, http.MethodDelete, base+"/api/admin/service-account/10", admin, "")
		if e := decode[apiError](t, "404 body", body); status != http.StatusNotFound || e.Name != "NotFoundError" {
			t.Errorf("second delete: got %d %s, want 404 NotFoundError", status, body)
		}
	})
	p.stop(t)
	if out := p.stderr.String(); adminTokenLine.MatchString(out) || strings.Contains(out, admin) {
		t.Errorf("the log shows a token although the seed has an admin token:\n%s", out)
	}

	// A second start on the same database keeps the data and does not load the seed again.
	p = startBinary(t, bin, env...)
	p.waitReady(t, base)
	status, body := call(t, http.MethodGet, base+"/api/admin/search/events?type=IS_ANY_OF:feature-completed,service-account-deleted", admin, "")
	if page := decode[struct {
		Total int `json:"total"`
	}](t, "search", body); status != http.StatusOK || page.Total != 2 {
		t.Errorf("after a restart: got %d %s, want the 2 events of the first run", status, body)
	}
	p.stop(t)
	if !strings.Contains(p.stderr.String(), "already has data") {
		t.Errorf("the second start does not say it skipped the seed:\n%s", p.stderr)
	}
}

// TestEndToEndBusyPort checks that a busy port ends start-up with exit code
// 1 and one line on stderr.
func TestEndToEndBusyPort(t *testing.T) {
	bin := buildBinary(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	p := startBinary(t, bin, "FLAGADMIN_ADDR="+busy.Addr().String(), "FLAGADMIN_DB=memory:", "FLAGADMIN_LOG_LEVEL=", "FLAGADMIN_SEED=", "FLAGADMIN_ADMIN_TOKENS=")
	if code := p.exitCode(t); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	want := fmt.Sprintf("flagadmin: cannot listen on %s: bind: address already in use\n", busy.Addr())
	if got := p.stderr.String(); got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

// TestEndToEndDemo starts the binary with --demo on an in-memory store and
// calls the API with a demo token it printed.
func TestEndToEndDemo(t *testing.T) {
	bin := buildBinary(t)
	addr := freeAddr(t)
	p := &process{cmd: exec.Command(bin, "serve", "--demo", "--db", "memory:", "--addr", addr), stderr: &syncbuffer.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "FLAGADMIN_SEED=", "FLAGADMIN_ADMIN_TOKENS=")
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	p.waitReady(t, "http://"+addr)
	// The server prints the tokens before it serves, but what it wrote
	// reaches p.stderr through a goroutine of exec's that may not have
	// copied it yet.
	waitFor(t, "the demo tokens on stderr", func() bool { return strings.Contains(p.stderr.String(), "user:demo-eve-token") })
	url := "http://" + addr + "/api/admin/projects/default/features/dark-mode/lifecycle/complete"
	if status, body := call(t, http.MethodPost, url, "user:demo-eve-token", `{"status":"discarded"}`); status != http.StatusOK {
		t.Errorf("the demo Editor completes a feature of the open project: got %d %s, want 200", status, body)
	}
	url = "http://" + addr + "/api/admin/projects/checkout/features/new-checkout/lifecycle/complete"
	if status, body := call(t, http.MethodPost, url, "user:demo-vic-token", `{"status":"kept"}`); status != http.StatusForbidden {
		t.Errorf("the demo Viewer completes a feature: got %d %s, want 403", status, body)
	}
	p.stop(t)
}
