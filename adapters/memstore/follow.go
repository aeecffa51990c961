package memstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

var (
	_ follow.Target              = (*Store)(nil)
	_ flagadmin.ReadOnlyReporter = (*Store)(nil)
)

// followStates is the store's follow state (--follow) under its own
// lock, taken after the world's, never before.
type followStates struct {
	mu sync.Mutex
	st follow.State
}

// FollowState implements follow.StateReader.
func (s *Store) FollowState(ctx context.Context) (follow.State, error) {
	if err := ctx.Err(); err != nil {
		return follow.State{}, err
	}
	s.follow.mu.Lock()
	defer s.follow.mu.Unlock()
	return s.follow.st, nil
}

// ReadOnly implements flagadmin.ReadOnlyReporter: the store is a read-only
// copy while it follows an Unleash database.
func (s *Store) ReadOnly(ctx context.Context) (source string, readOnly bool, err error) {
	return follow.ReadOnly(ctx, s)
}

// AcquireFollowLease implements follow.Target.
func (s *Store) AcquireFollowLease(ctx context.Context, holder string, now, until time.Time) (follow.State, bool, error) {
	if err := ctx.Err(); err != nil {
		return follow.State{}, false, err
	}
	s.follow.mu.Lock()
	defer s.follow.mu.Unlock()
	held := acquireLease(&s.follow.st.Lease, holder, now, until)
	return s.follow.st, held, nil
}

// ReleaseFollowLease implements follow.Target.
func (s *Store) ReleaseFollowLease(ctx context.Context, holder string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.follow.mu.Lock()
	defer s.follow.mu.Unlock()
	s.follow.st.Lease.Release(holder)
	return nil
}

// LoadFollow implements follow.Target. The lease is checked
// before the load and again at its end (another holder may have taken it
// over while a long load ran): lost either time, nothing is written.
func (s *Store) LoadFollow(ctx context.Context, holder string, now time.Time, st follow.State, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.follow.mu.Lock()
	held, following := holdsLease(s.follow.st.Lease, holder, now), s.follow.st.Following()
	s.follow.mu.Unlock()
	switch {
	case !held:
		return follow.ErrLeaseLost
	case following:
		return conflict("the store already follows the Unleash database %s", s.follow.st.Source.URL)
	}
	return s.loadLocked(ctx, b, events, func() error {
		s.follow.mu.Lock()
		defer s.follow.mu.Unlock()
		if !namesHolder(s.follow.st.Lease, holder) {
			return follow.ErrLeaseLost
		}
		f := &s.follow.st
		f.Source, f.Position, f.Holes, f.SyncedAt = st.Source, st.Position, st.Holes, st.SyncedAt.UTC().Truncate(time.Millisecond)
		return nil
	})
}

// ApplyFollow implements follow.Target. Everything is checked
// before anything changes, so a refused batch leaves the store as it was.
func (s *Store) ApplyFollow(ctx context.Context, holder string, now time.Time, b *follow.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.follow.mu.Lock()
	defer s.follow.mu.Unlock()
	cur := &s.follow.st
	switch {
	case !holdsLease(cur.Lease, holder, now):
		return follow.ErrLeaseLost
	case !cur.Following():
		return conflict("the store follows no Unleash database")
	case b.Position < cur.Position:
		return conflict("position %d is below the current one (%d)", b.Position, cur.Position)
	case b.Holes < cur.Holes:
		return conflict("holes %d are fewer than the current count (%d)", b.Holes, cur.Holes)
	}
	last := max(cur.Position, s.w.nextEventID-1)
	for _, e := range b.Events {
		if e.ID <= last || e.ID > b.Position {
			return conflict("event id %d is not above %d and at most the position %d", e.ID, last, b.Position)
		}
		last = e.ID
	}
	if err := s.w.checkFollow(b); err != nil {
		return err
	}
	// The events keep their Unleash ids; each is prepared (its leaf hash
	// among others, which fails on data that is not JSON) before anything
	// changes.
	prepared := make([]preparedEvent, 0, len(b.Events))
	next := s.w.nextEventID
	for _, e := range b.Events {
		s.w.nextEventID = e.ID
		p, err := s.w.prepareEvents([]flagadmin.Event{e})
		s.w.nextEventID = next
		if err != nil {
			return fmt.Errorf("%w: %w", flagadmin.ErrConflict, err)
		}
		prepared = append(prepared, p...)
	}
	s.w.applyFollow(b)
	s.w.appendEvents(prepared)
	if b.Changes() {
		s.version++
	}
	cur.Position, cur.Holes = b.Position, b.Holes
	if !b.SyncedAt.IsZero() {
		cur.SyncedAt = b.SyncedAt.UTC().Truncate(time.Millisecond)
	}
	return nil
}

// after tells which keys exist once a follow batch is applied.
type after struct {
	w        *world
	b        *follow.Batch
	users    map[int64]bool // upserted (true) or deleted (false)
	groups   map[int64]bool
	projects map[string]bool
}

