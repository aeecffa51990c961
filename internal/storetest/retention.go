package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Retention is in the log: a change of the rule, a hold placed or
// released, and each pruning batch are events of flagadmin's own types,
// written with the change they record; they are never pruned.

// pruneRecord is the record function of a pruning before before: the
// events-pruned event of a one-day retention.
func pruneRecord(before time.Time) func([]int64) (flagadmin.Event, error) {
	return func(ids []int64) (flagadmin.Event, error) {
		return vlog.PrunedEvent(ids, before, 24*time.Hour, suiteNow)
	}
}

// cutAt is the cutoff function of a pruning before before, whatever the
// rule the log records.
func cutAt(before time.Time) func(*flagadmin.Event) (time.Time, error) {
	return func(*flagadmin.Event) (time.Time, error) { return before, nil }
}

// holdEvent is the event of a hold of project placed or released by the
// system, as the Service makes it.
func holdEvent(typ, project string) flagadmin.Event {
	by, byID := flagadmin.System.Actor()
	return flagadmin.Event{CreatedAt: suiteNow, Type: typ, CreatedBy: by, CreatedByUserID: byID, Project: &project,
		Data: []byte(fmt.Sprintf(`{"project":%q}`, project))}
}

// logService is the log's operations over the case's store.
func (w *world) logService(t *testing.T) *vlog.Service {
	t.Helper()
	ls := w.logStore(t)
	return vlog.NewService(flagadmin.NewService(w.store, flagadmin.WithClock(func() time.Time { return suiteNow })), vlog.Config{Store: ls})
}

// retentionEvents returns the stored events of type typ, id ascending, read
// by both searches' type filters (which must agree).
func (w *world) retentionEvents(t *testing.T, typ string) []flagadmin.Event {
	t.Helper()
	page, err := w.svc.SearchEvents(w.ctx, flagadmin.System, flagadmin.EventSearchParams{Type: "IS:" + typ, Limit: "1000"})
	wantNoError(t, "SearchEvents type "+typ, err)
	limit := 100
	old, err := w.svc.DeprecatedSearchEvents(w.ctx, flagadmin.System, deprecatedReq{Type: &typ, Limit: &limit})
	wantNoError(t, "DeprecatedSearchEvents type "+typ, err)
	wantEqual(t, "events of "+typ+": the two searches", len(old.Events), len(page.Events))
	out := slices.Clone(page.Events)
	slices.SortFunc(out, func(a, b flagadmin.Event) int { return int(a.ID - b.ID) })
	return out
}

// dataOf decodes an event's data.
func dataOf(t *testing.T, e flagadmin.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		t.Fatalf("event %d: data %s: %v", e.ID, e.Data, err)
	}
	return m
}

