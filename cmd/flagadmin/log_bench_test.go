package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// BenchmarkLogVerifyHTTP runs "flagadmin log verify" (the binary, in a
// process of its own) against a server of 1,000,000 events
// (FLAGADMIN_BENCH_LOG_EVENTS to change it) and reports its time and the
// verifier's peak resident memory. The server runs in the benchmark's
// process, over memstore.
//
//	go test ./cmd/flagadmin -run XXX -bench LogVerifyHTTP -benchtime 1x -timeout 30m
func BenchmarkLogVerifyHTTP(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("FLAGADMIN_BENCH_LOG_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("FLAGADMIN_BENCH_LOG_EVENTS=%q: want a positive integer", v)
		}
	}
	bin := buildBinary(b)
	dir := b.TempDir()
	signing := filepath.Join(dir, "log.key")
	if out, err := exec.Command(bin, "log", "keygen", "--out", signing, "--origin", "bench/log").CombinedOutput(); err != nil {
		b.Fatalf("keygen: %v: %s", err, out)
	}
	start := time.Now()
	store := memstore.New()
	if err := flagadmin.NewService(store).LoadSeed(context.Background(), strings.NewReader(`{"apiTokens":[{"secret":"`+demoAdmin+`","type":"admin"}]}`)); err != nil {
		b.Fatal(err)
	}
	project := "default"
	for done := 0; done < n; {
		batch := &flagadmin.Batch{}
		for ; done < n && len(batch.Events) < 5000; done++ {
			batch.Events = append(batch.Events, flagadmin.Event{Type: flagadmin.EventFeatureStrategyUpdate, CreatedBy: "ada@example.com",
				CreatedByUserID: ptr(int64(1)), CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(done) * time.Second),
				Project: &project, Environment: ptr("production"), FeatureName: ptr(fmt.Sprintf("flag-%d", done%5000)),
				Data:    json.RawMessage(fmt.Sprintf(`{"id":"s-%d","name":"flexibleRollout","parameters":{"rollout":"%d","stickiness":"default"},"constraints":[]}`, done, done%100)),
				PreData: json.RawMessage(fmt.Sprintf(`{"id":"s-%d","name":"flexibleRollout","parameters":{"rollout":"%d","stickiness":"default"},"constraints":[]}`, done, (done+1)%100)),
				Tags:    []flagadmin.Tag{{Type: "simple", Value: "bench"}}})
		}
		if err := store.Write(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	base := logServer(b, store, signing, nil)
	b.Logf("a server of %d events in %v", n, time.Since(start).Round(time.Millisecond))
	for b.Loop() {
		benchVerify(b, bin, base, signing, n)
	}
}

// watchPeakRSS returns the largest VmHWM (peak resident memory, KiB) read
// from /proc/PID/status every 20 ms until the process is gone.
func watchPeakRSS(pid int) int64 {
	var peak int64
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return peak
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				if kb, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64); err == nil {
					peak = max(peak, kb)
				}
			}
			if strings.HasPrefix(line, "State:") && strings.Contains(line, "zombie") {
				return peak
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
