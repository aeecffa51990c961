package storecache_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/testclock"
)

// Secrets of testdata/seed-example.json.
const (
	cacheAdminSecret  = "*:*.admin-secret"
	cacheCISecret     = "user:ci-secret" // service account 10, expires 2030
	cacheEveSecret    = "user:eve-secret"
	cacheClientSecret = "default:development.client-secret"
)

// countingStore counts the token lookups that reach the store, and runs
// afterLookup (when set) after each.
type countingStore struct {
	flagadmin.VersionedStore
	lookups     atomic.Int64
	afterLookup func()
}

func (s *countingStore) LookupToken(ctx context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	s.lookups.Add(1)
	tok, u, err := s.VersionedStore.LookupToken(ctx, hash)
	if s.afterLookup != nil {
		s.afterLookup()
	}
	return tok, u, err
}

// cachedService returns a service over a Store with a token cache of ttl
// over a counting wrapper of the example world's store, and the clock both
// read.
func cachedService(t *testing.T, ttl time.Duration) (*flagadmin.Service, *countingStore, *testclock.Clock) {
	t.Helper()
	_, store := exampleService(t)
	clock := testclock.New(testNow)
	counted := &countingStore{VersionedStore: store}
	return tokenCachingService(counted, clock, ttl), counted, clock
}

// tokenCachingService returns a service over a Store over store with a
// token cache of ttl, both reading clock.
func tokenCachingService(store flagadmin.VersionedStore, clock *testclock.Clock, ttl time.Duration) *flagadmin.Service {
	cache := storecache.New(store, storecache.Options{TokenTTL: ttl, Clock: clock.Now})
	return flagadmin.NewService(cache, flagadmin.WithClock(clock.Now))
}

// wantLookups checks how many token lookups reached the store.
func wantLookups(t *testing.T, s *countingStore, want int64) {
	t.Helper()
	if got := s.lookups.Load(); got != want {
		t.Errorf("the store saw %d token lookups, want %d", got, want)
	}
}

// wantAuthRequired checks that err is ErrAuthenticationRequired mentioning msg.
func wantAuthRequired(t *testing.T, err error, msg string) {
	t.Helper()
	if !errors.Is(err, flagadmin.ErrAuthenticationRequired) || !strings.Contains(err.Error(), msg) {
		t.Errorf("got error %v, want ErrAuthenticationRequired mentioning %q", err, msg)
	}
}

func TestTokenCacheHitAvoidsStore(t *testing.T) {
	ctx := context.Background()
	svc, counted, _ := cachedService(t, 2*time.Second)
	uncached, _ := exampleService(t)
	for i, secret := range []string{cacheAdminSecret, cacheCISecret, cacheEveSecret, cacheClientSecret} {
		want, err := uncached.Authenticate(ctx, secret)
		if err != nil {
			t.Fatalf("uncached Authenticate(%s): %v", secret, err)
		}
		for range 3 {
			got, err := svc.Authenticate(ctx, "Bearer "+secret)
			if err != nil {
				t.Fatalf("Authenticate(%s): %v", secret, err)
			}
			if got.Kind != want.Kind || got.Name != want.Name || (got.User == nil) != (want.User == nil) ||
				(got.User != nil && *got.User != *want.User) {
				t.Errorf("Authenticate(%s) = %+v, want %+v", secret, got, want)
			}
		}
		wantLookups(t, counted, int64(i+1))
	}
}

func TestTokenCacheReturnsCopies(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := cachedService(t, 2*time.Second)
	first, err := svc.Authenticate(ctx, cacheEveSecret) // cached from the store's answer
	if err != nil {
		t.Fatal(err)
	}
	first.User.RootRole = flagadmin.RoleAdmin
	p, err := svc.Authenticate(ctx, cacheEveSecret) // answered from the cache
	if err != nil {
		t.Fatal(err)
	}
	p.User.RootRole = flagadmin.RoleAdmin
	again, err := svc.Authenticate(ctx, cacheEveSecret)
	if err != nil {
		t.Fatal(err)
	}
	if again.User.RootRole != flagadmin.RoleEditor || again.User == p.User {
		t.Errorf("a caller's change to its principal reached the cache: got root role %s, want Editor", again.User.RootRole)
	}
}

