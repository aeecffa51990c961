package vlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Accounting for removed events. Someone who can write the database can
// delete an event and mark its leaf pruned; the leaf's tombstone (its
// id, createdAt, project and type, which its hash commits to) and the
// retention events of the log (retention.go) are what tell such a
// deletion from retention's. RetentionReplay replays those events in log
// order and accepts a missing event only where a recorded pruning pass
// removed it while it was eligible, whatever the leaf's pruned flag says:
//
//   - a pass (an events-pruned event) that comes after the event in the
//     log lists its id in its ranges (the first such pass is the one
//     that removed it);
//   - a retention was in force when the pass was recorded: the newest
//     retention-changed event before it holds one (none, or null, keeps
//     events for ever: nothing is eligible);
//   - the pass records that retention, and its cut-off ("before") is not
//     later than the pass's own createdAt minus it;
//   - the event was created before the cut-off;
//   - the event's project was not held when the pass was recorded (a
//     log-hold-added event for it with no log-hold-released after);
//   - the event is not one of retention's own (IsRetentionEvent), which
//     are never pruned.
//
// A pass that lists an id with no leaf before it in the log (an id the
// log never held, or its own or a later one) accounts for an event that
// never was: that is a problem of the pass. A pass that lists an event
// still present is not: the pass is accounted for by what it did remove.
//
// The tombstone itself is checked by the verifier (LeafOf against the
// leaf's hash) before it is given to the replay: the replay trusts the
// fields it is given.

// RetentionVerdict is what a RetentionReplay found: a missing event
// accounted for by a pass (Pruned), a missing event that is not, or a
// retention event that does not account for what it records (Record).
type RetentionVerdict struct {
	// EventID is the event concerned, LeafIndex its leaf.
	EventID, LeafIndex int64
	// Pruned: a recorded pass removed the missing event while it was
	// eligible; Pass is that pass's event id.
	Pruned bool
	Pass   int64
	// Record: the verdict is on a retention event (EventID) that cannot
	// be read or lists events it cannot have removed, not on a missing
	// event.
	Record bool
	// Reason says why the event is not accounted for (empty when Pruned),
	// as a phrase: "no recorded pruning pass removed it".
	Reason string
}

// String says the verdict in a sentence.
func (v RetentionVerdict) String() string {
	switch {
	case v.Pruned:
		return fmt.Sprintf("event %d was pruned by retention (the pruning pass of event %d)", v.EventID, v.Pass)
	case v.Record:
		return fmt.Sprintf("event %d does not account for retention: %s", v.EventID, v.Reason)
	}
	return fmt.Sprintf("event %d is missing: %s", v.EventID, v.Reason)
}

// RetentionReplay decides, leaf by leaf in log order, whether each
// missing event was removed by retention as the log records it (above).
// It holds the retention state at the current point of the log and the
// missing events no pass has listed yet, so its memory grows with those,
// not with the log.
type RetentionReplay struct {
	report func(RetentionVerdict)

	// rule is the retention in force in seconds, nil for ever; ruleID
	// the retention-changed event that set it, 0 for none.
	rule   *int64
	ruleID int64
	// held maps each held project to the event that placed its hold.
	held map[string]int64

	// pending are the missing events no pass has listed yet, id
	// ascending; resolved ones are marked and compacted away.
	pending  []pendingLeaf
	resolved int
	// gaps are the runs of ids below lastID that hold no leaf.
	gaps   [][2]int64
	lastID int64
	seen   bool
	// projects interns the projects of pending events.
	projects map[string]*string
}

// pendingLeaf is a missing event waiting for the pass that lists it.
type pendingLeaf struct {
	id, index int64
	createdAt time.Time
	project   *string
	done      bool
}

// NewRetentionReplay returns a replay that calls report with each verdict:
// on a missing event once a pass lists it (or at Finish), on a retention
// event as it comes.
func NewRetentionReplay(report func(RetentionVerdict)) *RetentionReplay {
	return &RetentionReplay{report: report, held: map[string]int64{}, projects: map[string]*string{}}
}

