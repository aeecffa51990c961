package pgpage

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestGenericPlanSafe(t *testing.T) {
	day := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		q    flagadmin.EventQuery
		want bool
	}{
		{"no filter", flagadmin.EventQuery{Limit: 50}, true},
		{"one type", flagadmin.EventQuery{Limit: 50, Types: []string{"a"}}, true},
		{"one project and a date range", flagadmin.EventQuery{Limit: 50, Projects: []string{"p"}, From: &day, Before: &day}, true},
		{"one creator, hidden projects", flagadmin.EventQuery{Limit: 50, CreatedByUserIDs: []int64{1}, RequireProject: true, HiddenProjects: []string{"p", "q"}}, true},
		{"date range, one hidden project", flagadmin.EventQuery{Limit: 50, From: &day, HiddenProjects: []string{"p"}}, true},
		{"two types, read apart", flagadmin.EventQuery{Limit: 50, Types: []string{"a", "b"}}, true},
		{"five projects and a date range, read apart", flagadmin.EventQuery{Limit: 50, Projects: []string{"a", "b", "c", "d", "e"}, From: &day}, true},
		{"two types, hidden projects", flagadmin.EventQuery{Limit: 50, Types: []string{"a", "b"}, RequireProject: true}, false},
		{"two types, a deep page", flagadmin.EventQuery{Limit: 50, Offset: 951, Types: []string{"a", "b"}}, false},
		{"nine types", flagadmin.EventQuery{Limit: 50, Types: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}, false},
		{"a type twice", flagadmin.EventQuery{Limit: 50, Types: []string{"a", "a"}}, false},
		{"type and project", flagadmin.EventQuery{Limit: 50, Types: []string{"a"}, Projects: []string{"p"}}, false},
		{"feature and group", flagadmin.EventQuery{Limit: 50, Features: []string{"f"}, GroupIDs: []string{"g1"}}, false},
		{"date range, two hidden projects", flagadmin.EventQuery{Limit: 50, Before: &day, HiddenProjects: []string{"p", "q"}}, true},
		{"free text", flagadmin.EventQuery{Limit: 50, Text: "x"}, false},
	}
	for _, tc := range tests {
		if got := GenericPlanSafe(tc.q); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPreparedPlaceholders builds the prepared statement of queries of
// every shape (split filters, a cursor, hidden projects, an offset): each
// $n of the text has its argument, each argument its $n, and no value is
// written into the text.
func TestPreparedPlaceholders(t *testing.T) {
	from := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	before := from.AddDate(0, 2, 0)
	after := &flagadmin.EventPosition{CreatedAt: from, ID: 42}
	where := func(q flagadmin.EventQuery) sqlq.Fragment {
		var conds []sqlq.Fragment
		if len(q.Types) > 0 {
			conds = append(conds, sqlq.In("type", q.Types))
		}
		if len(q.Projects) > 0 {
			conds = append(conds, sqlq.In("project", q.Projects))
		}
		if q.From != nil {
			conds = append(conds, sqlq.F("created_at >= ?", q.From.UnixMilli()))
		}
		if q.After != nil {
			conds = append(conds, sqlq.F("(created_at, id) < (?, ?)", q.After.CreatedAt.UnixMilli(), q.After.ID))
		}
		if len(conds) == 0 {
			return sqlq.F("1 = 1")
		}
		return sqlq.And(conds...)
	}
	for _, q := range []flagadmin.EventQuery{
		{Limit: 50},
		{Limit: 50, Offset: 20, Types: []string{"a-type"}},
		{Limit: 50, Types: []string{"a-type", "b-type", "c-type"}, From: &from},
		{Limit: 50, Projects: []string{"p-project", "q-project"}, After: after},
		{Limit: 50, Projects: []string{"p-project"}, From: &from, Before: &before},
	} {
		text, args := Prepared(summary.Page{Query: q, Total: sqlq.Fill("(SELECT COUNT(*) FROM events WHERE ?)", where(q)), Where: where})
		values := args[1:]
		for n := 1; n <= len(values)+1; n++ {
			p := "$" + strconv.Itoa(n)
			in := strings.Contains(text+" ", p+" ") || strings.Contains(text, p+",") || strings.Contains(text, p+")")
			if in != (n <= len(values)) {
				t.Errorf("%+v: %s in the text: %v, with %d values\n%s", q, p, in, len(values), text)
			}
		}
		for _, v := range append(q.Types, q.Projects...) {
			if strings.Contains(text, v) {
				t.Errorf("%+v: the prepared statement holds the value %q: %s", q, v, text)
			}
		}
	}
}
