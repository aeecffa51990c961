package storecache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// readCounter counts the token lookups and version reads that reach the
// store.
type readCounter struct {
	flagadmin.VersionedStore
	lookups, versions atomic.Int64
}

func (s *readCounter) LookupToken(ctx context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	s.lookups.Add(1)
	return s.VersionedStore.LookupToken(ctx, hash)
}

func (s *readCounter) Version(ctx context.Context) (int64, error) {
	s.versions.Add(1)
	return s.VersionedStore.Version(ctx)
}

// variedTokens is how many tokens BenchmarkAuthenticateVaried cycles
// through: half admin tokens, half tokens of service accounts.
const variedTokens = 1000

// variedTokenWorld returns a seed with variedTokens tokens, and their
// secrets.
func variedTokenWorld() (string, []string) {
	type account struct {
		ID       int64  `json:"id"`
		Name     string `json:"name"`
		RootRole string `json:"rootRole"`
	}
	type token struct {
		Secret string `json:"secret"`
		Type   string `json:"type,omitempty"`
		UserID int64  `json:"userId,omitempty"`
		Name   string `json:"name"`
	}
	var world struct {
		ServiceAccounts []account `json:"serviceAccounts"`
		APITokens       []token   `json:"apiTokens"`
	}
	var secrets []string
	for id := int64(100); id < 150; id++ {
		world.ServiceAccounts = append(world.ServiceAccounts, account{ID: id, Name: fmt.Sprintf("bot %d", id), RootRole: "Editor"})
	}
	for i := range variedTokens {
		t := token{Name: fmt.Sprintf("t%d", i)}
		if i%2 == 0 {
			t.Secret, t.Type = fmt.Sprintf("*:*.bench-admin-%d", i), "admin"
		} else {
			t.Secret, t.UserID = fmt.Sprintf("user:bench-sa-%d", i), int64(100+(i/2)%50)
		}
		world.APITokens = append(world.APITokens, t)
		secrets = append(secrets, t.Secret)
	}
	b, _ := json.Marshal(world)
	return string(b), secrets
}

// BenchmarkAuthenticateVaried times Service.Authenticate as a request of
// the server makes it (in a request scope, storecache.WithScope), cycling
// through 1,000 tokens, on SQLite and PostgreSQL (skipped without a
// server), one caller at a time: without a token cache, and with flagadmin
// serve's default one, with and without the result cache; and requests
// that authenticate then search the events (a cached read, which reads the
// store's change counter once per request anyway), with and without the
// token cache. lookups/op counts Store.LookupToken calls, versions/op the
// reads of the change counter.
func BenchmarkAuthenticateVaried(b *testing.B) {
	engines := []struct {
		name string
		url  func(testing.TB) string
	}{
		{"sqlite", dbtest.SQLite},
		{"postgres", dbtest.Postgres},
	}
	world, secrets := variedTokenWorld()
	ctx := context.Background()
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			store, err := bunstore.Open(ctx, e.url(b))
			if err != nil {
				b.Fatalf("Open: %v", err)
			}
			b.Cleanup(func() { store.Close() })
			if err := flagadmin.NewService(store).LoadSeed(ctx, strings.NewReader(world)); err != nil {
				b.Fatalf("LoadSeed: %v", err)
			}
			for _, c := range []struct {
				name string
				opts storecache.Options
				// search: each request also searches the events (a
				// cached read, which reads the change counter too).
				search bool
			}{
				{"nocache", storecache.Options{}, false},
				{"tokencache", storecache.Options{TokenTTL: storecache.DefaultTokenTTL}, false},
				{"tokencache+resultcache", storecache.Options{TokenTTL: storecache.DefaultTokenTTL, ResultCacheSize: storecache.DefaultResultCacheSize}, false},
				{"search/resultcache", storecache.Options{ResultCacheSize: storecache.DefaultResultCacheSize}, true},
				{"search/tokencache+resultcache", storecache.Options{TokenTTL: storecache.DefaultTokenTTL, ResultCacheSize: storecache.DefaultResultCacheSize}, true},
			} {
				b.Run(c.name, func(b *testing.B) {
					counted := &readCounter{VersionedStore: store}
					svc := flagadmin.NewService(storecache.New(counted, c.opts))
					for _, s := range secrets { // warm the cache, as a busy server has it
						if _, err := svc.Authenticate(storecache.WithScope(ctx), s); err != nil {
							b.Fatalf("Authenticate: %v", err)
						}
					}
					counted.lookups.Store(0)
					counted.versions.Store(0)
					b.ReportAllocs()
					b.ResetTimer()
					for i := range b.N {
						ctx := storecache.WithScope(ctx)
						p, err := svc.Authenticate(ctx, secrets[i%len(secrets)])
						if err != nil {
							b.Fatalf("Authenticate: %v", err)
						}
						if c.search {
							if _, err := svc.SearchEvents(ctx, p, flagadmin.EventSearchParams{Limit: "10"}); err != nil {
								b.Fatalf("SearchEvents: %v", err)
							}
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(counted.lookups.Load())/float64(b.N), "lookups/op")
					b.ReportMetric(float64(counted.versions.Load())/float64(b.N), "versions/op")
				})
			}
		})
	}
}
