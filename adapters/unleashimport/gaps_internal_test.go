package unleashimport

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// step is one snapshot seen by the tracker, then one reading of writers.
type step struct {
	visible []int64  // ids above the position visible in the snapshot
	writers []string // the reading after it; nil means no reading
	// want after settle
	deliver    int
	position   int64
	holes      int64
	waitingFor int64
}

func TestGapTrackerCases(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"contiguous ids are delivered at once", []step{
			{visible: []int64{1, 2, 3}, deliver: 3, position: 3},
		}},
		{"a missing id waits for the writers of the reading after it was seen, then is a hole", []step{
			{visible: []int64{1, 3}, writers: []string{"3/7"}, deliver: 1, position: 1, waitingFor: 2},
			{visible: []int64{3}, writers: []string{"3/7", "4/9"}, position: 1, waitingFor: 2},
			{visible: []int64{3}, writers: []string{"4/9"}, position: 1, waitingFor: 2},
			{visible: []int64{3}, deliver: 1, position: 3, holes: 1},
		}},
		{"a missing id is never a hole in the snapshot where it was first seen, even with no writers", []step{
			{visible: []int64{1, 3}, writers: []string{}, deliver: 1, position: 1, waitingFor: 2},
			{visible: []int64{3}, deliver: 1, position: 3, holes: 1},
		}},
		{"an id that commits late is delivered before the ids above it", []step{
			{visible: []int64{1, 3, 4}, writers: []string{"3/7"}, deliver: 1, position: 1, waitingFor: 2},
			{visible: []int64{3, 4}, writers: []string{"3/7"}, position: 1, waitingFor: 2},
			{visible: []int64{2, 3, 4}, deliver: 3, position: 4},
		}},
		{"writers that start later are not waited for", []step{
			{visible: []int64{1, 3}, writers: []string{"3/7"}, deliver: 1, position: 1, waitingFor: 2},
			{visible: []int64{3}, writers: []string{"5/1", "6/2"}, position: 1, waitingFor: 2},
			{visible: []int64{3}, deliver: 1, position: 3, holes: 1},
		}},
		{"ranges seen at different snapshots keep their own writers", []step{
			{visible: []int64{1, 3}, writers: []string{"A"}, deliver: 1, position: 1, waitingFor: 2},
			{visible: []int64{3, 5}, writers: []string{"B"}, position: 1, waitingFor: 2},
			// 2's writers (A) are gone; 4's (B) are not.
			{visible: []int64{3, 5}, writers: []string{"B"}, deliver: 1, position: 3, holes: 1, waitingFor: 4},
			{visible: []int64{5}, writers: []string{}, position: 3, waitingFor: 4},
			{visible: []int64{5}, deliver: 1, position: 5, holes: 1},
		}},
		{"several ranges cleared together are holes together", []step{
			{visible: []int64{1, 4, 7}, writers: []string{"A"}, deliver: 1, position: 1, waitingFor: 2},
			{visible: []int64{4, 7}, writers: []string{}, position: 1, waitingFor: 2},
			{visible: []int64{4, 7}, deliver: 2, position: 7, holes: 4},
		}},
		{"a range in which an id commits late is split, the rest keeping its writers", []step{
			{visible: []int64{1, 10}, writers: []string{"A", "B"}, deliver: 1, position: 1, waitingFor: 2},
			{visible: []int64{5, 10}, writers: []string{"B"}, position: 1, waitingFor: 2},
			{visible: []int64{5, 10}, writers: []string{}, position: 1, waitingFor: 2},
			{visible: []int64{5, 10}, deliver: 2, position: 10, holes: 7},
		}},
		{"a million missing ids are one range", []step{
			{visible: []int64{1, 1_000_002}, writers: []string{}, deliver: 1, position: 1, waitingFor: 2},
			{visible: []int64{1_000_002}, deliver: 1, position: 1_000_002, holes: 1_000_000},
		}},
		{"ids below the position are ignored", []step{
			{visible: []int64{1, 2}, deliver: 2, position: 2},
			{visible: []int64{2, 3}, deliver: 1, position: 3},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tr gapTracker
			var position, holes int64
			for i, st := range c.steps {
				got := tr.settle(position, st.visible)
				want := settlement{deliver: st.deliver, position: st.position, holes: st.holes, waitingFor: st.waitingFor}
				if got != want {
					t.Fatalf("step %d (visible %v above %d): got %+v, want %+v", i, st.visible, position, got, want)
				}
				position, holes = got.position, holes+got.holes
				if st.writers != nil {
					tr.observe(st.writers)
				}
			}
			_ = holes
		})
	}
}

