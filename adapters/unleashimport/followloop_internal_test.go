package unleashimport

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
	"github.com/flagadmin/flagadmin/internal/testclock"
)

// The follower's steps driven by a fake source and an injected clock: no
// database, no real time. The same steps against a real Unleash are
// follow_test.go's.

// fakeSource is an Unleash database in memory: the events committed, the
// transactions that hold a write lock on the events table, and an outage.
type fakeSource struct {
	mu      sync.Mutex
	events  map[int64]flagadmin.Event
	writers []string // transactions writing events now
	down    error    // while set, opening and every reading fail with it
	open    int      // connections open
}

func newFakeSource(ids ...int64) *fakeSource {
	s := &fakeSource{events: map[int64]flagadmin.Event{}}
	s.commit(ids...)
	return s
}

// commit makes the events of ids visible.
func (s *fakeSource) commit(ids ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.events[id] = flagadmin.Event{ID: id, Type: flagadmin.EventFeatureCreated, CreatedBy: "ada",
			CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Data: json.RawMessage(`{}`)}
	}
}

// set changes the source under its lock.
func (s *fakeSource) set(change func(*fakeSource)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(s)
}

// dial is Follower.open for the fake.
func (s *fakeSource) dial(context.Context) (followSource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down != nil {
		return nil, s.down
	}
	s.open++
	return &fakeConn{s: s}, nil
}

// fakeConn is a connection to a fakeSource.
type fakeConn struct{ s *fakeSource }

// reading runs read under the source's lock, or fails while it is down.
func (c *fakeConn) reading(read func() error) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.down != nil {
		return c.s.down
	}
	return read()
}

func (c *fakeConn) ids() []int64 { return slices.Sorted(maps.Keys(c.s.events)) }

func (c *fakeConn) identity(context.Context, string) (follow.Source, error) {
	id := follow.Source{URL: "postgres://fake/unleash", Database: "unleash", SystemID: "7"}
	return id, c.reading(func() error { return nil })
}

func (c *fakeConn) schema() sourceSchema {
	return sourceSchema{readSet: []string{"events", "events.id"}, migration: NewestKnownMigration}
}

func (c *fakeConn) reinspect(context.Context, string) error {
	return c.reading(func() error { return nil })
}

func (c *fakeConn) lastDrawnID(ctx context.Context) (int64, error) { return c.newestEventID(ctx) }

func (c *fakeConn) newestEventID(context.Context) (newest int64, err error) {
	err = c.reading(func() error {
		if ids := c.ids(); len(ids) > 0 {
			newest = ids[len(ids)-1]
		}
		return nil
	})
	return newest, err
}

func (c *fakeConn) eventsAfter(_ context.Context, after int64, limit int) (events []flagadmin.Event, ids []int64, err error) {
	err = c.reading(func() error {
		for _, id := range c.ids() {
			if id > after && len(ids) < limit {
				ids, events = append(ids, id), append(events, c.s.events[id])
			}
		}
		return nil
	})
	return events, ids, err
}

func (c *fakeConn) writers(context.Context) (w []string, err error) {
	err = c.reading(func() error { w = slices.Clone(c.s.writers); return nil })
	return w, err
}

func (c *fakeConn) readWorldNow(context.Context, time.Time, *worldState) (*worldState, error) {
	return stateOf(&world{}), c.reading(func() error { return nil })
}

func (c *fakeConn) snapshot(_ context.Context, _ time.Time, r snapshotReading, use func(*sourceSnapshot) error) error {
	var snap *sourceSnapshot
	err := c.reading(func() error {
		ids := c.ids()
		events := make([]flagadmin.Event, len(ids))
		for i, id := range ids {
			events[i] = c.s.events[id]
		}
		snap = &sourceSnapshot{world: &world{}, events: func(upTo int64, emit func([]flagadmin.Event) error) error {
			n, _ := slices.BinarySearch(ids, upTo+1)
			r.sum.kind("events").Imported += n
			return emit(events[:n])
		}}
		prev := int64(0)
		for _, id := range ids {
			if id > prev+1 {
				snap.ranges = append(snap.ranges, [2]int64{prev + 1, id - 1})
			}
			prev, snap.newest = id, id
		}
		return nil
	})
	if err != nil {
		return err
	}
	return use(snap)
}

