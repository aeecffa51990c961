package client_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// The client's Link walk and export against the real server (httpapi over
// memstore and SQLite), which sends next links and exports.

// TestCursorWalkAgainstServerWhileWriting walks the log by the server's
// next links while events are written between pages: the walk visits the
// events of its start exactly once, newest first, and follows only links.
func TestCursorWalkAgainstServerWhileWriting(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			store := b.open(t)
			srv := startServer(t, store)
			admin := newClient(t, srv.URL, adminToken)
			newest := worldStart.Add(time.Duration(worldEvents-1) * time.Minute)
			var got []int64
			project := "default"
			for ev, err := range admin.Events(ctx, flagadmin.EventSearchParams{Limit: "100"}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev.ID)
				if len(got)%100 == 50 { // mid-page: the next page is fetched after this write
					err := store.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{
						{Type: flagadmin.EventFeatureUpdated, CreatedBy: "writer", CreatedAt: newest, Project: &project},
						{Type: flagadmin.EventFeatureUpdated, CreatedBy: "writer", CreatedAt: newest.Add(time.Second), Project: &project},
					}})
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			want := make([]int64, worldEvents)
			for i := range want {
				want[i] = int64(worldEvents - i)
			}
			if !slices.Equal(got, want) {
				t.Errorf("walk: got %s, want %s", fmtIDs(got), fmtIDs(want))
			}
			srv.mu.Lock()
			paths := slices.Clone(srv.paths)
			srv.mu.Unlock()
			if len(paths) != (worldEvents+99)/100 {
				t.Errorf("the walk took %d requests, want %d", len(paths), (worldEvents+99)/100)
			}
			for _, p := range paths[1:] {
				if !strings.Contains(p, "after=") || strings.Contains(p, "offset=") {
					t.Errorf("request %q: want a next link's (after, no offset)", p)
				}
			}
		})
	}
}

// exportFailOnce fails the first export once it has passed `after` events.
type exportFailOnce struct {
	flagadmin.Store
	after  int
	failed atomic.Bool
}

func (f *exportFailOnce) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	n := 0
	return f.Store.ExportEvents(ctx, q, afterID, func(e flagadmin.Event) error {
		if n++; n > f.after && f.failed.CompareAndSwap(false, true) {
			return errors.Join(flagadmin.ErrUnavailable, errors.New("database went away"))
		}
		return fn(e)
	})
}

func TestExportAgainstServer(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			srv := startServer(t, b.open(t))
			admin := newClient(t, srv.URL, adminToken)
			all := func(c *client.Client, params flagadmin.EventSearchParams, after int64) []int64 {
				t.Helper()
				var out []int64
				for ev, err := range c.ExportEvents(ctx, params, after) {
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, ev.ID)
				}
				return out
			}
			want := make([]int64, worldEvents)
			for i := range want {
				want[i] = int64(i + 1)
			}
			if got := all(admin, flagadmin.EventSearchParams{}, 0); !slices.Equal(got, want) {
				t.Errorf("export: got %s, want %s", fmtIDs(got), fmtIDs(want))
			}
			if got := all(admin, flagadmin.EventSearchParams{}, 1000); !slices.Equal(got, want[1000:]) {
				t.Errorf("export after 1000: got %s, want %s", fmtIDs(got), fmtIDs(want[1000:]))
			}
			// A Viewer's export holds what its walk holds.
			vic := newClient(t, srv.URL, vicToken)
			var walked []int64
			for ev, err := range vic.Events(ctx, flagadmin.EventSearchParams{Type: "IS:feature-updated"}) {
				if err != nil {
					t.Fatal(err)
				}
				walked = append(walked, ev.ID)
			}
			slices.Reverse(walked)
			if got := all(vic, flagadmin.EventSearchParams{Type: "IS:feature-updated"}, 0); !slices.Equal(got, walked) || len(got) == 0 {
				t.Errorf("viewer export: got %s, want its walk %s", fmtIDs(got), fmtIDs(walked))
			}
			// CSV through Export: a header and a record per event.
			body, err := admin.Export(ctx, flagadmin.EventSearchParams{Project: "IS:default"}, client.ExportCSV, 0)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(body)
			lines := 0
			for sc.Scan() {
				if lines == 0 && !strings.HasPrefix(sc.Text(), "id,createdAt,type,") {
					t.Errorf("CSV header: %q", sc.Text())
				}
				lines++
			}
			body.Close()
			if err := sc.Err(); err != nil || lines != 1+len(want)-len(want)/3 {
				t.Errorf("CSV: %d lines, %v; want %d", lines, err, 1+len(want)-len(want)/3)
			}
			// Bad parameters are the server's 400 naming them.
			_, err = admin.Export(ctx, flagadmin.EventSearchParams{Type: "nope"}, client.ExportNDJSON, 0)
			var ve *flagadmin.ValidationError
			if !errors.As(err, &ve) || ve.Fields[0].Path != "type" {
				t.Errorf("bad type: got %v, want a validation error on type", err)
			}
			_, err = admin.Export(ctx, flagadmin.EventSearchParams{Limit: "5"}, client.ExportNDJSON, 0)
			if !errors.As(err, &ve) || ve.Fields[0].Path != "limit" {
				t.Errorf("limit: got %v, want a validation error on limit", err)
			}
		})
	}
}

// TestExportResumesAfterAnAbortedTransfer: the server aborts the first
// transfer mid-stream (a store failure after the first bytes); the
// client's ExportEvents resumes with afterId and yields every event once.
func TestExportResumesAfterAnAbortedTransfer(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			failing := &exportFailOnce{Store: b.open(t), after: 1020}
			srv := startServer(t, failing)
			admin := newClient(t, srv.URL, adminToken)
			var got []int64
			for ev, err := range admin.ExportEvents(ctx, flagadmin.EventSearchParams{}, 0) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev.ID)
			}
			if !failing.failed.Load() {
				t.Fatal("the export did not fail: the test tests nothing")
			}
			want := make([]int64, worldEvents)
			for i := range want {
				want[i] = int64(i + 1)
			}
			if !slices.Equal(got, want) {
				t.Errorf("export: got %s, want %s", fmtIDs(got), fmtIDs(want))
			}
			if n := srv.requests.Load(); n != 2 {
				t.Errorf("export took %d requests, want 2 (one resume): %q", n, srv.paths)
			}
			// Reading the raw body of an aborted transfer ends with an error, never io.EOF.
			failing.failed.Store(false)
			body, err := admin.Export(ctx, flagadmin.EventSearchParams{}, client.ExportNDJSON, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(io.Discard, body)
			body.Close()
			if err == nil {
				t.Error("an aborted export read to a clean end")
			}
		})
	}
}
