package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// bulkLoader is a store's bulk path for events (bunstore's InsertEvents):
// events in transactions of batchSize.
type bulkLoader interface {
	InsertEvents(ctx context.Context, events []flagadmin.Event, batchSize int) error
}

// versioned returns the case's store as a flagadmin.VersionedStore, or
// skips the case for a store that is not one.
func (w *world) versioned(t *testing.T) flagadmin.VersionedStore {
	t.Helper()
	vs, ok := w.store.(flagadmin.VersionedStore)
	if !ok {
		t.Skipf("storetest: %T is not a flagadmin.VersionedStore", w.store)
	}
	return vs
}

// version reads the store's version, failing the case on an error.
func version(t *testing.T, w *world, vs flagadmin.VersionedStore) int64 {
	t.Helper()
	v, err := vs.Version(w.ctx)
	if err != nil {
		t.Fatalf("Store.Version: got error %v, want nil", err)
	}
	return v
}

// versionEvent is an event the version cases write.
func versionEvent(n int) flagadmin.Event {
	return ev(flagadmin.EventFeatureUpdated, "system", nil, "2026-06-15T12:00:00Z", str("default"), str("alpha"), nil, fmt.Sprintf(`{"n": %d}`, n))
}

// versionWrite is a write of the version cases: run must succeed (raises)
// or fail (leaves the version alone) as the case says.
type versionWrite struct {
	name string
	run  func(t *testing.T, w *world) error
}

