package storecache_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/testclock"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// versionedStore wraps a store, counting the calls that reach it and
// failing or holding them on demand.
type versionedStore struct {
	flagadmin.VersionedStore

	mu    sync.Mutex
	calls map[string]int
	// fail, when it holds an error for a method, makes its next call fail.
	fail map[string]error
	// searchEntered and searchRelease, when set, make SearchEvents signal
	// that it began and wait to be released.
	searchEntered chan struct{}
	searchRelease chan struct{}
}

func newVersionedStore(inner flagadmin.VersionedStore) *versionedStore {
	return &versionedStore{VersionedStore: inner, calls: map[string]int{}, fail: map[string]error{}}
}

// call counts a call of method and returns the failure set for it, if any.
func (s *versionedStore) call(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	err := s.fail[method]
	delete(s.fail, method)
	return err
}

// failNext makes the next call of method fail with err.
func (s *versionedStore) failNext(method string, err error) {
	s.mu.Lock()
	s.fail[method] = err
	s.mu.Unlock()
}

// counts returns the calls so far, by method.
func (s *versionedStore) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

func (s *versionedStore) Version(ctx context.Context) (int64, error) {
	if err := s.call("Version"); err != nil {
		return 0, err
	}
	return s.VersionedStore.Version(ctx)
}

func (s *versionedStore) OldestFreshFeatures(ctx context.Context, notBefore map[flagadmin.FeatureType]time.Time) (map[flagadmin.FeatureType]time.Time, error) {
	if err := s.call("OldestFreshFeatures"); err != nil {
		return nil, err
	}
	return s.VersionedStore.OldestFreshFeatures(ctx, notBefore)
}

func (s *versionedStore) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	if err := s.call("SearchEvents"); err != nil {
		return flagadmin.EventPage{}, err
	}
	if s.searchEntered != nil {
		s.searchEntered <- struct{}{}
		<-s.searchRelease
	}
	return s.VersionedStore.SearchEvents(ctx, q)
}

func (s *versionedStore) ProjectStats(ctx context.Context, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	if err := s.call("ProjectStats"); err != nil {
		return nil, err
	}
	return s.VersionedStore.ProjectStats(ctx, q)
}

func (s *versionedStore) ProjectAccess(ctx context.Context, userID int64) (flagadmin.ProjectAccess, error) {
	if err := s.call("ProjectAccess"); err != nil {
		return flagadmin.ProjectAccess{}, err
	}
	return s.VersionedStore.ProjectAccess(ctx, userID)
}

// resultWorld is a store loaded with world through a versionedStore.
type resultWorld struct {
	store *versionedStore
	clock *testclock.Clock
	// ref is a Service without a result cache over the same data, whose
	// calls are not counted.
	ref *flagadmin.Service
	// cache is the Store of the latest service (service).
	cache *storecache.Store
}

func newResultWorld(t *testing.T, world string, at time.Time) *resultWorld {
	t.Helper()
	st := newVersionedStore(memstore.New())
	clock := testclock.New(at)
	if err := flagadmin.NewService(st).LoadSeed(context.Background(), strings.NewReader(world)); err != nil {
		t.Fatalf("LoadSeed: %v", err)
	}
	ref := flagadmin.NewService(st.VersionedStore, flagadmin.WithClock(clock.Now))
	return &resultWorld{store: st, clock: clock, ref: ref}
}

// service returns a Service over a Store with a result cache of maxBytes
// over the world's store.
func (w *resultWorld) service(maxBytes int64) *flagadmin.Service {
	w.cache = storecache.New(w.store, storecache.Options{ResultCacheSize: maxBytes, Clock: w.clock.Now})
	return flagadmin.NewService(w.cache, flagadmin.WithClock(w.clock.Now))
}

// req returns the context of one request: a scope (storecache.WithScope),
// as the server gives each request.
func req(ctx context.Context) context.Context { return storecache.WithScope(ctx) }

// projectListJSON is the project list of p, in one request, as JSON.
func projectListJSON(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal, opts flagadmin.ProjectListOptions) ([]byte, error) {
	list, err := svc.ListProjects(req(ctx), p, opts)
	if err != nil {
		return nil, err
	}
	return json.Marshal(list)
}

