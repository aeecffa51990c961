package storecache

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Why a result stored under the version read before computing it is exact:
// Version is read first, then the store is queried. A write that commits
// before the Version read is seen by the query. A write that commits
// between the two may or may not be seen by the query, but it raised the
// counter: every read that begins after that commit reads a newer
// version, so the entry (tagged with the older one) never matches it; only
// reads that got the older version, and so began before that commit, can
// be given it, and a result newer than their start is correct for them
// too. This needs each store read to see at least what the Version read
// before it saw, which holds for one database (not for a lagging replica).

// resultEntryOverhead is what an entry costs besides its key and value: the
// map slot, the list element, the entry and the boxed value.
const resultEntryOverhead = 256

// resultCache holds results of store reads, each valid for one version of
// the store, in at most max bytes (as estimated), least recently used out
// first (golang-lru's simplelru keeps the order; the bytes are counted
// here). Concurrent identical misses share one computation (flights). It
// starts no goroutine.
//
// The sharing is written here, not golang.org/x/sync/singleflight's:
// its DoChan, which lets a waiter leave when its context ends, runs each
// computation in a goroutine of its own, and handing the result back
// cost about as much as the cache's own work on a miss: a flag's page
// from the in-memory store took 32-34 us through it, 22-27 us here, 13-14
// us without the cache (BenchmarkSearchEventsCacheMiss). Here the first
// caller computes in its own goroutine and the others wait for it, or
// for their context.
type resultCache struct {
	max int64
	// waiting counts callers waiting for a computation, the one computing
	// included (for tests).
	waiting atomic.Int64
	// hits counts loads answered without computing (from the cache, or
	// sharing a concurrent computation); misses counts computations.
	hits, misses atomic.Uint64

	mu sync.Mutex
	// version is the newest version seen. Every entry was computed under
	// it: when a newer one is seen, every entry is dropped, since versions
	// never go down and so none of them can be used again.
	version int64
	size    int64
	lru     *simplelru.LRU[string, *cached]
	// flights are the computations in progress, by key and version.
	flights map[flightKey]*flight
}

// flightKey names a computation: the key of its result and the version it
// is computed under.
type flightKey struct {
	key     string
	version int64
}

// flight is a computation in progress; value and err are set before done
// is closed.
type flight struct {
	key   flightKey
	done  chan struct{}
	value any
	err   error
}

// cached is a computed result with what it takes to cache it.
type cached struct {
	value any
	// size estimates the bytes of value, then (once cached) of the entry.
	size int64
	// keep is false for a result that must not be cached.
	keep bool
}

// errFlightAbandoned is what the waiters of a computation that panicked
// are given (each then computes its own); the panic goes on in the caller
// that computed.
var errFlightAbandoned = errors.New("storecache: the computation of a cached result was abandoned")

func newResultCache(maxBytes int64) *resultCache {
	c := &resultCache{max: maxBytes, version: math.MinInt64, flights: map[flightKey]*flight{}}
	// The LRU is bounded by bytes below, not by its length.
	c.lru, _ = simplelru.NewLRU(math.MaxInt, func(_ string, e *cached) { c.size -= e.size })
	return c
}

// load returns the result cached under key for version if holds accepts
// it (holds nil accepts any); else it computes the result with compute and
// caches it. Concurrent loads of one key and version wait for the first
// one's computation instead of repeating it; if that fails, or its result
// does not hold for a waiter, the waiter computes its own (the failure may
// be the first caller's own, such as its cancelled context). A waiter whose
// context ends stops waiting. Errors are never cached.
func (c *resultCache) load(ctx context.Context, key []byte, version int64, holds func(any) bool, compute func() (cached, error)) (any, error) {
	v, f, first := c.lookupOrJoin(key, version, holds)
	switch {
	case f == nil:
		c.hits.Add(1)
		return v, nil
	case first:
		return c.fly(f, compute)
	}
	c.waiting.Add(1)
	select {
	case <-f.done:
		c.waiting.Add(-1)
		if f.err == nil && (holds == nil || holds(f.value)) {
			c.hits.Add(1)
			return f.value, nil
		}
	case <-ctx.Done():
		c.waiting.Add(-1)
		return nil, ctx.Err()
	}
	c.misses.Add(1)
	r, err := compute()
	if err != nil {
		return nil, err
	}
	c.put(string(key), version, r)
	return r.value, nil
}

// fly runs f's computation in the caller's goroutine, caches its result
// before the flight ends (so that no caller misses both), and gives it to
// f's waiters. If compute panics, the waiters are given
// errFlightAbandoned and the panic goes on.
func (c *resultCache) fly(f *flight, compute func() (cached, error)) (any, error) {
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	f.err = errFlightAbandoned
	defer func() {
		c.mu.Lock()
		delete(c.flights, f.key)
		c.mu.Unlock()
		close(f.done)
	}()
	c.misses.Add(1)
	r, err := compute()
	if err == nil {
		c.put(f.key.key, f.key.version, r)
	}
	f.value, f.err = r.value, err
	return f.value, f.err
}

// lookupOrJoin returns the value cached under key for version if holds
// accepts it, and marks it used; else the computation of it in progress
// (first false), or a new one the caller is to run (first true).
func (c *resultCache) lookupOrJoin(key []byte, version int64, holds func(any) bool) (v any, f *flight, first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.lookupLocked(key, version, holds); ok {
		return v, nil, false
	}
	k := flightKey{string(key), version}
	if f := c.flights[k]; f != nil {
		return nil, f, false
	}
	f = &flight{key: k, done: make(chan struct{})}
	c.flights[k] = f
	return nil, f, true
}