// TestGapTrackerModel runs the rule against a model of PostgreSQL: writers
// take the table lock, then draw ids in time order, then commit or roll
// back (a commit is visible to the snapshots taken after it, and the lock
// is released after that); a follower takes snapshots and readings of the
// lock holders at random moments between them. Whatever the
// interleaving, every id the tracker calls a hole belongs to a transaction
// that rolled back, and the ids delivered are exactly the committed ones,
// in order.
func TestGapTrackerModel(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed) })
	}
}

type modelTx struct {
	name           string
	ids            []int64
	locked, ended  bool
	committed      bool
	wantIDs, drawn int
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	var (
		next      int64 = 1
		txs       []*modelTx
		owner     = map[int64]*modelTx{}
		committed = map[int64]bool{}
		tr        gapTracker
		position  int64
		delivered []int64
		pending   []int64 // visible in the last snapshot, not yet delivered
		txCount   int
	)
	// poll takes a snapshot and settles it; then, maybe, a reading of writers.
	poll := func(read bool) {
		var visible []int64
		for id := range committed {
			if id > position {
				visible = append(visible, id)
			}
		}
		slices.Sort(visible)
		s := tr.settle(position, visible)
		for _, id := range visible[:s.deliver] {
			delivered = append(delivered, id)
		}
		for id := position + 1; id <= s.position; id++ {
			if committed[id] {
				continue
			}
			tx := owner[id]
			if tx != nil && !(tx.ended && !tx.committed) {
				t.Fatalf("seed %d: id %d called a hole, but its transaction %s is not rolled back (ended %v)", seed, id, tx.name, tx.ended)
			}
		}
		position = s.position
		pending = visible[s.deliver:]
		if read {
			var writers []string
			for _, tx := range txs {
				if tx.locked {
					writers = append(writers, tx.name)
				}
			}
			tr.observe(writers)
		}
	}
	for range 400 {
		switch r := rng.IntN(10); {
		case r < 2 && txCount < 60: // a transaction starts and takes the lock
			txCount++
			tx := &modelTx{name: fmt.Sprintf("%d/%d", rng.IntN(5), txCount), wantIDs: 1 + rng.IntN(3)}
			txs = append(txs, tx)
		case r < 5: // some open transaction advances: lock, draw, or end
			open := slices.DeleteFunc(slices.Clone(txs), func(tx *modelTx) bool { return tx.ended })
			if len(open) == 0 {
				continue
			}
			tx := open[rng.IntN(len(open))]
			switch {
			case !tx.locked:
				tx.locked = true // parse: the lock comes before the draw
			case tx.drawn < tx.wantIDs:
				tx.ids = append(tx.ids, next)
				owner[next] = tx
				next++
				tx.drawn++
			default:
				tx.ended = true
				if rng.IntN(3) > 0 {
					tx.committed = true
					for _, id := range tx.ids {
						committed[id] = true // visible to later snapshots...
					}
				}
				if rng.IntN(2) == 0 { // ...and the lock goes, now or a moment later
					tx.locked = false
				}
			}
		case r < 7: // a lock of an ended transaction is released
			for _, tx := range txs {
				if tx.ended && tx.locked {
					tx.locked = false
					break
				}
			}
		default:
			poll(rng.IntN(4) > 0)
		}
	}
	for _, tx := range txs { // everything ends
		if !tx.ended {
			tx.ended, tx.committed = true, rng.IntN(2) == 0
			for _, id := range tx.ids {
				committed[id] = committed[id] || tx.committed
			}
		}
		tx.locked = false
	}
	for range 4 {
		poll(true)
	}
	if len(pending) > 0 {
		t.Fatalf("seed %d: ids %v still not delivered once every transaction ended", seed, pending)
	}
	var want []int64
	for id := range committed {
		want = append(want, id)
	}
	slices.Sort(want)
	if !slices.Equal(delivered, want) {
		t.Fatalf("seed %d: delivered %v, want the committed ids %v", seed, delivered, want)
	}
}
