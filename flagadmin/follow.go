package flagadmin

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Following a live Unleash (docs/following-unleash.md): a store keeps a
// copy of an Unleash database's world and its event log, kept current by a follower
// (adapters/unleashimport.Follower) that reads Unleash and writes through
// the port below. This file holds what the rule needs from the domain: the
// follow state a store keeps, the batch a follower applies, the port
// (FollowTarget) and the read-only rule of a following store.

// ErrReadOnly: the store follows an Unleash database:
// its data is a copy that only the follower changes, so a write operation
// is refused (HTTP 409 ReadOnlyError). Errors of this kind are
// *ReadOnlyError values that name the source.
var ErrReadOnly = errors.New("read-only copy of an Unleash database")

// ReadOnlyError is the error of kind ErrReadOnly.
type ReadOnlyError struct {
	// Source names the Unleash database the store follows (a URL without
	// credentials, FollowSource.URL).
	Source string
}

// Error says what is refused and where to make the change instead, as a
// clause a command can put after its own words ("cannot create the
// token: read-only: ...").
func (e *ReadOnlyError) Error() string {
	return "read-only: the store is a copy of the Unleash database " + e.Source +
		", kept by following it; make the change in Unleash"
}

// Is makes errors.Is(err, ErrReadOnly) true.
func (e *ReadOnlyError) Is(target error) bool { return target == ErrReadOnly }

