package flagadmin

import (
	"context"
	"iter"
	"slices"
	"time"
)

// Store is the storage port the Service consumes. Implementations:
// adapters/memstore and adapters/bunstore; internal/storetest is the contract
// suite every implementation passes.
//
// Errors: a missing row is ErrNotFound, a duplicate key or broken reference
// is ErrConflict, unreachable or overloaded storage is ErrUnavailable (all
// matched with errors.Is); an error returned by a callback is returned as it
// is. No driver text is part of an error's kind.
//
// Every write that records an event does so in the same transaction as the
// change it describes: either both are stored or neither.
type Store interface {
	// LookupToken finds the token stored under hash (HashSecret of its
	// secret). For a TokenUser token it also returns the owning user, or nil
	// when that account no longer exists. ErrNotFound when no token matches.
	LookupToken(ctx context.Context, hash string) (APIToken, *User, error)

	// CountTokens returns how many stored tokens have type t.
	CountTokens(ctx context.Context, t TokenType) (int, error)

	// Project returns a project without its Members and FavoritedBy.
	Project(ctx context.Context, id string) (Project, error)
	// Feature returns a feature by its name, with its tags.
	Feature(ctx context.Context, name string) (Feature, error)
	// User returns a user or service account.
	User(ctx context.Context, id int64) (User, error)
	// Group returns a group with its users.
	Group(ctx context.Context, id int64) (Group, error)

	// ProjectAccess returns the user's roles in projects and the ids of
	// the private projects (ProjectAccess), read together: every request
	// of a caller who is not a root admin reads them.
	ProjectAccess(ctx context.Context, userID int64) (ProjectAccess, error)

	// SearchEvents returns the page of events q selects, ordered by createdAt
	// then id, both descending, with the count of all matches. The semantics
	// are those of EventQuery.Matches.
	SearchEvents(ctx context.Context, q EventQuery) (EventPage, error)

	// ExportEvents calls fn with every event that q matches (its filters and
	// visibility; Limit, Offset and After are ignored) whose id is greater
	// than afterID, id ascending. It reads them in batches of at most
	// ExportBatchSize, each batch by its own statement seeking past the last
	// id of the one before, so it never holds more than one batch, nor a
	// transaction or lock while fn runs between statements. Events written
	// meanwhile may be included when their id is greater than the last one
	// read. An error of fn, or ctx's, ends it and is returned as it is.
	//
	// Settled ids: ids become visible in id order. Once a reader has read
	// an event with id n, no event with a smaller id can appear later (a
	// transaction that held a smaller id has committed before n was
	// drawn, or rolled back, leaving a gap). So a reader that follows the
	// log by calling ExportEvents again with afterID = the last id it read
	// misses no event and reads none twice, however many writers commit
	// concurrently. (A SQL store whose ids are drawn before the commit
	// must serialize drawing and committing; see bunstore's event_order.)
	ExportEvents(ctx context.Context, q EventQuery, afterID int64, fn func(Event) error) error

	// ProjectStats returns the projects q selects with their figures, in any order.
	ProjectStats(ctx context.Context, q ProjectStatsQuery) ([]ProjectStats, error)

	// UpdateFeature loads the named feature (ErrNotFound if missing), locks it
	// against concurrent updates, and calls fn with it. If fn returns an error,
	// nothing is written and that error is returned. If fn returns a nil
	// event, nothing is written. Otherwise the feature's mutable fields (type,
	// stale, archivedAt, lastSeenAt, lifecycle; not tags) are saved as fn left
	// them and the event is appended, in one transaction. Concurrent calls for
	// one feature run one after another, each seeing the previous one's write.
	UpdateFeature(ctx context.Context, name string, fn func(*Feature) (*Event, error)) error

	// DeleteUser loads the user (ErrNotFound if missing), locks it and calls
	// fn with it. If fn returns an error, nothing is written and that error is
	// returned. Otherwise, in one transaction, the user, its tokens, project
	// and group memberships and favorites are removed and the event fn
	// returned is appended. Of concurrent calls for one id, exactly one
	// deletes; the others find no user (ErrNotFound).
	DeleteUser(ctx context.Context, id int64, fn func(User) (Event, error)) error

	// Write stores everything in b in one transaction: all of it or, on any
	// error, none of it.
	//
	// Ids: a user or group with a non-zero ID keeps it. One with ID 0 gets
	// an id the store assigns: unused, and larger than every id of its kind
	// the store has held or assigned before (ids in b included), so ids
	// assigned one after another increase. Then, if b.Then is set, it is
	// called inside the transaction, with the assigned ids in place, and
	// the events it returns are added after b.Events. Events get increasing
	// ids in order.
	//
	// On success the ids are written back into b (Users, Groups, Events,
	// with Then's events appended). On failure b is left exactly as it was.
	Write(ctx context.Context, b *Batch) error

	// Ping reports whether the storage is reachable (ErrUnavailable if not).
	Ping(ctx context.Context) error

	// Users returns every user and service account, id ascending.
	Users(ctx context.Context) ([]User, error)
	// Tokens returns every stored token, created first (then by hash).
	Tokens(ctx context.Context) ([]APIToken, error)
	// DeleteToken loads the token stored under hash (ErrNotFound if
	// missing), locks it and calls fn with it. If fn returns an error,
	// nothing is written and that error is returned. Otherwise the token
	// is removed and the event fn returned is appended, in one
	// transaction. Of concurrent calls for one hash, exactly one deletes.
	DeleteToken(ctx context.Context, hash string, fn func(APIToken) (Event, error)) error
}

