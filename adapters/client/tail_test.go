package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestTailEndsWhenItsContextEndsBeforeReconnecting: a walk whose context
// ends while it waits to reconnect yields the context's error and ends.
func TestTailEndsWhenItsContextEndsBeforeReconnecting(t *testing.T) {
	ts, _ := streamServer(t)
	c := newClient(t, ts.URL, adminToken)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var received int
	var reconnects int
	for _, err := range c.Tail(ctx, flagadmin.EventSearchParams{}, 0, func(error, int64) { reconnects++; cancel() }) {
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			if reconnects != 1 {
				t.Errorf("got %d reconnections, want 1", reconnects)
			}
			return
		}
		if received++; received == 5 {
			ts.CloseClientConnections()
		}
	}
	t.Fatal("the walk ended without an error")
}
