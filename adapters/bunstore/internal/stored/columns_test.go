package stored

import (
	"slices"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// TestColumnName: a field's column is its name in snake case.
func TestColumnName(t *testing.T) {
	for _, c := range []struct{ field, want string }{
		{"id", "id"}, {"createdAt", "created_at"}, {"createdByUserId", "created_by_user_id"},
		{"featureName", "feature_name"}, {"preData", "pre_data"}, {"groupId", "group_id"},
	} {
		if got := ColumnName(c.field); got != c.want {
			t.Errorf("ColumnName(%q): got %q, want %q", c.field, got, c.want)
		}
	}
}

// TestEventColumnsFollowTheDeclaration: every declared field of an Event
// has its column in a row, in the declared order, and every column
// filter's column is one of them: a field or filter added to the domain
// fails here until the store keeps it.
func TestEventColumnsFollowTheDeclaration(t *testing.T) {
	fields := flagadmin.EventFields()
	if len(EventColumns) != len(fields) {
		t.Fatalf("EventColumns: %d columns, the domain declares %d fields", len(EventColumns), len(fields))
	}
	for i, f := range fields {
		if EventColumns[i] != ColumnName(f.Name) {
			t.Errorf("EventColumns[%d]: got %q, want %q (the column of %s)", i, EventColumns[i], ColumnName(f.Name), f.Name)
		}
		if !slices.Contains(RowColumns, EventColumns[i]) {
			t.Errorf("the row (Event) has no column %q for the declared field %s", EventColumns[i], f.Name)
		}
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

// TestRowCarriesEveryField: an event with every declared field set comes
// back from its row (EventOf, then Event) with each of them, and the row's
// Values follow RowColumns.
func TestRowCarriesEveryField(t *testing.T) {
	e := eventtest.Full(t)
	r, err := EventOf(e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := r.Event()
	if err != nil {
		t.Fatal(err)
	}
	if d := eventtest.Diff(e, back); d != nil {
		t.Errorf("EventOf then Event lost fields: %q", d)
	}
	values := r.Values()
	if len(values) != len(RowColumns) {
		t.Fatalf("Values: %d values, %d RowColumns", len(values), len(RowColumns))
	}
	for i, c := range RowColumns {
		if c == "feature_name" && *values[i].(*string) != *e.FeatureName || c == "id" && values[i] != e.ID || c == "salt" && len(values[i].([]byte)) != len(e.Salt) {
			t.Errorf("Values[%d] (%s): got %v", i, c, values[i])
		}
	}
}
