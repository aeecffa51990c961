package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/webhooks"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// BenchmarkDelivery measures the delivery of a backlog of b.N events to
// one sink whose receiver is a local HTTP server that checks every
// signature: events/s is the throughput of one sink, from the engine's
// start to the stored position reaching the last event (every event POSTed,
// answered 200, and its position written to the database). Run it with
// scripts/bench-webhooks.sh.
func BenchmarkDelivery(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) testStore
	}{
		{"memory", func(*testing.B) testStore { return memstore.New() }},
		{"SQLite", func(b *testing.B) testStore { return openBench(b, dbtest.SQLite(b)) }},
		{"Postgres", func(b *testing.B) testStore { return openBench(b, dbtest.Postgres(b)) }},
		{"MySQL", func(b *testing.B) testStore { return openBench(b, dbtest.MySQL(b)) }},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			ctx := context.Background()
			if _, err := s.RegisterSink(ctx, "bench", time.Now()); err != nil {
				b.Fatal(err)
			}
			var last int64
			for done := 0; done < b.N; {
				batch := &flagadmin.Batch{}
				for i := 0; i < 1000 && done < b.N; i++ {
					batch.Events = append(batch.Events, flagadmin.Event{
						Type: flagadmin.EventFeatureUpdated, CreatedBy: "bench@example.com", CreatedAt: time.Now().UTC(),
						Project: ptr("default"), FeatureName: ptr("feature-" + strconv.Itoa(done%500)), Environment: ptr("production"),
						Data:    json.RawMessage(`{"name":"flexibleRollout","parameters":{"rollout":"` + strconv.Itoa(done%100) + `","stickiness":"default","groupId":"feature"}}`),
						PreData: json.RawMessage(`{"name":"flexibleRollout","parameters":{"rollout":"50","stickiness":"default","groupId":"feature"}}`),
						Tags:    []flagadmin.Tag{{Type: "simple", Value: "checkout"}},
					})
					done++
				}
				if err := s.Write(ctx, batch); err != nil {
					b.Fatal(err)
				}
				last = batch.Events[len(batch.Events)-1].ID
			}
			var received atomic.Int64
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if webhooks.Verify(secret, r.Header.Get(webhooks.HeaderTimestamp), r.Header.Get(webhooks.HeaderSignature), body, time.Now(), time.Minute) != nil {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				received.Add(1)
			}))
			defer recv.Close()
			e, err := webhooks.New(s, []flagadmin.WebhookSink{sinkTo("bench", recv.URL, flagadmin.EventSearchParams{})}, webhooks.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			e.Start(ctx)
			for e.Stats()[0].Position < last {
				time.Sleep(time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			e.Stop(ctx)
			if got := received.Load(); got != int64(b.N) {
				b.Fatalf("received %d, want %d", got, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
		})
	}
}

func openBench(b *testing.B, u string) *bunstore.Store {
	s, err := bunstore.Open(context.Background(), u, bunstore.WithTimeout(5*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
