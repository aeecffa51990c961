package tlog

import "testing"

// TestProblemWordingCounts: counts in problems are singular for one.
func TestProblemWordingCounts(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{missingLeaves(5, 5), "leaf 5 is missing from the log"},
		{missingLeaves(5, 7), "leaves 5 to 7 are missing from the log"},
		{count(1, "leaf", "leaves"), "1 leaf"},
		{count(0, "leaf", "leaves"), "0 leaves"},
		{count(2, "event", "events"), "2 events"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
