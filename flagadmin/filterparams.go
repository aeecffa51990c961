package flagadmin

import (
	"iter"
	"slices"
	"time"
	"unicode/utf8"
	"unsafe"
)

// The parameters of the event searches, declared once (FilterParams): their
// names, how each is written, which operations take it, and for the list
// filters the event column they select on. ParseEventSearch, the webhook
// filters (SetFilterParam), ParseEventExport, ParseEventStream and
// EventQuery.Matches read them from the declaration, and so do the
// adapters (the client's query string, the result cache's keys, the
// command line's filter flags, the stores' column conditions); the HTTP
// transport's parameters are tested against it.

// FilterKind is how a parameter of the event searches is written and what
// it selects.
type FilterKind int

// The kinds of parameters.
const (
	// FilterStrings is IS:<value> or IS_ANY_OF:<value>,<value>,... (ParseFilter):
	// the column is one of the values, exact and case-sensitive.
	FilterStrings FilterKind = iota + 1
	// FilterIntegers is FilterStrings with integer values.
	FilterIntegers
	// FilterDay is IS:yyyy-MM-dd (ParseDay), a UTC day bounding createdAt.
	FilterDay
	// FilterText is the free-text query.
	FilterText
	// FilterPaging is a parameter of the pages of the search (limit,
	// offset, after): not a filter; the export and the stream refuse it.
	FilterPaging
)

// ParamUse is a set of the operations that take a parameter.
type ParamUse uint8

// The operations that take parameters.
const (
	// UseSearch: the query-string search (GET /api/admin/search/events).
	UseSearch ParamUse = 1 << iota
	// UseExport: the export (GET /api/admin/events/export).
	UseExport
	// UseStream: the live stream (GET /api/admin/events/stream).
	UseStream
	// UseWebhook: a webhook sink's filter (WebhookSink.Filter).
	UseWebhook
	// UseDeprecatedSearch: a field of the deprecated search's body
	// (DeprecatedSearchRequest), where it holds one plain value.
	UseDeprecatedSearch
)

// Has reports whether u includes every operation of x.
func (u ParamUse) Has(x ParamUse) bool { return u&x == x }

// FilterParam declares one parameter of the event searches.
type FilterParam struct {
	// Name is the parameter's name in the query string, in a webhook
	// filter and in the deprecated search's body.
	Name string
	// Kind is how its value is written.
	Kind FilterKind
	// Uses are the operations that take it.
	Uses ParamUse
	// Column is the EventField (by its Name) a list filter (FilterStrings,
	// FilterIntegers) selects on; "" for the other kinds.
	Column string
	// MaxItemLength bounds each value of a list filter, in characters; 0
	// for no bound.
	MaxItemLength int
	// item names a value in the message of one over MaxItemLength.
	item string

	raw   func(p *EventSearchParams) *string
	strs  func(q *EventQuery) *[]string
	ints  func(q *EventQuery) *[]int64
	apply func(f FilterParam, q *EventQuery, raw string) error
}

// Value returns the raw value of the parameter in p.
func (f FilterParam) Value(p *EventSearchParams) string { return *f.raw(p) }

// Set sets the raw value of the parameter in p.
func (f FilterParam) Set(p *EventSearchParams, value string) { *f.raw(p) = value }

// filterUses are the operations that take every filter.
const filterUses = UseSearch | UseExport | UseStream | UseWebhook