func newAfter(w *world, b *follow.Batch) *after {
	a := &after{w: w, b: b, users: map[int64]bool{}, groups: map[int64]bool{}, projects: map[string]bool{}}
	for _, id := range b.DeleteUsers {
		a.users[id] = false
	}
	for _, id := range b.DeleteGroups {
		a.groups[id] = false
	}
	for _, id := range b.DeleteProjects {
		a.projects[id] = false
	}
	for _, u := range b.Users {
		a.users[u.ID] = true
	}
	for _, g := range b.Groups {
		a.groups[g.ID] = true
	}
	for _, p := range b.Projects {
		a.projects[p.ID] = true
	}
	return a
}

func (a *after) user(id int64) bool {
	if v, ok := a.users[id]; ok || a.b.Full {
		return v
	}
	_, ok := a.w.users[id]
	return ok
}

func (a *after) group(id int64) bool {
	if v, ok := a.groups[id]; ok || a.b.Full {
		return v
	}
	_, ok := a.w.groups[id]
	return ok
}

func (a *after) project(id string) bool {
	if v, ok := a.projects[id]; ok || a.b.Full {
		return v
	}
	_, ok := a.w.projects[id]
	return ok
}

// checkFollow reports the first row of b that refers to a row that will
// not exist once b is applied, as ErrConflict.
func (w *world) checkFollow(b *follow.Batch) error {
	a := newAfter(w, b)
	for _, check := range []func() error{a.checkGroups, a.checkProjects, a.checkFeatures, a.checkTokens} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkGroups reports the first group of the batch with a user that will
// not exist.
func (a *after) checkGroups() error {
	for _, g := range a.b.Groups {
		for _, uid := range g.Users {
			if !a.user(uid) {
				return conflict("group %d: user %d does not exist", g.ID, uid)
			}
		}
	}
	return nil
}

// checkProjects reports the first project of the batch with a member, or
// a user who favorited it, that will not exist.
func (a *after) checkProjects() error {
	for _, p := range a.b.Projects {
		for _, m := range p.Members {
			if !a.member(m) {
				return conflict("project %q: member does not exist", p.ID)
			}
		}
		for _, uid := range p.FavoritedBy {
			if !a.user(uid) {
				return conflict("project %q: user %d does not exist", p.ID, uid)
			}
		}
	}
	return nil
}

// member reports whether the user or the group a project member names
// will exist.
func (a *after) member(m flagadmin.ProjectMembership) bool {
	return m.UserID != nil && a.user(*m.UserID) || m.GroupID != nil && a.group(*m.GroupID)
}

// checkFeatures reports the first feature of the batch whose project will
// not exist.
func (a *after) checkFeatures() error {
	for _, f := range a.b.Features {
		if !a.project(f.Project) {
			return conflict("feature %q: project %q does not exist", f.Name, f.Project)
		}
	}
	return nil
}

// checkTokens reports the first token of the batch whose user will not
// exist.
func (a *after) checkTokens() error {
	for _, t := range a.b.Tokens {
		if t.UserID != nil && !a.user(*t.UserID) {
			return conflict("token %q: user %d does not exist", t.Name, *t.UserID)
		}
	}
	return nil
}

// applyFollow stores a checked follow batch's rows (not its events):
// upserts first, then deletes with what refers to them.
func (w *world) applyFollow(b *follow.Batch) {
	if b.Full {
		w.users, w.groups, w.projects = map[int64]flagadmin.User{}, map[int64]*group{}, map[string]*project{}
		w.features, w.tokens = map[string]flagadmin.Feature{}, map[string]flagadmin.APIToken{}
	}
	w.applyAccounts(&flagadmin.Batch{Users: b.Users, Groups: b.Groups})
	w.applyProjects(&flagadmin.Batch{Projects: b.Projects})
	for _, f := range b.Features {
		w.features[f.Name] = cloneFeature(f)
	}
	for _, t := range b.Tokens {
		w.tokens[t.SecretHash] = cloneToken(t)
	}
	for _, h := range b.DeleteTokens {
		delete(w.tokens, h)
	}
	for _, name := range b.DeleteFeatures {
		delete(w.features, name)
	}
	for _, id := range b.DeleteProjects {
		delete(w.projects, id)
		for name, f := range w.features {
			if f.Project == id {
				delete(w.features, name)
			}
		}
	}
	for _, id := range b.DeleteGroups {
		delete(w.groups, id)
		for _, p := range w.projects {
			delete(p.groupRoles, id)
		}
	}
	for _, id := range b.DeleteUsers {
		w.removeUser(id)
	}
}

// removeUser removes a user with its tokens, group memberships, project
// roles and favorites.
func (w *world) removeUser(id int64) {
	delete(w.users, id)
	for hash, t := range w.tokens {
		if t.UserID != nil && *t.UserID == id {
			delete(w.tokens, hash)
		}
	}
	for _, g := range w.groups {
		delete(g.members, id)
	}
	for _, p := range w.projects {
		delete(p.userRoles, id)
		delete(p.favorites, id)
	}
}