func retentionCases() []testCase {
	return []testCase{
		{"log/retention: each change of the rule is one event, none when it is the same", func(t *testing.T, w *world) {
			svc := w.logService(t)
			rules := []struct {
				rule          time.Duration
				wrote         bool
				want, wantWas any
			}{
				{0, false, nil, nil}, // for ever, as when none was recorded
				{90 * 24 * time.Hour, true, float64(7776000), nil},
				{90 * 24 * time.Hour, false, nil, nil},
				{time.Hour, true, float64(3600), float64(7776000)},
				{0, true, nil, float64(3600)}, // back to for ever
				{0, false, nil, nil},
			}
			wrote := 0
			for i, r := range rules {
				got, err := svc.RecordRetention(w.ctx, flagadmin.System, r.rule)
				wantNoError(t, "RecordRetention", err)
				wantEqual(t, fmt.Sprintf("rule %d (%v) recorded", i, r.rule), got, r.wrote)
				events := w.retentionEvents(t, flagadmin.EventRetentionChanged)
				if r.wrote {
					wrote++
				}
				wantEqual(t, fmt.Sprintf("retention-changed events after rule %d", i), len(events), wrote)
				if !r.wrote {
					continue
				}
				e := events[len(events)-1]
				d := dataOf(t, e)
				wantEqual(t, "retention", fmt.Sprint(d["retention"]), fmt.Sprint(r.want))
				wantEqual(t, "previous", fmt.Sprint(d["previous"]), fmt.Sprint(r.wantWas))
				wantEqual(t, "createdBy", e.CreatedBy, "system")
				wantEqual(t, "project", e.Project == nil, true)
			}
		}},
		{"log/retention: servers starting at once with a new rule record it once", func(t *testing.T, w *world) {
			svc := w.logService(t)
			errs := together(4, func(int) error {
				_, err := svc.RecordRetention(w.ctx, flagadmin.System, 30*24*time.Hour)
				return err
			})
			for i, err := range errs {
				wantNoError(t, fmt.Sprintf("RecordRetention %d", i), err)
			}
			events := w.retentionEvents(t, flagadmin.EventRetentionChanged)
			wantEqual(t, "retention-changed events", len(events), 1)
			wantEqual(t, "retention", fmt.Sprint(dataOf(t, events[0])["retention"]), "2.592e+06")
		}},
		{"log/retention: a hold and its release are one event each, with the project and who", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			svc := w.logService(t)
			wantNoError(t, "HoldProject", svc.HoldProject(w.ctx, flagadmin.System, "payments"))
			wantNoError(t, "HoldProject again", svc.HoldProject(w.ctx, flagadmin.System, "payments"))
			added := w.retentionEvents(t, flagadmin.EventLogHoldAdded)
			wantEqual(t, "log-hold-added events", len(added), 1)
			wantEqual(t, "its project", *added[0].Project, "payments")
			wantEqual(t, "its data's project", fmt.Sprint(dataOf(t, added[0])["project"]), fmt.Sprint("payments"))
			wantEqual(t, "its createdBy", added[0].CreatedBy, "system")
			holds, err := ls.LogHolds(w.ctx)
			wantNoError(t, "LogHolds", err)
			wantEqual(t, "holds", len(holds), 1)

			wantNoError(t, "ReleaseProject", svc.ReleaseProject(w.ctx, flagadmin.System, "payments"))
			wantKind(t, "ReleaseProject again", svc.ReleaseProject(w.ctx, flagadmin.System, "payments"), flagadmin.ErrNotFound)
			released := w.retentionEvents(t, flagadmin.EventLogHoldReleased)
			wantEqual(t, "log-hold-released events", len(released), 1)
			wantEqual(t, "its project", *released[0].Project, "payments")
			wantEqual(t, "its createdBy", released[0].CreatedBy, "system")
			wantEqual(t, "after the hold's", released[0].ID > added[0].ID, true)
			wantEqual(t, "events of both", len(w.exportAll(t)), 2)
		}},
		{"log/retention: a pruning batch is one event with what it removed, none when it removes nothing", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			old := w.writeEvents(t, 5, str("default"), suiteNow.Add(-48*time.Hour))
			held := w.writeEvents(t, 2, str("held"), suiteNow.Add(-48*time.Hour))
			more := w.writeEvents(t, 3, nil, suiteNow.Add(-48*time.Hour))
			w.writeEvents(t, 2, str("default"), suiteNow)
			wantNoError(t, "HoldProject", ls.HoldProject(w.ctx, "held", suiteNow, holdEvent(flagadmin.EventLogHoldAdded, "held")))
			cut := suiteNow.Add(-24 * time.Hour)
			ids, err := ls.PruneEvents(w.ctx, 100, cutAt(cut), pruneRecord(cut))
			wantNoError(t, "PruneEvents", err)
			want := append(slices.Clone(old), more...)
			wantEqual(t, "pruned", fmt.Sprint(ids), fmt.Sprint(want))
			events := w.retentionEvents(t, flagadmin.EventEventsPruned)
			wantEqual(t, "events-pruned events", len(events), 1)
			d := dataOf(t, events[0])
			wantEqual(t, "count", fmt.Sprint(d["count"]), fmt.Sprint(float64(len(want))))
			wantEqual(t, "before", fmt.Sprint(d["before"]), fmt.Sprint(cut.UTC().Format(flagadmin.TimeLayout)))
			wantEqual(t, "firstId", fmt.Sprint(d["firstId"]), fmt.Sprint(float64(want[0])))
			wantEqual(t, "lastId", fmt.Sprint(d["lastId"]), fmt.Sprint(float64(want[len(want)-1])))
			wantEqual(t, "ranges", fmt.Sprint(d["ranges"]),
				fmt.Sprintf("[[%d %d] [%d %d]]", old[0], old[len(old)-1], more[0], more[len(more)-1]))
			wantEqual(t, "retention", fmt.Sprint(d["retention"]), fmt.Sprint(float64(86400)))
			wantEqual(t, "after the events it removed", events[0].ID > want[len(want)-1], true)
			for _, id := range held {
				if slices.Contains(ids, id) {
					t.Errorf("event %d of the held project: pruned", id)
				}
			}

			// Nothing left to prune, even much later: no event; and the
			// events of retention itself are never pruned.
			later := suiteNow.Add(365 * 24 * time.Hour)
			ids, err = ls.PruneEvents(w.ctx, 100, cutAt(suiteNow.Add(-24*time.Hour)), pruneRecord(suiteNow.Add(-24*time.Hour)))
			wantNoError(t, "PruneEvents again", err)
			wantEqual(t, "pruned again", len(ids), 0)
			wantEqual(t, "events-pruned events after nothing pruned", len(w.retentionEvents(t, flagadmin.EventEventsPruned)), 1)
			ids, err = ls.PruneEvents(w.ctx, 100, cutAt(later), pruneRecord(later))
			wantNoError(t, "PruneEvents a year later", err)
			for _, e := range w.exportAll(t) {
				if slices.Contains(ids, e.ID) {
					t.Errorf("event %d: pruned yet exported", e.ID)
				}
			}
			left := w.retentionEvents(t, flagadmin.EventEventsPruned)
			wantEqual(t, "events-pruned events a year later", len(left), 2)
			wantEqual(t, "the first kept", left[0].ID, events[0].ID)
			wantEqual(t, "the hold's event kept", len(w.retentionEvents(t, flagadmin.EventLogHoldAdded)), 1)
			wantEqual(t, "count a year later", fmt.Sprint(dataOf(t, left[1])["count"]), fmt.Sprint(float64(2)))
		}},
		{"log/retention: a pruning batch reads the rule the log records last", func(t *testing.T, w *world) {
			ls := w.logStore(t)
			svc := w.logService(t)
			old := w.writeEvents(t, 3, str("default"), suiteNow.Add(-48*time.Hour))
			var read []*flagadmin.Event
			cutoff := func(rule *flagadmin.Event) (time.Time, error) {
				read = append(read, rule)
				retention, err := vlog.RecordedRetention(rule)
				if err != nil || retention == 0 {
					return time.Time{}, err
				}
				return vlog.PruneBefore(suiteNow, retention), nil
			}
			ids, err := ls.PruneEvents(w.ctx, 100, cutoff, pruneRecord(suiteNow))
			wantNoError(t, "PruneEvents with no rule recorded", err)
			wantEqual(t, "pruned with no rule", len(ids), 0)
			wantEqual(t, "the rule read with none recorded", len(read) == 1 && read[0] == nil, true)

			for _, rule := range []time.Duration{30 * 24 * time.Hour, 24 * time.Hour} {
				_, err := svc.RecordRetention(w.ctx, flagadmin.System, rule)
				wantNoError(t, "RecordRetention", err)
			}
			refused := errors.New("refused")
			ids, err = ls.PruneEvents(w.ctx, 100, func(*flagadmin.Event) (time.Time, error) { return time.Time{}, refused }, pruneRecord(suiteNow))
			wantEqual(t, "the error of cutoff", errors.Is(err, refused), true)
			wantEqual(t, "pruned when cutoff fails", len(ids), 0)
			ids, err = ls.PruneEvents(w.ctx, 100, cutoff, pruneRecord(suiteNow.Add(-24*time.Hour)))
			wantNoError(t, "PruneEvents", err)
			wantEqual(t, "pruned by the day recorded last", fmt.Sprint(ids), fmt.Sprint(old))
			last := read[len(read)-1]
			wantEqual(t, "the rule read is an event", last != nil, true)
			wantEqual(t, "its type", last.Type, flagadmin.EventRetentionChanged)
			wantEqual(t, "its rule", fmt.Sprint(dataOf(t, *last)["retention"]), fmt.Sprint(float64(86400)))
			rules := w.retentionEvents(t, flagadmin.EventRetentionChanged)
			wantEqual(t, "its id, the newest rule's", last.ID, rules[len(rules)-1].ID)

			_, err = svc.RecordRetention(w.ctx, flagadmin.System, 0)
			wantNoError(t, "RecordRetention for ever", err)
			w.writeEvents(t, 2, str("default"), suiteNow.Add(-48*time.Hour))
			ids, err = ls.PruneEvents(w.ctx, 100, cutoff, pruneRecord(suiteNow))
			wantNoError(t, "PruneEvents kept for ever", err)
			wantEqual(t, "pruned with events kept for ever", len(ids), 0)
			wantEqual(t, "events-pruned events", len(w.retentionEvents(t, flagadmin.EventEventsPruned)), 1)
		}},
	}
}
