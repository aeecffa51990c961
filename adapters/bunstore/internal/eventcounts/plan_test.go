package eventcounts

import (
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/dialect"

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
		if got := PlanFor(dialect.SQLite, c.q).Seeks(); got != c.seek {
			t.Errorf("%+v: seeks %v, want %v", c.q, got, c.seek)
		}
	}
}

// TestDays checks the day and month numbers of stored times, before 1970,
// around it and far from it, and the bounds of date filters.
func TestDays(t *testing.T) {
	for _, c := range []struct {
		at    time.Time
		day   int64
		month int64
	}{
		{time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), 0, 0},
		{time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC), -1, -1},
		{time.Date(1970, 2, 1, 0, 0, 0, 0, time.UTC), 31, 1},
		{time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), 20783, 682},
		{time.Date(999, 12, 31, 23, 59, 59, 999e6, time.UTC), -354286, -11641},
		{time.Date(12000, 3, 1, 0, 0, 0, 0, time.UTC), 3663442, 120362},
	} {
		day := dayOf(c.at.UnixMilli())
		if day != c.day || monthOfDay(day) != c.month {
			t.Errorf("%v: day %d, month %d; want %d, %d", c.at, day, monthOfDay(day), c.day, c.month)
		}
		first := time.UnixMilli(monthStart(c.month) * msPerDay).UTC()
		if first.Day() != 1 || first.Year() != c.at.Year() || first.Month() != c.at.Month() {
			t.Errorf("%v: its month starts %v", c.at, first)
		}
		if got, ok := dayBound(c.at); ok != (c.at.Hour() == 0 && c.at.Minute() == 0 && c.at.Second() == 0 && c.at.Nanosecond() == 0) || ok && got != c.day {
			t.Errorf("%v: dayBound %d, %v", c.at, got, ok)
		}
	}
	if _, ok := dayBound(time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC)); ok {
		t.Errorf("a nanosecond past midnight is a whole day's bound")
	}
}

// TestUncountedValuesAreCounted checks that a plan needing a project or
// value too long for a count row leaves the search to be counted.
func TestUncountedValuesAreCounted(t *testing.T) {
	long := strings.Repeat("x", MaxKeyBytes+1)
	for _, q := range []flagadmin.EventQuery{
		{Limit: 50, Features: []string{long}},
		{Limit: 50, Projects: []string{"p", long}},
		{Limit: 50, HiddenProjects: []string{long}},
		{Limit: 50, Types: []string{"t"}, HiddenProjects: []string{long}},
		{Limit: 50, Offset: 5000, HiddenProjects: []string{long}},
	} {
		if total := PlanFor(dialect.SQLite, q).Total(); !total.Empty() {
			t.Errorf("%+v: total read from the counts: %s", q, total.Text)
		}
	}
	short := strings.Repeat("x", MaxKeyBytes)
	if total := PlanFor(dialect.SQLite, flagadmin.EventQuery{Limit: 50, Features: []string{short}}).Total(); total.Empty() {
		t.Errorf("a feature of %d bytes is not counted", MaxKeyBytes)
	}
}

// TestSubtractRefusesCountsGoneWrong checks that hidden events are taken
// off their periods, and that more hidden events than a period holds, or
// hidden events of a period without a row, are an error.
func TestSubtractRefusesCountsGoneWrong(t *testing.T) {
	ps := []period{{Num: 3, N: 10}, {Num: 2, N: 5}}
	if err := subtract(ps, []period{{Num: 2, N: 5}, {Num: 3, N: 1}}); err != nil || ps[0].N != 9 || ps[1].N != 0 {
		t.Fatalf("got %v, %v; want 9 and 0 left", ps, err)
	}
	for _, less := range [][]period{{{Num: 3, N: 10}}, {{Num: 1, N: 1}}} {
		if err := subtract([]period{{Num: 3, N: 9}, {Num: 2, N: 0}}, less); err == nil {
			t.Errorf("subtract %v: no error", less)
		}
	}
}