// wantCalls checks that the store calls made since before are exactly want.
func (w *resultWorld) wantCalls(t *testing.T, what string, before map[string]int, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for m, n := range w.store.counts() {
		if d := n - before[m]; d != 0 {
			got[m] = d
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s: store calls %v, want %v", what, got, want)
	}
}

// pageJSON is the page as encoding/json writes it.
func pageJSON(t *testing.T, p flagadmin.EventPage) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listJSON is the JSON array of the list's entries.
func listJSON(list []flagadmin.ProjectListEntry) string {
	b, err := json.Marshal(list)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// search runs one of the two searches: a query string, or with a "POST "
// prefix the deprecated search with that query.
type search struct {
	name   string
	params flagadmin.EventSearchParams
	req    *flagadmin.DeprecatedSearchRequest
}

func (s search) run(ctx context.Context, svc *flagadmin.Service, p flagadmin.Principal) (flagadmin.EventPage, error) {
	ctx = req(ctx)
	if s.req != nil {
		return svc.DeprecatedSearchEvents(req(ctx), p, *s.req)
	}
	return svc.SearchEvents(req(ctx), p, s.params)
}

var cacheSearches = []search{
	{name: "no filter", params: flagadmin.EventSearchParams{}},
	{name: "type", params: flagadmin.EventSearchParams{Type: "IS:feature-created"}},
	{name: "paged", params: flagadmin.EventSearchParams{Limit: "2", Offset: "1"}},
	{name: "no match", params: flagadmin.EventSearchParams{Type: "IS:user-deleted"}},
	{name: "deprecated empty", req: &flagadmin.DeprecatedSearchRequest{}},
	{name: "deprecated query", req: &flagadmin.DeprecatedSearchRequest{Query: ptr("USER-CREATED")}},
}

// TestResultCacheHits: a repeated search or project list costs one Version
// reading and nothing else, and answers the same page, in the same bytes,
// as a Service without a cache.
func TestResultCacheHits(t *testing.T) {
	ctx := context.Background()
	w := newResultWorld(t, serviceWorld, testNow)
	svc := w.service(1 << 20)
	for _, who := range []struct {
		name string
		p    flagadmin.Principal
	}{{"admin", flagadmin.AdminToken("admin")}, {"Editor", userPrincipal(t, w.store, 2)}, {"member", userPrincipal(t, w.store, 4)}} {
		for _, s := range cacheSearches {
			t.Run(who.name+"/"+s.name, func(t *testing.T) {
				want, err := s.run(ctx, w.ref, who.p)
				if err != nil {
					t.Fatal(err)
				}
				first, err := s.run(ctx, svc, who.p)
				if err != nil {
					t.Fatal(err)
				}
				before := w.store.counts()
				second, err := s.run(ctx, svc, who.p)
				if err != nil {
					t.Fatal(err)
				}
				w.wantCalls(t, "repeated search", before, map[string]int{"Version": 1})
				for i, got := range []flagadmin.EventPage{first, second} {
					if eventIDs(got.Events) != eventIDs(want.Events) || got.Total != want.Total || got.Events == nil {
						t.Errorf("search %d: events %q total %d, want %q total %d", i+1, eventIDs(got.Events), got.Total, eventIDs(want.Events), want.Total)
					}
					if g, w := pageJSON(t, got), pageJSON(t, want); g != w {
						t.Errorf("search %d: JSON\n%s\nwant\n%s", i+1, g, w)
					}
				}
			})
		}
		t.Run(who.name+"/projects", func(t *testing.T) {
			for _, archived := range []bool{false, true} {
				opts := flagadmin.ProjectListOptions{Archived: archived}
				list, err := w.ref.ListProjects(ctx, who.p, opts)
				if err != nil {
					t.Fatal(err)
				}
				first, err := projectListJSON(ctx, svc, who.p, opts)
				if err != nil {
					t.Fatal(err)
				}
				before := w.store.counts()
				second, err := projectListJSON(ctx, svc, who.p, opts)
				if err != nil {
					t.Fatal(err)
				}
				w.wantCalls(t, "repeated project list", before, map[string]int{"Version": 1})
				want := listJSON(list)
				if string(first) != want || string(second) != want {
					t.Errorf("archived=%v: project list\n%s\n%s\nwant\n%s", archived, first, second, want)
				}
			}
		})
	}
}

// TestResultCacheWithoutCache: with the cache off, the project list is the
// list ListProjects returns, and Version is never read.
func TestResultCacheWithoutCache(t *testing.T) {
	ctx := context.Background()
	w := newResultWorld(t, serviceWorld, testNow)
	for _, tc := range []struct {
		name string
		svc  *flagadmin.Service
	}{
		{"size 0", w.service(0)},
		{"negative size", w.service(-1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := w.store.counts()
			for range 2 {
				if _, err := tc.svc.SearchEvents(req(ctx), flagadmin.AdminToken("admin"), flagadmin.EventSearchParams{}); err != nil {
					t.Fatal(err)
				}
				list, err := projectListJSON(ctx, tc.svc, flagadmin.AdminToken("admin"), flagadmin.ProjectListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				want, err := w.ref.ListProjects(ctx, flagadmin.AdminToken("admin"), flagadmin.ProjectListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if string(list) != listJSON(want) {
					t.Errorf("project list\n%s\nwant\n%s", list, listJSON(want))
				}
			}
			w.wantCalls(t, "two searches and lists", before, map[string]int{"SearchEvents": 2, "ProjectStats": 2})
		})
	}
	// The empty list is an empty array.
	empty, err := projectListJSON(ctx, w.ref, userPrincipal(t, w.store, 2), flagadmin.ProjectListOptions{Archived: true})
	if err != nil || string(empty) != "[]" {
		t.Errorf("empty list: %q, %v; want []", empty, err)
	}
}

// TestResultCacheWritesInvalidate: after a write through the Service or
// straight through the store, the next search and project list are
// computed again and show it.
func TestResultCacheWritesInvalidate(t *testing.T) {
	ctx := context.Background()
	admin := flagadmin.AdminToken("admin")
	w := newResultWorld(t, serviceWorld, testNow)
	svc := w.service(1 << 20)
	writes := []struct {
		name      string
		write     func() error
		wantFirst string
	}{
		{"lifecycle completion", func() error {
			return svc.CompleteLifecycle(req(ctx), admin, "open", "f-open", flagadmin.CompleteRequest{Status: flagadmin.StatusKept})
		}, "feature-completed"},
		{"service account deletion", func() error { return svc.DeleteServiceAccount(req(ctx), admin, "10") }, "service-account-deleted"},
		{"store.Write", func() error {
			return w.store.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{{Type: "feature-updated", CreatedBy: "sql", CreatedAt: testNow, Project: ptr("open")}}})
		}, "feature-updated"},
	}
	for _, wr := range writes {
		t.Run(wr.name, func(t *testing.T) {
			for range 2 { // the second one from the cache
				if _, err := svc.SearchEvents(req(ctx), admin, flagadmin.EventSearchParams{}); err != nil {
					t.Fatal(err)
				}
				if _, err := projectListJSON(ctx, svc, admin, flagadmin.ProjectListOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := wr.write(); err != nil {
				t.Fatal(err)
			}
			before := w.store.counts()
			page, err := svc.SearchEvents(req(ctx), admin, flagadmin.EventSearchParams{})
			if err != nil {
				t.Fatal(err)
			}
			list, err := projectListJSON(ctx, svc, admin, flagadmin.ProjectListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w.wantCalls(t, "after the write", before, map[string]int{"Version": 2, "SearchEvents": 1, "ProjectStats": 1, "OldestFreshFeatures": 1})
			want, err := w.ref.SearchEvents(ctx, admin, flagadmin.EventSearchParams{})
			if err != nil {
				t.Fatal(err)
			}
			if page.Events[0].Type != wr.wantFirst || pageJSON(t, page) != pageJSON(t, want) {
				t.Errorf("page after the write: %s\nwant one starting with %s: %s", pageJSON(t, page), wr.wantFirst, pageJSON(t, want))
			}
			wantList, err := w.ref.ListProjects(ctx, admin, flagadmin.ProjectListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if string(list) != listJSON(wantList) {
				t.Errorf("list after the write:\n%s\nwant\n%s", list, listJSON(wantList))
			}
		})
	}
}

// TestResultCacheVisibility: callers who see different projects never
// share a page or a list, and a change of membership is seen at once.
func TestResultCacheVisibility(t *testing.T) {
	ctx := context.Background()
	w := newResultWorld(t, serviceWorld, testNow)
	svc := w.service(1 << 20)
	admin, editor, member := flagadmin.AdminToken("admin"), userPrincipal(t, w.store, 2), userPrincipal(t, w.store, 4)
	check := func(t *testing.T, p flagadmin.Principal, params flagadmin.EventSearchParams, wantIDs, wantProjects string) {
		t.Helper()
		for range 2 {
			page, err := svc.SearchEvents(req(ctx), p, params)
			if err != nil {
				t.Fatal(err)
			}
			if got := eventIDs(page.Events); got != wantIDs {
				t.Errorf("events %q, want %q", got, wantIDs)
			}
			list, err := projectListJSON(ctx, svc, p, flagadmin.ProjectListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, part := range strings.Split(string(list), `{"id":"`)[1:] {
				id, _, _ := strings.Cut(part, `"`)
				ids = append(ids, id)
			}
			if got := strings.Join(ids, " "); got != wantProjects {
				t.Errorf("projects %q, want %q", got, wantProjects)
			}
		}
	}
	check(t, admin, flagadmin.EventSearchParams{}, "4 3 2 1", "open priv prot")
	check(t, editor, flagadmin.EventSearchParams{}, "2 1", "open prot")
	check(t, member, flagadmin.EventSearchParams{}, "3 2 1", "open priv prot")
	check(t, editor, flagadmin.EventSearchParams{Project: "IS:priv"}, "", "open prot")
	check(t, admin, flagadmin.EventSearchParams{}, "4 3 2 1", "open priv prot")

	before := w.store.counts()
	check(t, editor, flagadmin.EventSearchParams{}, "2 1", "open prot")
	w.wantCalls(t, "the Editor's cached reads", before, map[string]int{"Version": 4})

	// The Editor joins the private project: a write like any other.
	uid := int64(2)
	if err := w.store.Write(ctx, &flagadmin.Batch{ProjectMembers: []flagadmin.ProjectMember{{ProjectID: "priv",
		ProjectMembership: flagadmin.ProjectMembership{UserID: &uid, Role: flagadmin.ProjectRoleMember}}}}); err != nil {
		t.Fatal(err)
	}
	check(t, editor, flagadmin.EventSearchParams{}, "3 2 1", "open priv prot")
}

// expiryWorld is the world of the expiry tests: a release feature and an
// operational one that become potentially stale at known times
// (expiryTimes), a kill switch that never does, and a stale feature.
const expiryWorld = `{
  "projects": [{"id": "p", "mode": "open"}],
  "features": [
    {"name": "rel", "project": "p", "type": "release", "createdAt": "2025-01-01T00:00:00Z"},
    {"name": "ops", "project": "p", "type": "operational", "createdAt": "2025-02-05T00:00:00Z"},
    {"name": "kill", "project": "p", "type": "kill-switch", "createdAt": "2020-01-01T00:00:00Z"},
    {"name": "old", "project": "p", "type": "release", "createdAt": "2020-01-01T00:00:00Z", "stale": true}
  ]
}`

// expiryTimes returns when the features rel and ops of expiryWorld become
// potentially stale (40 days after creation for a release, 7 for an
// operational feature).
func expiryTimes() (relStale, opsStale time.Time) {
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return created.Add(40 * 24 * time.Hour), created.Add(35 * 24 * time.Hour).Add(7 * 24 * time.Hour)
}

// TestResultCacheProjectListExpiry: a cached project list is used until,
// and not from, the millisecond at which a feature it counts as fresh
// becomes potentially stale; and not at an earlier time than it was
// computed at.
func TestResultCacheProjectListExpiry(t *testing.T) {
	ctx := context.Background()
	relStale, opsStale := expiryTimes()
	w := newResultWorld(t, expiryWorld, relStale)
	svc := w.service(1 << 20)
	steps := []struct {
		name       string
		at         time.Time
		wantHealth string // of 4 features, 1 stale (kill never potentially stale)
		computed   bool
	}{
		{"at rel's lifetime", relStale, `"health":75`, true},
		{"later in the same millisecond", relStale.Add(999 * time.Microsecond), `"health":75`, false},
		{"the next millisecond", relStale.Add(time.Millisecond), `"health":50`, true},
		{"at ops's lifetime", opsStale, `"health":50`, false},
		{"back in time", relStale, `"health":75`, true},
		{"back again", relStale.Add(time.Millisecond), `"health":50`, true},
		{"after ops's lifetime", opsStale.Add(time.Millisecond), `"health":25`, true},
		{"a year later", opsStale.Add(365 * 24 * time.Hour), `"health":25`, false},
	}
	for _, st := range steps {
		w.clock.Set(st.at)
		before := w.store.counts()
		got, err := projectListJSON(ctx, svc, flagadmin.System, flagadmin.ProjectListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := w.ref.ListProjects(ctx, flagadmin.System, flagadmin.ProjectListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != listJSON(want) || !strings.Contains(string(got), st.wantHealth) {
			t.Errorf("%s: list %s, want %s with %s", st.name, got, listJSON(want), st.wantHealth)
		}
		wantCalls := map[string]int{"Version": 1}
		if st.computed {
			wantCalls = map[string]int{"Version": 1, "ProjectStats": 1, "OldestFreshFeatures": 1}
		}
		w.wantCalls(t, st.name, before, wantCalls)
	}
}

// TestResultCacheBound: the cache holds at most its size in bytes,
// evicting the least recently used result, and never caches a result
// larger than itself.
func TestResultCacheBound(t *testing.T) {
	ctx := context.Background()
	admin := flagadmin.AdminToken("admin")
	w := newResultWorld(t, serviceWorld, testNow)
	a := flagadmin.EventSearchParams{}
	b := flagadmin.EventSearchParams{Type: "IS:feature-created"}
	c := flagadmin.EventSearchParams{Limit: "1"}

	// The cost of each result, measured in a cache large enough for all.
	big := w.service(1 << 20)
	cost := map[string]int64{}
	var total int64
	for name, params := range map[string]flagadmin.EventSearchParams{"a": a, "b": b, "c": c} {
		if _, err := big.SearchEvents(req(ctx), admin, params); err != nil {
			t.Fatal(err)
		}
		_, size := storecache.ResultCacheSize(w.cache)
		cost[name] = size - total
		total = size
	}
	if n, _ := storecache.ResultCacheSize(w.cache); n != 3 || cost["a"] <= 0 || cost["b"] <= 0 {
		t.Fatalf("%d entries costing %v, want 3 of positive cost", n, cost)
	}

	searches := func(t *testing.T, svc *flagadmin.Service, order ...flagadmin.EventSearchParams) int {
		t.Helper()
		before := w.store.counts()["SearchEvents"]
		for _, params := range order {
			if _, err := svc.SearchEvents(req(ctx), admin, params); err != nil {
				t.Fatal(err)
			}
		}
		return w.store.counts()["SearchEvents"] - before
	}
	t.Run("room for a and b", func(t *testing.T) {
		svc := w.service(cost["a"] + cost["b"])
		if n := searches(t, svc, a, b, a, b); n != 2 {
			t.Errorf("%d searches reached the store, want 2", n)
		}
		// c evicts the least recently used, a; b stays.
		if n := searches(t, svc, c, b); n != 1 {
			t.Errorf("%d searches reached the store, want 1", n)
		}
		if n := searches(t, svc, a); n != 1 {
			t.Errorf("%d searches reached the store, want 1 (a was evicted)", n)
		}
		if n, size := storecache.ResultCacheSize(w.cache); size > cost["a"]+cost["b"] || n < 1 {
			t.Errorf("%d entries of %d bytes, bound %d", n, size, cost["a"]+cost["b"])
		}
	})
	t.Run("one byte too small for a", func(t *testing.T) {
		svc := w.service(cost["a"] - 1)
		if n := searches(t, svc, a, a, c, c); n != 3 {
			t.Errorf("%d searches reached the store, want 3 (a never cached, c cached)", n)
		}
		if n, size := storecache.ResultCacheSize(w.cache); n != 1 || size != cost["c"] {
			t.Errorf("%d entries of %d bytes, want c alone (%d bytes)", n, size, cost["c"])
		}
	})
}

// TestResultCacheErrors: a failed store call fails the request and is not
// cached; a failed Version reading fails the request before any other
// store call.
func TestResultCacheErrors(t *testing.T) {
	ctx := context.Background()
	admin := flagadmin.AdminToken("admin")
	editor := func(w *resultWorld) flagadmin.Principal { return userPrincipal(t, w.store, 2) }
	down := errors.Join(flagadmin.ErrUnavailable, errors.New("connection refused"))
	for _, method := range []string{"Version", "SearchEvents", "ProjectStats", "OldestFreshFeatures", "ProjectAccess"} {
		t.Run(method, func(t *testing.T) {
			w := newResultWorld(t, serviceWorld, testNow)
			svc := w.service(1 << 20)
			p := admin
			if method == "ProjectAccess" {
				p = editor(w)
			}
			read := func() error {
				if method == "ProjectStats" || method == "OldestFreshFeatures" {
					_, err := projectListJSON(ctx, svc, p, flagadmin.ProjectListOptions{})
					return err
				}
				_, err := svc.SearchEvents(req(ctx), p, flagadmin.EventSearchParams{})
				return err
			}
			w.store.failNext(method, down)
			before := w.store.counts()
			if err := read(); !errors.Is(err, flagadmin.ErrUnavailable) {
				t.Fatalf("got %v, want the store's error", err)
			}
			if method == "Version" {
				w.wantCalls(t, "failed Version", before, map[string]int{"Version": 1})
			}
			for range 2 {
				if err := read(); err != nil {
					t.Fatalf("after the failure: %v", err)
				}
			}
			c := w.store.counts()
			if n := c[method] - before[method]; method != "Version" && n != 2 {
				t.Errorf("%s called %d times, want 2: the failure was cached, or the success was not", method, n)
			}
		})
	}
}

// TestResultCacheCoalesces: concurrent identical searches that miss wait
// for the first one's store call rather than repeating it.
func TestResultCacheCoalesces(t *testing.T) {
	ctx := context.Background()
	w := newResultWorld(t, serviceWorld, testNow)
	svc := w.service(1 << 20)
	const n = 8
	w.store.searchEntered = make(chan struct{}, n) // a search that is not coalesced does not block
	w.store.searchRelease = make(chan struct{})
	pages := make([]flagadmin.EventPage, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			pages[i], errs[i] = svc.SearchEvents(req(ctx), flagadmin.AdminToken("admin"), flagadmin.EventSearchParams{Limit: "3"})
		})
		if i == 0 {
			<-w.store.searchEntered // the first one is in the store
		}
	}
	// Wait until each of the others waits for the first, or (a failure)
	// reached the store itself.
	for storecache.ResultCacheWaiters(w.cache)+w.store.counts()["SearchEvents"]-1 < n {
		runtime.Gosched()
	}
	close(w.store.searchRelease)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || eventIDs(pages[i].Events) != "4 3 2" {
			t.Errorf("search %d: %q, %v", i, eventIDs(pages[i].Events), errs[i])
		}
	}
	if got := w.store.counts()["SearchEvents"]; got != 1 {
		t.Errorf("%d searches reached the store, want 1", got)
	}
}

// generatedStore returns a memstore holding the world cfg generates, all
// its events included, and what was written to it.
func generatedStore(b *testing.B, cfg worldgen.Config) (*memstore.Store, *flagadmin.Batch) {
	b.Helper()
	wld, err := worldgen.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	store := memstore.New()
	batch := wld.Batch()
	batch.Events = wld.FirstEvents(cfg.Events)
	if err := store.Write(context.Background(), batch); err != nil {
		b.Fatal(err)
	}
	return store, batch
}

// BenchmarkSearchEventsCacheHit is a page of 50 events from the result
// cache through Service.SearchEvents, over memstore, each search in its
// own scope as the server runs it.
func BenchmarkSearchEventsCacheHit(b *testing.B) {
	store, _ := generatedStore(b, worldgen.Config{Events: 2000, Projects: 20, Features: 300, Users: 50, Groups: 5, Seed: 11})
	svc := flagadmin.NewService(storecache.New(store, storecache.Options{ResultCacheSize: storecache.DefaultResultCacheSize}))
	ctx := context.Background()
	admin := flagadmin.AdminToken("admin")
	params := flagadmin.EventSearchParams{Limit: "50", Offset: "100"}
	if _, err := svc.SearchEvents(req(ctx), admin, params); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		page, err := svc.SearchEvents(req(ctx), admin, params)
		if err != nil || len(page.Events) != 50 {
			b.Fatal(len(page.Events), err)
		}
	}
}

// BenchmarkSearchEventsCacheMiss is a flag's page that the cache does not
// hold, through Service.SearchEvents over memstore (50,000 events, 5,000
// flags): each search another flag and limit, none repeated, with the
// result cache off and on (what the cache adds to a miss).
func BenchmarkSearchEventsCacheMiss(b *testing.B) {
	store, batch := generatedStore(b, worldgen.Config{Events: 50000, Projects: 20, Features: 5000, Users: 50, Groups: 5, Seed: 11})
	var flags []string
	for _, f := range batch.Features {
		flags = append(flags, "IS:"+f.Name)
	}
	for _, c := range []struct {
		name string
		size int64
	}{{"cache=off", 0}, {"cache=on", storecache.DefaultResultCacheSize}} {
		b.Run(c.name, func(b *testing.B) {
			svc := flagadmin.NewService(storecache.New(store, storecache.Options{ResultCacheSize: c.size}))
			ctx := context.Background()
			admin := flagadmin.AdminToken("admin")
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				// 5,000 flags times 100 limits: no search repeats in
				// 500,000.
				params := flagadmin.EventSearchParams{Feature: flags[i%len(flags)], Limit: strconv.Itoa(20 + i/len(flags)%100)}
				i++
				if _, err := svc.SearchEvents(req(ctx), admin, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestScopeReadsTheVersionOnce: a search by a caller who is not a root
// admin makes two cached reads (project access, page): without
// a scope each reads the change counter, in a scope (WithScope, or the
// Scope middleware) one reading serves them all, and a write through the
// Store makes the scope read it again, so that the request sees its own
// write.
func TestScopeReadsTheVersionOnce(t *testing.T) {
	ctx := context.Background()
	w := newResultWorld(t, serviceWorld, testNow)
	svc := w.service(1 << 20)
	editor := userPrincipal(t, w.store, 2)
	search := func(ctx context.Context) {
		t.Helper()
		if _, err := svc.SearchEvents(ctx, editor, flagadmin.EventSearchParams{}); err != nil {
			t.Fatal(err)
		}
	}
	search(ctx) // fill the cache

	before := w.store.counts()
	search(ctx)
	w.wantCalls(t, "without a scope", before, map[string]int{"Version": 2})

	before = w.store.counts()
	scoped := storecache.WithScope(ctx)
	search(scoped)
	search(scoped)
	w.wantCalls(t, "two searches in one scope", before, map[string]int{"Version": 1})

	before = w.store.counts()
	storecache.Scope(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		search(r.Context())
		search(r.Context())
	})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	w.wantCalls(t, "two searches in one request of the middleware", before, map[string]int{"Version": 1})

	// A write through the Store in the scope: the next read sees it.
	if err := w.cache.Write(scoped, &flagadmin.Batch{Events: []flagadmin.Event{{Type: "feature-updated", CreatedBy: "x", CreatedAt: testNow, Project: ptr("open")}}}); err != nil {
		t.Fatal(err)
	}
	before = w.store.counts()
	page, err := svc.SearchEvents(scoped, editor, flagadmin.EventSearchParams{})
	if err != nil {
		t.Fatal(err)
	}
	w.wantCalls(t, "a search after a write in the scope", before, map[string]int{"Version": 1, "ProjectAccess": 1, "SearchEvents": 1})
	if len(page.Events) == 0 || page.Events[0].Type != "feature-updated" {
		t.Errorf("the scope's search after its write: %s, want the new event first", eventIDs(page.Events))
	}
}
