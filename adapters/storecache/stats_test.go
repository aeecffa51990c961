package storecache_test

import (
	"context"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/testclock"
)

func TestStatsCountHitsAndMisses(t *testing.T) {
	ctx := context.Background()
	_, store := exampleService(t)
	clock := testclock.New(testNow)
	cache := storecache.New(store, storecache.Options{ResultCacheSize: 1 << 20, TokenTTL: time.Minute, Clock: clock.Now})
	svc := flagadmin.NewService(cache, flagadmin.WithClock(clock.Now))
	if got := cache.Stats(); got != (storecache.Stats{}) {
		t.Fatalf("a new store's stats: got %+v, want zero", got)
	}
	for range 3 {
		if _, err := svc.AuthenticateAdmin(ctx, cacheAdminSecret); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SearchEvents(ctx, flagadmin.AdminToken("t"), flagadmin.EventSearchParams{}); err != nil {
			t.Fatal(err)
		}
	}
	got := cache.Stats()
	want := storecache.Stats{TokenHits: 2, TokenMisses: 1, ResultHits: 2, ResultMisses: 1}
	if got != want {
		t.Errorf("after three identical requests: got %+v, want %+v", got, want)
	}
	off := storecache.New(store, storecache.Options{})
	if _, _, err := off.LookupToken(ctx, flagadmin.HashSecret(cacheAdminSecret)); err != nil {
		t.Fatal(err)
	}
	if got := off.Stats(); got != (storecache.Stats{}) {
		t.Errorf("caches off: got %+v, want zero", got)
	}
}
