package flagadmin

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"time"
	"unsafe"
)

// DefaultResultCacheSize is the result cache size, in bytes, of the
// flagadmin server (cmd/flagadmin) unless configured otherwise. A Service
// built without WithResultCache caches no results.
const DefaultResultCacheSize = 64 << 20

// resultEntryOverhead is what an entry costs besides its key and value: the
// map slot, the list element, the entry and the boxed value.
const resultEntryOverhead = 256

// WithResultCache makes the Service remember the results of the event
// searches (SearchEvents, DeprecatedSearchEvents) and of the project list
// (ProjectListJSON), with the visibility of each caller they depend on, in
// at most about maxBytes of memory (least recently used results go first),
// and answer a repeated request from memory when nothing was written since.
//
// Results are exact: every request reads the store's change counter
// (VersionedStore.Version, one cheap statement; concurrent requests share
// one read that began after all of them arrived), and a result is used
// only under the counter value read before it was computed. So no request is
// answered with a result older than the last write committed, through any
// process sharing the storage, before the request began. The project list
// also depends on the clock (features become potentially stale with
// time): it is used only until the first feature it counts as not yet
// potentially stale becomes so. Writes that bypass the store's counter,
// such as SQL run by hand against the database, are not seen.
//
// Cached results are shared between callers: the events of a page the
// searches return and the bytes ProjectListJSON returns must not be
// changed. ListProjects is not cached.
//
// The cache needs a store that implements VersionedStore; over any other
// store, and with maxBytes of zero or less (the default), it is off.
func WithResultCache(maxBytes int64) Option {
	return func(s *Service) {
		s.results = nil
		vs, ok := s.store.(VersionedStore)
		if maxBytes <= 0 || !ok {
			return
		}
		s.results = newResultCache(vs, maxBytes)
	}
}

// Why a result stored under the version read before computing it is exact:
// Version is read first, then the store is queried. A write that commits
// before the Version read is seen by the query. A write that commits
// between the two may or may not be seen by the query, but it raised the
// counter: every request that begins after that commit reads a newer
// version, so the entry (tagged with the older one) never matches it; only
// requests that read the older version, and so began before that commit,
// can be given it, and a result newer than their start is correct for them
// too. This needs each store read to see at least what the Version read
// before it saw, which holds for one database (not for a lagging replica).

// resultCache holds results of the Service's reads, each valid for one
// version of the store. It starts no goroutine.
type resultCache struct {
	store VersionedStore
	max   int64
	// versions shares concurrent requests' reads of store.Version.
	versions *versionReads

	mu sync.Mutex
	// version is the newest version seen. Every entry was computed under
	// it: when a newer one is seen, every entry is dropped, since versions
	// never go down and so none of them can be used again.
	version int64
	size    int64
	entries map[string]*list.Element // of *resultEntry
	lru     list.List                // most recently used first
	flights map[flightKey]*flight
}

// cached is a computed result with what it takes to cache it.
type cached struct {
	value any
	// size estimates the bytes value holds.
	size int64
	// from and until bound the times (Service.now) at which value holds;
	// a zero until means no end.
	from, until time.Time
	// keep is false for a result that must not be cached.
	keep bool
}

// holdsAt reports whether the result is valid at now.
func (c *cached) holdsAt(now time.Time) bool {
	return !now.Before(c.from) && (c.until.IsZero() || now.Before(c.until))
}

// resultEntry is a cached result under its key; size includes the key
// and resultEntryOverhead.
type resultEntry struct {
	key string
	cached
}

// flightKey names a computation in progress: a key at a version.
type flightKey struct {
	key     string
	version int64
}

// flight is a computation in progress; result and err are set before done
// is closed.
type flight struct {
	done    chan struct{}
	result  cached
	err     error
	waiters int // callers waiting for it (under resultCache.mu), for tests
}

