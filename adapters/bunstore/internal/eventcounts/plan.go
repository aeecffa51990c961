package eventcounts

import (
	"maps"
	"slices"
	"strconv"

	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Plan is how the counts serve a search without free text: its total
// (Total) and, at a large offset, where its page starts (Seek). The zero
// Plan serves nothing: the store counts the matches.
type Plan struct {
	q    flagadmin.EventQuery
	kind planKind
	// planKeys: the rows to add and to subtract, every shard of each.
	plus, minus []rows
	// planDays: the days from fromDay (inclusive) to beforeDay
	// (exclusive), when bounded; noProject subtracts the days' events
	// without a project; hidden lists projects whose days in the range
	// are subtracted (hiddenPeriods).
	from, before *int64
	noProject    bool
	hidden       []string
	// hiddenKeys select, on the project column of event_counts,
	// the rows of the hidden projects, each a part of them (hiddenKeys);
	// none when no project is hidden.
	hiddenKeys []sqlq.Fragment
	// listed, when hiddenKeys has the part of the comma-joined projects
	// naming a hidden one, is the condition of their rows of the project
	// counts; probeListed: a seek in a transaction first asks whether
	// there are any (withListedKeys).
	listed      sqlq.Fragment
	probeListed bool
}

// planKind is where a plan reads the total from.
type planKind int

const (
	planNone planKind = iota // nowhere: the matches are counted
	planKeys                 // rows of a few keys: plus minus minus
	planDays                 // day rows over a range of days
)

// rows are the rows of event_counts of one dim and scope with any of
// the projects, values and nums given (each list one empty string or 0 when the
// dim has none), every shard of each. projectConds, when not empty,
// select the projects instead of projects, each a part of them, read
// apart (conditions).
type rows struct {
	dim          Dim
	scope        Scope
	projects     []string
	projectConds []sqlq.Fragment
	values       []string
	nums         []int64
}

// SeekMinOffset is the smallest offset for which a page skips whole
// months and days by their counts (Seek) rather than index entries.
const SeekMinOffset = 1000

// PlanFor returns how the counts serve q. They serve it when q's matches
// are a sum of counted rows: no free text, no id or group filter, and
// either no date and at most one column filter, with any visibility (the
// counts per project and without a project take off what the caller
// cannot see); or whole days (dayBound) and no column filter, with any
// visibility. A project or value too long to be counted (MaxKeyBytes)
// leaves q to be counted. d is the store's database.
func PlanFor(d dialect.Name, q flagadmin.EventQuery) Plan {
	p := planOf(d, q)
	if p.kind == planNone || !countable(p.hidden) || !p.countable() {
		return Plan{}
	}
	return p
}

// planOf returns the plan of counts that would serve q, whose rows are
// yet to be found countable; a plan of kind planNone when no counts can
// serve q.
func planOf(d dialect.Name, q flagadmin.EventQuery) Plan {
	if q.Text != "" {
		return Plan{}
	}
	dim, values, nums, filters, counted := columnFilter(q)
	if !counted {
		return Plan{}
	}
	hidden := slices.Sorted(maps.Keys(setOf(q.HiddenProjects))) // deduplicated, in one order
	keys, listed := hiddenKeys(d, hidden)
	var p Plan
	switch {
	case filters > 1 || (filters == 1 && (q.From != nil || q.Before != nil)):
		return Plan{}
	case q.From != nil || q.Before != nil:
		p = dayPlan(q, hidden)
	case filters == 0 && q.Offset >= SeekMinOffset:
		// All events (with a project, outside hidden projects): the days
		// count them too, and let a large offset skip whole days.
		p = Plan{kind: planDays, noProject: q.RequireProject, hidden: hidden}
	case filters == 0:
		p = allPlan(q, hidden, keys)
	case dim == DimEvents: // the project filter
		p = projectPlan(values, hidden)
	default:
		p = columnPlan(q, dim, values, nums, hidden, keys)
	}
	p.q, p.hiddenKeys, p.listed, p.probeListed = q, keys, listed, d == dialect.SQLite
	return p
}

// hiddenKeys returns the conditions on the project column of event_counts
// that together select the rows of the hidden projects (none
// when none is): a hidden project's own, and those of every other project
// of the counts that names one among comma-joined projects
// (flagadmin.ProjectHidden), found among the keys of the rows per project,
// a row per project and shard (listed is the condition of those rows,
// empty when there is no second part). A comma-joined project longer than
// MaxKeyBytes has no row: its events stay counted.
//
// The two select different projects, so what is counted under each adds
// up; each is read apart, as one index serves each (the list of keys is
// probed, the keys the subquery finds are joined) and none serves their OR:
// PostgreSQL then reads every row of the dim and scope.
func hiddenKeys(d dialect.Name, hidden []string) (keys []sqlq.Fragment, listed sqlq.Fragment) {
	if len(hidden) == 0 {
		return nil, sqlq.Fragment{}
	}
	own := sqlq.In("project", hidden)
	lists := stored.ListsProject(d, "project", hidden)
	if lists.Empty() {
		return []sqlq.Fragment{own}, sqlq.Fragment{}
	}
	others := sqlq.And(lists, sqlq.In("project", hidden).Wrap("NOT (", ")"))
	listed = others.Wrap(listedRows+" AND ", "")
	return []sqlq.Fragment{own, listed.Wrap("project IN (SELECT project FROM event_counts WHERE ", ")")}, listed
}

// listedRows is the condition of the rows that count the events of each
// comma-joined project, one a project and shard, among which hiddenKeys
// finds those naming a hidden project: the predicate of the partial index
// event_counts_listed (Indexes), which holds these few rows alone, where
// the primary key would have every project's rows read and tested (0.07
// ms of a hidden caller's 0.9 ms days statement, with 200 projects and
// none comma-joined). The subquery's condition starts with it, word for
// word, so that PostgreSQL and SQLite prove the index usable; the index
// leads with dim and scope, which SQLite needs to prefer it to the
// primary key's range of them.
var listedRows = projectEventRows + " AND project LIKE '%,%'"

// Indexes are the statements that create the indexes of event_counts
// beyond its primary key, unless they exist, on the database d: the
// partial index of listedRows. MySQL has no partial index: there
// hiddenKeys reads every project's rows.
func Indexes(d dialect.Name) []string {
	if d == dialect.MySQL {
		return nil
	}
	return []string{"CREATE INDEX IF NOT EXISTS event_counts_listed ON event_counts (dim, scope, project) WHERE " + listedRows}
}

// dimOf is the dim that counts the events by the column of a column
// filter, by the name of its flagadmin.EventField (FilterParam.Column).
// The project's dim counts all events, split by project. A filter on a
// column without a dim (id, groupId, and any filter declared later) is
// not counted: its queries are counted from an index.
var dimOf = map[string]Dim{
	"project": DimEvents, "featureName": DimFeature, "type": DimType, "environment": DimEnvironment, "createdByUserId": DimCreator,
}

// columnFilter returns q's column filters: the dim and values (or nums)
// of the last one, and how many there are; counted is false when one of
// them is on a column without counts.
func columnFilter(q flagadmin.EventQuery) (dim Dim, values []string, nums []int64, filters int, counted bool) {
	for c := range q.ColumnFilters() {
		if c.Len() == 0 {
			continue
		}
		d, ok := dimOf[c.Param.Column]
		if !ok {
			return 0, nil, nil, 0, false
		}
		dim, values, nums, filters = d, c.Strings, c.Ints, filters+1
	}
	return dim, values, nums, filters, true
}

// dayPlan reads the total of q (dates, no column filter) from the day
// rows, when its dates are whole days.
func dayPlan(q flagadmin.EventQuery, hidden []string) Plan {
	p := Plan{kind: planDays, noProject: q.RequireProject, hidden: hidden}
	if q.From != nil {
		day, ok := dayBound(*q.From)
		if !ok {
			return Plan{}
		}
		p.from = &day
	}
	if q.Before != nil {
		day, ok := dayBound(*q.Before)
		if !ok {
			return Plan{}
		}
		p.before = &day
	}
	return p
}

// allPlan counts every event, less those without a project (for callers
// who see only events with one) and those of hidden projects.
func allPlan(q flagadmin.EventQuery, hidden []string, keys []sqlq.Fragment) Plan {
	p := Plan{kind: planKeys, plus: []rows{one(DimEvents, ScopeAll)}}
	if q.RequireProject {
		p.minus = append(p.minus, one(DimEvents, ScopeNoProject))
	}
	if len(hidden) > 0 {
		r := one(DimEvents, ScopeProject)
		r.projects, r.projectConds = hidden, keys
		p.minus = append(p.minus, r)
	}
	return p
}

// projectPlan counts the events of the projects of a project filter (each
// the whole project column) that are not hidden.
func projectPlan(projects, hidden []string) Plan {
	var shown []string
	for p := range setOf(projects) {
		if !flagadmin.ProjectHidden(p, hidden) {
			shown = append(shown, p)
		}
	}
	p := Plan{kind: planKeys}
	if len(shown) > 0 {
		r := one(DimEvents, ScopeProject)
		r.projects = slices.Sorted(slices.Values(shown))
		p.plus = []rows{r}
	}
	return p
}

// columnPlan counts the events with one of the values (or nums) in the
// column of dim, less their events in hidden projects and, for callers who
// see only events with a project, those without one.
func columnPlan(q flagadmin.EventQuery, dim Dim, values []string, nums []int64, hidden []string, keys []sqlq.Fragment) Plan {
	all := one(dim, ScopeAll)
	if dim == DimCreator {
		all.nums = slices.Sorted(maps.Keys(setOf(nums)))
	} else {
		all.values = slices.Sorted(maps.Keys(setOf(values)))
	}
	p := Plan{kind: planKeys, plus: []rows{all}}
	if len(hidden) > 0 {
		inHidden := all
		inHidden.scope, inHidden.projects, inHidden.projectConds = ScopeProject, hidden, keys
		p.minus = append(p.minus, inHidden)
	}
	if q.RequireProject {
		none := all
		none.scope = ScopeNoProject
		p.minus = append(p.minus, none)
	}
	return p
}

// one is the rows of dim and scope without a project, value or num.
func one(dim Dim, scope Scope) rows {
	return rows{dim: dim, scope: scope, projects: []string{""}, values: []string{""}, nums: []int64{0}}
}

// setOf is the set of vs.
func setOf[T comparable](vs []T) map[T]bool {
	set := make(map[T]bool, len(vs))
	for _, v := range vs {
		set[v] = true
	}
	return set
}

// countable reports whether every string of ss may be counted.
func countable(ss []string) bool {
	return !slices.ContainsFunc(ss, func(s string) bool { return len(s) > MaxKeyBytes })
}

// countable reports whether every row of p may be counted.
func (p Plan) countable() bool {
	for _, r := range slices.Concat(p.plus, p.minus) {
		if !countable(r.projects) || !countable(r.values) {
			return false
		}
	}
	return true
}

// Seeks reports whether the page of the plan's query starts at a large
// offset that Seek finds by skipping whole months and days.
func (p Plan) Seeks() bool {
	return p.kind == planDays && p.q.Offset >= SeekMinOffset && p.q.Limit > 0
}

// Total returns the SQL expression (a scalar, without FROM) of the total of
// the plan's query, read from the counts; empty for the zero Plan.
func (p Plan) Total() sqlq.Fragment {
	switch p.kind {
	case planKeys:
		if len(p.plus) == 0 {
			return sqlq.F("0")
		}
		total := sum(p.plus)
		if len(p.minus) > 0 {
			total = sqlq.Join(" - ", total, sum(p.minus))
		}
		return total
	case planDays:
		total := p.days(ScopeAll)
		if p.noProject {
			total = sqlq.Join(" - ", total, p.days(ScopeNoProject))
		}
		for _, hidden := range p.hiddenPeriods(DimDay, p.from, p.before) {
			total = sqlq.Join(" - ", total, hidden.Wrap("COALESCE((SELECT SUM(n) FROM event_counts WHERE ", "), 0)"))
		}
		return total
	}
	return sqlq.Fragment{}
}

// days is the SQL sum of the day rows of the plan's range in scope.
func (p Plan) days(scope Scope) sqlq.Fragment {
	r := one(DimDay, scope)
	r.nums = nil
	return r.conditions(p.from, p.before)[0].Wrap("COALESCE((SELECT SUM(n) FROM event_counts WHERE ", "), 0)")
}

// hiddenPeriods are the conditions of the rows of dim (DimDay or
// DimMonth) of the hidden projects from from (inclusive) to before
// (exclusive), nil for no bound, one for each part of them (hiddenKeys);
// none when no project is hidden. Every write adds an event to its day's
// and month's rows of every event and to those of its project, so the
// two agree.
func (p Plan) hiddenPeriods(dim Dim, from, before *int64) []sqlq.Fragment {
	if len(p.hiddenKeys) == 0 {
		return nil
	}
	r := one(dim, ScopeProject)
	r.projects, r.projectConds, r.nums = p.hidden, p.hiddenKeys, nil
	return r.conditions(from, before)
}

// sum is the SQL sum of the rows, every shard, 0 when there are none.
//
// Each rows' part (conditions) is summed by a subquery of its own, which
// reads only its keys from the primary key; one sum over their OR would
// find them by a range scan of every row of their dims and scopes, or
// bitmaps of it.
func sum(rs []rows) sqlq.Fragment {
	var sums []sqlq.Fragment
	for _, r := range rs {
		for _, cond := range r.conditions(nil, nil) {
			sums = append(sums, cond.Wrap("COALESCE((SELECT SUM(n) FROM event_counts WHERE ", "), 0)"))
		}
	}
	return sqlq.Join(" + ", sums...).Wrap("(", ")")
}

// conditions are the WHERE conditions of r's rows, one for each part of
// them (projectConds, else one for its projects); with nil nums, of its
// nums from from (inclusive) to before (exclusive), nil for no bound.
func (r rows) conditions(from, before *int64) []sqlq.Fragment {
	projects := r.projectConds
	if len(projects) == 0 {
		projects = []sqlq.Fragment{eqOrIn("project", r.projects)}
	}
	out := make([]sqlq.Fragment, len(projects))
	for i, p := range projects {
		out[i] = r.condition(p, from, before)
	}
	return out
}

// condition is the WHERE condition of r's rows of the projects that
// projects selects; with nil nums, of its nums from from (inclusive) to
// before (exclusive), nil for no bound.
func (r rows) condition(projects sqlq.Fragment, from, before *int64) sqlq.Fragment {
	cond := sqlq.F("dim = " + strconv.Itoa(int(r.dim)) + " AND scope = " + strconv.Itoa(int(r.scope)))
	parts := []sqlq.Fragment{cond, projects, eqOrIn("value", r.values)}
	switch {
	case r.nums != nil:
		parts = append(parts, eqOrIn("num", r.nums))
	default:
		if from != nil {
			parts = append(parts, sqlq.F("num >= ?", *from))
		}
		if before != nil {
			parts = append(parts, sqlq.F("num < ?", *before))
		}
	}
	return sqlq.And(parts...)
}

// eqOrIn is "column = 0" or column equal to the empty string for the one
// empty value, else
// "column = ?" or "column IN (...)".
func eqOrIn[T comparable](column string, vs []T) sqlq.Fragment {
	var zero T
	switch {
	case len(vs) == 1 && vs[0] == zero:
		if _, ok := any(zero).(string); ok {
			return sqlq.F(column + " = ''")
		}
		return sqlq.F(column + " = 0")
	case len(vs) == 1:
		return sqlq.F(column+" = ?", vs[0])
	}
	return sqlq.In(column, vs)
}
