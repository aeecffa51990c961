package bunstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// BenchmarkLifecycleWrites times lifecycle completions through the
// Service (UpdateFeature: the feature row locked and changed, the
// summaries kept, the version raised, one event appended), one at a time
// (with and without waiting for its leaf) and from 16 goroutines, on the
// benchmark world, walking its active
// features in order. It writes: run it on a copy of the benchmark
// database (FLAGADMIN_BENCH_DATABASE, or a copy of the SQLite file), as
// the search benchmarks check the world's totals.
func BenchmarkLifecycleWrites(b *testing.B) {
	ctx := context.Background()
	for _, target := range benchTargets {
		b.Run(target.name, func(b *testing.B) {
			bw := loadedWorld(b, target)
			var features []flagadmin.Feature
			for _, f := range bw.world.Features() {
				if f.ArchivedAt == nil {
					features = append(features, f)
				}
			}
			var next atomic.Uint64
			complete := func() error {
				n := next.Add(1)
				f := features[n%uint64(len(features))]
				status := flagadmin.StatusKept
				if (n/uint64(len(features)))%2 == 1 {
					status = flagadmin.StatusDiscarded
				}
				return bw.svc.CompleteLifecycle(ctx, bw.admin, f.Project, f.Name, flagadmin.CompleteRequest{Status: status})
			}
			// One at a time, and each with its leaf appended, as a
			// reader of the log that follows the write waits for
			// (LogSize settles the store's leaves).
			for _, serial := range []struct {
				name     string
				withLeaf bool
			}{{"serial", false}, {"serial-with-leaf", true}} {
				b.Run(serial.name, func(b *testing.B) {
					var lat latencies
					for b.Loop() {
						start := time.Now()
						if err := complete(); err != nil {
							b.Fatal(err)
						}
						if serial.withLeaf {
							if _, err := bw.store.LogSize(ctx); err != nil {
								b.Fatal(err)
							}
						}
						lat.time(start)
					}
					lat.report(b)
				})
			}
			b.Run("parallel-16", func(b *testing.B) {
				b.SetParallelism(8) // 16 goroutines on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := complete(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}
