package tlog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	logleaf "github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// gappedLog returns a store whose n events have the ids 10, 20, ...,
// 10·n (as a log with rolled-back writes has gaps), signed.
func gappedLog(t *testing.T, n int, skey string) *memstore.Store {
	t.Helper()
	ctx := context.Background()
	s := memstore.New()
	err := s.Load(ctx, &flagadmin.Batch{}, func(emit func([]flagadmin.Event) error) error {
		var batch []flagadmin.Event
		for i := 1; i <= n; i++ {
			e := event(i, "default")
			e.ID = int64(10 * i)
			batch = append(batch, e)
		}
		return emit(batch)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := newSigner(t, s, skey).Sign(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// tampered is a Source whose events are edited as they are read: what a
// reader sees after the events were changed in the database by hand.
type tampered struct {
	tlog.Source
	// edit returns what the database holds in place of e: nothing, e
	// changed, or e and an inserted event.
	edit func(e flagadmin.Event) []flagadmin.Event
	// leaves, when set, edits the leaves as read.
	leaves func([]vlog.Leaf) []vlog.Leaf
}

func (s tampered) Events(ctx context.Context) iter.Seq2[flagadmin.Event, error] {
	return func(yield func(flagadmin.Event, error) bool) {
		for e, err := range s.Source.Events(ctx) {
			if err != nil {
				yield(e, err)
				return
			}
			for _, x := range s.edit(e) {
				if !yield(x, nil) {
					return
				}
			}
		}
	}
}

func (s tampered) Leaves(ctx context.Context, start int64, count int) ([]vlog.Leaf, int64, error) {
	leaves, size, err := s.Source.Leaves(ctx, start, count)
	if s.leaves != nil {
		leaves = s.leaves(leaves)
	}
	return leaves, size, err
}

func verify(t *testing.T, src tlog.Source, opts tlog.VerifyOptions) *tlog.Report {
	t.Helper()
	opts.PageSize = 64 // many pages
	r, err := tlog.Verify(context.Background(), src, opts)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return r
}

func TestVerifyFindsTampering(t *testing.T) {
	skey, v := keys(t)
	s := gappedLog(t, 500, skey)
	events := map[int64]flagadmin.Event{}
	for e := range tlog.StoreSource(s, s).Events(context.Background()) {
		events[e.ID] = e
	}
	src := tlog.StoreSource(s, s)

	t.Run("an untouched log verifies", func(t *testing.T) {
		var progress []tlog.VerifyProgress
		r := verify(t, src, tlog.VerifyOptions{Verifier: v, ProgressEvery: 100, Progress: func(p tlog.VerifyProgress) { progress = append(progress, p) }})
		if !r.OK() || r.Leaves != 500 || r.Events != 500 || r.CheckpointSize != 500 || r.Origin != testOrigin {
			t.Fatalf("report: got %+v, want OK with 500 leaves and events", r)
		}
		if len(progress) != 6 || progress[0].Leaves != 100 || progress[5].Leaves != 500 || progress[5].Size != 500 {
			t.Errorf("progress: got %+v, want every 100 leaves and at the end", progress)
		}
	})
	same := func(e flagadmin.Event) []flagadmin.Event { return []flagadmin.Event{e} }
	for _, c := range []struct {
		name  string
		edit  func(e flagadmin.Event) []flagadmin.Event
		want  string
		first tlog.ProblemKind
		// root: the recomputed root differs from the signed one (a
		// removed event counts with its stored leaf hash).
		root bool
	}{
		{"a field of one event changed", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == 1230 {
				e.CreatedBy = "mallory"
			}
			return same(e)
		}, "event 1230 (leaf 122) was changed: its content differs from what its leaf recorded when it was written", tlog.Changed, true},
		{"the data of one event changed", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == 50 {
				e.Data = json.RawMessage(`{"name":"f-5","n":6}`)
			}
			return same(e)
		}, "event 50 (leaf 4) was changed", tlog.Changed, true},
		{"one event deleted", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == 2000 {
				return nil
			}
			return same(e)
		}, "event 2000 (leaf 199) was removed: no recorded pruning pass removed it", tlog.Removed, false},
		{"one event inserted between two", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == 3000 {
				ins := e
				ins.ID, ins.CreatedBy = 3005, "mallory"
				return []flagadmin.Event{e, ins}
			}
			return same(e)
		}, "event 3005 was inserted: it has no leaf in the log", tlog.Inserted, false},
		{"one event inserted after the last", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == 5000 {
				ins := e
				ins.ID = 5010
				return []flagadmin.Event{e, ins}
			}
			return same(e)
		}, "event 5010 was inserted", tlog.Inserted, false},
		{"two ids swapped", func(e flagadmin.Event) []flagadmin.Event {
			switch e.ID {
			case 700:
				x := events[900]
				x.ID = 700
				return same(x)
			case 900:
				x := events[700]
				x.ID = 900
				return same(x)
			}
			return same(e)
		}, "event 700 (leaf 69) was reordered: it holds what was recorded as event 900", tlog.Reordered, true},
		{"an event moved to a new id", func(e flagadmin.Event) []flagadmin.Event {
			switch e.ID {
			case 400:
				return nil
			case 4000:
				x := events[400]
				x.ID = 4001
				return []flagadmin.Event{e, x}
			}
			return same(e)
		}, "event 400 (leaf 39) was reordered: what was recorded as it is now event 4001", tlog.Reordered, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := verify(t, tampered{Source: src, edit: c.edit}, tlog.VerifyOptions{Verifier: v})
			if r.OK() {
				t.Fatalf("report: OK, want a problem")
			}
			first := r.Problems[0]
			if first.Kind != c.first || !strings.HasPrefix(first.String(), c.want) {
				t.Errorf("first problem: got %s %q, want %s %q", first.Kind, first, c.first, c.want)
			}
			if last := r.Problems[len(r.Problems)-1]; (last.Kind == tlog.BadRoot) != c.root {
				t.Errorf("last problem: got %s, want the root's: %v", last, c.root)
			}
		})
	}

	t.Run("an event and its leaf rewritten alike", func(t *testing.T) {
		forge := func(e flagadmin.Event) flagadmin.Event { e.CreatedBy = "mallory"; return e }
		leaf, err := s.LogLeaves(context.Background(), 9, 10) // event 100's
		if err != nil || len(leaf) != 1 || leaf[0].EventID != 100 {
			t.Fatalf("the leaf of event 100: got %+v (%v)", leaf, err)
		}
		e := forge(events[100])
		e.Salt = leaf[0].Salt
		forged, err := logleaf.LeafHash(e)
		if err != nil {
			t.Fatal(err)
		}
		content, _ := logleaf.ContentCommitment(e)
		r := verify(t, tampered{Source: src,
			edit: func(e flagadmin.Event) []flagadmin.Event {
				if e.ID == 100 {
					e = forge(e)
				}
				return same(e)
			},
			leaves: func(ls []vlog.Leaf) []vlog.Leaf {
				for i := range ls {
					if ls[i].EventID == 100 {
						ls[i].Hash, ls[i].Content = forged, content
					}
				}
				return ls
			}}, tlog.VerifyOptions{Verifier: v})
		if len(r.Problems) != 1 || r.Problems[0].Kind != tlog.BadRoot || !strings.Contains(r.Problems[0].String(), "leaves were rewritten too") {
			t.Errorf("problems: got %+v, want the root's, saying the leaves were rewritten", r.Problems)
		}
	})
	t.Run("a leaf deleted", func(t *testing.T) {
		r := verify(t, tampered{Source: src, edit: same, leaves: func(ls []vlog.Leaf) []vlog.Leaf {
			out := ls[:0]
			for _, l := range ls {
				if l.Index != 300 {
					out = append(out, l)
				}
			}
			return out
		}}, tlog.VerifyOptions{Verifier: v})
		if r.OK() || r.Problems[0].Kind != tlog.Inserted || r.Problems[0].EventID != 3010 {
			t.Errorf("problems: got %+v, want event 3010 without its leaf first", r.Problems)
		}
	})
	t.Run("a checkpoint of another key", func(t *testing.T) {
		_, other := keys(t)
		if _, err := tlog.Verify(context.Background(), src, tlog.VerifyOptions{Verifier: other}); err == nil || !strings.Contains(err.Error(), "does not verify") {
			t.Errorf("Verify with another key: got %v, want an error saying the checkpoint does not verify", err)
		}
	})
}

