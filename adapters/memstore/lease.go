package memstore

import (
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// The store's leases (the follow lease, each webhook sink's) are
// flagadmin.Lease values, under the lock of the state that holds each:
// taken, renewed and checked by the functions below only, which keep
// their times to the millisecond, as the SQL stores keep them, and
// released by Lease.Release.

// acquireLease gives holder the lease l until until when it is free for
// holder at now, and reports whether holder holds it.
func acquireLease(l *flagadmin.Lease, holder string, now, until time.Time) bool {
	return l.Acquire(holder, leaseTime(now), leaseTime(until))
}

// holdsLease reports whether holder holds the lease l at now.
func holdsLease(l flagadmin.Lease, holder string, now time.Time) bool {
	return l.HeldBy(holder, leaseTime(now))
}

// namesHolder reports whether the lease l still names holder, ended or
// not: the check at the end of a write that may outlast the lease while
// renewals wait for it (the load that starts following).
func namesHolder(l flagadmin.Lease, holder string) bool { return l.Holder == holder }

// leaseTime is t as a lease keeps it: UTC, to the millisecond.
func leaseTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
