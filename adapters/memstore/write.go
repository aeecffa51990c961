package memstore

import (
	"context"
	"fmt"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Write implements flagadmin.Store. Everything is checked before anything
// is changed, so a failing batch leaves the store as it was.
func (s *Store) Write(ctx context.Context, b *flagadmin.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &s.w
	users, groups := map[int64]bool{}, map[int64]bool{}
	nextUser, nextGroup := int64(1), int64(1)
	for id := range w.users {
		nextUser = max(nextUser, id+1)
	}
	for id := range w.groups {
		nextGroup = max(nextGroup, id+1)
	}
	for _, u := range b.Users {
		nextUser = max(nextUser, u.ID+1)
	}
	for _, g := range b.Groups {
		nextGroup = max(nextGroup, g.ID+1)
	}
	for i := range b.Users {
		u := &b.Users[i]
		if u.ID == 0 {
			u.ID = nextUser
			nextUser++
		}
		if _, ok := w.users[u.ID]; ok || users[u.ID] {
			return conflict("user %d already exists", u.ID)
		}
		users[u.ID] = true
	}
	userExists := func(id int64) bool { _, ok := w.users[id]; return ok || users[id] }
	for i := range b.Groups {
		g := &b.Groups[i]
		if g.ID == 0 {
			g.ID = nextGroup
			nextGroup++
		}
		if _, ok := w.groups[g.ID]; ok || groups[g.ID] {
			return conflict("group %d already exists", g.ID)
		}
		groups[g.ID] = true
		for _, uid := range g.Users {
			if !userExists(uid) {
				return conflict("group %d: user %d does not exist", g.ID, uid)
			}
		}
	}
	groupExists := func(id int64) bool { _, ok := w.groups[id]; return ok || groups[id] }
	memberOK := func(m flagadmin.ProjectMembership) bool {
		return (m.UserID != nil && userExists(*m.UserID)) || (m.GroupID != nil && groupExists(*m.GroupID))
	}
	projects := map[string]bool{}
	for _, p := range b.Projects {
		if _, ok := w.projects[p.ID]; ok || projects[p.ID] {
			return conflict("project %q already exists", p.ID)
		}
		projects[p.ID] = true
		for _, m := range p.Members {
			if !memberOK(m) {
				return conflict("project %q: member does not exist", p.ID)
			}
		}
		for _, uid := range p.FavoritedBy {
			if !userExists(uid) {
				return conflict("project %q: user %d does not exist", p.ID, uid)
			}
		}
	}
	projectExists := func(id string) bool { _, ok := w.projects[id]; return ok || projects[id] }
	for _, gm := range b.GroupMembers {
		if !groupExists(gm.GroupID) || !userExists(gm.UserID) {
			return conflict("group member %d/%d does not resolve", gm.GroupID, gm.UserID)
		}
	}
	for _, pm := range b.ProjectMembers {
		if !projectExists(pm.ProjectID) || !memberOK(pm.ProjectMembership) {
			return conflict("project member of %q does not resolve", pm.ProjectID)
		}
	}
	features := map[string]bool{}
	for _, f := range b.Features {
		if _, ok := w.features[f.Name]; ok || features[f.Name] {
			return conflict("feature %q already exists", f.Name)
		}
		features[f.Name] = true
		if !projectExists(f.Project) {
			return conflict("feature %q: project %q does not exist", f.Name, f.Project)
		}
	}
	tokens := map[string]bool{}
	for _, t := range b.Tokens {
		if _, ok := w.tokens[t.SecretHash]; ok || tokens[t.SecretHash] {
			return conflict("token already exists")
		}
		tokens[t.SecretHash] = true
		if t.UserID != nil && !userExists(*t.UserID) {
			return conflict("token %q: user %d does not exist", t.Name, *t.UserID)
		}
	}
	if b.Then != nil {
		more, err := b.Then(b)
		if err != nil {
			return err
		}
		b.Events = append(b.Events, more...)
	}

	// Everything resolves: apply.
	for _, u := range b.Users {
		w.users[u.ID] = u
	}
	for _, g := range b.Groups {
		ng := &group{Group: flagadmin.Group{ID: g.ID, Name: g.Name}, members: map[int64]bool{}}
		for _, uid := range g.Users {
			ng.members[uid] = true
		}
		w.groups[g.ID] = ng
	}
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
	for _, gm := range b.GroupMembers {
		w.groups[gm.GroupID].members[gm.UserID] = true
	}
	for _, pm := range b.ProjectMembers {
		w.projects[pm.ProjectID].grant(pm.ProjectMembership)
	}
	for _, f := range b.Features {
		w.features[f.Name] = cloneFeature(f)
	}
	for _, t := range b.Tokens {
		w.tokens[t.SecretHash] = cloneToken(t)
	}
	for i, e := range b.Events {
		b.Events[i] = w.appendEvent(e)
	}
	s.version++
	return nil
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
