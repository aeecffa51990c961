package flagadmin

import (
	"sync"
	"time"
)

// DefaultTokenCacheTTL is how long the flagadmin server (cmd/flagadmin)
// trusts a successful authentication before it asks the store again, unless
// configured otherwise. A Service built without WithTokenCache caches nothing.
//
// The trade-off: with several replicas over one database, a token or service
// account deleted through one replica is refused there at once but may still
// be accepted by the others for up to this long. At a second the store sees
// at most about one token lookup per second per busy token and replica,
// instead of one per request.
const DefaultTokenCacheTTL = time.Second

// tokenCacheSize bounds how many authentications a token cache holds.
const tokenCacheSize = 10_000

// WithTokenCache makes Authenticate remember each successful authentication
// for ttl (keyed by the secret's hash), so that requests repeating a token
// skip the store's token lookup. An entry never outlives the token's
// expiresAt; failed authentications are not remembered, so a token created
// meanwhile works at once. DeleteServiceAccount forgets the account's
// entries in this Service, but other processes sharing the store keep
// accepting its tokens until their entries expire: choose ttl accordingly.
// A ttl of zero or less disables the cache (the default).
func WithTokenCache(ttl time.Duration) Option {
	return func(s *Service) {
		if ttl <= 0 {
			s.tokens = nil
			return
		}
		s.tokens = newTokenCache(ttl, tokenCacheSize)
	}
}

// tokenCache holds recent successful authentications. Entries expire lazily:
// a stale entry is never returned, and is dropped when its token is looked
// up again or when room is needed. It starts no goroutine.
type tokenCache struct {
	ttl time.Duration
	max int

	mu sync.RWMutex
	// gen changes on every invalidation, so that an authentication whose
	// store lookup began before it is not cached (it may have read what the
	// invalidation removed).
	gen     uint64
	entries map[string]tokenCacheEntry
}

// tokenCacheEntry is a cached principal, valid until until (exclusive).
type tokenCacheEntry struct {
	principal Principal
	until     time.Time
}

func newTokenCache(ttl time.Duration, max int) *tokenCache {
	return &tokenCache{ttl: ttl, max: max, entries: map[string]tokenCacheEntry{}}
}

// get returns the principal cached under hash if it is still valid at now
// (hit); stale reports an entry that is no longer valid. gen is the cache's
// generation, to pass to put after a store lookup.
func (c *tokenCache) get(hash string, now time.Time) (p Principal, gen uint64, hit, stale bool) {
	c.mu.RLock()
	e, found := c.entries[hash]
	gen = c.gen
	c.mu.RUnlock()
	if !found {
		return Principal{}, gen, false, false
	}
	if !now.Before(e.until) {
		return Principal{}, gen, false, true
	}
	return e.principal.clone(), gen, true, false
}

// put caches p under hash from now until now+ttl, or until expiresAt if that
// is earlier. Nothing is cached if the cache was invalidated since gen.
func (c *tokenCache) put(hash string, p Principal, expiresAt *time.Time, now time.Time, gen uint64) {
	until := now.Add(c.ttl)
	if expiresAt != nil && expiresAt.Before(until) {
		until = *expiresAt
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
		c.makeRoom(now)
	}
	c.entries[hash] = tokenCacheEntry{principal: p.clone(), until: until}
}

// makeRoom drops the stale entries and, if the cache is still full, as many
// others (in the map's random order) as it takes to add one. c.mu is held.
func (c *tokenCache) makeRoom(now time.Time) {
	for h, e := range c.entries {
		if !now.Before(e.until) {
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

// forgetUser forgets every authentication acting as the user userID and
// keeps lookups in flight from caching what they read. Safe on a nil cache.
func (c *tokenCache) forgetUser(userID int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, e := range c.entries {
		if u := e.principal.User; u != nil && u.ID == userID {
			delete(c.entries, h)
		}
	}
}

// clone returns p with its own copy of User, so that callers cannot change
// what a cache holds.
func (p Principal) clone() Principal {
	if p.User != nil {
		u := *p.User
		p.User = &u
	}
	return p
}
