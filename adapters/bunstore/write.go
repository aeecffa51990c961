package bunstore

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Write implements flagadmin.Store in one transaction. The database checks
// the references (foreign keys) and uniqueness (primary keys): a violation
// is ErrConflict and nothing is stored. It also generates the ids of users
// and groups with ID 0 (ids.go), and of events. Each attempt of the
// transaction works on its own clone of b, which replaces b once committed.
func (s *Store) Write(ctx context.Context, b *flagadmin.Batch) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var done *flagadmin.Batch
	err := s.inTx(ctx, "write", func(ctx context.Context, t *txn) (*changes, error) {
		work := b.Clone()
		ch, err := write(ctx, s.sqlDialect, t, work)
		if err != nil {
			return nil, err
		}
		done = work
		return ch, nil
	})
	if err != nil {
		return err
	}
	*b = *done
	return nil
}

// write stores the rows of b in tx and returns what changed, b's events
// with it (record sets their ids in b.Events).
func write(ctx context.Context, d sqlDialect, tx bun.IDB, b *flagadmin.Batch) (*changes, error) {
	if err := insertUsers(ctx, d, tx, b.Users); err != nil {
		return nil, err
	}
	if err := insertGroups(ctx, d, tx, b.Groups); err != nil {
		return nil, err
	}
	ch := &changes{}
	if err := insertProjects(ctx, tx, b.Projects, ch); err != nil {
		return nil, err
	}
	if err := addGroupMembers(ctx, tx, b.GroupMembers, ch); err != nil {
		return nil, err
	}
	if err := setProjectMembers(ctx, tx, b.ProjectMembers, ch); err != nil {
		return nil, err
	}
	if err := insertFeatures(ctx, tx, b.Features, ch); err != nil {
		return nil, err
	}
	if b.Then != nil {
		more, err := b.Then(b)
		if err != nil {
			return nil, &callbackError{err}
		}
		b.Events = append(b.Events, more...)
	}
	// Tokens after Then, which may complete them with assigned ids.
	tokens := make([]tokenRow, len(b.Tokens))
	for i, t := range b.Tokens {
		tokens[i] = tokenRowOf(t)
	}
	if err := insertRows(ctx, tx, tokens); err != nil {
		return nil, err
	}
	ch.events = b.Events
	return ch, nil
}

// insertUsers inserts users: those with an id in one statement, then each
// of the others, the database setting its id.
func insertUsers(ctx context.Context, d sqlDialect, tx bun.IDB, users []flagadmin.User) error {
	rows := make([]userRow, len(users))
	for i, u := range users {
		rows[i] = userRowOf(u)
	}
	if err := insertWithIDs(ctx, d, tx, rows, func(r userRow) int64 { return r.ID }); err != nil {
		return err
	}
	for i := range users {
		users[i].ID = rows[i].ID
	}
	return nil
}

// insertGroups inserts groups like insertUsers, then their members.
func insertGroups(ctx context.Context, d sqlDialect, tx bun.IDB, groups []flagadmin.Group) error {
	rows := make([]groupRow, len(groups))
	for i, g := range groups {
		rows[i] = groupRow{ID: g.ID, Name: g.Name}
	}
	if err := insertWithIDs(ctx, d, tx, rows, func(r groupRow) int64 { return r.ID }); err != nil {
		return err
	}
	var members []groupMemberRow
	for i := range groups {
		groups[i].ID = rows[i].ID
		for _, uid := range distinct(groups[i].Users) {
			members = append(members, groupMemberRow{GroupID: rows[i].ID, UserID: uid})
		}
	}
	return insertRows(ctx, tx, members)
}

