package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

func memoryConfig() Config {
	return Config{Addr: "127.0.0.1:0", DB: memoryURL, LogLevel: slog.LevelInfo, LogFormat: "text"}
}

func TestServeWiringIsValid(t *testing.T) {
	gatewayed := memoryConfig()
	gatewayed.GatewayConfig = GatewayConfig{Upstream: &url.URL{Scheme: "http", Host: "unleash:4242"}, UpstreamTimeout: time.Second, FollowWait: time.Second}
	for _, cfg := range []Config{memoryConfig(), {Addr: defaultAddr, DB: defaultDB, LogLevel: slog.LevelDebug, LogFormat: "json", Demo: true}, gatewayed} {
		if err := fx.ValidateApp(serveOptions(cfg, io.Discard)); err != nil {
			t.Errorf("fx.ValidateApp(%+v): %v", cfg, err)
		}
	}
}

// startApp starts the server of cfg with fxtest and returns its base URL
// and its stderr; it stops at the end of the test.
func startApp(t *testing.T, cfg Config) (string, *syncbuffer.Buffer) {
	t.Helper()
	stderr := &syncbuffer.Buffer{}
	var l *Listener
	app := fxtest.New(t, serveOptions(cfg, stderr), fx.Populate(&l))
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	return "http://" + l.Addr().String(), stderr
}

// call sends a request with an Authorization header and returns the status and body.
func call(t *testing.T, method, url, token string, body string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

var adminTokenLine = regexp.MustCompile(`(?m)^admin token \(shown once\): (\*:\*\.[0-9a-f]+)$`)

func TestServeInMemoryStartsServesAndStops(t *testing.T) {
	base, stderr := startApp(t, memoryConfig())

	for _, path := range []string{"/health", "/ready"} {
		if status, body := call(t, http.MethodGet, base+path, "", ""); status != http.StatusOK {
			t.Errorf("GET %s: got status %d (%s), want 200", path, status, body)
		}
	}
	m := adminTokenLine.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("stderr has no generated admin token line:\n%s", stderr)
	}
	status, body := call(t, http.MethodGet, base+"/api/admin/projects", m[1], "")
	if status != http.StatusOK {
		t.Fatalf("GET /api/admin/projects with the generated token: got %d (%s), want 200", status, body)
	}
	var list struct {
		Version  int               `json:"version"`
		Projects []json.RawMessage `json:"projects"`
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Version != 1 || len(list.Projects) != 0 {
		t.Errorf("got %s (%v), want version 1 and no projects", body, err)
	}
	if status, _ := call(t, http.MethodGet, base+"/api/admin/projects", "*:*.wrong", ""); status != http.StatusUnauthorized {
		t.Errorf("GET /api/admin/projects with a wrong token: got %d, want 401", status)
	}
	if strings.Contains(stderr.String(), "[Fx]") || strings.Contains(stderr.String(), "PROVIDE") {
		t.Errorf("fx logged its own events at level info:\n%s", stderr)
	}
}

func TestServeDemoWorld(t *testing.T) {
	cfg := memoryConfig()
	cfg.Demo = true
	base, stderr := startApp(t, cfg)

	out := stderr.String()
	if !strings.Contains(out, "demo tokens") || !strings.Contains(out, "*:*.demo-admin-token") || !strings.Contains(out, "user:demo-eve-token") {
		t.Errorf("stderr does not list the demo tokens:\n%s", out)
	}
	if adminTokenLine.MatchString(out) {
		t.Errorf("an admin token was generated although the demo world has one:\n%s", out)
	}
	status, body := call(t, http.MethodGet, base+"/api/admin/projects", "*:*.demo-admin-token", "")
	if status != http.StatusOK {
		t.Fatalf("GET /api/admin/projects: got %d (%s), want 200", status, body)
	}
	var list struct {
		Projects []struct {
			ID   string `json:"id"`
			Mode string `json:"mode"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	modes := map[string]bool{}
	for _, p := range list.Projects {
		modes[p.Mode] = true
	}
	if len(list.Projects) < 3 || !modes["open"] || !modes["protected"] || !modes["private"] {
		t.Errorf("got projects %+v, want at least 3 active projects of modes open, protected and private", list.Projects)
	}
	status, body = call(t, http.MethodGet, base+"/api/admin/projects?archived=true", "*:*.demo-admin-token", "")
	if status != http.StatusOK || !strings.Contains(string(body), `"archivedAt":"20`) {
		t.Errorf("GET archived projects: got %d %s, want an archived project", status, body)
	}
	status, body = call(t, http.MethodGet, base+"/api/admin/search/events?limit=1", "user:demo-vic-token", "")
	var page struct {
		Total int `json:"total"`
	}
	if err := json.Unmarshal(body, &page); status != http.StatusOK || err != nil || page.Total < 20 {
		t.Errorf("search as the demo Viewer: got %d %s, want 200 with at least 20 visible events", status, body)
	}
}

func TestServeImportsConfiguredAdminTokens(t *testing.T) {
	cfg := memoryConfig()
	cfg.AdminTokens = []string{"*:*.configured-one", "*:*.configured-two"}
	base, stderr := startApp(t, cfg)
	for _, token := range cfg.AdminTokens {
		if status, body := call(t, http.MethodGet, base+"/api/admin/projects", token, ""); status != http.StatusOK {
			t.Errorf("GET /api/admin/projects with a configured token: got %d (%s), want 200", status, body)
		}
	}
	out := stderr.String()
	if adminTokenLine.MatchString(out) {
		t.Errorf("an admin token was generated although two were configured:\n%s", out)
	}
	if strings.Contains(out, "configured-one") {
		t.Errorf("the log shows a configured secret:\n%s", out)
	}
}

func TestServeFxLogAtDebug(t *testing.T) {
	cfg := memoryConfig()
	cfg.LogLevel = slog.LevelDebug
	_, stderr := startApp(t, cfg)
	if !strings.Contains(stderr.String(), "component=fx") {
		t.Errorf("at level debug, fx's events are not in the log:\n%s", stderr)
	}
}

func TestServeBusyPortFailsStart(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := memoryConfig()
	cfg.Addr = busy.Addr().String()
	app := fx.New(serveOptions(cfg, io.Discard))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = app.Start(ctx)
	if err == nil {
		app.Stop(ctx)
		t.Fatal("start on a busy port succeeded")
	}
	got := oneLine(startupError(err))
	if want := "cannot listen on " + cfg.Addr + ": bind: address already in use"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