func TestVerifyAgainstATrustedCheckpoint(t *testing.T) {
	ctx := context.Background()
	skey, v := keys(t)
	s := memstore.New()
	write(t, s, 0, 100, "")
	saved, _, err := newSigner(t, s, skey).Sign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write(t, s, 100, 50, "")
	if _, _, err := newSigner(t, s, skey).Sign(ctx); err != nil {
		t.Fatal(err)
	}
	if r := verify(t, tlog.StoreSource(s, s), tlog.VerifyOptions{Verifier: v, Trusted: saved.Note}); !r.OK() || r.TrustedSize != 100 {
		t.Fatalf("a log that only grew: got %+v, want OK", r.Problems)
	}

	// An older copy of the database: the first 60 events, then new ones.
	old := memstore.New()
	write(t, old, 0, 60, "")
	if _, _, err := newSigner(t, old, skey).Sign(ctx); err != nil {
		t.Fatal(err)
	}
	r := verify(t, tlog.StoreSource(old, old), tlog.VerifyOptions{Verifier: v, Trusted: saved.Note})
	if r.OK() || r.Problems[0].Kind != tlog.Inconsistent {
		t.Fatalf("the older copy: got %+v, want an inconsistency with the trusted checkpoint", r.Problems)
	}
	write(t, old, 1000, 70, "") // it has grown past the trusted size since
	if _, _, err := newSigner(t, old, skey).Sign(ctx); err != nil {
		t.Fatal(err)
	}
	r = verify(t, tlog.StoreSource(old, old), tlog.VerifyOptions{Verifier: v, Trusted: saved.Note})
	if r.OK() || r.Problems[0].Kind != tlog.Inconsistent || !strings.Contains(r.Problems[0].String(), "no longer hash to the root of the trusted checkpoint") {
		t.Fatalf("the older copy, grown: got %+v, want an inconsistency with the trusted checkpoint", r.Problems)
	}
	// Without the trusted checkpoint, the old copy is self-consistent.
	if r := verify(t, tlog.StoreSource(old, old), tlog.VerifyOptions{Verifier: v}); !r.OK() {
		t.Errorf("the older copy on its own: got %+v, want OK", r.Problems)
	}
}