func TestTokenCacheEntryExpires(t *testing.T) {
	ctx := context.Background()
	svc, counted, clock := cachedService(t, 2*time.Second)
	steps := []struct {
		advance time.Duration
		lookups int64
	}{
		{0, 1},                      // first use: looked up
		{2*time.Second - 1, 1},      // just inside the TTL: cached
		{1 * time.Millisecond, 2},   // the TTL has passed: looked up again
		{1 * time.Second, 2},        // cached anew
		{1 * time.Second, 3},        // expired again
		{10 * time.Millisecond, 3},  // and cached anew
		{-5 * time.Millisecond, 3},  // a clock going back keeps it
		{time.Hour, 4},              // long after: looked up
		{time.Millisecond * 999, 4}, // cached
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		if _, err := svc.Authenticate(ctx, cacheAdminSecret); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := counted.lookups.Load(); got != s.lookups {
			t.Errorf("step %d (+%v): %d lookups, want %d", i, s.advance, got, s.lookups)
		}
	}
}

func TestTokenCacheHonoursExpiresAt(t *testing.T) {
	ctx := context.Background()
	svc, counted, clock := cachedService(t, 5*time.Second)
	expires := testNow.Add(500 * time.Millisecond)
	secret, _, err := svc.CreateAPIToken(ctx, flagadmin.System, flagadmin.NewAPIToken{Name: "short", Type: flagadmin.TokenAdmin, ExpiresAt: &expires})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("Authenticate before expiry: %v", err)
	}
	clock.Advance(499 * time.Millisecond)
	if _, err := svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("Authenticate 1 ms before expiry: %v", err)
	}
	wantLookups(t, counted, 1)
	clock.Advance(time.Millisecond) // now == expiresAt: expired, though well inside the TTL
	_, err = svc.Authenticate(ctx, secret)
	wantAuthRequired(t, err, "expired")
	_, err = svc.Authenticate(ctx, secret)
	wantAuthRequired(t, err, "expired")
	wantLookups(t, counted, 3)
}

