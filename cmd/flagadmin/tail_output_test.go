package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// TestTailOutputStopped holds the end of events tail: a stop asked for is
// exit 0 with the last id, if any, on stderr; a failure is one line,
// with the last id, if any.
func TestTailOutputStopped(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	failure := errors.New("401 AuthenticationRequired: the token expired")
	cases := []struct {
		name       string
		ctx        context.Context
		last       int64
		wantErr    string
		wantStderr string
	}{
		{"stopped before any event", cancelled, -1, "", "stopped before any event\n"},
		{"stopped", cancelled, 10, "", "stopped; the last id was 10 (resume with --after-id 10)\n"},
		{"failed before any event", context.Background(), -1, "flagadmin events tail: 401 AuthenticationRequired: the token expired", ""},
		{"failed", context.Background(), 10, "flagadmin events tail: 401 AuthenticationRequired: the token expired; the last id was 10", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			out := &tailOutput{stderr: &stderr, last: c.last}
			err := out.stopped(c.ctx, failure)
			if got := errString(err); got != c.wantErr || stderr.String() != c.wantStderr {
				t.Errorf("got error %q, stderr %q; want %q, %q", got, stderr.String(), c.wantErr, c.wantStderr)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestTailOutputReconnecting: each reconnection says why and after which
// id it resumes, which becomes the last id.
func TestTailOutputReconnecting(t *testing.T) {
	var stderr bytes.Buffer
	out := &tailOutput{stderr: &stderr, last: -1}
	out.reconnecting(&client.StreamEnd{Reason: "shutdown"}, 7)
	out.reconnecting(errors.New("read tcp:\n connection reset"), 5)
	want := "the server ended the stream (shutdown); resuming after id 7\nconnection lost (read tcp: connection reset); resuming after id 5\n"
	if stderr.String() != want || out.last != 7 {
		t.Errorf("stderr %q, last %d; want %q, 7", stderr.String(), out.last, want)
	}
}

// TestEventsTailNDJSON prints each event as its JSON, one a line.
func TestEventsTailNDJSON(t *testing.T) {
	ts, _ := tailServer(t, 2)
	var stdout, stderr syncbuffer.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"events", "tail", "--url", ts.URL, "--after-id", "0", "--format", "ndjson"}, func(k string) string {
			return map[string]string{envToken: exportTestToken}[k]
		}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(stdout.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if code := <-exit; code != 0 || !strings.Contains(stderr.String(), "the last id was 2") {
		t.Errorf("exit %d, stderr %q; want 0 and the last id 2", code, stderr.String())
	}
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	var ids []int64
	for sc.Scan() {
		var ev flagadmin.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Type != flagadmin.EventFeatureUpdated {
			t.Fatalf("line %q: %v, want an event's JSON", sc.Text(), err)
		}
		ids = append(ids, ev.ID)
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 2 {
		t.Errorf("got ids %v, want [1 2]", ids)
	}
}
