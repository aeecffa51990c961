package vlog_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// retentionLog builds a log as retention leaves it: events, retention's
// own events, and the leaves of the events pruned (or deleted) without
// them.
type retentionLog struct {
	t       *testing.T
	events  []flagadmin.Event
	missing map[int64]bool
	// judged are the missing events the caller judges itself (Skip).
	judged map[int64]bool
	// last is the last id drawn.
	last int64
}

func newRetentionLog(t *testing.T) *retentionLog {
	return &retentionLog{t: t, missing: map[int64]bool{}, judged: map[int64]bool{}}
}

// add appends e with the next id (ids 1, 2, ...) and returns it.
func (g *retentionLog) add(e flagadmin.Event) int64 {
	g.last++
	e.ID = g.last
	g.events = append(g.events, e)
	return e.ID
}

// skip draws n ids no event gets (as a write rolled back does).
func (g *retentionLog) skip(n int64) { g.last += n }

// event appends an event of project ("" for none) created at.
func (g *retentionLog) event(at time.Time, project string) int64 {
	e := flagadmin.Event{CreatedAt: at, Type: flagadmin.EventFeatureCreated, CreatedBy: "ada"}
	if project != "" {
		e.Project = &project
	}
	return g.add(e)
}

// rule appends the retention-changed event of retention (0: for ever).
func (g *retentionLog) rule(at time.Time, retention time.Duration) int64 {
	var secs *int64
	if retention > 0 {
		n := int64(retention / time.Second)
		secs = &n
	}
	data, _ := json.Marshal(map[string]*int64{"retention": secs, "previous": nil})
	return g.add(flagadmin.Event{CreatedAt: at, Type: flagadmin.EventRetentionChanged, CreatedBy: "system", Data: data})
}

// hold appends a hold placed (typ log-hold-added) or released on project.
func (g *retentionLog) hold(at time.Time, typ, project string) int64 {
	data, _ := json.Marshal(map[string]string{"project": project})
	return g.add(flagadmin.Event{CreatedAt: at, Type: typ, CreatedBy: "system", Project: &project, Data: data})
}

// prune removes the events ids and appends their events-pruned event,
// of cut-off before under retention, at at.
func (g *retentionLog) prune(at, before time.Time, retention time.Duration, ids ...int64) int64 {
	g.t.Helper()
	e, err := vlog.PrunedEvent(ids, before, retention, at)
	if err != nil {
		g.t.Fatal(err)
	}
	g.remove(ids...)
	return g.add(e)
}

// remove deletes the events ids, leaving their leaves.
func (g *retentionLog) remove(ids ...int64) {
	for _, id := range ids {
		g.missing[id] = true
	}
}

// replay replays the log and returns its verdicts by event id.
func (g *retentionLog) replay() map[int64]vlog.RetentionVerdict {
	g.t.Helper()
	got := map[int64]vlog.RetentionVerdict{}
	r := vlog.NewRetentionReplay(func(v vlog.RetentionVerdict) {
		if _, twice := got[v.EventID]; twice {
			g.t.Errorf("two verdicts on event %d: %v, then %v", v.EventID, got[v.EventID], v)
		}
		got[v.EventID] = v
	})
	for i, e := range g.events {
		l := vlog.Leaf{Index: int64(i), EventID: e.ID, CreatedAt: e.CreatedAt, Project: e.Project, Type: e.Type, Pruned: g.missing[e.ID]}
		switch {
		case g.judged[e.ID]:
			r.Skip(l)
		case g.missing[e.ID]:
			r.Next(l, nil)
		default:
			r.Next(l, &e)
		}
	}
	r.Finish()
	return got
}

