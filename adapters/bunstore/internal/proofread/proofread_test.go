package proofread

import (
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// TestStatementTextDependsOnTheShapeOnly: two proofs in a tree of one
// size, of different events, have one text (PostgreSQL keeps it
// prepared), and MySQL's divides as MySQL does.
func TestStatementTextDependsOnTheShapeOnly(t *testing.T) {
	query := func(id int64) vlog.ProofQuery {
		return vlog.ProofQuery{
			Event:   &flagadmin.EventQuery{IDs: []int64{id}},
			Windows: []vlog.HashWindow{{Level: 0, Width: 16, End: 1000}, {Level: 4, Width: 16, End: 62}},
			Ranges:  []vlog.HashRange{{Level: 0, Start: 992, End: 1000}, {Level: 4, Start: 48, End: 62}},
		}
	}
	filter := func(id int64) sqlq.Fragment { return sqlq.F("id = ?", id) }
	a, argsA := Statement(query(7), filter(7), "/").Dollar()
	b, argsB := Statement(query(900), filter(900), "/").Dollar()
	if a != b {
		t.Errorf("texts differ:\n%s\n%s", a, b)
	}
	if len(argsA) != len(argsB) || argsA[0] != int64(7) || argsB[0] != int64(900) {
		t.Errorf("values: got %v and %v, want the event ids first", argsA, argsB)
	}
	for _, want := range []string{"h.level = 4 AND", "leaf.idx / $", "MAX(idx) + 1", "SELECT 0 AS k"} {
		if !strings.Contains(a, want) {
			t.Errorf("the statement lacks %q: %s", want, a)
		}
	}
	if m := Statement(query(7), filter(7), "DIV").Text; !strings.Contains(m, "leaf.idx DIV ?") || strings.Contains(m, "leaf.idx / ") {
		t.Errorf("MySQL's statement: %s", m)
	}
	// Without an event: the ranges and the size only.
	c := Statement(vlog.ProofQuery{Ranges: []vlog.HashRange{{Level: 8, Start: 1, End: 2}}}, sqlq.Fragment{}, "/").Text
	if strings.Contains(c, "leaf") || strings.Contains(c, "events") || !strings.HasPrefix(c, "SELECT 3 AS k, 8 AS lvl") {
		t.Errorf("the statement without an event: %s", c)
	}
}