func (c *fakeConn) firstCommitted(_ context.Context, ranges [][2]int64) (first int64, err error) {
	err = c.reading(func() error {
		for _, id := range c.ids() {
			for _, g := range ranges {
				if id >= g[0] && id <= g[1] && first == 0 {
					first = id
				}
			}
		}
		return nil
	})
	return first, err
}

func (c *fakeConn) Close() error {
	c.s.set(func(s *fakeSource) { s.open-- })
	return nil
}

// rig is a follower's steps on a fake source into a memory store, with a
// fake clock; the lease is this follower's until the test says otherwise.
type rig struct {
	t     *testing.T
	src   *fakeSource
	store *memstore.Store
	clock *testclock.Clock
	log   *syncbuffer.Buffer
	loop  *followLoop
}

// Timings of the rig's follower.
const (
	rigPoll     = 100 * time.Millisecond
	rigRetryMin = 100 * time.Millisecond
	rigRetryMax = 800 * time.Millisecond
)

// newRig returns the steps of a follower of src, after its first step:
// the import of the events src holds.
func newRig(t *testing.T, src *fakeSource) *rig {
	t.Helper()
	r := &rig{t: t, src: src, store: memstore.New(), log: &syncbuffer.Buffer{},
		clock: testclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	f := NewFollower("postgres://fake/unleash", r.store, FollowOptions{
		Holder: "me", Logger: slog.New(slog.NewTextHandler(r.log, nil)), Now: r.clock.Now,
		PollInterval: rigPoll, RetryMin: rigRetryMin, RetryMax: rigRetryMax,
		// The world is read at the first poll only: its readings run
		// beside the steps, and the tests here are about the events.
		StateInterval: time.Hour, MinStateInterval: time.Hour,
	})
	f.open = src.dial
	now := r.clock.Now()
	if _, ok, err := r.store.AcquireFollowLease(context.Background(), "me", now, now.Add(time.Minute)); !ok || err != nil {
		t.Fatalf("AcquireFollowLease: %v, %v", ok, err)
	}
	f.leased.Store(true)
	// No lease goroutine runs: the lease is held for the clock's minute,
	// and the renewal the import asks for when its copy ends is answered
	// at once.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for {
			select {
			case done := <-f.renew:
				close(done)
			case <-ctx.Done():
				return
			}
		}
	}()
	r.loop = newFollowLoop(f)
	if wait := r.next(); wait != 0 {
		t.Fatalf("the import: wait %s, want 0", wait)
	}
	if !r.loop.following {
		t.Fatalf("not following after the import; log:\n%s", r.log)
	}
	t.Cleanup(r.loop.closeSource)
	return r
}

// next runs one step, failing the test when it stops following.
func (r *rig) next() time.Duration {
	r.t.Helper()
	wait, err := r.loop.step(context.Background())
	if err != nil {
		r.t.Fatalf("step: %v", err)
	}
	return wait
}

// copied returns the ids of the events the store holds and its follow state.
func (r *rig) copied() ([]int64, follow.State) {
	r.t.Helper()
	var ids []int64
	err := r.store.ExportEvents(context.Background(), flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error {
		ids = append(ids, e.ID)
		return nil
	})
	if err != nil {
		r.t.Fatalf("ExportEvents: %v", err)
	}
	st, err := r.store.FollowState(context.Background())
	if err != nil {
		r.t.Fatalf("FollowState: %v", err)
	}
	return ids, st
}

// wantCopy fails unless the store holds the events of ids, with position and holes.
func (r *rig) wantCopy(ids []int64, position, holes int64) {
	r.t.Helper()
	got, st := r.copied()
	if !slices.Equal(got, ids) || st.Position != position || st.Holes != holes {
		r.t.Fatalf("copy: events %v, position %d, holes %d; want %v, %d, %d", got, st.Position, st.Holes, ids, position, holes)
	}
}

