package eventcounts

import (
	"testing"

	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestDimsNameDeclaredColumns: each column with counts is the column of a
// declared filter (a misspelt name would leave its filter uncounted).
func TestDimsNameDeclaredColumns(t *testing.T) {
	declared := map[string]bool{}
	for _, p := range flagadmin.FilterParams() {
		if p.Column != "" {
			declared[p.Column] = true
		}
	}
	for col := range dimOf {
		if !declared[col] {
			t.Errorf("dimOf names %q, which no declared filter selects on", col)
		}
	}
}

// TestUncountedFiltersAreCounted: a filter on a column without counts
// (id, groupId) is answered by counting, alone or beside a counted one.
func TestUncountedFiltersAreCounted(t *testing.T) {
	for _, q := range []flagadmin.EventQuery{
		{IDs: []int64{1}, Limit: 10},
		{GroupIDs: []string{"g"}, Limit: 10},
		{GroupIDs: []string{"g"}, Types: []string{"feature-created"}, Limit: 10},
	} {
		if p := PlanFor(dialect.SQLite, q); p.kind != planNone {
			t.Errorf("PlanFor(%+v): got plan kind %v, want none (count)", q, p.kind)
		}
	}
	if p := PlanFor(dialect.SQLite, flagadmin.EventQuery{Types: []string{"feature-created"}, Limit: 10}); p.kind == planNone {
		t.Errorf("PlanFor(type): got no plan, want one from the counts")
	}
}
