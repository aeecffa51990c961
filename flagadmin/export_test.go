package flagadmin

// ResultCacheWaiters returns how many callers of s wait for a result its
// result cache is computing for another.
func ResultCacheWaiters(s *Service) int {
	c := s.results
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, f := range c.flights {
		n += f.waiters
	}
	return n
}

// ResultCacheSize returns how many entries s's result cache holds and the
// bytes they are counted as.
func ResultCacheSize(s *Service) (entries int, bytes int64) {
	c := s.results
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.size
}