// A missing id holds back the ids above it until its writers have ended:
// then it is delivered in order if it committed, or settled as a hole.
func TestFollowStepsSettleAGapLater(t *testing.T) {
	for _, tc := range []struct {
		name      string
		committed bool    // the writer of id 3 commits it (else rolls back)
		first     []int64 // the copy after the first poll that sees it ended
		want      []int64 // the copy after the second
		holes     int64
	}{
		// 3 is visible: nothing is missing any more.
		{"committed late", true, []int64{1, 2, 3, 4}, []int64{1, 2, 3, 4}, 0},
		// The first poll's snapshot was taken before the reading of the
		// writers that found 3's gone: only the next one can tell 3
		// will never appear.
		{"rolled back", false, []int64{1, 2}, []int64{1, 2, 4}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFakeSource(1, 2)
			r := newRig(t, src)
			r.wantCopy([]int64{1, 2}, 2, 0)

			// Id 3 is drawn by a transaction still open; 4 commits.
			src.set(func(s *fakeSource) { s.writers = []string{"3/7", "4/9"} })
			src.commit(4)
			for range 3 {
				if wait := r.next(); wait != 25*time.Millisecond {
					t.Fatalf("waiting on id 3: wait %s, want 25ms", wait)
				}
				r.wantCopy([]int64{1, 2}, 2, 0)
				if st := r.loop.Status(); st.WaitingFor != 3 || st.LagEvents != 2 {
					t.Fatalf("status: waiting for %d, lag %d; want 3, 2", st.WaitingFor, st.LagEvents)
				}
			}
			// Waiting longer, the follower looks less often.
			r.clock.Advance(2 * time.Second)
			if wait := r.next(); wait != rigPoll {
				t.Fatalf("waiting 2 s on id 3: wait %s, want %s", wait, rigPoll)
			}
			r.clock.Advance(10 * time.Second)
			if wait := r.next(); wait != time.Second {
				t.Fatalf("waiting 12 s on id 3: wait %s, want 1s", wait)
			}

			// An unrelated writer ends: 3 still waits for its own.
			src.set(func(s *fakeSource) { s.writers = []string{"3/7"} })
			r.next()
			r.next()
			r.wantCopy([]int64{1, 2}, 2, 0)

			// 3's writer ends: the next reading of the writers finds
			// none, and the snapshot after it settles 3.
			if tc.committed {
				src.commit(3)
			}
			src.set(func(s *fakeSource) { s.writers = nil })
			r.next()
			if got, _ := r.copied(); !slices.Equal(got, tc.first) {
				t.Fatalf("after the first poll that finds no writer: events %v, want %v", got, tc.first)
			}
			r.next()
			r.wantCopy(tc.want, 4, tc.holes)
			if st := r.loop.Status(); st.WaitingFor != 0 || st.LagEvents != 0 || st.Position != 4 {
				t.Fatalf("status: waiting for %d, lag %d, position %d; want 0, 0, 4", st.WaitingFor, st.LagEvents, st.Position)
			}
			if wait := r.next(); wait != rigPoll {
				t.Fatalf("caught up: wait %s, want %s", wait, rigPoll)
			}
		})
	}
}

// A source that stops answering pauses following: the retries wait
// RetryMin, doubling to RetryMax; one line when the outage starts, one
// when it ends; the events written meanwhile follow; and the next outage
// starts again from RetryMin.
func TestFollowStepsBackOffWhileTheSourceIsDown(t *testing.T) {
	src := newFakeSource(1, 2)
	r := newRig(t, src)
	src.set(func(s *fakeSource) { s.down = errors.New("connection refused") })

	var waits []time.Duration
	var paused time.Duration
	for range 6 {
		wait := r.next()
		waits = append(waits, wait)
		paused += wait
		r.clock.Advance(wait)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 800 * time.Millisecond, 800 * time.Millisecond}
	if !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	st := r.loop.Status()
	if st.State != follow.Paused || !strings.Contains(st.Reason, "connection refused") || !st.Ready {
		t.Fatalf("status while down: %+v", st)
	}
	if src.open != 0 {
		t.Fatalf("%d connections open while the source is down, want 0", src.open)
	}

	src.commit(3)
	src.set(func(s *fakeSource) { s.down = nil })
	if wait := r.next(); wait != rigPoll {
		t.Fatalf("recovered: wait %s, want %s", wait, rigPoll)
	}
	r.wantCopy([]int64{1, 2, 3}, 3, 0)
	if st := r.loop.Status(); st.State != follow.Following || st.Reason != "" {
		t.Fatalf("status after the outage: %+v", st)
	}
	log := r.log.String()
	if n := strings.Count(log, "following paused"); n != 1 {
		t.Fatalf("%d lines 'following paused', want 1:\n%s", n, log)
	}
	if !strings.Contains(log, "following resumed: the Unleash database answers again") || !strings.Contains(log, "paused="+paused.String()) {
		t.Fatalf("no line 'following resumed' with paused=%s:\n%s", paused, log)
	}
	if got := r.loop.errs.Load(); got != 6 {
		t.Fatalf("errors counted %d, want 6", got)
	}

	// The next outage starts again from RetryMin.
	src.set(func(s *fakeSource) { s.down = errors.New("connection reset") })
	if wait := r.next(); wait != rigRetryMin {
		t.Fatalf("a new outage: wait %s, want %s", wait, rigRetryMin)
	}
}

