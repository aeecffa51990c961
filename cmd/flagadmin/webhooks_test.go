package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/webhooks"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestServeDeliversWebhooksAndStatusShowsThem(t *testing.T) {
	type hit struct{ id, typ, body string }
	var mu sync.Mutex
	var hits []hit
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhooks.Verify("hook-secret", r.Header.Get(webhooks.HeaderTimestamp), r.Header.Get(webhooks.HeaderSignature), body, time.Now(), time.Minute); err != nil {
			t.Errorf("verify: %v", err)
		}
		mu.Lock()
		hits = append(hits, hit{r.Header.Get(webhooks.HeaderEventID), r.Header.Get(webhooks.HeaderEventType), string(body)})
		mu.Unlock()
	}))
	defer recv.Close()
	hooks := writeFile(t, "hooks.yaml", `
- name: completed
  url: `+recv.URL+`/hook
  secret: hook-secret
  filter:
    type: IS:feature-completed
`)
	db := "sqlite:" + filepath.Join(t.TempDir(), "hooks.db")
	env := map[string]string{envDB: db, envWebhooks: hooks}
	seed := writeFile(t, "seed.json", testSeed)
	code, _, stderr := runCLI(t, env, "seed", seed)
	if code != 0 {
		t.Fatalf("seed: %s", stderr)
	}
	sinks, err := webhooks.LoadSinks(hooks)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Addr: "127.0.0.1:0", DB: db, LogLevel: slog.LevelInfo, LogFormat: "text", Webhooks: hooks, WebhookSinks: sinks}
	// A sink seen for the first time starts after the newest event stored
	// when it registers, which the server does before it serves: when it
	// logs that it listens, the store holds the sink at the seed's last
	// event (2), so the event written next is the sink's.
	var whenListening []flagadmin.SinkState
	var stateErr error
	logs := &lineWatcher{on: func(line string) {
		if strings.Contains(line, "msg=listening") {
			whenListening, stateErr = storedSinks(db)
		}
	}}
	var l *Listener
	app := fxtest.New(t, serveOptions(cfg, logs), fx.Populate(&l))
	app.RequireStart()
	if stateErr != nil || len(whenListening) != 1 || whenListening[0].Name != "completed" || whenListening[0].Position != 2 {
		t.Fatalf("stored sinks when the server said it listens: %+v (%v), want sink completed at event 2", whenListening, stateErr)
	}
	base := "http://" + l.Addr().String()
	status, body := call(t, http.MethodPost, base+"/api/admin/projects/default/features/new-checkout/lifecycle/complete", "*:*.e2e-admin", `{"status":"kept"}`)
	if status != 200 {
		t.Fatalf("complete: %d %s", status, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(hits)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	got := hits
	mu.Unlock()
	if len(got) != 1 || got[0].id != "3" || got[0].typ != "feature-completed" || !strings.Contains(got[0].body, `"data":{"kept":true,"status":"kept"}`) {
		t.Fatalf("got %+v, want event 3, feature-completed (the seed's 2 events come before the sink's start)", got)
	}
	// The engine records the delivery once the receiver has answered,
	// which is after the receiver saw the event; and a scrape reads each
	// family at its own moment, so one that falls on the update may show
	// the delivery in one family and not yet in another.
	wants := map[string]float64{"flagadmin_webhook_delivered_total": 1, "flagadmin_webhook_position": 3, "flagadmin_webhook_lag_events": 0}
	settled := func(families map[string]*dto.MetricFamily) bool {
		for name, want := range wants {
			if v, ok := sample(families, name, map[string]string{"sink": "completed"}); !ok || v != want {
				return false
			}
		}
		return true
	}
	families := scrape(t, base+metricsPath)
	for deadline := time.Now().Add(10 * time.Second); !settled(families) && time.Now().Before(deadline); families = scrape(t, base+metricsPath) {
		time.Sleep(20 * time.Millisecond)
	}
	for name, want := range wants {
		if v, ok := sample(families, name, map[string]string{"sink": "completed"}); !ok || v != want {
			t.Errorf("%s{sink=\"completed\"} = %v (found %v), want %v", name, v, ok, want)
		}
	}
	_, stdout, _ := runCLI(t, env, "webhooks", "status")
	for _, w := range []string{"SINK", "completed", " 3 ", "until"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("status while serving does not show %q:\n%s", w, stdout)
		}
	}
	app.RequireStop()
	code, stdout, stderr = runCLI(t, env, "webhooks", "status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "none") {
		t.Errorf("status after a clean stop shows a lease:\n%s", stdout)
	}
}

func TestBadWebhookFileFailsStartInOneLine(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"bad url", `[{"name":"audit","url":"ftp://x","secret":"s"}]`, `sink "audit": url: must be an http or https URL`},
		{"no secret", `[{"name":"audit","url":"http://x/"}]`, `sink "audit": secret: is required`},
		{"bad filter", `[{"name":"audit","url":"http://x/","secret":"s","filter":{"type":"completed"}}]`, `sink "audit": filter.type`},
		{"unknown key", "- name: audit\n  url: http://x/\n  secret: s\n  retry: 3\n", `sink "audit": "retry": unknown field`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "hooks", tt.file)
			code, stdout, stderr := runCLI(t, nil, "serve", "--db", "memory:", "--addr", "127.0.0.1:0", "--webhooks", path)
			want := "flagadmin: --webhooks: " + path + ": " + tt.want
			if code != 1 || stdout != "" || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1 and one line starting with %q", code, stdout, stderr, want)
			}
		})
	}
	code, _, stderr := runCLI(t, map[string]string{envWebhooks: "/nonexistent/hooks.yaml"}, "webhooks", "status", "--db", "memory:")
	if code != 1 || !strings.HasPrefix(stderr, "flagadmin: FLAGADMIN_WEBHOOKS: /nonexistent/hooks.yaml: no such file") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
}

func TestWebhooksHelp(t *testing.T) {
	for _, args := range [][]string{{"webhooks", "-h"}, {"webhooks", "status", "--help"}, {"help", "webhooks"}} {
		code, stdout, _ := runCLI(t, nil, args...)
		if code != 0 || !strings.Contains(stdout, "Usage: flagadmin webhooks status") || !strings.Contains(stdout, "--webhooks FILE") || !strings.Contains(stdout, envWebhooks) {
			t.Errorf("%q: exit %d:\n%s", args, code, stdout)
		}
	}
	_, stdout, _ := runCLI(t, nil, "serve", "-h")
	if !strings.Contains(stdout, "-webhooks") || !strings.Contains(stdout, envWebhooks) {
		t.Errorf("serve -h does not mention --webhooks:\n%s", stdout)
	}
}

// lineWatcher is a log destination that calls on with each write (a
// logger writes a line at a time), in the writer's goroutine.
type lineWatcher struct {
	mu sync.Mutex
	on func(line string)
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on(string(p))
	return len(p), nil
}

// storedSinks reads the sinks' state stored in the database at dbURL,
// without migrating it (which would take the write lock).
func storedSinks(dbURL string) ([]flagadmin.SinkState, error) {
	ctx := context.Background()
	s, err := bunstore.Open(ctx, dbURL, bunstore.WithoutMigrate())
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.SinkStates(ctx)
}
