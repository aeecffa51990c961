package bunstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// TestTextIndexKeptMerged: on SQLite, each transaction that indexes the
// texts of the events it writes leaves a segment in the full-text index,
// which a store that fills no backlog keeps (until MergeTextIndex merges
// them); a store that does merges them into one once its writes pause,
// and free text answers as the in-memory store does after.
func TestTextIndexKeptMerged(t *testing.T) {
	bunstore.SetTextMergeQuiet(t, 20*time.Millisecond)
	ctx := context.Background()
	w := worldgen.MustNew(worldgen.Config{Events: 1200, Projects: 4, Features: 20, Users: 8, Groups: 2, Seed: 5})
	mem := memstore.New()
	write(t, mem, w)
	writeInBatches := func(s flagadmin.Store) {
		t.Helper()
		if err := s.Write(ctx, w.Batch()); err != nil {
			t.Fatal(err)
		}
		for b := range w.Events(40) { // 30 transactions
			if err := s.Write(ctx, &flagadmin.Batch{Events: b}); err != nil {
				t.Fatal(err)
			}
		}
	}

	held := open(t, dbtest.SQLite(t), bunstore.WithTextBacklogHeld())
	writeInBatches(held)
	events, vocabulary, err := bunstore.TextIndexSegments(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	if events < 2 || vocabulary < 2 {
		t.Fatalf("the writes left %d segments of events_tokens, %d of the vocabulary: a test that cannot tell", events, vocabulary)
	}
	// MergeTextIndex merges them at once.
	if err := held.MergeTextIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if events, vocabulary, err = bunstore.TextIndexSegments(ctx, held); err != nil || events != 1 || vocabulary != 1 {
		t.Fatalf("merged at once: %d segments of events_tokens, %d of the vocabulary (%v); want 1 each", events, vocabulary, err)
	}
	featuresAnswerAsMemory(t, mem, held, w)

	store := open(t, dbtest.SQLite(t))
	writeInBatches(store)
	deadline := time.Now().Add(30 * time.Second)
	for {
		events, vocabulary, err = bunstore.TextIndexSegments(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		if events == 1 && vocabulary == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the last write: %d segments of events_tokens, %d of the vocabulary; want 1 each", events, vocabulary)
		}
		time.Sleep(10 * time.Millisecond)
	}
	featuresAnswerAsMemory(t, mem, store, w)
}

// featuresAnswerAsMemory fails unless s finds the events of a few of w's
// features' names as the in-memory store mem does.
func featuresAnswerAsMemory(t *testing.T, mem, s flagadmin.Store, w *worldgen.World) {
	t.Helper()
	for _, f := range w.Features()[:5] {
		answersAsMemory(t, mem, s, flagadmin.EventQuery{Text: f.Name, Limit: 20}, f.Name)
	}
}
