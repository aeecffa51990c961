package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/danielgtaylor/huma/v2/humatest"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// countingStore counts the reads of a VersionedStore that the result
// cache saves.
type countingStore struct {
	flagadmin.VersionedStore
	searches atomic.Int64
	stats    atomic.Int64
}

func (s *countingStore) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	s.searches.Add(1)
	return s.VersionedStore.SearchEvents(ctx, q)
}

func (s *countingStore) ProjectStats(ctx context.Context, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	s.stats.Add(1)
	return s.VersionedStore.ProjectStats(ctx, q)
}

// uncachedStore hides every method but those of flagadmin.Store, which
// keeps the result cache off.
type uncachedStore struct{ flagadmin.Store }

// cachedEnvs returns a server whose Service caches results, with its
// store's counts, and one over the same seed that caches none.
func cachedEnvs(t *testing.T) (cached *testEnv, store *countingStore, plain *testEnv) {
	t.Helper()
	cached = newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store {
		store = &countingStore{VersionedStore: s.(flagadmin.VersionedStore)}
		return store
	})
	plain = newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store { return uncachedStore{s} })
	return cached, store, plain
}

// TestResultCacheResponses: with the result cache on, the searches and the
// project list answer the bytes and headers a server without it answers,
// the first time and from the cache.
func TestResultCacheResponses(t *testing.T) {
	ctx := context.Background()
	cached, store, plain := cachedEnvs(t)
	if err := cached.store.Write(ctx, &flagadmin.Batch{Events: trickyEvents()}); err != nil {
		t.Fatal(err)
	}
	if err := plain.store.Write(ctx, &flagadmin.Batch{Events: trickyEvents()}); err != nil {
		t.Fatal(err)
	}
	var reqs []request
	for _, token := range []string{adminToken, eveToken, olgaToken} {
		for _, accept := range []string{"", "json"} {
			header := map[string]string{"Accept": accept}
			reqs = append(reqs,
				request{method: http.MethodGet, path: "/api/admin/search/events", token: token, header: header},
				request{method: http.MethodGet, path: "/api/admin/search/events?type=IS_ANY_OF:feature-created,feature-updated&limit=2&offset=1", token: token, header: header},
				request{method: http.MethodGet, path: "/api/admin/search/events?project=IS:hidden", token: token, header: header},
				request{method: http.MethodPost, path: "/api/admin/events/search", token: token, body: `{}`, header: header},
				request{method: http.MethodPost, path: "/api/admin/events/search", token: token, body: `{"query":"checkout","limit":1}`, header: header},
				request{method: http.MethodGet, path: projectsPath, token: token, header: header},
				request{method: http.MethodGet, path: projectsPath + "?archived=true", token: token, header: header},
			)
		}
	}
	for _, r := range reqs {
		want := plain.do(t, r)
		if want.Code != http.StatusOK {
			t.Fatalf("%s %s: status %d %s", r.method, r.path, want.Code, want.Body)
		}
		reads := store.searches.Load() + store.stats.Load()
		for i := range 2 {
			got := cached.do(t, r)
			if got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Errorf("%s %s %s (%d): %d %s\nwant %d %s", r.token, r.method, r.path, i+1, got.Code, got.Body, want.Code, want.Body)
			}
			for _, h := range []string{"Content-Type", "Deprecation", "Link"} {
				if g, w := got.Header().Get(h), want.Header().Get(h); g != w {
					t.Errorf("%s %s (%d): %s %q, want %q", r.method, r.path, i+1, h, g, w)
				}
			}
		}
		if n := store.searches.Load() + store.stats.Load() - reads; n > 1 {
			t.Errorf("%s %s %s: %d store reads for two requests, want at most 1", r.token, r.method, r.path, n)
		}
	}
}

// TestResultCacheSeesWrites: writes through the API show in the next
// search and project list.
func TestResultCacheSeesWrites(t *testing.T) {
	cached, _, _ := cachedEnvs(t)
	search := request{method: http.MethodGet, path: "/api/admin/search/events?limit=1", token: adminToken}
	projects := request{method: http.MethodGet, path: projectsPath, token: adminToken}
	lastUpdated := func() string {
		var body struct {
			Projects []struct {
				ID            string `json:"id"`
				LastUpdatedAt string `json:"lastUpdatedAt"`
			} `json:"projects"`
		}
		if err := json.Unmarshal(cached.do(t, projects).Body.Bytes(), &body); err != nil || len(body.Projects) == 0 || body.Projects[0].ID != "default" {
			t.Fatalf("project list: %+v, %v", body, err)
		}
		return body.Projects[0].LastUpdatedAt
	}
	for range 2 {
		cached.do(t, search)
		lastUpdated()
	}
	wantEmpty200(t, cached.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"kept"}`}))
	if body := cached.do(t, search).Body.String(); !strings.Contains(body, `"type":"feature-completed"`) {
		t.Errorf("search after a completion: %s", body)
	}
	if got := lastUpdated(); got != testNow.Format(flagadmin.TimeLayout) {
		t.Errorf("lastUpdatedAt of default after a completion: %s, want %s", got, testNow.Format(flagadmin.TimeLayout))
	}
	wantEmpty200(t, cached.do(t, request{method: http.MethodDelete, path: serviceAccountURL("10"), token: adminToken}))
	if body := cached.do(t, search).Body.String(); !strings.Contains(body, `"type":"service-account-deleted"`) {
		t.Errorf("search after a deletion: %s", body)
	}
}

// TestGetProjectsOtherFormat: a negotiated format other than JSON gets the
// list through Huma's marshaling of the decoded entries.
func TestGetProjectsOtherFormat(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	p := flagadmin.AdminToken("admin")
	list, err := e.svc.ListProjects(t.Context(), p, flagadmin.ProjectListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A format that writes indented JSON, to tell it from the hand-written one.
	indented := huma.Format{
		Marshal: func(w io.Writer, v any) error {
			b, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				return err
			}
			_, err = w.Write(b)
			return err
		},
		Unmarshal: json.Unmarshal,
	}
	cfg := apiConfig("dev", newRegistry(), false)
	cfg.Formats = map[string]huma.Format{"application/json": huma.DefaultJSONFormat, "json": huma.DefaultJSONFormat, "text/indented": indented}
	e.server.api = humago.New(http.NewServeMux(), cfg)

	req := httptest.NewRequest(http.MethodGet, projectsPath, nil)
	req.Header.Set("Accept", "text/indented")
	w := httptest.NewRecorder()
	e.server.streamProjects(humatest.NewContext(nil, req, w), list)
	var want bytes.Buffer
	if err := indented.Marshal(&want, projectsSchema{Version: flagadmin.ProjectListVersion, Projects: list}); err != nil {
		t.Fatal(err)
	}
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/indented" || w.Body.String() != want.String() {
		t.Errorf("got %d %q %s\nwant text/indented %s", w.Code, w.Header().Get("Content-Type"), w.Body, want.String())
	}
}
