package flagadmin

import (
	"context"
	"io"
	"time"
)

// Service performs the operations of the admin API for a Principal over a
// Store. It is safe for concurrent use.
type Service struct {
	// store is the store the operations use: opened behind a
	// readOnlyGuard when the store may be a read-only copy.
	store Store
	// readOnly reports whether the store is a read-only copy; nil when
	// the store reports nothing of it.
	readOnly ReadOnlyReporter
	clock    func() time.Time
	random   io.Reader
	// loader is the bulk path of seeds into an empty store (WithLoader);
	// nil when the store has none.
	loader Loader
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the source of the current time (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.clock = now } }

// WithRandom sets the source of token secrets (default crypto/rand).
func WithRandom(r io.Reader) Option { return func(s *Service) { s.random = r } }

// NewService returns a Service over store.
func NewService(store Store, opts ...Option) *Service {
	s := &Service{store: store, clock: time.Now, random: defaultRandom}
	if r, ok := store.(ReadOnlyReporter); ok {
		s.readOnly = r
	}
	if l, ok := store.(Loader); ok {
		s.loader = l
	}
	for _, o := range opts {
		o(s)
	}
	s.store = normalizingStore{Store: store}
	if s.readOnly != nil {
		s.store = readOnlyGuard{Store: s.store, readOnly: s.readOnly}
	}
	return s
}

// now returns the current time at store precision.
func (s *Service) now() time.Time { return Truncate(s.clock()) }

// Now returns the current time by the Service's clock (WithClock), at
// store precision: the time its operations give the events they write,
// for the operations of a package built over the Service (flagadmin/vlog).
func (s *Service) Now() time.Time { return s.now() }

// Ping reports whether the store is reachable.
func (s *Service) Ping(ctx context.Context) error { return s.store.Ping(ctx) }

// visibility returns the restriction a read by p carries: for a root admin
// none; otherwise project-less events and the private projects p is not a
// member of are hidden.
func (s *Service) visibility(ctx context.Context, p Principal) (hidden []string, restricted bool, err error) {
	if p.IsRootAdmin() {
		return nil, false, nil
	}
	access, err := s.store.ProjectAccess(ctx, p.User.ID)
	if err != nil {
		return nil, false, err
	}
	for _, id := range access.Private {
		if _, member := access.Roles[id]; !member {
			hidden = append(hidden, id)
		}
	}
	return hidden, true, nil
}
