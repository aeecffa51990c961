package tlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// TileHeight is the distance between the levels of the tree whose hashes
// are stored (BuildTiles): levels 4, 8, 12..., each hash the root of a
// perfect subtree of 16 hashes of the stored level below. A node of the
// tree is then folded from at most 8 stored hashes: a proof at a million
// leaves reads at most 160 hashes (20 nodes), in one read, instead of up
// to half the log; the stored levels hold n/15 hashes for n leaves.
const TileHeight = 4

// tileWidth is how many hashes of a stored level make one of the next.
const tileWidth = 1 << TileHeight

// The stored levels are the tiles of golang.org/x/mod/sumdb/tlog of
// height TileHeight: its tile of level L and number N is the hashes of
// stored level L·TileHeight from N·tileWidth on (sumdbtiles_test.go has
// that package prove from them what the Prover proves). Its proofs are
// not used here: TileHashReader checks each tile against the root of one
// tree and stops at the first that disagrees, where a Prover names and
// replaces the stored hash at fault (checked.go), folds the hashes a
// stored level still lacks from the level below (hashes), and plans a
// proof's one read from the nodes it needs before reading them
// (oneread.go), a list ProveRecord and ProveTree keep to themselves. Its
// HashReader asks for hashes of every level (StoredHashIndex), which the
// store keeps only every TileHeight levels: serving it would take the
// folding below all the same. So a node is folded from its stored level
// here (storedRange, fold), reading only its own hashes where
// HashFromTile would read its tile from the start.

// hasher is RFC 6962's (RFC 9162's) hash of the tree, SHA-256.
var hasher = rfc6962.DefaultHasher

// rangeFactory builds compact ranges with the tree's hash.
var rangeFactory = &compact.RangeFactory{Hash: hasher.HashChildren}

// Prover computes roots and proofs over a store's tree
// (vlog.Prover) with github.com/transparency-dev/merkle, reading
// the hashes of the nodes a proof needs from the stored levels: leaves
// and the hashes BuildTiles saved. Without stored levels it is correct,
// only slower (it folds leaves). It is safe for concurrent use.
type Prover struct {
	store vlog.Store
	check checkState
}

var _ vlog.Prover = (*Prover)(nil)

// NewProver returns a Prover over store.
func NewProver(store vlog.Store) *Prover { return &Prover{store: store} }

// InclusionProof implements vlog.Prover (RFC 9162 §2.1.3.1).
func (p *Prover) InclusionProof(ctx context.Context, index, size int64) ([][]byte, error) {
	if index < 0 || size <= index {
		return nil, fmt.Errorf("tlog: inclusion of leaf %d in a tree of size %d", index, size)
	}
	nodes, err := proof.Inclusion(uint64(index), uint64(size))
	if err != nil {
		return nil, fmt.Errorf("tlog: %w", err)
	}
	leaf, err := p.store.LogHashes(ctx, []vlog.HashRange{{Level: 0, Start: index, End: index + 1}})
	if err != nil {
		return nil, err
	}
	if len(leaf) != 1 || len(leaf[0]) != 1 {
		return nil, fmt.Errorf("%w: leaf %d", errShortLog, index)
	}
	return p.checkedInclusion(ctx, index, size, leaf[0][0], nodes, nil, func() ([][]byte, error) { return p.rehash(ctx, nodes) })
}

// ConsistencyProof implements vlog.Prover (RFC 9162 §2.1.4.1).
func (p *Prover) ConsistencyProof(ctx context.Context, from, to int64) ([][]byte, error) {
	if from < 1 || to < from {
		return nil, fmt.Errorf("tlog: consistency from size %d to size %d", from, to)
	}
	nodes, err := proof.Consistency(uint64(from), uint64(to))
	if err != nil {
		return nil, fmt.Errorf("tlog: %w", err)
	}
	return p.checkedConsistency(ctx, from, to, nodes, nil, func() ([][]byte, error) { return p.rehash(ctx, nodes) })
}

// rehash reads the hashes of a proof's nodes and builds the proof.
func (p *Prover) rehash(ctx context.Context, nodes proof.Nodes) ([][]byte, error) {
	hashes, err := p.NodeHashes(ctx, nodes.IDs)
	if err != nil {
		return nil, err
	}
	return build(nodes, hashes)
}

// build makes the proof of nodes from the hashes of their IDs: never nil,
// so that an empty proof encodes as [].
func build(nodes proof.Nodes, hashes [][]byte) ([][]byte, error) {
	out, err := nodes.Rehash(hashes, hasher.HashChildren)
	if err != nil {
		return nil, fmt.Errorf("tlog: %w", err)
	}
	if out == nil {
		out = [][]byte{}
	}
	return out, nil
}

// RootHash returns the root hash of the tree of the first size leaves
// (RFC 9162 §2.1.1); size 0 is the hash of the empty string.
func (p *Prover) RootHash(ctx context.Context, size int64) ([32]byte, error) {
	if size == 0 {
		return [32]byte(hasher.EmptyRoot()), nil
	}
	hashes, err := p.NodeHashes(ctx, compact.RangeNodes(0, uint64(size), nil))
	if err != nil {
		return [32]byte{}, err
	}
	return rootOfRange(size, hashes)
}

