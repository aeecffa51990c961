package tlog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

var t0 = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

// event returns the i-th event of the test logs: deterministic, so two
// stores written alike hold the same events.
func event(i int, project string) flagadmin.Event {
	e := flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada@example.com", CreatedAt: t0.Add(time.Duration(i) * time.Minute),
		FeatureName: ptr(fmt.Sprintf("f-%d", i)), Data: json.RawMessage(fmt.Sprintf(`{"name":"f-%d","n":%d}`, i, i))}
	if project != "" {
		e.Project = &project
	}
	return e
}

func ptr[T any](v T) *T { return &v }

// write writes n events in batches of at most 500, numbered from first.
func write(t testing.TB, s *memstore.Store, first, n int, project string) {
	t.Helper()
	for done := 0; done < n; {
		b := &flagadmin.Batch{}
		for ; done < n && len(b.Events) < 500; done++ {
			b.Events = append(b.Events, event(first+done, project))
		}
		if err := s.Write(context.Background(), b); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
}

// leafHashes computes the leaf hashes of the store's events from the
// events themselves, each with its salt (which the store keeps for the
// log: its leaf's, in id order like the events).
func leafHashes(t testing.TB, s *memstore.Store) [][]byte {
	t.Helper()
	ctx := context.Background()
	size, err := s.LogSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leaves, err := s.LogLeaves(ctx, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	err = s.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error {
		l := leaves[len(out)]
		if l.EventID != e.ID {
			return fmt.Errorf("leaf %d is of event %d, want event %d", l.Index, l.EventID, e.ID)
		}
		e.Salt = l.Salt
		h, err := leaf.LeafHash(e)
		out = append(out, h[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rootOf is the root of the tree of leaves, by the Merkle library's
// compact ranges.
func rootOf(t testing.TB, leaves [][]byte) []byte {
	t.Helper()
	if len(leaves) == 0 {
		return rfc6962.DefaultHasher.EmptyRoot()
	}
	r := (&compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}).NewEmptyRange(0)
	for _, h := range leaves {
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

// rootsOf returns the Merkle tree roots of leaves[:size] for every size of
// sizes (each at most len(leaves)), in one pass over the leaves.
func rootsOf(t testing.TB, leaves [][]byte, sizes []int64) map[int64][]byte {
	t.Helper()
	roots := map[int64][]byte{}
	for _, size := range sizes {
		roots[size] = nil
	}
	r := (&compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}).NewEmptyRange(0)
	for size := int64(0); size <= int64(len(leaves)); size++ {
		if _, ok := roots[size]; ok {
			if size == 0 {
				roots[size] = rfc6962.DefaultHasher.EmptyRoot()
			} else {
				root, err := r.GetRootHash(nil)
				if err != nil {
					t.Fatal(err)
				}
				roots[size] = root
			}
		}
		if size < int64(len(leaves)) {
			if err := r.Append(leaves[size], nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for size, root := range roots {
		if root == nil {
			t.Fatalf("rootsOf: size %d is past the %d leaves", size, len(leaves))
		}
	}
	return roots
}

// TestProverAgreesWithTheLibrary checks roots and proofs at many sizes,
// before and after the subtree hashes are stored (and with them stored
// for part of the tree only), with the Merkle library's verifiers.
func TestProverAgreesWithTheLibrary(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	const n = 70000 // past 65,536: four stored levels
	write(t, s, 0, n, "default")
	leaves := leafHashes(t, s)
	p := tlog.NewProver(s)
	sizes := []int64{1, 2, 3, 7, 8, 255, 256, 257, 511, 512, 1000, 4096, 65535, 65536, 65537, n}
	var rootSizes []int64
	for _, size := range sizes {
		rootSizes = append(rootSizes, size, size/2, size-1)
	}
	roots := rootsOf(t, leaves, rootSizes)
	check := func(t *testing.T) {
		for _, size := range sizes {
			want := roots[size]
			got, err := p.RootHash(ctx, size)
			if err != nil || string(got[:]) != string(want) {
				t.Fatalf("RootHash(%d): got %x (%v), want %x", size, got, err, want)
			}
			for _, index := range []int64{0, size / 2, size - 1, size / 3} {
				path, err := p.InclusionProof(ctx, index, size)
				if err != nil {
					t.Fatalf("InclusionProof(%d, %d): %v", index, size, err)
				}
				if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(index), uint64(size), leaves[index], path, want); err != nil {
					t.Fatalf("InclusionProof(%d, %d) does not verify: %v", index, size, err)
				}
			}
			for _, from := range []int64{1, size / 2, size - 1, size} {
				if from < 1 {
					continue
				}
				path, err := p.ConsistencyProof(ctx, from, size)
				if err != nil {
					t.Fatalf("ConsistencyProof(%d, %d): %v", from, size, err)
				}
				if err := proof.VerifyConsistency(rfc6962.DefaultHasher, uint64(from), uint64(size), path, roots[from], want); err != nil {
					t.Fatalf("ConsistencyProof(%d, %d) does not verify: %v", from, size, err)
				}
			}
		}
	}
	t.Run("from the leaves alone", check)
	// Part of the tree: the first 100 tiles of level 8 only.
	tiles := make([][32]byte, 100)
	for i := range tiles {
		hashes := leaves[i*256 : (i+1)*256]
		tiles[i] = [32]byte(rootOf(t, hashes))
	}
	if err := s.SaveLogHashes(ctx, 8, 0, tiles); err != nil {
		t.Fatal(err)
	}
	t.Run("with part of level 8 stored", check)
	if err := p.BuildTiles(ctx); err != nil {
		t.Fatalf("BuildTiles: %v", err)
	}
	for level, want := range map[int]int64{4: n / 16, 8: n / 256, 12: n / 4096, 16: n / 65536, 20: 0} {
		if got, _ := s.LogHashCount(ctx, level); got != want {
			t.Errorf("stored hashes of level %d: got %d, want %d", level, got, want)
		}
	}
	t.Run("with the stored levels built", check)
	if _, err := p.RootHash(ctx, n+1); err == nil {
		t.Errorf("RootHash past the log's size: got no error")
	}
}

// TestBuildTilesKeepsUpWithTheLog checks that building again after the
// log grew stores the new hashes and no others, and that a second builder
// changes nothing.
func TestBuildTilesKeepsUpWithTheLog(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	p := tlog.NewProver(s)
	write(t, s, 0, 1000, "")
	if err := p.BuildTiles(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.LogHashCount(ctx, 8); got != 3 {
		t.Fatalf("level 8 after 1000 leaves: got %d hashes, want 3", got)
	}
	write(t, s, 1000, 600, "")
	for range 2 { // the second run finds nothing to do
		if err := tlog.NewProver(s).BuildTiles(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.LogHashCount(ctx, 8); got != 6 {
		t.Fatalf("level 8 after 1600 leaves: got %d hashes, want 6", got)
	}
	leaves := leafHashes(t, s)
	stored, err := s.LogHashes(ctx, []vlog.HashRange{{Level: 8, Start: 0, End: 6}})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range stored[0] {
		if want := rootOf(t, leaves[i*256:(i+1)*256]); string(h[:]) != string(want) {
			t.Errorf("level 8 hash %d: got %x, want %x", i, h, want)
		}
	}
}
