package tlog_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
	"github.com/flagadmin/flagadmin/internal/retentiontest"
)

// The attacks on retention (internal/retentiontest) on a store that
// keeps the log as the vlog.Store contract says and nothing else: what
// Verify, the Signer, the Pruner and the Service's retention read and
// write. adapters/bunstore's tests run them on SQL, the attacker's edits
// made with statements on its tables.

func TestVerifyAccountsForRetention(t *testing.T) {
	retentiontest.Run(t, func(*testing.T) retentiontest.Store { return newFakeLog() })
}

// fakeLog is a store that keeps events and their leaves (format v1,
// tombstones kept when pruned) as the vlog.Store contract says, in memory,
// and nothing else: what Verify, the Signer, the Pruner and the Service's
// retention read and write.
type fakeLog struct {
	flagadmin.Store // the rest: not used
	mu              sync.Mutex
	events          []flagadmin.Event // id ascending
	leaves          []vlog.Leaf
	hashes          map[int][][32]byte
	checkpoints     []vlog.Checkpoint
	holds           map[string]time.Time
	lastID          int64
}

var _ retentiontest.Store = (*fakeLog)(nil)

func newFakeLog() *fakeLog {
	return &fakeLog{hashes: map[int][][32]byte{}, holds: map[string]time.Time{}}
}

// appendLocked writes e with the next id and its leaf.
func (f *fakeLog) appendLocked(e flagadmin.Event) error {
	f.lastID++
	e.ID, e.CreatedAt = f.lastID, flagadmin.Truncate(e.CreatedAt)
	if e.Salt == nil {
		e.Salt = leaf.NewSalt()
	}
	h, err := leaf.LeafHash(e)
	if err != nil {
		return err
	}
	c, err := leaf.ContentCommitment(e)
	if err != nil {
		return err
	}
	f.leaves = append(f.leaves, vlog.Leaf{Index: int64(len(f.leaves)), EventID: e.ID, Hash: h,
		CreatedAt: e.CreatedAt, Project: e.Project, Type: e.Type, Content: c, Salt: e.Salt})
	f.events = append(f.events, e)
	return nil
}

func (f *fakeLog) Write(_ context.Context, b *flagadmin.Batch) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range b.Events {
		if err := f.appendLocked(e); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeLog) ExportEvents(ctx context.Context, _ flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	f.mu.Lock()
	events := slices.Clone(f.events)
	f.mu.Unlock()
	for _, e := range events {
		if e.ID <= afterID {
			continue
		}
		e.Salt = nil // read back only for the log
		if err := fn(e); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (f *fakeLog) LogSize(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int64(len(f.leaves)), nil
}

func (f *fakeLog) LogLeaves(_ context.Context, start, end int64) ([]vlog.Leaf, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	end = min(end, int64(len(f.leaves)))
	if start >= end {
		return nil, nil
	}
	out := slices.Clone(f.leaves[start:end])
	for i := range out {
		out[i].Salt = slices.Clone(out[i].Salt)
	}
	return out, nil
}

func (f *fakeLog) LeafIndex(_ context.Context, id int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.leaves {
		if l.EventID == id {
			return l.Index, nil
		}
	}
	return 0, fmt.Errorf("no leaf of event %d: %w", id, flagadmin.ErrNotFound)
}

func (f *fakeLog) LogHashes(_ context.Context, ranges []vlog.HashRange) ([][][32]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][][32]byte, len(ranges))
	for i, r := range ranges {
		level := f.hashes[r.Level]
		if r.Level == 0 {
			level = nil
			for _, l := range f.leaves {
				level = append(level, l.Hash)
			}
		}
		for j := r.Start; j < r.End && j < int64(len(level)); j++ {
			out[i] = append(out[i], level[j])
		}
	}
	return out, nil
}

func (f *fakeLog) SaveLogHashes(_ context.Context, level int, start int64, hashes [][32]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	have := f.hashes[level]
	if start > int64(len(have)) {
		return fmt.Errorf("hashes of level %d from %d: only %d stored", level, start, len(have))
	}
	for i, h := range hashes {
		if j := start + int64(i); j >= int64(len(have)) {
			have = append(have, h)
		}
	}
	f.hashes[level] = have
	return nil
}

