package flagadmin_test

import (
	"context"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// statsStore answers every ProjectStats with the same statistics, as a
// result cache does on a hit.
type statsStore struct {
	flagadmin.Store
	stats []flagadmin.ProjectStats
}

func (s statsStore) ProjectStats(context.Context, flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	return s.stats, nil
}

// BenchmarkListProjects lists 10,000 projects (the large benchmark world's
// projects, in the order of their ids) from statistics already computed:
// the domain's share of a cached project list, mostly its sort.
func BenchmarkListProjects(b *testing.B) {
	w, err := worldgen.New(worldgen.Config{Events: 1, Projects: 10_000, Features: 10_000, Users: 500, Groups: 40, Seed: 11})
	if err != nil {
		b.Fatal(err)
	}
	var stats []flagadmin.ProjectStats
	for _, p := range w.Projects() {
		p.Members, p.FavoritedBy = nil, nil
		stats = append(stats, flagadmin.ProjectStats{Project: p, FeatureCount: 2, MemberCount: 3,
			Owners: []flagadmin.ProjectOwner{{OwnerType: flagadmin.OwnerGroup, ID: 1, Name: "Team Platform"}}})
	}
	svc := flagadmin.NewService(statsStore{Store: memstore.New(), stats: stats}, fixedClock(testNow))
	for b.Loop() {
		list, err := svc.ListProjects(context.Background(), flagadmin.System, flagadmin.ProjectListOptions{})
		if err != nil || len(list) != len(stats) {
			b.Fatalf("got %d projects, %v; want %d", len(list), err, len(stats))
		}
	}
}
