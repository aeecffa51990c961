package tlog_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// The attacks on retention: someone who writes the database deletes an
// event and marks its leaf pruned, rewrites its tombstone to look
// eligible, or appends a pruning pass of their own (a row appended
// before the next checkpoint is signed like any other). Verify accepts a
// missing event only where the log's own retention events account for
// it.

// retentionStore is a store the retention attacks run on: a log store
// (written through flagadmin.Store.Write, the Service's holds and
// retention rule, and the Pruner) whose rows an attacker edits by hand.
// fakeLog implements it; a SQL store implements it with statements on
// its tables (runRetentionAttacks).
type retentionStore interface {
	flagadmin.Store
	flagadmin.LogStore
	// DeleteEventRow deletes the row of event id, leaving its leaf.
	DeleteEventRow(t *testing.T, id int64)
	// MarkPruned sets the pruned flag of the leaf of event id and drops
	// its salt, as pruning does.
	MarkPruned(t *testing.T, id int64)
	// EditLeaf rewrites the leaf of event id with edit (its hash is kept
	// unless edit changes it).
	EditLeaf(t *testing.T, id int64, edit func(*flagadmin.LogLeaf))
}

func TestVerifyAccountsForRetention(t *testing.T) {
	runRetentionAttacks(t, func(*testing.T) retentionStore { return newFakeLog() })
}

// runRetentionAttacks runs the retention cases on stores newStore makes,
// each new and empty.
func runRetentionAttacks(t *testing.T, newStore func(t *testing.T) retentionStore) {
	const month = 720 * time.Hour
	day := func(n int) time.Time { return t0.Add(time.Duration(n) * 24 * time.Hour) }
	for _, c := range []struct {
		name string
		// run builds the log and tampers with it; it returns the first
		// problem wanted ("" for none) and the events wanted pruned.
		run func(t *testing.T, h *retentionHarness) (want string, pruned int)
	}{
		{"honest pruning across a rule change, a hold and its release verifies", func(t *testing.T, h *retentionHarness) (string, int) {
			h.at(day(0)).rule(3 * month)
			h.write(day(1), 10, "default")
			h.write(day(1), 5, "payments")
			h.write(day(1), 5, "")
			h.at(day(2)).hold("payments")
			h.prune(day(100), 3*month) // 15: not payments'
			h.at(day(101)).rule(month)
			h.write(day(102), 5, "default")
			h.at(day(103)).release("payments")
			h.prune(day(140), month) // payments' 5 and the 5 new ones
			return "", 25
		}},
		{"an event deleted and marked pruned on a log that never had retention", func(t *testing.T, h *retentionHarness) (string, int) {
			ids := h.write(day(1), 20, "default")
			h.sign()
			h.s.DeleteEventRow(t, ids[6])
			h.s.MarkPruned(t, ids[6])
			return fmt.Sprintf("event %d (leaf 6) was removed: no recorded pruning pass removed it", ids[6]), 0
		}},
		{"an event deleted and marked pruned among pruned ones", func(t *testing.T, h *retentionHarness) (string, int) {
			h.at(day(0)).rule(month)
			h.write(day(1), 10, "default")
			young := h.write(day(35), 10, "default")
			h.prune(day(40), month)
			h.s.DeleteEventRow(t, young[3])
			h.s.MarkPruned(t, young[3])
			return fmt.Sprintf("event %d (leaf 14) was removed: no recorded pruning pass removed it", young[3]), 10
		}},
		{"a young event deleted, with a pass of the attacker's and its tombstone made to look old", func(t *testing.T, h *retentionHarness) (string, int) {
			h.at(day(0)).rule(month)
			ids := h.write(day(35), 10, "default")
			h.sign()
			h.s.DeleteEventRow(t, ids[2])
			h.s.MarkPruned(t, ids[2])
			h.s.EditLeaf(t, ids[2], func(l *flagadmin.LogLeaf) { l.CreatedAt = day(1) })
			h.forgePass(day(40), flagadmin.PruneBefore(day(40), month), month, ids[2])
			return fmt.Sprintf("event %d (leaf 3) was removed: its leaf's recorded fields do not hash to its leaf hash", ids[2]), 0
		}},
		{"a held event deleted, with a pass of the attacker's", func(t *testing.T, h *retentionHarness) (string, int) {
			h.at(day(0)).rule(month)
			ids := h.write(day(1), 10, "payments")
			h.at(day(2)).hold("payments")
			h.prune(day(40), month) // nothing: all held
			h.s.DeleteEventRow(t, ids[4])
			h.s.MarkPruned(t, ids[4])
			pass := h.forgePass(day(41), flagadmin.PruneBefore(day(41), month), month, ids[4])
			return fmt.Sprintf("event %d (leaf 5) was removed: the pruning pass of event %d removed it while project payments was held", ids[4], pass), 0
		}},
		{"a young event deleted, with a pass of the attacker's", func(t *testing.T, h *retentionHarness) (string, int) {
			h.at(day(0)).rule(month)
			ids := h.write(day(35), 10, "default")
			h.s.DeleteEventRow(t, ids[0])
			h.s.MarkPruned(t, ids[0])
			pass := h.forgePass(day(40), day(39), month, ids[0])
			return fmt.Sprintf("event %d (leaf 1) was removed: the pruning pass of event %d removed it at 2025-07-11T00:00:00.000Z, but it was created 2025-07-06T00:00:00.000Z, younger than the retention of 720h in force", ids[0], pass), 0
		}},
		{"an event deleted, with a pass of the attacker's while no retention was in force", func(t *testing.T, h *retentionHarness) (string, int) {
			ids := h.write(day(1), 10, "default")
			h.s.DeleteEventRow(t, ids[0])
			h.s.MarkPruned(t, ids[0])
			pass := h.forgePass(day(40), flagadmin.PruneBefore(day(40), month), month, ids[0])
			return fmt.Sprintf("event %d (leaf 0) was removed: the pruning pass of event %d removed it while no retention was in force", ids[0], pass), 0
		}},
		{"a pass of the attacker's that lists an event after it", func(t *testing.T, h *retentionHarness) (string, int) {
			h.at(day(0)).rule(month)
			ids := h.write(day(1), 3, "default")
			pass := h.forgePass(day(40), flagadmin.PruneBefore(day(40), month), month, ids[2]+5)
			return fmt.Sprintf("event %d (leaf 4) does not account for retention: it lists event %d, not before it in the log", pass, ids[2]+5), 0
		}},
		{"a pruned event's tombstone moved to another project", func(t *testing.T, h *retentionHarness) (string, int) {
			h.at(day(0)).rule(month)
			ids := h.write(day(1), 3, "default")
			h.prune(day(40), month)
			h.s.EditLeaf(t, ids[1], func(l *flagadmin.LogLeaf) { l.Project = ptr("payments") })
			return fmt.Sprintf("event %d (leaf 2) was removed: its leaf's recorded fields do not hash to its leaf hash", ids[1]), 2
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newRetentionHarness(t, newStore(t))
			want, pruned := c.run(t, h)
			h.sign()
			r := verify(t, tlog.StoreSource(h.s, h.s), tlog.VerifyOptions{Verifier: h.verifier})
			n := int64(0)
			for _, p := range r.Pruned {
				n += p.LastLeaf - p.FirstLeaf + 1
			}
			if want == "" {
				if !r.OK() || n != int64(pruned) {
					t.Fatalf("got problems %v and %d pruned (%+v), want OK with %d pruned", r.Problems, n, r.Pruned, pruned)
				}
				return
			}
			if r.OK() || !strings.HasPrefix(r.Problems[0].String(), want) {
				t.Fatalf("got problems %v, want first %q", r.Problems, want)
			}
			if n != int64(pruned) {
				t.Errorf("got %d pruned (%+v), want %d", n, r.Pruned, pruned)
			}
		})
	}
}

