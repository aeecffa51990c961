package bunstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/faultsql"
)

// TestEventOrderOutOfOrderCommits forces the case the event order lock is
// for: writer A draws its event's id and is held before its commit (at
// the COMMIT of the transaction that inserted its events) while writer B
// writes. A reader following the log (ExportEvents with id > the last id
// read) must still read both, in id order, once each. Without the lock
// (withLock false, to show it fails) B commits first and the reader skips
// A's smaller id.
//
// The store keeps no summaries (WithoutTuning), whose rows the writers
// would share (always on the InsertEvents path, whose event counts go to
// one shard): they share no row but the event order lock and, one time in
// 16, the row of store_versions they raise, when B waits for A whatever
// the lock.
func TestEventOrderOutOfOrderCommits(t *testing.T) {
	for _, e := range []struct {
		name string
		url  func(testing.TB) string
	}{{"Postgres", dbtest.Postgres}, {"MySQL", dbtest.MySQL}} {
		t.Run(e.name, func(t *testing.T) {
			for _, path := range []string{"Write", "InsertEvents"} {
				t.Run(path, func(t *testing.T) {
					got, _ := outOfOrderCommits(t, e.url(t), path, true)
					if len(got) != 2 || got[0] >= got[1] {
						t.Errorf("the follower read ids %v, want both writers' ids, ascending", got)
					}
				})
			}
		})
	}
}

// TestEventOrderWithoutLockSkipsAnID shows that the test above can fail:
// with the lock off, the follower misses writer A's event.
func TestEventOrderWithoutLockSkipsAnID(t *testing.T) {
	for _, e := range []struct {
		name string
		url  func(testing.TB) string
	}{{"Postgres", dbtest.Postgres}, {"MySQL", dbtest.MySQL}} {
		t.Run(e.name, func(t *testing.T) {
			// B can also wait for A on the row of store_versions both
			// drew (one chance in 16): try again then.
			for range 5 {
				got, bFirst := outOfOrderCommits(t, e.url(t), "Write", false)
				if !bFirst {
					continue
				}
				if len(got) != 1 {
					t.Errorf("without the lock the follower read ids %v, want only writer B's (A's smaller id skipped)", got)
				}
				return
			}
			t.Errorf("writer B never committed before writer A")
		})
	}
}

// outOfOrderCommits opens a store on url, runs writer A (held after
// drawing its id, right before its commit, until B has had its chance to
// commit and the follower has read), writer B, and a follower, and
// returns the ids the follower read and whether B committed while A was
// held.
func outOfOrderCommits(t *testing.T, url, path string, withLock bool) ([]int64, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	s, faults := openWithFaults(t, url, bunstore.WithoutTuning())
	if !withLock {
		eventOrderOff(t, s, faults, url)
	}
	// The first commit of a transaction that appended events is writer
	// A's.
	drawn, release := make(chan struct{}), make(chan struct{})
	faults.Add(faultsql.Rule{Match: eventWrites, AtCommit: true, Before: faultsql.Hold(drawn, release)})
	write := func(name string) error {
		e := flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: name, CreatedAt: time.Now().UTC(), Project: ptr("project-" + name)}
		if path == "InsertEvents" {
			return s.InsertEvents(ctx, []flagadmin.Event{e}, 0)
		}
		return s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{e}})
	}
	aDone, bDone := make(chan error, 1), make(chan error, 1)
	go func() { aDone <- write("A") }()
	select {
	case <-drawn:
	case err := <-aDone:
		t.Fatalf("writer A ended before its commit: %v", err)
	}
	go func() { bDone <- write("B") }()
	// B commits at once without the lock; with it, B waits for A.
	bFirst := false
	select {
	case err := <-bDone:
		must(t, "writer B", err)
		bFirst = true
	case <-time.After(500 * time.Millisecond):
	}
	var got []int64
	last := int64(0)
	follow := func() error {
		return s.ExportEvents(ctx, flagadmin.EventQuery{}, last, func(e flagadmin.Event) error {
			got = append(got, e.ID)
			last = e.ID
			return nil
		})
	}
	// The follower reads while A is held. On MySQL, with the lock, it
	// waits for A's commit (it reads only the settled ids); elsewhere it
	// reads at once.
	read := make(chan error, 1)
	go func() { read <- follow() }()
	waiting := false
	select {
	case err := <-read:
		must(t, "ExportEvents", err)
	case <-time.After(500 * time.Millisecond):
		waiting = true
	}
	close(release)
	if waiting {
		must(t, "ExportEvents", <-read)
	}
	must(t, "writer A", <-aDone)
	if !bFirst {
		must(t, "writer B", <-bDone)
	}
	must(t, "ExportEvents", follow())
	if withLock && bFirst {
		t.Errorf("writer B committed while writer A held ids it had drawn: want B to wait for A's commit")
	}
	if !slices.IsSorted(got) {
		t.Errorf("the follower read ids %v, want ascending", got)
	}
	return got, bFirst
}

func ptr[T any](v T) *T { return &v }

// TestEventOrderFollowersMissNothing is the contract's settled case made
// harsher: many writers appending 1 to 3 events at a time by the cheapest
// transaction that takes the event order lock (so the lock changes hands
// as often as it can) while followers read the log as fast as they can,
// each checking it read every id once, in order. On MySQL it catches a follower that trusts a plain snapshot:
// InnoDB takes one while commits go on, and it can see a writer's event
// and not that of the writer that committed just before. (PostgreSQL's
// snapshots have no such window, and the contract's case covers it.)
func TestEventOrderFollowersMissNothing(t *testing.T) {
	const writers, writes, followers = 16, 40, 2
	for _, e := range []struct {
		name string
		url  func(testing.TB) string
	}{{"MySQL", dbtest.MySQL}} {
		t.Run(e.name, func(t *testing.T) {
			s := open(t, e.url(t))
			ctx := t.Context()
			var writing atomic.Int32
			writing.Store(writers)
			errs := make(chan error, writers+followers)
			var wg sync.WaitGroup
			for i := range writers {
				wg.Go(func() {
					defer writing.Add(-1)
					for j := range writes {
						var events []flagadmin.Event
						for range 1 + (i+j)%3 {
							events = append(events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: fmt.Sprint("writer-", i), CreatedAt: time.Now().UTC()})
						}
						if err := bunstore.AppendEventsBare(ctx, s, events); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			read := make([][]int64, followers)
			for i := range followers {
				wg.Go(func() {
					last := int64(0)
					for more := true; more; {
						more = writing.Load() > 0 // once more after the last write
						err := s.ExportEvents(ctx, flagadmin.EventQuery{}, last, func(e flagadmin.Event) error {
							read[i] = append(read[i], e.ID)
							last = e.ID
							return nil
						})
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("got error %v, want nil", err)
			}
			var all []int64
			must(t, "ExportEvents", s.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error {
				all = append(all, e.ID)
				return nil
			}))
			want := 0
			for i := range writers {
				for j := range writes {
					want += 1 + (i+j)%3
				}
			}
			if len(all) != want {
				t.Fatalf("the log holds %d events, want %d", len(all), want)
			}
			for i, got := range read {
				if !slices.Equal(got, all) {
					missed := slices.DeleteFunc(slices.Clone(all), func(id int64) bool { return slices.Contains(got, id) })
					t.Errorf("follower %d read %d events, want %d; missed ids %v", i, len(got), len(all), missed)
				}
			}
		})
	}
}
