package tlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Proofs checked before they leave. The stored subtree hashes (BuildTiles)
// make proofs cheap, but anyone who can write the database can change
// one, and a proof folded from it would not verify. So a Prover keeps the
// tree of the leaves in memory as a compact range (its anchor, recomputed
// from the leaves once, then extended by each new leaf) and checks every
// proof and root it answers against it: a root of a smaller tree by a
// consistency proof to the anchor's root, a proof against the root of its
// tree. What does not verify is recomputed from the leaves: the stored
// hashes that disagree with their leaves are named (OnRepair), replaced in
// memory for every later read, and the answer is built again; an answer
// that still does not verify is an error, never served.

// ErrLeavesChanged: the leaves a store holds no longer hash to the tree
// this Prover computed from them before: they were rewritten since.
var ErrLeavesChanged = errors.New("the log's leaves no longer hash to the tree computed from them before")

// Repair is a stored hash that disagreed with its leaves.
type Repair struct {
	// Level and Index name the hash (the subtree of 2^Level leaves of
	// that index at its level).
	Level int
	Index int64
	// Stored is the hash the store holds, Want the one of its leaves.
	Stored, Want [32]byte
}

// leafReadBatch is how many leaves one read fetches when the tree is
// recomputed from its leaves.
const leafReadBatch = 65536

// maxCheckedRoots bounds the roots of smaller trees remembered once
// checked (those of checkpoint sizes, which clients ask proofs for).
const maxCheckedRoots = 256

// anchor is the tree of the first size leaves, as a compact range.
type anchor struct {
	size  int64
	root  [32]byte
	nodes [][]byte
}

// checkState is what a Prover keeps to check its answers.
type checkState struct {
	anchorMu sync.Mutex // held while the anchor is computed
	anchor   atomic.Pointer[anchor]

	mu    sync.Mutex
	roots map[int64][32]byte          // checked roots of smaller trees
	tiled atomic.Pointer[[]int64]     // stored hashes by level, as BuildTiles left them
	fixed map[compact.NodeID][32]byte // stored hashes replaced by their leaves'
	nFix  atomic.Int64                // len(fixed)

	onRepair func(Repair)
}

// OnRepair sets the function told of each stored hash found to disagree
// with its leaves (called once per hash). Set it before the Prover is used.
func (p *Prover) OnRepair(fn func(Repair)) { p.check.onRepair = fn }

// Repaired returns how many stored hashes were found to disagree with
// their leaves.
func (p *Prover) Repaired() int64 { return p.check.nFix.Load() }

// Advance extends the tree the Prover checks against to the log's size,
// reading the new leaves (every leaf the first time), and returns its
// size and root.
func (p *Prover) Advance(ctx context.Context) (int64, [32]byte, error) {
	a, err := p.advance(ctx)
	if err != nil {
		return 0, [32]byte{}, err
	}
	return a.size, a.root, nil
}

func (p *Prover) advance(ctx context.Context) (*anchor, error) {
	c := &p.check
	c.anchorMu.Lock()
	defer c.anchorMu.Unlock()
	size, err := p.store.LogSize(ctx)
	if err != nil {
		return nil, err
	}
	a := c.anchor.Load()
	if a != nil && a.size >= size {
		return a, nil
	}
	next, err := p.extend(ctx, a, size)
	if err != nil {
		return nil, err
	}
	c.anchor.Store(next)
	return next, nil
}

// current returns the anchor, computing it the first time.
func (p *Prover) current(ctx context.Context) (*anchor, error) {
	if a := p.check.anchor.Load(); a != nil {
		return a, nil
	}
	return p.advance(ctx)
}

