package bunstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestLogMigrationMakesTheLeavesOfStoredEvents drops the log's tables of
// a database that holds events, as a database made before the log was,
// and migrates it again: the migrations make one leaf per event, in id
// order, each of the event's leaf.LeafHash with its salt (which the
// event matches), and the log goes on from there.
func TestLogMigrationMakesTheLeavesOfStoredEvents(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		b := &flagadmin.Batch{}
		for i := range 30 {
			b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "ådå",
				CreatedAt: time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC), FeatureName: ptrTo(fmt.Sprintf("f%d", i)),
				Data: json.RawMessage(fmt.Sprintf(`{"b": %d, "a": 1e2}`, i)), Tags: []flagadmin.Tag{{Type: "simple", Value: "x"}}})
		}
		must(t, "Write", s.Write(ctx, b))
		db := bunstore.DB(s)
		for _, stmt := range []string{
			"DROP TABLE log_leaves", "DROP TABLE log_hashes", "DROP TABLE log_checkpoints",
			"DROP TABLE log_holds", "DROP TABLE log_prune", "DELETE FROM bun_migrations WHERE name IN ('20261127000001', '20261127000003', '" + bunstore.LeafV1Migration + "')",
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		must(t, "Migrate", s.Migrate(ctx))
		must(t, "Write after", s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{{Type: flagadmin.EventFeatureCreated, CreatedBy: "eve", CreatedAt: time.Now()}}}))
		var events []flagadmin.Event
		must(t, "ExportEvents", s.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error { events = append(events, e); return nil }))
		leaves, err := s.LogLeaves(ctx, 0, 100)
		must(t, "LogLeaves", err)
		size, err := s.LogSize(ctx)
		must(t, "LogSize", err)
		if len(leaves) != len(events) || size != int64(len(events)) {
			t.Fatalf("got %d leaves, size %d, for %d events", len(leaves), size, len(events))
		}
		for i, e := range events {
			e.Salt = leaves[i].Salt
			want, err := leaf.LeafHash(e)
			must(t, "LeafHash", err)
			if leaves[i].Index != int64(i) || leaves[i].EventID != e.ID || leaves[i].Hash != want {
				t.Errorf("leaf %d: got index %d, event %d, hash %x; want event %d, hash %x", i, leaves[i].Index, leaves[i].EventID, leaves[i].Hash, e.ID, want)
			}
			if ok, err := leaf.LeafMatches(leaves[i], e); !ok || err != nil {
				t.Errorf("leaf %d: its event does not match it (%v)", i, err)
			}
		}
	})
}

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
				svc := flagadmin.NewService(s, flagadmin.WithLog(flagadmin.LogConfig{Store: s, Prover: prover}))
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
						p, err := svc.LogInclusionProof(ctx, flagadmin.AdminToken("admin"), flagadmin.LogProofParams{ID: id, Size: size})
						must(t, "LogInclusionProof", err)
						if len(p.Hashes) == 0 {
							t.Errorf("inclusion proof of event %s in size %s: no hashes", id, size)
						}
						want(fmt.Sprintf("inclusion proof of event %s in size %s", id, size), map[string]int64{"300": 1, "320": 2}[size])
					}
				}
				stmts.n.Store(0)
				_, err = svc.LogConsistencyProof(ctx, flagadmin.AdminToken("admin"), flagadmin.LogConsistencyParams{From: "100", To: "300"})
				must(t, "LogConsistencyProof", err)
				if c.opts == nil { // step by step, its read of the log's size is not seen by Bun's hooks
					want("consistency proof", 1)
				}
			})
		}
	})
}
