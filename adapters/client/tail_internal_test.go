package client

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestReconnectable holds the rule of Tail's reconnections: a stream that
// was open reconnects after a lost connection or an end the server sent;
// a failure to open reconnects only after a break, while it may pass,
// within ReconnectPatience.
func TestReconnectable(t *testing.T) {
	lost := &connectionError{op: "GET " + streamPath, err: errors.New("connection reset")}
	unavailable := &Error{Status: 503, Message: "restarting"}
	refused := &Error{Status: 401, Message: "authentication required"}
	now := time.Now()
	cases := []struct {
		name    string
		opened  bool
		err     error
		brokeAt time.Time
		want    bool
	}{
		{"open, connection lost", true, fmt.Errorf("read: %w", lost), time.Time{}, true},
		{"open, ended by the server", true, &StreamEnd{Reason: "shutdown"}, time.Time{}, true},
		{"open, a bad event", true, errors.New("client: stream events: bad event id \"x\""), time.Time{}, false},
		{"first opening, unreachable", false, lost, time.Time{}, false},
		{"after a break, unreachable", false, lost, now, true},
		{"after a break, 5xx", false, unavailable, now, true},
		{"after a break, refused", false, refused, now, false},
		{"after a break, 5xx past the patience", false, unavailable, now.Add(-ReconnectPatience - time.Second), false},
	}
	for _, c := range cases {
		if got := reconnectable(c.opened, c.err, c.brokeAt); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
