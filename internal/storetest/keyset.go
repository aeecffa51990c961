package storetest

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// tiesFixture has 60 events over only 4 distinct milliseconds, so most
// pages begin and end inside a run of events that share their createdAt:
// in projects default (open), alt (open) and secret (private, member
// Max), and every seventh without a project; every third mentions
// "needle" in its data, and types alternate between feature-updated and
// feature-created. The events are written in an order that interleaves
// the times, so that id order is not createdAt order.
func tiesFixture() (*flagadmin.Seed, []namedEvent) {
	seed := accounts()
	seed.Projects = []flagadmin.Project{
		{ID: "default", Name: "Default", Mode: flagadmin.ModeOpen},
		{ID: "alt", Name: "Alt", Mode: flagadmin.ModeOpen},
		{ID: "secret", Name: "Secret", Mode: flagadmin.ModePrivate, Members: []flagadmin.ProjectMembership{userMember(maxID, flagadmin.ProjectRoleMember)}},
	}
	times := []string{"2025-03-01T10:00:00.123Z", "2025-03-01T10:00:00.124Z", "2025-02-01T00:00:00.000Z", "2025-03-05T08:30:00.999Z"}
	projects := []string{"default", "alt", "secret"}
	var out []namedEvent
	for i := range 60 {
		var project *string
		typ := flagadmin.EventFeatureUpdated
		if i%2 == 1 {
			typ = flagadmin.EventFeatureCreated
		}
		if i%7 != 6 {
			project = str(projects[i%3])
		}
		data := fmt.Sprintf(`{"n": %d}`, i)
		if i%3 == 0 {
			data = fmt.Sprintf(`{"n": %d, "note": "needle"}`, i)
		}
		out = append(out, namedEvent{"t" + strconv.Itoa(i), ev(typ, "system", i64(flagadmin.SystemUserID), times[(i*3)%len(times)], project, nil, nil, data)})
	}
	return seed, out
}

// walk follows page.Next from the first page of params as p, calling
// between(page number) after each page, and returns every event in the
// order seen with the totals of the pages. It fails the case after 1,000
// pages, which no walk of the suite needs.
func (w *world) walk(t *testing.T, p flagadmin.Principal, params flagadmin.EventSearchParams, between func(n int)) (events []flagadmin.Event, totals []int) {
	t.Helper()
	for n := 0; ; n++ {
		if n == 1000 {
			t.Fatalf("the walk of %+v did not end after 1000 pages", params)
		}
		page := w.search(t, p, params)
		events = append(events, page.Events...)
		totals = append(totals, page.Total)
		if page.Next == "" {
			return events, totals
		}
		if len(page.Events) == 0 {
			t.Fatalf("page %d of %+v is empty but has a next cursor", n, params)
		}
		params.Offset, params.After = "", page.Next
		if between != nil {
			between(n)
		}
	}
}

// reference returns every event the search of params finds for p, in the
// search's order, read as one page.
func (w *world) reference(t *testing.T, p flagadmin.Principal, params flagadmin.EventSearchParams) []flagadmin.Event {
	t.Helper()
	params.Limit, params.Offset, params.After = strconv.Itoa(flagadmin.SearchMaxLimit), "", ""
	page := w.search(t, p, params)
	if page.Total != len(page.Events) {
		t.Fatalf("the reference search of %+v found %d of %d events", params, len(page.Events), page.Total)
	}
	return page.Events
}

