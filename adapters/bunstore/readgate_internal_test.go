package bunstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestReadsTakeTheirTurn: when every read connection of a store is taken,
// its reads wait for one in the order they came (database/sql alone hands
// a connection that comes back to a random waiter). The readers of a
// SQLite file are all held; a read whose context ends while it waits
// fails with its context's error and holds nothing; then six reads come
// one after the other, and one connection is given back: they pass
// through it one at a time, in the order they came. The pool's statistics
// count the seven waits.
func TestReadsTakeTheirTurn(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	n := s.rdb.DB.Stats().MaxOpenConnections
	if n < 2 {
		t.Fatalf("%d read connections: the test holds all but one back", n)
	}
	entered, release := make(chan struct{}, n), make(chan struct{})
	var holders sync.WaitGroup
	for range n {
		holders.Go(func() {
			err := s.inReadTx(ctx, "hold", func(context.Context, bun.Tx) error {
				entered <- struct{}{}
				<-release
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	for range n {
		<-entered
	}

	waiting := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); s.reads.waiting.Load() != want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not after 30 s: %d reads waiting (%d are)", want, s.reads.waiting.Load())
			}
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	canceled := make(chan error, 1)
	go func() {
		canceled <- s.inReadTx(cctx, "canceled", func(context.Context, bun.Tx) error { return nil })
	}()
	waiting(1)
	cancel()
	if err := <-canceled; !errors.Is(err, context.Canceled) {
		t.Fatalf("a read whose context ended while it waited: %v, want context.Canceled", err)
	}
	waiting(0)

	const reads = 6
	var mu sync.Mutex
	var order []int
	var waiters sync.WaitGroup
	for i := range reads {
		waiters.Go(func() {
			err := s.inReadTx(ctx, "turn", func(ctx context.Context, tx bun.Tx) error {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				var one int
				return tx.QueryRowContext(ctx, "SELECT 1").Scan(&one)
			})
			if err != nil {
				t.Error(err)
			}
		})
		waiting(int64(i + 1))
	}
	release <- struct{}{} // one holder gives its connection back
	waiters.Wait()
	if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(order, want) {
		t.Errorf("the reads passed in the order %v, want %v", order, want)
	}
	if st := s.PoolStats()["read"]; st.WaitCount < reads+1 || st.WaitDuration <= 0 {
		t.Errorf("the read pool's statistics count %d waits of %v, want at least %d", st.WaitCount, st.WaitDuration, reads+1)
	}
	close(release)
	holders.Wait()
}
