package unleashimport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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

// onLog is a log handler that calls fn with each line's message as the
// line is written.
type onLog struct{ fn func(msg string) }

func (h onLog) Enabled(context.Context, slog.Level) bool { return true }
func (h onLog) Handle(_ context.Context, r slog.Record) error {
	h.fn(r.Message)
	return nil
}
func (h onLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onLog) WithGroup(string) slog.Handler      { return h }

// A change of whether this server applies shows in the status only once
// the log says so: whoever reads the status and then the log finds the line.
func TestTheLeaseChangeIsLoggedBeforeTheStatusShowsIt(t *testing.T) {
	var f *Follower
	var lines []string
	f = NewFollower("postgres://fake/unleash", memstore.New(), FollowOptions{
		Holder: "me", Logger: slog.New(onLog{func(msg string) {
			lines = append(lines, fmt.Sprintf("applying=%v as it logs %q", f.Status().Applying, msg))
		}}),
	})
	var w leaseWatch
	f.publishLease(&w, false, nil, "other") // another server applies
	f.publishLease(&w, true, nil, "me")     // this one takes over
	f.publishLease(&w, true, nil, "me")     // renews: no line
	f.publishLease(&w, false, nil, "other") // and loses it
	want := []string{
		`applying=false as it logs "following: another server applies the source's changes; this one serves the copy"`,
		`applying=false as it logs "following: this server applies the source's changes (it holds the follow lease)"`,
		`applying=true as it logs "following: another server applies the source's changes; this one serves the copy"`,
	}
	if !slices.Equal(lines, want) {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if f.Status().Applying {
		t.Errorf("after the lease was lost the status says this server applies")
	}
}
