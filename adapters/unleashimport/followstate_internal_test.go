package unleashimport

import (
	"fmt"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

// flagsState returns a world of n flags, each with two tags and a
// lifecycle stage, as a reading of Unleash maps them.
func flagsState(n int) *worldState {
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	s := &worldState{features: make(map[string]flagadmin.Feature, n), featuresKey: "key"}
	for i := range n {
		name := fmt.Sprintf("flag-%d", i)
		s.features[name] = flagadmin.Feature{Name: name, Project: fmt.Sprintf("project-%d", i%200), Type: "release", CreatedAt: at, LastSeenAt: &at,
			Tags:      []flagadmin.Tag{{Type: "simple", Value: "a"}, {Type: "simple", Value: fmt.Sprint(i)}},
			Lifecycle: flagadmin.Lifecycle{Stage: "live"}}
	}
	return s
}

// TestDiffOfSharedFlags: a reading that shares the flags of the world
// before it (they did not change) adds no flag to the batch; one whose
// flags are another map with one flag changed and one gone adds those.
func TestDiffOfSharedFlags(t *testing.T) {
	prev := flagsState(100)
	shared := &worldState{features: prev.features, featuresKey: prev.featuresKey}
	var b follow.Batch
	diffInto(&b, prev, shared)
	if len(b.Features) != 0 || len(b.DeleteFeatures) != 0 {
		t.Fatalf("shared flags: %d upserts, %d deletes, want none", len(b.Features), len(b.DeleteFeatures))
	}
	next := flagsState(100)
	f := next.features["flag-7"]
	f.Stale = true
	next.features["flag-7"] = f
	delete(next.features, "flag-9")
	b = follow.Batch{}
	diffInto(&b, prev, next)
	if len(b.Features) != 1 || b.Features[0].Name != "flag-7" || len(b.DeleteFeatures) != 1 || b.DeleteFeatures[0] != "flag-9" {
		t.Fatalf("changed flags: upserts %v, deletes %v, want flag-7 and flag-9", b.Features, b.DeleteFeatures)
	}
}

// BenchmarkDiffUnchangedFlags: what the follower spends, at each reading
// of the world, on 20,000 flags that did not change (the reading shares
// the map of the one before).
func BenchmarkDiffUnchangedFlags(b *testing.B) {
	prev := flagsState(20_000)
	next := &worldState{features: prev.features, featuresKey: prev.featuresKey}
	for b.Loop() {
		var batch follow.Batch
		diffInto(&batch, prev, next)
	}
}
