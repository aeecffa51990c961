package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// sameJSON asserts that got and want encode to the same JSON: the client
// decodes what the embedded Service returns.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s: remote and embedded differ\nremote:   %.600s\nembedded: %.600s", what, g, w)
	}
}

// TestOperationsAgainstServer runs the five operations through the real
// server and compares every answer with the embedded Service's answer for
// the same principal.
func TestOperationsAgainstServer(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			srv := startServer(t, b.open(t))
			admin := newClient(t, srv.URL, adminToken)
			vic := newClient(t, srv.URL, vicToken)
			eve := newClient(t, srv.URL, eveToken)
			embeddedAdmin := srv.svc.As(flagadmin.AdminToken("admin"))
			vicP, err := srv.svc.Authenticate(ctx, vicToken)
			if err != nil {
				t.Fatal(err)
			}
			embeddedVic := srv.svc.As(vicP)

			t.Run("list projects", func(t *testing.T) {
				for _, who := range []struct {
					name             string
					remote, embedded flagadmin.Admin
					want             []string
				}{{"admin", admin, embeddedAdmin, []string{"default", "hidden"}}, {"viewer", vic, embeddedVic, []string{"default"}}} {
					got, err := who.remote.ListProjects(ctx, flagadmin.ProjectListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					var gotIDs []string
					for _, p := range got {
						gotIDs = append(gotIDs, p.ID)
					}
					if !slices.Equal(gotIDs, who.want) {
						t.Errorf("%s: got projects %q, want %q", who.name, gotIDs, who.want)
					}
					want, err := who.embedded.ListProjects(ctx, flagadmin.ProjectListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					sameJSON(t, who.name+" projects", got, want)
					if got[0].Owners[0].OwnerType != flagadmin.OwnerUser || *got[0].Owners[0].Email != "ada@example.com" {
						t.Errorf("owners of default: got %+v, want Ada as user owner", got[0].Owners)
					}
				}
				archived, err := admin.ListProjects(ctx, flagadmin.ProjectListOptions{Archived: true})
				if err != nil || len(archived) != 0 {
					t.Errorf("archived projects: got %v, %v; want none", archived, err)
				}
			})

			t.Run("search events", func(t *testing.T) {
				params := flagadmin.EventSearchParams{Limit: "5", Offset: "2", Project: "IS:default"}
				got, err := vic.SearchEvents(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				want, err := embeddedVic.SearchEvents(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Events) != 5 || got.Total != want.Total || got.Total == 0 {
					t.Errorf("got %d events of %d, want 5 of %d", len(got.Events), got.Total, want.Total)
				}
				sameJSON(t, "search page", got.Events, want.Events)
				if d := string(got.Events[0].Data); !strings.HasPrefix(d, `{"n":`) {
					t.Errorf("data of event %d: got %s, want {\"n\":...}", got.Events[0].ID, d)
				}
			})

			t.Run("deprecated search", func(t *testing.T) {
				req := flagadmin.DeprecatedSearchRequest{Limit: ptr(3), Offset: ptr(4), Query: ptr("FEATURE-UPDATED")}
				got, err := admin.DeprecatedSearchEvents(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				want, err := embeddedAdmin.DeprecatedSearchEvents(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if got.Total != worldEvents || !slices.Equal(eventtest.IDs(got.Events), []int64{worldEvents - 4, worldEvents - 5, worldEvents - 6}) {
					t.Errorf("got ids %v of %d, want the 5th to 7th newest of %d", eventtest.IDs(got.Events), got.Total, worldEvents)
				}
				sameJSON(t, "deprecated page", got.Events, want.Events)
			})

			t.Run("validation errors", func(t *testing.T) {
				_, err := admin.SearchEvents(ctx, flagadmin.EventSearchParams{Limit: "abc", Type: "FOO:bar"})
				ce := wantAPIError(t, err, http.StatusBadRequest, "BadDataError", flagadmin.ErrValidation)
				var ve *flagadmin.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("errors.As(%v, *ValidationError) = false", err)
				}
				var paths []string
				for _, f := range ve.Fields {
					paths = append(paths, f.Path)
				}
				if !slices.Contains(paths, "limit") || !slices.Contains(paths, "type") {
					t.Errorf("validation fields %q, want limit and type", paths)
				}
				if ce.ID == "" || ce.RequestID == "" {
					t.Errorf("error id %q, request id %q: want both", ce.ID, ce.RequestID)
				}
				if !strings.Contains(err.Error(), ce.ID) {
					t.Errorf("error text %q does not quote the error id", err)
				}
				_, err = admin.DeprecatedSearchEvents(ctx, flagadmin.DeprecatedSearchRequest{Limit: ptr(101)})
				wantAPIError(t, err, http.StatusBadRequest, "BadDataError", flagadmin.ErrValidation)
				err = eve.CompleteLifecycle(ctx, "default", "new-checkout", flagadmin.CompleteRequest{Status: "bad"})
				wantAPIError(t, err, http.StatusBadRequest, "BadDataError", flagadmin.ErrValidation)
			})

			t.Run("complete lifecycle", func(t *testing.T) {
				if err := eve.CompleteLifecycle(ctx, "default", "new-checkout", flagadmin.CompleteRequest{Status: flagadmin.StatusKept, StatusValue: ptr("v2")}); err != nil {
					t.Fatal(err)
				}
				f, err := srv.store.Feature(ctx, "new-checkout")
				if err != nil {
					t.Fatal(err)
				}
				if want := (flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusKept, StatusValue: "v2"}); f.Lifecycle != want {
					t.Errorf("lifecycle: got %+v, want %+v", f.Lifecycle, want)
				}
				// A name with a slash, a space and a percent sign reaches the
				// route as one segment: the domain's 404 names it.
				err = eve.CompleteLifecycle(ctx, "default", "a/b c%", flagadmin.CompleteRequest{Status: flagadmin.StatusKept})
				ce := wantAPIError(t, err, http.StatusNotFound, "NotFoundError", flagadmin.ErrNotFound)
				if !strings.Contains(ce.Message, `"a/b c%"`) {
					t.Errorf("message %q does not name the feature \"a/b c%%\"", ce.Message)
				}
				err = eve.CompleteLifecycle(ctx, "hidden", "secret-flag", flagadmin.CompleteRequest{Status: flagadmin.StatusKept})
				wantAPIError(t, err, http.StatusNotFound, "NotFoundError", flagadmin.ErrNotFound)
				if err := eve.CompleteLifecycle(ctx, "", "x", flagadmin.CompleteRequest{Status: flagadmin.StatusKept}); !errors.Is(err, flagadmin.ErrValidation) {
					t.Errorf("empty project id: got %v, want a validation error", err)
				}
			})

			t.Run("delete service account", func(t *testing.T) {
				wantAPIError(t, vic.DeleteServiceAccount(ctx, "10"), http.StatusForbidden, "NoAccessError", flagadmin.ErrNoAccess)
				cl := newClient(t, srv.URL, clientToken)
				wantAPIError(t, cl.DeleteServiceAccount(ctx, "10"), http.StatusForbidden, "NoAccessError", flagadmin.ErrNoAccess)
				nobody := newClient(t, srv.URL, "*:*.no-such-secret")
				wantAPIError(t, nobody.DeleteServiceAccount(ctx, "10"), http.StatusUnauthorized, "AuthenticationRequired", flagadmin.ErrAuthenticationRequired)
				if err := admin.DeleteServiceAccount(ctx, "10"); err != nil {
					t.Fatalf("delete 10: %v", err)
				}
				ce := wantAPIError(t, admin.DeleteServiceAccount(ctx, "10"), http.StatusNotFound, "NotFoundError", flagadmin.ErrNotFound)
				if ce.ID == "" {
					t.Error("404 without an error id")
				}
			})
		})
	}
}

