package bunstore

import (
	"context"
	"fmt"
	"reflect"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Write implements flagadmin.Store in one transaction. The database checks
// the references (foreign keys) and uniqueness (primary keys): a violation
// is ErrConflict and nothing is stored. It also generates the ids of users
// and groups with ID 0 (ids.go). Each attempt of the transaction works on
// its own clone of b, which replaces b once committed.
func (s *Store) Write(ctx context.Context, b *flagadmin.Batch) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var done *flagadmin.Batch
	err := s.inTx(ctx, "write", func(ctx context.Context, tx bun.Tx) error {
		work := b.Clone()
		if err := s.write(ctx, tx, work); err != nil {
			return err
		}
		done = work
		return nil
	})
	if err != nil {
		return err
	}
	*b = *done
	return nil
}

func (s *Store) write(ctx context.Context, tx bun.Tx, b *flagadmin.Batch) error {
	if err := insertUsers(ctx, tx, b.Users); err != nil {
		return err
	}
	if err := insertGroups(ctx, tx, b.Groups); err != nil {
		return err
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
	if b.Then != nil {
		more, err := b.Then(b)
		if err != nil {
			return &callbackError{err}
		}
		b.Events = append(b.Events, more...)
	}
	// Tokens after Then, which may complete them with assigned ids.
	if len(b.Tokens) > 0 {
		rows := make([]tokenRow, len(b.Tokens))
		for i, t := range b.Tokens {
			rows[i] = tokenRowOf(t)
		}
		if err := insertRows(ctx, tx, rows); err != nil {
			return err
		}
	}
	if err := writeProjectStats(ctx, tx, b); err != nil {
		return err
	}
	if err := s.hook("write"); err != nil {
		return err
	}
	return s.insertEvents(ctx, tx, b.Events, true)
}

// insertUsers inserts users: those with an id in one statement, then each
// of the others, the database setting its id.
func insertUsers(ctx context.Context, tx bun.Tx, users []flagadmin.User) error {
	rows := make([]userRow, len(users))
	for i, u := range users {
		rows[i] = userRowOf(u)
	}
	if err := insertWithIDs(ctx, tx, rows, func(r userRow) int64 { return r.ID }); err != nil {
		return err
	}
	for i := range users {
		users[i].ID = rows[i].ID
	}
	return nil
}

// insertGroups inserts groups like insertUsers, then their members.
func insertGroups(ctx context.Context, tx bun.Tx, groups []flagadmin.Group) error {
	rows := make([]groupRow, len(groups))
	for i, g := range groups {
		rows[i] = groupRow{ID: g.ID, Name: g.Name}
	}
	if err := insertWithIDs(ctx, tx, rows, func(r groupRow) int64 { return r.ID }); err != nil {
		return err
	}
	var members []groupMemberRow
	for i := range groups {
		groups[i].ID = rows[i].ID
		seen := map[int64]bool{}
		for _, uid := range groups[i].Users {
			if !seen[uid] {
				seen[uid] = true
				members = append(members, groupMemberRow{GroupID: rows[i].ID, UserID: uid})
			}
		}
	}
	return insertRows(ctx, tx, members)
}

// insertWithIDs inserts rows of a table whose ids the database generates:
// first those with an id, in one statement (on PostgreSQL under
// lockExplicitIDs, then raising the sequence past them), then one by one
// the rows with id 0, whose generated id is set in rows.
func insertWithIDs[T any](ctx context.Context, tx bun.Tx, rows []T, id func(T) int64) error {
	var given []T
	var largest int64
	for _, r := range rows {
		if id(r) != 0 {
			given = append(given, r)
			largest = max(largest, id(r))
		}
	}
	if len(given) > 0 {
		pg := tx.Dialect().Name() == dialect.PG
		table := tx.Dialect().Tables().Get(reflect.TypeFor[T]()).Name
		if pg {
			if err := lockExplicitIDs(ctx, tx, table); err != nil {
				return err
			}
		}
		if err := insertRows(ctx, tx, given); err != nil {
			return err
		}
		if pg {
			if err := raiseSequence(ctx, tx, table, largest); err != nil {
				return err
			}
		}
	}
	for i := range rows {
		if id(rows[i]) == 0 {
			if _, err := tx.NewInsert().Model(&rows[i]).Exec(ctx); err != nil {
				return err
			}
		}
	}
	return nil
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
