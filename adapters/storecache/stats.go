package storecache

// Stats counts what the caches of a Store answered since it was made, for
// metrics. A cache that is off counts nothing.
type Stats struct {
	// ResultHits counts cached reads (event searches, project statistics,
	// roles, private projects, encoded bodies) answered without asking
	// the wrapped store: from the cache, or sharing a concurrent read of
	// the same result. ResultMisses counts those that asked it.
	ResultHits, ResultMisses uint64
	// TokenHits counts token lookups answered from the token cache;
	// TokenMisses those that asked the wrapped store.
	TokenHits, TokenMisses uint64
}

// Stats returns the counts of s's caches so far. It is safe to call
// concurrently with anything else.
func (s *Store) Stats() Stats {
	var st Stats
	if s.results != nil {
		st.ResultHits, st.ResultMisses = s.results.hits.Load(), s.results.misses.Load()
	}
	if s.tokens != nil {
		st.TokenHits, st.TokenMisses = s.tokens.hits.Load(), s.tokens.misses.Load()
	}
	return st
}
