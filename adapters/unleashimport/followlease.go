package unleashimport

import (
	"context"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

// The follow lease: exactly one server applies, the one that holds the
// store's lease; the others serve the copy. A goroutine of Run's
// (leaseLoop) acquires or renews it at once and every RenewEvery, and
// tells Run's steps through Follower.leased (and needState, wake).

// leaseWatch is what the lease's goroutine keeps from one renewal to the
// next.
type leaseWatch struct {
	held    flagadmin.Lease // the lease as this server last renewed it
	failing time.Time       // since when renewals fail (zero: they do not)
	standby bool            // the standby line was logged since this server last applied
}

// leaseLoop acquires or renews the lease at once and every RenewEvery, and
// at once again when the first import ends (renew: it closes the channel
// received once that renewal is published).
func (f *Follower) leaseLoop(ctx context.Context) {
	ticker := time.NewTicker(f.opts.RenewEvery)
	defer ticker.Stop()
	var (
		w       leaseWatch
		renewed chan struct{} // closed once the renewal asked for is done
	)
	for {
		now := f.opts.Now()
		st, ok, err := f.store.AcquireFollowLease(ctx, f.opts.Holder, now, now.Add(f.opts.LeaseTTL))
		if ctx.Err() != nil {
			return
		}
		ok = f.holds(&w, now, ok, err)
		if err == nil {
			f.setStatus(func(s *follow.Status) { s.Holder = st.Lease.Holder })
		}
		f.publishLease(&w, ok, err, st.Lease.Holder)
		if renewed != nil {
			close(renewed)
			renewed = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case renewed = <-f.renew:
		}
	}
}

// holds decides whether this server holds the lease after a renewal at now
// answered ok and err: a renewal that fails keeps the lease until it ends.
func (f *Follower) holds(w *leaseWatch, now time.Time, ok bool, err error) bool {
	switch {
	case err != nil && f.copying.Load():
		// The first copy's own transaction is the fence (LoadFollow
		// checks at its end that no other server took the lease): a
		// renewal that cannot run beside it, on a store with one
		// writer (SQLite), does not end the lease; it is renewed as
		// soon as the copy ends.
		return f.leased.Load()
	case err != nil:
		if w.failing.IsZero() {
			w.failing = now
			f.log.Warn("following: the follow lease cannot be renewed; this server keeps applying until it ends",
				"holder", f.opts.Holder, "until", w.held.Until.Format(time.RFC3339), "reason", flat(err))
		}
		// Counted after the line is logged: whoever sees the count finds it.
		f.errs.Add(1)
		return f.leased.Load() && w.held.HeldBy(f.opts.Holder, now) // keep it while it lasts
	}
	if !w.failing.IsZero() {
		f.log.Info("following: the follow lease can be renewed again", "holder", f.opts.Holder,
			"failed_for", now.Sub(w.failing).Round(time.Millisecond).String())
		w.failing = time.Time{}
	}
	if ok {
		w.held = flagadmin.Lease{Holder: f.opts.Holder, Until: now.Add(f.opts.LeaseTTL)}
	}
	return ok
}

// publishLease makes ok this server's part (Follower.leased) once its
// change is logged, so that a status that says this server applies has
// the line that says so in the log before it, and wakes Run's steps when
// the part changed.
func (f *Follower) publishLease(w *leaseWatch, ok bool, err error, holder string) {
	was := f.leased.Load()
	f.leaseChanged(w, was, ok, err, holder)
	for !f.leased.CompareAndSwap(was, ok) {
		// Run's steps found the lease lost meanwhile: decide again
		// from there.
		was = f.leased.Load()
		f.leaseChanged(w, was, ok, err, holder)
	}
	if was != ok {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}

// leaseChanged logs the lease's changes of hands (was: this server held
// it before the renewal; ok: it holds it now; holder: the store's holder).
func (f *Follower) leaseChanged(w *leaseWatch, was, ok bool, err error, holder string) {
	switch {
	case ok:
		w.standby = false
		if !was {
			f.needState.Store(true)
			f.log.Info("following: this server applies the source's changes (it holds the follow lease)", "holder", f.opts.Holder)
		}
	case was && err != nil:
		f.log.Warn("following: the follow lease ended while it could not be renewed; this server serves the copy until it gets the lease again", "holder", f.opts.Holder)
	case err == nil && !w.standby:
		// Once each time this server becomes standby: at start as
		// after it applied.
		w.standby = true
		f.log.Info("following: another server applies the source's changes; this one serves the copy", "holder", f.opts.Holder, "applied_by", holder)
	}
}
