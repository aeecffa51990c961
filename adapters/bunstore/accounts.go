package bunstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Users implements flagadmin.Store.
func (s *Store) Users(ctx context.Context) ([]flagadmin.User, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var rows []userRow
	if err := s.rdb.NewSelect().Model(&rows).Order("id").Scan(ctx); err != nil {
		return nil, s.fail("users", err)
	}
	out := make([]flagadmin.User, len(rows))
	for i, r := range rows {
		out[i] = r.user()
	}
	return out, nil
}

// Tokens implements flagadmin.Store.
func (s *Store) Tokens(ctx context.Context) ([]flagadmin.APIToken, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var rows []tokenRow
	if err := s.rdb.NewSelect().Model(&rows).Order("created_at", "secret_hash").Scan(ctx); err != nil {
		return nil, s.fail("tokens", err)
	}
	out := make([]flagadmin.APIToken, len(rows))
	for i, r := range rows {
		out[i] = r.token()
	}
	return out, nil
}

// DeleteToken implements flagadmin.Store: the token row is locked from the
// read to the commit, so of concurrent deletes exactly one finds it.
func (s *Store) DeleteToken(ctx context.Context, hash string, fn func(flagadmin.APIToken) (flagadmin.Event, error)) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.inTx(ctx, "delete token", func(ctx context.Context, t *txn) (*changes, error) {
		var r tokenRow
		if err := s.forUpdate(t.NewSelect().Model(&r).Where("secret_hash = ?", hash)).Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil, &callbackError{flagadmin.ErrNotFound}
			}
			return nil, err
		}
		e, err := fn(r.token())
		if err != nil {
			return nil, &callbackError{err}
		}
		if _, err := t.NewDelete().Model((*tokenRow)(nil)).Where("secret_hash = ?", hash).Exec(ctx); err != nil {
			return nil, err
		}
		return &changes{events: []flagadmin.Event{e}}, nil
	})
}