func TestRetentionReplay(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const month = 720 * time.Hour
	day := func(n int) time.Time { return t0.Add(time.Duration(n) * 24 * time.Hour) }
	// pass prunes ids at at under retention, with the cut-off the pruner
	// uses.
	pass := func(g *retentionLog, at time.Time, retention time.Duration, ids ...int64) int64 {
		return g.prune(at, vlog.PruneBefore(at, retention), retention, ids...)
	}
	pruned := "pruned"
	for _, c := range []struct {
		name string
		// build returns, for each event with a verdict, the verdict: pruned,
		// or a part of the reason.
		build func(g *retentionLog) map[int64]string
	}{
		{"nothing pruned", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			g.event(day(1), "default")
			return nil
		}},
		{"honest pruning across a rule change, a hold and its release", func(g *retentionLog) map[int64]string {
			g.rule(day(0), 90*24*time.Hour)
			a := g.event(day(1), "payments")
			b := g.event(day(2), "default")
			c := g.event(day(3), "")
			g.hold(day(4), flagadmin.EventLogHoldAdded, "payments")
			pass(g, day(94), 90*24*time.Hour, b, c) // payments held: a stays
			g.rule(day(95), month)
			d := g.event(day(95), "default")
			g.hold(day(96), flagadmin.EventLogHoldReleased, "payments")
			pass(g, day(130), month, a, d)
			return map[int64]string{b: pruned, c: pruned, a: pruned, d: pruned}
		}},
		{"a deleted event no pass lists", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "default")
			g.event(day(2), "default")
			g.remove(a)
			return map[int64]string{a: "no recorded pruning pass removed it"}
		}},
		{"a deleted event on a log that never had retention", func(g *retentionLog) map[int64]string {
			a := g.event(day(1), "default")
			g.event(day(2), "default")
			g.remove(a)
			return map[int64]string{a: "no recorded pruning pass removed it"}
		}},
		{"a pass while no retention was in force", func(g *retentionLog) map[int64]string {
			a := g.event(day(1), "default")
			p := pass(g, day(40), month, a)
			return map[int64]string{a: fmt.Sprintf("the pruning pass of event %d removed it while no retention was in force", p)}
		}},
		{"a pass after the retention was set back to for ever", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "default")
			g.rule(day(2), 0)
			pass(g, day(40), month, a)
			return map[int64]string{a: "while no retention was in force"}
		}},
		{"a pass that records another retention than the one in force", func(g *retentionLog) map[int64]string {
			r := g.rule(day(0), 3*month)
			a := g.event(day(1), "default")
			p := pass(g, day(200), month, a) // old enough for either
			return map[int64]string{a: fmt.Sprintf("the pruning pass of event %d records a retention of 720h, but the retention in force was 2160h (event %d)", p, r)}
		}},
		{"the rule in force is the last before the pass, not the event's", func(g *retentionLog) map[int64]string {
			g.rule(day(0), 3*month)
			a := g.event(day(1), "default")
			g.rule(day(2), month)
			pass(g, day(40), month, a)
			return map[int64]string{a: pruned}
		}},
		{"a held project", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "payments")
			h := g.hold(day(2), flagadmin.EventLogHoldAdded, "payments")
			p := pass(g, day(40), month, a)
			return map[int64]string{a: fmt.Sprintf("the pruning pass of event %d removed it while project payments was held (event %d)", p, h)}
		}},
		{"a hold placed after the pass", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "payments")
			pass(g, day(40), month, a)
			g.hold(day(41), flagadmin.EventLogHoldAdded, "payments")
			return map[int64]string{a: pruned}
		}},
		{"a hold of another project", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "default")
			b := g.event(day(1), "")
			g.hold(day(2), flagadmin.EventLogHoldAdded, "payments")
			pass(g, day(40), month, a, b)
			return map[int64]string{a: pruned, b: pruned}
		}},
		{"an event younger than the retention in force", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(10), "default")
			// The pass's cut-off is forged to let it through: 10 days after a.
			p := g.prune(day(20), day(20).Add(-time.Hour), month, a)
			return map[int64]string{a: fmt.Sprintf("the pruning pass of event %d removed it at 2026-01-21T00:00:00.000Z, but it was created 2026-01-11T00:00:00.000Z, younger than the retention of 720h in force", p)}
		}},
		{"a pass whose cut-off is later than the retention allows", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "default")
			p := g.prune(day(40), day(39), month, a) // a is old enough; the pass is not right
			return map[int64]string{a: fmt.Sprintf("the pruning pass of event %d has the cut-off 2026-02-09T00:00:00.000Z, later than its time 2026-02-10T00:00:00.000Z minus the retention of 720h in force", p)}
		}},
		{"an event created after the pass's cut-off", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(5), "default")
			p := g.prune(day(40), day(2), month, a)
			return map[int64]string{a: fmt.Sprintf("it was created 2026-01-06T00:00:00.000Z, not before the cut-off 2026-01-03T00:00:00.000Z of the pruning pass of event %d", p)}
		}},
		{"a retention event removed", func(g *retentionLog) map[int64]string {
			r := g.rule(day(0), month)
			h := g.hold(day(1), flagadmin.EventLogHoldAdded, "payments")
			pass(g, day(40), month, r, h)
			return map[int64]string{r: "it is a retention-changed event, and retention's own events are never pruned",
				h: "it is a log-hold-added event"}
		}},
		{"a pass that lists an event after it", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			e, err := vlog.PrunedEvent([]int64{4}, day(10), month, day(40))
			if err != nil {
				t.Fatal(err)
			}
			p := g.add(e)
			a := g.event(day(1), "default")
			g.event(day(1), "default")
			g.remove(a)
			return map[int64]string{p: fmt.Sprintf("event %d does not account for retention: it lists event 4, not before it in the log", p),
				a: "no recorded pruning pass removed it"}
		}},
		{"a pass that lists ids the log never held", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "default") // 2
			g.skip(2)                       // 3 and 4
			b := g.event(day(1), "default") // 5
			p := pass(g, day(40), month, a, 3, 4, b)
			return map[int64]string{p: fmt.Sprintf("event %d does not account for retention: it lists events 3 to 4, which the log does not hold", p),
				a: pruned, b: pruned}
		}},
		{"a pass that lists an event the caller judged itself", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "default")
			b := g.event(day(1), "default")
			pass(g, day(40), month, a, b)
			g.judged[a] = true // a tombstone that does not hash: the caller reports it
			return map[int64]string{b: pruned}
		}},
		{"a pass that lists an event still present", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "default")
			b := g.event(day(1), "default")
			pass(g, day(40), month, a, b)
			g.missing[b] = false // a pass found nothing left of b to remove: no verdict
			return map[int64]string{a: pruned}
		}},
		{"an event listed by two passes: the first removed it", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "payments")
			h := g.hold(day(2), flagadmin.EventLogHoldAdded, "payments")
			p := pass(g, day(40), month, a)
			g.hold(day(41), flagadmin.EventLogHoldReleased, "payments")
			pass(g, day(42), month, a)
			return map[int64]string{a: fmt.Sprintf("the pruning pass of event %d removed it while project payments was held (event %d)", p, h)}
		}},
		{"a pass whose data cannot be read", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "default")
			g.remove(a)
			p := g.add(flagadmin.Event{CreatedAt: day(40), Type: flagadmin.EventEventsPruned, Data: json.RawMessage(`{"count":1,"ranges":"2"}`)})
			return map[int64]string{a: "no recorded pruning pass removed it", p: "its data are not those of an events-pruned event"}
		}},
		{"a pass whose count disagrees with its ranges", func(g *retentionLog) map[int64]string {
			g.rule(day(0), month)
			a := g.event(day(1), "default")
			g.remove(a)
			p := g.add(flagadmin.Event{CreatedAt: day(40), Type: flagadmin.EventEventsPruned,
				Data: json.RawMessage(`{"count":5,"before":"2026-01-10T00:00:00.000Z","firstId":2,"lastId":2,"ranges":[[2,2]],"retention":2592000}`)})
			return map[int64]string{a: "no recorded pruning pass removed it", p: "its count, firstId and lastId do not agree with its ranges"}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRetentionLog(t)
			want := c.build(g)
			got := g.replay()
			for id, w := range want {
				v, ok := got[id]
				switch {
				case !ok:
					t.Errorf("event %d: no verdict, want %q", id, w)
				case w == pruned && !v.Pruned:
					t.Errorf("event %d: got %q, want it pruned", id, v)
				case w != pruned && (v.Pruned || !strings.Contains(v.String()+": "+v.Reason, w)):
					t.Errorf("event %d: got %q, want %q", id, v, w)
				}
			}
			for id, v := range got {
				if _, ok := want[id]; !ok {
					t.Errorf("event %d: got %q, want no verdict", id, v)
				}
			}
		})
	}
}

