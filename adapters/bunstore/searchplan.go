package bunstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// How a search without free text gets its exact total (see counts.go).
type totalKind int

const (
	// totalCount counts the matching rows (through an index).
	totalCount totalKind = iota
	// totalKeys sums rows of event_counts: plus minus minus.
	totalKeys
	// totalDays sums day rows of event_counts over a range of days.
	totalDays
)

// totalPlan is how the exact total of a query without free text is read.
type totalPlan struct {
	kind totalKind
	// totalKeys: the rows to add and to subtract, every shard of each.
	plus, minus []countKey
	// totalDays: the days from fromDay (inclusive) to beforeDay
	// (exclusive), "" for no bound; noProject subtracts the days' events
	// without a project; hidden lists projects whose events in the range
	// are counted (from the events_project index) and subtracted.
	fromDay, beforeDay string
	noProject          bool
	hidden             []string
}

// daySeekMinOffset is the smallest offset for which a page skips whole
// days by their counts (daySeek) rather than index entries.
const daySeekMinOffset = 1000

// planTotal returns how q's total is read. Counted rows serve q when its
// matches are a sum of them: no free text, no id or group filter, and
// either no date and at most one column filter, with any visibility (the
// counts per project and without a project take off what the caller
// cannot see); or whole days (dayBound) and no column filter, with any
// visibility.
func planTotal(q flagadmin.EventQuery) totalPlan {
	count := totalPlan{kind: totalCount}
	if q.Text != "" || len(q.IDs) > 0 || len(q.GroupIDs) > 0 {
		return count
	}
	var filters []countKey
	set := 0
	for _, f := range []struct {
		dim    string
		values []string
	}{{countProject, q.Projects}, {countFeature, q.Features}, {countType, q.Types}, {countEnvironment, q.Environments}} {
		if len(f.values) > 0 {
			set++
			for _, v := range f.values {
				filters = append(filters, countKey{f.dim, v})
			}
		}
	}
	if len(q.CreatedByUserIDs) > 0 {
		set++
		for _, id := range q.CreatedByUserIDs {
			filters = append(filters, countKey{countCreator, strconv.FormatInt(id, 10)})
		}
	}
	hidden := map[string]bool{}
	for _, p := range q.HiddenProjects {
		hidden[p] = true
	}
	hiddenSorted := slices.Sorted(maps.Keys(hidden)) // deduplicated, in one order
	if q.From != nil || q.Before != nil {
		if set > 0 {
			return count
		}
		p := totalPlan{kind: totalDays, noProject: q.RequireProject, hidden: hiddenSorted}
		var ok bool
		if q.From != nil {
			if p.fromDay, ok = dayBound(*q.From); !ok {
				return count
			}
		}
		if q.Before != nil {
			if p.beforeDay, ok = dayBound(*q.Before); !ok {
				return count
			}
		}
		return p
	}
	if set > 1 {
		return count
	}
	p := totalPlan{kind: totalKeys}
	seen := map[countKey]bool{}
	if set == 0 && q.Offset >= daySeekMinOffset {
		// All events (with a project, outside hidden projects): the days
		// count them too, and let a large offset skip whole days.
		return totalPlan{kind: totalDays, noProject: q.RequireProject, hidden: hiddenSorted}
	}
	if set == 0 {
		p.plus = []countKey{{countAll, ""}}
		if q.RequireProject {
			p.minus = append(p.minus, countKey{countNoProject, ""})
		}
		for _, h := range hiddenSorted {
			p.minus = append(p.minus, countKey{countProject, h})
		}
		return p
	}
	for _, k := range filters {
		if (k.dim == countProject && hidden[k.val]) || seen[k] {
			continue
		}
		seen[k] = true
		p.plus = append(p.plus, k)
		// A value of another column: less its events in hidden projects
		// and, for callers who see only events with a project, those
		// without one.
		if by, ok := countsByProject[k.dim]; ok {
			for _, h := range hiddenSorted {
				p.minus = append(p.minus, countKey{by.inProject, inProjectVal(h, k.val)})
			}
			if q.RequireProject {
				p.minus = append(p.minus, countKey{by.noProject, k.val})
			}
		}
	}
	return p
}

// seekable reports whether a page of q at offset q.Offset skips whole days:
// the total comes from day rows (less the hidden projects' events of each
// day), and the offset is large.
func (p totalPlan) seekable(q flagadmin.EventQuery) bool {
	return p.kind == totalDays && q.Offset >= daySeekMinOffset && q.Limit > 0
}

