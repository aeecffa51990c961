package bunstore_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// BenchmarkTextSearch times a free-text page of 50 with its exact total
// (the query-string search's scope) through Store.SearchEvents, for the
// terms flagadmin-bench's varied/query draws, each kind alone: a random
// feature's name (a token of about a hundred events), a random user's
// name, and the world's rare word (4,739 events); as an admin (every
// event) and as a caller who cannot see the private projects. The terms
// follow from the iteration's number, so every version sees the same
// sequence.
func BenchmarkTextSearch(b *testing.B) {
	ctx := context.Background()
	for _, target := range benchTargets {
		b.Run(target.name, func(b *testing.B) {
			bw := loadedWorld(b, target)
			features, users := bw.world.Features(), bw.world.Users()
			private := bw.privateProjects()
			for _, term := range []struct {
				name string
				next func(r *rand.Rand) string
			}{
				{"feature", func(r *rand.Rand) string { return features[r.IntN(len(features))].Name }},
				{"user", func(r *rand.Rand) string { return users[r.IntN(len(users))].Username }},
				{"rare", func(*rand.Rand) string { return worldgen.RareWord }},
			} {
				for _, v := range []struct {
					name   string
					hidden []string
				}{{"admin", nil}, {"hidden-private", private}} {
					b.Run(term.name+"/"+v.name, func(b *testing.B) {
						r := rand.New(rand.NewPCG(20261206, 1))
						var lat latencies
						for b.Loop() {
							q := flagadmin.EventQuery{Text: term.next(r), Limit: 50, HiddenProjects: v.hidden}
							start := time.Now()
							page, err := bw.store.SearchEvents(ctx, q)
							lat.time(start)
							if err != nil || len(page.Events) != min(page.Total, 50) {
								b.Fatalf("query %q: %d events of %d (%v)", q.Text, len(page.Events), page.Total, err)
							}
						}
						lat.report(b)
					})
				}
			}
		})
	}
}
