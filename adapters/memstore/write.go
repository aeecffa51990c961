package memstore

import (
	"context"
	"fmt"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Write implements flagadmin.Store. It works on a clone of b: ids are
// assigned and everything is checked before anything is changed, so a
// failing batch leaves the store, and b, as they were.
func (s *Store) Write(ctx context.Context, b *flagadmin.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	work := b.Clone()
	s.w.assignIDs(work)
	if work.Then != nil { // before the checks: it may complete the tokens
		more, err := work.Then(work)
		if err != nil {
			return err
		}
		work.Events = append(work.Events, more...)
	}
	if err := s.w.check(work); err != nil {
		return err
	}
	events, err := s.w.prepareEvents(work.Events)
	if err != nil {
		return err
	}
	s.w.apply(work, events)
	s.version++
	*b = *work
	return nil
}

// assignIDs gives the users and groups of b with ID 0 ids past every id
// the world has held and every id in b.
func (w *world) assignIDs(b *flagadmin.Batch) {
	nextUser, nextGroup := w.nextUserID, w.nextGroupID
	for _, u := range b.Users {
		nextUser = max(nextUser, u.ID+1)
	}
	for _, g := range b.Groups {
		nextGroup = max(nextGroup, g.ID+1)
	}
	for i := range b.Users {
		if b.Users[i].ID == 0 {
			b.Users[i].ID = nextUser
			nextUser++
		}
	}
	for i := range b.Groups {
		if b.Groups[i].ID == 0 {
			b.Groups[i].ID = nextGroup
			nextGroup++
		}
	}
}

// pending is what a batch adds to the world, so that its rows can refer to
// each other.
type pending struct {
	w                          *world
	users, groups              map[int64]bool
	projects, features, tokens map[string]bool
}

func (p *pending) userExists(id int64) bool {
	_, ok := p.w.users[id]
	return ok || p.users[id]
}

func (p *pending) groupExists(id int64) bool {
	_, ok := p.w.groups[id]
	return ok || p.groups[id]
}

func (p *pending) projectExists(id string) bool {
	_, ok := p.w.projects[id]
	return ok || p.projects[id]
}

func (p *pending) memberExists(m flagadmin.ProjectMembership) bool {
	return (m.UserID != nil && p.userExists(*m.UserID)) || (m.GroupID != nil && p.groupExists(*m.GroupID))
}

// check reports the first row of b that is already stored or refers to
// nothing, in the order Write stores them, as ErrConflict.
func (w *world) check(b *flagadmin.Batch) error {
	p := &pending{w: w, users: map[int64]bool{}, groups: map[int64]bool{},
		projects: map[string]bool{}, features: map[string]bool{}, tokens: map[string]bool{}}
	for _, check := range []func(*flagadmin.Batch) error{
		p.checkUsers, p.checkGroups, p.checkProjects, p.checkMembers, p.checkFeatures, p.checkTokens,
	} {
		if err := check(b); err != nil {
			return err
		}
	}
	return nil
}

func (p *pending) checkUsers(b *flagadmin.Batch) error {
	for _, u := range b.Users {
		if p.userExists(u.ID) {
			return conflict("user %d already exists", u.ID)
		}
		p.users[u.ID] = true
	}
	return nil
}

func (p *pending) checkGroups(b *flagadmin.Batch) error {
	for _, g := range b.Groups {
		if p.groupExists(g.ID) {
			return conflict("group %d already exists", g.ID)
		}
		p.groups[g.ID] = true
		for _, uid := range g.Users {
			if !p.userExists(uid) {
				return conflict("group %d: user %d does not exist", g.ID, uid)
			}
		}
	}
	return nil
}

func (p *pending) checkProjects(b *flagadmin.Batch) error {
	for _, pr := range b.Projects {
		if p.projectExists(pr.ID) {
			return conflict("project %q already exists", pr.ID)
		}
		p.projects[pr.ID] = true
		for _, m := range pr.Members {
			if !p.memberExists(m) {
				return conflict("project %q: member does not exist", pr.ID)
			}
		}
		for _, uid := range pr.FavoritedBy {
			if !p.userExists(uid) {
				return conflict("project %q: user %d does not exist", pr.ID, uid)
			}
		}
	}
	return nil
}

func (p *pending) checkMembers(b *flagadmin.Batch) error {
	for _, gm := range b.GroupMembers {
		if !p.groupExists(gm.GroupID) || !p.userExists(gm.UserID) {
			return conflict("group member %d/%d does not resolve", gm.GroupID, gm.UserID)
		}
	}
	for _, pm := range b.ProjectMembers {
		if !p.projectExists(pm.ProjectID) || !p.memberExists(pm.ProjectMembership) {
			return conflict("project member of %q does not resolve", pm.ProjectID)
		}
	}
	return nil
}

func (p *pending) checkFeatures(b *flagadmin.Batch) error {
	for _, f := range b.Features {
		if _, ok := p.w.features[f.Name]; ok || p.features[f.Name] {
			return conflict("feature %q already exists", f.Name)
		}
		p.features[f.Name] = true
		if !p.projectExists(f.Project) {
			return conflict("feature %q: project %q does not exist", f.Name, f.Project)
		}
	}
	return nil
}

func (p *pending) checkTokens(b *flagadmin.Batch) error {
	for _, t := range b.Tokens {
		if _, ok := p.w.tokens[t.SecretHash]; ok || p.tokens[t.SecretHash] {
			return conflict("token already exists")
		}
		p.tokens[t.SecretHash] = true
		if t.UserID != nil && !p.userExists(*t.UserID) {
			return conflict("token %q: user %d does not exist", t.Name, *t.UserID)
		}
	}
	return nil
}

// apply stores a checked batch with its prepared events (prepareEvents of
// b.Events), which replace b.Events.
func (w *world) apply(b *flagadmin.Batch, events []preparedEvent) {
	w.applyAccounts(b)
	w.applyProjects(b)
	for _, f := range b.Features {
		w.features[f.Name] = cloneFeature(f)
	}
	for _, t := range b.Tokens {
		w.tokens[t.SecretHash] = cloneToken(t)
	}
	if len(events) > 0 {
		b.Events = w.appendEvents(events)
	}
}

// applyAccounts stores users, groups and group members, and moves the id
// counters past them.
func (w *world) applyAccounts(b *flagadmin.Batch) {
	for _, u := range b.Users {
		w.users[u.ID] = u
		w.nextUserID = max(w.nextUserID, u.ID+1)
	}
	for _, g := range b.Groups {
		ng := &group{Group: flagadmin.Group{ID: g.ID, Name: g.Name}, members: map[int64]bool{}}
		for _, uid := range g.Users {
			ng.members[uid] = true
		}
		w.groups[g.ID] = ng
		w.nextGroupID = max(w.nextGroupID, g.ID+1)
	}
	for _, gm := range b.GroupMembers {
		w.groups[gm.GroupID].members[gm.UserID] = true
	}
}

// applyProjects stores projects, their members and favorites, and project
// members.
func (w *world) applyProjects(b *flagadmin.Batch) {
	for _, p := range b.Projects {
		np := &project{Project: p, userRoles: map[int64]flagadmin.ProjectRole{}, groupRoles: map[int64]flagadmin.ProjectRole{}, favorites: map[int64]bool{}}
		np.Members, np.FavoritedBy = nil, nil
		np.ArchivedAt = clonePtr(np.ArchivedAt)
		for _, m := range p.Members {
			np.grant(m)
		}
		for _, uid := range p.FavoritedBy {
			np.favorites[uid] = true
		}
		w.projects[p.ID] = np
	}
	for _, pm := range b.ProjectMembers {
		w.projects[pm.ProjectID].grant(pm.ProjectMembership)
	}
}

// grant gives a user or group a role, replacing an earlier one.
func (p *project) grant(m flagadmin.ProjectMembership) {
	if m.UserID != nil {
		p.userRoles[*m.UserID] = m.Role
	} else {
		p.groupRoles[*m.GroupID] = m.Role
	}
}

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{flagadmin.ErrConflict}, args...)...)
}
