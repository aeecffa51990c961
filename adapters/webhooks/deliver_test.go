package webhooks_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/webhooks"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// unreadableLog is a store whose event log cannot be read the first
// failures times.
type unreadableLog struct {
	*memstore.Store
	failures atomic.Int32
}

func (s *unreadableLog) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	if s.failures.Add(-1) >= 0 {
		return errors.New("the event log cannot be read")
	}
	return s.Store.ExportEvents(ctx, q, afterID, fn)
}

// lockedBuffer is a log a test reads while the engine writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestAnEventLogThatCannotBeReadIsReadAgain(t *testing.T) {
	s := &unreadableLog{Store: memstore.New()}
	s.failures.Store(3)
	r := newReceiver(t)
	register(t, s, "patient")
	want := writeEvents(t, s, 5, flagadmin.EventFeatureUpdated)
	var log lockedBuffer
	opts := fast("a")
	opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	e := startEngine(t, s, []flagadmin.WebhookSink{sinkTo("patient", r.srv.URL, flagadmin.EventSearchParams{})}, opts)
	r.waitFor(t, want, 10*time.Second)
	r.checkDelivery(t, want, 0)
	waitStats(t, e, func(st []webhooks.SinkStats) bool { return st[0].Position == want[len(want)-1] })
	// The sink keeps its lease and reads again: three warnings, one
	// start of delivery.
	got := log.String()
	if n := strings.Count(got, "cannot read the event log; retrying"); n != 3 {
		t.Errorf("got %d warnings of an unreadable log, want 3; the log:\n%s", n, got)
	}
	if n := strings.Count(got, "delivering for the sink"); n != 1 {
		t.Errorf("the sink started delivering %d times, want once; the log:\n%s", n, got)
	}
}

func TestMoreEventsThanABatchAreDeliveredInOrder(t *testing.T) {
	s := memstore.New()
	r := newReceiver(t)
	register(t, s, "busy")
	want := writeEvents(t, s, flagadmin.ExportBatchSize+5, flagadmin.EventFeatureUpdated)
	e := startEngine(t, s, []flagadmin.WebhookSink{sinkTo("busy", r.srv.URL, flagadmin.EventSearchParams{})}, fast("a"))
	r.waitFor(t, want, 60*time.Second)
	r.checkDelivery(t, want, 0)
	waitStats(t, e, func(st []webhooks.SinkStats) bool {
		return st[0].Position == want[len(want)-1] && st[0].LagEvents == 0 && !st[0].LagAtLeast
	})
}
