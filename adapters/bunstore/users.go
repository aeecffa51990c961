package bunstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// LookupToken implements flagadmin.Store.
func (s *Store) LookupToken(ctx context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var t tokenRow
	if err := s.rdb.NewSelect().Model(&t).Where("secret_hash = ?", hash).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return flagadmin.APIToken{}, nil, flagadmin.ErrNotFound
		}
		return flagadmin.APIToken{}, nil, s.fail("lookup token", err)
	}
	if t.UserID == nil {
		return t.token(), nil, nil
	}
	u, err := s.User(ctx, *t.UserID)
	switch {
	case errors.Is(err, flagadmin.ErrNotFound):
		return t.token(), nil, nil
	case err != nil:
		return flagadmin.APIToken{}, nil, err
	}
	return t.token(), &u, nil
}

// CountTokens implements flagadmin.Store.
func (s *Store) CountTokens(ctx context.Context, t flagadmin.TokenType) (int, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	n, err := s.rdb.NewSelect().Model((*tokenRow)(nil)).Where("type = ?", string(t)).Count(ctx)
	if err != nil {
		return 0, s.fail("count tokens", err)
	}
	return int(n), nil
}

// User implements flagadmin.Store.
func (s *Store) User(ctx context.Context, id int64) (flagadmin.User, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var r userRow
	if err := s.rdb.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return flagadmin.User{}, flagadmin.ErrNotFound
		}
		return flagadmin.User{}, s.fail("user", err)
	}
	return r.user(), nil
}

// Group implements flagadmin.Store. Users are in ascending id order.
func (s *Store) Group(ctx context.Context, id int64) (flagadmin.Group, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var g flagadmin.Group
	err := s.inReadTx(ctx, "group", func(ctx context.Context, tx bun.Tx) error {
		var r groupRow
		if err := tx.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return &callbackError{flagadmin.ErrNotFound}
			}
			return err
		}
		g = flagadmin.Group{ID: r.ID, Name: r.Name}
		return tx.NewSelect().Model((*groupMemberRow)(nil)).Column("user_id").
			Where("group_id = ?", id).Order("user_id").Scan(ctx, &g.Users)
	})
	if err != nil {
		return flagadmin.Group{}, err
	}
	if len(g.Users) == 0 {
		g.Users = nil
	}
	return g, nil
}

// DeleteUser implements flagadmin.Store: the user row is locked from the
// read to the commit, so of concurrent deletes of one id exactly one finds
// the user; the others find it gone (ErrNotFound).
func (s *Store) DeleteUser(ctx context.Context, id int64, fn func(flagadmin.User) (flagadmin.Event, error)) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.inTx(ctx, "delete user", func(ctx context.Context, t *txn) (*changes, error) {
		var r userRow
		if err := s.forUpdate(t.NewSelect().Model(&r).Where("id = ?", id)).Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil, &callbackError{flagadmin.ErrNotFound}
			}
			return nil, err
		}
		e, err := fn(r.user())
		if err != nil {
			return nil, &callbackError{err}
		}
		// The projects whose members the deletion changes: those where the
		// user holds a role, directly or through a group.
		var projects []string
		err = t.NewRaw(`SELECT project_id FROM project_members WHERE user_id = ?
			UNION
			SELECT pm.project_id FROM project_members pm JOIN group_members gm ON gm.group_id = pm.group_id WHERE gm.user_id = ?`,
			id, id).Scan(ctx, &projects)
		if err != nil {
			return nil, err
		}
		for _, m := range []any{(*tokenRow)(nil), (*projectMemberRow)(nil), (*groupMemberRow)(nil), (*favoriteRow)(nil)} {
			if _, err := t.NewDelete().Model(m).Where("user_id = ?", id).Exec(ctx); err != nil {
				return nil, err
			}
		}
		if _, err := t.NewDelete().Model((*userRow)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
			return nil, err
		}
		return &changes{events: []flagadmin.Event{e}, memberProjects: projects}, nil
	})
}
