package tlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Proofs in one read (vlog.ReadProver): over a store that is a
// vlog.ProofReader, a proof request reads the log's size, the
// event's leaf (with the check that the caller may see it) and every
// stored hash its path may need in one read, one statement on a SQL store,
// instead of one read per step. Which hashes an inclusion path needs
// depends on the leaf's index, which the read itself finds, so the read
// asks for the hashes around the leaf by windows: at each stored level,
// the tile of tileWidth hashes that holds the leaf's ancestor (the path's
// siblings at that level and the TileHeight-1 above it are folded from
// it), and the tile at the tree's right edge (the nodes right of the
// leaf's that the path folds into one). A path at a million leaves so
// reads at most 2·tileWidth hashes per stored level, about 150. Hashes a
// stored level lacks (the tiles are built after the leaves) are read
// after, from the levels below, as Prover.NodeHashes does.

var _ vlog.ReadProver = (*Prover)(nil)

// EventInclusionProof implements vlog.ReadProver: one read of the
// store when it is a vlog.ProofReader, an error wrapping
// errors.ErrUnsupported otherwise.
func (p *Prover) EventInclusionProof(ctx context.Context, q flagadmin.EventQuery, size int64) (vlog.ProofAnswer, error) {
	r, ok := p.store.(vlog.ProofReader)
	if !ok {
		return vlog.ProofAnswer{}, fmt.Errorf("tlog: %T reads no proof at once: %w", p.store, errors.ErrUnsupported)
	}
	if size < 1 {
		return vlog.ProofAnswer{}, fmt.Errorf("tlog: inclusion in a tree of size %d", size)
	}
	read := vlog.ProofQuery{Event: &q}
	for level := 0; size>>level > 0; level += TileHeight {
		end := size >> level
		read.Windows = append(read.Windows, vlog.HashWindow{Level: level, Width: tileWidth, End: end})
		if edge := end &^ (tileWidth - 1); edge < end {
			read.Ranges = append(read.Ranges, vlog.HashRange{Level: level, Start: edge, End: end})
		}
	}
	read.Ranges = append(read.Ranges, p.rootRanges(size)...)
	rows, err := r.ReadLogProof(ctx, read)
	if err != nil {
		return vlog.ProofAnswer{}, err
	}
	a := vlog.ProofAnswer{LogSize: rows.Size, Visible: rows.Visible, Leaf: rows.Leaf}
	if a.Leaf == nil || size > a.LogSize || a.Leaf.Index >= size {
		return a, nil
	}
	nodes, err := proof.Inclusion(uint64(a.Leaf.Index), uint64(size))
	if err != nil {
		return vlog.ProofAnswer{}, fmt.Errorf("tlog: %w", err)
	}
	a.Hashes, err = p.checkedInclusion(ctx, a.Leaf.Index, size, a.Leaf.Hash, nodes, rows.Hashes, func() ([][]byte, error) {
		return p.rehashFrom(ctx, nodes, rows.Hashes)
	})
	return a, err
}

// CheckedConsistencyProof implements vlog.ReadProver: one read of
// the store when it is a vlog.ProofReader, an error wrapping
// errors.ErrUnsupported otherwise.
func (p *Prover) CheckedConsistencyProof(ctx context.Context, from, to int64) (vlog.ProofAnswer, error) {
	r, ok := p.store.(vlog.ProofReader)
	if !ok {
		return vlog.ProofAnswer{}, fmt.Errorf("tlog: %T reads no proof at once: %w", p.store, errors.ErrUnsupported)
	}
	if from < 1 || to < from {
		return vlog.ProofAnswer{}, fmt.Errorf("tlog: consistency from size %d to size %d", from, to)
	}
	nodes, err := proof.Consistency(uint64(from), uint64(to))
	if err != nil {
		return vlog.ProofAnswer{}, fmt.Errorf("tlog: %w", err)
	}
	var read vlog.ProofQuery
	for _, id := range nodes.IDs {
		read.Ranges = append(read.Ranges, p.rangeOf(id))
	}
	read.Ranges = append(read.Ranges, p.rootRanges(from)...)
	read.Ranges = append(read.Ranges, p.rootRanges(to)...)
	rows, err := r.ReadLogProof(ctx, read)
	if err != nil {
		return vlog.ProofAnswer{}, err
	}
	a := vlog.ProofAnswer{LogSize: rows.Size}
	if to > a.LogSize {
		return a, nil
	}
	a.Hashes, err = p.checkedConsistency(ctx, from, to, nodes, rows.Hashes, func() ([][]byte, error) {
		return p.rehashFrom(ctx, nodes, rows.Hashes)
	})
	return a, err
}

// rehashFrom builds the proof of nodes from the hashes read. A node
// whose stored level lacks some of its hashes (they are built after the
// leaves) is folded from the level below, read then, in one more read
// per level missing.
func (p *Prover) rehashFrom(ctx context.Context, nodes proof.Nodes, read []vlog.Hash) ([][]byte, error) {
	hashes, err := p.hashesFrom(ctx, nodes.IDs, read)
	if err != nil {
		return nil, err
	}
	return build(nodes, hashes)
}

// hashesFrom returns the hashes of the nodes ids from the hashes read,
// folding those a stored level lacks from the level below, read then.
func (p *Prover) hashesFrom(ctx context.Context, ids []compact.NodeID, read []vlog.Hash) ([][]byte, error) {
	have := make(map[compact.NodeID][32]byte, len(read))
	for _, h := range read {
		run := [][32]byte{h.Hash}
		p.fix(h.Level, h.Index, run)
		have[compact.NewNodeID(uint(h.Level), uint64(h.Index))] = run[0]
	}
	hashes := make([][]byte, len(ids))
	var below []vlog.HashRange
	var at []int
	levels := make([]int, len(ids)) // the level each node is folded from
	for i, id := range ids {
		r := p.rangeOf(id)
		if _, ok := have[compact.NewNodeID(uint(r.Level), uint64(r.Start))]; !ok {
			r = storedRange(id) // read by a query that knew no better
		}
		levels[i] = r.Level
		run := make([][32]byte, 0, r.End-r.Start)
		for j := r.Start; j < r.End; j++ {
			h, ok := have[compact.NewNodeID(uint(r.Level), uint64(j))]
			if !ok {
				break
			}
			run = append(run, h)
		}
		if int64(len(run)) == r.End-r.Start {
			root := fold(run)
			hashes[i] = root[:]
			continue
		}
		if r.Level == 0 { // not read with the rest: read now
			below = append(below, r)
		} else {
			below = append(below, vlog.HashRange{Level: r.Level - TileHeight, Start: r.Start * tileWidth, End: r.End * tileWidth})
		}
		at = append(at, i)
	}
	if len(below) > 0 {
		runs, err := p.hashes(ctx, below)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			run := runs[k]
			if levels[i] > 0 {
				var tiles [][32]byte
				for j := 0; j+tileWidth <= len(runs[k]); j += tileWidth {
					tiles = append(tiles, fold(runs[k][j:j+tileWidth]))
				}
				run = tiles
			}
			root := fold(run)
			hashes[i] = root[:]
		}
	}
	return hashes, nil
}