// lookupLocked returns the value cached under key for version if holds
// accepts it, and marks it used. c.mu is held.
func (c *resultCache) lookupLocked(key []byte, version int64, holds func(any) bool) (any, bool) {
	c.observe(version)
	if version != c.version {
		return nil, false
	}
	e, ok := c.lru.Get(string(key))
	if !ok {
		return nil, false
	}
	if holds != nil && !holds(e.value) {
		c.lru.Remove(string(key))
		return nil, false
	}
	return e.value, true
}

// put caches r under key for version, evicting the least recently used
// entries to make room. A result larger than the whole cache, one computed
// under a version older than the newest seen, and one not to keep are not
// cached.
func (c *resultCache) put(key string, version int64, r cached) {
	if !r.keep {
		return
	}
	r.size += int64(len(key)) + resultEntryOverhead
	if r.size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observe(version)
	if version != c.version {
		return
	}
	c.lru.Remove(key)
	for c.size+r.size > c.max {
		c.lru.RemoveOldest()
	}
	c.lru.Add(key, &r)
	c.size += r.size
}

// observe records version as seen, dropping every entry when it is newer
// than the newest seen so far. c.mu is held.
func (c *resultCache) observe(version int64) {
	if version <= c.version {
		return
	}
	c.version = version
	c.lru.Purge()
	c.size = 0
}

// SearchEvents answers a query from the result cache when it can.
func (s *Store) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	if s.results == nil {
		return s.VersionedStore.SearchEvents(ctx, q)
	}
	version, err := s.version(ctx)
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	var buf [256]byte
	v, err := s.results.load(ctx, appendEventQueryKey(buf[:0], &q), version, nil, func() (cached, error) {
		page, err := s.VersionedStore.SearchEvents(ctx, q)
		if err != nil {
			return cached{}, err
		}
		compact, size := compactPage(&page)
		return cached{value: compact, size: size, keep: true}, nil
	})
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	s.bodyRead(ctx, nil)
	return *v.(*flagadmin.EventPage), nil
}

// ProjectAccess answers from the result cache when it can; the roles and
// private projects returned are the caller's.
func (s *Store) ProjectAccess(ctx context.Context, userID int64) (flagadmin.ProjectAccess, error) {
	if s.results == nil {
		return s.VersionedStore.ProjectAccess(ctx, userID)
	}
	version, err := s.version(ctx)
	if err != nil {
		return flagadmin.ProjectAccess{}, err
	}
	var buf [16]byte
	v, err := s.results.load(ctx, appendAccessKey(buf[:0], userID), version, nil, func() (cached, error) {
		access, err := s.VersionedStore.ProjectAccess(ctx, userID)
		if err != nil {
			return cached{}, err
		}
		return cached{value: access, size: accessSize(access), keep: true}, nil
	})
	if err != nil {
		return flagadmin.ProjectAccess{}, err
	}
	s.bodyRead(ctx, nil)
	access := v.(flagadmin.ProjectAccess)
	return flagadmin.ProjectAccess{Roles: maps.Clone(access.Roles), Private: slices.Clone(access.Private)}, nil
}

// projectStats is a cached ProjectStats result with the time window in
// which it holds.
type projectStats struct {
	stats []flagadmin.ProjectStats
	staleWindow
}

// staleWindow is when the potentially stale counts of a ProjectStats
// result hold: the cut-offs it was computed for and, for each of their
// feature types, the oldest feature that was not potentially stale at its
// cut-off (absent when none). Its maps are never changed once made.
type staleWindow struct {
	cutoffs map[flagadmin.FeatureType]time.Time
	oldest  map[flagadmin.FeatureType]time.Time
}

// holdsFor reports whether the statistics answer the cut-offs of a query
// whose Archived, FavoritesOf and cut-off types are those of the
// statistics' query (the key says so): when no cut-off is earlier than the
// statistics' own (time went back) or later than the oldest feature the
// statistics count as not potentially stale (it is potentially stale at
// that cut-off).
func (w *staleWindow) holdsFor(cutoffs map[flagadmin.FeatureType]time.Time) bool {
	for t, cut := range cutoffs {
		if cut.Before(w.cutoffs[t]) {
			return false
		}
		if oldest, ok := w.oldest[t]; ok && oldest.Before(cut) {
			return false
		}
	}
	return true
}

// ProjectStats answers from the result cache when it can. Besides the
// writes, the potentially stale counts change with the cut-offs, which
// move with the clock: a cached result answers a later query while no
// feature it counts as not potentially stale is older than the query's
// cut-off of its type (so the project list also expires when a feature
// becomes potentially stale with time).
func (s *Store) ProjectStats(ctx context.Context, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	if s.results == nil {
		return s.VersionedStore.ProjectStats(ctx, q)
	}
	version, err := s.version(ctx)
	if err != nil {
		return nil, err
	}
	var buf [64]byte
	holds := func(v any) bool { return v.(*projectStats).holdsFor(q.PotentiallyStaleBefore) }
	v, err := s.results.load(ctx, appendStatsKey(buf[:0], &q), version, holds, func() (cached, error) {
		stats, err := s.VersionedStore.ProjectStats(ctx, q)
		if err != nil {
			return cached{}, err
		}
		oldest, err := s.VersionedStore.OldestFreshFeatures(ctx, q.PotentiallyStaleBefore)
		if err != nil {
			return cached{}, err
		}
		p := &projectStats{stats: stats, staleWindow: staleWindow{cutoffs: maps.Clone(q.PotentiallyStaleBefore), oldest: oldest}}
		return cached{value: p, size: statsSize(stats), keep: true}, nil
	})
	if err != nil {
		return nil, err
	}
	p := v.(*projectStats)
	s.bodyRead(ctx, &p.staleWindow)
	return p.stats, nil
}
