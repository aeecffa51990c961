package bunstore

import (
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestDaySeekWhateverTheVisibility checks which large offsets skip whole
// days: every caller's page with no column filter does, admins' and those
// who cannot see some private projects (hidden) alike, since a page of a
// non-admin at a deep offset otherwise skips up to the whole history one
// index entry at a time. Column filters do not (their days are not counted).
// TestDayCounts checks that the seeking pages are the reference's.
func TestDaySeekWhateverTheVisibility(t *testing.T) {
	for _, c := range []struct {
		q    flagadmin.EventQuery
		seek bool
	}{
		{flagadmin.EventQuery{Limit: 50, Offset: 5000}, true},
		{flagadmin.EventQuery{Limit: 50, Offset: 5000, RequireProject: true}, true},
		{flagadmin.EventQuery{Limit: 50, Offset: 5000, HiddenProjects: []string{"secret"}}, true},
		{flagadmin.EventQuery{Limit: 50, Offset: 5000, RequireProject: true, HiddenProjects: []string{"a", "b"}}, true},
		{flagadmin.EventQuery{Limit: 50, Offset: 999, HiddenProjects: []string{"secret"}}, false},
		{flagadmin.EventQuery{Limit: 50, Offset: 5000, Types: []string{"feature-created"}}, false},
		{flagadmin.EventQuery{Limit: 50, Offset: 5000, Projects: []string{"p"}, HiddenProjects: []string{"secret"}}, false},
	} {
		if got := planTotal(c.q).seekable(c.q); got != c.seek {
			t.Errorf("%+v: seeks %v, want %v", c.q, got, c.seek)
		}
	}
}
