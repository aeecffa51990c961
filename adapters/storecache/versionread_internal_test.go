package storecache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blockingVersion is a store version whose reads can be held open: each
// read returns the counter as it is when the read is released.
type blockingVersion struct {
	counter atomic.Int64
	reads   atomic.Int64
	started chan struct{} // one value per read that began
	release chan error    // one value per read allowed to end (nil: success)
}

func newBlockingVersion() *blockingVersion {
	return &blockingVersion{started: make(chan struct{}, 16), release: make(chan error, 16)}
}

func (b *blockingVersion) read(ctx context.Context) (int64, error) {
	b.reads.Add(1)
	b.started <- struct{}{}
	if err := <-b.release; err != nil {
		return 0, err
	}
	return b.counter.Load(), nil
}

// waitFor polls cond until it holds (the goroutines under test have no
// other way to say they are waiting).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Requests that arrive while a read is in flight are not given its result:
// they share the next read, which begins after they arrived and so sees a
// write committed meanwhile; one statement serves them all.
func TestVersionReadsNeverGiveAReadThatBeganEarlier(t *testing.T) {
	b := newBlockingVersion()
	r := &versionReads{read: b.read}
	ctx := context.Background()

	first := make(chan int64, 1)
	go func() { v, _ := r.get(ctx); first <- v }()
	<-b.started // read 1 is in flight and has seen nothing yet

	b.counter.Add(1) // a write commits while read 1 is in flight
	const later = 5
	var wg sync.WaitGroup
	got := make([]int64, later)
	for i := range later {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], _ = r.get(ctx) }()
	}
	waitFor(t, "the later requests to join the next read", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.next != nil && r.joined == later-1
	})

	b.counter.Add(-1) // read 1 returns the value from before the write
	b.release <- nil
	if v := <-first; v != 0 {
		t.Fatalf("first request: version %d, want 0 (its read began before the write)", v)
	}
	b.counter.Add(1)
	<-b.started // read 2 begins only now
	b.release <- nil
	wg.Wait()
	for i, v := range got {
		if v != 1 {
			t.Errorf("later request %d: version %d, want 1 (the write committed before it arrived)", i, v)
		}
	}
	if n := b.reads.Load(); n != 2 {
		t.Errorf("%d reads for %d requests, want 2 (one in flight, one shared)", n, later+1)
	}
}

// With nothing in flight, every request reads on its own, at once.
func TestVersionReadsSequential(t *testing.T) {
	b := newBlockingVersion()
	r := &versionReads{read: b.read}
	for i := range 3 {
		b.counter.Add(1)
		b.release <- nil
		v, err := r.get(context.Background())
		<-b.started
		if err != nil || v != int64(i+1) {
			t.Fatalf("request %d: %d, %v; want %d", i, v, err, i+1)
		}
	}
	if n := b.reads.Load(); n != 3 {
		t.Errorf("%d reads, want 3", n)
	}
}

// A shared read that fails does not fail the requests that joined it while
// their own contexts are alive: each reads on its own. A request whose
// context ends while it waits returns that context's error.
func TestVersionReadsSharedFailure(t *testing.T) {
	b := newBlockingVersion()
	r := &versionReads{read: b.read}
	ctx := context.Background()

	go func() { _, _ = r.get(ctx) }()
	<-b.started // read 1 in flight

	runnerCtx, cancelRunner := context.WithCancel(ctx)
	runner := make(chan error, 1)
	go func() { _, err := r.get(runnerCtx); runner <- err }() // runs read 2 for the others
	waitFor(t, "the next read", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.next != nil })

	joined := make(chan int64, 1)
	go func() { v, _ := r.get(ctx); joined <- v }()
	giveUpCtx, giveUp := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() { _, err := r.get(giveUpCtx); gaveUp <- err }()
	waitFor(t, "two requests to join", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.joined == 2 })
	giveUp()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("request whose context ended: %v, want context.Canceled", err)
	}

	b.release <- nil // read 1 ends; read 2 starts
	<-b.started
	cancelRunner()
	b.release <- context.Canceled // read 2 fails, as with the runner's context
	if err := <-runner; !errors.Is(err, context.Canceled) {
		t.Errorf("runner: %v, want its context's error", err)
	}
	<-b.started // the joined request reads on its own
	b.counter.Store(7)
	b.release <- nil
	if v := <-joined; v != 7 {
		t.Errorf("joined request: version %d, want 7 from its own read", v)
	}
}
