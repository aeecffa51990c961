package webhooks_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/webhooks"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/testclock"
)

// renewalsFail is a store whose lease renewals fail once failing is set,
// counting the failures.
type renewalsFail struct {
	*memstore.Store
	failing  atomic.Bool
	failures atomic.Int64
}

func (s *renewalsFail) AcquireSinkLease(ctx context.Context, name, holder string, now, until time.Time) (flagadmin.SinkState, bool, error) {
	if s.failing.Load() {
		s.failures.Add(1)
		return flagadmin.SinkState{}, false, errors.New("the database is away")
	}
	return s.Store.AcquireSinkLease(ctx, name, holder, now, until)
}

// A sink's holder that cannot renew its lease stops delivering one renewal
// interval before the lease could end unrenewed, not at its end: another
// server may take the sink over from then on.
func TestARenewalThatFailsGivesUpOneIntervalBeforeTheLeaseEnds(t *testing.T) {
	s := &renewalsFail{Store: memstore.New()}
	register(t, s, "h")
	t0 := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	clock := testclock.New(t0)
	opts := fast("a")
	opts.LeaseTTL, opts.RenewEvery, opts.Now = 10*time.Second, 20*time.Millisecond, clock.Now
	e := startEngine(t, s, []flagadmin.WebhookSink{sinkTo("h", "http://127.0.0.1:1", flagadmin.EventSearchParams{})}, opts)
	waitStats(t, e, func(st []webhooks.SinkStats) bool { return st[0].Holding })
	// Every renewal so far was at t0: the lease lasts until t0+10s.
	s.failing.Store(true)
	clock.Set(t0.Add(opts.LeaseTTL - opts.RenewEvery - time.Millisecond))
	deadline := time.Now().Add(10 * time.Second)
	for s.failures.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d failed renewals in 10 s, want 3", s.failures.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !e.Stats()[0].Holding {
		t.Fatal("gave up the lease more than one renewal interval before its end")
	}
	clock.Set(t0.Add(opts.LeaseTTL - opts.RenewEvery))
	waitStats(t, e, func(st []webhooks.SinkStats) bool { return !st[0].Holding })
}
