package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// BenchmarkLogSQL measures the verifiable log and retention on a SQL
// store (FLAGADMIN_BENCH_LOG_DB, a database URL whose store is empty;
// skipped without it) of 1,000,000 events (FLAGADMIN_BENCH_LOG_EVENTS),
// loaded with bunstore's Load, served over HTTP in the benchmark's
// process:
//
//   - proof: 2,000 inclusion proofs of random events in the whole tree,
//     GET /api/admin/log/proof one after another (p50, p99), in one read
//     of the store, and 2,000 read step by step (the store opened without
//     its ProofReads tuning), in turns;
//   - verify: "flagadmin log verify --url" (the binary, a process of its
//     own): its time and peak resident memory;
//   - prune: the older half of the events pruned in batches of 500
//     (tlog's pruner, 20 ms between batches) while 4 goroutines complete
//     lifecycles: the pruning's time, and the writes' p99 and longest
//     wait, against the same writes for 5 s before the pruning.
//
// FLAGADMIN_BENCH_LOG_PARTS names the parts to run, comma-separated
// (default "proof,verify,prune").
//
// scripts/bench-log.sh runs it on PostgreSQL and SQLite:
//
//	FLAGADMIN_BENCH_LOG_DB=sqlite:/tmp/log.db go test ./cmd/flagadmin -run '^$' -bench LogSQL -benchtime 1x -timeout 60m -v
func BenchmarkLogSQL(b *testing.B) {
	dbURL := os.Getenv("FLAGADMIN_BENCH_LOG_DB")
	if dbURL == "" {
		b.Skip("FLAGADMIN_BENCH_LOG_DB is not set: give the URL of a database with an empty store")
	}
	n := 1_000_000
	if v := os.Getenv("FLAGADMIN_BENCH_LOG_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			b.Fatalf("FLAGADMIN_BENCH_LOG_EVENTS=%q: want an integer of 2 or more", v)
		}
	}
	parts := map[string]bool{"proof": true, "verify": true, "prune": true}
	if v := os.Getenv("FLAGADMIN_BENCH_LOG_PARTS"); v != "" {
		parts = map[string]bool{}
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "proof" && p != "verify" && p != "prune" {
				b.Fatalf("FLAGADMIN_BENCH_LOG_PARTS=%q: want parts of proof, verify, prune", v)
			}
			parts[strings.TrimSpace(p)] = true
		}
	}
	ctx := context.Background()
	bin := buildBinary(b)
	signing := filepath.Join(b.TempDir(), "log.key")
	if out, err := exec.Command(bin, "log", "keygen", "--out", signing, "--origin", "bench/log").CombinedOutput(); err != nil {
		b.Fatalf("keygen: %v: %s", err, out)
	}
	store, err := bunstore.Open(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	start := time.Now()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	project := "default"
	err = store.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error {
		batch := make([]flagadmin.Event, 0, 5000)
		for i := range n {
			batch = append(batch, flagadmin.Event{ID: int64(i + 1), Type: flagadmin.EventFeatureStrategyUpdate, CreatedBy: "ada@example.com",
				CreatedByUserID: ptr(int64(1)), CreatedAt: t0.Add(time.Duration(i) * time.Second),
				Project: &project, Environment: ptr("production"), FeatureName: ptr(fmt.Sprintf("flag-%d", i%5000)),
				Data:    json.RawMessage(fmt.Sprintf(`{"id":"s-%d","name":"flexibleRollout","parameters":{"rollout":"%d","stickiness":"default"},"constraints":[]}`, i, i%100)),
				PreData: json.RawMessage(fmt.Sprintf(`{"id":"s-%d","name":"flexibleRollout","parameters":{"rollout":"%d","stickiness":"default"},"constraints":[]}`, i, (i+1)%100)),
				Tags:    []flagadmin.Tag{{Type: "simple", Value: "bench"}}})
			if len(batch) == cap(batch) || i == n-1 {
				if err := emit(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d events with their leaves in %v", n, time.Since(start).Round(time.Millisecond))
	var seed strings.Builder
	seed.WriteString(`{"apiTokens":[{"secret":"` + demoAdmin + `","type":"admin"}],"projects":[{"id":"default"}],"features":[`)
	for i := range 64 {
		if i > 0 {
			seed.WriteString(",")
		}
		fmt.Fprintf(&seed, `{"name":"w-%d","project":"default"}`, i)
	}
	seed.WriteString("]}")
	if err := flagadmin.NewService(store).LoadSeed(ctx, strings.NewReader(seed.String())); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	if err := tlog.NewProver(store).BuildTiles(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("stored the subtree hashes in %v", time.Since(start).Round(time.Millisecond))
	base := logServer(b, store, signing, nil)
	size, _ := store.LogSize(ctx)

	for b.Loop() {
		if parts["proof"] {
			// The same store with the proofs read step by step, for the
			// speed-up's ratio.
			plain, err := bunstore.Open(ctx, dbURL, bunstore.WithoutMigrate(), bunstore.WithoutTuning(bunstore.ProofReads))
			if err != nil {
				b.Fatal(err)
			}
			proofs(b, map[string]string{"in one read": base, "step by step": logServer(b, plain, signing, nil)}, n, size)
			plain.Close()
		}
		if parts["verify"] {
			verify(b, bin, base, signing, n)
		}
		if parts["prune"] {
			prune(b, store, bin, base, signing, n, t0)
		}
	}
}

// proofs times 2,000 inclusion proofs of random events of the n in the
// tree of size leaves, over HTTP, one after another, from each server of
// servers (by name), in turns.
func proofs(b *testing.B, servers map[string]string, n int, size int64) {
	names := slices.Sorted(maps.Keys(servers))
	took := map[string][]time.Duration{}
	for i := range 2000 * len(names) {
		name := names[i%len(names)]
		id := 1 + rand.Int64N(int64(n))
		begin := time.Now()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/admin/log/proof?id=%d&size=%d", servers[name], id, size), nil)
		req.Header.Set("Authorization", demoAdmin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var body struct{ Hashes []string }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		took[name] = append(took[name], time.Since(begin))
		if err != nil || resp.StatusCode != http.StatusOK || len(body.Hashes) == 0 {
			b.Fatalf("proof of %d: %d %v %d hashes", id, resp.StatusCode, err, len(body.Hashes))
		}
	}
	for _, name := range names {
		p50, p99, _ := quantiles(took[name])
		b.Logf("inclusion proofs over HTTP at %d leaves, %s: p50 %v, p99 %v", size, name, p50, p99)
		if name == "in one read" {
			b.ReportMetric(float64(p99.Microseconds())/1000, "proof-p99-ms")
		}
	}
}

// verify times "flagadmin log verify --url" of the n events and watches
// its peak resident memory.
func verify(b *testing.B, bin, base, signing string, n int) {
	cmd := exec.Command(bin, "log", "verify", "--url", base, "--token", demoAdmin, "--key", signing+".pub")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	peak := make(chan int64)
	go func() { peak <- watchPeakRSS(cmd.Process.Pid) }()
	err := cmd.Wait()
	verifyTook, rss := time.Since(begin), <-peak
	if err != nil || !strings.Contains(out.String(), fmt.Sprintf("OK: %d events", n)) {
		b.Fatalf("log verify: %v\n%s", err, out.String())
	}
	b.Logf("log verify over HTTP of %d events: %v, peak RSS %d MiB", n, verifyTook.Round(time.Millisecond), rss/1024)
	b.ReportMetric(verifyTook.Seconds(), "verify-s")
	b.ReportMetric(float64(rss)/1024, "verifier-peak-RSS-MiB")
}

// prune prunes the older half of the n events while 4 goroutines complete
// lifecycles, and times both.
func prune(b *testing.B, store *bunstore.Store, bin, base, signing string, n int, t0 time.Time) {
	ctx := context.Background()
	svc := flagadmin.NewService(store)
	writes := func(stop <-chan struct{}) []time.Duration {
		var mu sync.Mutex
		var all []time.Duration
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					status := flagadmin.StatusKept
					if i%2 == 1 {
						status = flagadmin.StatusDiscarded
					}
					begin := time.Now()
					err := svc.CompleteLifecycle(ctx, flagadmin.AdminToken("bench"), "default", fmt.Sprintf("w-%d", (g*16+i)%64), flagadmin.CompleteRequest{Status: status})
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					all = append(all, time.Since(begin))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return all
	}
	stop := make(chan struct{})
	time.AfterFunc(5*time.Second, func() { close(stop) })
	alone := writes(stop)
	stop = make(chan struct{})
	var during []time.Duration
	done := make(chan struct{})
	go func() { during = writes(stop); close(done) }()
	cut := t0.Add(time.Duration(n/2) * time.Second)
	pruner := tlog.NewPruner(store, time.Hour, tlog.PrunerOptions{Clock: func() time.Time { return cut.Add(time.Hour) }})
	begin := time.Now()
	pruned, err := pruner.Pass(ctx)
	pruneTook := time.Since(begin)
	close(stop)
	<-done
	if err != nil || pruned != int64(n/2) {
		b.Fatalf("pruned %d events (%v), want %d", pruned, err, n/2)
	}
	a50, a99, amax := quantiles(alone)
	d50, d99, dmax := quantiles(during)
	b.Logf("pruned %d events in %v (%.0f events/s)", pruned, pruneTook.Round(time.Millisecond), float64(pruned)/pruneTook.Seconds())
	b.Logf("4 writers, 5 s alone: %d writes, p50 %v, p99 %v, longest %v", len(alone), a50, a99, amax)
	b.Logf("4 writers, while pruning: %d writes, p50 %v, p99 %v, longest %v", len(during), d50, d99, dmax)
	b.ReportMetric(float64(dmax.Microseconds())/1000, "write-max-ms-pruning")
	b.ReportMetric(pruneTook.Seconds(), "prune-s")
	// The proofs of the remaining events still verify.
	wantVerifyOK := exec.Command(bin, "log", "verify", "--url", base, "--token", demoAdmin, "--key", signing+".pub")
	if out, err := wantVerifyOK.CombinedOutput(); err != nil || !strings.Contains(string(out), "removed by retention") {
		b.Fatalf("log verify after pruning: %v\n%s", err, out)
	}
}

// quantiles returns the p50, p99 and largest of durations.
func quantiles(d []time.Duration) (p50, p99, largest time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*99/100], s[len(s)-1]
}
