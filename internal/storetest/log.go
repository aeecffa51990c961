package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// The cases of the verifiable log and its retention for a store that
// implements vlog.Store; others skip them. The reference is the
// events themselves: the tree a store keeps must be the tree of the
// leaf hashes of its events in id order, as the Merkle library computes it,
// and proofs over its stored hashes must pass the library's verifiers.

// logStore returns the case's store as a vlog.Store, or skips the
// case for a store that keeps no log.
func (w *world) logStore(t *testing.T) vlog.Store {
	t.Helper()
	ls, ok := w.store.(vlog.Store)
	if !ok {
		t.Skipf("storetest: %T keeps no verifiable log (vlog.Store)", w.store)
	}
	return ls
}

// exportAll returns every stored event, id ascending, read by ExportEvents.
func (w *world) exportAll(t *testing.T) []flagadmin.Event {
	t.Helper()
	var out []flagadmin.Event
	err := w.store.ExportEvents(w.ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error {
		out = append(out, e)
		return nil
	})
	wantNoError(t, "Store.ExportEvents", err)
	return out
}

// leavesOf returns every leaf of the log.
func (w *world) leavesOf(t *testing.T, ls vlog.Store) []vlog.Leaf {
	t.Helper()
	size, err := ls.LogSize(w.ctx)
	wantNoError(t, "LogStore.LogSize", err)
	var out []vlog.Leaf
	for start := int64(0); start < size; start += vlog.LeavesMaxCount {
		leaves, err := ls.LogLeaves(w.ctx, start, min(start+vlog.LeavesMaxCount, size))
		wantNoError(t, "LogStore.LogLeaves", err)
		out = append(out, leaves...)
	}
	if int64(len(out)) != size {
		t.Fatalf("LogStore.LogLeaves: got %d leaves, want LogSize %d", len(out), size)
	}
	return out
}

// wantTreeOfEvents checks that the log's leaves are the leaves of the
// events: one per event, in id order, indexes from 0; each leaf's hash is
// the hash of what it commits to (leaf.LeafOf), and the leaf of a
// stored event carries its salt, of leaf.SaltSize bytes and unlike
// every other event's, with which the event matches the leaf
// (leaf.LeafMatches: its id, time, project, type and content); pruned
// ids (none when nil) have leaves marked pruned, without a salt, and no
// event. It returns the leaf hashes.
func (w *world) wantTreeOfEvents(t *testing.T, ls vlog.Store, pruned map[int64]bool) [][]byte {
	t.Helper()
	events := w.exportAll(t)
	leaves := w.leavesOf(t, ls)
	hashes := make([][]byte, len(leaves))
	salts := map[string]int64{}
	next := 0
	for i, l := range leaves {
		hashes[i] = slices.Clone(l.Hash[:])
		if l.Index != int64(i) {
			t.Fatalf("leaf %d: got index %d, want consecutive indexes from 0", i, l.Index)
		}
		if i > 0 && l.EventID <= leaves[i-1].EventID {
			t.Fatalf("leaf %d: event %d after event %d, want ids ascending", i, l.EventID, leaves[i-1].EventID)
		}
		if got := leaf.LeafOf(l); got != l.Hash {
			t.Errorf("leaf %d (event %d): LeafOf its fields %x, want its hash %x", i, l.EventID, got, l.Hash)
		}
		if pruned[l.EventID] {
			if !l.Pruned {
				t.Errorf("leaf %d of pruned event %d: not marked pruned", i, l.EventID)
			}
			if l.Salt != nil {
				t.Errorf("leaf %d of pruned event %d: got salt %x, want none", i, l.EventID, l.Salt)
			}
			continue
		}
		if l.Pruned {
			t.Errorf("leaf %d of event %d: marked pruned, want not", i, l.EventID)
		}
		if next >= len(events) || events[next].ID != l.EventID {
			t.Fatalf("leaf %d names event %d, want the next event in id order (%s)", i, l.EventID, nextID(events, next))
		}
		if len(l.Salt) != leaf.SaltSize {
			t.Errorf("leaf %d (event %d): got a salt of %d bytes, want %d", i, l.EventID, len(l.Salt), leaf.SaltSize)
		} else if other, ok := salts[string(l.Salt)]; ok {
			t.Errorf("leaf %d (event %d): the salt of event %d, want one of its own", i, l.EventID, other)
		}
		salts[string(l.Salt)] = l.EventID
		e := events[next]
		if e.Salt != nil {
			t.Errorf("event %d: read back with its salt, want none (the salt is the log's)", e.ID)
		}
		e.Salt = l.Salt
		match, err := leaf.LeafMatches(l, e)
		if err != nil || !match {
			t.Errorf("leaf %d (event %d): the stored event with the leaf's salt does not match it (%v): leaf %+v", i, l.EventID, err, l)
		}
		next++
	}
	if next != len(events) {
		t.Fatalf("got %d leaves for %d events: event %d has no leaf", len(leaves), len(events), events[next].ID)
	}
	return hashes
}