// Next takes the next leaf of the log, index ascending, with its event, or
// nil when the event is missing. The event, when given, is the leaf's
// (the caller has checked it against the leaf), and retention events
// change the state the passes after it are judged by.
func (r *RetentionReplay) Next(l Leaf, e *flagadmin.Event) {
	r.track(l)
	if e == nil {
		r.missing(l)
		return
	}
	switch e.Type {
	case flagadmin.EventRetentionChanged:
		var d struct {
			Retention *int64 `json:"retention"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			r.record(l, "its data are not those of a retention-changed event: %v", err)
			return
		}
		r.rule, r.ruleID = d.Retention, e.ID
		if d.Retention != nil && *d.Retention <= 0 {
			r.rule = nil
		}
	case flagadmin.EventLogHoldAdded, flagadmin.EventLogHoldReleased:
		project := e.Project
		if project == nil {
			var d struct {
				Project *string `json:"project"`
			}
			if json.Unmarshal(e.Data, &d) == nil {
				project = d.Project
			}
		}
		if project == nil {
			r.record(l, "it names no project")
			return
		}
		if e.Type == flagadmin.EventLogHoldAdded {
			if _, ok := r.held[*project]; !ok {
				r.held[*project] = e.ID
			}
		} else {
			delete(r.held, *project)
		}
	case flagadmin.EventEventsPruned:
		r.pass(l, e)
	}
}

// Skip takes the next leaf of the log like Next, for a leaf the caller
// judged itself (a tombstone that does not hash to its leaf): its id
// counts as one the log holds, and nothing is reported on it.
func (r *RetentionReplay) Skip(l Leaf) {
	r.track(l)
}

// track notes the id of the next leaf.
func (r *RetentionReplay) track(l Leaf) {
	if !r.seen {
		r.gaps = append(r.gaps, [2]int64{math.MinInt64, l.EventID - 1})
		r.lastID, r.seen = l.EventID, true
	} else if l.EventID > r.lastID {
		if l.EventID > r.lastID+1 {
			r.gaps = append(r.gaps, [2]int64{r.lastID + 1, l.EventID - 1})
		}
		r.lastID = l.EventID
	}
}

// Finish reports every missing event no pass listed.
func (r *RetentionReplay) Finish() {
	for i := range r.pending {
		if p := &r.pending[i]; !p.done {
			p.done = true
			r.report(RetentionVerdict{EventID: p.id, LeafIndex: p.index, Reason: "no recorded pruning pass removed it"})
		}
	}
	r.pending, r.resolved = nil, 0
}

// missing takes a leaf whose event is missing.
func (r *RetentionReplay) missing(l Leaf) {
	if IsRetentionEvent(l.Type) {
		r.report(RetentionVerdict{EventID: l.EventID, LeafIndex: l.Index,
			Reason: fmt.Sprintf("it is a %s event, and retention's own events are never pruned", l.Type)})
		return
	}
	if n := len(r.pending); n > 0 && r.pending[n-1].id >= l.EventID {
		// Out of order: the verifier reports the leaves; no pass can
		// have listed it after the ones before it.
		r.report(RetentionVerdict{EventID: l.EventID, LeafIndex: l.Index, Reason: "no recorded pruning pass removed it"})
		return
	}
	var project *string
	if l.Project != nil {
		project = r.projects[*l.Project]
		if project == nil {
			project = new(string)
			*project = *l.Project
			r.projects[*project] = project
		}
	}
	r.pending = append(r.pending, pendingLeaf{id: l.EventID, index: l.Index, createdAt: l.CreatedAt, project: project})
}

// record reports a retention event that does not account for what it
// records.
func (r *RetentionReplay) record(l Leaf, format string, args ...any) {
	r.report(RetentionVerdict{EventID: l.EventID, LeafIndex: l.Index, Record: true, Reason: fmt.Sprintf(format, args...)})
}

// prunedData are the data of an events-pruned event (PrunedEvent).
type prunedData struct {
	Count     *int64     `json:"count"`
	Before    *string    `json:"before"`
	FirstID   *int64     `json:"firstId"`
	LastID    *int64     `json:"lastId"`
	Ranges    [][2]int64 `json:"ranges"`
	Retention *int64     `json:"retention"`
}

// pass takes an events-pruned event: it decides on the missing events it
// lists.
func (r *RetentionReplay) pass(l Leaf, e *flagadmin.Event) {
	d, before, err := readPass(e)
	if err != nil {
		r.record(l, "%v", err)
		return
	}
	judge := r.judge(e, before, d.Retention)
	reported := false // only the first problem with the ids it lists is recorded
	for _, rg := range d.Ranges {
		first, last, problem := r.heldRun(rg, e.ID)
		if problem != "" && !reported {
			r.record(l, "%s", problem)
			reported = true
		}
		r.decide(first, last, e.ID, judge)
	}
	r.compact()
}

// readPass returns the data of the events-pruned event e and its cut-off,
// or an error that says why they are not those of a pass.
func readPass(e *flagadmin.Event) (prunedData, time.Time, error) {
	var d prunedData
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return d, time.Time{}, fmt.Errorf("its data are not those of an events-pruned event: %v", err)
	}
	if d.Before == nil || len(d.Ranges) == 0 {
		return d, time.Time{}, errors.New("its data are not those of an events-pruned event: they need before and ranges")
	}
	before, err := time.Parse(time.RFC3339Nano, *d.Before)
	if err != nil {
		return d, time.Time{}, fmt.Errorf("its cut-off %s is not a time", flagadmin.QuoteInput(*d.Before))
	}
	return d, before, d.checkRanges()
}

// checkRanges returns an error when the ranges of a pass are not ascending
// runs of ids, or do not agree with its count, firstId and lastId.
func (d prunedData) checkRanges() error {
	var count int64
	for i, rg := range d.Ranges {
		if rg[0] > rg[1] || i > 0 && rg[0] <= d.Ranges[i-1][1] {
			return fmt.Errorf("its ranges are not ascending runs of ids: %v", d.Ranges)
		}
		count += rg[1] - rg[0] + 1
	}
	if d.Count != nil && *d.Count != count || d.FirstID != nil && *d.FirstID != d.Ranges[0][0] ||
		d.LastID != nil && *d.LastID != d.Ranges[len(d.Ranges)-1][1] {
		return errors.New("its count, firstId and lastId do not agree with its ranges")
	}
	return nil
}

// heldRun returns the ids first to last of the run rg, listed by the pass
// passID, that the log holds before the pass (none when first > last),
// and what is wrong with the run, "" when nothing: ids not before the
// pass in the log, or ids the log does not hold.
func (r *RetentionReplay) heldRun(rg [2]int64, passID int64) (first, last int64, problem string) {
	first, last = rg[0], rg[1]
	if last >= passID {
		problem = fmt.Sprintf("it lists %s, not before it in the log", idRun(max(first, passID), last))
	}
	last = min(last, passID-1)
	if first > last {
		return first, last, problem
	}
	if g, ok := r.gapIn(first, last); ok && problem == "" {
		problem = fmt.Sprintf("it lists %s, which the log does not hold", idRun(g[0], g[1]))
	}
	return first, last, problem
}

// decide reports the verdict of the pass passID, by judge, on each
// missing event with an id from first to last that no pass listed before.
func (r *RetentionReplay) decide(first, last, passID int64, judge func(*pendingLeaf) string) {
	i := sort.Search(len(r.pending), func(i int) bool { return r.pending[i].id >= first })
	for ; i < len(r.pending) && r.pending[i].id <= last; i++ {
		p := &r.pending[i]
		if p.done {
			continue
		}
		p.done = true
		r.resolved++
		v := RetentionVerdict{EventID: p.id, LeafIndex: p.index, Pass: passID}
		v.Reason = judge(p)
		v.Pruned = v.Reason == ""
		r.report(v)
	}
}

// judge returns the rule of the pass e, with its cut-off before and its
// recorded retention, for each event it lists: the reason it could not
// remove it, or "" when it could. It reads the state of the replay at the
// pass: call it there.
func (r *RetentionReplay) judge(e *flagadmin.Event, before time.Time, recorded *int64) func(*pendingLeaf) string {
	by := fmt.Sprintf("the pruning pass of event %d", e.ID)
	if r.rule == nil {
		return func(*pendingLeaf) string {
			return by + " removed it while no retention was in force (events were kept for ever)"
		}
	}
	rule := *r.rule
	if recorded == nil || *recorded != rule {
		rec := "no retention"
		if recorded != nil {
			rec = "a retention of " + formatRetention(*recorded)
		}
		return func(*pendingLeaf) string {
			return fmt.Sprintf("%s records %s, but the retention in force was %s (event %d)", by, rec, formatRetention(rule), r.ruleID)
		}
	}
	limit, ok := ageLimit(e.CreatedAt, rule)
	return func(p *pendingLeaf) string {
		var hold int64
		held := false
		if p.project != nil {
			hold, held = r.held[*p.project]
		}
		switch {
		case held:
			return fmt.Sprintf("%s removed it while project %s was held (event %d)", by, *p.project, hold)
		case !ok || !p.createdAt.Before(limit):
			return fmt.Sprintf("%s removed it at %s, but it was created %s, younger than the retention of %s in force",
				by, formatTime(e.CreatedAt), formatTime(p.createdAt), formatRetention(rule))
		case before.After(limit):
			return fmt.Sprintf("%s has the cut-off %s, later than its time %s minus the retention of %s in force",
				by, formatTime(before), formatTime(e.CreatedAt), formatRetention(rule))
		case !p.createdAt.Before(before):
			return fmt.Sprintf("it was created %s, not before the cut-off %s of %s that removed it",
				formatTime(p.createdAt), formatTime(before), by)
		}
		return ""
	}
}

// ageLimit is at minus seconds: events created before it are older than
// the retention; false when no time is that far back.
func ageLimit(at time.Time, seconds int64) (time.Time, bool) {
	const most = math.MaxInt64 / int64(time.Second)
	if seconds > most {
		return time.Time{}, false
	}
	return at.Add(-time.Duration(seconds) * time.Second), true
}

// gapIn returns the first run of ids first to last that holds no leaf.
func (r *RetentionReplay) gapIn(first, last int64) ([2]int64, bool) {
	i := sort.Search(len(r.gaps), func(i int) bool { return r.gaps[i][1] >= first })
	if i == len(r.gaps) || r.gaps[i][0] > last {
		return [2]int64{}, false
	}
	return [2]int64{max(first, r.gaps[i][0]), min(last, r.gaps[i][1])}, true
}

// compact drops the resolved pending events once they are most of them.
func (r *RetentionReplay) compact() {
	if r.resolved < 64 || 2*r.resolved < len(r.pending) {
		return
	}
	kept := r.pending[:0]
	for _, p := range r.pending {
		if !p.done {
			kept = append(kept, p)
		}
	}
	clear(r.pending[len(kept):])
	r.pending, r.resolved = kept, 0
}

// idRun names the ids first to last: "event 5", "events 5 to 9".
func idRun(first, last int64) string {
	if first == last {
		return fmt.Sprintf("event %d", first)
	}
	return fmt.Sprintf("events %d to %d", first, last)
}

// formatRetention writes a retention of seconds as a Go duration without
// its zero tail: 720h, 1h30m.
func formatRetention(seconds int64) string {
	if seconds > math.MaxInt64/int64(time.Second) {
		return fmt.Sprintf("%ds", seconds)
	}
	s := (time.Duration(seconds) * time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
