package storetest

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// Settled ids (Store.ExportEvents): a reader that follows the log by
// reading the events with an id greater than the last one it read never
// misses one, however many writers append at once.

// settledWriters and settledWrites: that many writers, each appending
// that many batches of 1 to 3 events.
const (
	settledWriters = 8
	settledWrites  = 25
)

func settledCases() []testCase {
	return []testCase{
		{"settled/a reader following id > last misses no event while writers commit concurrently", func(t *testing.T, w *world) {
			w.load(accounts())
			p := w.as(adminSecret)
			var writing atomic.Int32
			writing.Store(settledWriters)
			var wg sync.WaitGroup
			errs := make(chan error, settledWriters)
			for i := range settledWriters {
				wg.Go(func() {
					defer writing.Add(-1)
					for j := range settledWrites {
						var events []flagadmin.Event
						for k := range 1 + (i+j)%3 {
							events = append(events, ev(flagadmin.EventFeatureUpdated, "system", nil, "2026-06-15T12:00:00Z",
								str("default"), nil, nil, fmt.Sprintf(`{"writer":%d,"write":%d,"event":%d}`, i, j, k)))
						}
						if err := w.store.Write(w.ctx, &flagadmin.Batch{Events: events}); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			// The follower: what a live stream's feed does.
			var got []flagadmin.Event
			last := int64(0)
			follow := func() {
				exp, err := w.svc.ExportEvents(w.ctx, p, exportParams{AfterID: fmt.Sprint(last)})
				wantNoError(t, "ExportEvents", err)
				err = exp.Run(w.ctx, func(e flagadmin.Event) error {
					got = append(got, e)
					last = e.ID
					return nil
				})
				wantNoError(t, "Run", err)
			}
			for writing.Load() > 0 {
				follow()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("Write: got error %v, want nil", err)
			}
			follow()
			wantIDOrder(t, got)
			all := w.export(t, p, exportParams{})
			want := 0
			for i := range settledWriters {
				for j := range settledWrites {
					want += 1 + (i+j)%3
				}
			}
			if len(all) != want {
				t.Fatalf("the log holds %d events, want %d", len(all), want)
			}
			if g, wn := eventtest.IDs(got), eventtest.IDs(all); !slices.Equal(g, wn) {
				missed := slices.DeleteFunc(slices.Clone(wn), func(id int64) bool { return slices.Contains(g, id) })
				t.Errorf("the follower read %d events, want %d; missed ids %v", len(g), len(wn), missed)
			}
		}},
	}
}
