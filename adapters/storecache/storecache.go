// Package storecache is a caching flagadmin.Store: it wraps a
// flagadmin.VersionedStore and answers repeated reads from memory.
//
// Two caches, each off unless configured (Options):
//
//   - The result cache keeps the results of the reads behind the event
//     searches and the project list (SearchEvents, ProjectStats,
//     ProjectAccess) in a bounded number of bytes, least
//     recently used first out. Its results are exact: each is used only
//     under the store's change counter (VersionedStore.Version) read before
//     it was computed, so no read is answered with a result older than the
//     last write committed, through any process sharing the storage, before
//     the read (or its request scope, see WithScope) began.
//   - The token cache keeps successful token lookups (LookupToken) for a
//     short time, so that requests repeating a token skip the store. A
//     lookup is reused only under the change counter it was made under, so
//     a token revoked or an account deleted through any process sharing the
//     storage is refused at once: the cache saves the lookup, not the
//     reading of the counter (which a request scope shares with the result
//     cache's reads).
//
// The result cache also keeps encoded answers for a transport (Bodies),
// such as the bytes of the project list, each valid under the version its
// reads were made under and in the time window of the project statistics
// it was built from.
//
// Writes pass through. The package starts no goroutine.
package storecache

import (
	"context"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// DefaultResultCacheSize is the result cache size, in bytes, of the
// flagadmin server (cmd/flagadmin) unless configured otherwise.
const DefaultResultCacheSize = 64 << 20

// ServerMemoryBase is what the flagadmin server (cmd/flagadmin) allows
// itself besides its result cache, in bytes, in the soft memory limit it
// sets (see MemoryLimit).
const ServerMemoryBase = 64 << 20

// MemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit) of a
// flagadmin server with a result cache of resultCacheSize bytes (zero or
// less when it is off): ServerMemoryBase more than the cache, which holds
// about its size of live heap, and at least twice ServerMemoryBase. Under
// it the collector runs at the server's pace (ServerGCPercent); near it,
// collections come more often instead, so a full cache does not grow
// several times over in the process's memory.
func MemoryLimit(resultCacheSize int64) int64 {
	return max(resultCacheSize, ServerMemoryBase) + ServerMemoryBase
}

// ServerGCPercent is the garbage collector's pace
// (runtime/debug.SetGCPercent) of the flagadmin server under its soft
// memory limit (MemoryLimit): the heap may grow to five times what is live
// between collections instead of the runtime's default twice, but not past
// the limit. A request's garbage (a page's rows, the project list's) is
// then collected less often: the project list costs a tenth to a third
// less of the server's CPU, while the process holds 10 to 25 MiB more
// while its heap is far from the limit.
const ServerGCPercent = 400

// SetServerPace gives the process the garbage collector's pace
// (ServerGCPercent) and soft memory limit (MemoryLimit) of a flagadmin
// server with a result cache of resultCacheSize bytes, each unless its
// environment variable (read by getenv) is set: GOGC, GOMEMLIMIT (the
// runtime then follows it). It returns what restores the previous ones.
func SetServerPace(resultCacheSize int64, getenv func(string) string) (restore func()) {
	var undo []func()
	if getenv("GOGC") == "" {
		prev := debug.SetGCPercent(ServerGCPercent)
		undo = append(undo, func() { debug.SetGCPercent(prev) })
	}
	if getenv("GOMEMLIMIT") == "" {
		prev := debug.SetMemoryLimit(MemoryLimit(resultCacheSize))
		undo = append(undo, func() { debug.SetMemoryLimit(prev) })
	}
	return func() {
		for _, f := range undo {
			f()
		}
	}
}

// DefaultTokenTTL is how long the flagadmin server (cmd/flagadmin) keeps a
// successful token lookup, unless configured otherwise. A lookup is used
// only while the store's change counter is what it was when the lookup was
// made (any write, through any process sharing the storage, ends it), and
// never past this age.
const DefaultTokenTTL = time.Second

// Options configure a Store. The zero value caches nothing.
type Options struct {
	// ResultCacheSize bounds the memory of the result cache, in bytes:
	// the live heap its entries hold (pages of events are counted as
	// allocated, other results estimated from their lengths); zero or
	// less turns the result cache off. The process holds more while the
	// garbage collector has not reclaimed what was evicted: see
	// MemoryLimit.
	ResultCacheSize int64
	// TokenTTL is how long a successful token lookup is remembered (never
	// past the token's expiresAt, and used only under the change counter it
	// was made under); zero or less turns the token cache off.
	TokenTTL time.Duration
	// Clock is the source of the current time of the token cache and of
	// the expiry of cached bodies built from project statistics (Bodies);
	// it must be the clock of the flagadmin.Service over the Store
	// (default time.Now, as the Service's).
	Clock func() time.Time
}

// Store is a flagadmin.Store over a flagadmin.VersionedStore that answers
// repeated reads from its caches (see the package comment). Methods it does
// not cache are those of the wrapped store. It is safe for concurrent use.
//
// Results the cache returns are shared with other callers: the pages,
// statistics, roles and project ids it returns must not be changed.
type Store struct {
	flagadmin.VersionedStore
	clock   func() time.Time
	results *resultCache // nil when off
	tokens  *tokenCache  // nil when off
	// versions shares concurrent reads of the store version among the
	// requests of both caches; nil when both are off.
	versions *versionReads
}

var (
	_ flagadmin.Store          = (*Store)(nil)
	_ flagadmin.VersionedStore = (*Store)(nil)
)

// New returns a Store over store with the caches opts configure.
func New(store flagadmin.VersionedStore, opts Options) *Store {
	s := &Store{VersionedStore: store, clock: opts.Clock}
	if s.clock == nil {
		s.clock = time.Now
	}
	if opts.ResultCacheSize > 0 {
		s.results = newResultCache(opts.ResultCacheSize)
	}
	if opts.TokenTTL > 0 {
		s.tokens = newTokenCache(opts.TokenTTL, tokenCacheSize)
	}
	if s.results != nil || s.tokens != nil {
		s.versions = &versionReads{read: store.Version}
	}
	return s
}

// scopeKey is the context key of a *scope.
type scopeKey struct{}

// scope remembers, for one request, the version each Store read, so that
// one reading serves every cached read of the request.
type scope struct {
	mu       sync.Mutex
	versions map[*Store]int64
}

// WithScope returns a context in which the Store reads the change counter
// once, at the first cached read, and uses that reading for every later
// cached read in the context (until a write through the Store, after which
// it reads it again). Results stay exact for the scope: no read in it is
// answered with a result older than the last write committed before the
// first read of the scope. Without a scope every cached read reads the
// counter (for a caller who is not a root admin, an event search makes
// three). A scope must be short-lived, such as one request: a long one
// keeps answering from the version it read first.
func WithScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, scopeKey{}, &scope{})
}

