package tlog_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	sumdb "golang.org/x/mod/sumdb/tlog"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// storeTiles serves a store's stored levels as the tiles of
// golang.org/x/mod/sumdb/tlog: the tile of level L, number N and width W
// is the hashes of stored level L·TileHeight from N·2^TileHeight on.
type storeTiles struct {
	store vlog.Store
}

func (s storeTiles) Height() int { return tlog.TileHeight }

func (s storeTiles) ReadTiles(tiles []sumdb.Tile) ([][]byte, error) {
	ranges := make([]vlog.HashRange, len(tiles))
	for i, t := range tiles {
		start := t.N << tlog.TileHeight
		ranges[i] = vlog.HashRange{Level: t.L * tlog.TileHeight, Start: start, End: start + int64(t.W)}
	}
	runs, err := s.store.LogHashes(context.Background(), ranges)
	if err != nil {
		return nil, err
	}
	data := make([][]byte, len(tiles))
	for i, run := range runs {
		if len(run) != tiles[i].W {
			return nil, fmt.Errorf("tile %s: %d hashes stored", tiles[i].Path(), len(run))
		}
		for _, h := range run {
			data[i] = append(data[i], h[:]...)
		}
	}
	return data, nil
}

func (s storeTiles) SaveTiles([]sumdb.Tile, [][]byte) {}

// The stored levels are the tiles of golang.org/x/mod/sumdb/tlog of
// height TileHeight: that package, reading them and checking each tile
// against the root, proves what the Prover proves, byte for byte.
func TestStoredLevelsAreSumdbTiles(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	const n = 4200 // stored levels 4 and 8, partial tiles at each level
	write(t, s, 0, n, "default")
	p := tlog.NewProver(s)
	if err := p.BuildTiles(ctx); err != nil {
		t.Fatal(err)
	}
	root, err := p.RootHash(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	tiles := sumdb.TileHashReader(sumdb.Tree{N: n, Hash: sumdb.Hash(root)}, storeTiles{store: s})
	for _, size := range []int64{1, 2, 15, 16, 17, 255, 256, 257, 1000, 4096, 4199, n} {
		want, err := p.RootHash(ctx, size)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sumdb.TreeHash(size, tiles)
		if err != nil || got != sumdb.Hash(want) {
			t.Fatalf("root of %d leaves: sumdb %x (%v), Prover %x", size, got, err, want)
		}
		for _, index := range []int64{0, size / 3, size / 2, size - 1} {
			want, err := p.InclusionProof(ctx, index, size)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sumdb.ProveRecord(size, index, tiles)
			if err != nil || !sameHashes(got, want) {
				t.Fatalf("inclusion of %d in %d: sumdb %x (%v), Prover %x", index, size, got, err, want)
			}
		}
		for _, from := range []int64{1, size / 2, size} {
			if from < 1 {
				continue
			}
			want, err := p.ConsistencyProof(ctx, from, size)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sumdb.ProveTree(size, from, tiles)
			if err != nil || !sameHashes(got, want) {
				t.Fatalf("consistency from %d to %d: sumdb %x (%v), Prover %x", from, size, got, err, want)
			}
		}
	}
}

// sameHashes reports whether a proof of the sumdb package is want.
func sameHashes(got []sumdb.Hash, want [][]byte) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !bytes.Equal(got[i][:], want[i]) {
			return false
		}
	}
	return true
}