// filterParams is the declaration, in the order the client writes the
// query string and ParseEventSearch names offending parameters.
var filterParams = [...]FilterParam{
	{Name: "query", Kind: FilterText, Uses: filterUses | UseDeprecatedSearch,
		raw: func(p *EventSearchParams) *string { return &p.Query },
		apply: func(f FilterParam, q *EventQuery, raw string) (err error) {
			q.Text, err = parseQuery(f.Name, raw)
			return err
		}},
	{Name: "feature", Kind: FilterStrings, Uses: filterUses | UseDeprecatedSearch, Column: "featureName",
		raw:  func(p *EventSearchParams) *string { return &p.Feature },
		strs: func(q *EventQuery) *[]string { return &q.Features }},
	{Name: "project", Kind: FilterStrings, Uses: filterUses | UseDeprecatedSearch, Column: "project",
		raw:  func(p *EventSearchParams) *string { return &p.Project },
		strs: func(q *EventQuery) *[]string { return &q.Projects }},
	// Any type name: Unleash adds types in every release, and imported or
	// followed events carry them; a name matches the events of that type.
	{Name: "type", Kind: FilterStrings, Uses: filterUses | UseDeprecatedSearch, Column: "type", MaxItemLength: MaxEventTypeLength, item: "an event type",
		raw:  func(p *EventSearchParams) *string { return &p.Type },
		strs: func(q *EventQuery) *[]string { return &q.Types }},
	{Name: "createdBy", Kind: FilterIntegers, Uses: filterUses, Column: "createdByUserId",
		raw:  func(p *EventSearchParams) *string { return &p.CreatedBy },
		ints: func(q *EventQuery) *[]int64 { return &q.CreatedByUserIDs }},
	{Name: "environment", Kind: FilterStrings, Uses: filterUses, Column: "environment",
		raw:  func(p *EventSearchParams) *string { return &p.Environment },
		strs: func(q *EventQuery) *[]string { return &q.Environments }},
	{Name: "id", Kind: FilterIntegers, Uses: filterUses, Column: "id",
		raw:  func(p *EventSearchParams) *string { return &p.ID },
		ints: func(q *EventQuery) *[]int64 { return &q.IDs }},
	{Name: "groupId", Kind: FilterStrings, Uses: filterUses, Column: "groupId",
		raw:  func(p *EventSearchParams) *string { return &p.GroupID },
		strs: func(q *EventQuery) *[]string { return &q.GroupIDs }},
	{Name: "from", Kind: FilterDay, Uses: filterUses,
		raw:   func(p *EventSearchParams) *string { return &p.From },
		apply: dayFilter(func(q *EventQuery, day time.Time) { q.From = &day })},
	{Name: "to", Kind: FilterDay, Uses: filterUses,
		raw:   func(p *EventSearchParams) *string { return &p.To },
		apply: dayFilter(func(q *EventQuery, day time.Time) { next := day.AddDate(0, 0, 1); q.Before = &next })},
	{Name: "offset", Kind: FilterPaging, Uses: UseSearch | UseDeprecatedSearch,
		raw: func(p *EventSearchParams) *string { return &p.Offset },
		apply: func(f FilterParam, q *EventQuery, raw string) (err error) {
			q.Offset, err = ParseOffset(f.Name, raw)
			return err
		}},
	{Name: "limit", Kind: FilterPaging, Uses: UseSearch | UseDeprecatedSearch,
		raw: func(p *EventSearchParams) *string { return &p.Limit },
		apply: func(f FilterParam, q *EventQuery, raw string) (err error) {
			q.Limit, err = ParseLimit(f.Name, raw, SearchDefaultLimit, SearchMaxLimit)
			return err
		}},
	// After the offset, which it must not be combined with.
	{Name: "after", Kind: FilterPaging, Uses: UseSearch,
		raw:   func(p *EventSearchParams) *string { return &p.After },
		apply: func(_ FilterParam, q *EventQuery, raw string) error { return parseAfter(raw, q) }},
}

// FilterParams returns the parameters of the event searches. The slice is
// the caller's.
func FilterParams() []FilterParam {
	out := make([]FilterParam, len(filterParams))
	copy(out, filterParams[:])
	return out
}

// FilterParamNamed returns the declared parameter called name.
func FilterParamNamed(name string) (FilterParam, bool) {
	for _, f := range filterParams {
		if f.Name == name {
			return f, true
		}
	}
	return FilterParam{}, false
}

// filterParamNames returns the names of the parameters u's operations all take.
func filterParamNames(u ParamUse) []string {
	var out []string
	for _, f := range filterParams {
		if f.Uses.Has(u) {
			out = append(out, f.Name)
		}
	}
	return out
}

// parse parses the raw value of f into q; an empty value leaves q as it
// is, except for the paging parameters, whose default it sets.
func (f FilterParam) parse(q *EventQuery, raw string) error {
	if f.apply != nil {
		if raw == "" && f.Kind != FilterPaging {
			return nil
		}
		return f.apply(f, q, raw)
	}
	if raw == "" {
		return nil
	}
	switch f.Kind {
	case FilterStrings:
		parsed, err := ParseFilter(f.Name, raw)
		if err != nil {
			return err
		}
		*f.strs(q) = parsed.Values
		if f.MaxItemLength > 0 {
			v := &ValidationError{}
			for _, item := range parsed.Values {
				if utf8.RuneCountInString(item) > f.MaxItemLength {
					v.Fields = append(v.Fields, invalid(f.Name, "%s is at most %d characters, got %s", f.item, f.MaxItemLength, QuoteInput(item)).Fields...)
				}
			}
			if len(v.Fields) > 0 {
				return v
			}
		}
		return nil
	case FilterIntegers:
		ids, err := parseIntFilter(f.Name, raw)
		*f.ints(q) = ids
		return err
	}
	panic("flagadmin: parameter " + f.Name + " has no parser")
}

// dayFilter returns the parser of a FilterDay parameter that set places in q.
func dayFilter(set func(q *EventQuery, day time.Time)) func(FilterParam, *EventQuery, string) error {
	return func(f FilterParam, q *EventQuery, raw string) error {
		day, err := ParseDay(f.Name, raw)
		if err == nil {
			set(q, day)
		}
		return err
	}
}

// ColumnFilter is one list filter of an EventQuery: the event column it
// selects on and the values the column must be one of (none: no filter).
type ColumnFilter struct {
	// Param declares the filter: Param.Column names the column (an
	// EventField), Param.Kind says which of Strings and Ints holds the values.
	Param FilterParam
	// Strings are the values of a FilterStrings filter.
	Strings []string
	// Ints are the values of a FilterIntegers filter.
	Ints []int64
}