func (f *fakeLog) LogHashCount(_ context.Context, level int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if level == 0 {
		return int64(len(f.leaves)), nil
	}
	return int64(len(f.hashes[level])), nil
}

func (f *fakeLog) SaveCheckpoint(_ context.Context, c vlog.Checkpoint) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkpoints = append(f.checkpoints, c)
	return nil
}

func (f *fakeLog) LatestCheckpoint(context.Context) (vlog.Checkpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.checkpoints) == 0 {
		return vlog.Checkpoint{}, fmt.Errorf("no checkpoint: %w", flagadmin.ErrNotFound)
	}
	best := f.checkpoints[0]
	for _, c := range f.checkpoints {
		if c.Size >= best.Size {
			best = c
		}
	}
	return best, nil
}

func (f *fakeLog) PruneEvents(_ context.Context, limit int, cutoff func(*flagadmin.Event) (time.Time, error), record func([]int64) (flagadmin.Event, error)) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	before, err := cutoff(f.lastRuleLocked())
	if err != nil || before.IsZero() {
		return nil, err
	}
	var ids []int64
	for _, e := range f.events {
		if len(ids) == limit {
			break
		}
		if _, held := f.holds[deref(e.Project)]; e.Project != nil && held || vlog.IsRetentionEvent(e.Type) || !e.CreatedAt.Before(before) {
			continue
		}
		ids = append(ids, e.ID)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	e, err := record(ids)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		f.deleteLocked(id)
		f.markLocked(id)
	}
	return ids, f.appendLocked(e)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (f *fakeLog) HoldProject(_ context.Context, project string, since time.Time, e flagadmin.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.holds[project]; ok {
		return fmt.Errorf("held already: %w", flagadmin.ErrConflict)
	}
	f.holds[project] = since
	return f.appendLocked(e)
}

func (f *fakeLog) ReleaseProject(_ context.Context, project string, e flagadmin.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.holds[project]; !ok {
		return fmt.Errorf("no hold: %w", flagadmin.ErrNotFound)
	}
	delete(f.holds, project)
	return f.appendLocked(e)
}