// NodeHashes returns the hashes of perfect subtrees of the tree (whose
// leaves must all be in the log), in one read of the store when their
// stored levels are complete: a node of level L is folded from the hashes
// of the stored level at or below it, TileHeight·⌊L/TileHeight⌋.
func (p *Prover) NodeHashes(ctx context.Context, ids []compact.NodeID) ([][]byte, error) {
	ranges := make([]vlog.HashRange, len(ids))
	for i, id := range ids {
		ranges[i] = storedRange(id)
	}
	runs, err := p.hashes(ctx, ranges)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(ids))
	for i, run := range runs {
		root := fold(run)
		out[i] = root[:]
	}
	return out, nil
}

// storedRange is the range of stored hashes node id is folded from: those
// of the stored level at or below it.
func storedRange(id compact.NodeID) vlog.HashRange {
	base := int(id.Level) / TileHeight * TileHeight
	span := int64(1) << (int(id.Level) - base)
	return vlog.HashRange{Level: base, Start: int64(id.Index) * span, End: int64(id.Index+1) * span}
}

// errShortLog: the store has fewer leaves than a range needs.
var errShortLog = errors.New("tlog: the log has fewer leaves than asked for")

// hashes returns every hash of ranges, reading the store once and, for
// the hashes a stored level lacks, folding them from the level below
// (recursively, one read per level).
func (p *Prover) hashes(ctx context.Context, ranges []vlog.HashRange) ([][][32]byte, error) {
	runs, err := p.store.LogHashes(ctx, ranges)
	if err != nil {
		return nil, err
	}
	if len(runs) != len(ranges) {
		return nil, fmt.Errorf("tlog: the store answered %d ranges for %d", len(runs), len(ranges))
	}
	for i, r := range ranges {
		p.fix(r.Level, r.Start, runs[i])
	}
	var missing []vlog.HashRange
	var owners []int
	for i, r := range ranges {
		got := int64(len(runs[i]))
		if got >= r.End-r.Start {
			continue
		}
		if r.Level == 0 {
			return nil, fmt.Errorf("%w: leaves %d to %d", errShortLog, r.Start, r.End-1)
		}
		// The hashes from Start+got on, from tileWidth times as many below.
		missing = append(missing, vlog.HashRange{Level: r.Level - TileHeight, Start: (r.Start + got) * tileWidth, End: r.End * tileWidth})
		owners = append(owners, i)
	}
	if len(missing) == 0 {
		return runs, nil
	}
	below, err := p.hashes(ctx, missing)
	if err != nil {
		return nil, err
	}
	for k, run := range below {
		i := owners[k]
		for j := 0; j < len(run); j += tileWidth {
			runs[i] = append(runs[i], fold(run[j:j+tileWidth]))
		}
	}
	return runs, nil
}

// fold returns the root of the perfect subtree over hashes (a power of two
// of them, at one level).
func fold(hashes [][32]byte) [32]byte {
	if len(hashes) == 1 {
		return hashes[0]
	}
	level := append([][32]byte(nil), hashes...)
	for len(level) > 1 {
		for i := 0; i < len(level)/2; i++ {
			level[i] = [32]byte(hasher.HashChildren(level[2*i][:], level[2*i+1][:]))
		}
		level = level[:len(level)/2]
	}
	return level[0]
}

// tileBatch is how many stored hashes BuildTiles computes per store call.
const tileBatch = 256

// BuildTiles stores the hashes of the tree's stored levels (4, 8, ...)
// that the leaves now complete and the store lacks, level by level from
// the bottom, tileBatch at a time. It only speeds proofs up; several
// servers running it at once store the same hashes.
func (p *Prover) BuildTiles(ctx context.Context) error {
	below, err := p.store.LogSize(ctx)
	if err != nil {
		return err
	}
	var tiled []int64 // the hashes stored, by stored level from TileHeight
	for level := TileHeight; below >= tileWidth; level += TileHeight {
		have, err := p.store.LogHashCount(ctx, level)
		if err != nil {
			return err
		}
		complete := below / tileWidth
		for have < complete {
			n := min(complete-have, tileBatch)
			r := vlog.HashRange{Level: level - TileHeight, Start: have * tileWidth, End: (have + n) * tileWidth}
			runs, err := p.hashes(ctx, []vlog.HashRange{r})
			if err != nil {
				return err
			}
			tiles := make([][32]byte, n)
			for j := range tiles {
				tiles[j] = fold(runs[0][j*tileWidth : (j+1)*tileWidth])
			}
			if err := p.store.SaveLogHashes(ctx, level, have, tiles); err != nil {
				return err
			}
			have += n
		}
		tiled = append(tiled, have)
		below = complete
	}
	p.check.tiled.Store(&tiled)
	return nil
}

// rangeOf is the range of stored hashes node id is folded from, as
// storedRange, but from a lower level where the stored level lacks some
// of them as far as the last BuildTiles saw: what one read should fetch.
func (p *Prover) rangeOf(id compact.NodeID) vlog.HashRange {
	r := storedRange(id)
	tiled := p.check.tiled.Load()
	if tiled == nil {
		return r
	}
	for r.Level > 0 {
		k := r.Level/TileHeight - 1
		if k < len(*tiled) && r.End <= (*tiled)[k] {
			break
		}
		r = vlog.HashRange{Level: r.Level - TileHeight, Start: r.Start * tileWidth, End: r.End * tileWidth}
	}
	return r
}
