package flagadmin

import "time"

// Lease says which server may act for a shared thing (the follow state,
// a webhook sink) while several share one store: its holder, until a time.
// A store keeps it and takes, renews, checks and releases it by the rules
// of the methods below, each in one step that no other caller interleaves
// with (a conditional UPDATE in SQL); the holder renews it before it ends,
// and another server takes it over once it has ended unrenewed.
//
// Times are the callers' clocks, compared with the times other callers
// wrote: servers sharing a store need clocks that agree to well within a
// lease. How long a lease lasts and when its holder renews it are the
// caller's: a store only compares times.
type Lease struct {
	// Holder is the holder's id, "" when none ever held it or it was
	// released.
	Holder string
	// Until is when the lease ends unrenewed (zero when released).
	Until time.Time
}

// Held reports whether someone holds the lease at now.
func (l Lease) Held(now time.Time) bool { return l.Holder != "" && l.Until.After(now) }

// HeldBy reports whether holder holds the lease at now: the check of a
// write fenced by the lease.
func (l Lease) HeldBy(holder string, now time.Time) bool {
	return l.Holder == holder && l.Until.After(now)
}

// FreeFor reports whether holder may take the lease at now: it holds it
// already (a renewal, even of a lease that ended), or no one does (never
// held, released, or ended at or before now).
func (l Lease) FreeFor(holder string, now time.Time) bool {
	return l.Holder == holder || !l.Held(now)
}

// Acquire gives holder the lease until until when it is free for holder
// at now (FreeFor), and reports whether holder now holds it.
func (l *Lease) Acquire(holder string, now, until time.Time) bool {
	if !l.FreeFor(holder, now) {
		return false
	}
	l.Holder, l.Until = holder, until
	return true
}

// Release ends holder's lease, so that another server may take it at
// once; nothing happens when holder does not hold it.
func (l *Lease) Release(holder string) {
	if l.Holder == holder {
		*l = Lease{}
	}
}
