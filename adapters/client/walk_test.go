package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// cursorServer serves n events (ids n..1, newest first) the way keyset
// paging pages them: pages of limit, and a Link rel="next" carrying the
// request's query without offset and with after=<cursor> on every page but
// the last. It refuses a request that mixes after and offset, and records
// the query of every request.
type cursorServer struct {
	n       int
	prefix  string // path prefix the server is mounted under
	hits    atomic.Int64
	queries []url.Values
	link    func(next string) string // the Link header of a page whose next URL is next
}

func (s *cursorServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	q := r.URL.Query()
	s.queries = append(s.queries, q)
	if r.URL.Path != s.prefix+"/api/admin/search/events" || r.Header.Get("Authorization") != adminToken {
		http.Error(w, "wrong path or token", http.StatusTeapot)
		return
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	first := s.n // id of the first event of the page
	if a := q.Get("after"); a != "" {
		if q.Get("offset") != "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		id, _ := strconv.Atoi(a[len("c-"):])
		first = id - 1
	}
	var events []flagadmin.Event
	for id := first; id >= 1 && len(events) < limit; id-- {
		events = append(events, flagadmin.Event{ID: int64(id), Type: "feature-updated", CreatedBy: "ada",
			CreatedAt: time.Date(2025, 1, 1, 0, 0, id, 0, time.UTC)})
	}
	if len(events) > 0 && events[len(events)-1].ID > 1 {
		next := url.Values{}
		for k, v := range q {
			if k != "offset" {
				next[k] = v
			}
		}
		next.Set("after", fmt.Sprintf("c-%d", events[len(events)-1].ID))
		w.Header().Set("Link", s.link(r.URL.Path+"?"+next.Encode()))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"events": events, "total": s.n})
}

// TestEventsFollowsLink walks a server that sends Link rel="next": every
// event once, in order, by cursor (no offset after the first page), with
// the filters and the token kept; under a path prefix too.
func TestEventsFollowsLink(t *testing.T) {
	for _, tt := range []struct {
		name, prefix string
		link         func(string) string
	}{
		{"plain", "", func(next string) string { return "<" + next + `>; rel="next"` }},
		{"prefix and several links", "/flags", func(next string) string {
			return `</api/admin/search/events>; rel="successor-version", <` + next + `>; rel="prev next"; title="a, b"`
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := &cursorServer{n: 23, prefix: tt.prefix, link: tt.link}
			srv := httptest.NewServer(cs)
			defer srv.Close()
			c := newClient(t, srv.URL+tt.prefix, adminToken)
			var got []int64
			for ev, err := range c.Events(context.Background(), flagadmin.EventSearchParams{Limit: "5", Type: "IS_ANY_OF:feature-updated,x", Offset: "0"}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev.ID)
			}
			var want []int64
			for id := int64(23); id >= 1; id-- {
				want = append(want, id)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if cs.hits.Load() != 5 {
				t.Errorf("%d requests, want 5 pages", cs.hits.Load())
			}
			for i, q := range cs.queries[1:] {
				if q.Get("after") == "" || q.Has("offset") || q.Get("type") != "IS_ANY_OF:feature-updated,x" || q.Get("limit") != "5" {
					t.Errorf("request %d: query %v, want after, the type filter, limit 5 and no offset", i+2, q)
				}
			}
		})
	}
}

// TestEventsLinkElsewhere refuses a next link to another host: the token
// would go with it.
func TestEventsLinkElsewhere(t *testing.T) {
	cs := &cursorServer{n: 10, link: func(next string) string { return "<http://evil.example" + next + `>; rel="next"` }}
	srv := httptest.NewServer(cs)
	defer srv.Close()
	c := newClient(t, srv.URL, adminToken)
	var events, errs int
	for _, err := range c.Events(context.Background(), flagadmin.EventSearchParams{Limit: "5"}) {
		if err != nil {
			errs++
		} else {
			events++
		}
	}
	if events != 0 || errs != 1 || cs.hits.Load() != 1 {
		t.Errorf("%d events, %d errors, %d requests; want 0, 1, 1", events, errs, cs.hits.Load())
	}
}

// TestEventsBreakStopsCursorWalk checks that breaking out of a cursor walk
// makes no further request.
func TestEventsBreakStopsCursorWalk(t *testing.T) {
	cs := &cursorServer{n: 50, link: func(next string) string { return "<" + next + `>; rel="next"` }}
	srv := httptest.NewServer(cs)
	defer srv.Close()
	c := newClient(t, srv.URL, adminToken)
	n := 0
	for _, err := range c.Events(context.Background(), flagadmin.EventSearchParams{Limit: "10"}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 10 {
			break
		}
	}
	if cs.hits.Load() != 1 {
		t.Errorf("%d requests after breaking at the end of the first page, want 1", cs.hits.Load())
	}
}

// TestEventsOffsetSkipsShifted checks that an offset walk does not yield an
// event twice when an insert shifts the pages between two requests.
func TestEventsOffsetSkipsShifted(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		newest := 10
		if hits.Add(1) > 1 {
			newest = 12 // two events written after the first page
		}
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		var events []flagadmin.Event
		for id := newest - offset; id >= 1 && len(events) < limit; id-- {
			events = append(events, flagadmin.Event{ID: int64(id), Type: "feature-updated", CreatedBy: "ada", CreatedAt: time.Unix(int64(id), 0)})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"events": events, "total": newest})
	}))
	defer srv.Close()
	var got []int64
	for ev, err := range newClient(t, srv.URL, adminToken).Events(context.Background(), flagadmin.EventSearchParams{Limit: "4"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.ID)
	}
	if want := []int64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
