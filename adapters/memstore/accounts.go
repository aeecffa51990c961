package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Users implements flagadmin.Store.
func (s *Store) Users(ctx context.Context) ([]flagadmin.User, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]flagadmin.User, 0, len(s.w.users))
	for _, u := range s.w.users {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b flagadmin.User) int { return int(a.ID - b.ID) })
	return out, nil
}

// Tokens implements flagadmin.Store.
func (s *Store) Tokens(ctx context.Context) ([]flagadmin.APIToken, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]flagadmin.APIToken, 0, len(s.w.tokens))
	for _, t := range s.w.tokens {
		out = append(out, cloneToken(t))
	}
	slices.SortFunc(out, func(a, b flagadmin.APIToken) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.SecretHash, b.SecretHash)
	})
	return out, nil
}

// DeleteToken implements flagadmin.Store.
func (s *Store) DeleteToken(ctx context.Context, hash string, fn func(flagadmin.APIToken) (flagadmin.Event, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.w.tokens[hash]
	if !ok {
		return flagadmin.ErrNotFound
	}
	e, err := fn(cloneToken(t))
	if err != nil {
		return err
	}
	if _, err := s.w.appendEvent(e); err != nil {
		return err
	}
	delete(s.w.tokens, hash)
	s.version++
	return nil
}
