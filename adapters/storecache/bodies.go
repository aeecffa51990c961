package storecache

import (
	"context"
	"sync"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Bodies caches encoded answers, such as the bytes of the project list an
// HTTP transport writes, in the result cache of a Store: under the same
// byte budget, least recently used first out, and with the same
// exactness (see Load). It is safe for concurrent use.
type Bodies struct {
	s *Store
}

// bodyWindowSize is what a body's entry counts per time window it keeps
// (the maps are shared with the statistics they come from).
const bodyWindowSize = 64

// Bodies returns the body cache of s, which shares its result cache; nil
// when the result cache is off (Options.ResultCacheSize), so that callers
// keep streaming their answers instead of building them whole.
func (s *Store) Bodies() *Bodies {
	if s.results == nil {
		return nil
	}
	return &Bodies{s: s}
}

// Load returns the body cached under key if it is valid for ctx, else the
// body build returns, which it caches. A cached body is valid, like the
// results it was built from:
//
//   - under the store version of ctx (read once per request scope, see
//     WithScope), so a write committed before the request began is seen;
//   - while the potentially stale counts of every project statistics
//     (ProjectStats) read build made hold at the current time of
//     Options.Clock: a body stops being used when a feature it counts as
//     not potentially stale becomes so with time. Options.Clock must
//     therefore be the clock of the flagadmin.Service whose answers build
//     encodes (both default to time.Now).
//
// key must name everything else the body depends on: the route, its
// parameters, and who is asking as far as the answer depends on it
// (visibility, favorites). build must make its reads through the Store
// with the context it is given (a Service over the Store does); a body
// whose build read nothing through the Store is returned but not cached,
// since nothing would tie it to the data. Concurrent loads of one key
// under one version build once (the others wait and share the body).
// Errors are not cached. The bytes returned are shared: they must not be
// changed.
func (b *Bodies) Load(ctx context.Context, key string, build func(context.Context) ([]byte, error)) ([]byte, error) {
	s := b.s
	version, err := s.version(ctx)
	if err != nil {
		return nil, err
	}
	// The cut-offs the Service computes now (Service.ListProjects).
	cutoffs := flagadmin.PotentiallyStaleCutoffs(flagadmin.Truncate(s.clock()))
	holds := func(v any) bool { return v.(*cachedBody).holdsFor(cutoffs) }
	k := append(make([]byte, 0, 1+len(key)), 'b')
	k = append(k, key...)
	v, err := s.results.load(ctx, k, version, holds, func() (cached, error) {
		reads := &bodyReads{store: s}
		body, err := build(context.WithValue(ctx, bodyReadsKey{}, reads))
		if err != nil {
			return cached{}, err
		}
		reads.mu.Lock()
		defer reads.mu.Unlock()
		cb := &cachedBody{body: body, windows: reads.windows}
		size := int64(cap(body)) + int64(len(cb.windows))*bodyWindowSize
		return cached{value: cb, size: size, keep: reads.n > 0}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*cachedBody).body, nil
}

// cachedBody is a body with the windows of the statistics it was built
// from.
type cachedBody struct {
	body    []byte
	windows []staleWindow
}

// holdsFor reports whether the body still is what its build would build
// with these cut-offs: whether every statistics it was built from holds
// for them.
func (c *cachedBody) holdsFor(cutoffs map[flagadmin.FeatureType]time.Time) bool {
	for i := range c.windows {
		if !c.windows[i].holdsFor(cutoffs) {
			return false
		}
	}
	return true
}

// bodyReadsKey is the context key of the *bodyReads of a build.
type bodyReadsKey struct{}

// bodyReads records the cached reads a build made through store: how many,
// and the windows of the project statistics among them.
type bodyReads struct {
	store *Store

	mu      sync.Mutex
	n       int
	windows []staleWindow
}

// bodyRead records a cached read through s in the build of ctx, if any,
// with its window w when it has one (nil otherwise).
func (s *Store) bodyRead(ctx context.Context, w *staleWindow) {
	r, _ := ctx.Value(bodyReadsKey{}).(*bodyReads)
	if r == nil || r.store != s {
		return
	}
	r.mu.Lock()
	r.n++
	if w != nil {
		r.windows = append(r.windows, *w)
	}
	r.mu.Unlock()
}