// countSum is the SQL sum of the rows of keys in event_counts, every shard,
// 0 when there are none. The values are bound by a, the dims written.
func countSum(keys []countKey, a *sqlArgs) schema.QueryAppender {
	byDim := map[string][]string{}
	for _, k := range keys {
		byDim[k.dim] = append(byDim[k.dim], k.val)
	}
	var conds []string
	var args []any
	for _, dim := range slices.Sorted(maps.Keys(byDim)) {
		conds = append(conds, "(dim IN (?) AND val IN (?))")
		args = append(args, bun.In(shardDims(dim)), bun.In(bindList(a, byDim[dim])))
	}
	return bun.SafeQuery("COALESCE((SELECT SUM(n) FROM event_counts WHERE "+strings.Join(conds, " OR ")+"), 0)", args...)
}

// dayRange is the SQL condition on val of the plan's range of days, its
// values bound by a.
func (p totalPlan) dayRange(a *sqlArgs) (string, []any) {
	cond, args := "", []any{}
	if p.fromDay != "" {
		cond += " AND val >= ?"
		args = append(args, a.bind(p.fromDay))
	}
	if p.beforeDay != "" {
		cond += " AND val < ?"
		args = append(args, a.bind(p.beforeDay))
	}
	return cond, args
}

// totalExpr is the SQL expression of q's total by plan p, for a SELECT
// without FROM, its values bound by a.
func (s *Store) totalExpr(db bun.IDB, q flagadmin.EventQuery, p totalPlan, a *sqlArgs) schema.QueryAppender {
	switch p.kind {
	case totalKeys:
		if len(p.plus) == 0 {
			return bun.SafeQuery("0")
		}
		expr, args := "?", []any{countSum(p.plus, a)}
		if len(p.minus) > 0 {
			expr += " - ?"
			args = append(args, countSum(p.minus, a))
		}
		return bun.SafeQuery(expr, args...)
	case totalDays:
		cond, rangeArgs := p.dayRange(a)
		expr := "COALESCE((SELECT SUM(n) FROM event_counts WHERE dim IN (?)" + cond + "), 0)"
		args := append([]any{bun.In(shardDims(countDay))}, rangeArgs...)
		if p.noProject {
			expr += " - COALESCE((SELECT SUM(n) FROM event_counts WHERE dim IN (?)" + cond + "), 0)"
			args = append(args, bun.In(shardDims(countDayNoProject)))
			args = append(args, rangeArgs...)
		}
		if len(p.hidden) > 0 {
			hid := db.NewSelect().Model((*eventRow)(nil)).ColumnExpr("COUNT(*)").Where("project IN (?)", bun.In(bindList(a, p.hidden)))
			if q.From != nil {
				hid = hid.Where("created_at >= ?", a.bind(ceilMillis(*q.From)))
			}
			if q.Before != nil {
				hid = hid.Where("created_at < ?", a.bind(ceilMillis(*q.Before)))
			}
			expr += " - (?)"
			args = append(args, hid)
		}
		return bun.SafeQuery(expr, args...)
	default:
		return bun.SafeQuery("(?)", s.eventFilter(db.NewSelect().Model((*eventRow)(nil)).ColumnExpr("COUNT(*)"), q, a))
	}
}

// readTotal reads q's total by plan p.
func (s *Store) readTotal(ctx context.Context, db bun.IDB, q flagadmin.EventQuery, p totalPlan) (int, error) {
	var total int64
	if err := db.NewSelect().ColumnExpr("? AS total", s.totalExpr(db, q, p, nil)).Scan(ctx, &total); err != nil {
		return 0, err
	}
	return int(total), nil
}

// dayCount is the number of matches of one day.
type dayCount struct {
	Val string `bun:"val"`
	N   int64  `bun:"n"`
}

// daySeek reads the counted rows of plan p (a seekable totalDays plan) and
// returns q's total and where the page at q.Offset starts: before is the
// exclusive upper bound of created_at (none when hasBefore is false) of the
// newest day that holds the offset's event, and offset the number of
// matches to skip from there, fewer than that day's.
//
// Without dates, whole months are skipped first by their month rows
// (monthSeek). With dates, the range's day rows are read, and the events
// of hidden projects in the range are counted per day from the
// events_project index and taken off their days.
func (s *Store) daySeek(ctx context.Context, db bun.IDB, q flagadmin.EventQuery, p totalPlan) (total int, before int64, hasBefore bool, offset int, err error) {
	if q.From == nil && q.Before == nil {
		return s.monthSeek(ctx, db, q.Offset, p)
	}
	cond, rangeArgs := p.dayRange(nil)
	days, err := readCounted(ctx, db, countDay, countDayNoProject, p.noProject, cond, rangeArgs)
	if err != nil {
		return 0, 0, false, 0, err
	}
	if len(p.hidden) > 0 {
		var from, until *int64
		if q.From != nil {
			ms := ceilMillis(*q.From)
			from = &ms
		}
		if q.Before != nil {
			ms := ceilMillis(*q.Before)
			until = &ms
		}
		if err := s.takeHiddenDays(ctx, db, p.hidden, from, until, days); err != nil {
			return 0, 0, false, 0, err
		}
	}
	var sum int64
	for _, d := range days {
		sum += d.N
	}
	total = int(sum)
	if q.Offset >= total {
		return total, 0, false, 0, nil
	}
	before, hasBefore, offset, err = seekDays(days, q.Offset)
	return total, before, hasBefore, offset, err
}