// Len returns the number of values; 0 means the column is not filtered.
func (c ColumnFilter) Len() int { return len(c.Strings) + len(c.Ints) }

// ColumnFilters yields every list filter of q (those of EventQuery's
// slices Features, Projects, Types, Environments, CreatedByUserIDs, IDs
// and GroupIDs) in the declared order, those without values included.
// A store can build its column conditions in one loop over them, mapping
// Param.Column to its own column; EventQuery.Matches is their meaning.
func (q *EventQuery) ColumnFilters() iter.Seq[ColumnFilter] {
	return func(yield func(ColumnFilter) bool) {
		for _, f := range filterParams {
			c := ColumnFilter{Param: f}
			switch f.Kind {
			case FilterStrings:
				c.Strings = *f.strs(q)
			case FilterIntegers:
				c.Ints = *f.ints(q)
			default:
				continue
			}
			if !yield(c) {
				return
			}
		}
	}
}

// WithColumnFilter returns q with the values of c's parameter replaced by
// c's (c.Strings or c.Ints, by c.Param.Kind): a store narrows a query to
// some of its values with it, such as one query per value of a filter.
func (q EventQuery) WithColumnFilter(c ColumnFilter) EventQuery {
	switch c.Param.Kind {
	case FilterStrings:
		*c.Param.strs(&q) = c.Strings
	case FilterIntegers:
		*c.Param.ints(&q) = c.Ints
	}
	return q
}

// columnMatchers are the list filters of filterParams as EventQuery.Matches
// reads them (resolveColumnMatchers), in the declared order.
var columnMatchers = resolveColumnMatchers()

// columnMatcher is a list filter resolved for EventQuery.Matches, which
// runs once per event: where its values are in an EventQuery and where
// its column (FilterParam.Column) is in an Event. Matches reads both at
// their offsets, as EventField does, rather than through the row's
// accessor: a call through a func value would move the query to the heap
// on every event.
type columnMatcher struct {
	// valuesAt is the offset of the values in EventQuery: a []string
	// when text, else a []int64.
	valuesAt uintptr
	text     bool
	// columnAt is the offset of the column in Event, of the Go type of kind.
	columnAt uintptr
	kind     EventFieldKind
}

// given reports whether c's filter has values in q.
func (c *columnMatcher) given(q *EventQuery) bool {
	if c.text {
		return len(*c.strings(q)) > 0
	}
	return len(*c.ints(q)) > 0
}

// strings returns the address of the values of a filter on a text column in q.
func (c *columnMatcher) strings(q *EventQuery) *[]string {
	return (*[]string)(unsafe.Add(unsafe.Pointer(q), c.valuesAt))
}

// ints returns the address of the values of a filter on an integer column in q.
func (c *columnMatcher) ints(q *EventQuery) *[]int64 {
	return (*[]int64)(unsafe.Add(unsafe.Pointer(q), c.valuesAt))
}

// column returns the address of the column in e.
func (c *columnMatcher) column(e *Event) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(e), c.columnAt)
}

// resolveColumnMatchers resolves the list filters of filterParams: the
// offset of the slice each row's accessor returns, and its Column. It
// panics on a Column that is no event field, or one of a kind the
// filter's values cannot select on (FilterStrings a text, FilterIntegers
// an integer), or an accessor that returns no field of its query.
func resolveColumnMatchers() []columnMatcher {
	var out []columnMatcher
	probe := new(EventQuery)
	for _, f := range filterParams {
		var at unsafe.Pointer
		var kinds []EventFieldKind
		switch f.Kind {
		case FilterStrings:
			at, kinds = unsafe.Pointer(f.strs(probe)), []EventFieldKind{FieldText, FieldTextOrNull, FieldTextOrAbsent}
		case FilterIntegers:
			at, kinds = unsafe.Pointer(f.ints(probe)), []EventFieldKind{FieldInt, FieldIntOrNull}
		default:
			continue
		}
		column, ok := EventFieldNamed(f.Column)
		if !ok || !slices.Contains(kinds, column.Kind) {
			panic("flagadmin: the list filter " + f.Name + " selects on " + f.Column + ", which is no event field of a kind its values can select on")
		}
		valuesAt := uintptr(at) - uintptr(unsafe.Pointer(probe))
		if valuesAt >= unsafe.Sizeof(*probe) {
			panic("flagadmin: the accessor of the list filter " + f.Name + " returns no field of its EventQuery")
		}
		out = append(out, columnMatcher{valuesAt: valuesAt, text: f.Kind == FilterStrings, columnAt: column.offset, kind: column.Kind})
	}
	return out
}

// pagingGiven reports whether p holds a paging parameter (FilterPaging).
func pagingGiven(p *EventSearchParams) bool {
	for _, f := range filterParams {
		if f.Kind == FilterPaging && f.Value(p) != "" {
			return true
		}
	}
	return false
}
