package memstore

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

var _ flagadmin.SinkStore = (*Store)(nil)

// sinkStates is the delivery state of webhook sinks, by name, under its
// own lock (taken after the world's, never before).
type sinkStates struct {
	mu sync.Mutex
	m  map[string]*flagadmin.SinkState
}

// RegisterSink implements flagadmin.SinkStore.
func (s *Store) RegisterSink(ctx context.Context, name string, now time.Time) (flagadmin.SinkState, error) {
	if err := ctx.Err(); err != nil {
		return flagadmin.SinkState{}, err
	}
	s.mu.RLock()
	newest := s.w.nextEventID - 1
	s.sinks.mu.Lock()
	s.mu.RUnlock()
	defer s.sinks.mu.Unlock()
	if s.sinks.m == nil {
		s.sinks.m = map[string]*flagadmin.SinkState{}
	}
	st, ok := s.sinks.m[name]
	if !ok {
		st = &flagadmin.SinkState{Name: name, Position: newest, CreatedAt: now.UTC().Truncate(time.Millisecond)}
		s.sinks.m[name] = st
	}
	return *st, nil
}

// AcquireSinkLease implements flagadmin.SinkStore.
func (s *Store) AcquireSinkLease(ctx context.Context, name, holder string, now, until time.Time) (flagadmin.SinkState, bool, error) {
	if err := ctx.Err(); err != nil {
		return flagadmin.SinkState{}, false, err
	}
	s.sinks.mu.Lock()
	defer s.sinks.mu.Unlock()
	st, ok := s.sinks.m[name]
	if !ok {
		return flagadmin.SinkState{}, false, flagadmin.ErrNotFound
	}
	held := acquireLease(&st.Lease, holder, now, until)
	return *st, held, nil
}

// ReleaseSinkLease implements flagadmin.SinkStore.
func (s *Store) ReleaseSinkLease(ctx context.Context, name, holder string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.sinks.mu.Lock()
	defer s.sinks.mu.Unlock()
	if st, ok := s.sinks.m[name]; ok {
		st.Lease.Release(holder)
	}
	return nil
}

// AdvanceSink implements flagadmin.SinkStore.
func (s *Store) AdvanceSink(ctx context.Context, name, holder string, now time.Time, position, delivered int64) error {
	return s.fencedSinkWrite(ctx, name, holder, now, func(st *flagadmin.SinkState) {
		st.Position = position
		st.Delivered += delivered
		st.Attempts, st.LastError, st.LastErrorAt = 0, "", time.Time{}
	})
}

// RecordSinkFailure implements flagadmin.SinkStore.
func (s *Store) RecordSinkFailure(ctx context.Context, name, holder string, now time.Time, attempts int, lastError string) error {
	return s.fencedSinkWrite(ctx, name, holder, now, func(st *flagadmin.SinkState) {
		st.Attempts, st.LastError, st.LastErrorAt = attempts, lastError, now.UTC().Truncate(time.Millisecond)
	})
}

// fencedSinkWrite calls fn with the sink's state when holder holds its
// lease at now; flagadmin.ErrLeaseLost when it does not.
func (s *Store) fencedSinkWrite(ctx context.Context, name, holder string, now time.Time, fn func(*flagadmin.SinkState)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.sinks.mu.Lock()
	defer s.sinks.mu.Unlock()
	st, ok := s.sinks.m[name]
	if !ok || !holdsLease(st.Lease, holder, now) {
		return flagadmin.ErrLeaseLost
	}
	fn(st)
	return nil
}

// SinkStates implements flagadmin.SinkStore.
func (s *Store) SinkStates(ctx context.Context) ([]flagadmin.SinkState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.sinks.mu.Lock()
	defer s.sinks.mu.Unlock()
	states := make([]flagadmin.SinkState, 0, len(s.sinks.m))
	for _, st := range s.sinks.m {
		states = append(states, *st)
	}
	slices.SortFunc(states, func(a, b flagadmin.SinkState) int { return strings.Compare(a.Name, b.Name) })
	return states, nil
}
