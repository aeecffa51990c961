package eventcounts

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
)

// period is the number of matches of one day or month (num).
type period struct {
	Num int64
	N   int64
}

// counted is a period as periodsLess reads it: with the number of its
// counted rows (Rows, none when only hidden events fell in it).
type counted struct {
	period
	Rows int64
}

// Seek reads the counted rows of a plan that Seeks and returns where the
// page of its query starts, reading in db by query: the caller's read
// transaction, or, with a stamp (summary.Plan.Seek), a connection whose
// statements each see a snapshot of their own; the first reads stamp too.
//
// Without dates, whole months are skipped first by their month rows
// (monthSeek). With dates, the range's day rows are read less the hidden
// projects' day rows, in one statement. In a transaction on SQLite, a
// statement first asks whether any comma-joined project names a hidden
// one (withListedKeys).
func (p Plan) Seek(ctx context.Context, db bun.IDB, query sqlq.Query, stamp sqlq.Fragment) (summary.Start, error) {
	p, err := p.withListedKeys(ctx, db, query, stamp)
	if err != nil {
		return summary.Start{}, err
	}
	if p.from == nil && p.before == nil {
		return p.monthSeek(ctx, db, query, stamp)
	}
	days, extras, err := periodsLess(ctx, db, query, periodsSQL(DimDay, p.noProject, p.from, p.before), []sqlq.Fragment{stamp},
		perDay(p.hiddenPeriods(DimDay, p.from, p.before)))
	if err != nil {
		return summary.Start{}, err
	}
	var total int64
	for _, d := range days {
		total += d.N
	}
	start := summary.Start{Total: int(total), Stamp: extras[0]}
	if p.q.Offset >= start.Total {
		return start, nil
	}
	start.Before, start.HasBefore, start.Offset = seekDays(days, p.q.Offset)
	return start, nil
}

// withListedKeys returns p without the part of its hidden keys that
// finds the comma-joined projects naming a hidden project (hiddenKeys)
// when there are none, which one statement tells, on a database where p
// probes for them (probeListed: SQLite, where a statement costs no round
// trip, and where each of the seek's three statements holding that part
// builds the keys it finds into a temporary index, empty or not; the probe
// costs about 15 µs). A hidden caller's page at a large offset, one
// caller at a time, then took 0.52-0.64 of the time (BENCHMARKS.md). Only
// for a seek in a transaction (no stamp), whose statements all see the
// snapshot the probe saw.
func (p Plan) withListedKeys(ctx context.Context, db bun.IDB, query sqlq.Query, stamp sqlq.Fragment) (Plan, error) {
	if !p.probeListed || p.listed.Empty() || !stamp.Empty() {
		return p, nil
	}
	probe := p.listed.Wrap("SELECT EXISTS (SELECT 1 FROM event_counts WHERE ", ")")
	found, err := sqlq.One(ctx, db, query, probe, sqlq.Value[bool])
	if err != nil || found {
		return p, err
	}
	p.hiddenKeys = p.hiddenKeys[:1:1]
	return p, nil
}

// periodsSQL is the statement of the rows of dim (DimDay or DimMonth) of
// every event, less those without a project when noProject is set, whose
// num is from from (inclusive) to before (exclusive), nil for no bound,
// summed per num over the shards: its columns are num and n.
func periodsSQL(dim Dim, noProject bool, from, before *int64) sqlq.Fragment {
	all := one(dim, ScopeAll)
	all.nums = nil
	cond := all.conditions(from, before)[0]
	sign := "n"
	if noProject {
		none := all
		none.scope = ScopeNoProject
		cond = sqlq.Join(" OR ", cond.Wrap("(", ")"), none.conditions(from, before)[0].Wrap("(", ")"))
		sign = fmt.Sprintf("CASE WHEN scope = %d THEN -n ELSE n END", ScopeNoProject)
	}
	return cond.Wrap("SELECT num, SUM("+sign+") AS n FROM event_counts WHERE ", " GROUP BY num")
}

