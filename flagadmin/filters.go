package flagadmin

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Filter operators of the query-string search. Both mean "the column is one
// of the values".
const (
	OpIs      = "IS"
	OpIsAnyOf = "IS_ANY_OF"
)

// Bounds of the two searches (docs/api.md, "Limits").
const (
	SearchDefaultLimit     = 50
	SearchMaxLimit         = 1000
	DeprecatedDefaultLimit = 100
	DeprecatedMaxLimit     = 100
	// MaxFilterValues bounds the items of one IS_ANY_OF filter.
	MaxFilterValues = 1000
	// MaxQueryLength bounds the free-text query, in characters.
	MaxQueryLength = 1000
	// MaxEventTypeLength bounds an item of the type filter, in characters.
	MaxEventTypeLength = 255
)

// Filter is a parsed "IS:a" or "IS_ANY_OF:a,b" parameter.
type Filter struct {
	Operator string
	Values   []string
}

// ParseFilter parses a filter parameter named param. The value must start
// with "IS:" or "IS_ANY_OF:" (case-sensitive); the rest is split on commas,
// each item trimmed, empty items dropped. At least one item must remain.
func ParseFilter(param, raw string) (Filter, error) {
	if err := CheckText(param, raw); err != nil {
		return Filter{}, err
	}
	op, rest, ok := strings.Cut(raw, ":")
	if !ok || (op != OpIs && op != OpIsAnyOf) {
		return Filter{}, invalid(param, "must start with IS: or IS_ANY_OF: followed by a comma-separated list of values, got %s", QuoteInput(raw))
	}
	var values []string
	for item := range strings.SplitSeq(rest, ",") {
		if item = strings.TrimSpace(item); item != "" {
			values = append(values, item)
		}
	}
	if len(values) == 0 {
		return Filter{}, invalid(param, "%s: needs at least one value", op)
	}
	if len(values) > MaxFilterValues {
		return Filter{}, invalid(param, "at most %d values are allowed, got %d", MaxFilterValues, len(values))
	}
	return Filter{Operator: op, Values: values}, nil
}

// parseIntFilter parses a filter whose values are integers.
func parseIntFilter(param, raw string) ([]int64, error) {
	f, err := ParseFilter(param, raw)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(f.Values))
	for i, v := range f.Values {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, invalid(param, "values must be integers, got %s", QuoteInput(v))
		}
		out[i] = n
	}
	return out, nil
}

// ParseDay parses "IS:yyyy-MM-dd", a real calendar date, and returns the
// start of that day in UTC.
func ParseDay(param, raw string) (time.Time, error) {
	if err := CheckText(param, raw); err != nil {
		return time.Time{}, err
	}
	rest, ok := strings.CutPrefix(raw, "IS:")
	if !ok || len(rest) != 10 || rest[4] != '-' || rest[7] != '-' {
		return time.Time{}, invalid(param, "must be IS:yyyy-MM-dd, got %s", QuoteInput(raw))
	}
	day, err := time.Parse("2006-01-02", rest)
	if err != nil {
		return time.Time{}, invalid(param, "%s is not a calendar date", QuoteInput(rest))
	}
	return day, nil
}

// ParseLimit parses a page size: an integer from 1 to max; empty means def.
func ParseLimit(param, raw string, def, max int) (int, error) {
	if raw == "" {
		return def, nil
	}
	if err := CheckText(param, raw); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || n < 1 || n > max {
		return 0, invalid(param, "must be an integer from 1 to %d, got %s", max, QuoteInput(raw))
	}
	return n, nil
}

// ParseOffset parses a number of items to skip: an integer >= 0; empty means 0.
func ParseOffset(param, raw string) (int, error) {
	if raw == "" {
		return 0, nil
	}
	if err := CheckText(param, raw); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || n < 0 {
		return 0, invalid(param, "must be an integer of 0 or more, got %s", QuoteInput(raw))
	}
	return n, nil
}

