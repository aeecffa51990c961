package storecache_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// listBuilder builds the JSON of the project list of p through svc, as a
// transport would, counting its builds.
type listBuilder struct {
	svc    *flagadmin.Service
	p      flagadmin.Principal
	opts   flagadmin.ProjectListOptions
	builds atomic.Int64
	// entered and release, when set, make a build signal that it began
	// and wait to be released.
	entered chan struct{}
	release chan struct{}
}

func (b *listBuilder) build(ctx context.Context) ([]byte, error) {
	b.builds.Add(1)
	if b.entered != nil {
		b.entered <- struct{}{}
		<-b.release
	}
	list, err := b.svc.ListProjects(ctx, b.p, b.opts)
	if err != nil {
		return nil, err
	}
	return json.Marshal(list)
}

// load loads the list of b under key in one request (its own scope),
// reporting whether it was built.
func (b *listBuilder) load(t *testing.T, bodies *storecache.Bodies, key string) (body string, built bool) {
	t.Helper()
	before := b.builds.Load()
	got, err := bodies.Load(req(context.Background()), key, b.build)
	if err != nil {
		t.Fatal(err)
	}
	return string(got), b.builds.Load() > before
}

// bodiesOf returns the body cache of the Store under w's latest service.
func bodiesOf(t *testing.T, w *resultWorld) *storecache.Bodies {
	t.Helper()
	bodies := w.cache.Bodies()
	if bodies == nil {
		t.Fatal("no body cache")
	}
	return bodies
}

// TestBodiesProjectList: a body is built once, then answered with one
// Version reading and nothing else, in the bytes of a build without a
// cache; another key has its own; a write makes every body be built again.
func TestBodiesProjectList(t *testing.T) {
	ctx := context.Background()
	w := newResultWorld(t, serviceWorld, testNow)
	svc := w.service(1 << 20)
	bodies := bodiesOf(t, w)
	admin := &listBuilder{svc: svc, p: flagadmin.AdminToken("admin")}
	vic := &listBuilder{svc: svc, p: userPrincipal(t, w.store, 3)}
	want := func(b *listBuilder) string {
		t.Helper()
		list, err := w.ref.ListProjects(ctx, b.p, b.opts)
		if err != nil {
			t.Fatal(err)
		}
		return listJSON(list)
	}
	for _, step := range []struct {
		name  string
		b     *listBuilder
		key   string
		built bool
	}{
		{"admin", admin, "admin", true},
		{"admin again", admin, "admin", false},
		{"vic", vic, "vic", true},
		{"vic again", vic, "vic", false},
		{"admin once more", admin, "admin", false},
	} {
		before := w.store.counts()
		got, built := step.b.load(t, bodies, step.key)
		if got != want(step.b) || built != step.built {
			t.Errorf("%s: built %v, %s; want built %v, %s", step.name, built, got, step.built, want(step.b))
		}
		if !step.built {
			w.wantCalls(t, step.name, before, map[string]int{"Version": 1})
		}
	}
	if want(admin) == want(vic) {
		t.Fatal("vic sees the admin's list: the test checks nothing about keys")
	}

	// A write through the Store, then one by another process (straight
	// to the wrapped store): each is seen at once.
	writes := []func(*flagadmin.Batch) error{
		func(b *flagadmin.Batch) error { return w.cache.Write(ctx, b) },
		func(b *flagadmin.Batch) error { return w.store.Write(ctx, b) },
	}
	for i, write := range writes {
		id := []string{"new1", "new2"}[i]
		if err := write(&flagadmin.Batch{Projects: []flagadmin.Project{{ID: id, Mode: flagadmin.ModeOpen}}}); err != nil {
			t.Fatal(err)
		}
		for _, b := range []*listBuilder{admin, vic} {
			got, built := b.load(t, bodies, map[*listBuilder]string{admin: "admin", vic: "vic"}[b])
			if !built || got != want(b) || !strings.Contains(got, `"id":"`+id+`"`) {
				t.Errorf("after write %d: built %v, %s; want a new build with %s", i+1, built, got, id)
			}
		}
	}
}

