package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// exportServer serves GET /api/admin/events/export as the server does,
// over n events (ids 1..n, feature-updated, every even one in project
// "even"): the search filters (project here), format=ndjson|csv,
// afterId=<n>, limit/offset/after refused with 400 before the first byte,
// id ascending, streamed and flushed line by line. The first abortAfter
// requests abort after that many lines (panic with http.ErrAbortHandler:
// the response ends without its final chunk).
type exportServer struct {
	n          int
	abortAfter int // lines before the abort; 0: none
	aborts     int // how many requests abort
	hits       atomic.Int64
	afterIDs   []string
}

func (s *exportServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hit := s.hits.Add(1)
	q := r.URL.Query()
	s.afterIDs = append(s.afterIDs, q.Get("afterId"))
	if r.URL.Path != "/api/admin/events/export" || r.Header.Get("Authorization") != adminToken {
		w.WriteHeader(http.StatusTeapot)
		return
	}
	for _, p := range []string{"limit", "offset", "after"} {
		if q.Has(p) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "e-400", "name": "BadDataError", "message": "Request validation failed",
				"details": []map[string]string{{"path": p, "message": "is not a parameter of the export"}}})
			return
		}
	}
	after, _ := strconv.Atoi(q.Get("afterId"))
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="events-20250101T000000Z.ndjson"`)
	w.WriteHeader(http.StatusOK)
	lines := 0
	for id := after + 1; id <= s.n; id++ {
		project := "odd"
		if id%2 == 0 {
			project = "even"
		}
		if f := q.Get("project"); f != "" && f != "IS:"+project {
			continue
		}
		if s.abortAfter > 0 && hit <= int64(s.aborts) && lines == s.abortAfter {
			panic(http.ErrAbortHandler)
		}
		ev := flagadmin.Event{ID: int64(id), Type: "feature-updated", CreatedBy: "ada", Project: &project,
			CreatedAt: time.Date(2025, 1, 1, 0, 0, id, 0, time.UTC), Data: json.RawMessage(`{"n":` + strconv.Itoa(id) + `}`)}
		b, _ := json.Marshal(ev)
		_, _ = w.Write(append(b, '\n'))
		w.(http.Flusher).Flush()
		lines++
	}
}

func collectExport(t *testing.T, c *client.Client, params flagadmin.EventSearchParams, after int64) ([]int64, []error) {
	t.Helper()
	var ids []int64
	var errs []error
	for ev, err := range c.ExportEvents(context.Background(), params, after) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids = append(ids, ev.ID)
	}
	return ids, errs
}

func seq(from, to int64, step int64) []int64 {
	var out []int64
	for i := from; i <= to; i += step {
		out = append(out, i)
	}
	return out
}

// TestExportEvents reads a complete export, a filtered one, and one that
// starts after an id.
func TestExportEvents(t *testing.T) {
	es := &exportServer{n: 40}
	srv := httptest.NewServer(es)
	defer srv.Close()
	c := newClient(t, srv.URL, adminToken)
	for _, tt := range []struct {
		name   string
		params flagadmin.EventSearchParams
		after  int64
		want   []int64
	}{
		{"all", flagadmin.EventSearchParams{}, 0, seq(1, 40, 1)},
		{"filtered", flagadmin.EventSearchParams{Project: "IS:even"}, 0, seq(2, 40, 2)},
		{"after an id", flagadmin.EventSearchParams{}, 33, seq(34, 40, 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := collectExport(t, c, tt.params, tt.after)
			if len(errs) > 0 || !slices.Equal(got, tt.want) {
				t.Errorf("got %v, %v; want %v", got, errs, tt.want)
			}
		})
	}
	// Errors before the first byte are the API's errors.
	_, errs := collectExport(t, c, flagadmin.EventSearchParams{Limit: "5"}, 0)
	if len(errs) != 1 || !errors.Is(errs[0], flagadmin.ErrValidation) {
		t.Fatalf("export with limit: got %v, want one validation error", errs)
	}
	wantAPIError(t, errs[0], http.StatusBadRequest, "BadDataError", flagadmin.ErrValidation)
}

// TestExportAbortResumes cuts the first two transfers after 7 lines: the
// walk resumes with afterId of the last event received and yields every
// event exactly once.
func TestExportAbortResumes(t *testing.T) {
	es := &exportServer{n: 30, abortAfter: 7, aborts: 2}
	srv := httptest.NewServer(es)
	srv.Config.ErrorLog = quietLog()
	defer srv.Close()
	got, errs := collectExport(t, newClient(t, srv.URL, adminToken), flagadmin.EventSearchParams{}, 0)
	if len(errs) > 0 || !slices.Equal(got, seq(1, 30, 1)) {
		t.Errorf("got %v, %v; want 1..30 once each", got, errs)
	}
	if want := []string{"", "7", "14"}; !slices.Equal(es.afterIDs, want) {
		t.Errorf("afterId of the requests: %q, want %q", es.afterIDs, want)
	}
}

// TestExportAbortIsAnError checks that a transfer that keeps breaking ends
// the walk with an error after the retry bound, never as a clean end, and
// that the raw stream reports the cut as a read error.
func TestExportAbortIsAnError(t *testing.T) {
	es := &exportServer{n: 30, abortAfter: 3, aborts: 1000}
	srv := httptest.NewServer(es)
	srv.Config.ErrorLog = quietLog()
	defer srv.Close()
	// Every transfer breaks after 3 events: each break follows progress, so
	// the bound of 2 consecutive breaks is never reached and the walk resumes
	// to the end.
	c := newClient(t, srv.URL, adminToken, client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond}))
	got, errs := collectExport(t, c, flagadmin.EventSearchParams{}, 0)
	if len(errs) != 0 || !slices.Equal(got, seq(1, 30, 1)) {
		t.Errorf("progressing aborts: got %v, %v; want 1..30 after resuming", got, errs)
	}

	// A transfer resumed after event 5 breaks before sending anything new:
	// after MaxAttempts breaks without progress the walk ends with the error.
	cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("afterId") == "5" {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // nothing new, then the cut
		}
		(&exportServer{n: 30, abortAfter: 5, aborts: 1000}).ServeHTTP(w, r)
	})
	srv2 := httptest.NewServer(cut)
	srv2.Config.ErrorLog = quietLog()
	defer srv2.Close()
	got, errs = collectExport(t, newClient(t, srv2.URL, adminToken, client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond})), flagadmin.EventSearchParams{}, 0)
	if len(errs) != 1 || !slices.Equal(got, seq(1, 5, 1)) {
		t.Fatalf("stuck export: got %v, %v; want 1..5 then one error", got, errs)
	}
	if !errors.Is(errs[0], io.ErrUnexpectedEOF) {
		t.Errorf("stuck export: got %v, want io.ErrUnexpectedEOF", errs[0])
	}

	// The raw stream: reading to the end gives the cut as an error.
	body, err := newClient(t, srv.URL, adminToken).Export(context.Background(), flagadmin.EventSearchParams{}, client.ExportNDJSON, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	lines := 0
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		lines++
	}
	if sc.Err() == nil || lines != 3 {
		t.Errorf("raw export: %d lines, error %v; want 3 lines and a read error", lines, sc.Err())
	}
}

// TestExportBreakStops checks that breaking out of the loop ends the
// transfer and makes no further request.
func TestExportBreakStops(t *testing.T) {
	es := &exportServer{n: 1000}
	srv := httptest.NewServer(es)
	defer srv.Close()
	n := 0
	for _, err := range newClient(t, srv.URL, adminToken).ExportEvents(context.Background(), flagadmin.EventSearchParams{}, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	if es.hits.Load() != 1 {
		t.Errorf("%d requests, want 1", es.hits.Load())
	}
}

// TestExportRefusesBrokenServers: a body delimited by closing the
// connection (a cut could not be told from the end), a last line without
// its line feed, ids out of order, and another media type.
func TestExportRefusesBrokenServers(t *testing.T) {
	line := func(id int) string {
		return `{"id":` + strconv.Itoa(id) + `,"createdAt":"2025-01-01T00:00:00.000Z","type":"feature-updated","createdBy":"ada"}`
	}
	raw := func(resp string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			_, _ = buf.WriteString(resp)
			_ = buf.Flush()
		})
	}
	framed := func(ct, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			_, _ = io.WriteString(w, body)
		})
	}
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{
		{"close-delimited", raw("HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nConnection: close\r\n\r\n" + line(1) + "\n")},
		{"no final line feed", framed("application/x-ndjson", line(1)+"\n"+line(2))},
		{"ids out of order", framed("application/x-ndjson", line(2)+"\n"+line(1)+"\n")},
		{"not ndjson", framed("text/html", "<html>proxy</html>")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.h)
			defer srv.Close()
			var errs int
			for _, err := range newClient(t, srv.URL, adminToken).ExportEvents(context.Background(), flagadmin.EventSearchParams{}, 0) {
				if err != nil {
					errs++
				}
			}
			if errs != 1 {
				t.Errorf("%d errors, want 1", errs)
			}
		})
	}
}

// quietLog discards the server's log of aborted handlers.
func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
