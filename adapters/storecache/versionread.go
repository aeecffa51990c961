package storecache

import (
	"context"
	"errors"
	"sync"
)

// errVersionReadAbandoned is the error of a shared read that panicked.
var errVersionReadAbandoned = errors.New("the shared read of the store version was abandoned")

// versionReads shares the result cache's reads of the store version among
// concurrent requests without weakening what a reading promises.
//
// A request must be given a version read that began after the request
// did: only then does it reflect every write committed before the request
// began (see Store). So a request never joins a read already in
// flight. It joins the next one, which starts when the one in flight ends;
// every request that arrives meanwhile joins that same next read. Under
// load, one statement then answers all the requests that arrived during
// the previous one, instead of one statement each; a request waits at most
// for the read in flight and its own.
//
// This stays hand-written because no library coalesces this way:
// golang.org/x/sync/singleflight (and the coalescing of caches such as
// otter or golang-lru) lets a caller join the call in flight, which may
// have begun before the caller arrived and so miss a write committed in
// between. Here a caller only ever joins the next call.
type versionReads struct {
	read func(context.Context) (int64, error)

	mu sync.Mutex
	// running is the read in flight, nil when none is.
	running *versionRead
	// next is the read that starts when running ends, nil until a request
	// arrives while one is running.
	next *versionRead
	// joined counts requests that joined a next read (for tests).
	joined int
}

// versionRead is one read of the version; v and err are set before done is
// closed. start is closed when the read may begin (a next read waits for
// the running one to end).
type versionRead struct {
	start, done chan struct{}
	v           int64
	err         error
}

func newVersionRead() *versionRead {
	return &versionRead{start: make(chan struct{}), done: make(chan struct{})}
}

// get returns a version read that began after get was called.
func (r *versionReads) get(ctx context.Context) (int64, error) {
	r.mu.Lock()
	switch {
	case r.running == nil:
		// Nothing in flight: read now.
		vr := newVersionRead()
		r.running = vr
		r.mu.Unlock()
		r.run(ctx, vr)
		return vr.v, vr.err
	case r.next != nil:
		// Join the read that starts when the one in flight ends.
		vr := r.next
		r.joined++
		r.mu.Unlock()
		return r.wait(ctx, vr)
	default:
		// The first to arrive during a read runs the next one.
		vr := newVersionRead()
		r.next = vr
		r.mu.Unlock()
		<-vr.start // the read in flight ends without waiting on anything else
		r.run(ctx, vr)
		if vr.err != nil && ctx.Err() == nil {
			return r.read(ctx)
		}
		return vr.v, vr.err
	}
}

// wait returns the result of vr, which began after the caller arrived. If
// it failed (perhaps only because the context of the request that ran it
// ended), the caller reads on its own.
func (r *versionReads) wait(ctx context.Context, vr *versionRead) (int64, error) {
	select {
	case <-vr.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if vr.err != nil {
		return r.read(ctx)
	}
	return vr.v, nil
}

// run performs vr, then starts the next read if requests joined one (also
// when the read panics, so that no request waits forever).
func (r *versionReads) run(ctx context.Context, vr *versionRead) {
	vr.err = errVersionReadAbandoned
	defer func() {
		r.mu.Lock()
		r.running = r.next
		r.next = nil
		if r.running != nil {
			close(r.running.start)
		}
		r.mu.Unlock()
		close(vr.done)
	}()
	vr.v, vr.err = r.read(ctx)
}
