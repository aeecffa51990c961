package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// goroutines is how many concurrent callers the concurrency cases start.
const goroutines = 50

// together runs fn(i) for i in [0, n) in n goroutines released at once and
// returns their errors by i.
func together(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return errs
}

func concurrencyCases() []testCase {
	return []testCase{
		{"concurrency/deleting one service account from 50 goroutines deletes it once", func(t *testing.T, w *world) {
			w.load(serviceAccountFixture())
			admin := w.as(adminSecret)
			errs := together(goroutines, func(int) error {
				return w.svc.DeleteServiceAccount(w.ctx, admin, "10")
			})
			ok, missing := 0, 0
			for i, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, flagadmin.ErrNotFound):
					missing++
				default:
					t.Errorf("goroutine %d: got error %v, want nil or %v", i, err, flagadmin.ErrNotFound)
				}
			}
			wantEqual(t, "successful deletes", ok, 1)
			wantEqual(t, "not found", missing, goroutines-1)
			w.wantDeletedEvents(t, 1)
			w.wantAccount(t, ciID, false)
			w.wantAuth(t, ciSecret, false)
		}},
		{"concurrency/completing one feature from 50 goroutines records one event", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			eve := w.as(eveSecret)
			errs := together(goroutines, func(int) error {
				return w.svc.CompleteLifecycle(w.ctx, eve, "default", "alpha", kept("v1"))
			})
			for i, err := range errs {
				if err != nil {
					t.Errorf("goroutine %d: got error %v, want nil", i, err)
				}
			}
			w.wantCompletedEvents(t, 1)
			w.wantLifecycle(t, "alpha", completed(flagadmin.StatusKept, "v1"))
		}},
		{"concurrency/competing outcomes leave the state of the last event", func(t *testing.T, w *world) {
			w.load(lifecycleFixture())
			admin := w.as(adminSecret)
			errs := together(goroutines, func(i int) error {
				req := kept(fmt.Sprint(i % 3))
				if i%2 == 1 {
					req = discarded(fmt.Sprint(i % 3))
				}
				return w.svc.CompleteLifecycle(w.ctx, admin, "default", "alpha", req)
			})
			for i, err := range errs {
				if err != nil {
					t.Errorf("goroutine %d: got error %v, want nil", i, err)
				}
			}
			events := w.eventsOfType(flagadmin.EventFeatureCompleted)
			if len(events) < 1 || len(events) > goroutines {
				t.Fatalf("got %d feature-completed events, want 1 to %d", len(events), goroutines)
			}
			type outcome struct {
				Status      string `json:"status"`
				StatusValue string `json:"statusValue"`
			}
			outcomes := make([]outcome, len(events))
			for i, e := range events {
				if err := json.Unmarshal(e.Data, &outcomes[i]); err != nil {
					t.Fatalf("event %d data %s: %v", i, e.Data, err)
				}
			}
			last := outcomes[len(outcomes)-1]
			w.wantLifecycle(t, "alpha", completed(last.Status, last.StatusValue))
			// No two consecutive events record the same outcome: each one is a change.
			for i := 1; i < len(outcomes); i++ {
				if outcomes[i] == outcomes[i-1] {
					t.Errorf("events %d and %d: got outcome %+v twice, want each event to record a change", i-1, i, outcomes[i])
				}
			}
		}},
		{"concurrency/events appended from 50 goroutines get distinct ids", func(t *testing.T, w *world) {
			w.load(accounts())
			ids := make([]int64, goroutines)
			errs := together(goroutines, func(i int) error {
				e := ev(flagadmin.EventFeatureUpdated, "system", nil, "2025-01-01T00:00:00Z", str("default"), nil, nil, fmt.Sprintf(`{"n": %d}`, i))
				stored, err := w.svc.AppendEvent(w.ctx, e)
				ids[i] = stored.ID
				return err
			})
			seen := map[int64]bool{}
			for i, err := range errs {
				if err != nil {
					t.Errorf("goroutine %d: got error %v, want nil", i, err)
					continue
				}
				if seen[ids[i]] {
					t.Errorf("goroutine %d: got id %d twice, want distinct ids", i, ids[i])
				}
				seen[ids[i]] = true
			}
			page := w.search(t, w.as(adminSecret), params{Limit: "1000"})
			wantEqual(t, "total", page.Total, goroutines)
			for _, e := range page.Events {
				if !seen[e.ID] {
					t.Errorf("stored event %d: got an id no AppendEvent returned", e.ID)
				}
			}
		}},
	}
}
