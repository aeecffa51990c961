package memstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

var _ vlog.Store = (*Store)(nil)

// leaf is a leaf of the log's tree (vlog.Leaf without its index,
// which is its position in world.leaves): its hash, what the hash commits
// to, and the event's salt, dropped when the event is pruned (the leaf
// stays, a tombstone).
type leaf struct {
	eventID   int64
	hash      [32]byte
	pruned    bool
	createdAt time.Time
	project   *string
	typ       string
	content   [32]byte
	salt      []byte
}

// logLeaf returns l as the domain holds it, with index i.
func (l leaf) logLeaf(i int64) vlog.Leaf {
	return vlog.Leaf{Index: i, EventID: l.eventID, Hash: l.hash, Pruned: l.pruned,
		CreatedAt: l.createdAt, Project: clonePtr(l.project), Type: l.typ, Content: l.content, Salt: slices.Clone(l.salt)}
}

// LogSize implements vlog.Store.
func (s *Store) LogSize(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return int64(len(s.w.leaves)), nil
}

// LogLeaves implements vlog.Store.
func (s *Store) LogLeaves(ctx context.Context, start, end int64) ([]vlog.Leaf, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	start, end = max(start, 0), min(end, int64(len(s.w.leaves)))
	if start >= end {
		return nil, nil
	}
	out := make([]vlog.Leaf, 0, end-start)
	for i := start; i < end; i++ {
		out = append(out, s.w.leaves[i].logLeaf(i))
	}
	return out, nil
}

// LeafIndex implements vlog.Store: leaves are in id order, so a
// binary search finds it.
func (s *Store) LeafIndex(ctx context.Context, eventID int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	leaves := s.w.leaves
	i := sort.Search(len(leaves), func(i int) bool { return leaves[i].eventID >= eventID })
	if i == len(leaves) || leaves[i].eventID != eventID {
		return 0, flagadmin.ErrNotFound
	}
	return int64(i), nil
}

// LogHashes implements vlog.Store.
func (s *Store) LogHashes(ctx context.Context, ranges []vlog.HashRange) ([][][32]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([][][32]byte, len(ranges))
	for i, r := range ranges {
		n := s.w.hashCount(r.Level)
		start, end := max(r.Start, 0), min(r.End, n)
		if start >= end {
			continue
		}
		hashes := make([][32]byte, 0, end-start)
		for j := start; j < end; j++ {
			if r.Level == 0 {
				hashes = append(hashes, s.w.leaves[j].hash)
			} else {
				hashes = append(hashes, s.w.tiles[r.Level][j])
			}
		}
		out[i] = hashes
	}
	return out, nil
}

var _ vlog.ProofReader = (*Store)(nil)