// Scope is an http.Handler middleware that serves each request in its own
// scope (WithScope).
func Scope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(WithScope(r.Context())))
	})
}

// version returns the change counter for a cached read in ctx: the one
// ctx's scope read, or a new reading (shared with concurrent reads, see
// versionReads) that the scope then keeps.
func (s *Store) version(ctx context.Context) (int64, error) {
	sc, _ := ctx.Value(scopeKey{}).(*scope)
	if sc != nil {
		sc.mu.Lock()
		v, ok := sc.versions[s]
		sc.mu.Unlock()
		if ok {
			return v, nil
		}
	}
	v, err := s.versions.get(ctx)
	if err != nil || sc == nil {
		return v, err
	}
	sc.mu.Lock()
	if sc.versions == nil {
		sc.versions = map[*Store]int64{}
	}
	sc.versions[s] = v
	sc.mu.Unlock()
	return v, nil
}

// wrote makes the scope of ctx, if any, read the counter again: a write
// through s raised it.
func (s *Store) wrote(ctx context.Context) {
	if sc, _ := ctx.Value(scopeKey{}).(*scope); sc != nil {
		sc.mu.Lock()
		delete(sc.versions, s)
		sc.mu.Unlock()
	}
}

// UpdateFeature is the wrapped store's.
func (s *Store) UpdateFeature(ctx context.Context, name string, fn func(*flagadmin.Feature) (*flagadmin.Event, error)) error {
	defer s.wrote(ctx)
	return s.VersionedStore.UpdateFeature(ctx, name, fn)
}

// Write is the wrapped store's.
func (s *Store) Write(ctx context.Context, b *flagadmin.Batch) error {
	defer s.wrote(ctx)
	return s.VersionedStore.Write(ctx, b)
}

// DeleteUser is the wrapped store's; then, whatever the outcome (a failed
// commit may still have deleted), the token cache forgets every lookup of
// a token acting as the user, and lookups in flight do not cache what
// they read. Other processes sharing the storage refuse its tokens from
// their next request on: the deletion changed the store's version.
func (s *Store) DeleteUser(ctx context.Context, id int64, fn func(flagadmin.User) (flagadmin.Event, error)) error {
	defer s.wrote(ctx)
	err := s.VersionedStore.DeleteUser(ctx, id, fn)
	s.tokens.forgetUser(id)
	return err
}

// DeleteToken is the wrapped store's; then, whatever the outcome, the
// token cache forgets the token, and lookups in flight do not cache what
// they read. Other processes sharing the storage refuse it from their next
// request on: the deletion changed the store's version.
func (s *Store) DeleteToken(ctx context.Context, hash string, fn func(flagadmin.APIToken) (flagadmin.Event, error)) error {
	defer s.wrote(ctx)
	err := s.VersionedStore.DeleteToken(ctx, hash, fn)
	s.tokens.forgetToken(hash)
	return err
}
