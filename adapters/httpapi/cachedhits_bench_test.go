package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// BenchmarkCachedHits serves, through the whole handler, answers the
// default caches of the flagadmin server hold, over a memstore of 10,000
// projects (the large benchmark world's project count): the project list
// for an admin token ("projects/admin") and for a user who is not a root
// admin ("projects/user"), a page of 50 events of each search and one of
// 1,000 events of the GET search; "/304" revalidates with the answer's
// ETag (If-None-Match) and gets 304. Every iteration after the first is a
// cache hit; the store is not written.
func BenchmarkCachedHits(b *testing.B) {
	w, err := worldgen.New(worldgen.Config{Events: 2000, Projects: 10_000, Features: 20_000, Users: 500, Groups: 40, Seed: 11})
	if err != nil {
		b.Fatal(err)
	}
	store := memstore.New()
	batch := w.Batch()
	batch.Events = w.FirstEvents(2000)
	if err := store.Write(context.Background(), batch); err != nil {
		b.Fatal(err)
	}
	user := ""
	byID := map[int64]flagadmin.User{}
	for _, u := range w.Users() {
		byID[u.ID] = u
	}
	for _, id := range w.TokenUsers() {
		if byID[id].RootRole != flagadmin.RoleAdmin {
			user, _ = w.UserSecret(id)
			break
		}
	}
	if user == "" {
		b.Fatal("no token of a user who is not a root admin in the world")
	}
	// The wiring of cmd/flagadmin: the store behind storecache, its body
	// cache in the API, each request in its own scope.
	cached := storecache.New(store, storecache.Options{ResultCacheSize: storecache.DefaultResultCacheSize, TokenTTL: storecache.DefaultTokenTTL})
	handler := storecache.Scope(New(flagadmin.NewService(cached), Config{BodyCache: cached.Bodies()}).Handler())
	for _, c := range []struct {
		name, token, method, target, body string
		// revalidate sends If-None-Match with the answer's ETag: a 304.
		revalidate bool
	}{
		{"projects/admin", w.AdminSecret(0), http.MethodGet, "/api/admin/projects", "", false},
		{"projects/admin/304", w.AdminSecret(0), http.MethodGet, "/api/admin/projects", "", true},
		{"projects/user", user, http.MethodGet, "/api/admin/projects", "", false},
		{"search/GET", w.AdminSecret(0), http.MethodGet, "/api/admin/search/events?limit=50&offset=100", "", false},
		{"search/GET/304", w.AdminSecret(0), http.MethodGet, "/api/admin/search/events?limit=50&offset=100", "", true},
		{"search/GET/1000", w.AdminSecret(0), http.MethodGet, "/api/admin/search/events?limit=1000", "", false},
		{"search/POST", w.AdminSecret(0), http.MethodPost, "/api/admin/events/search", `{"limit":50,"offset":100}`, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			serve := func(tag string) *httptest.ResponseRecorder {
				req := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
				req.Header.Set("Authorization", c.token)
				if c.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				if tag != "" {
					req.Header.Set("If-None-Match", tag)
				}
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				return rec
			}
			tag, want := "", http.StatusOK
			if c.revalidate {
				tag, want = serve("").Header().Get("ETag"), http.StatusNotModified
			}
			size := 0
			for b.Loop() {
				rec := serve(tag)
				if rec.Code != want {
					b.Fatalf("got %d %s", rec.Code, rec.Body)
				}
				size = rec.Body.Len()
			}
			b.SetBytes(int64(size))
		})
	}
}
