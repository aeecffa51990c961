package metrics

import (
	"context"
	"errors"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Storage error kinds, the values of the kind label of
// flagadmin_storage_errors_total.
const (
	kindUnavailable = "unavailable" // flagadmin.ErrUnavailable: unreachable, overloaded, read-only, full
	kindTimeout     = "timeout"     // the operation's deadline passed
	kindCanceled    = "canceled"    // the caller went away
	kindConflict    = "conflict"    // flagadmin.ErrConflict: a duplicate or a broken reference
	kindOther       = "other"       // anything else
)

var errorKinds = []string{kindUnavailable, kindTimeout, kindCanceled, kindConflict, kindOther}

// errorKind returns the kind label of a failed storage operation, or ""
// for an error that is an answer rather than a failure (not found,
// validation, access: the domain's verdicts, including those its
// callbacks return).
func errorKind(err error) string {
	switch {
	case err == nil,
		errors.Is(err, flagadmin.ErrNotFound),
		errors.Is(err, flagadmin.ErrValidation),
		errors.Is(err, flagadmin.ErrNoAccess),
		errors.Is(err, flagadmin.ErrAuthenticationRequired):
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return kindTimeout
	case errors.Is(err, context.Canceled):
		return kindCanceled
	case errors.Is(err, flagadmin.ErrUnavailable):
		return kindUnavailable
	case errors.Is(err, flagadmin.ErrConflict):
		return kindConflict
	}
	return kindOther
}

// Store is a flagadmin.VersionedStore that counts the failures of the
// store it wraps by kind (flagadmin_storage_errors_total) and the events
// its writes record by type (flagadmin_events_recorded_total). Everything
// else is the wrapped store's.
type Store struct {
	flagadmin.VersionedStore
	m *Metrics
}

var _ flagadmin.VersionedStore = (*Store)(nil)

// Store returns store wrapped to count its errors and the events it records.
func (m *Metrics) Store(store flagadmin.VersionedStore) *Store {
	return &Store{VersionedStore: store, m: m}
}

// observe counts err by kind and returns it.
func (s *Store) observe(err error) error {
	if k := errorKind(err); k != "" {
		s.m.storeErrs.WithLabelValues(k).Inc()
	}
	return err
}

// recorded counts events by type.
func (s *Store) recorded(events ...flagadmin.Event) {
	for _, e := range events {
		t := e.Type
		if !flagadmin.IsKnownEventType(t) {
			t = kindOther
		}
		s.m.events.WithLabelValues(t).Inc()
	}
}

// LookupToken is the wrapped store's, counted.
func (s *Store) LookupToken(ctx context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	t, u, err := s.VersionedStore.LookupToken(ctx, hash)
	return t, u, s.observe(err)
}

// CountTokens is the wrapped store's, counted.
func (s *Store) CountTokens(ctx context.Context, t flagadmin.TokenType) (int, error) {
	n, err := s.VersionedStore.CountTokens(ctx, t)
	return n, s.observe(err)
}

// Project is the wrapped store's, counted.
func (s *Store) Project(ctx context.Context, id string) (flagadmin.Project, error) {
	p, err := s.VersionedStore.Project(ctx, id)
	return p, s.observe(err)
}

// Feature is the wrapped store's, counted.
func (s *Store) Feature(ctx context.Context, name string) (flagadmin.Feature, error) {
	f, err := s.VersionedStore.Feature(ctx, name)
	return f, s.observe(err)
}

// User is the wrapped store's, counted.
func (s *Store) User(ctx context.Context, id int64) (flagadmin.User, error) {
	u, err := s.VersionedStore.User(ctx, id)
	return u, s.observe(err)
}

// Group is the wrapped store's, counted.
func (s *Store) Group(ctx context.Context, id int64) (flagadmin.Group, error) {
	g, err := s.VersionedStore.Group(ctx, id)
	return g, s.observe(err)
}

// ProjectAccess is the wrapped store's, counted.
func (s *Store) ProjectAccess(ctx context.Context, userID int64) (flagadmin.ProjectAccess, error) {
	a, err := s.VersionedStore.ProjectAccess(ctx, userID)
	return a, s.observe(err)
}

// SearchEvents is the wrapped store's, counted.
func (s *Store) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	p, err := s.VersionedStore.SearchEvents(ctx, q)
	return p, s.observe(err)
}

// ExportEvents is the wrapped store's, counted; an error of fn is the
// caller's, not counted.
func (s *Store) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	var fnErr error
	err := s.VersionedStore.ExportEvents(ctx, q, afterID, func(e flagadmin.Event) error {
		fnErr = fn(e)
		return fnErr
	})
	if err != nil && fnErr != nil && errors.Is(err, fnErr) {
		return err
	}
	return s.observe(err)
}

// ProjectStats is the wrapped store's, counted.
func (s *Store) ProjectStats(ctx context.Context, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	p, err := s.VersionedStore.ProjectStats(ctx, q)
	return p, s.observe(err)
}

// UpdateFeature is the wrapped store's, counted with the event it records.
func (s *Store) UpdateFeature(ctx context.Context, name string, fn func(*flagadmin.Feature) (*flagadmin.Event, error)) error {
	var ev *flagadmin.Event
	err := s.VersionedStore.UpdateFeature(ctx, name, func(f *flagadmin.Feature) (*flagadmin.Event, error) {
		e, err := fn(f)
		ev = e
		return e, err
	})
	if err == nil && ev != nil {
		s.recorded(*ev)
	}
	return s.observe(err)
}

// DeleteUser is the wrapped store's, counted with the event it records.
func (s *Store) DeleteUser(ctx context.Context, id int64, fn func(flagadmin.User) (flagadmin.Event, error)) error {
	var ev flagadmin.Event
	err := s.VersionedStore.DeleteUser(ctx, id, func(u flagadmin.User) (flagadmin.Event, error) {
		e, err := fn(u)
		ev = e
		return e, err
	})
	if err == nil {
		s.recorded(ev)
	}
	return s.observe(err)
}

// Write is the wrapped store's, counted with the events it records.
func (s *Store) Write(ctx context.Context, b *flagadmin.Batch) error {
	err := s.VersionedStore.Write(ctx, b)
	if err == nil {
		s.recorded(b.Events...)
	}
	return s.observe(err)
}

// Ping is the wrapped store's, counted.
func (s *Store) Ping(ctx context.Context) error {
	return s.observe(s.VersionedStore.Ping(ctx))
}

// Version is the wrapped store's, counted.
func (s *Store) Version(ctx context.Context) (int64, error) {
	v, err := s.VersionedStore.Version(ctx)
	return v, s.observe(err)
}

// Users is the wrapped store's, counted.
func (s *Store) Users(ctx context.Context) ([]flagadmin.User, error) {
	u, err := s.VersionedStore.Users(ctx)
	return u, s.observe(err)
}

// Tokens is the wrapped store's, counted.
func (s *Store) Tokens(ctx context.Context) ([]flagadmin.APIToken, error) {
	t, err := s.VersionedStore.Tokens(ctx)
	return t, s.observe(err)
}

// DeleteToken is the wrapped store's, counted with the event it records.
func (s *Store) DeleteToken(ctx context.Context, hash string, fn func(flagadmin.APIToken) (flagadmin.Event, error)) error {
	var ev flagadmin.Event
	err := s.VersionedStore.DeleteToken(ctx, hash, func(t flagadmin.APIToken) (flagadmin.Event, error) {
		e, err := fn(t)
		ev = e
		return e, err
	})
	if err == nil {
		s.recorded(ev)
	}
	return s.observe(err)
}
