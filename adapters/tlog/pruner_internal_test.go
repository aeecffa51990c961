package tlog

import (
	"context"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// costlyPrunes is a vlog.Store whose PruneEvents prunes what it is asked to
// of left events, each costing cost (read by the pruner's since), and
// records the batch sizes asked for.
type costlyPrunes struct {
	vlog.Store
	left  int
	cost  func(batch int) time.Duration
	asked []int
}

func (c *costlyPrunes) PruneEvents(_ context.Context, limit int, _ func(*flagadmin.Event) (time.Time, error), _ func([]int64) (flagadmin.Event, error)) ([]int64, error) {
	c.asked = append(c.asked, limit)
	n := min(limit, c.left)
	c.left -= n
	return make([]int64, n), nil
}

// took is the time the last batch took.
func (c *costlyPrunes) took(time.Time) time.Duration { return c.cost(c.asked[len(c.asked)-1]) }

// TestPrunerSizesBatchesToItsBudget prunes with batches whose time grows
// with their size: the pruner starts small, grows to what fits the budget
// (never above Batch), shrinks by half, no more, after a batch that took
// far longer (a stall), and stops after a short batch.
func TestPrunerSizesBatchesToItsBudget(t *testing.T) {
	cases := []struct {
		name      string
		batch     int
		perEvent  time.Duration
		stallAt   int // the batch that takes 100 times longer (0: none)
		wantLeast int // every batch from the 9th on but the last has at least this many events...
		wantMost  int // ...and at most this many
	}{
		{name: "cheap events: up to Batch", batch: 500, perEvent: time.Microsecond, wantLeast: 500, wantMost: 500},
		{name: "dear events: the budget's size", batch: 500, perEvent: 100 * time.Microsecond, wantLeast: 75, wantMost: 150},
		{name: "a stall", batch: 500, perEvent: 100 * time.Microsecond, stallAt: 12, wantLeast: 75, wantMost: 150},
		{name: "very dear events: the least batch", batch: 500, perEvent: time.Millisecond, wantLeast: leastPruneBatch, wantMost: leastPruneBatch},
		{name: "a Batch below the least", batch: 20, perEvent: time.Millisecond, wantLeast: 20, wantMost: 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := &costlyPrunes{left: 20_000}
			store.cost = func(batch int) time.Duration {
				d := time.Duration(batch) * c.perEvent
				if len(store.asked) == c.stallAt {
					d *= 100
				}
				return d
			}
			p := NewPruner(store, PrunerOptions{Batch: c.batch, Budget: 15 * time.Millisecond, Pause: time.Nanosecond})
			p.since = store.took
			n, err := p.Pass(context.Background())
			if err != nil || n != 20_000 {
				t.Fatalf("got %d events pruned (%v), want 20000", n, err)
			}
			if store.asked[0] != firstPruneBatch {
				t.Errorf("got a first batch of %d, want %d", store.asked[0], firstPruneBatch)
			}
			for i, size := range store.asked {
				if took := store.cost(size); size > min(leastPruneBatch, c.batch) && i != c.stallAt-1 && took > 2*15*time.Millisecond {
					t.Errorf("batch %d of %d events took %v, more than twice the budget", i+1, size, took)
				}
				if size > c.batch {
					t.Errorf("batch %d: got %d events, more than Batch (%d)", i+1, size, c.batch)
				}
				if i >= 8 && i+1 < len(store.asked) && (size < c.wantLeast || size > c.wantMost) && i != c.stallAt {
					t.Errorf("batch %d: got %d events, want %d to %d", i+1, size, c.wantLeast, c.wantMost)
				}
			}
			if c.stallAt > 0 && store.asked[c.stallAt] != store.asked[c.stallAt-1]/2 {
				t.Errorf("after a batch of %d that stalled, got one of %d, want half", store.asked[c.stallAt-1], store.asked[c.stallAt])
			}
		})
	}
}
