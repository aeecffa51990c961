package bunstore

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// readGate admits the store's reads to the readers of a SQLite file in
// the order they come: at most as many at once as the pool holds
// connections, the others waiting their turn. database/sql hands a
// connection that comes back to a random one of the callers waiting for
// it, so under load a read could wait behind many that came after it:
// with 16 requests in flight on the 4 readers of a SQLite file, random
// offsets answered at a p99 of 26-37 ms with the gate against 38-53 ms
// without, in six rounds of each; free text and the project list moved
// both ways within the machine's drift (BENCHMARKS.md). x/sync's
// semaphore serves its waiters first come, first served. On PostgreSQL,
// whose pool serves writes too, the same gate changed nothing beyond the
// drift (two rounds), and reads take their connections from database/sql
// as they come.
//
// It gates what a request reads in one go on a connection of its own
// (readerConn: a read transaction, or a seek's statements outside one),
// which never takes another while it holds one; single statements on the
// pool and the store's own background work take their connections as
// before. Its waits count as the read pool's (PoolStats), where they
// would have been. A nil gate admits every read at once.
type readGate struct {
	slots *semaphore.Weighted
	// waiting counts the reads waiting for a slot; waits and waited, the
	// reads that have waited and the nanoseconds they waited.
	waiting, waits, waited atomic.Int64
}

// newReadGate returns a gate of n slots (at least 1).
func newReadGate(n int) *readGate {
	return &readGate{slots: semaphore.NewWeighted(int64(max(n, 1)))}
}

// enter waits for a slot, in turn, and returns the function that gives it
// back; or ctx's error, holding none, when ctx ends first.
func (g *readGate) enter(ctx context.Context) (func(), error) {
	if g == nil {
		return func() {}, nil
	}
	leave := func() { g.slots.Release(1) }
	if g.slots.TryAcquire(1) { // none waiting, and a slot free
		return leave, nil
	}
	g.waiting.Add(1)
	start := time.Now()
	err := g.slots.Acquire(ctx, 1)
	g.waiting.Add(-1)
	g.waits.Add(1)
	g.waited.Add(int64(time.Since(start)))
	if err != nil {
		return nil, err
	}
	return leave, nil
}

// addWaits adds the gate's waits to st, the read pool's statistics.
func (g *readGate) addWaits(st *sql.DBStats) {
	if g == nil {
		return
	}
	st.WaitCount += g.waits.Load()
	st.WaitDuration += time.Duration(g.waited.Load())
}