// currentReadsKey marks a context under which reads must be current
// (WithCurrentReads).
type currentReadsKey struct{}

// WithCurrentReads returns a context under which every read of a Store
// reflects every write committed before the read began, by any process
// sharing the storage. A Store that may answer a read from an earlier
// reading (a wrapper that keeps results between calls) reads the storage
// under such a context; a Store that always reads the storage does so
// anyway. A live stream re-checks its token this way, so that a deleted
// account or an expired token ends it within the re-check interval.
func WithCurrentReads(ctx context.Context) context.Context {
	return context.WithValue(ctx, currentReadsKey{}, true)
}

// CurrentReads reports whether reads under ctx must be current
// (WithCurrentReads).
func CurrentReads(ctx context.Context) bool {
	current, _ := ctx.Value(currentReadsKey{}).(bool)
	return current
}

// Batch is a set of rows a Store writes at once (Store.Write), in this
// order: users, groups, projects (with members and favorites), group
// members, project members, features (with tags), tokens, events.
type Batch struct {
	Users          []User
	Groups         []Group
	Projects       []Project
	GroupMembers   []GroupMember
	ProjectMembers []ProjectMember
	Features       []Feature
	Tokens         []APIToken
	Events         []Event
	// Then, when set, builds events that need the ids assigned to Users and
	// Groups; it runs inside the write's transaction, and an error from it
	// aborts the write. It may also complete b.Tokens with those ids (a
	// token's UserID): tokens are written after it runs.
	Then func(b *Batch) ([]Event, error)
}

// Clone returns a copy of b whose Users, Groups, Tokens and Events are
// copies too: a store assigns ids in the clone and gives it to Then, and
// on success replaces the caller's batch with it, so a failed Write leaves
// the caller's batch unchanged.
func (b *Batch) Clone() *Batch {
	c := *b
	c.Users = slices.Clone(b.Users)
	c.Groups = slices.Clone(b.Groups)
	c.Tokens = slices.Clone(b.Tokens)
	c.Events = slices.Clone(b.Events)
	return &c
}

// GroupMember adds a user to an existing group.
type GroupMember struct {
	GroupID int64
	UserID  int64
}

// ProjectMember grants a role in an existing project.
type ProjectMember struct {
	ProjectID string
	ProjectMembership
}

// ProjectStatsQuery selects the projects of the project list.
type ProjectStatsQuery struct {
	// Archived selects archived projects when true, active ones when false.
	Archived bool
	// FavoritesOf is the user whose favorite markers to report; nil for none.
	FavoritesOf *int64
	// PotentiallyStaleBefore: a non-archived, non-stale feature whose type is
	// a key and whose createdAt is before the value is potentially stale
	// (see Standing). The Service sets it with PotentiallyStaleCutoffs.
	PotentiallyStaleBefore map[FeatureType]time.Time
}

// FeatureStanding is how a feature counts in its project's figures
// (ProjectStats: its health and feature count).
type FeatureStanding int

// The standings of a feature. Each counted feature has exactly one of
// Fresh, Stale and PotentiallyStale: stale wins over potentially stale.
const (
	// NotCounted: an archived feature is in none of the counts (its
	// lastSeenAt still makes the project's LastReportedFlagUsage).
	NotCounted FeatureStanding = iota
	// Fresh: counted, neither stale nor potentially stale.
	Fresh
	// Stale: counted and marked stale.
	Stale
	// PotentiallyStale: counted, not stale, of a type with a cut-off and
	// created before it.
	PotentiallyStale
)