// TestEventsWalkAgainstServer walks the whole log of the real server, which
// links each page to the next (keyset paging), and checks the requests it took.
func TestEventsWalkAgainstServer(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			srv := startServer(t, b.open(t))
			admin := newClient(t, srv.URL, adminToken)

			var got []int64
			for ev, err := range admin.Events(ctx, flagadmin.EventSearchParams{}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev.ID)
			}
			want := make([]int64, worldEvents)
			for i := range want {
				want[i] = int64(worldEvents - i)
			}
			if !slices.Equal(got, want) {
				t.Errorf("walk: got %s, want %s", fmtIDs(got), fmtIDs(want))
			}
			// 1037 events in pages of 500: three requests, the last one short.
			if n := srv.requests.Load(); n != 3 {
				t.Errorf("walk took %d requests, want 3: %q", n, srv.paths)
			}

			// A viewer walks the visible events only, in pages of 100.
			vic := newClient(t, srv.URL, vicToken)
			got = got[:0]
			for ev, err := range vic.Events(ctx, flagadmin.EventSearchParams{Limit: "100", Type: "IS:feature-updated"}) {
				if err != nil {
					t.Fatal(err)
				}
				if *ev.Project == "hidden" {
					t.Fatalf("viewer walked event %d of the private project", ev.ID)
				}
				got = append(got, ev.ID)
			}
			want = slices.DeleteFunc(want, func(id int64) bool { return (id-1)%3 == 2 })
			if !slices.Equal(got, want) {
				t.Errorf("viewer walk: got %s, want %s", fmtIDs(got), fmtIDs(want))
			}

			// Breaking out of the loop stops fetching.
			for _, stopAfter := range []int{1, 501} {
				before := srv.requests.Load()
				n := 0
				for _, err := range admin.Events(ctx, flagadmin.EventSearchParams{}) {
					if err != nil {
						t.Fatal(err)
					}
					if n++; n == stopAfter {
						break
					}
				}
				if got, want := srv.requests.Load()-before, int64((stopAfter-1)/500+1); got != want {
					t.Errorf("break after %d events: %d requests, want %d", stopAfter, got, want)
				}
			}

			// An error is yielded once and ends the walk.
			var errs, events int
			for _, err := range admin.Events(ctx, flagadmin.EventSearchParams{Limit: "0"}) {
				if err != nil {
					errs++
					if !errors.Is(err, flagadmin.ErrValidation) {
						t.Errorf("got %v, want a validation error", err)
					}
				} else {
					events++
				}
			}
			if errs != 1 || events != 0 {
				t.Errorf("walk with limit 0: %d errors and %d events, want 1 and 0", errs, events)
			}
		})
	}
}