// periodsLess reads in one statement the periods of rows (a statement of
// num and n: periodsSQL), less the hidden events of each statement of
// hidden (num and n likewise), newest first, and the value of each of
// extras, scalar SQL expressions (0 for an empty one, and for all when
// there is no period). A period with hidden events but no row of rows is
// an error: the counts and the events disagree.
//
// One statement instead of one per part: each part keeps the plan of its
// own (a union of subqueries, not an OR), and the round trips, which cost
// about as much as the reads themselves, are saved.
func periodsLess(ctx context.Context, db bun.IDB, query sqlq.Query, rows sqlq.Fragment, extras, hidden []sqlq.Fragment) ([]period, []int64, error) {
	parts := []sqlq.Fragment{rows.Wrap("SELECT num, n, 1 AS c FROM (", ") AS k")}
	for i, h := range hidden {
		parts = append(parts, h.Wrap("SELECT num, -n, 0 FROM (", fmt.Sprintf(") AS h%d", i)))
	}
	cols := []sqlq.Fragment{sqlq.F("SELECT num, SUM(n) AS n, SUM(c) AS c")}
	for i, x := range extras {
		if x.Empty() {
			x = sqlq.F("0")
		}
		cols = append(cols, x.Wrap("", fmt.Sprintf(" AS extra%d", i)))
	}
	q := sqlq.Join(" FROM (", sqlq.Join(", ", cols...), sqlq.Join(" UNION ALL ", parts...))
	q = sqlq.Join(") AS t ", q, sqlq.F("GROUP BY num"))
	// The extras are the same in every row: each row's are read into x.
	x := make([]int64, len(extras))
	extraDest := make([]any, len(x))
	for i := range x {
		extraDest[i] = &x[i]
	}
	read, err := sqlq.All(ctx, db, query, q, func(rows *sql.Rows, c *counted) error {
		return rows.Scan(append([]any{&c.Num, &c.N, &c.Rows}, extraDest...)...)
	})
	if err != nil {
		return nil, nil, err
	}
	out := make([]period, len(read))
	for i, r := range read {
		if r.Rows == 0 {
			return nil, nil, fmt.Errorf("event_counts: %d hidden events in period %d, which has no row", -r.N, r.Num)
		}
		out[i] = r.period
	}
	slices.SortFunc(out, func(a, b period) int { return cmp.Compare(b.Num, a.Num) })
	return out, x, nil
}

// perDay are the statements of the rows of event_counts that each of
// conds selects, summed per num over the shards: num and n.
func perDay(conds []sqlq.Fragment) []sqlq.Fragment {
	out := make([]sqlq.Fragment, len(conds))
	for i, cond := range conds {
		out[i] = cond.Wrap("SELECT num, SUM(n) AS n FROM event_counts WHERE ", " GROUP BY num")
	}
	return out
}

// seekDays skips the newest of days (newest first) while they hold no more
// than offset matches: the page then starts in an older day, before the
// start of the last day skipped, at the offset that remains.
func seekDays(days []period, offset int) (before int64, hasBefore bool, rest int) {
	var newer int64
	for _, d := range days {
		if newer+d.N > int64(offset) {
			break
		}
		newer += d.N
		before, hasBefore = d.Num*msPerDay, true
	}
	return before, hasBefore, offset - int(newer)
}

// monthSeek is Seek without dates. The month rows (a few dozen per year,
// less the months of events without a project for callers who see only
// events with one), less the hidden projects' events per month (their
// month rows), skip whole months; then the day rows of the one month that
// holds the offset's event, less the hidden projects' events per day
// (their day rows), skip whole days. A month's row is the sum of its
// days' (every write adds to both): days that do not add up to their
// month are counts gone wrong, an error. The hidden projects' months and
// days are read only where the offset's event can be (locate). Two
// statements without hidden projects: the months (with the stamp), the
// days of one month. With them, four: the months with the total of the
// hidden events, the hidden months, the days, the hidden days.
func (p Plan) monthSeek(ctx context.Context, db bun.IDB, query sqlq.Query, stamp sqlq.Fragment) (summary.Start, error) {
	var hiddenSum sqlq.Fragment
	if len(p.hidden) > 0 {
		r := one(DimEvents, ScopeProject)
		r.projects, r.projectConds = p.hidden, p.hiddenKeys
		hiddenSum = sum([]rows{r})
	}
	months, extras, err := periodsLess(ctx, db, query, periodsSQL(DimMonth, p.noProject, nil, nil), []sqlq.Fragment{hiddenSum, stamp}, nil)
	if err != nil {
		return summary.Start{}, err
	}
	hiddenAll := extras[0]
	var all int64
	for _, m := range months {
		all += m.N
	}
	start := summary.Start{Total: int(all - hiddenAll), Stamp: extras[1]}
	if p.q.Offset >= start.Total {
		return start, nil
	}
	counted := slices.Clone(months) // every event, before locate takes the hidden ones off
	target, newer, err := p.locate(ctx, db, query, DimMonth, months, hiddenAll, int64(p.q.Offset), int64(start.Total))
	if err != nil {
		return summary.Start{}, err
	}
	// The days of the target month, every event, then less the hidden
	// projects' days where the offset's event can be.
	m := months[target].Num
	first, next := monthStart(m), monthStart(m+1)
	days, _, err := periodsLess(ctx, db, query, periodsSQL(DimDay, p.noProject, &first, &next), nil, nil)
	if err != nil {
		return summary.Start{}, err
	}
	var inDays int64
	for _, d := range days {
		inDays += d.N
	}
	if inDays != counted[target].N {
		return summary.Start{}, fmt.Errorf("event_counts: the days of month %d hold %d events, its row %d", m, inDays, counted[target].N)
	}
	rest := int64(p.q.Offset) - newer
	day, newerDays, err := p.locate(ctx, db, query, DimDay, days, counted[target].N-months[target].N, rest, months[target].N)
	if err != nil {
		return summary.Start{}, err
	}
	start.Before, start.HasBefore, start.Offset = next*msPerDay, true, int(rest-newerDays)
	if day > 0 { // before the newest day skipped
		start.Before = days[day-1].Num * msPerDay
	}
	return start, nil
}

