package storecache

import (
	"strconv"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestTokenCacheStaysBounded(t *testing.T) {
	now := time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)
	c := newTokenCache(time.Second, 3)
	l := tokenLookup{token: flagadmin.APIToken{Name: "a", Type: flagadmin.TokenAdmin}}
	put := func(hash string, at time.Time) {
		_, gen, _, _ := c.get(hash, at, 1)
		c.put(hash, l, at, gen, 1)
	}
	put("old", now)
	put("b", now.Add(600*time.Millisecond))
	put("c", now.Add(600*time.Millisecond))
	// Full; at +1s "old" is stale and makes room, the others stay.
	put("d", now.Add(time.Second))
	for _, h := range []string{"b", "c", "d"} {
		if _, _, hit, _ := c.get(h, now.Add(time.Second), 1); !hit {
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
	if _, _, hit, _ := c.get("n19", now.Add(time.Second), 1); !hit {
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
	_, gen, _, _ := c.get("h", now, 1)
	c.forgetUser(7) // an invalidation while the lookup of h was in flight
	c.put("h", tokenLookup{user: &flagadmin.User{ID: 1}}, now, gen, 1)
	if _, _, hit, _ := c.get("h", now, 1); hit {
		t.Error("a lookup begun before an invalidation was cached")
	}
	expires := now.Add(-time.Millisecond)
	_, gen, _, _ = c.get("h", now, 1)
	c.put("h", tokenLookup{token: flagadmin.APIToken{ExpiresAt: &expires}}, now, gen, 1)
	if len(c.entries) != 0 {
		t.Error("an already expired token was cached")
	}
	var none *tokenCache
	none.forgetUser(1) // a disabled cache ignores invalidations
}

// TestTokenCacheForgetsOwnedTokens: forgetting a user drops the lookups
// whose user is it and those of tokens it owns, and no other.
func TestTokenCacheForgetsOwnedTokens(t *testing.T) {
	now := time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)
	c := newTokenCache(time.Second, 10)
	seven, eight := int64(7), int64(8)
	for hash, l := range map[string]tokenLookup{
		"as 7":     {user: &flagadmin.User{ID: 7}},
		"owned":    {token: flagadmin.APIToken{UserID: &seven}},
		"as 8":     {token: flagadmin.APIToken{UserID: &eight}, user: &flagadmin.User{ID: 8}},
		"no owner": {token: flagadmin.APIToken{Type: flagadmin.TokenAdmin}},
	} {
		_, gen, _, _ := c.get(hash, now, 1)
		c.put(hash, l, now, gen, 1)
	}
	c.forgetUser(7)
	for hash, want := range map[string]bool{"as 7": false, "owned": false, "as 8": true, "no owner": true} {
		if _, _, hit, _ := c.get(hash, now, 1); hit != want {
			t.Errorf("%s: cached %v, want %v", hash, hit, want)
		}
	}
}

// TestTokenCacheVersion: an entry is used only under the store version it
// was looked up under; a full cache makes room from entries of other
// versions first.
func TestTokenCacheVersion(t *testing.T) {
	now := time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)
	c := newTokenCache(time.Second, 2)
	l := tokenLookup{token: flagadmin.APIToken{Name: "a", Type: flagadmin.TokenAdmin}}
	_, gen, _, _ := c.get("a", now, 5)
	c.put("a", l, now, gen, 5)
	if _, _, hit, _ := c.get("a", now, 5); !hit {
		t.Error("no hit under the version of the lookup")
	}
	if _, _, hit, stale := c.get("a", now, 6); hit || !stale {
		t.Errorf("under a newer version: hit %v, stale %v; want a stale entry", hit, stale)
	}
	_, gen, _, _ = c.get("b", now, 6)
	c.put("b", l, now, gen, 6)
	_, gen, _, _ = c.get("c", now, 6)
	c.put("c", l, now, gen, 6) // full: "a", of version 5, makes room
	if _, ok := c.entries["a"]; ok || len(c.entries) != 2 {
		t.Errorf("entries %v; want b and c, the entry of the old version dropped", c.entries)
	}
}
