package tlog_test

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// benchEvents is the size of the benchmarks' log: 1,000,000 events, or
// FLAGADMIN_BENCH_LOG_EVENTS.
func benchEvents(b *testing.B) int {
	if v := os.Getenv("FLAGADMIN_BENCH_LOG_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("FLAGADMIN_BENCH_LOG_EVENTS=%q: want a positive integer", v)
		}
		return n
	}
	return 1_000_000
}

var (
	benchOnce  sync.Once
	benchStore *memstore.Store
)

// benchLog is a memstore of benchEvents events with its stored subtree
// hashes built, made once per process.
func benchLog(b *testing.B) *memstore.Store {
	benchOnce.Do(func() {
		start := time.Now()
		benchStore = memstore.New()
		write(b, benchStore, 0, benchEvents(b), "default")
		if err := tlog.NewProver(benchStore).BuildTiles(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Logf("built a log of %d events in %v", benchEvents(b), time.Since(start).Round(time.Millisecond))
	})
	return benchStore
}

// BenchmarkInclusionProof measures inclusion proofs over a log of a
// million events, for random leaves in trees of random sizes, through the
// Service (the event's visibility, its leaf, the proof) and through the
// Prover alone; it reports the 50th and 99th percentiles.
//
//	go test ./adapters/tlog -run XXX -bench InclusionProof -benchtime 5000x
func BenchmarkInclusionProof(b *testing.B) {
	s := benchLog(b)
	n := int64(benchEvents(b))
	ctx := context.Background()
	prover := tlog.NewProver(s)
	svc := vlog.NewService(flagadmin.NewService(s), vlog.Config{Store: s, Prover: prover})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name  string
		proof func(index, size int64) error
	}{
		{"Service", func(index, size int64) error {
			_, err := svc.InclusionProof(ctx, flagadmin.System, vlog.ProofParams{ID: strconv.FormatInt(index+1, 10), Size: strconv.FormatInt(size, 10)})
			return err
		}},
		{"Prover", func(index, size int64) error {
			_, err := prover.InclusionProof(ctx, index, size)
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				size := 1 + rng.Int64N(n)
				index := rng.Int64N(size)
				start := time.Now()
				if err := c.proof(index, size); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkConsistencyProof measures consistency proofs between random
// sizes of the same log.
func BenchmarkConsistencyProof(b *testing.B) {
	s := benchLog(b)
	n := int64(benchEvents(b))
	prover := tlog.NewProver(s)
	rng := rand.New(rand.NewPCG(3, 4))
	for b.Loop() {
		to := 1 + rng.Int64N(n)
		from := 1 + rng.Int64N(to)
		if _, err := prover.ConsistencyProof(context.Background(), from, to); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRootHash measures the root of the whole log, what a checkpoint
// needs.
func BenchmarkRootHash(b *testing.B) {
	s := benchLog(b)
	n := int64(benchEvents(b))
	prover := tlog.NewProver(s)
	for b.Loop() {
		if _, err := prover.RootHash(context.Background(), n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPruneWhileWriting prunes half of a log of a million events
// (FLAGADMIN_BENCH_LOG_EVENTS) in batches of DefaultPruneBatch while a
// writer writes one event at a time, and reports how long pruning took
// and the longest a write waited.
//
//	go test ./adapters/tlog -run XXX -bench PruneWhileWriting -benchtime 1x
func BenchmarkPruneWhileWriting(b *testing.B) {
	n := benchEvents(b)
	for range b.N {
		b.StopTimer()
		s := memstore.New()
		write(b, s, 0, n, "default") // a minute apart from t0
		ctx, cancel := context.WithCancel(context.Background())
		var writes []time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ctx.Err() == nil; i++ {
				start := time.Now()
				if err := s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{event(n+i, "default")}}); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
				writes = append(writes, time.Since(start))
				time.Sleep(time.Millisecond)
			}
		}()
		if _, err := vlog.NewService(flagadmin.NewService(s), vlog.Config{Store: s}).RecordRetention(ctx, flagadmin.System, time.Hour); err != nil {
			b.Fatal(err)
		}
		cut := t0.Add(time.Duration(n/2) * time.Minute) // half the events are older
		p := tlog.NewPruner(s, tlog.PrunerOptions{Clock: func() time.Time { return cut.Add(time.Hour) }})
		b.StartTimer()
		start := time.Now()
		pruned, err := p.Pass(ctx)
		took := time.Since(start)
		b.StopTimer()
		cancel()
		<-done
		if err != nil || pruned != int64(n/2) {
			b.Fatalf("pruned %d (%v), want %d", pruned, err, n/2)
		}
		slices.Sort(writes)
		b.ReportMetric(took.Seconds(), "prune-s")
		b.ReportMetric(float64(writes[len(writes)-1].Microseconds())/1000, "max-write-ms")
		b.ReportMetric(float64(writes[len(writes)*99/100].Microseconds())/1000, "p99-write-ms")
	}
}