// leafText formats a leaf for a comparison: its fields, the project's
// value and the time as an instant.
func leafText(l vlog.Leaf) string {
	project := "null"
	if l.Project != nil {
		project = fmt.Sprintf("%q", *l.Project)
	}
	return fmt.Sprintf("{index %d, event %d, hash %x, pruned %v, createdAt %s, project %s, type %q, content %x, salt %x}",
		l.Index, l.EventID, l.Hash, l.Pruned, l.CreatedAt.UTC().Format(time.RFC3339Nano), project, l.Type, l.Content, l.Salt)
}

// leavesText formats leaves for a comparison (leafText).
func leavesText(leaves []vlog.Leaf) string {
	out := make([]string, len(leaves))
	for i, l := range leaves {
		out[i] = leafText(l)
	}
	return strings.Join(out, "\n")
}

func nextID(events []flagadmin.Event, i int) string {
	if i < len(events) {
		return fmt.Sprint(events[i].ID)
	}
	return "none"
}

// treeRoot is the root of the tree of hashes, by the Merkle library.
func treeRoot(t *testing.T, hashes [][]byte) []byte {
	t.Helper()
	if len(hashes) == 0 {
		return rfc6962.DefaultHasher.EmptyRoot()
	}
	r := (&compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}).NewEmptyRange(0)
	for _, h := range hashes {
		if err := r.Append(h, nil); err != nil {
			t.Fatal(err)
		}
	}
	root, err := r.GetRootHash(nil)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// wantProofs checks, for a sample of leaves and sizes, that the proofs
// computed over the store's hashes verify with the library's verifiers
// against the roots of hashes.
func (w *world) wantProofs(t *testing.T, ls vlog.Store, hashes [][]byte) {
	t.Helper()
	p := tlog.NewProver(ls)
	n := int64(len(hashes))
	for _, size := range []int64{1, n / 3, n / 2, n - 1, n} {
		if size < 1 {
			continue
		}
		root := treeRoot(t, hashes[:size])
		got, err := p.RootHash(w.ctx, size)
		if err != nil || !bytes.Equal(got[:], root) {
			t.Fatalf("root of size %d from the store's hashes: got %x (%v), want %x", size, got, err, root)
		}
		for _, index := range []int64{0, size / 2, size - 1} {
			path, err := p.InclusionProof(w.ctx, index, size)
			wantNoError(t, "InclusionProof", err)
			if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(index), uint64(size), hashes[index], path, root); err != nil {
				t.Errorf("inclusion of leaf %d in size %d: %v", index, size, err)
			}
		}
		from := max(size/2, 1)
		path, err := p.ConsistencyProof(w.ctx, from, size)
		wantNoError(t, "ConsistencyProof", err)
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, uint64(from), uint64(size), path, treeRoot(t, hashes[:from]), root); err != nil {
			t.Errorf("consistency from %d to %d: %v", from, size, err)
		}
	}
}

// logEvent is an event of the log cases: created minutes after base; one
// in two has a tag with a color, one in three belongs to a group.
func logEvent(i int, project *string, base time.Time) flagadmin.Event {
	e := flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ada@example.com", CreatedByUserID: i64(adaID),
		CreatedAt: base.Add(time.Duration(i) * time.Minute), Project: project, FeatureName: str(fmt.Sprintf("f%d", i)),
		Data: []byte(fmt.Sprintf(`{"n": %d, "name": "f%d", "on": true}`, i, i)), Tags: []flagadmin.Tag{{Type: "simple", Value: "log"}}}
	if i%2 == 1 {
		e.Tags = append(e.Tags, flagadmin.Tag{Type: "area", Value: "web", Color: flagadmin.ColorOf("#34A853")})
	}
	if i%3 == 0 {
		e.GroupType, e.GroupID = str("transaction"), str(fmt.Sprintf("g%d", i/6))
	}
	return e
}

