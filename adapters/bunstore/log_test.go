package bunstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

func ptrTo[T any](v T) *T { return &v }

// TestLogProofIsOneStatement counts the statements of the Service's
// proofs: with the ProofReads tuning, an inclusion proof and a
// consistency proof are one statement each in a tree whose subtree
// hashes are stored, and two past them (the second reads the leaves the
// missing hashes are folded from); without it, an inclusion proof takes
// more.
func TestLogProofIsOneStatement(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		for _, c := range []struct {
			name string
			opts []bunstore.Option
		}{
			{"one read", nil},
			{"step by step", []bunstore.Option{bunstore.WithoutTuning(bunstore.ProofReads)}},
		} {
			t.Run(c.name, func(t *testing.T) {
				s := open(t, url, c.opts...)
				b := &flagadmin.Batch{}
				for i := range 300 {
					b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ada", Project: ptrTo("default"),
						CreatedAt: time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC), FeatureName: ptrTo(fmt.Sprintf("f%d", i))})
				}
				must(t, "Write", s.Write(ctx, b))
				prover := tlog.NewProver(s)
				must(t, "BuildTiles", prover.BuildTiles(ctx))
				b.Events = b.Events[:20]
				for i := range b.Events {
					b.Events[i].ID = 0
				}
				must(t, "Write", s.Write(ctx, b))
				// The tree the proofs are checked against, as a server's
				// upkeep computes it before any proof is asked.
				_, _, err := prover.Advance(ctx)
				must(t, "Advance", err)
				svc := vlog.NewService(flagadmin.NewService(s), vlog.Config{Store: s, Prover: prover})
				stmts := &statementCounter{}
				bunstore.ReaderDB(s).AddQueryHook(stmts)
				if bunstore.DB(s) != bunstore.ReaderDB(s) {
					bunstore.DB(s).AddQueryHook(stmts)
				}
				want := func(what string, oneRead int64) {
					t.Helper()
					got := stmts.n.Load()
					if c.opts == nil && strings.HasPrefix(url, "postgres") {
						got++ // the proof's statement, prepared, runs on pgx, which Bun's hooks do not see
					}
					stmts.n.Store(0)
					switch {
					case c.opts == nil && got != oneRead:
						t.Errorf("%s: %d statements, want %d", what, got, oneRead)
					case c.opts != nil && got <= oneRead:
						t.Errorf("%s: %d statements step by step, want more than %d", what, got, oneRead)
					}
				}
				for _, id := range []string{"7", "290"} {
					for _, size := range []string{"300", "320"} {
						stmts.n.Store(0)
						p, err := svc.InclusionProof(ctx, flagadmin.AdminToken("admin"), vlog.ProofParams{ID: id, Size: size})
						must(t, "LogInclusionProof", err)
						if len(p.Hashes) == 0 {
							t.Errorf("inclusion proof of event %s in size %s: no hashes", id, size)
						}
						want(fmt.Sprintf("inclusion proof of event %s in size %s", id, size), map[string]int64{"300": 1, "320": 2}[size])
					}
				}
				stmts.n.Store(0)
				_, err = svc.ConsistencyProof(ctx, flagadmin.AdminToken("admin"), vlog.ConsistencyParams{From: "100", To: "300"})
				must(t, "LogConsistencyProof", err)
				if c.opts == nil { // step by step, its read of the log's size is not seen by Bun's hooks
					want("consistency proof", 1)
				}
			})
		}
	})
}
