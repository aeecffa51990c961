package unleashimport

import (
	"strings"
	"testing"
)

// TestProgressCountsRows: the progress of a table says "1 row", "2 rows".
func TestProgressCountsRows(t *testing.T) {
	var out strings.Builder
	p := newProgress(&out)
	p.table("groups", 1)
	p.table("users", 2)
	for _, want := range []string{"read groups: 1 row in ", "read users: 2 rows in "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("progress %q, want %q", out.String(), want)
		}
	}
}