func (f *fakeLog) RecordRetention(_ context.Context, fn func(last *flagadmin.Event) (*flagadmin.Event, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := fn(f.lastRuleLocked())
	if err != nil || e == nil {
		return err
	}
	return f.appendLocked(*e)
}

// lastRuleLocked returns the newest retention-changed event, nil for none.
func (f *fakeLog) lastRuleLocked() *flagadmin.Event {
	for i := len(f.events) - 1; i >= 0; i-- {
		if f.events[i].Type == flagadmin.EventRetentionChanged {
			e := f.events[i]
			return &e
		}
	}
	return nil
}

func (f *fakeLog) LogHolds(context.Context) ([]vlog.Hold, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []vlog.Hold
	for p, since := range f.holds {
		out = append(out, vlog.Hold{Project: p, Since: since})
	}
	slices.SortFunc(out, func(a, b vlog.Hold) int { return strings.Compare(a.Project, b.Project) })
	return out, nil
}

func (f *fakeLog) deleteLocked(id int64) {
	f.events = slices.DeleteFunc(f.events, func(e flagadmin.Event) bool { return e.ID == id })
}

func (f *fakeLog) markLocked(id int64) {
	for i := range f.leaves {
		if f.leaves[i].EventID == id {
			f.leaves[i].Pruned, f.leaves[i].Salt = true, nil
		}
	}
}

func (f *fakeLog) DeleteEventRow(_ *testing.T, id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleteLocked(id)
}

func (f *fakeLog) MarkPruned(_ *testing.T, id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.markLocked(id)
}

func (f *fakeLog) EditLeaf(t *testing.T, id int64, edit func(*vlog.Leaf)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.leaves {
		if f.leaves[i].EventID == id {
			edit(&f.leaves[i])
			return
		}
	}
	t.Fatalf("no leaf of event %d", id)
}

// TestVerifyChecksEachLeafAndItsEvent: each leaf's recorded fields must
// hash to its hash, each event must be the one its leaf commits to, and
// the problems come in log order, a missing event's (decided once the
// passes after it are read) among the others.
func TestVerifyChecksEachLeafAndItsEvent(t *testing.T) {
	ctx := context.Background()
	h := retentiontest.NewHarness(t, newFakeLog())
	ids := h.Write(t0, 20, "default")
	h.Sign()
	events := map[int64]flagadmin.Event{}
	for e, err := range tlog.StoreSource(h.S, h.S).Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		events[e.ID] = e
	}
	same := func(e flagadmin.Event) []flagadmin.Event { return []flagadmin.Event{e} }
	for _, c := range []struct {
		name   string
		edit   func(e flagadmin.Event) []flagadmin.Event
		leaves func(ls []vlog.Leaf) []vlog.Leaf
		want   []string
	}{
		{"untouched", same, nil, nil},
		{"an event's content changed", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == ids[4] {
				e.CreatedBy = "mallory"
			}
			return same(e)
		}, nil, []string{fmt.Sprintf("event %d (leaf 4) was changed: its content differs from what its leaf recorded when it was written", ids[4])}},
		{"an event's createdAt and project changed", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == ids[4] {
				e.CreatedAt, e.Project = e.CreatedAt.Add(time.Hour), ptr("payments")
			}
			return same(e)
		}, nil, []string{fmt.Sprintf("event %d (leaf 4) was changed: its createdAt, project and content differ from what its leaf recorded", ids[4])}},
		{"an event and its leaf's fields changed alike", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == ids[4] {
				e.CreatedAt = e.CreatedAt.Add(-time.Hour)
			}
			return same(e)
		}, func(ls []vlog.Leaf) []vlog.Leaf {
			for i := range ls {
				if ls[i].EventID == ids[4] {
					ls[i].CreatedAt = ls[i].CreatedAt.Add(-time.Hour)
				}
			}
			return ls
		}, []string{fmt.Sprintf("event %d (leaf 4) was changed: its leaf's recorded fields do not hash to its leaf hash: the leaf was rewritten", ids[4])}},
		{"a removal is listed in log order", func(e flagadmin.Event) []flagadmin.Event {
			switch e.ID {
			case ids[3]:
				return nil
			case ids[8]:
				e.CreatedBy = "mallory"
			}
			return same(e)
		}, nil, []string{
			fmt.Sprintf("event %d (leaf 3) was removed: no recorded pruning pass removed it", ids[3]),
			fmt.Sprintf("event %d (leaf 8) was changed", ids[8]),
		}},
		{"two ids swapped", func(e flagadmin.Event) []flagadmin.Event {
			if o, ok := map[int64]int64{ids[5]: ids[9], ids[9]: ids[5]}[e.ID]; ok {
				x := events[o]
				x.ID = e.ID
				return same(x)
			}
			return same(e)
		}, nil, []string{
			fmt.Sprintf("event %d (leaf 5) was reordered: it holds what was recorded as event %d", ids[5], ids[9]),
			fmt.Sprintf("event %d (leaf 9) was reordered: it holds what was recorded as event %d", ids[9], ids[5]),
		}},
		{"an event moved to a new id", func(e flagadmin.Event) []flagadmin.Event {
			switch e.ID {
			case ids[2]:
				return nil
			case ids[19]:
				x := events[ids[2]]
				x.ID = ids[19] + 1
				return []flagadmin.Event{e, x}
			}
			return same(e)
		}, nil, []string{
			fmt.Sprintf("event %d (leaf 2) was reordered: what was recorded as it is now event %d", ids[2], ids[19]+1),
			fmt.Sprintf("event %d was reordered: it holds what was recorded as event %d", ids[19]+1, ids[2]),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := verify(t, tampered{Source: tlog.StoreSource(h.S, h.S), edit: c.edit, leaves: c.leaves}, tlog.VerifyOptions{Verifier: h.Verifier})
			var got []string
			for _, p := range r.Problems {
				if p.Kind != tlog.BadRoot {
					got = append(got, p.String())
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("got problems %q, want %q", got, c.want)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d: got %q, want %q", i, got[i], w)
				}
			}
		})
	}
}
