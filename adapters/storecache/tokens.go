package storecache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// tokenCacheSize bounds how many token lookups a token cache holds.
const tokenCacheSize = 10_000

// LookupToken answers from the token cache when it remembers a successful
// lookup of hash made under the store's current version (read as every
// cached read reads it: once per request scope, see WithScope), younger
// than Options.TokenTTL and not past the token's expiresAt; else it asks
// the wrapped store and remembers a success under the version read before.
// So a token deleted, or an account changed, through any process sharing
// the storage is refused from the next request on. Failures are not
// remembered, so a token created meanwhile works at once. The user
// returned is the caller's copy. In a context with
// flagadmin.WithCurrentReads it always asks the wrapped store.
func (s *Store) LookupToken(ctx context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	if s.tokens == nil || flagadmin.CurrentReads(ctx) {
		return s.VersionedStore.LookupToken(ctx, hash)
	}
	version, err := s.version(ctx)
	if err != nil {
		return flagadmin.APIToken{}, nil, err
	}
	// The entry's lifetime counts from before the lookup, so it never
	// outlasts the data it caches by more than the TTL.
	now := s.clock()
	e, gen, hit, stale := s.tokens.get(hash, now, version)
	if hit {
		s.tokens.hits.Add(1)
		return e.token, e.user, nil
	}
	s.tokens.misses.Add(1)
	tok, user, err := s.VersionedStore.LookupToken(ctx, hash)
	if err != nil {
		if stale {
			s.tokens.remove(hash)
		}
		return flagadmin.APIToken{}, nil, err
	}
	s.tokens.put(hash, tokenLookup{token: tok, user: user}, now, gen, version)
	return tok, cloneUser(user), nil
}

// tokenLookup is the answer of a successful LookupToken.
type tokenLookup struct {
	token flagadmin.APIToken
	user  *flagadmin.User
}

// tokenCache holds recent successful token lookups. Entries expire lazily:
// a stale entry is never returned, and is dropped when its token is looked
// up again or when room is needed. It starts no goroutine.
type tokenCache struct {
	ttl time.Duration
	max int
	// hits and misses count LookupToken calls answered from the cache and
	// from the store.
	hits, misses atomic.Uint64

	mu sync.RWMutex
	// gen changes on every invalidation, so that a lookup that began before
	// it is not cached (it may have read what the invalidation removed).
	gen     uint64
	entries map[string]tokenCacheEntry
}

// tokenCacheEntry is a cached lookup, valid until until (exclusive) and
// only under the store version it was made under.
type tokenCacheEntry struct {
	lookup  tokenLookup
	until   time.Time
	version int64
}

func newTokenCache(ttl time.Duration, max int) *tokenCache {
	return &tokenCache{ttl: ttl, max: max, entries: map[string]tokenCacheEntry{}}
}

// get returns a copy of the lookup cached under hash if it is still valid
// at now under the store version (hit); stale reports an entry that is no
// longer valid. gen is the cache's generation, to pass to put after a
// store lookup.
func (c *tokenCache) get(hash string, now time.Time, version int64) (l tokenLookup, gen uint64, hit, stale bool) {
	c.mu.RLock()
	e, found := c.entries[hash]
	gen = c.gen
	c.mu.RUnlock()
	if !found {
		return tokenLookup{}, gen, false, false
	}
	if !now.Before(e.until) || e.version != version {
		return tokenLookup{}, gen, false, true
	}
	return e.lookup.clone(), gen, true, false
}

// put caches l, looked up under the store version, under hash from now
// until now+ttl, or until the token's expiresAt if that is earlier.
// Nothing is cached if the cache was invalidated since gen.
func (c *tokenCache) put(hash string, l tokenLookup, now time.Time, gen uint64, version int64) {
	until := now.Add(c.ttl)
	if exp := l.token.ExpiresAt; exp != nil && exp.Before(until) {
		until = *exp
	}
	if !now.Before(until) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if _, replace := c.entries[hash]; !replace && len(c.entries) >= c.max {
		c.makeRoom(now, version)
	}
	c.entries[hash] = tokenCacheEntry{lookup: l.clone(), until: until, version: version}
}

// makeRoom drops the stale entries (past their time or of another version
// than version) and, if the cache is still full, as many others (in the
// map's random order) as it takes to add one. c.mu is held.
func (c *tokenCache) makeRoom(now time.Time, version int64) {
	for h, e := range c.entries {
		if !now.Before(e.until) || e.version != version {
			delete(c.entries, h)
		}
	}
	for h := range c.entries {
		if len(c.entries) < c.max {
			break
		}
		delete(c.entries, h)
	}
}

// remove forgets the entry of hash, if any.
func (c *tokenCache) remove(hash string) {
	c.mu.Lock()
	delete(c.entries, hash)
	c.mu.Unlock()
}

// forgetUser forgets every lookup of a token the user userID owns or acts
// as, and keeps lookups in flight from caching what they read.
// Safe on a nil cache.
func (c *tokenCache) forgetUser(userID int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, e := range c.entries {
		if u, owner := e.lookup.user, e.lookup.token.UserID; u != nil && u.ID == userID || owner != nil && *owner == userID {
			delete(c.entries, h)
		}
	}
}

// forgetToken forgets the lookup of hash and keeps lookups in flight from
// caching what they read. Safe on a nil cache.
func (c *tokenCache) forgetToken(hash string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.entries, hash)
}

// clone returns l with its own copies of what it points to, so that callers
// cannot change what a cache holds.
func (l tokenLookup) clone() tokenLookup {
	l.user = cloneUser(l.user)
	if l.token.ExpiresAt != nil {
		t := *l.token.ExpiresAt
		l.token.ExpiresAt = &t
	}
	if l.token.UserID != nil {
		id := *l.token.UserID
		l.token.UserID = &id
	}
	return l
}

func cloneUser(u *flagadmin.User) *flagadmin.User {
	if u == nil {
		return nil
	}
	c := *u
	return &c
}