// ParseArchived parses the archived parameter of the project list: "true",
// "false", or empty (false).
func ParseArchived(raw string) (bool, error) {
	if err := CheckText("archived", raw); err != nil {
		return false, err
	}
	switch raw {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, invalid("archived", "must be true or false, got %s", QuoteInput(raw))
}

// parseQuery checks a free-text query and returns it lower-cased.
func parseQuery(param, raw string) (string, error) {
	if err := CheckText(param, raw); err != nil {
		return "", err
	}
	if utf8.RuneCountInString(raw) > MaxQueryLength {
		return "", invalid(param, "must be at most %d characters", MaxQueryLength)
	}
	if strings.ContainsFunc(raw, unicode.IsControl) {
		return "", invalid(param, "must be text without control characters")
	}
	return strings.ToLower(raw), nil
}

// EventSearchParams are the raw query-string parameters of
// GET /api/admin/search/events; every one is optional. FilterParams
// declares them (FilterParam.Value and Set read and write them by name).
type EventSearchParams struct {
	Query       string
	Feature     string
	Project     string
	Type        string
	CreatedBy   string
	Environment string
	ID          string
	GroupID     string
	From        string
	To          string
	Offset      string
	Limit       string
	// After is the cursor of a Link rel="next" (keyset paging, cursor.go):
	// the page starts after the event it names. Offset must be 0.
	After string
}

// TextScope says which texts of an event a free-text query matches.
type TextScope int

const (
	// TextPayload: the JSON of data, preData and tags (the query-string search).
	TextPayload TextScope = iota
	// TextPayloadTypeCreator: also the type and createdBy (the deprecated search).
	TextPayloadTypeCreator
)

// EventQuery is a parsed event search, what a Store executes. Empty slices
// mean "no filter"; a non-empty slice means "the column is one of these"
// (exact, case-sensitive); a null column never matches a filter.
// ColumnFilters yields those slices with the column each selects on (as
// FilterParams declares them); Matches is their meaning.
type EventQuery struct {
	Features         []string
	Projects         []string
	Types            []string
	Environments     []string
	CreatedByUserIDs []int64
	IDs              []int64
	GroupIDs         []string
	// From: createdAt at or after. Before: createdAt strictly before.
	From, Before *time.Time
	// Text is the lower-cased free-text query; empty means none. It matches
	// as a literal substring (no wildcards) of the texts SearchTexts returns.
	Text      string
	TextScope TextScope
	// RequireProject hides events whose project is null.
	RequireProject bool
	// HiddenProjects hides events naming any of these projects: whose
	// project is one of them or, comma-joined, includes one (ProjectHidden).
	HiddenProjects []string
	// Limit and Offset page the result, ordered by createdAt then id, both descending.
	Limit, Offset int
	// After, when set, starts the page after this position (keyset paging,
	// see AfterCursor); Offset is then 0. Like Limit and Offset it does not
	// change the total.
	After *EventPosition
}

// PageEnd is how many matches, in search order, a page of q reaches:
// Offset+Limit, or Limit after a cursor; math.MaxInt when the sum does not
// fit in an int (an offset is any integer of 0 or more).
func (q EventQuery) PageEnd() int {
	if q.After != nil {
		return q.Limit
	}
	if q.Offset > math.MaxInt-q.Limit {
		return math.MaxInt
	}
	return q.Offset + q.Limit
}

// EventPage is a page of events with the count of all matches.
type EventPage struct {
	Events []Event `json:"events"`
	Total  int     `json:"total"`
	// Next is the cursor of the next page (EventSearchParams.After) when
	// this page of the query-string search is not the last one, else "".
	// It is not part of the body: the transport sends it as a Link header.
	Next string `json:"-"`
}

// ParseEventSearch turns query-string parameters into an EventQuery, or a
// *ValidationError naming every offending parameter. It parses the
// parameters the search takes (FilterParams), in their declared order.
func ParseEventSearch(p EventSearchParams) (EventQuery, error) {
	q := EventQuery{TextScope: TextPayload}
	v := &ValidationError{}
	collect := func(err error) {
		if ve, ok := err.(*ValidationError); ok {
			v.Fields = append(v.Fields, ve.Fields...)
		}
	}
	for _, f := range filterParams {
		if f.Uses.Has(UseSearch) {
			collect(f.parse(&q, f.Value(&p)))
		}
	}
	if q.From != nil && q.Before != nil && !q.From.Before(*q.Before) {
		collect(invalid("from", "must not be after to"))
	}
	if len(v.Fields) > 0 {
		return EventQuery{}, v
	}
	return q, nil
}

// DeprecatedSearchRequest is the body of POST /api/admin/events/search. Every
// field is optional; an empty string counts as absent.
type DeprecatedSearchRequest struct {
	Type    *string `json:"type,omitempty"`
	Project *string `json:"project,omitempty"`
	Feature *string `json:"feature,omitempty"`
	Query   *string `json:"query,omitempty"`
	Limit   *int    `json:"limit,omitempty"`
	// Offset is the number of matching events to skip (not an event id).
	Offset *int `json:"offset,omitempty"`
}

// ParseDeprecatedSearch turns a deprecated search body into an EventQuery.
func ParseDeprecatedSearch(r DeprecatedSearchRequest) (EventQuery, error) {
	q := EventQuery{TextScope: TextPayloadTypeCreator, Limit: DeprecatedDefaultLimit}
	v := &ValidationError{}
	for _, f := range []struct {
		path string
		raw  *string
		dst  *[]string
	}{{"type", r.Type, &q.Types}, {"project", r.Project, &q.Projects}, {"feature", r.Feature, &q.Features}} {
		s := deref(f.raw)
		if s == "" {
			continue
		}
		if err := CheckText(f.path, s); err != nil {
			v.Fields = append(v.Fields, err.Fields...)
			continue
		}
		*f.dst = []string{s}
	}
	for _, t := range q.Types {
		if !IsKnownEventType(t) {
			v.Fields = append(v.Fields, FieldError{Path: "type", Message: "unknown event type " + QuoteInput(t)})
		}
	}
	if s := deref(r.Query); s != "" {
		text, err := parseQuery("query", s)
		if err != nil {
			v.Fields = append(v.Fields, err.(*ValidationError).Fields...)
		}
		q.Text = text
	}
	if r.Limit != nil {
		if *r.Limit < 1 || *r.Limit > DeprecatedMaxLimit {
			v.Fields = append(v.Fields, FieldError{Path: "limit", Message: "must be an integer from 1 to " + strconv.Itoa(DeprecatedMaxLimit)})
		}
		q.Limit = *r.Limit
	}
	if r.Offset != nil {
		if *r.Offset < 0 {
			v.Fields = append(v.Fields, FieldError{Path: "offset", Message: "must be an integer of 0 or more"})
		}
		q.Offset = *r.Offset
	}
	if len(v.Fields) > 0 {
		return EventQuery{}, v
	}
	return q, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