// A follower whose lease another server took applies nothing more: its
// batch is refused, it stands by, closes its connections, and reports the
// other holder.
func TestFollowStepsStopApplyingWhenTheLeaseIsLost(t *testing.T) {
	src := newFakeSource(1, 2)
	r := newRig(t, src)
	r.next()
	if src.open == 0 {
		t.Fatal("no connection open while following")
	}

	// The lease ends unrenewed, and another server takes it.
	r.clock.Advance(2 * time.Minute)
	now := r.clock.Now()
	if _, ok, err := r.store.AcquireFollowLease(context.Background(), "other", now, now.Add(time.Minute)); !ok || err != nil {
		t.Fatalf("AcquireFollowLease(other): %v, %v", ok, err)
	}
	src.commit(3)
	if wait := r.next(); wait != 0 {
		t.Fatalf("lease lost: wait %s, want 0", wait)
	}
	if r.loop.leased.Load() {
		t.Fatal("the follower still thinks it holds the lease")
	}
	r.wantCopy([]int64{1, 2}, 2, 0)
	if !strings.Contains(r.log.String(), "the follow lease was lost") {
		t.Fatalf("no line about the lease lost:\n%s", r.log)
	}

	if wait := r.next(); wait != r.loop.opts.RenewEvery {
		t.Fatalf("standby: wait %s, want %s", wait, r.loop.opts.RenewEvery)
	}
	st := r.loop.Status()
	if st.State != follow.Standby || st.Holder != "other" || st.Applying {
		t.Fatalf("status on standby: %+v", st)
	}
	if src.open != 0 {
		t.Fatalf("%d connections open on standby, want 0", src.open)
	}
	r.wantCopy([]int64{1, 2}, 2, 0)
}

// refusingStore fails ApplyFollow with err while err is set.
type refusingStore struct {
	FollowStore
	err error
}

func (s *refusingStore) ApplyFollow(ctx context.Context, holder string, now time.Time, b *follow.Batch) error {
	if s.err != nil {
		return s.err
	}
	return s.FollowStore.ApplyFollow(ctx, holder, now, b)
}

// While a backlog is read, the next batch is read while one is applied;
// when the store refuses that batch, the position does not move and what
// was read ahead of it is dropped: the next poll reads from the position
// again, and no event is skipped or settled as a hole.
func TestFollowStepsDropTheReadAheadOfARefusedBatch(t *testing.T) {
	src := newFakeSource(1, 2)
	r := newRig(t, src)
	store := &refusingStore{FollowStore: r.store}
	r.loop.store, r.loop.opts.BatchSize = store, 2
	src.commit(3, 4, 5, 6, 7, 8)

	if wait := r.next(); wait != 0 {
		t.Fatalf("a backlog: wait %s, want 0", wait)
	}
	r.wantCopy([]int64{1, 2, 3, 4}, 4, 0)
	if r.loop.ahead == nil {
		t.Fatal("no read begun ahead while a backlog is read")
	}

	store.err = errors.New("disk full")
	if wait := r.next(); wait != rigRetryMin {
		t.Fatalf("a refused batch: wait %s, want %s", wait, rigRetryMin)
	}
	r.wantCopy([]int64{1, 2, 3, 4}, 4, 0)
	if r.loop.ahead != nil {
		t.Fatal("the read ahead of a refused batch was kept")
	}

	store.err = nil
	for range 3 {
		r.next()
	}
	r.wantCopy([]int64{1, 2, 3, 4, 5, 6, 7, 8}, 8, 0)
	if wait := r.next(); wait != rigPoll {
		t.Fatalf("caught up: wait %s, want %s", wait, rigPoll)
	}
}