// FollowSource identifies the Unleash database a store follows: the
// PostgreSQL cluster (its system identifier) and the database in it. Two
// sources are the same database when both are equal, whatever the URL
// used to reach them.
type FollowSource struct {
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
func (s FollowSource) Same(o FollowSource) bool {
	return s.SystemID == o.SystemID && s.Database == o.Database
}

// IsZero reports whether s identifies nothing (a store that follows nothing).
func (s FollowSource) IsZero() bool { return s.SystemID == "" && s.Database == "" }

// FollowState is what a store records about the source it follows.
type FollowState struct {
	// Source is the followed database; zero when the store follows nothing.
	Source FollowSource
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
	Lease Lease
}

// Following reports whether the store follows an Unleash database.
func (s FollowState) Following() bool { return !s.Source.IsZero() }

// FollowBatch is one step of following, applied by a store at once
// (FollowTarget.ApplyFollow): changes of the world as Unleash made them
// (upserts and deletes by key), the events recorded meanwhile with their
// Unleash ids, and the new position.
//
// The lists of upserts hold whole rows: a project with all its members
// and favorites, a group with all its users, a feature with all its tags;
// the stored row becomes exactly the one given. The rows of the batch
// refer only to rows the store holds or the batch upserts (a feature's
// project, a member's user or group, a token's user).
type FollowBatch struct {
	// Full: the upserts are the whole world: the store removes every
	// user, group, project, feature and token not listed (the first batch
	// of a follower that does not know what the store holds). The Delete
	// lists are then empty.
	Full bool

	Users    []User
	Groups   []Group
	Projects []Project
	Features []Feature
	Tokens   []APIToken

	// Deletes by key: user ids, group ids, project ids, feature names,
	// token secret hashes. Removing a row removes what refers to it: a
	// user's tokens, group memberships, project roles and favorites; a
	// group's project roles; a project's features, roles and favorites.
	DeleteUsers    []int64
	DeleteGroups   []int64
	DeleteProjects []string
	DeleteFeatures []string
	DeleteTokens   []string

	// Events are recorded with the ids they have (Unleash's), in this
	// order: ids ascending, each above the state's position and at most
	// Position. They reach searches, exports, streams and webhooks as
	// events the store recorded itself do.
	Events []Event

	// Position is the new position (at least the current one); Holes the
	// new count of holes (at least the current one).
	Position, Holes int64
	// SyncedAt is the new FollowState.SyncedAt; zero keeps the current one.
	SyncedAt time.Time
}

// Changes reports whether the batch changes anything a read answers
// (rows or events), as opposed to the position and times only.
func (b *FollowBatch) Changes() bool {
	return b.Full || len(b.Users)+len(b.Groups)+len(b.Projects)+len(b.Features)+len(b.Tokens)+
		len(b.DeleteUsers)+len(b.DeleteGroups)+len(b.DeleteProjects)+len(b.DeleteFeatures)+len(b.DeleteTokens)+
		len(b.Events) > 0
}

// FollowStateReader reads a store's follow state.
type FollowStateReader interface {
	// FollowState returns the store's follow state; its Source is zero
	// when the store follows nothing.
	FollowState(ctx context.Context) (FollowState, error)
}

// FollowTarget is a store that can follow an Unleash database: the port a
// follower writes through. Implementations:
// adapters/memstore and adapters/bunstore (SQLite, PostgreSQL, MySQL);
// internal/storetest.RunFollow is their contract suite.
//
// Several servers may follow one source into one store: exactly one
// applies, the holder of the follow lease (a Lease: held until a time,
// renewed by its holder, taken over by another server once it ends), and
// the writes below are fenced by it.
type FollowTarget interface {
	FollowStateReader

	// AcquireFollowLease gives holder the follow lease until until when
	// it is free for holder at now (Lease.Acquire: taken, or renewed by
	// its holder). It returns the state after the call and whether holder
	// now holds the lease. It works whether or not the store follows a
	// source yet.
	AcquireFollowLease(ctx context.Context, holder string, now, until time.Time) (FollowState, bool, error)

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
	// is refused with ErrConflict. Fenced: holder must hold the lease at
	// now (Lease.HeldBy), else ErrFollowLeaseLost and nothing is written;
	// at its end, the lease must still name holder (a long load may
	// outlast a lease whose renewals cannot run beside it).
	LoadFollow(ctx context.Context, holder string, now time.Time, st FollowState, b *Batch, events func(emit func([]Event) error) error) error

	// ApplyFollow applies b in one transaction: its upserts and deletes,
	// its events, and the new position, holes and synced time. Fenced:
	// holder must hold the lease at now (Lease.HeldBy), else
	// ErrFollowLeaseLost. ErrConflict, with nothing written,
	// when the store follows nothing, when b's position is below the
	// current one or an event id is not above it (or not ascending, or
	// above b's position), or when a row refers to one that is neither
	// stored nor upserted.
	ApplyFollow(ctx context.Context, holder string, now time.Time, b *FollowBatch) error
}

// ErrFollowLeaseLost is returned by the fenced writes of a FollowTarget
// when the caller does not hold the follow lease (any more): another
// server may be applying, so this one must stop.
var ErrFollowLeaseLost = errors.New("follow lease not held")

// FollowStatus describes a follower for people and probes: /health,
// metrics and "flagadmin follow status".
type FollowStatus struct {
	// Source is the followed database's URL without credentials.
	Source string `json:"source"`
	// State is one of the FollowState* constants.
	State string `json:"state"`
	// Reason explains a paused or stopped state in one line ("" otherwise).
	Reason string `json:"reason,omitempty"`
	// Ready: the store holds the copy (the import is done).
	Ready bool `json:"ready"`
	// Applying: this server holds the lease and applies.
	Applying bool `json:"applying"`
	// Holder is the lease holder's id, "" when none.
	Holder string `json:"holder,omitempty"`
	// Position is the last settled event id (FollowState.Position).
	Position int64 `json:"position"`
	// Holes counts the ids up to Position never committed in the source.
	Holes int64 `json:"holes"`
	// LagEvents is how many event ids the source has committed past
	// Position that are not applied yet (holes among them included), as
	// of the last read; 0 when caught up.
	LagEvents int64 `json:"lagEvents"`
	// LagSeconds is how old the copy is: the time since it was last known
	// to equal the source (0 when it does as of the last read).
	LagSeconds float64 `json:"lagSeconds"`
	// WaitingFor is the event id delivery waits on: missing in the source
	// while a transaction that may still commit it is open (0 for none).
	WaitingFor int64 `json:"waitingFor,omitempty"`
	// Applied counts the events this server applied since it started.
	Applied int64 `json:"applied"`
	// Errors counts the failed reads and writes of this server's follower.
	Errors int64 `json:"errors"`
	// SyncedAt is FollowState.SyncedAt (null before the first).
	SyncedAt *time.Time `json:"syncedAt"`
	// Copied and CopyTotal are, while the first import runs, the events
	// it has copied so far and the events it copies (0 otherwise).
	Copied    int64 `json:"copied,omitempty"`
	CopyTotal int64 `json:"copyTotal,omitempty"`
}

// NotLoaded says in one line why the store does not hold the copy yet:
// what the first import does, or what keeps it from running (the last
// error). It is "" once the copy is loaded (Ready).
func (s FollowStatus) NotLoaded() string {
	switch {
	case s.Ready:
		return ""
	case s.State == FollowStateImporting && s.CopyTotal > 0 && s.Copied >= s.CopyTotal:
		return fmt.Sprintf("the import that starts following runs (all %d events copied; building the indexes and committing)", s.CopyTotal)
	case s.State == FollowStateImporting && s.CopyTotal > 0:
		return fmt.Sprintf("the import that starts following runs (%d of %d events copied)", s.Copied, s.CopyTotal)
	case s.State == FollowStateImporting:
		return "the import that starts following runs (reading users, projects, flags and tokens)"
	case s.State == FollowStatePaused:
		return "the import that starts following cannot run: " + s.Reason + "; it is tried again by itself"
	case s.State == FollowStateStopped:
		return "following stopped: " + s.Reason
	case s.State == FollowStateStandby:
		return "another server imports it"
	}
	return "following starts"
}

// The states of a FollowStatus.
const (
	// FollowStateStarting: nothing read yet.
	FollowStateStarting = "starting"
	// FollowStateImporting: the store is empty and the import runs.
	FollowStateImporting = "importing"
	// FollowStateFollowing: this server applies the source's changes.
	FollowStateFollowing = "following"
	// FollowStateStandby: another server holds the lease and applies;
	// this one serves the copy.
	FollowStateStandby = "standby"
	// FollowStatePaused: the source (or the store) cannot be reached;
	// serving goes on from the copy and following resumes by itself.
	FollowStatePaused = "paused"
	// FollowStateStopped: following stopped for good (the source lost
	// what flagadmin reads, or is another database); serving goes on.
	FollowStateStopped = "stopped"
)

// WithFollowState makes the service refuse its write operations with a
// *ReadOnlyError while r reports that the store follows an Unleash
// database. NewService does this by itself when the store it is given
// implements FollowStateReader; a program that gives it a store wrapped
// in caches passes the store as opened here.
func WithFollowState(r FollowStateReader) Option { return func(s *Service) { s.follow = r } }

// readOnlyGuard is the Service's store when it may follow: its four write
// methods refuse while the store follows a source; reads
// pass through. Every write operation of the Service writes through one of
// them, after its authentication, permission and input checks, so a write
// to a following store answers ErrReadOnly where it would have written.
type readOnlyGuard struct {
	Store
	follow FollowStateReader
}

// check returns a *ReadOnlyError when the store follows a source.
func (g readOnlyGuard) check(ctx context.Context) error {
	st, err := g.follow.FollowState(ctx)
	if err != nil {
		return err
	}
	if st.Following() {
		return &ReadOnlyError{Source: st.Source.URL}
	}
	return nil
}

func (g readOnlyGuard) Write(ctx context.Context, b *Batch) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.Write(ctx, b)
}

func (g readOnlyGuard) UpdateFeature(ctx context.Context, name string, fn func(*Feature) (*Event, error)) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.UpdateFeature(ctx, name, fn)
}

func (g readOnlyGuard) DeleteUser(ctx context.Context, id int64, fn func(User) (Event, error)) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.DeleteUser(ctx, id, fn)
}

func (g readOnlyGuard) DeleteToken(ctx context.Context, hash string, fn func(APIToken) (Event, error)) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.DeleteToken(ctx, hash, fn)
}

// CheckWritable returns a *ReadOnlyError when the service's store follows
// an Unleash database, nil when it may be written (or the service knows of
// no follow state): for commands that write a store other than through
// the service's operations (such as an import).
func (s *Service) CheckWritable(ctx context.Context) error {
	if s.follow == nil {
		return nil
	}
	return readOnlyGuard{follow: s.follow}.check(ctx)
}
