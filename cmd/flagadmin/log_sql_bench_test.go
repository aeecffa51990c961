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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
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
//   - prune: the older half of the events pruned by tlog's pruner (batches
//     sized to its time budget, 20 ms between them) while 4 goroutines complete
//     lifecycles: the pruning's time, and the writes' p99 and longest
//     wait, against the same writes before the pruning (5 s); the
//     batches' durations, and the writes that waited longer than 50 ms,
//     each with the longest batch that ran while it waited.
//
// FLAGADMIN_BENCH_LOG_PARTS names the parts to run (default "proof verify
// prune"; "" only loads), FLAGADMIN_BENCH_LOG_PRUNE how many events the
// pruning removes (default half), FLAGADMIN_BENCH_LOG_ALONE how long the
// writes run before the pruning (default 5s; "3m" with a PRUNE of 1
// measures what the machine's writes wait with no pruning). A store that already holds events (a
// copy of one loaded before) is used as it is, without loading it again;
// FLAGADMIN_BENCH_LOG_KEY names the signing key to use (made when
// missing; default a new one), the same key for every run on such a store,
// whose checkpoints it signed.
// On SQLite the size of the write-ahead log is printed after each part.
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
	parts, ok := os.LookupEnv("FLAGADMIN_BENCH_LOG_PARTS")
	if !ok {
		parts = "proof verify prune"
	}
	run := func(part string) bool { return slices.Contains(strings.Fields(parts), part) }
	ctx := context.Background()
	bin := buildBinary(b)
	signing := os.Getenv("FLAGADMIN_BENCH_LOG_KEY")
	if signing == "" {
		signing = filepath.Join(b.TempDir(), "log.key")
	}
	if _, err := os.Stat(signing); err != nil {
		if out, err := exec.Command(bin, "log", "keygen", "--out", signing, "--origin", "bench/log").CombinedOutput(); err != nil {
			b.Fatalf("keygen: %v: %s", err, out)
		}
	}
	store, err := bunstore.Open(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if held, err := store.LogSize(ctx); err != nil {
		b.Fatal(err)
	} else if held > 0 {
		b.Logf("the store holds %d events already: not loaded again", held)
	} else {
		loadLogBench(b, store, n, t0)
	}
	base := logServer(b, store, signing, nil)
	size, _ := store.LogSize(ctx)

	prune := n / 2
	if v := os.Getenv("FLAGADMIN_BENCH_LOG_PRUNE"); v != "" {
		if prune, err = strconv.Atoi(v); err != nil || prune < 1 || prune > n {
			b.Fatalf("FLAGADMIN_BENCH_LOG_PRUNE=%q: want an integer from 1 to %d", v, n)
		}
	}
	wal := func(after string) {
		if path, ok := strings.CutPrefix(dbURL, "sqlite:"); ok {
			if fi, err := os.Stat(path + "-wal"); err == nil {
				b.Logf("write-ahead log after %s: %.1f MiB", after, float64(fi.Size())/(1<<20))
			}
		}
	}
	wal("the load")
	for b.Loop() {
		if run("proof") {
			// The same store with the proofs read step by step, for the
			// speed-up's ratio.
			plain, err := bunstore.Open(ctx, dbURL, bunstore.WithoutMigrate(), bunstore.WithoutTuning(bunstore.ProofReads))
			if err != nil {
				b.Fatal(err)
			}
			benchProofs(b, map[string]string{"in one read": base, "step by step": logServer(b, plain, signing, nil)}, n, size)
			plain.Close()
			wal("the proofs")
		}
		if run("verify") {
			benchVerify(b, bin, base, signing, n)
			wal("the verification")
		}
		if run("prune") {
			benchPrune(b, store, bin, base, signing, n, prune, t0, wal)
		}
	}
}