// errFlightAbandoned is the error of a computation that panicked.
var errFlightAbandoned = errors.New("the computation of a cached result was abandoned")

func newResultCache(store VersionedStore, maxBytes int64) *resultCache {
	return &resultCache{
		store:    store,
		versions: &versionReads{read: store.Version},
		max:      maxBytes,
		version:  math.MinInt64,
		entries:  map[string]*list.Element{},
		flights:  map[flightKey]*flight{},
	}
}

// load returns the result cached under key for version if it holds at now;
// else it computes the result with compute and caches it. Concurrent loads
// of one key and version wait for the first one's computation instead of
// repeating it; if that fails, each computes its own (the failure may be
// the first caller's own, such as its cancelled context). Errors are never
// cached.
func (c *resultCache) load(ctx context.Context, key []byte, version int64, now time.Time, compute func() (cached, error)) (any, error) {
	c.mu.Lock()
	if v, ok := c.lookup(key, version, now); ok {
		c.mu.Unlock()
		return v, nil
	}
	k := flightKey{key: string(key), version: version}
	f, wait := c.flights[k]
	if wait {
		f.waiters++
	} else {
		f = &flight{done: make(chan struct{}), err: errFlightAbandoned}
		c.flights[k] = f
	}
	c.mu.Unlock()

	if wait {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.err == nil && f.result.holdsAt(now) {
			return f.result.value, nil
		}
		r, err := compute()
		if err != nil {
			return nil, err
		}
		c.put(k.key, version, r)
		return r.value, nil
	}

	defer func() {
		c.mu.Lock()
		delete(c.flights, k)
		c.mu.Unlock()
		close(f.done)
	}()
	r, err := compute()
	f.result, f.err = r, err
	if err != nil {
		return nil, err
	}
	c.put(k.key, version, r) // before the flight ends, so that no caller misses both
	return r.value, nil
}

// lookup returns the value cached under key for version if it holds at
// now, and marks it used. c.mu is held.
func (c *resultCache) lookup(key []byte, version int64, now time.Time) (any, bool) {
	c.observe(version)
	if version != c.version {
		return nil, false
	}
	el, ok := c.entries[string(key)]
	if !ok {
		return nil, false
	}
	e := el.Value.(*resultEntry)
	if !e.holdsAt(now) {
		c.remove(el)
		return nil, false
	}
	c.lru.MoveToFront(el)
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
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	for c.size+r.size > c.max {
		c.remove(c.lru.Back())
	}
	c.entries[key] = c.lru.PushFront(&resultEntry{key: key, cached: r})
	c.size += r.size
}

// observe records version as seen, dropping every entry when it is newer
// than the newest seen so far. c.mu is held.
func (c *resultCache) observe(version int64) {
	if version <= c.version {
		return
	}
	c.version = version
	clear(c.entries)
	c.lru.Init()
	c.size = 0
}

// remove drops an entry. c.mu is held.
func (c *resultCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*resultEntry)
	delete(c.entries, e.key)
	c.size -= e.size
}

// CachesResults reports whether the Service has a result cache
// (WithResultCache with a positive size, over a VersionedStore).
func (s *Service) CachesResults() bool { return s.results != nil }

// cacheVersion reads the store's version when the result cache is on
// (cached reports whether it is).
func (s *Service) cacheVersion(ctx context.Context) (version int64, cached bool, err error) {
	if s.results == nil {
		return 0, false, nil
	}
	version, err = s.results.versions.get(ctx)
	return version, err == nil, err
}

