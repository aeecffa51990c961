package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// SinkTestStore is a store that keeps webhook delivery state.
type SinkTestStore interface {
	flagadmin.Store
	flagadmin.SinkStore
}

// RunSinks runs the contract cases of flagadmin.SinkStore (the
// first-seen position, the lease's exclusivity, its takeover
// after expiry, fencing). newStore must return a new, empty store for each
// call. Times are made up (the store compares those it is given), so the
// cases neither sleep nor depend on the clock.
func RunSinks(t *testing.T, newStore func(t *testing.T) SinkTestStore) {
	t.Helper()
	t0 := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	lease := 20 * time.Second
	ctx := context.Background()
	addEvents := func(t *testing.T, s SinkTestStore, n int) []int64 {
		t.Helper()
		b := &flagadmin.Batch{}
		for range n {
			b.Events = append(b.Events, ev(flagadmin.EventFeatureCreated, "ada", nil, "2026-06-15T12:00:00Z", str("default"), str("f"), nil, `{"name":"f"}`))
		}
		wantNoError(t, "Store.Write", s.Write(ctx, b))
		ids := make([]int64, n)
		for i, e := range b.Events {
			ids[i] = e.ID
		}
		return ids
	}
	register := func(t *testing.T, s SinkTestStore, name string) flagadmin.SinkState {
		t.Helper()
		st, err := s.RegisterSink(ctx, name, t0)
		wantNoError(t, "RegisterSink", err)
		return st
	}
	acquire := func(t *testing.T, s SinkTestStore, name, holder string, now time.Time) (flagadmin.SinkState, bool) {
		t.Helper()
		st, ok, err := s.AcquireSinkLease(ctx, name, holder, now, now.Add(lease))
		wantNoError(t, "AcquireSinkLease", err)
		return st, ok
	}

	cases := []testCase{
		leaseCase("sinks/a sink's lease follows flagadmin.Lease's rules with the caller's clock, apart from other sinks'", func(t *testing.T) leaseOf {
			s := newStore(t)
			register(t, s, "audit")
			register(t, s, "other")
			_, ok := acquire(t, s, "other", "c", t0)
			wantEqual(t, "c acquires the other sink's lease", ok, true)
			other := stateOf(t, s, "other").Lease
			return leaseOf{
				acquire: func(t *testing.T, holder string, now, until time.Time) (flagadmin.Lease, bool) {
					t.Helper()
					st, ok, err := s.AcquireSinkLease(ctx, "audit", holder, now, until)
					wantNoError(t, "AcquireSinkLease", err)
					return st.Lease, ok
				},
				release: func(t *testing.T, holder string) {
					t.Helper()
					wantNoError(t, "ReleaseSinkLease", s.ReleaseSinkLease(ctx, "audit", holder))
				},
				read: func(t *testing.T) flagadmin.Lease {
					t.Helper()
					if got := stateOf(t, s, "other").Lease; !sameLease(got, other) {
						t.Fatalf("the other sink's lease: got %+v, want %+v unchanged", got, other)
					}
					return stateOf(t, s, "audit").Lease
				},
			}
		}),
		{"sinks/a new sink starts at the newest event, and a known one is unchanged", func(t *testing.T, _ *world) {
			s := newStore(t)
			st := register(t, s, "empty-log")
			wantEqual(t, "position of a sink registered on an empty log", st.Position, int64(0))
			ids := addEvents(t, s, 3)
			st = register(t, s, "audit")
			wantEqual(t, "position", st.Position, ids[2])
			wantEqual(t, "createdAt", st.CreatedAt.Equal(t0), true)
			wantEqual(t, "delivered", st.Delivered, int64(0))
			wantEqual(t, "holder", st.Lease.Holder, "")
			_, ok := acquire(t, s, "audit", "a", t0)
			wantEqual(t, "acquired", ok, true)
			wantNoError(t, "AdvanceSink", s.AdvanceSink(ctx, "audit", "a", t0, ids[0], 1))
			addEvents(t, s, 2)
			again, err := s.RegisterSink(ctx, "audit", t0.Add(time.Hour))
			wantNoError(t, "RegisterSink again", err)
			wantEqual(t, "position after registering again", again.Position, ids[0])
			wantEqual(t, "createdAt after registering again", again.CreatedAt.Equal(t0), true)
			wantEqual(t, "delivered after registering again", again.Delivered, int64(1))
			all, err := s.SinkStates(ctx)
			wantNoError(t, "SinkStates", err)
			wantEqual(t, "sinks", len(all), 2)
			wantEqual(t, "first sink by name", all[0].Name, "audit")
			wantEqual(t, "second sink by name", all[1].Name, "empty-log")
		}},
		{"sinks/the lease is exclusive until it ends, then another takes it over", func(t *testing.T, _ *world) {
			s := newStore(t)
			register(t, s, "audit")
			st, ok := acquire(t, s, "audit", "a", t0)
			wantEqual(t, "a acquires a free lease", ok, true)
			wantEqual(t, "holder", st.Lease.Holder, "a")
			wantEqual(t, "lease until", st.Lease.Until.Equal(t0.Add(lease)), true)
			st, ok = acquire(t, s, "audit", "b", t0.Add(time.Second))
			wantEqual(t, "b acquires a's live lease", ok, false)
			wantEqual(t, "holder after b's try", st.Lease.Holder, "a")
			_, ok = acquire(t, s, "audit", "a", t0.Add(5*time.Second))
			wantEqual(t, "a renews", ok, true)
			_, ok = acquire(t, s, "audit", "b", t0.Add(lease+time.Second))
			wantEqual(t, "b acquires before the renewed lease ends", ok, false)
			st, ok = acquire(t, s, "audit", "b", t0.Add(5*time.Second+lease))
			wantEqual(t, "b takes over once the lease ended", ok, true)
			wantEqual(t, "holder after takeover", st.Lease.Holder, "b")
			_, ok = acquire(t, s, "audit", "a", t0.Add(5*time.Second+lease+time.Second))
			wantEqual(t, "a reacquires b's lease", ok, false)
			_, _, err := s.AcquireSinkLease(ctx, "missing", "a", t0, t0.Add(lease))
			wantKind(t, "AcquireSinkLease of an unknown sink", err, flagadmin.ErrNotFound)
		}},
		{"sinks/a released lease is free at once", func(t *testing.T, _ *world) {
			s := newStore(t)
			register(t, s, "audit")
			acquire(t, s, "audit", "a", t0)
			wantNoError(t, "b's release of a's lease", s.ReleaseSinkLease(ctx, "audit", "b"))
			_, ok := acquire(t, s, "audit", "b", t0.Add(time.Second))
			wantEqual(t, "b acquires after b's release", ok, false)
			wantNoError(t, "ReleaseSinkLease", s.ReleaseSinkLease(ctx, "audit", "a"))
			st, ok := acquire(t, s, "audit", "b", t0.Add(time.Second))
			wantEqual(t, "b acquires after a's release", ok, true)
			wantEqual(t, "holder", st.Lease.Holder, "b")
		}},
		{"sinks/only the lease holder moves the position or records failures (fencing)", func(t *testing.T, _ *world) {
			s := newStore(t)
			ids := addEvents(t, s, 4)
			register(t, s, "audit")
			register(t, s, "early")
			acquire(t, s, "audit", "a", t0)
			wantKind(t, "AdvanceSink by a non-holder", s.AdvanceSink(ctx, "audit", "b", t0, ids[3]+1, 1), flagadmin.ErrLeaseLost)
			wantKind(t, "RecordSinkFailure by a non-holder", s.RecordSinkFailure(ctx, "audit", "b", t0, 1, "boom"), flagadmin.ErrLeaseLost)
			wantKind(t, "AdvanceSink with no lease", s.AdvanceSink(ctx, "early", "a", t0, 9, 1), flagadmin.ErrLeaseLost)
			wantNoError(t, "RecordSinkFailure", s.RecordSinkFailure(ctx, "audit", "a", t0.Add(time.Second), 3, "HTTP 500"))
			st := stateOf(t, s, "audit")
			wantEqual(t, "attempts", st.Attempts, 3)
			wantEqual(t, "last error", st.LastError, "HTTP 500")
			wantEqual(t, "last error at", st.LastErrorAt.Equal(t0.Add(time.Second)), true)
			wantNoError(t, "AdvanceSink", s.AdvanceSink(ctx, "audit", "a", t0.Add(2*time.Second), ids[3]+1, 2))
			st = stateOf(t, s, "audit")
			wantEqual(t, "position", st.Position, ids[3]+1)
			wantEqual(t, "delivered", st.Delivered, int64(2))
			wantEqual(t, "attempts after delivery", st.Attempts, 0)
			wantEqual(t, "last error after delivery", st.LastError, "")
			// a's lease ends; b takes over; a, not knowing, tries to advance.
			wantKind(t, "AdvanceSink after the lease ended", s.AdvanceSink(ctx, "audit", "a", t0.Add(lease), ids[3]+2, 1), flagadmin.ErrLeaseLost)
			acquire(t, s, "audit", "b", t0.Add(lease+time.Second))
			wantKind(t, "AdvanceSink by the old holder", s.AdvanceSink(ctx, "audit", "a", t0.Add(time.Second), ids[3]+2, 1), flagadmin.ErrLeaseLost)
			wantEqual(t, "position after the old holder's tries", stateOf(t, s, "audit").Position, ids[3]+1)
			wantNoError(t, "AdvanceSink by the new holder", s.AdvanceSink(ctx, "audit", "b", t0.Add(lease+2*time.Second), ids[3]+2, 1))
			wantEqual(t, "delivered", stateOf(t, s, "audit").Delivered, int64(3))
		}},
		{"sinks/of concurrent takers exactly one gets a free lease", func(t *testing.T, _ *world) {
			s := newStore(t)
			register(t, s, "audit")
			const takers = 8
			var wg sync.WaitGroup
			won := make(chan string, takers)
			for i := range takers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					holder := string(rune('a' + i))
					_, ok, err := s.AcquireSinkLease(ctx, "audit", holder, t0, t0.Add(lease))
					if err != nil && !errors.Is(err, flagadmin.ErrUnavailable) {
						t.Errorf("AcquireSinkLease: %v", err)
					}
					if ok {
						won <- holder
					}
				}()
			}
			wg.Wait()
			close(won)
			var winners []string
			for h := range won {
				winners = append(winners, h)
			}
			if len(winners) != 1 {
				t.Fatalf("got winners %v, want exactly one", winners)
			}
			wantEqual(t, "holder", stateOf(t, s, "audit").Lease.Holder, winners[0])
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, nil) })
	}
}

// stateOf returns the named sink's state from SinkStates.
func stateOf(t *testing.T, s flagadmin.SinkStore, name string) flagadmin.SinkState {
	t.Helper()
	all, err := s.SinkStates(context.Background())
	wantNoError(t, "SinkStates", err)
	for _, st := range all {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no sink %q among %d", name, len(all))
	return flagadmin.SinkState{}
}