// writeEvents writes n events (logEvent) in one batch and returns their ids.
func (w *world) writeEvents(t *testing.T, n int, project *string, base time.Time) []int64 {
	t.Helper()
	b := &flagadmin.Batch{}
	for i := range n {
		b.Events = append(b.Events, logEvent(i, project, base))
	}
	wantNoError(t, "Store.Write", w.store.Write(w.ctx, b))
	ids := make([]int64, n)
	for i, e := range b.Events {
		ids[i] = e.ID
	}
	return ids
}

func logCases() []testCase {
	return []testCase{
		{"log/the tree is the tree of the events, written every way", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			w.load(lifecycleFixture(), seedEventsNamed()...)
			// Writes of every kind: a batch, a lifecycle update, a delete.
			w.writeEvents(t, 300, str("default"), suiteNow.Add(-time.Hour))
			wantNoError(t, "complete", w.complete(eveSecret, "default", "alpha", kept("v1")))
			wantNoError(t, "DeleteServiceAccount", w.svc.DeleteServiceAccount(w.ctx, w.as(adminSecret), fmt.Sprint(ciID)))
			wantNoError(t, "DeleteToken", w.store.DeleteToken(w.ctx, flagadmin.HashSecret(eveSecret), func(flagadmin.APIToken) (flagadmin.Event, error) {
				return flagadmin.Event{Type: flagadmin.EventAPITokenDeleted, CreatedBy: "admin", CreatedAt: suiteNow}, nil
			}))
			wantNoError(t, "HoldProject", ls.HoldProject(w.ctx, "default", suiteNow, holdEvent(flagadmin.EventLogHoldAdded, "default")))
			hashes := w.wantTreeOfEvents(t, ls, nil)
			if len(hashes) < 300 {
				t.Fatalf("got %d leaves, want at least 300", len(hashes))
			}
			w.wantProofs(t, ls, hashes)
			// And with the stored subtree hashes built.
			wantNoError(t, "BuildTiles", tlog.NewProver(ls).BuildTiles(w.ctx))
			w.wantProofs(t, ls, hashes)
		}},
		{"log/an empty store has an empty tree", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			size, err := ls.LogSize(w.ctx)
			wantNoError(t, "LogSize", err)
			wantEqual(t, "LogSize", size, int64(0))
			root, err := tlog.NewProver(ls).RootHash(w.ctx, 0)
			wantNoError(t, "RootHash(0)", err)
			wantEqual(t, "root of the empty tree", fmt.Sprintf("%x", root), fmt.Sprintf("%x", rfc6962.DefaultHasher.EmptyRoot()))
			_, err = ls.LatestCheckpoint(w.ctx)
			wantKind(t, "LatestCheckpoint", err, flagadmin.ErrNotFound)
		}},
		{"log/a failed write leaves the tree as it was", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			w.load(lifecycleFixture())
			w.writeEvents(t, 5, str("default"), suiteNow)
			before := w.leavesOf(t, ls)
			b := newRows()
			b.Projects = append(b.Projects, flagadmin.Project{ID: "default", Name: "Again", Mode: flagadmin.ModeOpen, CreatedAt: suiteNow})
			wantKind(t, "Store.Write of a duplicate", w.store.Write(w.ctx, b), flagadmin.ErrConflict)
			b = newRows()
			b.Then = func(*flagadmin.Batch) ([]flagadmin.Event, error) { return nil, errCallback }
			if err := w.store.Write(w.ctx, b); !errors.Is(err, errCallback) {
				t.Errorf("Store.Write with a failing Then: got %v, want the callback's error", err)
			}
			err := w.store.UpdateFeature(w.ctx, "alpha", func(*flagadmin.Feature) (*flagadmin.Event, error) { return nil, errCallback })
			if !errors.Is(err, errCallback) {
				t.Errorf("Store.UpdateFeature with a failing callback: got %v, want the callback's error", err)
			}
			after := w.leavesOf(t, ls)
			wantEqual(t, "leaves after the failed writes", leavesText(after), leavesText(before))
			w.wantTreeOfEvents(t, ls, nil)
		}},
		{"log/concurrent writers make one tree", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			w.load(lifecycleFixture())
			errs := together(goroutines, func(i int) error {
				for j := range 4 {
					b := &flagadmin.Batch{Events: []flagadmin.Event{logEvent(i*10+j, str("default"), suiteNow), logEvent(i*10+j+5, nil, suiteNow)}}
					if err := w.store.Write(w.ctx, b); err != nil {
						return err
					}
				}
				return nil
			})
			for i, err := range errs {
				if err != nil {
					t.Errorf("writer %d: %v", i, err)
				}
			}
			hashes := w.wantTreeOfEvents(t, ls, nil)
			wantEqual(t, "leaves", len(hashes), goroutines*8)
			w.wantProofs(t, ls, hashes)
		}},
		{"log/LeafIndex finds the leaf of an event and no other", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			ids := w.writeEvents(t, 20, nil, suiteNow)
			for i, id := range ids {
				got, err := ls.LeafIndex(w.ctx, id)
				wantNoError(t, "LeafIndex", err)
				wantEqual(t, fmt.Sprintf("leaf of event %d", id), got, int64(i))
			}
			_, err := ls.LeafIndex(w.ctx, ids[len(ids)-1]+1)
			wantKind(t, "LeafIndex of an id past the log", err, flagadmin.ErrNotFound)
			_, err = ls.LeafIndex(w.ctx, 0)
			wantKind(t, "LeafIndex(0)", err, flagadmin.ErrNotFound)
			leaves, err := ls.LogLeaves(w.ctx, 15, 30)
			wantNoError(t, "LogLeaves past the end", err)
			wantEqual(t, "leaves 15 to 29 of 20", len(leaves), 5)
		}},
		{"log/stored hashes are kept from index 0 on, first save wins", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			w.writeEvents(t, 3, nil, suiteNow)
			h := func(b byte) [32]byte { return [32]byte{b} }
			wantNoError(t, "SaveLogHashes", ls.SaveLogHashes(w.ctx, 8, 0, [][32]byte{h(1), h(2)}))
			wantNoError(t, "SaveLogHashes again, overlapping", ls.SaveLogHashes(w.ctx, 8, 1, [][32]byte{h(9), h(3)}))
			n, err := ls.LogHashCount(w.ctx, 8)
			wantNoError(t, "LogHashCount", err)
			wantEqual(t, "hashes of level 8", n, int64(3))
			if err := ls.SaveLogHashes(w.ctx, 8, 5, [][32]byte{h(5)}); err == nil {
				t.Errorf("SaveLogHashes leaving a gap: got no error")
			}
			n, _ = ls.LogHashCount(w.ctx, 0)
			wantEqual(t, "LogHashCount(0)", n, int64(3))
			runs, err := ls.LogHashes(w.ctx, []vlog.HashRange{{Level: 8, Start: 1, End: 10}, {Level: 16, Start: 0, End: 1}, {Level: 0, Start: 2, End: 3}})
			wantNoError(t, "LogHashes", err)
			wantEqual(t, "ranges answered", len(runs), 3)
			wantEqual(t, "level 8 from 1", fmt.Sprint(runs[0]), fmt.Sprint([][32]byte{h(2), h(3)}))
			wantEqual(t, "level 16", len(runs[1]), 0)
			leaves := w.leavesOf(t, ls)
			wantEqual(t, "leaf 2's hash", fmt.Sprint(runs[2]), fmt.Sprint([][32]byte{leaves[2].Hash}))
		}},
		{"log/the latest checkpoint is the largest saved", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			at := suiteNow.Truncate(time.Millisecond)
			for _, c := range []vlog.Checkpoint{
				{Size: 5, Root: [32]byte{5}, Note: []byte("five\n"), SignedAt: at},
				{Size: 3, Root: [32]byte{3}, Note: []byte("three\n"), SignedAt: at.Add(time.Second)},
			} {
				wantNoError(t, "SaveCheckpoint", ls.SaveCheckpoint(w.ctx, c))
			}
			c, err := ls.LatestCheckpoint(w.ctx)
			wantNoError(t, "LatestCheckpoint", err)
			wantEqual(t, "latest size", c.Size, int64(5))
			wantEqual(t, "latest note", string(c.Note), "five\n")
			wantEqual(t, "latest root", c.Root, [32]byte{5})
			wantEqual(t, "latest signed at", c.SignedAt.Equal(at), true)
			wantNoError(t, "SaveCheckpoint", ls.SaveCheckpoint(w.ctx, vlog.Checkpoint{Size: 7, Root: [32]byte{7}, Note: []byte("seven\n"), SignedAt: at}))
			c, _ = ls.LatestCheckpoint(w.ctx)
			wantEqual(t, "latest size", c.Size, int64(7))
		}},
		{"log/pruning removes old events of projects without a hold, and keeps their leaves", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			vs := w.versioned(t)
			w.load(lifecycleFixture())
			old := suiteNow.Add(-48 * time.Hour)
			oldDefault := w.writeEvents(t, 10, str("default"), old)
			oldHeld := w.writeEvents(t, 5, str("held"), old)
			oldNone := w.writeEvents(t, 5, nil, old)
			recent := w.writeEvents(t, 5, str("default"), suiteNow)
			wantNoError(t, "HoldProject", ls.HoldProject(w.ctx, "held", suiteNow, holdEvent(flagadmin.EventLogHoldAdded, "held")))
			before := w.leavesOf(t, ls)
			v0 := version(t, w, vs)
			cut := suiteNow.Add(-24 * time.Hour)
			first, err := ls.PruneEvents(w.ctx, 6, cutAt(cut), pruneRecord(cut))
			wantNoError(t, "PruneEvents", err)
			wantEqual(t, "first batch", fmt.Sprint(first), fmt.Sprint(oldDefault[:6]))
			if version(t, w, vs) <= v0 {
				t.Errorf("Version after pruning: not raised")
			}
			var rest []int64
			for {
				ids, err := ls.PruneEvents(w.ctx, 6, cutAt(cut), pruneRecord(cut))
				wantNoError(t, "PruneEvents", err)
				if len(ids) == 0 {
					break
				}
				rest = append(rest, ids...)
			}
			wantEqual(t, "later batches", fmt.Sprint(rest), fmt.Sprint(append(slices.Clone(oldDefault[6:]), oldNone...)))
			pruned := map[int64]bool{}
			for _, id := range append(first, rest...) {
				pruned[id] = true
			}
			w.wantTreeOfEvents(t, ls, pruned)
			after := w.leavesOf(t, ls)
			for i := range before {
				// A pruned leaf keeps its hash and what it commits to (a
				// tombstone); it loses only its salt.
				b, a := before[i], after[i]
				b.Pruned, b.Salt, a.Pruned, a.Salt = false, nil, false, nil
				if leafText(a) != leafText(b) {
					t.Errorf("leaf %d: changed by pruning: got %s, want %s", i, leafText(a), leafText(b))
				}
				if pruned[after[i].EventID] && (after[i].Salt != nil || leaf.LeafOf(after[i]) != after[i].Hash) {
					t.Errorf("leaf %d, pruned: salt %x, LeafOf %x, hash %x; want no salt and LeafOf its hash", i, after[i].Salt, leaf.LeafOf(after[i]), after[i].Hash)
				}
			}
			remaining := w.exportAll(t)
			var ids []int64
			for _, e := range remaining {
				ids = append(ids, e.ID)
			}
			for _, id := range append(slices.Clone(oldHeld), recent...) {
				if !slices.Contains(ids, id) {
					t.Errorf("event %d (held or recent): pruned", id)
				}
			}
			page, err := w.store.SearchEvents(w.ctx, flagadmin.EventQuery{Limit: 100, IDs: oldDefault})
			wantNoError(t, "SearchEvents", err)
			wantEqual(t, "pruned events found by a search", page.Total, 0)
		}},
		{"log/holds: the first one stays, a release ends it", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			t1 := suiteNow.Truncate(time.Millisecond)
			wantNoError(t, "HoldProject", ls.HoldProject(w.ctx, "b", t1, holdEvent(flagadmin.EventLogHoldAdded, "b")))
			wantNoError(t, "HoldProject", ls.HoldProject(w.ctx, "a", t1, holdEvent(flagadmin.EventLogHoldAdded, "a")))
			wantKind(t, "HoldProject again", ls.HoldProject(w.ctx, "b", t1.Add(time.Hour), holdEvent(flagadmin.EventLogHoldAdded, "b")), flagadmin.ErrConflict)
			holds, err := ls.LogHolds(w.ctx)
			wantNoError(t, "LogHolds", err)
			wantEqual(t, "holds", len(holds), 2)
			wantEqual(t, "first hold", holds[0].Project, "a")
			wantEqual(t, "b held since its first hold", holds[1].Since.Equal(t1), true)
			wantNoError(t, "ReleaseProject", ls.ReleaseProject(w.ctx, "a", holdEvent(flagadmin.EventLogHoldReleased, "a")))
			wantKind(t, "ReleaseProject again", ls.ReleaseProject(w.ctx, "a", holdEvent(flagadmin.EventLogHoldReleased, "a")), flagadmin.ErrNotFound)
			holds, _ = ls.LogHolds(w.ctx)
			wantEqual(t, "holds after a release", len(holds), 1)
		}},
		{"log/pruning while writers write loses no event it should keep", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			old := w.writeEvents(t, 200, str("default"), suiteNow.Add(-48*time.Hour))
			held := w.writeEvents(t, 20, str("held"), suiteNow.Add(-48*time.Hour))
			wantNoError(t, "HoldProject", ls.HoldProject(w.ctx, "held", suiteNow, holdEvent(flagadmin.EventLogHoldAdded, "held")))
			var (
				mu      sync.Mutex
				written []int64
				pruned  []int64
			)
			stop := make(chan struct{})
			errs := together(5, func(i int) error {
				if i == 0 { // the pruner
					defer close(stop)
					for {
						ids, err := ls.PruneEvents(w.ctx, 7, cutAt(suiteNow.Add(-24*time.Hour)), pruneRecord(suiteNow.Add(-24*time.Hour)))
						if err != nil {
							return err
						}
						pruned = append(pruned, ids...)
						if len(ids) == 0 {
							return nil
						}
					}
				}
				for n := 0; ; n++ {
					b := &flagadmin.Batch{Events: []flagadmin.Event{logEvent(n, str("default"), suiteNow)}}
					if err := w.store.Write(w.ctx, b); err != nil {
						return err
					}
					mu.Lock()
					written = append(written, b.Events[0].ID)
					mu.Unlock()
					select {
					case <-stop:
						if n >= 10 {
							return nil
						}
					default:
					}
				}
			})
			for i, err := range errs {
				if err != nil {
					t.Fatalf("goroutine %d: %v", i, err)
				}
			}
			slices.Sort(pruned)
			wantEqual(t, "pruned", fmt.Sprint(pruned), fmt.Sprint(old))
			isPruned := map[int64]bool{}
			for _, id := range pruned {
				isPruned[id] = true
			}
			hashes := w.wantTreeOfEvents(t, ls, isPruned)
			kept := map[int64]bool{}
			for _, e := range w.exportAll(t) {
				kept[e.ID] = true
			}
			for _, id := range append(held, written...) {
				if !kept[id] {
					t.Errorf("event %d: lost", id)
				}
			}
			w.wantProofs(t, ls, hashes)
		}},
		{"log/the Service's proofs: in one read as step by step, of events the caller may see, verified", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			w.fixture(visibilityFixture())
			for _, project := range []string{"default,secret", "default,guarded", "secret,vault", flagadmin.AllProjects} {
				w.writeEvents(t, 2, str(project), suiteNow)
			}
			w.writeEvents(t, 290, str("default"), suiteNow)
			w.writeEvents(t, 20, str("secret"), suiteNow)
			w.wantServiceProofs(t, ls, nil)
			wantNoError(t, "BuildTiles", tlog.NewProver(ls).BuildTiles(w.ctx))
			w.wantServiceProofs(t, ls, nil)
			// Leaves past the stored hashes: the proofs read the rest.
			w.writeEvents(t, 40, nil, suiteNow)
			w.wantServiceProofs(t, ls, nil)
			// The fixture's events, of 2025, pruned: no proof of them.
			ids, err := ls.PruneEvents(w.ctx, 100, cutAt(suiteNow.Add(-24*time.Hour)), pruneRecord(suiteNow.Add(-24*time.Hour)))
			wantNoError(t, "PruneEvents", err)
			pruned := map[int64]bool{}
			for _, id := range ids {
				pruned[id] = true
			}
			wantEqual(t, "pruned", len(pruned), 5)
			w.wantServiceProofs(t, ls, pruned)
		}},
		{"log/proofs of a root taken before pruning still verify after it", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			w.writeEvents(t, 150, str("default"), suiteNow.Add(-48*time.Hour))
			w.writeEvents(t, 150, str("default"), suiteNow)
			hashes := w.wantTreeOfEvents(t, ls, nil)
			wantNoError(t, "BuildTiles", tlog.NewProver(ls).BuildTiles(w.ctx))
			ids, err := ls.PruneEvents(w.ctx, 1000, cutAt(suiteNow.Add(-24*time.Hour)), pruneRecord(suiteNow.Add(-24*time.Hour)))
			wantNoError(t, "PruneEvents", err)
			wantEqual(t, "pruned", len(ids), 150)
			w.wantProofs(t, ls, hashes)
		}},
		{"log/a salt given with an event is kept, one of another size is refused", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			given := leaf.NewSalt()
			e := logEvent(1, str("default"), suiteNow)
			e.Salt = slices.Clone(given)
			wantNoError(t, "Store.Write", w.store.Write(w.ctx, &flagadmin.Batch{Events: []flagadmin.Event{e}}))
			leaves := w.leavesOf(t, ls)
			wantEqual(t, "leaves", len(leaves), 1)
			wantEqual(t, "the leaf's salt", fmt.Sprintf("%x", leaves[0].Salt), fmt.Sprintf("%x", given))
			for _, size := range []int{0, 8, leaf.SaltSize + 1} {
				bad := logEvent(2, str("default"), suiteNow)
				bad.Salt = make([]byte, size)
				err := w.store.Write(w.ctx, &flagadmin.Batch{Events: []flagadmin.Event{logEvent(3, nil, suiteNow), bad}})
				wantKind(t, fmt.Sprintf("Store.Write of an event with a salt of %d bytes", size), err, flagadmin.ErrValidation)
			}
			w.wantTreeOfEvents(t, ls, nil)
			wantEqual(t, "leaves after the refused writes", len(w.leavesOf(t, ls)), 1)
		}},
		{"log/the Service gives the salt with the proof of an event the caller may see", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			w.load(lifecycleFixture())
			w.writeEvents(t, 3, str("default"), suiteNow)
			leaves := w.leavesOf(t, ls)
			svc := vlog.NewService(flagadmin.NewService(w.store), vlog.Config{Store: ls, Prover: tlog.NewProver(ls)})
			for _, l := range leaves {
				got, err := svc.InclusionProof(w.ctx, w.as(adminSecret), vlog.ProofParams{ID: fmt.Sprint(l.EventID), Size: fmt.Sprint(len(leaves))})
				wantNoError(t, "LogInclusionProof", err)
				wantEqual(t, fmt.Sprintf("salt of event %d", l.EventID), fmt.Sprintf("%x", got.Salt), fmt.Sprintf("%x", l.Salt))
			}
		}},
	}
}

