package storecache_test

import (
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/storetest"
)

// TestContract runs the storage contract suite on a Store with both caches
// (the server's defaults) over the in-memory store: caching changes no
// answer.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) flagadmin.Store {
		return storecache.New(memstore.New(), storecache.Options{
			ResultCacheSize: storecache.DefaultResultCacheSize,
			TokenTTL:        storecache.DefaultTokenTTL,
		})
	})
}
