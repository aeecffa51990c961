package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// countingBodies counts the builds of a BodyCache, the requests it did
// not answer from its store.
type countingBodies struct {
	BodyCache
	builds atomic.Int64
}

func (c *countingBodies) Load(ctx context.Context, key string, build func(context.Context) ([]byte, error)) ([]byte, error) {
	return c.BodyCache.Load(ctx, key, func(ctx context.Context) ([]byte, error) {
		c.builds.Add(1)
		return build(ctx)
	})
}

// bodyCacheEnvs returns a server whose project lists go through its body
// cache, with the cache's build count, and a server over the same seed
// without a cache, both also holding a project user 1 (ada, a root admin)
// favorited and a second admin token.
func bodyCacheEnvs(t *testing.T) (cached *testEnv, bodies *countingBodies, plain *testEnv) {
	t.Helper()
	cached = newEnv(t, Config{}, nil)
	if cached.server.bodies == nil {
		t.Fatal("the test server has no body cache")
	}
	bodies = &countingBodies{BodyCache: cached.server.bodies}
	cached.server.bodies = bodies
	plain = newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store { return uncachedStore{s} })
	if plain.server.bodies != nil {
		t.Fatal("the uncached test server has a body cache")
	}
	for _, e := range []*testEnv{cached, plain} {
		if err := e.store.Write(t.Context(), &flagadmin.Batch{
			Projects: []flagadmin.Project{{ID: "fav", Name: "Fav", Mode: flagadmin.ModeOpen, FavoritedBy: []int64{1}}},
			Tokens:   []flagadmin.APIToken{{SecretHash: flagadmin.HashSecret(secondAdminToken), Name: "ci", Type: flagadmin.TokenAdmin}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	return cached, bodies, plain
}

const secondAdminToken = "*:*.second-admin-secret"

// TestProjectListBodyCache: each caller's project list is built once,
// then answered from the body cache, byte for byte as a server without a
// cache answers it; callers who see another list (visibility, favorites)
// never get each other's, every admin token shares one; and a write
// invalidates every list.
func TestProjectListBodyCache(t *testing.T) {
	cached, bodies, plain := bodyCacheEnvs(t)
	// In this order, a key that ignored who is asking would answer ada
	// (a root admin like the token) without her favorite, and vic (who
	// does not see the private project) with it, and olga (who does) without.
	callers := []string{adminToken, adaToken, vicToken, olgaToken, eveToken, ciToken}
	paths := []string{projectsPath, projectsPath + "?archived=true"}
	check := func(what string, token, path string, wantBuild bool) {
		t.Helper()
		r := request{method: http.MethodGet, path: path, token: token}
		want := plain.do(t, r)
		if want.Code != http.StatusOK {
			t.Fatalf("%s %s: status %d %s", token, path, want.Code, want.Body)
		}
		before := bodies.builds.Load()
		got := cached.do(t, r)
		if got.Code != want.Code || got.Body.String() != want.Body.String() {
			t.Errorf("%s: %s %s: %d %s\nwant %d %s", what, token, path, got.Code, got.Body, want.Code, want.Body)
		}
		if g, w := got.Header().Get("Content-Type"), want.Header().Get("Content-Type"); g != w {
			t.Errorf("%s: %s %s: Content-Type %q, want %q", what, token, path, g, w)
		}
		if built := bodies.builds.Load() > before; built != wantBuild {
			t.Errorf("%s: %s %s: built %v, want %v", what, token, path, built, wantBuild)
		}
	}
	for _, path := range paths {
		for _, token := range callers {
			check("first", token, path, true)
		}
		// Another admin token sees the admin token's list.
		check("another admin token", secondAdminToken, path, false)
		for _, token := range callers {
			check("again", token, path, false)
		}
	}
	if !strings.Contains(plain.do(t, request{method: http.MethodGet, path: projectsPath, token: adaToken}).Body.String(), `"favorite":true`) {
		t.Fatal("ada has no favorite: the test checks nothing about favorites")
	}

	// A write: every list is built again, with it.
	for _, e := range []*testEnv{cached, plain} {
		if err := e.store.Write(t.Context(), &flagadmin.Batch{Projects: []flagadmin.Project{{ID: "late", Name: "Late", Mode: flagadmin.ModeOpen}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, token := range callers {
		check("after a write", token, projectsPath, true)
		if body := cached.do(t, request{method: http.MethodGet, path: projectsPath, token: token}).Body.String(); !strings.Contains(body, `"id":"late"`) {
			t.Errorf("after a write: %s: the list lacks the new project: %s", token, body)
		}
	}
}

// TestProjectListBodyCacheErrors: refused callers and failed builds are
// answered as without a cache, and a failure is not kept.
func TestProjectListBodyCacheErrors(t *testing.T) {
	cached, bodies, plain := bodyCacheEnvs(t)
	for _, r := range []request{
		{method: http.MethodGet, path: projectsPath, token: clientToken},
		{method: http.MethodGet, path: projectsPath + "?archived=maybe", token: adminToken},
	} {
		want, got := plain.do(t, r), cached.do(t, r)
		// The bodies differ in their error ids only.
		errorID := regexp.MustCompile(`"id":"[^"]*"`)
		if g, w := errorID.ReplaceAllString(got.Body.String(), ""), errorID.ReplaceAllString(want.Body.String(), ""); got.Code != want.Code || want.Code == http.StatusOK || g != w {
			t.Errorf("%s %s: %d %s\nwant %d %s", r.token, r.path, got.Code, got.Body, want.Code, want.Body)
		}
	}
	if n := bodies.builds.Load(); n != 0 {
		t.Errorf("%d builds for refused requests, want 0", n)
	}

	var flaky *flakyStatsStore
	failing := newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store {
		flaky = &flakyStatsStore{VersionedStore: s.(flagadmin.VersionedStore)}
		return flaky
	})
	if failing.server.bodies == nil {
		t.Fatal("the test server has no body cache")
	}
	r := request{method: http.MethodGet, path: projectsPath, token: adminToken}
	flaky.fail.Store(true)
	if got := failing.do(t, r); got.Code != http.StatusServiceUnavailable {
		t.Errorf("over a failing store: %d %s, want 503", got.Code, got.Body)
	}
	if got := failing.do(t, r); got.Code != http.StatusOK || !strings.Contains(got.Body.String(), `"id":"default"`) {
		t.Errorf("after the failure: %d %s, want the list", got.Code, got.Body)
	}
}

// flakyStatsStore fails the next ProjectStats when fail is set.
type flakyStatsStore struct {
	flagadmin.VersionedStore
	fail atomic.Bool
}

func (s *flakyStatsStore) ProjectStats(ctx context.Context, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	if s.fail.Swap(false) {
		return nil, unavailableErr
	}
	return s.VersionedStore.ProjectStats(ctx, q)
}

// writesRecorder records the size of each write of a response.
type writesRecorder struct {
	*httptest.ResponseRecorder
	writes []int
}

func (w *writesRecorder) Write(b []byte) (int, error) {
	w.writes = append(w.writes, len(b))
	return w.ResponseRecorder.Write(b)
}

// TestProjectListStreamsWithoutBodyCache: without a body cache the list is
// written in pieces of about projectsChunk bytes as it is encoded, never
// held whole; with one, the stored body is written as it is.
func TestProjectListStreamsWithoutBodyCache(t *testing.T) {
	b := &flagadmin.Batch{}
	for i := range 400 {
		b.Projects = append(b.Projects, flagadmin.Project{ID: fmt.Sprintf("bulk-%03d", i), Name: "Bulk", Description: strings.Repeat("a long description ", 10)})
	}
	for _, tc := range []struct {
		name     string
		wrap     func(flagadmin.Store) flagadmin.Store
		streamed bool
	}{
		{"no body cache", func(s flagadmin.Store) flagadmin.Store { return uncachedStore{s} }, true},
		{"body cache", nil, false},
	} {
		e := newEnv(t, Config{}, tc.wrap)
		if (e.server.bodies == nil) != tc.streamed {
			t.Fatalf("%s: body cache %v", tc.name, e.server.bodies)
		}
		if err := e.store.Write(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, projectsPath, nil)
		req.Header.Set("Authorization", adminToken)
		w := &writesRecorder{ResponseRecorder: httptest.NewRecorder()}
		e.handler.ServeHTTP(w, req)
		if w.Code != http.StatusOK || w.Body.Len() < 4*projectsChunk {
			t.Fatalf("%s: %d, %d bytes; want 200 and a list of several pieces", tc.name, w.Code, w.Body.Len())
		}
		largest := 0
		for _, n := range w.writes {
			largest = max(largest, n)
		}
		if tc.streamed && (len(w.writes) < 4 || largest > projectsChunk+4<<10) {
			t.Errorf("%s: %d writes, the largest %d bytes; want pieces of about %d", tc.name, len(w.writes), largest, projectsChunk)
		}
		if !tc.streamed && len(w.writes) != 1 {
			t.Errorf("%s: %d writes, want the stored body in one", tc.name, len(w.writes))
		}
	}
}

// TestProjectListKey: keys differ exactly where ListProjects's answer may.
func TestProjectListKey(t *testing.T) {
	// Every field of ProjectListOptions must be in the key: adding one
	// means adding it there, then here.
	if n := reflect.TypeFor[flagadmin.ProjectListOptions]().NumField(); n != 2 {
		t.Fatalf("ProjectListOptions has %d fields; projectListKey knows of 2 (Archived, Only)", n)
	}
	ada := flagadmin.User{ID: 1, RootRole: flagadmin.RoleAdmin}
	adaDemoted := flagadmin.User{ID: 1, RootRole: flagadmin.RoleViewer}
	vic := flagadmin.User{ID: 3, RootRole: flagadmin.RoleViewer}
	active, archived := flagadmin.ProjectListOptions{}, flagadmin.ProjectListOptions{Archived: true}
	onlyDefault := flagadmin.ProjectListOptions{Only: "default"}
	same := [][2]struct {
		p    flagadmin.Principal
		opts flagadmin.ProjectListOptions
	}{
		{{flagadmin.AdminToken("admin"), active}, {flagadmin.AdminToken("ci"), active}},
		{{flagadmin.AdminToken("admin"), active}, {flagadmin.System, active}},
		{{flagadmin.AsUser(ada), archived}, {flagadmin.AsUser(flagadmin.User{ID: 1, RootRole: flagadmin.RoleAdmin, Name: "renamed"}), archived}},
	}
	for _, pair := range same {
		a, okA := projectListKey(pair[0].p, pair[0].opts)
		b, okB := projectListKey(pair[1].p, pair[1].opts)
		if !okA || !okB || a != b {
			t.Errorf("keys %q (%v) and %q (%v), want one key", a, okA, b, okB)
		}
	}
	distinct := map[string]string{}
	for name, c := range map[string]struct {
		p    flagadmin.Principal
		opts flagadmin.ProjectListOptions
	}{
		"admin token":          {flagadmin.AdminToken("admin"), active},
		"admin token archived": {flagadmin.AdminToken("admin"), archived},
		"admin token default":  {flagadmin.AdminToken("admin"), onlyDefault},
		"ada":                  {flagadmin.AsUser(ada), active},
		"ada archived":         {flagadmin.AsUser(ada), archived},
		"ada no longer admin":  {flagadmin.AsUser(adaDemoted), active},
		"vic":                  {flagadmin.AsUser(vic), active},
		"vic default":          {flagadmin.AsUser(vic), onlyDefault},
	} {
		key, ok := projectListKey(c.p, c.opts)
		if !ok {
			t.Errorf("%s: no key", name)
			continue
		}
		if other, dup := distinct[key]; dup {
			t.Errorf("%s and %s share the key %q", name, other, key)
		}
		distinct[key] = name
	}
	for _, p := range []flagadmin.Principal{{Kind: flagadmin.PrincipalUser}, {}} {
		if key, ok := projectListKey(p, active); ok {
			t.Errorf("principal %+v: key %q, want none (ListProjects refuses it)", p, key)
		}
	}
}