func TestVerifyReportsPrunedRanges(t *testing.T) {
	ctx := context.Background()
	skey, v := keys(t)
	s := memstore.New()
	write(t, s, 0, 100, "default")
	write(t, s, 100, 20, "held")
	write(t, s, 120, 80, "default")
	if _, _, err := newSigner(t, s, skey).Sign(ctx); err != nil {
		t.Fatal(err)
	}
	// The rule, then the hold, as a server and log hold record them.
	svc := vlog.NewService(flagadmin.NewService(s, flagadmin.WithClock(func() time.Time { return t0.Add(200 * time.Minute) })), vlog.Config{Store: s})
	if _, err := svc.RecordRetention(ctx, flagadmin.System, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := svc.HoldProject(ctx, flagadmin.System, "held"); err != nil {
		t.Fatal(err)
	}
	// Events are a minute apart from t0: prune those of the first 150 minutes.
	p := tlog.NewPruner(s, tlog.PrunerOptions{Batch: 7, Pause: time.Microsecond, Clock: func() time.Time { return t0.Add(150*time.Minute + time.Hour) }})
	n, err := p.Pass(ctx)
	if err != nil || n != 130 || p.Pruned() != 130 {
		t.Fatalf("Pass: pruned %d (%d in all), %v; want 130", n, p.Pruned(), err)
	}
	r := verify(t, tlog.StoreSource(s, s), tlog.VerifyOptions{Verifier: v})
	if !r.OK() {
		t.Fatalf("after pruning: got %+v, want OK", r.Problems)
	}
	// The rule, the hold and each of the 19 batches (7 events, the last 4)
	// are events too.
	want := []tlog.PrunedRange{{FirstLeaf: 0, LastLeaf: 99, FirstID: 1, LastID: 100}, {FirstLeaf: 120, LastLeaf: 149, FirstID: 121, LastID: 150}}
	if fmt.Sprint(r.Pruned) != fmt.Sprint(want) || r.Events != 91 || r.Leaves != 221 {
		t.Errorf("report: got pruned %+v, %d events, %d leaves; want %+v, 91, 221", r.Pruned, r.Events, r.Leaves, want)
	}
	// A deleted event among pruned ones is still a removal.
	r = verify(t, tampered{Source: tlog.StoreSource(s, s), edit: func(e flagadmin.Event) []flagadmin.Event {
		if e.ID == 160 {
			return nil
		}
		return []flagadmin.Event{e}
	}}, tlog.VerifyOptions{Verifier: v})
	if r.OK() || r.Problems[0].Kind != tlog.Removed || r.Problems[0].EventID != 160 {
		t.Errorf("a deleted event after pruning: got %+v, want event 160 removed", r.Problems)
	}
}

// TestVerifyWhileTheLogGrows checks that an event whose leaf was written
// after the leaves were read (by a writer committing meanwhile) is not
// taken for an inserted one: the leaves are read again.
func TestVerifyWhileTheLogGrows(t *testing.T) {
	ctx := context.Background()
	skey, v := keys(t)
	s := memstore.New()
	write(t, s, 0, 300, "")
	if _, _, err := newSigner(t, s, skey).Sign(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, s, 300, 30, "")
	// The first read past leaf 299 finds none yet, the events do.
	hidden := true
	src := tampered{Source: tlog.StoreSource(s, s), edit: func(e flagadmin.Event) []flagadmin.Event { return []flagadmin.Event{e} },
		leaves: func(ls []vlog.Leaf) []vlog.Leaf {
			if hidden && len(ls) > 0 && ls[0].Index >= 300 {
				hidden = false
				return nil
			}
			return ls
		}}
	r := verify(t, src, tlog.VerifyOptions{Verifier: v})
	if !r.OK() || hidden {
		t.Fatalf("got %+v (leaves hidden: %v), want OK", r.Problems, hidden)
	}
	if r.Events != 330 || r.Leaves != 330 || r.Beyond != 30 {
		t.Errorf("got %d events, %d leaves, %d past the checkpoint; want 330, 330, 30", r.Events, r.Leaves, r.Beyond)
	}
}