// extend returns the tree of a (nil: none) extended by the leaves up to size.
func (p *Prover) extend(ctx context.Context, a *anchor, size int64) (*anchor, error) {
	r := rangeFactory.NewEmptyRange(0)
	if a != nil {
		// A copy: appending to a range writes over its hashes, and a is
		// the tree other readers check against.
		var err error
		if r, err = rangeFactory.NewRange(0, uint64(a.size), slices.Clone(a.nodes)); err != nil {
			return nil, fmt.Errorf("tlog: %w", err)
		}
	}
	for start := int64(r.End()); start < size; {
		end := min(start+leafReadBatch, size)
		runs, err := p.store.LogHashes(ctx, []vlog.HashRange{{Level: 0, Start: start, End: end}})
		if err != nil {
			return nil, err
		}
		if len(runs) != 1 || int64(len(runs[0])) != end-start {
			return nil, fmt.Errorf("%w: leaves %d to %d", errShortLog, start, end-1)
		}
		for _, h := range runs[0] {
			if err := r.Append(h[:], nil); err != nil {
				return nil, fmt.Errorf("tlog: %w", err)
			}
		}
		start = end
	}
	out := &anchor{size: size, nodes: r.Hashes(), root: [32]byte(hasher.EmptyRoot())}
	if size > 0 {
		var err error
		if out.root, err = rootOfRange(size, out.nodes); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CheckedRoot returns the root hash of the tree of the first size leaves,
// checked against the tree recomputed from the leaves: for a tree smaller
// than that one, by a consistency proof from the stored hashes (repaired
// when it does not verify); for a larger one, by reading the leaves since.
// An error wrapping ErrLeavesChanged when the leaves disagree with the
// tree computed from them before.
func (p *Prover) CheckedRoot(ctx context.Context, size int64) ([32]byte, error) {
	return p.checkedRoot(ctx, size, nil)
}

// rootRanges names the stored hashes checkedRoot needs for the tree of
// size, for a read that fetches them with a proof's; none when its root
// is known without reading.
func (p *Prover) rootRanges(size int64) []vlog.HashRange {
	a := p.check.anchor.Load()
	if a == nil || size <= 0 || size >= a.size {
		return nil
	}
	p.check.mu.Lock()
	_, known := p.check.roots[size]
	p.check.mu.Unlock()
	if known {
		return nil
	}
	nodes, err := proof.Consistency(uint64(size), uint64(a.size))
	if err != nil {
		return nil
	}
	var out []vlog.HashRange
	for _, id := range append(compact.RangeNodes(0, uint64(size), nil), nodes.IDs...) {
		out = append(out, p.rangeOf(id))
	}
	return out
}

// checkedRoot is CheckedRoot, from the hashes read when not nil (a read
// that asked for rootRanges), else reading them.
func (p *Prover) checkedRoot(ctx context.Context, size int64, read []vlog.Hash) ([32]byte, error) {
	a, err := p.current(ctx)
	if err != nil {
		return [32]byte{}, err
	}
	switch {
	case size == a.size:
		return a.root, nil
	case size > a.size:
		b, err := p.extend(ctx, a, size)
		if err != nil {
			return [32]byte{}, err
		}
		return b.root, nil
	case size == 0:
		return [32]byte(hasher.EmptyRoot()), nil
	}
	if root, ok := p.check.knownRoot(size); ok {
		return root, nil
	}
	nodes, err := proof.Consistency(uint64(size), uint64(a.size))
	if err != nil {
		return [32]byte{}, fmt.Errorf("tlog: %w", err)
	}
	rangeIDs := compact.RangeNodes(0, uint64(size), nil)
	ids := append(rangeIDs, nodes.IDs...)
	try := func() ([32]byte, error) {
		root, path, err := p.rootAndPath(ctx, size, rangeIDs, nodes, read)
		if err != nil {
			return root, err
		}
		if err := proof.VerifyConsistency(hasher, uint64(size), uint64(a.size), path, root[:], a.root[:]); err != nil {
			return root, errUnverified{fmt.Errorf("tlog: the root of the tree of %d leaves: %w", size, err)}
		}
		return root, nil
	}
	root, err := repairedRun(ctx, p, ids, try)
	if err != nil {
		return [32]byte{}, err
	}
	p.check.rememberRoot(size, root)
	return root, nil
}

// rootAndPath returns the root of the tree of size leaves, folded from the
// stored hashes of its compact range (rangeIDs), and the consistency path
// of nodes from it to the anchor's tree: from the hashes read when not nil,
// else reading them.
func (p *Prover) rootAndPath(ctx context.Context, size int64, rangeIDs []compact.NodeID, nodes proof.Nodes, read []vlog.Hash) ([32]byte, [][]byte, error) {
	if read == nil {
		root, err := p.RootHash(ctx, size)
		if err != nil {
			return root, nil, err
		}
		path, err := p.rehash(ctx, nodes)
		return root, path, err
	}
	hashes, err := p.hashesFrom(ctx, rangeIDs, read)
	if err != nil {
		return [32]byte{}, nil, err
	}
	root, err := rootOfRange(size, hashes)
	if err != nil {
		return root, nil, err
	}
	path, err := p.rehashFrom(ctx, nodes, read)
	return root, path, err
}

// knownRoot returns the checked root of the tree of size leaves, if it
// was checked before.
func (c *checkState) knownRoot(size int64) ([32]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	root, ok := c.roots[size]
	return root, ok
}

// rememberRoot keeps the checked root of the tree of size leaves (at most
// maxCheckedRoots of them: all are forgotten when there are more).
func (c *checkState) rememberRoot(size int64, root [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.roots) >= maxCheckedRoots {
		clear(c.roots)
	}
	if c.roots == nil {
		c.roots = map[int64][32]byte{}
	}
	c.roots[size] = root
}

// rootOfRange returns the root of the tree of size leaves from the hashes
// of its compact range (compact.RangeNodes).
func rootOfRange(size int64, hashes [][]byte) ([32]byte, error) {
	r, err := rangeFactory.NewRange(0, uint64(size), hashes)
	if err != nil {
		return [32]byte{}, fmt.Errorf("tlog: %w", err)
	}
	root, err := r.GetRootHash(nil)
	if err != nil {
		return [32]byte{}, fmt.Errorf("tlog: %w", err)
	}
	return [32]byte(root), nil
}

// errUnverified marks a check that failed (as opposed to a read).
type errUnverified struct{ err error }

func (e errUnverified) Error() string { return e.err.Error() }

// repairedRun runs try, which builds an answer from the hashes of the nodes
// ids and returns the error of its check; when the check fails, the
// stored hashes those nodes are folded from are compared with their
// leaves, those that differ are replaced, and try runs again. Its second
// failure is an error wrapping ErrLeavesChanged.
func repairedRun[T any](ctx context.Context, p *Prover, ids []compact.NodeID, try func() (T, error)) (T, error) {
	out, err := try()
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil || !isCheckFailure(err) {
		return out, err
	}
	if err := p.repair(ctx, ids); err != nil {
		return out, err
	}
	out, err = try()
	if err != nil && isCheckFailure(err) {
		return out, fmt.Errorf("%w (%v)", ErrLeavesChanged, err)
	}
	return out, err
}

// isCheckFailure reports whether err is a check that failed.
func isCheckFailure(err error) bool {
	var u errUnverified
	return errors.As(err, &u)
}

// repair compares the stored hashes the nodes ids are folded from with
// the hashes of their leaves, and replaces those that differ.
func (p *Prover) repair(ctx context.Context, ids []compact.NodeID) error {
	seen := map[vlog.HashRange]bool{}
	for _, id := range ids {
		r := storedRange(id)
		if seen[r] {
			continue
		}
		seen[r] = true
		if err := p.repairRange(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// repairRange checks the stored hashes of r against their leaves, and
// those of the level below where r's level lacks some (they are folded
// from there).
func (p *Prover) repairRange(ctx context.Context, r vlog.HashRange) error {
	if r.Level == 0 {
		return nil
	}
	runs, err := p.store.LogHashes(ctx, []vlog.HashRange{r})
	if err != nil {
		return err
	}
	if len(runs) != 1 {
		return fmt.Errorf("tlog: the store answered %d ranges for 1", len(runs))
	}
	span := int64(1) << r.Level
	for k, stored := range runs[0] {
		idx := r.Start + int64(k)
		leaves, err := p.store.LogHashes(ctx, []vlog.HashRange{{Level: 0, Start: idx * span, End: (idx + 1) * span}})
		if err != nil {
			return err
		}
		if len(leaves) != 1 || int64(len(leaves[0])) != span {
			return fmt.Errorf("%w: leaves %d to %d", errShortLog, idx*span, (idx+1)*span-1)
		}
		if want := fold(leaves[0]); want != stored {
			p.replace(Repair{Level: r.Level, Index: idx, Stored: stored, Want: want})
		}
	}
	if got := int64(len(runs[0])); got < r.End-r.Start {
		return p.repairRange(ctx, vlog.HashRange{Level: r.Level - TileHeight, Start: (r.Start + got) * tileWidth, End: r.End * tileWidth})
	}
	return nil
}

// replace records a stored hash that disagrees with its leaves: reads
// see the leaves' hash from now on, and OnRepair is told the first time.
func (p *Prover) replace(fix Repair) {
	c := &p.check
	node := compact.NewNodeID(uint(fix.Level), uint64(fix.Index))
	c.mu.Lock()
	if c.fixed == nil {
		c.fixed = map[compact.NodeID][32]byte{}
	}
	_, known := c.fixed[node]
	c.fixed[node] = fix.Want
	clear(c.roots)
	c.nFix.Store(int64(len(c.fixed)))
	c.mu.Unlock()
	if !known && c.onRepair != nil {
		c.onRepair(fix)
	}
}

// fix replaces, in a run of stored hashes of level from start on, those
// found to disagree with their leaves.
func (p *Prover) fix(level int, start int64, run [][32]byte) {
	if level == 0 || p.check.nFix.Load() == 0 {
		return
	}
	c := &p.check
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range run {
		if h, ok := c.fixed[compact.NewNodeID(uint(level), uint64(start+int64(i)))]; ok {
			run[i] = h
		}
	}
}

// checkedInclusion builds the inclusion path of a leaf of hash leaf with
// build and checks it against the checked root of the tree of size.
func (p *Prover) checkedInclusion(ctx context.Context, index, size int64, leaf [32]byte, nodes proof.Nodes, read []vlog.Hash, build func() ([][]byte, error)) ([][]byte, error) {
	root, err := p.checkedRoot(ctx, size, read)
	if err != nil {
		return nil, err
	}
	return repairedRun(ctx, p, nodes.IDs, func() ([][]byte, error) {
		path, err := build()
		if err != nil {
			return nil, err
		}
		if err := proof.VerifyInclusion(hasher, uint64(index), uint64(size), leaf[:], path, root[:]); err != nil {
			return nil, errUnverified{fmt.Errorf("tlog: the inclusion proof of leaf %d in the tree of %d leaves: %w", index, size, err)}
		}
		return path, nil
	})
}

// checkedConsistency builds the consistency path from the tree of from
// leaves to the tree of to leaves with build and checks it against their
// checked roots.
func (p *Prover) checkedConsistency(ctx context.Context, from, to int64, nodes proof.Nodes, read []vlog.Hash, build func() ([][]byte, error)) ([][]byte, error) {
	r1, err := p.checkedRoot(ctx, from, read)
	if err != nil {
		return nil, err
	}
	r2, err := p.checkedRoot(ctx, to, read)
	if err != nil {
		return nil, err
	}
	return repairedRun(ctx, p, nodes.IDs, func() ([][]byte, error) {
		path, err := build()
		if err != nil {
			return nil, err
		}
		if err := proof.VerifyConsistency(hasher, uint64(from), uint64(to), path, r1[:], r2[:]); err != nil {
			return nil, errUnverified{fmt.Errorf("tlog: the consistency proof from %d to %d leaves: %w", from, to, err)}
		}
		return path, nil
	})
}

// StoredAgrees checks that the stored hashes still give root, a checked
// root, for the tree of size leaves, repairing those that disagree with
// their leaves; an error wrapping ErrLeavesChanged when the leaves
// themselves changed since the Prover read them.
func (p *Prover) StoredAgrees(ctx context.Context, size int64, root [32]byte) error {
	if size == 0 {
		return nil
	}
	_, err := repairedRun(ctx, p, compact.RangeNodes(0, uint64(size), nil), func() (struct{}, error) {
		got, err := p.RootHash(ctx, size)
		if err == nil && got != root {
			err = errUnverified{fmt.Errorf("tlog: the stored hashes give another root to the tree of %d leaves", size)}
		}
		return struct{}{}, err
	})
	return err
}
