package bunstore_test

// Benchmarks of the SQL store at realistic size (a million events). They
// skip unless a database is configured:
//
//	FLAGADMIN_BENCH_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//	FLAGADMIN_BENCH_MYSQL_DSN=mysql://root@127.0.0.1:3306/test
//	FLAGADMIN_BENCH_SQLITE=/tmp/flagadmin-storebench/bench.db
//	FLAGADMIN_BENCH_EVENTS=1000000 (default)
//
// The first run loads the world into database flagadmin_storebench on the
// server of the DSN (or the SQLite file) and marks it; later runs reuse it.
// scripts/bench-store.sh runs everything and prints medians.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// latencies records the duration of each operation of a benchmark and
// reports their median and 99th percentile besides ns/op.
type latencies []time.Duration

func (l *latencies) time(start time.Time) { *l = append(*l, time.Since(start)) }

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	ms := func(q float64) float64 {
		return float64(l[min(len(l)-1, int(q*float64(len(l))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// BenchmarkSearch times a page of 50 with its exact total for each probe of
// the world (no filter, each single filter, IS_ANY_OF of 5 projects, a
// month, a selective query, offset 100000): through Store.SearchEvents, and
// through Service.SearchEvents as a root admin (parsing and visibility
// included). Every result is checked against the total the probe promises.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	for _, target := range benchTargets {
		b.Run(target.name, func(b *testing.B) {
			bw := loadedWorld(b, target)
			probes := bw.world.Probes()
			b.Run("store", func(b *testing.B) {
				for _, p := range probes {
					q := p.Query()
					b.Run(p.Name, func(b *testing.B) {
						var lat latencies
						for b.Loop() {
							start := time.Now()
							page, err := bw.store.SearchEvents(ctx, q)
							lat.time(start)
							checkPage(b, p, page, err)
						}
						lat.report(b)
					})
				}
			})
			b.Run("service", func(b *testing.B) {
				for _, p := range probes {
					b.Run(p.Name, func(b *testing.B) {
						var lat latencies
						for b.Loop() {
							start := time.Now()
							page, err := bw.svc.SearchEvents(ctx, bw.admin, p.Params)
							lat.time(start)
							checkPage(b, p, page, err)
						}
						lat.report(b)
					})
				}
			})
		})
	}
}

func checkPage(b *testing.B, p worldgen.Probe, page flagadmin.EventPage, err error) {
	if err != nil {
		b.Fatalf("%s: %v", p.Name, err)
	}
	if page.Total != p.Total {
		b.Fatalf("%s: got total %d, want %d", p.Name, page.Total, p.Total)
	}
	if want := min(50, max(0, p.Total-p.Query().Offset)); len(page.Events) != want {
		b.Fatalf("%s: got %d events, want %d", p.Name, len(page.Events), want)
	}
}

// deepPages is how many offsets, spread evenly over the history,
// BenchmarkDeepPage visits in turn.
const deepPages = 97

// BenchmarkDeepPage times a page of 50 with its exact total at offsets
// spread over the whole history (as flagadmin-bench's varied/offset does:
// the page skips whole months, then days, by their counts), through Store.SearchEvents,
// for each visibility: all events (an admin), only events with a project,
// and all but the world's private projects (a viewer). Every page is
// checked for 50 events and a total that does not change.
func BenchmarkDeepPage(b *testing.B) {
	ctx := context.Background()
	for _, target := range benchTargets {
		b.Run(target.name, func(b *testing.B) {
			bw := loadedWorld(b, target)
			private := bw.privateProjects()
			for _, v := range []struct {
				name string
				q    flagadmin.EventQuery
			}{
				{"all", flagadmin.EventQuery{}},
				{"with-project", flagadmin.EventQuery{RequireProject: true}},
				{"hidden-private", flagadmin.EventQuery{RequireProject: true, HiddenProjects: private}},
			} {
				b.Run(v.name, func(b *testing.B) {
					q := v.q
					q.Limit = 50
					first, err := bw.store.SearchEvents(ctx, q)
					if err != nil {
						b.Fatal(err)
					}
					total := first.Total
					var lat latencies
					i := 0
					for b.Loop() {
						q.Offset = 1000 + i%deepPages*(total-1050)/(deepPages-1)
						i++
						start := time.Now()
						page, err := bw.store.SearchEvents(ctx, q)
						lat.time(start)
						if err != nil || page.Total != total || len(page.Events) != 50 {
							b.Fatalf("offset %d: got total %d and %d events, want %d and 50 (%v)", q.Offset, page.Total, len(page.Events), total, err)
						}
					}
					lat.report(b)
				})
			}
		})
	}
}

// BenchmarkProjectStats times the figures of the project list (200
// projects, 20,000 features, the whole event history), from the Store and
// as the Service's ListProjects for a root admin.
func BenchmarkProjectStats(b *testing.B) {
	ctx := context.Background()
	for _, target := range benchTargets {
		b.Run(target.name, func(b *testing.B) {
			bw := loadedWorld(b, target)
			cfg := bw.world.Config()
			user := int64(1)
			q := flagadmin.ProjectStatsQuery{FavoritesOf: &user, PotentiallyStaleBefore: flagadmin.PotentiallyStaleCutoffs(cfg.End)}
			active := 0
			for _, p := range bw.world.Projects() {
				if p.ArchivedAt == nil {
					active++
				}
			}
			b.Run("store", func(b *testing.B) {
				var lat latencies
				for b.Loop() {
					start := time.Now()
					stats, err := bw.store.ProjectStats(ctx, q)
					lat.time(start)
					if err != nil || len(stats) != active {
						b.Fatalf("got %d projects, want %d (%v)", len(stats), active, err)
					}
				}
				lat.report(b)
			})
			b.Run("service", func(b *testing.B) {
				var lat latencies
				for b.Loop() {
					start := time.Now()
					list, err := bw.svc.ListProjects(ctx, bw.admin, flagadmin.ProjectListOptions{})
					lat.time(start)
					if err != nil || len(list) != active {
						b.Fatalf("got %d projects, want %d (%v)", len(list), active, err)
					}
				}
				lat.report(b)
			})
		})
	}
}

// insertChunk is how many of the world's events BenchmarkInsertEvents
// writes in every iteration.
const insertChunk = 100_000

// BenchmarkInsertEvents times the bulk path, InsertEvents, writing 100,000
// of the world's events per iteration into a separate database
// (flagadmin_storebench_insert, dropped afterwards) that holds the world's other
// rows; the table grows by that much with each iteration. It reports
// events/s.
func BenchmarkInsertEvents(b *testing.B) {
	ctx := context.Background()
	for _, target := range benchTargets {
		b.Run(target.name, func(b *testing.B) {
			setting := target.setting(b)
			cfg, err := benchConfig()
			if err != nil {
				b.Fatal(err)
			}
			w := worldgen.MustNew(cfg)
			events := w.FirstEvents(min(insertChunk, cfg.Events))
			for _, batchSize := range []int{1000, 5000} {
				b.Run(fmt.Sprintf("batch-%d", batchSize), func(b *testing.B) {
					db, err := openBenchDB(ctx, target.name, setting, insertDatabase)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(db.close)
					if err := db.recreate(ctx); err != nil {
						b.Fatal(err)
					}
					store, err := bunstore.Open(ctx, db.storeURL)
					if err != nil {
						b.Fatal(err)
					}
					// Cleanups run last-in first-out: the store closes, then the database is dropped, then the handle closes.
					b.Cleanup(func() {
						if err := db.drop(context.Background()); err != nil {
							fmt.Fprintf(os.Stderr, "drop %s: %v\n", db.dbName, err)
						}
					})
					b.Cleanup(func() { store.Close() })
					if err := store.Write(ctx, w.Batch()); err != nil {
						b.Fatal(err)
					}
					start, n := time.Now(), 0
					for b.Loop() {
						if err := store.InsertEvents(ctx, events, batchSize); err != nil {
							b.Fatal(err)
						}
						n += len(events)
					}
					b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
				})
			}
		})
	}
}