// TestBodiesExpireWithTime: a body built from project statistics is used
// while they hold, and built again when a feature it counts as not
// potentially stale becomes so with the clock (Options.Clock), or when the
// clock goes back.
func TestBodiesExpireWithTime(t *testing.T) {
	ctx := context.Background()
	relStale, opsStale := expiryTimes()
	w := newResultWorld(t, expiryWorld, relStale)
	svc := w.service(1 << 20)
	bodies := bodiesOf(t, w)
	b := &listBuilder{svc: svc, p: flagadmin.System}
	for _, st := range []struct {
		name       string
		at         time.Time
		wantHealth string // of 4 features, 1 stale (kill never potentially stale)
		built      bool
	}{
		{"at rel's lifetime", relStale, `"health":75`, true},
		{"later in the same millisecond", relStale.Add(999 * time.Microsecond), `"health":75`, false},
		{"the next millisecond", relStale.Add(time.Millisecond), `"health":50`, true},
		{"at ops's lifetime", opsStale, `"health":50`, false},
		{"back in time", relStale, `"health":75`, true},
		{"back again", relStale.Add(time.Millisecond), `"health":50`, true},
		{"after ops's lifetime", opsStale.Add(time.Millisecond), `"health":25`, true},
		{"a year later", opsStale.Add(365 * 24 * time.Hour), `"health":25`, false},
	} {
		w.clock.Set(st.at)
		got, built := b.load(t, bodies, "list")
		want, err := w.ref.ListProjects(ctx, flagadmin.System, flagadmin.ProjectListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got != listJSON(want) || !strings.Contains(got, st.wantHealth) || built != st.built {
			t.Errorf("%s: built %v, %s; want built %v, %s with %s", st.name, built, got, st.built, listJSON(want), st.wantHealth)
		}
	}
}

// TestBodiesCoalesce: concurrent loads of one key build once and share
// the body.
func TestBodiesCoalesce(t *testing.T) {
	w := newResultWorld(t, serviceWorld, testNow)
	svc := w.service(1 << 20)
	bodies := bodiesOf(t, w)
	const n = 8
	b := &listBuilder{svc: svc, p: flagadmin.AdminToken("admin"),
		entered: make(chan struct{}, n), // a build that is not coalesced does not block on it
		release: make(chan struct{})}
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body, err := bodies.Load(req(context.Background()), "list", b.build)
			got[i], errs[i] = string(body), err
		})
		if i == 0 {
			<-b.entered // the first one builds
		}
	}
	// Wait until each of the others waits for the first, or (a failure)
	// builds itself.
	for storecache.ResultCacheWaiters(w.cache)+int(b.builds.Load())-1 < n {
		runtime.Gosched()
	}
	close(b.release)
	wg.Wait()
	want, err := w.ref.ListProjects(context.Background(), b.p, b.opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if errs[i] != nil || got[i] != listJSON(want) {
			t.Errorf("load %d: %s, %v", i, got[i], errs[i])
		}
	}
	if n := b.builds.Load(); n != 1 {
		t.Errorf("%d builds, want 1", n)
	}
}

// TestBodiesNeedReadsThroughTheStore: a body whose build read nothing
// through the Store (a Service wired to another store) is answered but not
// kept, since nothing ties it to the data or the time; a failed build is
// not kept either.
func TestBodiesNeedReadsThroughTheStore(t *testing.T) {
	w := newResultWorld(t, serviceWorld, testNow)
	svc := w.service(1 << 20)
	bodies := bodiesOf(t, w)
	elsewhere := &listBuilder{svc: w.ref, p: flagadmin.AdminToken("admin")} // w.ref is not over the cache
	for i := range 2 {
		if _, built := elsewhere.load(t, bodies, "list"); !built {
			t.Errorf("load %d: answered from the cache, want built", i+1)
		}
	}

	through := &listBuilder{svc: svc, p: flagadmin.AdminToken("admin")}
	w.store.failNext("ProjectStats", errBroken)
	if _, err := bodies.Load(req(context.Background()), "failing", through.build); err != errBroken {
		t.Fatalf("got %v, want %v", err, errBroken)
	}
	if _, built := through.load(t, bodies, "failing"); !built {
		t.Error("after a failed build: answered from the cache, want built")
	}
}

// errBroken is a store failure.
var errBroken = &brokenError{}

type brokenError struct{}

func (*brokenError) Error() string { return "broken" }

// TestBodiesBudget: bodies count against the result cache's bytes, a body
// larger than the cache is not kept, and without a result cache there is
// no body cache.
func TestBodiesBudget(t *testing.T) {
	w := newResultWorld(t, serviceWorld, testNow)
	big := strings.Repeat("x", 64<<10)
	for _, tc := range []struct {
		size int64
		kept bool
	}{{1 << 20, true}, {32 << 10, false}} {
		svc := w.service(tc.size)
		bodies := bodiesOf(t, w)
		builds := 0
		build := func(ctx context.Context) ([]byte, error) {
			builds++
			if _, err := svc.ListProjects(ctx, flagadmin.AdminToken("admin"), flagadmin.ProjectListOptions{}); err != nil {
				return nil, err
			}
			return []byte(big), nil
		}
		_, before := storecache.ResultCacheSize(w.cache)
		for range 2 {
			got, err := bodies.Load(req(context.Background()), "big", build)
			if err != nil || string(got) != big {
				t.Fatalf("size %d: %d bytes, %v", tc.size, len(got), err)
			}
		}
		_, after := storecache.ResultCacheSize(w.cache)
		if wantBuilds := map[bool]int{true: 1, false: 2}[tc.kept]; builds != wantBuilds {
			t.Errorf("size %d: %d builds, want %d", tc.size, builds, wantBuilds)
		}
		if tc.kept && after-before < int64(len(big)) {
			t.Errorf("size %d: the cache grew by %d bytes for a body of %d", tc.size, after-before, len(big))
		}
		if after > tc.size {
			t.Errorf("size %d: the cache holds %d bytes", tc.size, after)
		}
	}
	if b := storecache.New(w.store, storecache.Options{TokenTTL: time.Second}).Bodies(); b != nil {
		t.Errorf("without a result cache: Bodies() = %v, want nil", b)
	}
}