// insertProjects inserts projects with their members and favorites.
func insertProjects(ctx context.Context, tx bun.IDB, projects []flagadmin.Project, ch *changes) error {
	rows := make([]projectRow, len(projects))
	var members []projectMemberRow
	var favorites []favoriteRow
	for i, p := range projects {
		rows[i] = projectRowOf(p)
		ms, err := memberRows(p.ID, p.Members)
		if err != nil {
			return err
		}
		members = append(members, ms...)
		for _, uid := range distinct(p.FavoritedBy) {
			favorites = append(favorites, favoriteRow{ProjectID: p.ID, UserID: uid})
		}
		ch.newProjects = append(ch.newProjects, p.ID)
	}
	for _, insert := range []func() error{
		func() error { return insertRows(ctx, tx, rows) },
		func() error { return insertRows(ctx, tx, members) },
		func() error { return insertRows(ctx, tx, favorites) },
	} {
		if err := insert(); err != nil {
			return err
		}
	}
	return nil
}

// addGroupMembers adds users to groups; adding an existing member changes
// nothing.
func addGroupMembers(ctx context.Context, tx bun.IDB, gms []flagadmin.GroupMember, ch *changes) error {
	for _, gm := range gms {
		if _, err := tx.NewDelete().Model((*groupMemberRow)(nil)).
			Where("group_id = ? AND user_id = ?", gm.GroupID, gm.UserID).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(&groupMemberRow{GroupID: gm.GroupID, UserID: gm.UserID}).Exec(ctx); err != nil {
			return err
		}
		ch.memberGroups = append(ch.memberGroups, gm.GroupID)
	}
	return nil
}

// setProjectMembers gives users and groups roles in projects: a new role
// replaces the one the user or group had.
func setProjectMembers(ctx context.Context, tx bun.IDB, pms []flagadmin.ProjectMember, ch *changes) error {
	for _, pm := range pms {
		rows, err := memberRows(pm.ProjectID, []flagadmin.ProjectMembership{pm.ProjectMembership})
		if err != nil {
			return err
		}
		del := tx.NewDelete().Model((*projectMemberRow)(nil)).Where("project_id = ?", pm.ProjectID)
		if rows[0].UserID != nil {
			del = del.Where("user_id = ?", *rows[0].UserID)
		} else {
			del = del.Where("group_id = ?", *rows[0].GroupID)
		}
		if _, err := del.Exec(ctx); err != nil {
			return err
		}
		if err := insertRows(ctx, tx, rows); err != nil {
			return err
		}
		ch.memberProjects = append(ch.memberProjects, pm.ProjectID)
	}
	return nil
}

// insertFeatures inserts features.
func insertFeatures(ctx context.Context, tx bun.IDB, features []flagadmin.Feature, ch *changes) error {
	rows := make([]featureRow, len(features))
	for i, f := range features {
		r, err := featureRowOf(f)
		if err != nil {
			return err
		}
		rows[i] = r
	}
	ch.addedFeatures = append(ch.addedFeatures, features...)
	return insertRows(ctx, tx, rows)
}

// distinct returns ids without repeats, in their order.
func distinct(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	var out []int64
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// memberRows are the rows granting project roles: one per user or group, the
// last role given winning. A membership naming neither a user nor a group
// refers to nothing: a conflict, like a missing user.
func memberRows(projectID string, ms []flagadmin.ProjectMembership) ([]projectMemberRow, error) {
	var rows []projectMemberRow
	at := map[string]int{}
	for _, m := range ms {
		r := projectMemberRow{ProjectID: projectID, Role: string(m.Role)}
		var key string
		switch {
		case m.UserID != nil:
			uid := *m.UserID
			r.UserID, key = &uid, fmt.Sprintf("u%d", uid)
		case m.GroupID != nil:
			gid := *m.GroupID
			r.GroupID, key = &gid, fmt.Sprintf("g%d", gid)
		default:
			return nil, &callbackError{fmt.Errorf("%w: project %q: a membership needs a user or a group", flagadmin.ErrConflict, projectID)}
		}
		if i, ok := at[key]; ok {
			rows[i].Role = r.Role
			continue
		}
		at[key] = len(rows)
		rows = append(rows, r)
	}
	return rows, nil
}