// readCounted returns the rows of dim (every shard) whose val meets cond
// (" AND ..." with args, or ""), summed per val, less those of noDim when
// less is set, newest first. Sorted here: day and month values are ASCII,
// whose byte order is theirs, while the database would sort by its
// collation, slowly.
func readCounted(ctx context.Context, db bun.IDB, dim, noDim string, less bool, cond string, args []any) ([]dayCount, error) {
	sign := "n"
	dims := shardDims(dim)
	var all []any
	if less {
		sign = "CASE WHEN dim IN (?) THEN -n ELSE n END"
		all = append(all, bun.In(shardDims(noDim)))
		dims = append(dims, shardDims(noDim)...)
	}
	all = append(all, bun.In(dims))
	all = append(all, args...)
	var rows []dayCount
	err := db.NewRaw("SELECT val, SUM("+sign+") AS n FROM event_counts WHERE dim IN (?)"+cond+" GROUP BY val", all...).
		Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b dayCount) int { return strings.Compare(b.Val, a.Val) })
	return rows, nil
}

// seekDays skips the newest of days (newest first) while they hold no more
// than offset matches: the page then starts in an older day, before the
// start of the last day skipped, at the offset that remains.
func seekDays(days []dayCount, offset int) (before int64, hasBefore bool, rest int, err error) {
	var newer int64
	for _, d := range days {
		if newer+d.N > int64(offset) {
			break
		}
		newer += d.N
		if before, err = dayStartMs(d.Val); err != nil {
			return 0, false, 0, err
		}
		hasBefore = true
	}
	return before, hasBefore, offset - int(newer), nil
}

// takeHiddenDays counts the events of the hidden projects created from
// from (inclusive) until until (exclusive), nil for no bound, per day from
// the events_project index, and takes them off days.
func (s *Store) takeHiddenDays(ctx context.Context, db bun.IDB, hidden []string, from, until *int64, days []dayCount) error {
	where, args := "project IN (?)", []any{bun.In(hidden)}
	if from != nil {
		where += " AND created_at >= ?"
		args = append(args, *from)
	}
	if until != nil {
		where += " AND created_at < ?"
		args = append(args, *until)
	}
	var hid []dayCount
	if err := db.NewRaw(daysOfEvents(s.dialect, where), args...).Scan(ctx, &hid); err != nil {
		return err
	}
	less := make(map[string]int64, len(hid))
	for _, h := range hid {
		less[h.Val] = h.N
	}
	for i := range days {
		days[i].N -= less[days[i].Val]
	}
	return nil
}

