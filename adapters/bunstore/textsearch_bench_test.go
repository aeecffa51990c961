package bunstore_test

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// BenchmarkTextSearch times a free-text page of 50 with its exact total
// (the query-string search's scope) through Store.SearchEvents, for the
// terms flagadmin-bench's varied/query draws, each kind alone: a random
// feature's name (a token of about a hundred events, and of the names
// that contain it: its matches are more), a random user's
// name, and the world's rare word (4,739 events); as an admin (every
// event) and as a caller who cannot see the private projects. The terms
// follow from the iteration's number, so every version sees the same
// sequence. Then mix: the store alone answering varied/query's draw (a
// feature's name 7 times in 10, a user's 2, else the rare word; every
// other query hiding the private projects) from GOMAXPROCS goroutines,
// its queries/s the most the server could answer on this database,
// whatever the rest of a request costs, and the matches a query counts.
func BenchmarkTextSearch(b *testing.B) {
	ctx := context.Background()
	for _, target := range benchTargets {
		b.Run(target.name, func(b *testing.B) {
			bw := loadedWorld(b, target)
			features, users := bw.world.Features(), bw.world.Users()
			private := bw.privateProjects()
			terms := []struct {
				name string
				next func(r *rand.Rand) string
			}{
				{"feature", func(r *rand.Rand) string { return features[r.IntN(len(features))].Name }},
				{"user", func(r *rand.Rand) string { return users[r.IntN(len(users))].Username }},
				{"rare", func(*rand.Rand) string { return worldgen.RareWord }},
			}
			for _, term := range terms {
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
			b.Run("mix", func(b *testing.B) {
				var seq, matches atomic.Uint64
				b.RunParallel(func(pb *testing.PB) {
					r := rand.New(rand.NewPCG(20261206, seq.Add(1)))
					for i := 0; pb.Next(); i++ {
						term := terms[2] // the rare word, 1 in 10
						switch n := r.IntN(10); {
						case n < 7:
							term = terms[0]
						case n < 9:
							term = terms[1]
						}
						q := flagadmin.EventQuery{Text: term.next(r), Limit: 50}
						if i%2 == 1 {
							q.HiddenProjects = private
						}
						page, err := bw.store.SearchEvents(ctx, q)
						if err != nil || len(page.Events) != min(page.Total, 50) {
							b.Errorf("query %q: %d events of %d (%v)", q.Text, len(page.Events), page.Total, err)
							return
						}
						matches.Add(uint64(page.Total))
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
				b.ReportMetric(float64(matches.Load())/float64(b.N), "matches/query")
			})
		})
	}
}