// ReadLogProof implements vlog.ProofReader: everything under one
// read lock, so one state of the store.
func (s *Store) ReadLogProof(ctx context.Context, q vlog.ProofQuery) (vlog.ProofRows, error) {
	if err := ctx.Err(); err != nil {
		return vlog.ProofRows{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := vlog.ProofRows{Size: int64(len(s.w.leaves))}
	add := func(level int, start, end int64) {
		for i := max(start, 0); i < min(end, s.w.hashCount(level)); i++ {
			h := vlog.Hash{Level: level, Index: i}
			if level == 0 {
				h.Hash = s.w.leaves[i].hash
			} else {
				h.Hash = s.w.tiles[level][i]
			}
			out.Hashes = append(out.Hashes, h)
		}
	}
	for _, r := range q.Ranges {
		add(r.Level, r.Start, r.End)
	}
	if q.Event == nil {
		return out, nil
	}
	s.w.candidates(*q.Event, func(e *storedEvent) {
		out.Visible = out.Visible || q.Event.Matches(e.Event, e.payload, e.meta)
	})
	if !out.Visible || len(q.Event.IDs) != 1 {
		return out, nil
	}
	id := q.Event.IDs[0]
	leaves := s.w.leaves
	i := sort.Search(len(leaves), func(i int) bool { return leaves[i].eventID >= id })
	if i == len(leaves) || leaves[i].eventID != id {
		return out, nil
	}
	l := leaves[i].logLeaf(int64(i))
	out.Leaf = &l
	for _, w := range q.Windows {
		start := int64(i) / (int64(1) << w.Level) / w.Width * w.Width
		add(w.Level, start, min(start+w.Width, w.End))
	}
	return out, nil
}

// hashCount is how many hashes of level the world holds.
func (w *world) hashCount(level int) int64 {
	if level == 0 {
		return int64(len(w.leaves))
	}
	return int64(len(w.tiles[level]))
}

// SaveLogHashes implements vlog.Store.
func (s *Store) SaveLogHashes(ctx context.Context, level int, start int64, hashes [][32]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if level < 1 {
		return fmt.Errorf("memstore: SaveLogHashes: level %d: leaves are written with their events", level)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored := s.w.tiles[level]
	if start < 0 || start > int64(len(stored)) {
		return fmt.Errorf("memstore: SaveLogHashes: level %d holds %d hashes, cannot store from %d", level, len(stored), start)
	}
	if skip := int64(len(stored)) - start; skip < int64(len(hashes)) {
		s.w.tiles[level] = append(stored, hashes[skip:]...)
	}
	return nil
}

// LogHashCount implements vlog.Store.
func (s *Store) LogHashCount(ctx context.Context, level int) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.w.hashCount(level), nil
}

// SaveCheckpoint implements vlog.Store. The store keeps the
// newest checkpoint only.
func (s *Store) SaveCheckpoint(ctx context.Context, c vlog.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.checkpoint == nil || c.Size >= s.checkpoint.Size {
		c.Note = slices.Clone(c.Note)
		s.checkpoint = &c
	}
	return nil
}

// LatestCheckpoint implements vlog.Store.
func (s *Store) LatestCheckpoint(ctx context.Context) (vlog.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return vlog.Checkpoint{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.checkpoint == nil {
		return vlog.Checkpoint{}, flagadmin.ErrNotFound
	}
	c := *s.checkpoint
	c.Note = slices.Clone(c.Note)
	return c, nil
}

// PruneEvents implements vlog.Store. It reads the rule, finds
// the batch and removes it under the write lock: a batch of the oldest
// events costs about its size; one behind held events costs a pass over
// the events.
func (s *Store) PruneEvents(ctx context.Context, limit int, cutoff func(*flagadmin.Event) (time.Time, error), record func([]int64) (flagadmin.Event, error)) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	before, err := cutoff(s.w.lastRetention())
	if err != nil || before.IsZero() {
		return nil, err
	}
	ids, first, last := s.prunable(before, limit)
	if len(ids) == 0 {
		return nil, nil
	}
	// The batch's event is prepared first: on an error nothing changes.
	e, err := record(ids)
	if err != nil {
		return nil, err
	}
	prepared, err := s.w.prepareEvents([]flagadmin.Event{e})
	if err != nil {
		return nil, err
	}
	pruned := map[int64]bool{}
	for _, id := range ids {
		pruned[id] = true
	}
	s.w.markPruned(ids, pruned)
	s.w.dropPruned(pruned, first, last)
	s.w.appendEvents(prepared)
	s.version++
	return ids, nil
}

// prunable returns the ids of the first limit events, in id order, that
// retention may remove with the cut-off before, and the positions of the
// first and the last of them in s.w.events (-1 when there is none).
func (s *Store) prunable(before time.Time, limit int) (ids []int64, first, last int) {
	first, last = -1, -1
	for i, e := range s.w.events {
		if len(ids) == limit {
			break
		}
		if !s.prunableEvent(e, before) {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		ids = append(ids, e.ID)
	}
	return ids, first, last
}

// prunableEvent reports whether retention may remove e with the cut-off
// before: e was created before it, its project is not held, and it is
// not one of retention's own events.
func (s *Store) prunableEvent(e storedEvent, before time.Time) bool {
	if !e.CreatedAt.Before(before) {
		return false
	}
	if _, held := s.holds[deref(e.Project)]; e.Project != nil && held || vlog.IsRetentionEvent(e.Type) {
		return false
	}
	return true
}

// markPruned marks the leaves of the events ids (id ascending, and in
// pruned) pruned, forgetting their salts. The leaves are in id order like
// the events: one pass marks them.
func (w *world) markPruned(ids []int64, pruned map[int64]bool) {
	j := sort.Search(len(w.leaves), func(j int) bool { return w.leaves[j].eventID >= ids[0] })
	for ; j < len(w.leaves) && w.leaves[j].eventID <= ids[len(ids)-1]; j++ {
		if pruned[w.leaves[j].eventID] {
			w.leaves[j].pruned, w.leaves[j].salt = true, nil
		}
	}
}

// dropPruned removes the events in pruned, the first and the last of them
// at the positions first and last of w.events. Slots left behind are
// cleared so the collector frees what they hold.
func (w *world) dropPruned(pruned map[int64]bool, first, last int) {
	var gone []*flagadmin.Event
	for i := first; i <= last; i++ {
		if pruned[w.events[i].ID] {
			gone = append(gone, &w.events[i].Event)
		}
	}
	w.unindexEvents(gone)
	if first == 0 && last == len(pruned)-1 {
		// The oldest events, the usual batch: drop them from the front.
		clear(w.events[:len(pruned)])
		w.events = w.events[len(pruned):]
		return
	}
	kept := w.events[:first]
	for _, e := range w.events[first:] {
		if !pruned[e.ID] {
			kept = append(kept, e)
		}
	}
	clear(w.events[len(kept):])
	w.events = kept
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// HoldProject implements vlog.Store.
func (s *Store) HoldProject(ctx context.Context, project string, since time.Time, e flagadmin.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.holds[project]; held {
		return flagadmin.ErrConflict
	}
	if _, err := s.w.appendEvent(e); err != nil {
		return err
	}
	s.holds[project] = since
	s.version++
	return nil
}

// ReleaseProject implements vlog.Store.
func (s *Store) ReleaseProject(ctx context.Context, project string, e flagadmin.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.holds[project]; !held {
		return flagadmin.ErrNotFound
	}
	if _, err := s.w.appendEvent(e); err != nil {
		return err
	}
	delete(s.holds, project)
	s.version++
	return nil
}

// RecordRetention implements vlog.Store, under the write lock.
func (s *Store) RecordRetention(ctx context.Context, fn func(*flagadmin.Event) (*flagadmin.Event, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := fn(s.w.lastRetention())
	if err != nil || e == nil {
		return err
	}
	if _, err := s.w.appendEvent(*e); err != nil {
		return err
	}
	s.version++
	return nil
}

// lastRetention returns a copy of the newest retention-changed event,
// nil when there is none. Retention's events are never pruned, so it is
// found among the events by its id.
func (w *world) lastRetention() *flagadmin.Event {
	if w.ruleID == 0 {
		return nil
	}
	i, found := sort.Find(len(w.events), func(i int) int { return cmp.Compare(w.ruleID, w.events[i].ID) })
	if !found {
		return nil
	}
	e := cloneEvent(w.events[i].Event)
	return &e
}

// LogHolds implements vlog.Store.
func (s *Store) LogHolds(ctx context.Context) ([]vlog.Hold, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []vlog.Hold{}
	for _, p := range slices.Sorted(maps.Keys(s.holds)) {
		out = append(out, vlog.Hold{Project: p, Since: s.holds[p]})
	}
	return out, nil
}
