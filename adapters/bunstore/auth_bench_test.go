package bunstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// authWorld is the small world BenchmarkAuthenticate authenticates against:
// an admin token and the token of a service account.
const authWorld = `{
  "serviceAccounts": [{"id": 10, "name": "CI bot", "username": "ci-bot", "rootRole": "Editor"}],
  "apiTokens": [
    {"secret": "*:*.bench-admin-secret", "type": "admin", "name": "admin"},
    {"secret": "user:bench-ci-secret", "userId": 10, "name": "ci"}
  ]
}`

// countingStore counts the token lookups that reach the store.
type countingStore struct {
	flagadmin.VersionedStore
	lookups atomic.Int64
}

func (s *countingStore) LookupToken(ctx context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	s.lookups.Add(1)
	return s.VersionedStore.LookupToken(ctx, hash)
}

// statementCounter is a bun query hook that counts the statements run.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *statementCounter) AfterQuery(context.Context, *bun.QueryEvent) { c.n.Add(1) }

// BenchmarkAuthenticate times Service.Authenticate, the first thing every
// API request does, for an admin token and a service account's token, on
// SQLite and PostgreSQL (skipped without a server), one caller at a time,
// without a token cache and with flagadmin serve's default one.
// lookups/op counts Store.LookupToken calls; stmts/op counts SQL
// statements (PostgreSQL, where reads and writes share one pool).
func BenchmarkAuthenticate(b *testing.B) {
	engines := []struct {
		name string
		url  func(testing.TB) string
	}{
		{"sqlite", dbtest.SQLite},
		{"postgres", dbtest.Postgres},
	}
	tokens := []struct{ name, secret string }{
		{"admin", "*:*.bench-admin-secret"},
		{"service-account", "user:bench-ci-secret"},
	}
	ctx := context.Background()
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			store, err := bunstore.Open(ctx, e.url(b))
			if err != nil {
				b.Fatalf("Open: %v", err)
			}
			b.Cleanup(func() { store.Close() })
			if err := flagadmin.NewService(store).LoadSeed(ctx, strings.NewReader(authWorld)); err != nil {
				b.Fatalf("LoadSeed: %v", err)
			}
			stmts := &statementCounter{}
			bunstore.DB(store).AddQueryHook(stmts)
			for _, cache := range []struct {
				name string
				ttl  time.Duration
			}{{"nocache", 0}, {"cache", storecache.DefaultTokenTTL}} {
				for _, tok := range tokens {
					b.Run(cache.name+"/"+tok.name, func(b *testing.B) {
						counted := &countingStore{VersionedStore: store}
						svc := flagadmin.NewService(storecache.New(counted, storecache.Options{TokenTTL: cache.ttl}))
						stmts.n.Store(0)
						b.ReportAllocs()
						b.ResetTimer()
						for range b.N {
							if _, err := svc.Authenticate(ctx, "Bearer "+tok.secret); err != nil {
								b.Fatalf("Authenticate: %v", err)
							}
						}
						b.StopTimer()
						b.ReportMetric(float64(counted.lookups.Load())/float64(b.N), "lookups/op")
						if e.name == "postgres" {
							b.ReportMetric(float64(stmts.n.Load())/float64(b.N), "stmts/op")
						}
					})
				}
			}
		})
	}
}
