package bunstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Write implements flagadmin.Store in one transaction. The database checks
// the references (foreign keys) and uniqueness (primary keys): a violation
// is ErrConflict and nothing is stored.
//
// Users and groups with ID 0 get one more than the largest id in use, read
// inside the transaction. Such writes take turns within the process; two
// processes may still read the same largest id, and then the second to
// insert hits the primary key and its whole write runs again (bounded),
// this time seeing the first one's rows.
func (s *Store) Write(ctx context.Context, b *flagadmin.Batch) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	userIDs := make([]int64, len(b.Users))
	for i, u := range b.Users {
		userIDs[i] = u.ID
	}
	groupIDs := make([]int64, len(b.Groups))
	for i, g := range b.Groups {
		groupIDs[i] = g.ID
	}
	events := b.Events
	assignsIDs := slices.Contains(userIDs, 0) || slices.Contains(groupIDs, 0)
	if assignsIDs {
		s.idMu.Lock()
		defer s.idMu.Unlock()
	}
	restore := func() {
		for i := range b.Users {
			b.Users[i].ID = userIDs[i]
		}
		for i := range b.Groups {
			b.Groups[i].ID = groupIDs[i]
		}
		b.Events = events
	}
	err := s.inTx(ctx, "write", assignsIDs, func(ctx context.Context, tx bun.Tx) error {
		restore()
		b.Events = append([]flagadmin.Event(nil), events...)
		return s.write(ctx, tx, b)
	})
	if err != nil {
		restore()
		return err
	}
	return nil
}

func (s *Store) write(ctx context.Context, tx bun.Tx, b *flagadmin.Batch) error {
	if err := s.assignIDs(ctx, tx, b); err != nil {
		return err
	}
	if len(b.Users) > 0 {
		rows := make([]userRow, len(b.Users))
		for i, u := range b.Users {
			rows[i] = userRowOf(u)
		}
		if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
			return err
		}
	}
	if len(b.Groups) > 0 {
		rows := make([]groupRow, len(b.Groups))
		var members []groupMemberRow
		for i, g := range b.Groups {
			rows[i] = groupRow{ID: g.ID, Name: g.Name}
			seen := map[int64]bool{}
			for _, uid := range g.Users {
				if !seen[uid] {
					seen[uid] = true
					members = append(members, groupMemberRow{GroupID: g.ID, UserID: uid})
				}
			}
		}
		if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
			return err
		}
		if err := insertRows(ctx, tx, members); err != nil {
			return err
		}
	}
	if len(b.Projects) > 0 {
		rows := make([]projectRow, len(b.Projects))
		var members []projectMemberRow
		var favorites []favoriteRow
		for i, p := range b.Projects {
			rows[i] = projectRowOf(p)
			ms, err := memberRows(p.ID, p.Members)
			if err != nil {
				return err
			}
			members = append(members, ms...)
			seen := map[int64]bool{}
			for _, uid := range p.FavoritedBy {
				if !seen[uid] {
					seen[uid] = true
					favorites = append(favorites, favoriteRow{ProjectID: p.ID, UserID: uid})
				}
			}
		}
		if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
			return err
		}
		if err := insertRows(ctx, tx, members); err != nil {
			return err
		}
		if err := insertRows(ctx, tx, favorites); err != nil {
			return err
		}
	}
	for _, gm := range b.GroupMembers {
		// Adding an existing member changes nothing.
		if _, err := tx.NewDelete().Model((*groupMemberRow)(nil)).
			Where("group_id = ? AND user_id = ?", gm.GroupID, gm.UserID).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(&groupMemberRow{GroupID: gm.GroupID, UserID: gm.UserID}).Exec(ctx); err != nil {
			return err
		}
	}
	for _, pm := range b.ProjectMembers {
		rows, err := memberRows(pm.ProjectID, []flagadmin.ProjectMembership{pm.ProjectMembership})
		if err != nil {
			return err
		}
		// A new role replaces the one the user or group had.
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
	}
	if len(b.Features) > 0 {
		rows := make([]featureRow, len(b.Features))
		for i, f := range b.Features {
			r, err := featureRowOf(f)
			if err != nil {
				return err
			}
			rows[i] = r
		}
		if err := insertRows(ctx, tx, rows); err != nil {
			return err
		}
	}
	if len(b.Tokens) > 0 {
		rows := make([]tokenRow, len(b.Tokens))
		for i, t := range b.Tokens {
			rows[i] = tokenRowOf(t)
		}
		if err := insertRows(ctx, tx, rows); err != nil {
			return err
		}
	}
	if b.Then != nil {
		more, err := b.Then(b)
		if err != nil {
			return &callbackError{err}
		}
		b.Events = append(b.Events, more...)
	}
	if err := writeProjectStats(ctx, tx, b); err != nil {
		return err
	}
	if err := s.hook("write"); err != nil {
		return err
	}
	return s.insertEvents(ctx, tx, b.Events, true)
}

// assignIDs gives users and groups with ID 0 the next free ids: one more
// than the largest in the table or in the batch.
func (s *Store) assignIDs(ctx context.Context, tx bun.Tx, b *flagadmin.Batch) error {
	assign := func(table string, ids []*int64) error {
		next, need := int64(0), false
		for _, id := range ids {
			next = max(next, *id)
			need = need || *id == 0
		}
		if !need {
			return nil
		}
		var largest int64
		if err := tx.NewRaw("SELECT COALESCE(MAX(id), 0) FROM ?", bun.Ident(table)).Scan(ctx, &largest); err != nil {
			return err
		}
		next = max(next, largest) + 1
		for _, id := range ids {
			if *id == 0 {
				*id = next
				next++
			}
		}
		return nil
	}
	users := make([]*int64, len(b.Users))
	for i := range b.Users {
		users[i] = &b.Users[i].ID
	}
	groups := make([]*int64, len(b.Groups))
	for i := range b.Groups {
		groups[i] = &b.Groups[i].ID
	}
	if err := assign("users", users); err != nil {
		return err
	}
	return assign("user_groups", groups)
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

// insertRows inserts rows (a slice of models) with one statement; none is a no-op.
func insertRows[T any](ctx context.Context, db bun.IDB, rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := db.NewInsert().Model(&rows).Exec(ctx)
	return err
}
