package stored

import (
	"slices"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestEventColumnsFollowTheDeclaration: every declared field of an Event
// has its column, in the declared order, and every column filter's column
// is one of them: a field or filter added to the domain fails here until
// the store keeps it.
func TestEventColumnsFollowTheDeclaration(t *testing.T) {
	var want []string
	for _, f := range flagadmin.EventFields() {
		c, ok := columns[f.Name]
		if !ok {
			t.Fatalf("the event field %q has no column", f.Name)
		}
		want = append(want, c)
	}
	if !slices.Equal(EventColumns, want) {
		t.Errorf("EventColumns: got %v, want %v (the declared fields' columns, in order)", EventColumns, want)
	}
	if len(columns) != len(want) {
		t.Errorf("columns maps %d fields, the domain declares %d", len(columns), len(want))
	}
	for _, p := range flagadmin.FilterParams() {
		if p.Column == "" {
			continue
		}
		if _, ok := columns[p.Column]; !ok {
			t.Errorf("filter %q selects on %q, which has no column", p.Name, p.Column)
		}
	}
}