// Standing returns how f counts in its project's figures under q's
// cut-offs. It is the one statement of the rule: memstore applies it as
// it is; a SQL store that counts in its queries (bunstore's project_stats)
// writes the same rule in SQL, and takes its only parameters, the cut-offs
// (from FeatureType.Lifetime through PotentiallyStaleCutoffs), from q.
func (q ProjectStatsQuery) Standing(f Feature) FeatureStanding {
	switch cut, ok := q.PotentiallyStaleBefore[f.Type]; {
	case f.ArchivedAt != nil:
		return NotCounted
	case f.Stale:
		return Stale
	case ok && f.CreatedAt.Before(cut):
		return PotentiallyStale
	default:
		return Fresh
	}
}

// InCleanup reports whether f counts in its project's CleanupCount: its
// lifecycle stage is completed (archived or not; an archived feature's
// stage is normally archived), as Unleash counts the flags its project
// list shows as "in cleanup" (a flag's latest lifecycle stage). It is the
// one statement of the rule: memstore applies it as it is, a SQL store
// writes it in its query.
func InCleanup(f Feature) bool { return f.Lifecycle.Stage == StageCompleted }

// CountedMembers returns the users a project's MemberCount counts
// (ProjectStats), ascending: each user holding a role in the
// project directly (a membership's UserID), and each user of a group
// holding one (a membership's GroupID, its users from groupUsers), once,
// whatever the role and however many ways the user holds one. A group with
// no users adds none. It is the one statement of the rule: memstore applies
// it as it is; a SQL store that counts in its queries (bunstore's
// project_stats.members) writes the same rule in SQL, and the contract
// suite holds every store's MemberCount to this function.
func CountedMembers(members []ProjectMembership, groupUsers func(groupID int64) iter.Seq[int64]) []int64 {
	var out []int64
	for _, m := range members {
		if m.UserID != nil {
			out = append(out, *m.UserID)
		}
		if m.GroupID != nil {
			for u := range groupUsers(*m.GroupID) {
				out = append(out, u)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ProjectStats is a project with the figures the project list derives from.
type ProjectStats struct {
	// Project is the project without Members and FavoritedBy.
	Project Project
	// FeatureCount counts the project's features not NotCounted (Standing).
	FeatureCount int
	// StaleCount counts its Stale features.
	StaleCount int
	// PotentiallyStaleCount counts its PotentiallyStale features.
	PotentiallyStaleCount int
	// MemberCount counts the project's CountedMembers: distinct users with a
	// role, directly or through a group.
	MemberCount int
	// LastUpdatedAt is the newest createdAt of the project's events.
	LastUpdatedAt *time.Time
	// LastReportedFlagUsage is the newest lastSeenAt of the project's features.
	LastReportedFlagUsage *time.Time
	// CleanupCount counts the project's features InCleanup.
	CleanupCount int
	// Favorite: FavoritesOf favorited the project.
	Favorite bool
	// Owners are the users and groups holding the Owner role (UserOwner,
	// GroupOwner), in any order: the Service orders them and stands the
	// system owner in for none.
	Owners []ProjectOwner
}

// VersionedStore is a Store that tells cheaply whether anything it holds
// has changed (Version), and when the project figures it holds next change
// by the passing of time alone (OldestFreshFeatures): with both, a reader
// can tell whether a result it read earlier still holds
// (adapters/storecache is a Store over a VersionedStore that does so).
type VersionedStore interface {
	Store

	// Version returns the storage's change counter: every committed write
	// (Write, UpdateFeature, DeleteUser, and any bulk load) raises it, as
	// seen by every process sharing the storage, and nothing lowers it. Two
	// equal readings mean nothing was written in between.
	Version(ctx context.Context) (int64, error)

	// OldestFreshFeatures returns, for each type in notBefore, the earliest
	// createdAt of the features of that type that are Fresh under the
	// cut-off notBefore[type] (ProjectStatsQuery.Standing: non-archived,
	// non-stale, created at or after it), the first of them to become
	// PotentiallyStale as the cut-off moves on; a type with no such
	// feature is absent from the result.
	OldestFreshFeatures(ctx context.Context, notBefore map[FeatureType]time.Time) (map[FeatureType]time.Time, error)
}
