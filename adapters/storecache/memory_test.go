package storecache_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// fieldStore is a store whose pages are allocated field by field, as a
// SQL driver scanning rows into structs allocates them (every string, data
// array and pointer on its own): the runtime rounds each allocation up to
// its size class, which the lengths of the fields do not show.
type fieldStore struct {
	*memstore.Store
}

func (s fieldStore) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	page, err := s.Store.SearchEvents(ctx, q)
	for i := range page.Events {
		e := &page.Events[i]
		e.Type, e.CreatedBy = strings.Clone(e.Type), strings.Clone(e.CreatedBy)
		e.Environment, e.Project, e.FeatureName = cloneString(e.Environment), cloneString(e.Project), cloneString(e.FeatureName)
		e.Data, e.PreData = slices.Clone(e.Data), slices.Clone(e.PreData)
		e.Tags = cloneTags(e.Tags)
	}
	return page, err
}

func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	return ptr(strings.Clone(*s))
}

// cloneTags returns a copy of tags as bunstore reads them: strings within
// the JSON text of the column, which they keep.
func cloneTags(tags []flagadmin.Tag) []flagadmin.Tag {
	if tags == nil {
		return nil
	}
	var text strings.Builder
	text.WriteByte('[')
	for _, tag := range tags {
		text.WriteString(`{"value":"` + tag.Value + `","type":"` + tag.Type + `"},`)
	}
	s := text.String()
	out := []flagadmin.Tag{}
	at := 1
	for _, tag := range tags {
		at += len(`{"value":"`)
		value := s[at : at+len(tag.Value)]
		at += len(tag.Value) + len(`","type":"`)
		out = append(out, flagadmin.Tag{Value: value, Type: s[at : at+len(tag.Type)]})
		at += len(tag.Type) + len(`"},`)
	}
	return out
}

// pageProjects returns the number of events of store and the projects of
// its latest thousand.
func pageProjects(t *testing.T, store flagadmin.Store) (int, []string) {
	t.Helper()
	page, err := store.SearchEvents(context.Background(), flagadmin.EventQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var projects []string
	for _, e := range page.Events {
		if e.Project != nil && !slices.Contains(projects, *e.Project) {
			projects = append(projects, *e.Project)
		}
	}
	return page.Total, projects
}

// liveHeap returns the bytes of the live heap: what a full collection
// leaves.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // and what the first one's finalizers released
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestResultCacheSizeBoundsHeap fills the result cache with distinct pages
// of realistic events (worldgen's: payloads of a few hundred bytes, tags,
// every kind of actor), as the varied workload of the benchmark does
// (random offsets, random filters), well past its size: the live heap it
// adds, measured after a full collection, is the configured size, within
// a few percent (the estimate of what the cache holds is what the heap
// holds, whatever the store's allocations).
func TestResultCacheSizeBoundsHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a cache of 16 MiB")
	}
	ctx := context.Background()
	w, err := worldgen.New(worldgen.Config{Events: 5000, Projects: 20, Features: 300, Users: 60, Groups: 6})
	if err != nil {
		t.Fatal(err)
	}
	mem := memstore.New()
	if err := mem.Write(ctx, w.Batch()); err != nil {
		t.Fatal(err)
	}
	for b := range w.Events(1000) {
		if err := mem.Write(ctx, &flagadmin.Batch{Events: b}); err != nil {
			t.Fatal(err)
		}
	}
	total, projects := pageProjects(t, mem)
	types := []string{"feature-created", "feature-updated", "feature-environment-enabled", "feature-strategy-update", "feature-tagged"}

	const size = 16 << 20
	store := storecache.New(fieldStore{mem}, storecache.Options{ResultCacheSize: size})
	before := liveHeap()
	r := rand.New(rand.NewPCG(11, 5))
	var events int
	for i := range 1500 {
		q := flagadmin.EventQuery{Limit: 50, Offset: r.IntN(total - 50)}
		switch i % 4 {
		case 1:
			q.Types, q.Offset = []string{types[r.IntN(len(types))]}, r.IntN(500)
		case 2:
			q.Projects, q.Offset = []string{projects[r.IntN(len(projects))]}, r.IntN(100)
		}
		page, err := store.SearchEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		events += len(page.Events)
	}
	grown := int64(liveHeap()) - int64(before)
	runtime.KeepAlive(store)
	st := store.Stats()
	t.Logf("%d searches (%d misses), %d events: live heap grew %.2f MiB for a cache of %.2f MiB (%.3f)",
		st.ResultHits+st.ResultMisses, st.ResultMisses, events, float64(grown)/(1<<20), float64(size)/(1<<20), float64(grown)/size)
	if st.ResultMisses*40<<10 < 2*size {
		t.Fatalf("%d misses of about 40 KiB each: the cache was not filled twice over", st.ResultMisses)
	}
	// Below: the cache is full, less at most one page; above: what it
	// holds is what it counts, but for noise.
	if lo, hi := 0.9*size, 1.05*size; float64(grown) < lo || float64(grown) > hi {
		t.Errorf("live heap grew %d bytes, want %.0f to %.0f (the cache's size, %d bytes, -10%%/+5%%)", grown, lo, hi, size)
	}
}