// locate returns the index in periods (newest first, of dim: months, or
// the days of one month; every event counted, the hidden ones not yet
// taken off) of the period that holds the match at offset, and the
// matches in the periods newer than it; total is the matches of all of
// periods, hidden the hidden events among them. It reads the hidden
// projects' rows of dim where the offset's match can be, and takes them
// off those periods alone.
//
// Only where it can be: hidden bounds what any period hides, so the
// offset's match lies within hidden events of where it would be with
// nothing hidden. So either the periods from the newest to that bound, or
// from the oldest, whichever are fewer, locate it (hiddenWindow); each
// hidden project's period is one index lookup per shard, the dearest read
// of the page: for a caller who may not see 11 projects of 200, the
// hidden days of a whole month were 274 rows on 146 pages.
func (p Plan) locate(ctx context.Context, db bun.IDB, query sqlq.Query, dim Dim, periods []period, hidden, offset, total int64) (target int, newer int64, err error) {
	from, to, fromOldest := 0, len(periods), false
	if len(p.hidden) > 0 {
		from, to, fromOldest = hiddenWindow(periods, hidden, offset, total)
		if err := p.takeHidden(ctx, db, query, dim, periods[from:to]); err != nil {
			return 0, 0, err
		}
	}
	if fromOldest {
		var older int64 // in the periods from the oldest to i
		for i := len(periods) - 1; i >= from; i-- {
			if older += periods[i].N; total-older <= offset {
				return i, total - older, nil
			}
		}
	} else {
		for i := from; i < to; i++ {
			if newer+periods[i].N > offset {
				return i, newer, nil
			}
			newer += periods[i].N
		}
	}
	return 0, 0, fmt.Errorf("event_counts: offset %d not found in the periods of dim %d of %d matches", offset, dim, total)
}

// hiddenWindow returns the periods whose hidden events locate reads,
// periods[from:to]: newest first up to the first period by whose end more
// than offset+hiddenAll events lie, or oldest first likewise for the
// events from the offset's on (at least the number below lie at or before
// it, oldest first), whichever are fewer.
func hiddenWindow(periods []period, hiddenAll, offset, total int64) (from, to int, fromOldest bool) {
	atOrOlder := total - offset // the offset's event and the older ones
	newest, oldest := len(periods), 0
	var cum int64
	for i, m := range periods {
		if cum += m.N; cum-hiddenAll > offset {
			newest = i + 1
			break
		}
	}
	cum = 0
	for i := len(periods) - 1; i >= 0; i-- {
		if cum += periods[i].N; cum-hiddenAll >= atOrOlder {
			oldest = i
			break
		}
	}
	if len(periods)-oldest < newest {
		return oldest, len(periods), true
	}
	return 0, newest, false
}

// takeHidden takes the events of the hidden projects off periods (a run
// of consecutive rows of dim, newest first), by their rows of dim, read in
// one statement (a union of the parts of hiddenKeys).
func (p Plan) takeHidden(ctx context.Context, db bun.IDB, query sqlq.Query, dim Dim, periods []period) error {
	if len(periods) == 0 {
		return nil
	}
	oldest, newest := periods[len(periods)-1].Num, periods[0].Num+1
	parts := p.hiddenPeriods(dim, &oldest, &newest)
	for i, cond := range parts {
		parts[i] = cond.Wrap("SELECT num, n FROM event_counts WHERE ", "")
	}
	q := sqlq.Join(" UNION ALL ", parts...).Wrap("SELECT num, SUM(n) AS n FROM (", ") AS h GROUP BY num")
	hidden, err := sqlq.All(ctx, db, query, q, func(rows *sql.Rows, p *period) error { return rows.Scan(&p.Num, &p.N) })
	if err != nil {
		return err
	}
	return subtract(periods, hidden)
}

// subtract takes the counts of less off those of the same num in ps: a
// period left with fewer than none, or one of less that ps does not hold,
// is counts gone wrong.
func subtract(ps, less []period) error {
	at := make(map[int64]int, len(ps))
	for i, x := range ps {
		at[x.Num] = i
	}
	for _, l := range less {
		i, ok := at[l.Num]
		if !ok {
			return fmt.Errorf("event_counts: %d hidden events in period %d, which has no row", l.N, l.Num)
		}
		if ps[i].N -= l.N; ps[i].N < 0 {
			return fmt.Errorf("event_counts: %d hidden events in period %d, which holds %d", l.N, l.Num, ps[i].N+l.N)
		}
	}
	return nil
}