// retentionHarness writes a log as a server does: events, the retention
// rule and holds through the Service, pruning passes through the Pruner.
type retentionHarness struct {
	t        *testing.T
	s        retentionStore
	skey     string
	verifier note.Verifier
	now      time.Time
	svc      *flagadmin.Service
}

func newRetentionHarness(t *testing.T, s retentionStore) *retentionHarness {
	skey, v := keys(t)
	h := &retentionHarness{t: t, s: s, skey: skey, verifier: v, now: t0}
	h.svc = flagadmin.NewService(s, flagadmin.WithLog(flagadmin.LogConfig{Store: s}), flagadmin.WithClock(func() time.Time { return h.now }))
	return h
}

// at sets the Service's clock.
func (h *retentionHarness) at(now time.Time) *retentionHarness {
	h.now = now
	return h
}

// write writes n events of project ("" for none) created at, and returns
// their ids.
func (h *retentionHarness) write(at time.Time, n int, project string) []int64 {
	h.t.Helper()
	b := &flagadmin.Batch{}
	for i := range n {
		e := event(i, project)
		e.CreatedAt = at
		b.Events = append(b.Events, e)
	}
	before, err := h.s.LogSize(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.s.Write(context.Background(), b); err != nil {
		h.t.Fatal(err)
	}
	leaves, err := h.s.LogLeaves(context.Background(), before, before+int64(n))
	if err != nil || len(leaves) != n {
		h.t.Fatalf("the leaves of the events written: got %d (%v), want %d", len(leaves), err, n)
	}
	var ids []int64
	for _, l := range leaves {
		ids = append(ids, l.EventID)
	}
	return ids
}

func (h *retentionHarness) rule(retention time.Duration) {
	h.t.Helper()
	if _, err := h.svc.RecordRetention(context.Background(), flagadmin.System, retention); err != nil {
		h.t.Fatal(err)
	}
}

func (h *retentionHarness) hold(project string) {
	h.t.Helper()
	if err := h.svc.HoldProject(context.Background(), flagadmin.System, project); err != nil {
		h.t.Fatal(err)
	}
}

func (h *retentionHarness) release(project string) {
	h.t.Helper()
	if err := h.svc.ReleaseProject(context.Background(), flagadmin.System, project); err != nil {
		h.t.Fatal(err)
	}
}

// prune makes a pruning pass at at under retention, in batches of 4.
func (h *retentionHarness) prune(at time.Time, retention time.Duration) {
	h.t.Helper()
	p := tlog.NewPruner(h.s, retention, tlog.PrunerOptions{Batch: 4, Pause: time.Microsecond, Clock: func() time.Time { return at }})
	if _, err := p.Pass(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// forgePass appends an events-pruned event of the attacker's, as a
// pruning pass would record it, listing ids; it returns its id.
func (h *retentionHarness) forgePass(at, before time.Time, retention time.Duration, ids ...int64) int64 {
	h.t.Helper()
	e, err := flagadmin.PrunedEvent(ids, before, retention, at)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.write1(e)
}

// write1 writes e and returns its id.
func (h *retentionHarness) write1(e flagadmin.Event) int64 {
	h.t.Helper()
	size, err := h.s.LogSize(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.s.Write(context.Background(), &flagadmin.Batch{Events: []flagadmin.Event{e}}); err != nil {
		h.t.Fatal(err)
	}
	l, err := h.s.LogLeaves(context.Background(), size, size+1)
	if err != nil || len(l) != 1 {
		h.t.Fatalf("the leaf of the event written: %v", err)
	}
	return l[0].EventID
}

// sign signs a checkpoint of the log as it is.
func (h *retentionHarness) sign() {
	h.t.Helper()
	if _, _, err := newSigner(h.t, h.s, h.skey).Sign(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// fakeLog is a store that keeps events and their leaves (format v1,
// tombstones kept when pruned) as the LogStore contract says, in memory,
// and nothing else: what Verify, the Signer, the Pruner and the Service's
// retention read and write.
type fakeLog struct {
	flagadmin.Store // the rest: not used
	mu              sync.Mutex
	events          []flagadmin.Event // id ascending
	leaves          []flagadmin.LogLeaf
	hashes          map[int][][32]byte
	checkpoints     []flagadmin.Checkpoint
	holds           map[string]time.Time
	lastID          int64
}

var _ retentionStore = (*fakeLog)(nil)

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
	f.leaves = append(f.leaves, flagadmin.LogLeaf{Index: int64(len(f.leaves)), EventID: e.ID, Hash: h,
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

func (f *fakeLog) LogLeaves(_ context.Context, start, end int64) ([]flagadmin.LogLeaf, error) {
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

func (f *fakeLog) LogHashes(_ context.Context, ranges []flagadmin.LogHashRange) ([][][32]byte, error) {
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

func (f *fakeLog) SaveCheckpoint(_ context.Context, c flagadmin.Checkpoint) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkpoints = append(f.checkpoints, c)
	return nil
}

func (f *fakeLog) LatestCheckpoint(context.Context) (flagadmin.Checkpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.checkpoints) == 0 {
		return flagadmin.Checkpoint{}, fmt.Errorf("no checkpoint: %w", flagadmin.ErrNotFound)
	}
	best := f.checkpoints[0]
	for _, c := range f.checkpoints {
		if c.Size >= best.Size {
			best = c
		}
	}
	return best, nil
}

func (f *fakeLog) PruneEvents(_ context.Context, before time.Time, limit int, record func([]int64) (flagadmin.Event, error)) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []int64
	for _, e := range f.events {
		if len(ids) == limit {
			break
		}
		if _, held := f.holds[deref(e.Project)]; e.Project != nil && held || flagadmin.IsRetentionEvent(e.Type) || !e.CreatedAt.Before(before) {
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
	var last *flagadmin.Event
	for i := range f.events {
		if f.events[i].Type == flagadmin.EventRetentionChanged {
			last = &f.events[i]
		}
	}
	e, err := fn(last)
	if err != nil || e == nil {
		return err
	}
	return f.appendLocked(*e)
}

func (f *fakeLog) LogHolds(context.Context) ([]flagadmin.LogHold, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []flagadmin.LogHold
	for p, since := range f.holds {
		out = append(out, flagadmin.LogHold{Project: p, Since: since})
	}
	slices.SortFunc(out, func(a, b flagadmin.LogHold) int { return strings.Compare(a.Project, b.Project) })
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

func (f *fakeLog) EditLeaf(t *testing.T, id int64, edit func(*flagadmin.LogLeaf)) {
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
	h := newRetentionHarness(t, newFakeLog())
	ids := h.write(t0, 20, "default")
	h.sign()
	events := map[int64]flagadmin.Event{}
	for e, err := range tlog.StoreSource(h.s, h.s).Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		events[e.ID] = e
	}
	same := func(e flagadmin.Event) []flagadmin.Event { return []flagadmin.Event{e} }
	for _, c := range []struct {
		name   string
		edit   func(e flagadmin.Event) []flagadmin.Event
		leaves func(ls []flagadmin.LogLeaf) []flagadmin.LogLeaf
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
		}, func(ls []flagadmin.LogLeaf) []flagadmin.LogLeaf {
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
			r := verify(t, tampered{Source: tlog.StoreSource(h.s, h.s), edit: c.edit, leaves: c.leaves}, tlog.VerifyOptions{Verifier: h.verifier})
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
