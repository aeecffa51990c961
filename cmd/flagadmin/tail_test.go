package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/eventfeed"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// tailServer serves a memstore with n events and the live stream.
func tailServer(t *testing.T, n int) (*httptest.Server, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	seed := fmt.Sprintf(`{"apiTokens":[{"secret":%q,"type":"admin","name":"admin"}]}`, exportTestToken)
	if err := flagadmin.NewService(store).LoadSeed(context.Background(), strings.NewReader(seed)); err != nil {
		t.Fatal(err)
	}
	appendTailEvents(t, store, n)
	feed := eventfeed.New(store, eventfeed.Options{Interval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); feed.Run(ctx) }()
	api := httpapi.New(flagadmin.NewService(store), httpapi.Config{Feed: feed})
	ts := httptest.NewServer(api.Handler())
	t.Cleanup(func() { api.EndStreams(); ts.Close(); cancel(); <-done })
	return ts, store
}

func appendTailEvents(t *testing.T, store *memstore.Store, n int) {
	t.Helper()
	b := &flagadmin.Batch{}
	for range n {
		b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "bot", CreatedAt: time.Now().UTC(), Project: new("default"), FeatureName: new("f")})
	}
	if err := store.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

var tailLine = regexp.MustCompile(`^(\d+) \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z feature-updated project=default feature=f by=bot$`)

// TestEventsTail replays from --after-id, follows new events, resumes
// after the connection drops (nothing missed or printed twice), and stops
// on cancellation with exit 0 and the last id on stderr.
func TestEventsTail(t *testing.T) {
	ts, store := tailServer(t, 5)
	var stdout, stderr syncbuffer.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"events", "tail", "--url", ts.URL, "--after-id", "2"}, func(k string) string {
			return map[string]string{envToken: exportTestToken}[k]
		}, &stdout, &stderr)
	}()
	waitLines := func(n int) []string {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if len(lines) >= n && lines[0] != "" {
				return lines
			}
			if time.Now().After(deadline) {
				t.Fatalf("got output %q, want %d lines; stderr %q", stdout.String(), n, stderr.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitLines(3)
	appendTailEvents(t, store, 2)
	waitLines(5)
	ts.CloseClientConnections()
	time.Sleep(50 * time.Millisecond)
	appendTailEvents(t, store, 3)
	lines := waitLines(8)
	for i, l := range lines {
		m := tailLine.FindStringSubmatch(l)
		if m == nil || m[1] != fmt.Sprint(i+3) {
			t.Errorf("line %d: got %q, want event %d in the text form", i, l, i+3)
		}
	}
	if len(lines) != 8 {
		t.Errorf("got %d lines, want 8 (ids 3 to 10 once each)", len(lines))
	}
	if !strings.Contains(stderr.String(), "resuming after id 7") {
		t.Errorf("stderr %q: want the reconnection after id 7", stderr.String())
	}
	cancel()
	select {
	case code := <-exit:
		if code != 0 || !strings.Contains(stderr.String(), "the last id was 10") {
			t.Errorf("after cancel: exit %d, stderr %q; want 0 and the last id", code, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("events tail did not stop")
	}
}

func TestEventsTailBadFlags(t *testing.T) {
	env := map[string]string{envToken: exportTestToken}
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"events", "tail", "--format", "csv"}, env, "--format must be text or ndjson"},
		{[]string{"events", "tail", "--after-id", "-3"}, env, "--after-id must be 0 or more"},
		{[]string{"events", "tail"}, nil, "needs a token: --token or " + envToken},
		{[]string{"events", "tail", "extra"}, env, "takes no arguments"},
		{[]string{"events", "tail", "--url", "http://127.0.0.1:1"}, env, "flagadmin events tail:"},
	} {
		code, stdout, stderr := runCLI(t, c.env, c.args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 1 and one line with %q", c.args, code, stdout, stderr, c.want)
		}
	}
	ts, _ := tailServer(t, 0)
	code, _, stderr := runCLI(t, map[string]string{envToken: exportTestToken, envURL: ts.URL}, "events", "tail", "--type", strings.Repeat("t", 256))
	if code != 1 || !strings.Contains(stderr, "type") {
		t.Errorf("bad type: exit %d, %q", code, stderr)
	}
	code, stdout, _ := runCLI(t, nil, "events", "tail", "-h")
	for _, want := range []string{"Usage: flagadmin events tail", "--after-id ID", "--url URL", "--token TOKEN", "--project IDS", envToken, envURL} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("help: exit %d; does not mention %q", code, want)
		}
	}
}
