package pgpage

import "testing"

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{"-7", -7, true},
		{"123456789012345678", 123456789012345678, true},
		{"1234567890123456789", 0, false}, // 19 digits: left to pgx
		{"", 0, false},
		{"-", 0, false},
		{"1.5", 0, false},
		{"+1", 0, false},
	}
	for _, tc := range tests {
		got, ok := parseDecimal([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseDecimal(%q): got %d, %v, want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
