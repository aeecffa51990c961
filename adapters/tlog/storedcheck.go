package tlog

import (
	"context"
	"fmt"

	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// storedBatch is how many stored hashes of a level one read fetches.
const storedBatch = 4096

// checkStoredHashes recomputes every stored hash of the tree's levels
// above 0 (BuildTiles) from the leaves, in one pass over the leaves in
// constant memory, and reports those that differ (at most maxProblems,
// through problem) and the number checked.
func checkStoredHashes(ctx context.Context, store vlog.Store, problem func(Problem)) (int64, error) {
	size, err := store.LogSize(ctx)
	if err != nil {
		return 0, err
	}
	c := &storedCheck{ctx: ctx, store: store, problem: problem}
	for level := TileHeight; ; level += TileHeight {
		n, err := store.LogHashCount(ctx, level)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			break
		}
		c.levels = append(c.levels, &storedLevel{level: level, count: n})
		if complete := size >> level; n > complete {
			problem(Problem{Kind: BadHashes, LeafIndex: -1, Detail: fmt.Sprintf(
				"level %d of the stored hashes holds %d, but the %d leaves complete only %d", level, n, size, complete)})
		}
	}
	if len(c.levels) == 0 {
		return 0, nil
	}
	var below [][32]byte // the hashes of the level under c.levels[0]
	for start := int64(0); start < size; start += leafReadBatch {
		end := min(start+leafReadBatch, size)
		runs, err := store.LogHashes(ctx, []vlog.HashRange{{Level: 0, Start: start, End: end}})
		if err != nil {
			return c.checked, err
		}
		if len(runs) != 1 || int64(len(runs[0])) != end-start {
			return c.checked, fmt.Errorf("%w: leaves %d to %d", errShortLog, start, end-1)
		}
		for _, h := range runs[0] {
			if below = append(below, h); len(below) == tileWidth {
				if err := c.push(0, fold(below)); err != nil {
					return c.checked, err
				}
				below = below[:0]
			}
		}
	}
	return c.checked, nil
}

// storedCheck is the state of one checkStoredHashes.
type storedCheck struct {
	ctx     context.Context
	store   vlog.Store
	problem func(Problem)
	levels  []*storedLevel
	checked int64
}

// storedLevel is one stored level: its hashes read so far, and the
// hashes of its leaves waiting to make one of the level above.
type storedLevel struct {
	level        int
	count        int64
	next         int64 // index of the next hash computed from the leaves
	window       [][32]byte
	windowStart  int64
	pendingAbove [][32]byte
}

// push compares the hash computed from the leaves for the next index of
// c.levels[i] with the stored one, and carries it to the level above.
func (c *storedCheck) push(i int, want [32]byte) error {
	if i >= len(c.levels) {
		return nil
	}
	l := c.levels[i]
	idx := l.next
	l.next++
	if idx < l.count {
		if idx >= l.windowStart+int64(len(l.window)) {
			runs, err := c.store.LogHashes(c.ctx, []vlog.HashRange{{Level: l.level, Start: idx, End: min(idx+storedBatch, l.count)}})
			if err != nil {
				return err
			}
			l.window, l.windowStart = runs[0], idx
		}
		c.checked++
		if k := idx - l.windowStart; k < int64(len(l.window)) && l.window[k] != want {
			span := int64(1) << l.level
			c.problem(Problem{Kind: BadHashes, LeafIndex: -1, Detail: fmt.Sprintf(
				"the stored hash of level %d, index %d (leaves %d to %d) is not the hash of its leaves: proofs folded from it would not verify",
				l.level, idx, idx*span, (idx+1)*span-1)})
		}
	}
	if l.pendingAbove = append(l.pendingAbove, want); len(l.pendingAbove) == tileWidth {
		h := fold(l.pendingAbove)
		l.pendingAbove = l.pendingAbove[:0]
		return c.push(i+1, h)
	}
	return nil
}
