// Package retentiontest runs the attacks on retention against a log store,
// as the store contract suite (internal/storetest) runs its cases: Run(t,
// newStore). The attacker can write the database but holds no signing
// key: they delete an event and mark its leaf pruned, rewrite its
// tombstone to look eligible, or append a pruning pass of their own (a
// row appended before the next checkpoint is signed like any other).
// "flagadmin log verify" must accept a missing event only where the log's
// own retention events account for it, name the event otherwise, and
// verify honest pruning across rule changes, holds and releases.
//
// A store takes part through Store: the log store itself, plus the
// attacker's three edits, which a SQL store makes with statements on its
// tables (adapters/bunstore's tests) and an in-memory one on its state.
package retentiontest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Store is a store the attacks run on: a log store (written through
// flagadmin.Store.Write, the Service's holds and retention rule, and the
// Pruner) whose rows an attacker edits by hand.
type Store interface {
	flagadmin.Store
	vlog.Store
	// DeleteEventRow deletes the row of event id, leaving its leaf.
	DeleteEventRow(t *testing.T, id int64)
	// MarkPruned sets the pruned flag of the leaf of event id and drops
	// its salt, as pruning does.
	MarkPruned(t *testing.T, id int64)
	// EditLeaf rewrites the fields the leaf of event id records with edit
	// (its hash is kept unless edit changes it).
	EditLeaf(t *testing.T, id int64, edit func(*vlog.Leaf))
}

// T0 is the start of the logs the cases write: their dates, and so the
// problems verify reports, are fixed.
var T0 = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

// retentionCase is one of the cases Run runs.
type retentionCase struct {
	name string
	// run builds the log and tampers with it; it returns the first
	// problem wanted ("" for none) and the number of events wanted
	// reported pruned.
	run func(t *testing.T, h *Harness) (want string, pruned int)
}

// cases returns the retention cases: the honest ones verify, each attack
// is named.
func cases() []retentionCase {
	const month = 720 * time.Hour
	day := func(n int) time.Time { return T0.Add(time.Duration(n) * 24 * time.Hour) }
	return []retentionCase{
		{"honest pruning across a rule change, a hold and its release verifies", func(t *testing.T, h *Harness) (string, int) {
			h.At(day(0)).Rule(3 * month)
			h.Write(day(1), 10, "default")
			h.Write(day(1), 5, "payments")
			h.Write(day(1), 5, "")
			h.At(day(2)).Hold("payments")
			h.Prune(day(100)) // 15: not payments'
			h.At(day(101)).Rule(month)
			h.Write(day(102), 5, "default")
			h.At(day(103)).Release("payments")
			h.Prune(day(140)) // payments' 5 and the 5 new ones
			return "", 25
		}},
		{"honest pruning under a rule recorded after the pruner started verifies", func(t *testing.T, h *Harness) (string, int) {
			h.At(day(0)).Rule(3 * month)
			p := h.Pruner(day(40))
			h.Write(day(1), 10, "default")
			h.At(day(2)).Rule(month) // another server, started with a shorter rule
			h.pass(p)                // prunes by the month recorded, not by the rule of its start
			return "", 10
		}},
		{"no rule recorded: the pruner removes nothing", func(t *testing.T, h *Harness) (string, int) {
			h.Write(day(1), 10, "default")
			h.Prune(day(1000))
			return "", 0
		}},
		{"an event deleted and marked pruned on a log that never had retention", func(t *testing.T, h *Harness) (string, int) {
			ids := h.Write(day(1), 20, "default")
			h.Sign()
			h.S.DeleteEventRow(t, ids[6])
			h.S.MarkPruned(t, ids[6])
			return fmt.Sprintf("event %d (leaf 6) was removed: no recorded pruning pass removed it", ids[6]), 0
		}},
		{"an event deleted and marked pruned among pruned ones", func(t *testing.T, h *Harness) (string, int) {
			h.At(day(0)).Rule(month)
			h.Write(day(1), 10, "default")
			young := h.Write(day(35), 10, "default")
			h.Prune(day(40))
			h.S.DeleteEventRow(t, young[3])
			h.S.MarkPruned(t, young[3])
			return fmt.Sprintf("event %d (leaf 14) was removed: no recorded pruning pass removed it", young[3]), 10
		}},
		{"a young event deleted, with a pass of the attacker's and its tombstone made to look old", func(t *testing.T, h *Harness) (string, int) {
			h.At(day(0)).Rule(month)
			ids := h.Write(day(35), 10, "default")
			h.Sign()
			h.S.DeleteEventRow(t, ids[2])
			h.S.MarkPruned(t, ids[2])
			h.S.EditLeaf(t, ids[2], func(l *vlog.Leaf) { l.CreatedAt = day(1) })
			h.ForgePass(day(40), vlog.PruneBefore(day(40), month), month, ids[2])
			return fmt.Sprintf("event %d (leaf 3) was removed: its leaf's recorded fields do not hash to its leaf hash", ids[2]), 0
		}},
		{"a held event deleted, with a pass of the attacker's", func(t *testing.T, h *Harness) (string, int) {
			h.At(day(0)).Rule(month)
			ids := h.Write(day(1), 10, "payments")
			h.At(day(2)).Hold("payments")
			h.Prune(day(40)) // nothing: all held
			h.S.DeleteEventRow(t, ids[4])
			h.S.MarkPruned(t, ids[4])
			pass := h.ForgePass(day(41), vlog.PruneBefore(day(41), month), month, ids[4])
			return fmt.Sprintf("event %d (leaf 5) was removed: the pruning pass of event %d removed it while project payments was held", ids[4], pass), 0
		}},
		{"a young event deleted, with a pass of the attacker's", func(t *testing.T, h *Harness) (string, int) {
			h.At(day(0)).Rule(month)
			ids := h.Write(day(35), 10, "default")
			h.S.DeleteEventRow(t, ids[0])
			h.S.MarkPruned(t, ids[0])
			pass := h.ForgePass(day(40), day(39), month, ids[0])
			return fmt.Sprintf("event %d (leaf 1) was removed: the pruning pass of event %d removed it at 2025-07-11T00:00:00.000Z, but it was created 2025-07-06T00:00:00.000Z, younger than the retention of 720h in force", ids[0], pass), 0
		}},
		{"an event deleted, with a pass of the attacker's while no retention was in force", func(t *testing.T, h *Harness) (string, int) {
			ids := h.Write(day(1), 10, "default")
			h.S.DeleteEventRow(t, ids[0])
			h.S.MarkPruned(t, ids[0])
			pass := h.ForgePass(day(40), vlog.PruneBefore(day(40), month), month, ids[0])
			return fmt.Sprintf("event %d (leaf 0) was removed: the pruning pass of event %d removed it while no retention was in force", ids[0], pass), 0
		}},
		{"an old event deleted, with a pass of the attacker's under another rule than the one in force", func(t *testing.T, h *Harness) (string, int) {
			h.At(day(0)).Rule(3 * month)
			ids := h.Write(day(1), 10, "default")
			h.S.DeleteEventRow(t, ids[0])
			h.S.MarkPruned(t, ids[0])
			pass := h.ForgePass(day(40), vlog.PruneBefore(day(40), month), month, ids[0])
			return fmt.Sprintf("event %d (leaf 1) was removed: the pruning pass of event %d records a retention of 720h, but the retention in force was 2160h", ids[0], pass), 0
		}},
		{"a pass of the attacker's that lists an event after it", func(t *testing.T, h *Harness) (string, int) {
			h.At(day(0)).Rule(month)
			ids := h.Write(day(1), 3, "default")
			pass := h.ForgePass(day(40), vlog.PruneBefore(day(40), month), month, ids[2]+5)
			return fmt.Sprintf("event %d (leaf 4) does not account for retention: it lists event %d, not before it in the log", pass, ids[2]+5), 0
		}},
		{"a pruned event's tombstone moved to another project", func(t *testing.T, h *Harness) (string, int) {
			h.At(day(0)).Rule(month)
			ids := h.Write(day(1), 3, "default")
			h.Prune(day(40))
			h.S.EditLeaf(t, ids[1], func(l *vlog.Leaf) { l.Project = ptr("payments") })
			return fmt.Sprintf("event %d (leaf 2) was removed: its leaf's recorded fields do not hash to its leaf hash", ids[1]), 2
		}},
	}
}

// Run runs every case on stores newStore makes, each new and empty: it
// signs the log the case left, verifies it, and checks the first problem
// and the events reported pruned.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			h := NewHarness(t, newStore(t))
			want, pruned := c.run(t, h)
			h.Sign()
			r := h.Verify()
			n := int64(0)
			for _, p := range r.Pruned {
				n += p.LastLeaf - p.FirstLeaf + 1
			}
			if want == "" {
				if !r.OK() || n != int64(pruned) {
					t.Fatalf("got problems %v and %d pruned (%+v), want OK with %d pruned", r.Problems, n, r.Pruned, pruned)
				}
				return
			}
			if r.OK() || !strings.HasPrefix(r.Problems[0].String(), want) {
				t.Fatalf("got problems %v, want first %q", r.Problems, want)
			}
			if n != int64(pruned) {
				t.Errorf("got %d pruned (%+v), want %d", n, r.Pruned, pruned)
			}
		})
	}
}

