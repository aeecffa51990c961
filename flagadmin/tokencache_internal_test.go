package flagadmin

import (
	"strconv"
	"testing"
	"time"
)

func TestTokenCacheStaysBounded(t *testing.T) {
	now := time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)
	c := newTokenCache(time.Second, 3)
	p := AdminToken("a")
	put := func(hash string, at time.Time) {
		_, gen, _, _ := c.get(hash, at)
		c.put(hash, p, nil, at, gen)
	}
	put("old", now)
	put("b", now.Add(600*time.Millisecond))
	put("c", now.Add(600*time.Millisecond))
	// Full; at +1s "old" is stale and makes room, the others stay.
	put("d", now.Add(time.Second))
	for _, h := range []string{"b", "c", "d"} {
		if _, _, hit, _ := c.get(h, now.Add(time.Second)); !hit {
			t.Errorf("entry %s was evicted, want the stale entry evicted instead", h)
		}
	}
	if _, ok := c.entries["old"]; ok {
		t.Error("the stale entry is still held")
	}
	// Full of valid entries: adding more evicts others, never grows.
	for i := range 20 {
		put("n"+strconv.Itoa(i), now.Add(time.Second))
		if len(c.entries) > 3 {
			t.Fatalf("the cache holds %d entries, want at most 3", len(c.entries))
		}
	}
	if _, _, hit, _ := c.get("n19", now.Add(time.Second)); !hit {
		t.Error("the newest entry is missing")
	}
	// Replacing an entry of a full cache evicts nothing.
	before := len(c.entries)
	put("n19", now.Add(time.Second))
	if len(c.entries) != before {
		t.Errorf("replacing an entry changed the size from %d to %d", before, len(c.entries))
	}
}

func TestTokenCacheGeneration(t *testing.T) {
	now := time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)
	c := newTokenCache(time.Second, 10)
	_, gen, _, _ := c.get("h", now)
	c.forgetUser(7) // an invalidation while the lookup of h was in flight
	c.put("h", AsUser(User{ID: 1}), nil, now, gen)
	if _, _, hit, _ := c.get("h", now); hit {
		t.Error("a lookup begun before an invalidation was cached")
	}
	expires := now.Add(-time.Millisecond)
	_, gen, _, _ = c.get("h", now)
	c.put("h", AdminToken("x"), &expires, now, gen)
	if len(c.entries) != 0 {
		t.Error("an already expired token was cached")
	}
	var none *tokenCache
	none.forgetUser(1) // a disabled cache ignores invalidations
}