func versionCases() []testCase {
	raising := []versionWrite{
		{"Write with events", func(t *testing.T, w *world) error {
			return w.store.Write(w.ctx, &flagadmin.Batch{Events: []flagadmin.Event{versionEvent(1), versionEvent(2)}})
		}},
		{"Write without events", func(t *testing.T, w *world) error {
			return w.store.Write(w.ctx, &flagadmin.Batch{Projects: []flagadmin.Project{{ID: "later", Name: "Later", Mode: flagadmin.ModeOpen, CreatedAt: suiteNow}}})
		}},
		{"Write whose events come from Then", func(t *testing.T, w *world) error {
			return w.store.Write(w.ctx, &flagadmin.Batch{
				Users: []flagadmin.User{{Name: "Newcomer", RootRole: flagadmin.RoleViewer}},
				Then:  func(*flagadmin.Batch) ([]flagadmin.Event, error) { return []flagadmin.Event{versionEvent(3)}, nil },
			})
		}},
		{"UpdateFeature that writes", func(t *testing.T, w *world) error {
			return w.store.UpdateFeature(w.ctx, "alpha", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
				f.Stale = true
				e := versionEvent(4)
				return &e, nil
			})
		}},
		{"UpdateFeature that writes an unchanged feature", func(t *testing.T, w *world) error {
			return w.store.UpdateFeature(w.ctx, "beta", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
				e := versionEvent(5)
				return &e, nil
			})
		}},
		{"DeleteUser", func(t *testing.T, w *world) error {
			return w.store.DeleteUser(w.ctx, vicID, func(flagadmin.User) (flagadmin.Event, error) { return versionEvent(6), nil })
		}},
		{"Service.CompleteLifecycle", func(t *testing.T, w *world) error {
			return w.svc.CompleteLifecycle(w.ctx, w.as(adminSecret), "other", "delta", kept("v1"))
		}},
	}
	failing := []versionWrite{
		{"UpdateFeature whose callback fails", func(t *testing.T, w *world) error {
			err := w.store.UpdateFeature(w.ctx, "alpha", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
				f.Stale = true
				e := versionEvent(1)
				return &e, errCallback
			})
			if !errors.Is(err, errCallback) {
				t.Errorf("Store.UpdateFeature: got error %v, want the callback's error", err)
			}
			return nil
		}},
		{"UpdateFeature without an event", func(t *testing.T, w *world) error {
			return w.store.UpdateFeature(w.ctx, "alpha", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
				f.Stale = true
				return nil, nil
			})
		}},
		{"UpdateFeature of a missing feature", func(t *testing.T, w *world) error {
			err := w.store.UpdateFeature(w.ctx, "nope", func(*flagadmin.Feature) (*flagadmin.Event, error) { e := versionEvent(1); return &e, nil })
			wantKind(t, "Store.UpdateFeature", err, flagadmin.ErrNotFound)
			return nil
		}},
		{"DeleteUser whose callback fails", func(t *testing.T, w *world) error {
			err := w.store.DeleteUser(w.ctx, vicID, func(flagadmin.User) (flagadmin.Event, error) { return versionEvent(1), errCallback })
			if !errors.Is(err, errCallback) {
				t.Errorf("Store.DeleteUser: got error %v, want the callback's error", err)
			}
			return nil
		}},
		{"DeleteUser of a missing user", func(t *testing.T, w *world) error {
			err := w.store.DeleteUser(w.ctx, 999, func(flagadmin.User) (flagadmin.Event, error) { return versionEvent(1), nil })
			wantKind(t, "Store.DeleteUser", err, flagadmin.ErrNotFound)
			return nil
		}},
		{"Write of a conflict", func(t *testing.T, w *world) error {
			b := newRows()
			b.Projects = append(b.Projects, flagadmin.Project{ID: "default", Name: "Again", Mode: flagadmin.ModeOpen, CreatedAt: suiteNow})
			wantKind(t, "Store.Write", w.store.Write(w.ctx, b), flagadmin.ErrConflict)
			return nil
		}},
		{"Write whose Then fails", func(t *testing.T, w *world) error {
			b := newRows()
			b.Then = func(*flagadmin.Batch) ([]flagadmin.Event, error) { return nil, errCallback }
			if err := w.store.Write(w.ctx, b); !errors.Is(err, errCallback) {
				t.Errorf("Store.Write: got error %v, want the callback's error", err)
			}
			return nil
		}},
		{"Service.CompleteLifecycle that changes nothing", func(t *testing.T, w *world) error {
			// The first completion writes (and raises); the version is read
			// after it, before the repeat, which records nothing.
			return w.svc.CompleteLifecycle(w.ctx, w.as(adminSecret), "other", "delta", kept("v1"))
		}},
	}

	cases := []testCase{
		{"version/reads leave the version alone", func(t *testing.T, w *world) {
			vs := w.versioned(t)
			w.load(lifecycleFixture(), namedEvent{"e", versionEvent(1)})
			before := version(t, w, vs)
			ctx := w.ctx
			reads := []struct {
				name string
				read func() error
			}{
				{"LookupToken", func() error { _, _, err := vs.LookupToken(ctx, flagadmin.HashSecret(adminSecret)); return err }},
				{"CountTokens", func() error { _, err := vs.CountTokens(ctx, flagadmin.TokenAdmin); return err }},
				{"Project", func() error { _, err := vs.Project(ctx, "default"); return err }},
				{"Feature", func() error { _, err := vs.Feature(ctx, "alpha"); return err }},
				{"User", func() error { _, err := vs.User(ctx, eveID); return err }},
				{"Group", func() error { _, err := vs.Group(ctx, platformGroupID); return err }},
				{"ProjectAccess", func() error { _, err := vs.ProjectAccess(ctx, maxID); return err }},
				{"SearchEvents", func() error { _, err := vs.SearchEvents(ctx, flagadmin.EventQuery{Limit: 10}); return err }},
				{"SearchEvents with text", func() error {
					_, err := vs.SearchEvents(ctx, flagadmin.EventQuery{Limit: 10, Text: "n"})
					return err
				}},
				{"ProjectStats", func() error {
					_, err := vs.ProjectStats(ctx, flagadmin.ProjectStatsQuery{PotentiallyStaleBefore: map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: suiteNow}})
					return err
				}},
				{"OldestFreshFeatures", func() error {
					_, err := vs.OldestFreshFeatures(ctx, map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: daysAgo(400, 0)})
					return err
				}},
				{"Ping", func() error { return vs.Ping(ctx) }},
				{"Service.ListProjects", func() error {
					_, err := w.svc.ListProjects(ctx, w.as(eveSecret), flagadmin.ProjectListOptions{})
					return err
				}},
			}
			for _, r := range reads {
				if err := r.read(); err != nil {
					t.Errorf("%s: got error %v, want nil", r.name, err)
				}
			}
			wantEqual(t, "version after reads", version(t, w, vs), before)
		}},
		{"version/writes that store nothing leave it alone", func(t *testing.T, w *world) {
			vs := w.versioned(t)
			w.load(lifecycleFixture())
			wantNoError(t, "first CompleteLifecycle", w.svc.CompleteLifecycle(w.ctx, w.as(adminSecret), "other", "delta", kept("v1")))
			for _, c := range failing {
				t.Run(c.name, func(t *testing.T) {
					before := version(t, w, vs)
					wantNoError(t, c.name, c.run(t, w))
					wantEqual(t, "version", version(t, w, vs), before)
				})
			}
		}},
		{"version/bulk event loads raise it once per batch", func(t *testing.T, w *world) {
			vs := w.versioned(t)
			bulk, ok := w.store.(bulkLoader)
			if !ok {
				t.Skipf("storetest: %T has no bulk event path", w.store)
			}
			w.load(lifecycleFixture())
			before := version(t, w, vs)
			events := make([]flagadmin.Event, 5)
			for i := range events {
				events[i] = versionEvent(i)
			}
			wantNoError(t, "InsertEvents", bulk.InsertEvents(w.ctx, events, 2))
			// Three transactions: a reader between two of them must see a change.
			if got := version(t, w, vs); got < before+3 {
				t.Errorf("version after 3 batches: got %d, want at least %d", got, before+3)
			}
		}},
		{"version/concurrent writes are all counted and readings never fall", func(t *testing.T, w *world) {
			vs := w.versioned(t)
			w.load(lifecycleFixture())
			start := version(t, w, vs)
			done := make(chan struct{})
			var readErr error
			var readings []int64
			var reader sync.WaitGroup
			reader.Go(func() {
				for {
					v, err := vs.Version(w.ctx)
					if err != nil {
						readErr = err
						return
					}
					readings = append(readings, v)
					select {
					case <-done:
						return
					default:
					}
				}
			})
			errs := together(goroutines, func(i int) error {
				if i%2 == 0 {
					return w.store.Write(w.ctx, &flagadmin.Batch{Events: []flagadmin.Event{versionEvent(i)}})
				}
				seen := suiteNow.Add(-time.Duration(i) * time.Minute)
				return w.store.UpdateFeature(w.ctx, "alpha", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
					f.LastSeenAt = &seen
					e := versionEvent(i)
					return &e, nil
				})
			})
			close(done)
			reader.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("writer %d: got error %v, want nil", i, err)
				}
			}
			if readErr != nil {
				t.Errorf("concurrent Store.Version: got error %v, want nil", readErr)
			}
			for i := 1; i < len(readings); i++ {
				if readings[i] < readings[i-1] {
					t.Errorf("concurrent readings %d then %d: got a fall, want never decreasing", readings[i-1], readings[i])
					break
				}
			}
			if got := version(t, w, vs); got < start+goroutines {
				t.Errorf("version after %d writes: got %d, want at least %d", goroutines, got, start+goroutines)
			}
			if n := len(readings); n > 0 && readings[n-1] < start {
				t.Errorf("last concurrent reading %d: got less than the start %d", readings[n-1], start)
			}
		}},
	}
	for _, c := range raising {
		cases = append(cases, testCase{"version/raised by " + c.name, func(t *testing.T, w *world) {
			vs := w.versioned(t)
			w.load(lifecycleFixture())
			before := version(t, w, vs)
			wantNoError(t, c.name, c.run(t, w))
			after := version(t, w, vs)
			if after <= before {
				t.Errorf("version: got %d after the write, want more than %d", after, before)
			}
			wantEqual(t, "version read again", version(t, w, vs), after)
		}})
	}
	return append(cases, freshFeatureCases()...)
}