// monthSeek is daySeek without dates. The month rows (a few dozen per
// year, less the months of events without a project for callers who see
// only events with one), less the hidden projects' events per month
// (monthInProject rows), skip whole months; then the day rows of the one
// month that holds the offset's event, less its hidden events per day
// (from the events_project index), skip whole days. A month's row is the
// sum of its days' (every write adds to both), so the two agree.
//
// The hidden projects' months are read only where the offset's month can
// be: their project rows give the hidden events in all (hiddenAll), and
// since no month hides more than that, the offset's event lies within
// hiddenAll events of where it would be with nothing hidden. So either the
// months from the newest to that bound, or from the oldest, whichever are
// fewer, locate it; each hidden project's month is one index lookup per
// shard, the dearest read of the page.
func (s *Store) monthSeek(ctx context.Context, db bun.IDB, offset int, p totalPlan) (total int, before int64, hasBefore bool, rest int, err error) {
	months, err := readCounted(ctx, db, countMonth, countMonthNoProject, p.noProject, "", nil)
	if err != nil {
		return 0, 0, false, 0, err
	}
	var sum, hiddenAll int64
	for _, m := range months {
		sum += m.N
	}
	if len(p.hidden) > 0 {
		keys := make([]countKey, len(p.hidden))
		for i, h := range p.hidden {
			keys[i] = countKey{countProject, h}
		}
		if err := db.NewSelect().ColumnExpr("?", countSum(keys, nil)).Scan(ctx, &hiddenAll); err != nil {
			return 0, 0, false, 0, err
		}
	}
	total = int(sum - hiddenAll)
	if offset >= total {
		return total, 0, false, 0, nil
	}
	// The months to read hidden counts of: months[from:to]. Newest first
	// up to the first month by whose end more than offset+hiddenAll
	// events lie, or oldest first likewise for the events after the
	// offset's (at least the number below lie at or before it, oldest
	// first).
	from, to, fromOldest := 0, len(months), false
	if len(p.hidden) > 0 {
		atOrOlder := int64(total - offset) // the offset's event and the older ones
		newest, oldest := len(months), 0
		var cum int64
		for i, m := range months {
			if cum += m.N; cum-hiddenAll > int64(offset) {
				newest = i + 1
				break
			}
		}
		cum = 0
		for i := len(months) - 1; i >= 0; i-- {
			if cum += months[i].N; cum-hiddenAll >= atOrOlder {
				oldest = i
				break
			}
		}
		if len(months)-oldest < newest {
			from, fromOldest = oldest, true
		} else {
			to = newest
		}
		if err := s.takeHiddenMonths(ctx, db, p.hidden, months[from:to]); err != nil {
			return 0, 0, false, 0, err
		}
	}
	// The offset's month, and the matches in the months newer than it.
	target, newer := -1, int64(0)
	if fromOldest {
		var older int64 // in the months from the oldest to i
		for i := len(months) - 1; i >= from; i-- {
			if older += months[i].N; int64(total)-older <= int64(offset) {
				target, newer = i, int64(total)-older
				break
			}
		}
	} else {
		for i := from; i < to; i++ {
			if newer+months[i].N > int64(offset) {
				target = i
				break
			}
			newer += months[i].N
		}
	}
	if target < 0 {
		return 0, 0, false, 0, fmt.Errorf("event_counts: offset %d not found in the months of %d matches", offset, total)
	}
	if target > 0 {
		if before, err = monthStartMs(months[target-1].Val); err != nil {
			return 0, 0, false, 0, err
		}
		hasBefore = true
	}
	// Its days, less their hidden events.
	m := months[target].Val
	days, err := readCounted(ctx, db, countDay, countDayNoProject, p.noProject, " AND val >= ? AND val <= ?",
		[]any{m + "-00", m + "-99"})
	if err != nil {
		return 0, 0, false, 0, err
	}
	if len(p.hidden) > 0 && len(days) > 0 {
		var from, until *int64
		if oldest := days[len(days)-1].Val; oldest != dayBefore1000 {
			ms, err := dayStartMs(oldest)
			if err != nil {
				return 0, 0, false, 0, err
			}
			from = &ms
		}
		switch newest := days[0].Val; newest {
		case dayAfter9999:
		case dayBefore1000: // the month of the days before 1000, its only day
			ms := dayMinMs
			until = &ms
		default:
			ms, err := dayStartMs(newest)
			if err != nil {
				return 0, 0, false, 0, err
			}
			ms += msPerDay
			until = &ms
		}
		if err := s.takeHiddenDays(ctx, db, p.hidden, from, until, days); err != nil {
			return 0, 0, false, 0, err
		}
	}
	b, has, r, err := seekDays(days, offset-int(newer))
	if err != nil {
		return 0, 0, false, 0, err
	}
	if has {
		before, hasBefore = b, true
	}
	return total, before, hasBefore, r, nil
}

// takeHiddenMonths takes the events of the hidden projects off months, by
// their monthInProject rows.
func (s *Store) takeHiddenMonths(ctx context.Context, db bun.IDB, hidden []string, months []dayCount) error {
	if len(months) == 0 {
		return nil
	}
	vals := make([]string, 0, len(months)*len(hidden))
	month := make(map[string]int, cap(vals)) // val → index in months
	for i, m := range months {
		for _, h := range hidden {
			v := inProjectVal(h, m.Val)
			vals = append(vals, v)
			month[v] = i
		}
	}
	var rows []dayCount
	err := db.NewRaw("SELECT val, SUM(n) AS n FROM event_counts WHERE dim IN (?) AND val IN (?) GROUP BY val",
		bun.In(shardDims(countMonthInProject)), bun.In(vals)).Scan(ctx, &rows)
	if err != nil {
		return err
	}
	for _, r := range rows {
		months[month[r.Val]].N -= r.N
	}
	return nil
}

// monthStartMs returns the first stored time of the month of value val
// (monthOf a day value). Like dayStartMs, an error for the days before
// 1000, which have no first time.
func monthStartMs(val string) (int64, error) {
	if val == monthOf(dayAfter9999) {
		return dayMaxMs, nil
	}
	return dayStartMs(val + "-01")
}