// hiddenProjects returns the restriction of reads by p, as visibility
// does, from the result cache (for version) when it is on.
func (s *Service) hiddenProjects(ctx context.Context, p Principal, version int64) (hidden []string, restricted bool, err error) {
	if s.results == nil || p.IsRootAdmin() {
		hidden, _, restricted, err = s.visibility(ctx, p)
		return hidden, restricted, err
	}
	var buf [16]byte
	key := binary.AppendVarint(append(buf[:0], 'v'), p.User.ID)
	v, err := s.results.load(ctx, key, version, time.Time{}, func() (cached, error) {
		hidden, _, _, err := s.visibility(ctx, p)
		if err != nil {
			return cached{}, err
		}
		size := int64(unsafe.Sizeof("")) * int64(cap(hidden))
		for _, id := range hidden {
			size += int64(len(id))
		}
		return cached{value: hidden, size: size, keep: true}, nil
	})
	if err != nil {
		return nil, false, err
	}
	return v.([]string), true, nil
}

// cachedSearch returns the page q selects from the result cache, or from
// the store (then with its events encoded, and cached) under version.
func (s *Service) cachedSearch(ctx context.Context, q EventQuery, version int64) (EventPage, error) {
	var buf [256]byte
	key := appendEventQueryKey(buf[:0], &q)
	v, err := s.results.load(ctx, key, version, time.Time{}, func() (cached, error) {
		page, err := s.store.SearchEvents(ctx, q)
		if err != nil {
			return cached{}, err
		}
		if page.Events == nil {
			page.Events = []Event{}
		}
		page.encoded = encodeEvents(page.Events)
		// A page whose events cannot be encoded is answered, not kept:
		// writing it fails again with the encoder's error.
		keep := page.encoded != nil || len(page.Events) == 0
		return cached{value: &page, size: page.memSize(), keep: keep}, nil
	})
	if err != nil {
		return EventPage{}, err
	}
	return *v.(*EventPage), nil
}