func TestTokenCacheForgetsDeletedServiceAccount(t *testing.T) {
	ctx := context.Background()
	svc, counted, clock := cachedService(t, 2*time.Second)
	// Another replica over the same store, with its own cache.
	other := tokenCachingService(counted.VersionedStore, clock, 2*time.Second)
	for _, s := range []*flagadmin.Service{svc, other} {
		if _, err := s.Authenticate(ctx, cacheCISecret); err != nil {
			t.Fatalf("Authenticate before the delete: %v", err)
		}
		if _, err := s.Authenticate(ctx, cacheEveSecret); err != nil {
			t.Fatalf("Authenticate before the delete: %v", err)
		}
	}
	admin, err := svc.Authenticate(ctx, cacheAdminSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteServiceAccount(ctx, admin, "10"); err != nil {
		t.Fatalf("DeleteServiceAccount: %v", err)
	}
	before := counted.lookups.Load()
	_, err = svc.Authenticate(ctx, cacheCISecret)
	wantAuthRequired(t, err, "not valid")
	wantLookups(t, counted, before+1)
	// Other accounts' tokens keep working: looked up once more (the store
	// changed), then cached again.
	for range 2 {
		if _, err := svc.Authenticate(ctx, cacheEveSecret); err != nil {
			t.Errorf("Authenticate(eve) after deleting another account: %v", err)
		}
	}
	wantLookups(t, counted, before+2)

	// The other replica refuses the deleted account's token at once, well
	// within its TTL: its entry was made under an older version of the store.
	_, err = other.Authenticate(ctx, cacheCISecret)
	wantAuthRequired(t, err, "not valid")
}

// TestTokenCacheRevocationElsewhere: a token revoked through another
// process sharing the store (token revoke, another replica) is refused at
// once by a server whose cache holds it; while nothing is written, the
// cache answers without asking the store for the token.
func TestTokenCacheRevocationElsewhere(t *testing.T) {
	ctx := context.Background()
	svc, counted, _ := cachedService(t, time.Minute)
	// The other process writes to the store directly, without this cache.
	direct := flagadmin.NewService(counted.VersionedStore, flagadmin.WithClock(func() time.Time { return testNow }))
	for range 3 {
		if _, err := svc.Authenticate(storecache.WithScope(ctx), cacheEveSecret); err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
	}
	wantLookups(t, counted, 1)
	if _, err := direct.RevokeAPIToken(ctx, flagadmin.System, cacheEveSecret); err != nil {
		t.Fatalf("RevokeAPIToken: %v", err)
	}
	_, err := svc.Authenticate(storecache.WithScope(ctx), cacheEveSecret)
	wantAuthRequired(t, err, "not valid")
}

func TestTokenCacheSkipsLookupsRacingADelete(t *testing.T) {
	ctx := context.Background()
	svc, counted, _ := cachedService(t, time.Minute)
	admin, err := svc.Authenticate(ctx, cacheAdminSecret)
	if err != nil {
		t.Fatal(err)
	}
	// The lookup reads the account, then the account is deleted before the
	// authentication is cached.
	var once sync.Once
	counted.afterLookup = func() {
		once.Do(func() {
			if err := svc.DeleteServiceAccount(ctx, admin, "10"); err != nil {
				t.Errorf("DeleteServiceAccount: %v", err)
			}
		})
	}
	if _, err := svc.Authenticate(ctx, cacheCISecret); err != nil {
		t.Fatalf("Authenticate racing the delete: %v (it read the account before the delete)", err)
	}
	_, err = svc.Authenticate(ctx, cacheCISecret)
	wantAuthRequired(t, err, "not valid")
}

func TestTokenCacheDoesNotRememberFailures(t *testing.T) {
	ctx := context.Background()
	svc, counted, _ := cachedService(t, time.Minute)
	_, err := svc.Authenticate(ctx, "*:*.unknown")
	wantAuthRequired(t, err, "not valid")
	_, err = svc.Authenticate(ctx, "*:*.unknown")
	wantAuthRequired(t, err, "not valid")
	wantLookups(t, counted, 2)

	// A token created after a failed attempt with its secret works at once.
	store := counted.VersionedStore.(*memstore.Store)
	tok := flagadmin.APIToken{SecretHash: flagadmin.HashSecret("*:*.late"), Name: "late", Type: flagadmin.TokenAdmin, Project: "*", Environment: "*", CreatedAt: testNow}
	_, err = svc.Authenticate(ctx, "*:*.late")
	wantAuthRequired(t, err, "not valid")
	if err := store.Write(ctx, &flagadmin.Batch{Tokens: []flagadmin.APIToken{tok}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, "*:*.late"); err != nil {
		t.Errorf("Authenticate of a token created after a failure: %v", err)
	}
}

func TestTokenCacheDisabled(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ttl  time.Duration
	}{
		{"ttl 0", 0},
		{"negative ttl", -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, store := exampleService(t)
			counted := &countingStore{VersionedStore: store}
			svc := tokenCachingService(counted, testclock.New(testNow), tc.ttl)
			for range 3 {
				if _, err := svc.Authenticate(ctx, cacheAdminSecret); err != nil {
					t.Fatal(err)
				}
			}
			wantLookups(t, counted, 3)
		})
	}
}

// TestTokenCacheConcurrentUse runs authentications, clock steps and deletes
// at once; run it with -race.
func TestTokenCacheConcurrentUse(t *testing.T) {
	ctx := context.Background()
	svc, _, clock := cachedService(t, 50*time.Millisecond)
	admin, err := svc.Authenticate(ctx, cacheAdminSecret)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				secret := []string{cacheAdminSecret, cacheEveSecret, cacheClientSecret, cacheCISecret}[(g+i)%4]
				p, err := svc.Authenticate(ctx, secret)
				switch {
				case secret == cacheCISecret:
					// Deleted at some point: either outcome, but never a wrong principal.
					if err == nil && (p.User == nil || p.User.ID != 10) {
						t.Errorf("Authenticate(ci) = %+v, want service account 10", p)
					}
				case err != nil:
					t.Errorf("Authenticate(%s): %v", secret, err)
				case secret == cacheEveSecret && (p.User == nil || p.User.ID != 2):
					t.Errorf("Authenticate(eve) = %+v, want user 2", p)
				}
				if g == 0 && i%10 == 0 {
					clock.Advance(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := svc.DeleteServiceAccount(ctx, admin, "10"); err != nil {
			t.Errorf("DeleteServiceAccount: %v", err)
		}
	}()
	wg.Wait()
	_, err = svc.Authenticate(ctx, cacheCISecret)
	wantAuthRequired(t, err, "not valid")
}
