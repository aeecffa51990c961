package storetest

import (
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// leaseOf is one lease a store keeps (the follow lease, a sink's), as the
// lease cases drive it.
type leaseOf struct {
	// acquire takes or renews the lease for holder at now until until.
	acquire func(t *testing.T, holder string, now, until time.Time) (flagadmin.Lease, bool)
	// release ends holder's lease.
	release func(t *testing.T, holder string)
	// read returns the lease as stored.
	read func(t *testing.T) flagadmin.Lease
}

// leaseCase is the case of the rules of flagadmin.Lease as a store keeps
// them, run on each lease it keeps: one sequence of acquisitions and
// releases by two holders with made-up times (the clock is the caller's),
// each checked against the lease expected after it. newLease must return
// the lease of a new, empty store.
func leaseCase(name string, newLease func(t *testing.T) leaseOf) testCase {
	t0 := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	ttl := 20 * time.Second
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		name    string
		release bool // a release by holder, else an acquisition at now
		holder  string
		now     time.Time
		wantOK  bool
		want    flagadmin.Lease // the stored lease after the step
	}
	a := func(until time.Time) flagadmin.Lease { return flagadmin.Lease{Holder: "a", Until: until} }
	b := func(until time.Time) flagadmin.Lease { return flagadmin.Lease{Holder: "b", Until: until} }
	steps := []step{
		{"a takes a lease never held", false, "a", at(0), true, a(at(ttl))},
		{"b is refused while a's lease lasts", false, "b", at(time.Second), false, a(at(ttl))},
		{"a renews", false, "a", at(10 * time.Second), true, a(at(10*time.Second + ttl))},
		{"b is refused a millisecond before the renewed lease ends", false, "b", at(10*time.Second + ttl - time.Millisecond), false, a(at(10*time.Second + ttl))},
		{"a renews its own lease after it ended, no one having taken it", false, "a", at(time.Hour), true, a(at(time.Hour + ttl))},
		{"b takes it over once it ended", false, "b", at(time.Hour + ttl), true, b(at(time.Hour + 2*ttl))},
		{"a, the former holder, is refused", false, "a", at(time.Hour + ttl + time.Second), false, b(at(time.Hour + 2*ttl))},
		{"a's release of b's lease changes nothing", true, "a", time.Time{}, false, b(at(time.Hour + 2*ttl))},
		{"a is still refused after its release", false, "a", at(time.Hour + ttl + time.Second), false, b(at(time.Hour + 2*ttl))},
		{"b releases: no holder, no end", true, "b", time.Time{}, false, flagadmin.Lease{}},
		{"a takes the released lease at once", false, "a", at(time.Hour + ttl + 2*time.Second), true, a(at(time.Hour + 2*ttl + 2*time.Second))},
	}
	return testCase{name, func(t *testing.T, _ *world) {
		l := newLease(t)
		for _, st := range steps {
			if st.release {
				l.release(t, st.holder)
			} else {
				got, ok := l.acquire(t, st.holder, st.now, st.now.Add(ttl))
				if ok != st.wantOK || !sameLease(got, st.want) {
					t.Fatalf("%s: got %+v, %v; want %+v, %v", st.name, got, ok, st.want, st.wantOK)
				}
			}
			if got := l.read(t); !sameLease(got, st.want) {
				t.Fatalf("%s: stored lease %+v, want %+v", st.name, got, st.want)
			}
		}
	}}
}

// sameLease reports whether x and y have one holder and one end.
func sameLease(x, y flagadmin.Lease) bool { return x.Holder == y.Holder && x.Until.Equal(y.Until) }