// seedEventsNamed names the seed events of the seed cases.
func seedEventsNamed() []namedEvent {
	var out []namedEvent
	for i, e := range seedEvents() {
		out = append(out, namedEvent{name: fmt.Sprintf("seed%d", i), ev: e})
	}
	return out
}

// wantServiceProofs checks the Service's inclusion and consistency proofs
// for a sample of events, callers and sizes: those of a Service whose
// prover reads a proof at once (vlog.ReadProver, when the store
// can) and those of one that reads step by step must be the same answers,
// an event the caller may not see (as in a search) or that was pruned (in
// pruned) has none, and every path verifies with the Merkle library's
// verifiers against the roots of the leaves.
func (w *world) wantServiceProofs(t *testing.T, ls vlog.Store, pruned map[int64]bool) {
	t.Helper()
	hashes := w.wantTreeOfEvents(t, ls, pruned)
	leaves := w.leavesOf(t, ls)
	size := int64(len(leaves))
	prover := tlog.NewProver(ls)
	oneRead := vlog.NewService(flagadmin.NewService(w.store), vlog.Config{Store: ls, Prover: prover})
	stepwise := vlog.NewService(flagadmin.NewService(w.store), vlog.Config{Store: ls, Prover: struct{ vlog.Prover }{prover}})
	projects := map[int64]*string{}
	for _, e := range w.exportAll(t) {
		projects[e.ID] = e.Project
	}
	// The project columns whose events each caller may see: an event
	// naming a project it may not see, or every project, has no proof
	// for it.
	visible := map[string][]string{
		vicSecret: {"default", "guarded", "default,guarded"},
		maxSecret: {"default", "guarded", "secret", "default,guarded", "default,secret"},
	}
	sees := func(secret string, id int64) bool {
		project, ok := projects[id]
		switch {
		case !ok:
			return false
		case secret == adminSecret:
			return true
		case project == nil:
			return false
		}
		return slices.Contains(visible[secret], *project)
	}
	// Leaves of every project and none, every event naming several
	// projects, the first and last, and an id no event has.
	var sample []int
	for i := 0; i < len(leaves); i += 37 {
		sample = append(sample, i)
	}
	for i, l := range leaves {
		if p := projects[l.EventID]; p != nil && (strings.Contains(*p, ",") || *p == flagadmin.AllProjects) {
			sample = append(sample, i)
		}
	}
	sample = append(sample, 1, 2, 3, 4, len(leaves)-1)
	for _, secret := range []string{adminSecret, vicSecret, maxSecret} {
		p := w.as(secret)
		for _, i := range append(sample, -1) {
			id, index := leaves[len(leaves)-1].EventID+1000, int64(len(leaves))
			if i >= 0 {
				id, index = leaves[i].EventID, int64(i)
			}
			for _, n := range []int64{index + 1, (index + size + 1) / 2, size, size + 1, max(index, 1)} {
				what := fmt.Sprintf("%s: proof of event %d (leaf %d) in size %d", secret, id, index, n)
				params := vlog.ProofParams{ID: fmt.Sprint(id), Size: fmt.Sprint(n)}
				got, err := oneRead.InclusionProof(w.ctx, p, params)
				want, wantErr := stepwise.InclusionProof(w.ctx, p, params)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: in one read got %+v, %v; step by step %+v, %v", what, got, err, want, wantErr)
				}
				switch {
				case !sees(secret, id) || pruned[id]:
					wantKind(t, what, err, flagadmin.ErrNotFound)
				case n > size || n <= index:
					wantKind(t, what, err, flagadmin.ErrValidation)
				case err != nil:
					t.Fatalf("%s: %v", what, err)
				default:
					if got.LeafIndex != index || got.EventID != id || !bytes.Equal(got.LeafHash, hashes[index]) {
						t.Fatalf("%s: got leaf %d, event %d, hash %x; want %d, %d, %x", what, got.LeafIndex, got.EventID, got.LeafHash, index, id, hashes[index])
					}
					if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(index), uint64(n), hashes[index], got.Hashes, treeRoot(t, hashes[:n])); err != nil {
						t.Fatalf("%s: does not verify: %v", what, err)
					}
				}
			}
		}
	}
	p := w.as(vicSecret)
	for _, c := range [][2]int64{{1, 1}, {1, size}, {5, 16}, {17, 255}, {size / 3, size / 2}, {size / 2, size}, {size - 1, size}, {size, size}, {1, size + 1}} {
		what := fmt.Sprintf("consistency from %d to %d", c[0], c[1])
		params := vlog.ConsistencyParams{From: fmt.Sprint(c[0]), To: fmt.Sprint(c[1])}
		got, err := oneRead.ConsistencyProof(w.ctx, p, params)
		want, wantErr := stepwise.ConsistencyProof(w.ctx, p, params)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: in one read got %+v, %v; step by step %+v, %v", what, got, err, want, wantErr)
		}
		if c[1] > size {
			wantKind(t, what, err, flagadmin.ErrValidation)
			continue
		}
		wantNoError(t, what, err)
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, uint64(c[0]), uint64(c[1]), got.Hashes, treeRoot(t, hashes[:c[0]]), treeRoot(t, hashes[:c[1]])); err != nil {
			t.Fatalf("%s: does not verify: %v", what, err)
		}
	}
}
