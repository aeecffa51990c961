package tlog_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// corruptHash is a log whose stored hash of level 4, index 3 reads wrong,
// step by step only (it hides the store's one read).
type corruptHash struct {
	vlog.Store
}

func (c corruptHash) LogHashes(ctx context.Context, ranges []vlog.HashRange) ([][][32]byte, error) {
	runs, err := c.Store.LogHashes(ctx, ranges)
	for i, r := range ranges {
		if r.Level == 4 && r.Start <= 3 && 3-r.Start < int64(len(runs[i])) {
			runs[i][3-r.Start][5] ^= 0xff
		}
	}
	return runs, err
}

func TestProverChecksProofsAgainstTheLeaves(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	write(t, s, 0, 300, "")
	if err := tlog.NewProver(s).BuildTiles(ctx); err != nil {
		t.Fatal(err)
	}
	leaves := leafHashes(t, s)
	p := tlog.NewProver(corruptHash{s})
	var repairs []tlog.Repair
	p.OnRepair(func(r tlog.Repair) { repairs = append(repairs, r) })
	for _, size := range []int64{300, 100, 64} {
		root := rootOf(t, leaves[:size])
		for i := range size {
			path, err := p.InclusionProof(ctx, i, size)
			if err != nil {
				t.Fatalf("inclusion of %d in %d: %v", i, size, err)
			}
			if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(i), uint64(size), leaves[i], path, root); err != nil {
				t.Fatalf("inclusion of %d in %d served does not verify: %v", i, size, err)
			}
		}
	}
	for _, c := range [][2]int64{{1, 300}, {50, 300}, {64, 100}, {63, 64}, {200, 300}} {
		path, err := p.ConsistencyProof(ctx, c[0], c[1])
		if err != nil {
			t.Fatalf("consistency %v: %v", c, err)
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, uint64(c[0]), uint64(c[1]), path, rootOf(t, leaves[:c[0]]), rootOf(t, leaves[:c[1]])); err != nil {
			t.Errorf("consistency %v served does not verify: %v", c, err)
		}
	}
	if len(repairs) != 1 || repairs[0].Level != 4 || repairs[0].Index != 3 || p.Repaired() != 1 {
		t.Errorf("repairs: %+v (%d), want the hash of level 4, index 3, once", repairs, p.Repaired())
	}
	// Leaves rewritten under a prover that read them before: the proof
	// of a changed leaf is not served.
	lie := &switchedLog{Store: s}
	p = tlog.NewProver(lie)
	if _, _, err := p.Advance(ctx); err != nil {
		t.Fatal(err)
	}
	lie.on.Store(true)
	if path, err := p.InclusionProof(ctx, 60, 300); !errors.Is(err, tlog.ErrLeavesChanged) {
		t.Errorf("the proof of a leaf changed under the prover: got %d hashes, %v; want ErrLeavesChanged", len(path), err)
	}
}

// switchedLog reads leaves 50 and up changed once on is set.
type switchedLog struct {
	*memstore.Store
	on atomic.Bool
}

func (l *switchedLog) LogHashes(ctx context.Context, ranges []vlog.HashRange) ([][][32]byte, error) {
	runs, err := l.Store.LogHashes(ctx, ranges)
	for i, r := range ranges {
		for j := range runs[i] {
			if l.on.Load() && r.Level == 0 && r.Start+int64(j) >= 50 {
				runs[i][j][0] ^= 1
			}
		}
	}
	return runs, err
}

// TestProverTreeBeyondItsAnchor: a root or a proof of a tree larger than
// the one the Prover last advanced to is computed from a copy of that
// tree, which stays as it was for the next ones (a witness asks for a
// proof from its size to each new checkpoint).
func TestProverTreeBeyondItsAnchor(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	saltedWrite(t, s, 0, 9)
	p := tlog.NewProver(s)
	if _, _, err := p.Advance(ctx); err != nil {
		t.Fatal(err)
	}
	for size := int64(10); size <= 20; size++ {
		saltedWrite(t, s, int(size)-1, 1)
		want, err := tlog.NewProver(s).RootHash(ctx, size)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.CheckedRoot(ctx, size); err != nil || got != want {
			t.Errorf("CheckedRoot(%d) = %x, %v; want %x", size, got[:4], err, want[:4])
		}
		if _, err := p.ConsistencyProof(ctx, 8, size); err != nil {
			t.Errorf("ConsistencyProof(8, %d): %v", size, err)
		}
	}
}

// saltedWrite writes the test events first to first+n-1, each with a salt
// of its own (the same in every store: two stores written alike hold the
// same leaves).
func saltedWrite(t testing.TB, s *memstore.Store, first, n int) {
	t.Helper()
	b := &flagadmin.Batch{}
	for i := first; i < first+n; i++ {
		e := event(i, "default")
		salt := sha256.Sum256(fmt.Appendf(nil, "salt %d", i))
		e.Salt = salt[:leaf.SaltSize]
		b.Events = append(b.Events, e)
	}
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatalf("write: %v", err)
	}
}