// loadLogBench loads n events into the empty store, one a second from t0,
// the seed of the writers' features, and the subtree hashes.
func loadLogBench(b *testing.B, store *bunstore.Store, n int, t0 time.Time) {
	ctx := context.Background()
	start := time.Now()
	project := "default"
	err := store.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error {
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
}

// benchProofs times 2,000 inclusion proofs of random events of the n in
// the tree of size leaves, over HTTP, one after another, from each server
// of servers (by name), in turns.
func benchProofs(b *testing.B, servers map[string]string, n int, size int64) {
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

// benchVerify times "flagadmin log verify" of the whole log of n events
// over HTTP (BenchmarkLogSQL, and BenchmarkLogVerifyHTTP on the memory store).
func benchVerify(b *testing.B, bin, base, signing string, n int) {
	cmd := exec.Command(bin, "log", "verify", "--url", base, "--token", demoAdmin, "--key", signing+".pub")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	// The child's rusage would count this process's memory (it is started
	// sharing it): read its own high-water mark instead.
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
	b.ReportMetric(float64(n)/verifyTook.Seconds(), "events/s")
}

// benchPrune prunes the oldest prune of the n events while 4 writers
// complete lifecycles, and checks the log still verifies.
func benchPrune(b *testing.B, store *bunstore.Store, bin, base, signing string, n, prune int, t0 time.Time, wal func(after string)) {
	ctx := context.Background()
	svc := flagadmin.NewService(store)
	writes := func(stop <-chan struct{}) []span {
		var mu sync.Mutex
		var all []span
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
					stacks := stacksAfter(time.Second, "a write")
					err := svc.CompleteLifecycle(ctx, flagadmin.AdminToken("bench"), "default", fmt.Sprintf("w-%d", (g*16+i)%64), flagadmin.CompleteRequest{Status: status})
					stacks.Stop()
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					all = append(all, span{begin, time.Now()})
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return all
	}
	stop := make(chan struct{})
	alonePeriod := 5 * time.Second
	if v := os.Getenv("FLAGADMIN_BENCH_LOG_ALONE"); v != "" {
		var err error
		if alonePeriod, err = time.ParseDuration(v); err != nil || alonePeriod <= 0 {
			b.Fatalf("FLAGADMIN_BENCH_LOG_ALONE=%q: want a positive duration", v)
		}
	}
	time.AfterFunc(alonePeriod, func() { close(stop) })
	alone := writes(stop)
	wal("the writes alone")
	stop = make(chan struct{})
	var during []span
	done := make(chan struct{})
	go func() { during = writes(stop); close(done) }()
	cut := t0.Add(time.Duration(prune) * time.Second)
	batches := &timedPrunes{Store: store}
	// The rule the pruner prunes by, as a server started with
	// --retention 1h records it.
	if _, err := vlog.NewService(flagadmin.NewService(store), vlog.Config{Store: store}).RecordRetention(ctx, flagadmin.System, time.Hour); err != nil {
		b.Fatal(err)
	}
	pruner := tlog.NewPruner(batches, tlog.PrunerOptions{Clock: func() time.Time { return cut.Add(time.Hour) }})
	begin := time.Now()
	pruned, err := pruner.Pass(ctx)
	pruneTook := time.Since(begin)
	close(stop)
	<-done
	if err != nil || pruned != int64(prune) {
		b.Fatalf("pruned %d events (%v), want %d", pruned, err, prune)
	}
	wal("the pruning")
	a50, a99, amax := quantiles(durations(alone))
	d50, d99, dmax := quantiles(durations(during))
	b50, b99, bmax := quantiles(durations(batches.spans))
	b.Logf("pruned %d events in %v (%.0f events/s), %d batches (%d events on average): p50 %v, p99 %v, longest %v", pruned,
		pruneTook.Round(time.Millisecond), float64(pruned)/pruneTook.Seconds(), len(batches.spans), pruned/int64(len(batches.spans)), b50, b99, bmax)
	if k := len(batches.spans) / 10; k > 0 {
		first, _, _ := quantiles(durations(batches.spans[:k]))
		last, _, _ := quantiles(durations(batches.spans[len(batches.spans)-k:]))
		b.Logf("batches: p50 of the first tenth %v, of the last %v", first, last)
	}
	aloneSlow := 0
	for _, w := range alone {
		if w.took() > 50*time.Millisecond {
			aloneSlow++
		}
	}
	b.Logf("4 writers, %v alone: %d writes, p50 %v, p99 %v, longest %v; longer than 50 ms: %d", alonePeriod, len(alone), a50, a99, amax, aloneSlow)
	b.Logf("4 writers, while pruning: %d writes, p50 %v, p99 %v, longest %v", len(during), d50, d99, dmax)
	slow := 0
	for _, w := range during {
		if w.took() <= 50*time.Millisecond {
			continue
		}
		if slow++; slow <= 20 {
			var longest time.Duration
			overlapping := 0
			for _, p := range batches.spans {
				if p.start.Before(w.end) && p.end.After(w.start) {
					overlapping++
					longest = max(longest, p.took())
				}
			}
			b.Logf("  a write of %v at %v: %d batches ran meanwhile, the longest %v", w.took().Round(time.Millisecond),
				w.start.Sub(begin).Round(time.Millisecond), overlapping, longest.Round(time.Millisecond))
		}
	}
	b.Logf("writes longer than 50 ms while pruning: %d", slow)
	b.ReportMetric(float64(dmax.Microseconds())/1000, "write-max-ms-pruning")
	b.ReportMetric(pruneTook.Seconds(), "prune-s")
	// The proofs of the remaining events still verify, up to a checkpoint
	// signed now, of the events written meanwhile too (signed with this
	// run's key: a copy of a store loaded before holds one of another).
	_, skey, err := loadLogKey(signing)
	if err != nil {
		b.Fatal(err)
	}
	signer, err := tlog.NewSigner(store, tlog.NewProver(store), skey, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := signer.Sign(ctx); err != nil {
		b.Fatalf("signing a checkpoint after the pruning: %v", err)
	}
	wantVerifyOK := exec.Command(bin, "log", "verify", "--url", base, "--token", demoAdmin, "--key", signing+".pub")
	if out, err := wantVerifyOK.CombinedOutput(); err != nil || !strings.Contains(string(out), "removed by retention") {
		b.Fatalf("log verify after pruning: %v\n%s", err, out)
	}
}

// span is when something ran.
type span struct{ start, end time.Time }

// took is how long the span lasted.
func (s span) took() time.Duration { return s.end.Sub(s.start) }

// durations returns how long each span lasted.
func durations(spans []span) []time.Duration {
	d := make([]time.Duration, len(spans))
	for i, s := range spans {
		d[i] = s.took()
	}
	return d
}

// stacksAfter appends the stacks of every goroutine to the file
// FLAGADMIN_BENCH_LOG_STACKS, if set, once d has passed, unless stopped.
func stacksAfter(d time.Duration, what string) *time.Timer {
	path := os.Getenv("FLAGADMIN_BENCH_LOG_STACKS")
	return time.AfterFunc(d, func() {
		if path == "" {
			return
		}
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "== %s running for %v at %s\n%s\n", what, d, time.Now().UTC().Format(time.StampMilli), buf)
			f.Close()
		}
	})
}

// timedPrunes records when each PruneEvents call of a pruner ran (one
// pruner: no lock).
type timedPrunes struct {
	vlog.Store
	spans []span
}

// PruneEvents implements vlog.Store. With
// FLAGADMIN_BENCH_LOG_STACKS set, the stacks of every goroutine while a
// batch has run for a second are appended to that file.
func (t *timedPrunes) PruneEvents(ctx context.Context, limit int, cutoff func(*flagadmin.Event) (time.Time, error), record func([]int64) (flagadmin.Event, error)) ([]int64, error) {
	start := time.Now()
	defer stacksAfter(time.Second, fmt.Sprintf("a batch of %d", limit)).Stop()
	ids, err := t.Store.PruneEvents(ctx, limit, cutoff, record)
	t.spans = append(t.spans, span{start, time.Now()})
	return ids, err
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
