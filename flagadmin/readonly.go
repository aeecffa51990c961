package flagadmin

import (
	"context"
	"errors"
)

// A store may be a read-only copy of an Unleash database: a store that
// follows one (package flagadmin/follow) holds a copy that only its
// follower changes. This file holds the rule the Service keeps for such a
// store: its write operations are refused while the store is a copy.

// ErrReadOnly: the store follows an Unleash database:
// its data is a copy that only the follower changes, so a write operation
// is refused (HTTP 409 ReadOnlyError). Errors of this kind are
// *ReadOnlyError values that name the source.
var ErrReadOnly = errors.New("read-only copy of an Unleash database")

// ReadOnlyError is the error of kind ErrReadOnly.
type ReadOnlyError struct {
	// Source names the Unleash database the store follows (a URL without
	// credentials, as ReadOnlyReporter gives it).
	Source string
}

// Error says what is refused and where to make the change instead, as a
// clause a command can put after its own words ("cannot create the
// token: read-only: ...").
func (e *ReadOnlyError) Error() string {
	return "read-only: the store is a copy of the Unleash database " + e.Source +
		", kept by following it; make the change in Unleash"
}

// Is makes errors.Is(err, ErrReadOnly) true.
func (e *ReadOnlyError) Is(target error) bool { return target == ErrReadOnly }

// ReadOnlyReporter is an optional ability of a Store, found by NewService
// by type assertion (or given with WithReadOnly): the store says whether it
// is a read-only copy of an Unleash database now. follow.ReadOnly
// implements it for a store that follows one.
type ReadOnlyReporter interface {
	// ReadOnly reports whether the store is a read-only copy now and, when
	// it is, names the database it copies (a URL without credentials, for
	// messages).
	ReadOnly(ctx context.Context) (source string, readOnly bool, err error)
}

// WithReadOnly makes the service refuse its write operations with a
// *ReadOnlyError while r reports that the store is a read-only copy.
// NewService does this by itself when the store it is given implements
// ReadOnlyReporter; a program that gives it a store wrapped in caches
// passes the store as opened here.
func WithReadOnly(r ReadOnlyReporter) Option { return func(s *Service) { s.readOnly = r } }

// readOnlyGuard is the Service's store when it may be a read-only copy:
// its four write methods refuse while the store is one; reads pass
// through. Every write operation of the Service writes through one of
// them, after its authentication, permission and input checks, so a write
// to a read-only copy answers ErrReadOnly where it would have written.
type readOnlyGuard struct {
	Store
	readOnly ReadOnlyReporter
}

// check returns a *ReadOnlyError when the store is a read-only copy.
func (g readOnlyGuard) check(ctx context.Context) error {
	source, readOnly, err := g.readOnly.ReadOnly(ctx)
	if err != nil {
		return err
	}
	if readOnly {
		return &ReadOnlyError{Source: source}
	}
	return nil
}

func (g readOnlyGuard) Write(ctx context.Context, b *Batch) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.Write(ctx, b)
}

func (g readOnlyGuard) UpdateFeature(ctx context.Context, name string, fn func(*Feature) (*Event, error)) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.UpdateFeature(ctx, name, fn)
}

func (g readOnlyGuard) DeleteUser(ctx context.Context, id int64, fn func(User) (Event, error)) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.DeleteUser(ctx, id, fn)
}

func (g readOnlyGuard) DeleteToken(ctx context.Context, hash string, fn func(APIToken) (Event, error)) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.DeleteToken(ctx, hash, fn)
}

// CheckWritable returns a *ReadOnlyError when the service's store is a
// read-only copy of an Unleash database, nil when it may be written (or
// the store reports nothing of it): for commands that write a store other
// than through the service's operations (such as an import).
func (s *Service) CheckWritable(ctx context.Context) error {
	if s.readOnly == nil {
		return nil
	}
	return readOnlyGuard{readOnly: s.readOnly}.check(ctx)
}
