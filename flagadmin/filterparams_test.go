package flagadmin_test

import (
	"slices"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestWithColumnFilter: a query narrowed to some values of one column
// filter keeps every other field.
func TestWithColumnFilter(t *testing.T) {
	q := flagadmin.EventQuery{Types: []string{"a", "b"}, IDs: []int64{1, 2}, Projects: []string{"p"}, Limit: 5}
	for c := range q.ColumnFilters() {
		switch c.Param.Column {
		case "type":
			c.Strings = c.Strings[1:]
			got := q.WithColumnFilter(c)
			if !slices.Equal(got.Types, []string{"b"}) || !slices.Equal(got.IDs, q.IDs) || !slices.Equal(got.Projects, q.Projects) || got.Limit != 5 {
				t.Errorf("narrowed type: got %+v", got)
			}
		case "id":
			c.Ints = []int64{2}
			if got := q.WithColumnFilter(c); !slices.Equal(got.IDs, []int64{2}) || !slices.Equal(got.Types, q.Types) {
				t.Errorf("narrowed id: got %+v", got)
			}
		}
	}
	if !slices.Equal(q.Types, []string{"a", "b"}) {
		t.Errorf("the original query changed: %+v", q)
	}
}
