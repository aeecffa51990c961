package storecache

import "github.com/flagadmin/flagadmin/flagadmin"

// ResultCacheWaiters returns how many callers of s (a *Store) wait for a
// result its result cache is computing, the one computing it included.
func ResultCacheWaiters(s flagadmin.Store) int {
	return int(s.(*Store).results.waiting.Load())
}

// ResultCacheSize returns how many entries s's (a *Store's) result cache
// holds and the bytes they are counted as.
func ResultCacheSize(s flagadmin.Store) (entries int, bytes int64) {
	c := s.(*Store).results
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.size
}