// freshFeatureCases are the cases of OldestFreshFeatures.
func freshFeatureCases() []testCase {
	release, experiment, operational := daysAgo(40, 0), daysAgo(40, 0), daysAgo(7, 0)
	fixture := func() *flagadmin.Seed {
		seed := accounts()
		seed.Projects = []flagadmin.Project{{ID: "default", Mode: flagadmin.ModeOpen}, {ID: "other", Mode: flagadmin.ModeOpen}}
		archived := func(f flagadmin.Feature) flagadmin.Feature { f.ArchivedAt = atp("2026-06-01T00:00:00Z"); return f }
		stale := func(f flagadmin.Feature) flagadmin.Feature { f.Stale = true; return f }
		ms := time.Millisecond
		seed.Features = []flagadmin.Feature{
			// release: the first fresh one at or after the cut-off is rel-first.
			feat("rel-before", "default", flagadmin.TypeRelease, release.Add(-ms)),
			archived(feat("rel-archived", "default", flagadmin.TypeRelease, release)),
			stale(feat("rel-stale", "default", flagadmin.TypeRelease, release.Add(ms))),
			feat("rel-later", "default", flagadmin.TypeRelease, release.Add(time.Hour)),
			feat("rel-first", "other", flagadmin.TypeRelease, release.Add(2*ms)),
			// experiment: one created exactly at the cut-off.
			feat("exp-at", "default", flagadmin.TypeExperiment, experiment),
			feat("exp-later", "other", flagadmin.TypeExperiment, experiment.Add(24*time.Hour)),
			// operational: none fresh since the cut-off.
			feat("ops-before", "default", flagadmin.TypeOperational, operational.Add(-ms)),
			archived(feat("ops-archived", "default", flagadmin.TypeOperational, operational.Add(time.Hour))),
			stale(feat("ops-stale", "default", flagadmin.TypeOperational, operational.Add(time.Hour))),
			// kill-switch: not asked about.
			feat("ks", "default", flagadmin.TypeKillSwitch, suiteNow),
		}
		return seed
	}
	type query struct {
		name      string
		notBefore map[flagadmin.FeatureType]time.Time
		want      map[flagadmin.FeatureType]time.Time
	}
	queries := []query{
		{"no types", map[flagadmin.FeatureType]time.Time{}, map[flagadmin.FeatureType]time.Time{}},
		{"nil", nil, map[flagadmin.FeatureType]time.Time{}},
		{"the project list's cut-offs",
			map[flagadmin.FeatureType]time.Time{
				flagadmin.TypeRelease: release, flagadmin.TypeExperiment: experiment,
				flagadmin.TypeOperational: operational, flagadmin.TypePermission: daysAgo(1000, 0),
			},
			map[flagadmin.FeatureType]time.Time{
				flagadmin.TypeRelease: release.Add(2 * time.Millisecond), flagadmin.TypeExperiment: experiment,
			}},
		{"a cut-off just after a feature excludes it",
			map[flagadmin.FeatureType]time.Time{flagadmin.TypeExperiment: experiment.Add(time.Nanosecond)},
			map[flagadmin.FeatureType]time.Time{flagadmin.TypeExperiment: experiment.Add(24 * time.Hour)}},
		{"a cut-off just before a feature includes it",
			map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: release.Add(-time.Millisecond)},
			map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: release.Add(-time.Millisecond)}},
		{"a cut-off after every feature",
			map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: suiteNow, flagadmin.TypeKillSwitch: suiteNow.Add(time.Millisecond)},
			map[flagadmin.FeatureType]time.Time{}},
		{"only the types asked about",
			map[flagadmin.FeatureType]time.Time{flagadmin.TypeKillSwitch: daysAgo(1, 0)},
			map[flagadmin.FeatureType]time.Time{flagadmin.TypeKillSwitch: suiteNow}},
	}
	check := func(t *testing.T, w *world, vs flagadmin.VersionedStore, q query) {
		t.Helper()
		got, err := vs.OldestFreshFeatures(w.ctx, q.notBefore)
		if err != nil {
			t.Fatalf("%s: Store.OldestFreshFeatures: got error %v, want nil", q.name, err)
		}
		if got == nil {
			t.Errorf("%s: got nil, want a map", q.name)
		}
		if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(q.want))) {
			t.Errorf("%s: got types %v, want %v", q.name, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(q.want)))
		}
		for typ, want := range q.want {
			if g, ok := got[typ]; ok && !g.Equal(want) {
				t.Errorf("%s: %s: got %s, want %s", q.name, typ, g.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
			}
		}
	}
	return []testCase{
		{"version/OldestFreshFeatures: boundaries, archived and stale features, types", func(t *testing.T, w *world) {
			vs := w.versioned(t)
			w.load(fixture())
			for _, q := range queries {
				check(t, w, vs, q)
			}
		}},
		{"version/OldestFreshFeatures follows updates", func(t *testing.T, w *world) {
			vs := w.versioned(t)
			w.load(fixture())
			update := func(name string, change func(f *flagadmin.Feature)) {
				t.Helper()
				err := w.store.UpdateFeature(w.ctx, name, func(f *flagadmin.Feature) (*flagadmin.Event, error) {
					change(f)
					e := versionEvent(0)
					return &e, nil
				})
				wantNoError(t, "UpdateFeature "+name, err)
			}
			cut := map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: release, flagadmin.TypeOperational: operational}
			update("rel-first", func(f *flagadmin.Feature) { f.Stale = true })
			check(t, w, vs, query{"rel-first stale", cut, map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: release.Add(time.Hour)}})
			update("rel-archived", func(f *flagadmin.Feature) { f.ArchivedAt = nil })
			check(t, w, vs, query{"rel-archived revived", cut, map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: release}})
			update("rel-archived", func(f *flagadmin.Feature) { f.Type = flagadmin.TypeOperational })
			// Created before the operational cut-off: fresh for neither type.
			check(t, w, vs, query{"rel-archived now operational", cut, map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: release.Add(time.Hour)}})
			update("ops-stale", func(f *flagadmin.Feature) { f.Stale = false })
			check(t, w, vs, query{"ops-stale fresh again", cut, map[flagadmin.FeatureType]time.Time{
				flagadmin.TypeRelease: release.Add(time.Hour), flagadmin.TypeOperational: operational.Add(time.Hour),
			}})
		}},
	}
}