// ProjectListJSON returns the project list ListProjects returns, encoded
// as the JSON array of its entries: [entry,...], each entry the bytes of
// ProjectListEntry.AppendJSON. With a result cache (WithResultCache) the
// bytes may be shared with other callers: they must not be modified.
func (s *Service) ProjectListJSON(ctx context.Context, p Principal, opts ProjectListOptions) ([]byte, error) {
	if err := requireAdminAPI(p); err != nil {
		return nil, err
	}
	version, cacheOn, err := s.cacheVersion(ctx)
	if err != nil {
		return nil, err
	}
	hidden, _, err := s.hiddenProjects(ctx, p, version)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if !cacheOn {
		list, err := s.listProjects(ctx, p, opts, hidden, now)
		if err != nil {
			return nil, err
		}
		return appendProjectListJSON(nil, list), nil
	}
	var buf [64]byte
	key := appendProjectListKey(buf[:0], p, opts, hidden)
	v, err := s.results.load(ctx, key, version, now, func() (cached, error) {
		list, err := s.listProjects(ctx, p, opts, hidden, now)
		if err != nil {
			return cached{}, err
		}
		until, err := s.staleCountsUntil(ctx, now)
		if err != nil {
			return cached{}, err
		}
		b := appendProjectListJSON(nil, list)
		return cached{value: b, size: int64(cap(b)), from: now, until: until, keep: true}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// appendProjectListJSON appends list as a JSON array of
// ProjectListEntry.AppendJSON to b; b nil gets a buffer of about the
// right size.
func appendProjectListJSON(b []byte, list []ProjectListEntry) []byte {
	if b == nil {
		b = make([]byte, 0, 2+512*len(list))
	}
	b = append(b, '[')
	for i := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = list[i].AppendJSON(b)
	}
	return append(b, ']')
}

// staleCountsUntil returns when the potentially stale counts of a project
// list computed at now next change with the passing of time alone: the
// first instant, at the millisecond precision of Service.now, at which a
// feature not potentially stale at now becomes so. Zero when none will.
func (s *Service) staleCountsUntil(ctx context.Context, now time.Time) (time.Time, error) {
	oldest, err := s.results.store.OldestFreshFeatures(ctx, PotentiallyStaleCutoffs(now))
	if err != nil {
		return time.Time{}, err
	}
	var until time.Time
	for t, created := range oldest {
		life := t.Lifetime()
		if life <= 0 {
			continue
		}
		// Potentially stale at n when created < n - life, that is when n >
		// created + life: from the next millisecond on.
		at := Truncate(created.Add(life)).Add(time.Millisecond)
		if until.IsZero() || at.Before(until) {
			until = at
		}
	}
	return until, nil
}

// Keys of the result cache. Each kind starts with its own byte, then
// encodes every input of the result, each field self-delimiting (lengths
// before contents), so that two keys are equal only when the inputs are.

// appendEventQueryKey appends the key of the event search q. Every field
// of EventQuery must be part of it (a test checks).
func appendEventQueryKey(b []byte, q *EventQuery) []byte {
	b = append(b, 'e')
	b = appendStringsKey(b, q.Features)
	b = appendStringsKey(b, q.Projects)
	b = appendStringsKey(b, q.Types)
	b = appendStringsKey(b, q.Environments)
	b = appendIntsKey(b, q.CreatedByUserIDs)
	b = appendIntsKey(b, q.IDs)
	b = appendIntsKey(b, q.GroupIDs)
	b = appendTimeKey(b, q.From)
	b = appendTimeKey(b, q.Before)
	b = appendStringKey(b, q.Text)
	b = binary.AppendVarint(b, int64(q.TextScope))
	b = appendBoolKey(b, q.RequireProject)
	b = appendStringsKey(b, q.HiddenProjects)
	b = binary.AppendVarint(b, int64(q.Limit))
	b = binary.AppendVarint(b, int64(q.Offset))
	if q.After == nil {
		return append(b, 0)
	}
	b = binary.AppendVarint(append(b, 1), q.After.CreatedAt.UnixMilli())
	return binary.AppendVarint(b, q.After.ID)
}

// appendProjectListKey appends the key of the project list of opts for p,
// who does not see the projects hidden: the inputs of ProjectStatsQuery
// besides the clock (Archived, FavoritesOf) and the hidden projects.
func appendProjectListKey(b []byte, p Principal, opts ProjectListOptions, hidden []string) []byte {
	b = append(b, 'p')
	b = appendBoolKey(b, opts.Archived)
	if p.Kind == PrincipalUser && p.User != nil {
		b = binary.AppendVarint(append(b, 1), p.User.ID)
	} else {
		b = append(b, 0)
	}
	return appendStringsKey(b, hidden)
}

func appendStringKey(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendStringsKey(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendStringKey(b, s)
	}
	return b
}

func appendIntsKey(b []byte, ns []int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(ns)))
	for _, n := range ns {
		b = binary.AppendVarint(b, n)
	}
	return b
}

func appendTimeKey(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, 0)
	}
	b = binary.AppendVarint(append(b, 1), t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func appendBoolKey(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// memSize estimates the bytes p holds: its events and their encoding.
func (p *EventPage) memSize() int64 {
	n := int64(unsafe.Sizeof(*p)) + int64(cap(p.Events))*int64(unsafe.Sizeof(Event{}))
	for i := range p.Events {
		n += p.Events[i].heapSize()
	}
	if e := p.encoded; e != nil {
		n += int64(unsafe.Sizeof(*e)) + int64(cap(e.json))
	}
	return n
}

// heapSize estimates the bytes e points to.
func (e *Event) heapSize() int64 {
	n := len(e.Type) + len(e.CreatedBy) + cap(e.Data) + cap(e.PreData) + cap(e.Tags)*int(unsafe.Sizeof(Tag{}))
	for _, t := range e.Tags {
		n += len(t.Type) + len(t.Value)
	}
	for _, s := range [...]*string{e.Environment, e.Project, e.FeatureName} {
		if s != nil {
			n += int(unsafe.Sizeof(*s)) + len(*s)
		}
	}
	if e.CreatedByUserID != nil {
		n += 8
	}
	if e.GroupID != nil {
		n += 8
	}
	return int64(n)
}