// Harness writes a log as a server does: events, the retention rule and
// holds through the Service, pruning passes through the Pruner.
type Harness struct {
	t *testing.T
	// S is the store of the log.
	S Store
	// Skey signs its checkpoints; Verifier checks them.
	Skey     string
	Verifier note.Verifier
	now      time.Time
	svc      *vlog.Service
}

// NewHarness returns a harness over s, with a new key pair.
func NewHarness(t *testing.T, s Store) *Harness {
	t.Helper()
	skey, vkey, err := tlog.GenerateKey("flagadmin.example.com/log")
	if err != nil {
		t.Fatal(err)
	}
	v, err := tlog.ParseVerifierKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{t: t, S: s, Skey: skey, Verifier: v, now: T0}
	h.svc = vlog.NewService(flagadmin.NewService(s, flagadmin.WithClock(func() time.Time { return h.now })), vlog.Config{Store: s})
	return h
}

// At sets the Service's clock.
func (h *Harness) At(now time.Time) *Harness {
	h.now = now
	return h
}

// Write writes n events of project ("" for none) created at, and returns
// their ids.
func (h *Harness) Write(at time.Time, n int, project string) []int64 {
	h.t.Helper()
	b := &flagadmin.Batch{}
	for i := range n {
		b.Events = append(b.Events, event(i, project, at))
	}
	before, err := h.S.LogSize(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.S.Write(context.Background(), b); err != nil {
		h.t.Fatal(err)
	}
	leaves, err := h.S.LogLeaves(context.Background(), before, before+int64(n))
	if err != nil || len(leaves) != n {
		h.t.Fatalf("the leaves of the events written: got %d (%v), want %d", len(leaves), err, n)
	}
	var ids []int64
	for _, l := range leaves {
		ids = append(ids, l.EventID)
	}
	return ids
}

// event is the i-th event of a write of events of project created at.
func event(i int, project string, at time.Time) flagadmin.Event {
	e := flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada@example.com", CreatedAt: at,
		FeatureName: ptr(fmt.Sprintf("f-%d", i)), Data: json.RawMessage(fmt.Sprintf(`{"name":"f-%d","n":%d}`, i, i))}
	if project != "" {
		e.Project = &project
	}
	return e
}

