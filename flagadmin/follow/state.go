package follow

import (
	"context"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Source identifies the Unleash database a store follows: the PostgreSQL
// cluster (its system identifier) and the database in it. Two sources are
// the same database when both are equal, whatever the URL used to reach
// them.
type Source struct {
	// SystemID is PostgreSQL's system identifier of the cluster
	// (pg_control_system()), in decimal.
	SystemID string
	// Database is the name of the database in the cluster.
	Database string
	// URL is how the source was reached when it was recorded, without
	// credentials: for messages only.
	URL string
}

// Same reports whether s and o identify the same database.
func (s Source) Same(o Source) bool {
	return s.SystemID == o.SystemID && s.Database == o.Database
}

// IsZero reports whether s identifies nothing (a store that follows nothing).
func (s Source) IsZero() bool { return s.SystemID == "" && s.Database == "" }

// State is what a store records about the source it follows.
type State struct {
	// Source is the followed database; zero when the store follows nothing.
	Source Source
	// Position is the id of the last Unleash event settled: every event
	// id up to it is either stored or known never to have been committed
	// (a hole). Following resumes after it.
	Position int64
	// Holes counts the ids up to Position that were never committed in
	// the source (rolled-back transactions leave them).
	Holes int64
	// SyncedAt is when the copy was last known to equal the source (the
	// start of the follower's last read that left nothing behind), in the
	// follower's clock; zero before the first.
	SyncedAt time.Time
	// Lease is the follow lease: its holder is the server that applies.
	Lease flagadmin.Lease
}

// Following reports whether the store follows an Unleash database.
func (s State) Following() bool { return !s.Source.IsZero() }

// StateReader reads a store's follow state.
type StateReader interface {
	// FollowState returns the store's follow state; its Source is zero
	// when the store follows nothing.
	FollowState(ctx context.Context) (State, error)
}

// ReadOnly implements flagadmin.ReadOnlyReporter for a store whose follow
// state r reads: the store is a read-only copy while it follows an Unleash
// database, which its URL names. A store that follows calls it from its
// own ReadOnly method.
func ReadOnly(ctx context.Context, r StateReader) (source string, readOnly bool, err error) {
	st, err := r.FollowState(ctx)
	if err != nil {
		return "", false, err
	}
	return st.Source.URL, st.Following(), nil
}
