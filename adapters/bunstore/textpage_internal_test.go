package bunstore

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// findCounter are summaries that count the free-text pages FindTextPage
// found, and those it left to the window.
type findCounter struct {
	summaries
	found, declined int
}

func (f *findCounter) FindTextPage(ctx context.Context, db bun.IDB, q flagadmin.EventQuery, rest sqlq.Fragment) ([]int64, int, bool, error) {
	ids, total, found, err := f.summaries.FindTextPage(ctx, db, q, rest)
	if found {
		f.found++
	} else {
		f.declined++
	}
	return ids, total, found, err
}

// TestTextPageFromIndexAgreesWithMemstore: on SQLite, a free-text page is
// found from the FTS5 table in id order, and it is memstore's page
// whatever order the events were created in. Written in the order of
// their creation, every page is found from the index; written newest
// first, or in order but for a few late events dated in the past and a
// few early ones dated ahead, the pages whose check fails are read by the
// window instead: for an admin and for a caller who cannot see a project,
// at offsets up to past the last match.
func TestTextPageFromIndexAgreesWithMemstore(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	const n = 240
	for _, order := range []struct {
		name  string
		when  func(i int) time.Time
		found bool // every page is found from the index
	}{
		{"in creation order", func(i int) time.Time { return at.Add(time.Duration(i) * time.Minute) }, true},
		{"newest first", func(i int) time.Time { return at.Add(time.Duration(n-i) * time.Minute) }, false},
		{"late and early events", func(i int) time.Time {
			switch {
			case i%53 == 7:
				return at.Add(-time.Duration(i) * time.Hour)
			case i%71 == 3:
				return at.Add(time.Duration(n+i) * time.Hour)
			}
			return at.Add(time.Duration(i) * time.Minute)
		}, false},
	} {
		t.Run(order.name, func(t *testing.T) {
			s, err := Open(ctx, dbtest.SQLite(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			counter := &findCounter{summaries: s.summaries}
			s.summaries = counter
			mem := memstore.New()
			projects := []string{"alpha", "beta", "secret"}
			var events []flagadmin.Event
			for i := range n {
				note := fmt.Sprintf("orbit %d", i)
				if i%5 == 0 {
					note += " comet-5"
				}
				data, _ := json.Marshal(map[string]string{"note": note})
				e := flagadmin.Event{CreatedAt: order.when(i), Type: flagadmin.EventFeatureUpdated, CreatedBy: "user", Data: data}
				if i%4 < 3 {
					e.Project = &projects[i%4]
				}
				events = append(events, e)
			}
			for _, st := range []flagadmin.Store{s, mem} {
				if err := st.Write(ctx, &flagadmin.Batch{Events: events}); err != nil {
					t.Fatal(err)
				}
			}
			for _, text := range []string{"orbit", "comet-5", "no-such-text"} {
				for _, hidden := range [][]string{nil, {"secret", flagadmin.AllProjects}} {
					for _, p := range [][2]int{{0, 50}, {0, 1}, {37, 7}, {190, 50}, {239, 1}, {250, 10}} {
						q := flagadmin.EventQuery{Text: text, Offset: p[0], Limit: p[1], RequireProject: hidden != nil, HiddenProjects: hidden}
						want, err := mem.SearchEvents(ctx, q)
						if err != nil {
							t.Fatal(err)
						}
						got, err := s.SearchEvents(ctx, q)
						if err != nil {
							t.Fatal(err)
						}
						if g, w := pageOf(t, got), pageOf(t, want); g != w {
							t.Errorf("%q hiding %v, offset %d limit %d:\ngot  %s\nwant %s", text, hidden, q.Offset, q.Limit, g, w)
						}
					}
				}
			}
			if order.found && counter.declined > 0 || !order.found && counter.declined == 0 || counter.found == 0 {
				t.Errorf("%d pages found from the index, %d read by the window", counter.found, counter.declined)
			}
		})
	}
}

// pageOf is a page's total and its events, without their ids.
func pageOf(t *testing.T, p flagadmin.EventPage) string {
	t.Helper()
	for i := range p.Events {
		p.Events[i].ID = 0
	}
	b, err := json.Marshal(p.Events)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("total %d: %s", p.Total, b)
}

// TestTextPageFromIndexFarFromItsCheck: a page whose check would read more
// of events_created than its bound allows is read by the window, so an
// event dated ahead of the rest, and beyond that bound in time order, is
// on it: 10,000 events in the order of their creation, the query's 101
// matches spread over them, the first of them dated after every other.
func TestTextPageFromIndexFarFromItsCheck(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	s, err := Open(ctx, dbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem := memstore.New()
	var events []flagadmin.Event
	for i := range 10000 {
		note, when := fmt.Sprintf("filler %d", i), at.Add(time.Duration(i)*time.Second)
		if i%100 == 0 || i == 3 {
			note += " beacon"
		}
		if i == 3 {
			when = at.Add(24 * time.Hour)
		}
		data, _ := json.Marshal(map[string]string{"note": note})
		events = append(events, flagadmin.Event{CreatedAt: when, Type: flagadmin.EventFeatureUpdated, CreatedBy: "user", Data: data})
	}
	for _, st := range []flagadmin.Store{s, mem} {
		if err := st.Write(ctx, &flagadmin.Batch{Events: events}); err != nil {
			t.Fatal(err)
		}
	}
	q := flagadmin.EventQuery{Text: "beacon", Limit: 50}
	want, err := mem.SearchEvents(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.SearchEvents(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := pageOf(t, got), pageOf(t, want); g != w {
		t.Errorf("got  %s\nwant %s", g, w)
	}
}
