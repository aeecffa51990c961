package main

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// TestServeStreamFollowsAndStopEndsIt: the served demo world streams a
// new event, and stopping the app with the stream open ends the stream
// with its end event and returns at once.
func TestServeStreamFollowsAndStopEndsIt(t *testing.T) {
	cfg := memoryConfig()
	cfg.Demo, cfg.MaxStreams = true, 2
	var l *Listener
	app := fxtest.New(t, serveOptions(cfg, &syncbuffer.Buffer{}), fx.Populate(&l))
	app.RequireStart()
	base := "http://" + l.Addr().String()
	const admin = "*:*.demo-admin-token"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/admin/events/stream?type=IS:feature-completed", nil)
	req.Header.Set("Authorization", admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	want := func(prefix string) string {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended before a line %q", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-deadline:
				t.Fatalf("no line %q within 5 s", prefix)
			}
		}
	}
	want("id: ") // the start position
	status, body := call(t, http.MethodPost, base+"/api/admin/projects/default/features/new-navigation/lifecycle/complete", admin, `{"status":"kept"}`)
	if status != http.StatusOK {
		t.Fatalf("complete: %d %s", status, body)
	}
	if l := want("data: "); !strings.Contains(l, `"featureName":"new-navigation"`) {
		t.Errorf("event data: %s", l)
	}
	// The feed counts a batch as sent once its write returns, which may be
	// just after the client has read it: scrape until it shows (2 s).
	for name, want := range map[string]float64{"flagadmin_streams_open": 1, "flagadmin_stream_events_sent_total": 1} {
		var v float64
		var ok bool
		for end := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if v, ok = sample(scrape(t, base+metricsPath), name, nil); (ok && v == want) || time.Now().After(end) {
				break
			}
		}
		if !ok || v != want {
			t.Errorf("%s = %v (found %v), want %v", name, v, ok, want)
		}
	}

	stopCtx, stopCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer stopCancel()
	start := time.Now()
	if err := app.Stop(stopCtx); err != nil {
		t.Fatalf("stop with an open stream: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stop took %v with an open stream", took)
	}
	want("event: end")
}
