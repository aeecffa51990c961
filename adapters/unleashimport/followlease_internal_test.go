package unleashimport

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
)

// A follower whose renewals fail keeps applying until its lease ends, not
// one renewal interval before as a webhook sink's holder does: the store
// refuses its writes from the end on.
func TestAFailingRenewalKeepsTheFollowLeaseUntilItEnds(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := NewFollower("postgres://fake/unleash", memstore.New(), FollowOptions{
		Holder: "me", Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return t0 },
		LeaseTTL: 20 * time.Second, RenewEvery: 5 * time.Second,
	})
	var w leaseWatch
	if !f.holds(&w, t0, true, nil) {
		t.Fatal("a renewal that succeeded: not held")
	}
	f.leased.Store(true)
	down := errors.New("the store is away")
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{
		{5 * time.Second, true},
		{15 * time.Second, true}, // one renewal interval before the end
		{20*time.Second - time.Millisecond, true},
		{20 * time.Second, false}, // the end
	} {
		if got := f.holds(&w, t0.Add(c.at), false, down); got != c.want {
			t.Errorf("renewal failed at t0+%s: held %v, want %v", c.at, got, c.want)
		}
	}
	if got := f.errs.Load(); got != 4 {
		t.Errorf("errors counted %d, want 4", got)
	}
}
