package stored

import (
	"slices"
	"strings"
	"testing"
)

func TestChunks(t *testing.T) {
	small := Event{Type: "feature-created"}
	big := strings.Repeat("x", MaxInsertBytes/3)
	large := Event{SearchPayload: big, Data: &big}
	huge := strings.Repeat("y", MaxInsertBytes+1)
	for _, c := range []struct {
		name    string
		rows    []Event
		maxRows int
		want    []int // the runs' lengths
	}{
		{"by rows", []Event{small, small, small, small, small}, 2, []int{2, 2, 1}},
		{"by bytes", []Event{large, large, large, large, small}, 10, []int{1, 1, 1, 2}}, // two thirds of the bound each
		{"a row past the bound alone", []Event{small, {SearchPayload: huge}, small}, 10, []int{1, 1, 1}},
		{"none", nil, 10, nil},
	} {
		var got []int
		next := 0
		for start, part := range Chunks(c.rows, c.maxRows) {
			if start != next {
				t.Errorf("%s: a run starts at %d, want %d", c.name, start, next)
			}
			next = start + len(part)
			got = append(got, len(part))
		}
		if next != len(c.rows) || !slices.Equal(got, c.want) {
			t.Errorf("%s: runs %v covering %d rows, want %v covering %d", c.name, got, next, c.want, len(c.rows))
		}
	}
}