// A verifier replays a log leaf by leaf: event 2 was pruned by the pass
// of event 4 under the 30-day rule of event 1; event 3 is missing too,
// but no pass lists it.
func ExampleRetentionReplay() {
	day := func(n int) time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n) }
	rule := flagadmin.Event{ID: 1, CreatedAt: day(0), Type: flagadmin.EventRetentionChanged, Data: json.RawMessage(`{"retention":2592000,"previous":null}`)}
	pass, _ := vlog.PrunedEvent([]int64{2}, vlog.PruneBefore(day(40), 720*time.Hour), 720*time.Hour, day(40))
	pass.ID = 4
	leaf := func(index int64, e flagadmin.Event) vlog.Leaf {
		return vlog.Leaf{Index: index, EventID: e.ID, CreatedAt: e.CreatedAt, Project: e.Project, Type: e.Type}
	}
	replay := vlog.NewRetentionReplay(func(v vlog.RetentionVerdict) { fmt.Println(v) })
	replay.Next(leaf(0, rule), &rule)
	replay.Next(leaf(1, flagadmin.Event{ID: 2, CreatedAt: day(1), Type: flagadmin.EventFeatureCreated}), nil)
	replay.Next(leaf(2, flagadmin.Event{ID: 3, CreatedAt: day(2), Type: flagadmin.EventFeatureCreated}), nil)
	replay.Next(leaf(3, pass), &pass)
	replay.Finish()
	// Output:
	// event 2 was pruned by retention (the pruning pass of event 4)
	// event 3 is missing: no recorded pruning pass removed it
}
