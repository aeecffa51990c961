package follow

import (
	"context"
	"errors"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Target is a store that can follow an Unleash database: the port a
// follower writes through. Implementations:
// adapters/memstore and adapters/bunstore (SQLite, PostgreSQL, MySQL);
// internal/storetest.RunFollow is their contract suite.
//
// Several servers may follow one source into one store: exactly one
// applies, the holder of the follow lease (a flagadmin.Lease: held until
// a time, renewed by its holder, taken over by another server once it
// ends), and the writes below are fenced by it.
type Target interface {
	StateReader

	// AcquireFollowLease gives holder the follow lease until until when
	// it is free for holder at now (Lease.Acquire: taken, or renewed by
	// its holder). It returns the state after the call and whether holder
	// now holds the lease. It works whether or not the store follows a
	// source yet.
	AcquireFollowLease(ctx context.Context, holder string, now, until time.Time) (State, bool, error)

	// ReleaseFollowLease ends holder's lease (Lease.Release), so that
	// another server may take over at once. Nothing happens when holder
	// does not hold it.
	ReleaseFollowLease(ctx context.Context, holder string) error

	// LoadFollow starts following: on a store that holds nothing (no
	// users, groups, projects, features, tokens or events) and follows
	// nothing, it writes the world b (as Store.Write does; b.Then must be
	// nil) and every batch of events that events passes to emit, each
	// keeping its id (positive, ascending), and records st (its Source,
	// Position, Holes and SyncedAt), all in one transaction: on any error
	// nothing is written. A store that holds anything or follows a source
	// is refused with flagadmin.ErrConflict. Fenced: holder must hold the
	// lease at now (Lease.HeldBy), else ErrLeaseLost and nothing is
	// written; at its end, the lease must still name holder (a long load
	// may outlast a lease whose renewals cannot run beside it).
	LoadFollow(ctx context.Context, holder string, now time.Time, st State, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error

	// ApplyFollow applies b in one transaction: its upserts and deletes,
	// its events, and the new position, holes and synced time. Fenced:
	// holder must hold the lease at now (Lease.HeldBy), else
	// ErrLeaseLost. flagadmin.ErrConflict, with nothing written, when the
	// store follows nothing, when b's position is below the current one
	// or an event id is not above it (or not ascending, or above b's
	// position), or when a row refers to one that is neither stored nor
	// upserted.
	ApplyFollow(ctx context.Context, holder string, now time.Time, b *Batch) error
}

// ErrLeaseLost is returned by the fenced writes of a Target when the
// caller does not hold the follow lease (any more): another server may be
// applying, so this one must stop.
var ErrLeaseLost = errors.New("follow lease not held")