func ptr[T any](v T) *T { return &v }

// Rule records retention as the rule, as a server started with it does.
func (h *Harness) Rule(retention time.Duration) {
	h.t.Helper()
	if _, err := h.svc.RecordRetention(context.Background(), flagadmin.System, retention); err != nil {
		h.t.Fatal(err)
	}
}

// Hold places a legal hold on project.
func (h *Harness) Hold(project string) {
	h.t.Helper()
	if err := h.svc.HoldProject(context.Background(), flagadmin.System, project); err != nil {
		h.t.Fatal(err)
	}
}

// Release ends the legal hold on project.
func (h *Harness) Release(project string) {
	h.t.Helper()
	if err := h.svc.ReleaseProject(context.Background(), flagadmin.System, project); err != nil {
		h.t.Fatal(err)
	}
}

// Pruner returns a Pruner of the store whose clock says at, in batches
// of 4.
func (h *Harness) Pruner(at time.Time) *tlog.Pruner {
	return tlog.NewPruner(h.S, tlog.PrunerOptions{Batch: 4, Pause: time.Microsecond, Clock: func() time.Time { return at }})
}

// Prune makes a pruning pass at at, by the rule the log records.
func (h *Harness) Prune(at time.Time) {
	h.t.Helper()
	h.pass(h.Pruner(at))
}

func (h *Harness) pass(p *tlog.Pruner) {
	h.t.Helper()
	if _, err := p.Pass(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// ForgePass appends an events-pruned event of the attacker's, as a
// pruning pass would record it, listing ids; it returns its id.
func (h *Harness) ForgePass(at, before time.Time, retention time.Duration, ids ...int64) int64 {
	h.t.Helper()
	e, err := vlog.PrunedEvent(ids, before, retention, at)
	if err != nil {
		h.t.Fatal(err)
	}
	size, err := h.S.LogSize(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.S.Write(context.Background(), &flagadmin.Batch{Events: []flagadmin.Event{e}}); err != nil {
		h.t.Fatal(err)
	}
	l, err := h.S.LogLeaves(context.Background(), size, size+1)
	if err != nil || len(l) != 1 {
		h.t.Fatalf("the leaf of the event written: %v", err)
	}
	return l[0].EventID
}

// Sign signs a checkpoint of the log as it is.
func (h *Harness) Sign() {
	h.t.Helper()
	signer, err := tlog.NewSigner(h.S, tlog.NewProver(h.S), h.Skey, func() time.Time { return T0 })
	if err != nil {
		h.t.Fatal(err)
	}
	if _, _, err := signer.Sign(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// Verify verifies the log as "flagadmin log verify --db" does, in small
// pages.
func (h *Harness) Verify() *tlog.Report {
	h.t.Helper()
	r, err := tlog.Verify(context.Background(), tlog.StoreSource(h.S, h.S), tlog.VerifyOptions{Verifier: h.Verifier, PageSize: 64})
	if err != nil {
		h.t.Fatalf("Verify: %v", err)
	}
	return r
}
