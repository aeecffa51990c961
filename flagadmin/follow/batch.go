package follow

import (
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Batch is one step of following, applied by a store at once
// (Target.ApplyFollow): changes of the world as Unleash made them
// (upserts and deletes by key), the events recorded meanwhile with their
// Unleash ids, and the new position.
//
// The lists of upserts hold whole rows: a project with all its members
// and favorites, a group with all its users, a feature with all its tags;
// the stored row becomes exactly the one given. The rows of the batch
// refer only to rows the store holds or the batch upserts (a feature's
// project, a member's user or group, a token's user).
type Batch struct {
	// Full: the upserts are the whole world: the store removes every
	// user, group, project, feature and token not listed (the first batch
	// of a follower that does not know what the store holds). The Delete
	// lists are then empty.
	Full bool

	Users    []flagadmin.User
	Groups   []flagadmin.Group
	Projects []flagadmin.Project
	Features []flagadmin.Feature
	Tokens   []flagadmin.APIToken

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
	Events []flagadmin.Event

	// Position is the new position (at least the current one); Holes the
	// new count of holes (at least the current one).
	Position, Holes int64
	// SyncedAt is the new State.SyncedAt; zero keeps the current one.
	SyncedAt time.Time
}

// Changes reports whether the batch changes anything a read answers
// (rows or events), as opposed to the position and times only.
func (b *Batch) Changes() bool {
	return b.Full || len(b.Users)+len(b.Groups)+len(b.Projects)+len(b.Features)+len(b.Tokens)+
		len(b.DeleteUsers)+len(b.DeleteGroups)+len(b.DeleteProjects)+len(b.DeleteFeatures)+len(b.DeleteTokens)+
		len(b.Events) > 0
}