func keysetCases() []testCase {
	walks := []struct {
		name   string
		secret string
		params params
	}{
		{"no filter by 7", adminSecret, params{Limit: "7"}},
		{"no filter by 1", adminSecret, params{Limit: "1"}},
		{"no filter by 10, an exact divisor", adminSecret, params{Limit: "10"}},
		{"a project filter", adminSecret, params{Project: "IS:alt", Limit: "4"}},
		{"IS_ANY_OF of two projects", adminSecret, params{Project: "IS_ANY_OF:alt,secret", Limit: "3"}},
		{"two filters", adminSecret, params{Project: "IS_ANY_OF:default,alt", Type: "IS:feature-created", Limit: "4"}},
		{"a date range", adminSecret, params{From: "IS:2025-03-01", To: "IS:2025-03-01", Limit: "6"}},
		{"free text", adminSecret, params{Query: "needle", Limit: "3"}},
		{"free text and a project", adminSecret, params{Query: "needle", Project: "IS:default", Limit: "2"}},
		{"as a Viewer", vicSecret, params{Limit: "6"}},
		{"as a member of the private project", maxSecret, params{Limit: "5"}},
		{"as a Viewer with free text", vicSecret, params{Query: "needle", Limit: "2"}},
		{"starting at an offset", adminSecret, params{Offset: "13", Limit: "8"}},
	}
	var cases []testCase
	for _, c := range walks {
		cases = append(cases, testCase{"keyset/walk/" + c.name, func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			p := w.as(c.secret)
			want := w.reference(t, p, c.params)
			if off, _ := strconv.Atoi(c.params.Offset); off > 0 {
				want = want[off:]
			}
			got, totals := w.walk(t, p, c.params, nil)
			if g, wn := w.eventNames(got), w.eventNames(want); !slices.Equal(g, wn) {
				t.Errorf("the walk visited\n%v\nwant\n%v", g, wn)
			}
			full := len(w.reference(t, p, c.params))
			for i, total := range totals {
				if total != full {
					t.Errorf("page %d: got total %d, want %d (every match, ignoring paging)", i, total, full)
				}
			}
			limit, _ := strconv.Atoi(c.params.Limit)
			if pages := max(1, (len(want)+limit-1)/limit); len(totals) != pages {
				t.Errorf("the walk took %d pages, want %d (a next link on every page but the last)", len(totals), pages)
			}
		}})
	}
	cases = append(cases,
		testCase{"keyset/walk while events are written visits the events of its start exactly once", func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			p := w.as(adminSecret)
			want := w.reference(t, p, params{})
			newest := want[0].CreatedAt
			written := 0
			got, _ := w.walk(t, p, params{Limit: "6"}, func(n int) {
				// New events as the service writes them: at the newest
				// millisecond or later (server time), in every project.
				var b flagadmin.Batch
				for i := range 3 {
					e := ev(flagadmin.EventFeatureUpdated, "system", nil, "2025-01-01T00:00:00Z", str([]string{"default", "alt", "secret"}[i]), nil, nil, `{"note": "needle, new"}`)
					e.CreatedAt = newest.Add(time.Duration(n%2) * time.Millisecond)
					b.Events = append(b.Events, e)
				}
				wantNoError(t, "Store.Write", w.store.Write(w.ctx, &b))
				written += len(b.Events)
			})
			if g, wn := w.eventNames(got), w.eventNames(want); !slices.Equal(g, wn) {
				t.Errorf("the walk visited\n%v\nwant\n%v", g, wn)
			}
			if written == 0 {
				t.Fatal("no events were written during the walk")
			}
			if n := len(w.reference(t, p, params{})); n != len(want)+written {
				t.Errorf("got %d events after the walk, want %d", n, len(want)+written)
			}
		}},
		testCase{"keyset/the last page has no next cursor and a cursor past the end gives an empty page", func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			p := w.as(adminSecret)
			all := w.reference(t, p, params{})
			last := flagadmin.EncodeCursor(flagadmin.PositionOf(all[len(all)-1]))
			page := w.search(t, p, params{After: last})
			w.wantPage(t, page, len(all))
			wantEqual(t, "next after the last event", page.Next, "")
			full := w.search(t, p, params{Limit: strconv.Itoa(len(all))})
			wantEqual(t, "next of a page holding every match", full.Next, "")
			short := w.search(t, p, params{Limit: strconv.Itoa(len(all) - 1)})
			if short.Next == "" {
				t.Error("a page holding all but one match has no next cursor")
			}
			rest := w.search(t, p, params{After: short.Next})
			w.wantPage(t, rest, len(all), w.eventNames(all[len(all)-1:])...)
		}},
		testCase{"keyset/a cursor names a position, not an event: it works after its event is gone from the matches", func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			p := w.as(adminSecret)
			all := w.reference(t, p, params{})
			// The cursor of a default event, used with a filter it does not match.
			var at int
			for i, e := range all {
				if e.Project != nil && *e.Project == "default" && i > 10 {
					at = i
					break
				}
			}
			cursor := flagadmin.EncodeCursor(flagadmin.PositionOf(all[at]))
			var want []flagadmin.Event
			for _, e := range all[at+1:] {
				if e.Project != nil && *e.Project == "alt" {
					want = append(want, e)
				}
			}
			page := w.search(t, p, params{Project: "IS:alt", After: cursor, Limit: "1000"})
			if g, wn := w.eventNames(page.Events), w.eventNames(want); !slices.Equal(g, wn) {
				t.Errorf("got %v, want %v", g, wn)
			}
		}},
		testCase{"keyset/bad cursors and after with an offset are 400 on after", func(t *testing.T, w *world) {
			w.fixture(tiesFixture())
			p := w.as(adminSecret)
			good := flagadmin.EncodeCursor(flagadmin.EventPosition{CreatedAt: at("2025-03-01T10:00:00.123Z"), ID: 5})
			flip := "A"
			if good[len(good)-1] == 'A' {
				flip = "B"
			}
			for _, bad := range []string{"x", good + "A", good[:len(good)-1] + flip, "AAAAAAAAAAAAAAAAAAAAAAAAAAAA", "%%%", good[:10] + "+" + good[11:]} {
				_, err := w.svc.SearchEvents(w.ctx, p, params{After: bad})
				wantValidation(t, err, "after")
			}
			_, err := w.svc.SearchEvents(w.ctx, p, params{After: good, Offset: "5"})
			wantValidation(t, err, "after")
			_, err = w.svc.SearchEvents(w.ctx, p, params{After: good, Offset: "0"})
			wantNoError(t, "after with offset 0", err)
		}},
	)
	return cases
}
