package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

const completePath = "/api/admin/projects/default/features/new-checkout/lifecycle/complete"

func completeURL(project, feature string) string {
	return "/api/admin/projects/" + project + "/features/" + feature + "/lifecycle/complete"
}

func TestCompleteLifecycle200(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	ctx := context.Background()

	w := e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"kept","statusValue":"variant-b"}`})
	wantEmpty200(t, w)

	f, err := e.store.Feature(ctx, "new-checkout")
	if err != nil {
		t.Fatal(err)
	}
	want := flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusKept, StatusValue: "variant-b"}
	if f.Lifecycle != want {
		t.Errorf("lifecycle: got %+v, want %+v", f.Lifecycle, want)
	}
	page, err := e.svc.SearchEvents(ctx, flagadmin.AdminToken("admin"), flagadmin.EventSearchParams{Type: "IS:feature-completed"})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 1 {
		t.Fatalf("feature-completed events: got %d, want 1", page.Total)
	}
	got := page.Events[0]
	if got.CreatedBy != "admin" || got.CreatedByUserID == nil || *got.CreatedByUserID != flagadmin.AdminTokenUserID {
		t.Errorf("actor: got %q/%v, want admin/-42", got.CreatedBy, got.CreatedByUserID)
	}
	var data map[string]any
	if err := json.Unmarshal(got.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data["status"] != "kept" || data["statusValue"] != "variant-b" || data["kept"] != true {
		t.Errorf("data: got %v", data)
	}

	// Repeating the same outcome changes nothing and records nothing.
	wantEmpty200(t, e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"kept","statusValue":"variant-b"}`}))
	page, _ = e.svc.SearchEvents(ctx, flagadmin.AdminToken("admin"), flagadmin.EventSearchParams{Type: "IS:feature-completed"})
	if page.Total != 1 {
		t.Errorf("after a repeat: got %d feature-completed events, want 1", page.Total)
	}
}

func TestCompleteLifecycleContentTypes(t *testing.T) {
	// Any Content-Type is accepted if the body parses as JSON.
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", "application/octet-stream"} {
		t.Run(ct, func(t *testing.T) {
			e := newEnv(t, Config{}, nil)
			wantEmpty200(t, e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"discarded"}`, contentType: ct}))
		})
	}
	t.Run("no Content-Type", func(t *testing.T) {
		e := newEnv(t, Config{}, nil)
		w := e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"discarded"}`, header: map[string]string{"Content-Type": ""}})
		wantEmpty200(t, w)
	})
	t.Run("text/plain that is not JSON", func(t *testing.T) {
		e := newEnv(t, Config{}, nil)
		wantError(t, e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: `status=kept`, contentType: "text/plain"}), http.StatusBadRequest, nameBadData)
	})
}

func TestCompleteLifecycle400(t *testing.T) {
	cases := []struct {
		name, body string
		path       string // the detail path that must be named; "" for whole-body errors
	}{
		{"unknown status", `{"status":"maybe"}`, "status"},
		{"missing status", `{"statusValue":"x"}`, "status"},
		{"empty object", `{}`, "status"},
		{"status of the wrong type", `{"status":1}`, "status"},
		{"statusValue too long", `{"status":"kept","statusValue":"` + strings.Repeat("v", 256) + `"}`, "statusValue"},
		{"unknown field", `{"status":"kept","reason":"done"}`, "reason"},
		{"JSON syntax error", `{"status":`, ""},
		{"not an object", `["kept"]`, ""},
		{"empty body", ``, ""},
	}
	e := newEnv(t, Config{}, nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: c.body, contentType: "application/json"})
			got := wantError(t, w, http.StatusBadRequest, nameBadData)
			if c.path != "" {
				wantDetailPath(t, got, c.path)
			}
		})
	}
}

func TestCompleteLifecycle401(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	for name, token := range map[string]string{"missing": "", "unknown": unknownToken, "malformed": malformedAuth, "expired": expiredToken} {
		t.Run(name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodPost, path: completePath, token: token, body: `{"status":"kept"}`})
			wantError(t, w, http.StatusUnauthorized, nameAuthentication)
		})
	}
}

func TestCompleteLifecycle403(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []struct{ name, token, path string }{
		{"client token", clientToken, completePath},
		{"frontend token", frontendToken, completePath},
		{"viewer on an open project", vicToken, completePath},
		{"editor on a protected project", eveToken, completeURL("secure", "guarded")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodPost, path: c.path, token: c.token, body: `{"status":"kept"}`})
			wantError(t, w, http.StatusForbidden, nameNoAccess)
		})
	}
	// The editor may complete on the open project.
	wantEmpty200(t, e.do(t, request{method: http.MethodPost, path: completePath, token: eveToken, body: `{"status":"kept"}`}))
}

func TestCompleteLifecycle404(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []struct{ name, token, path string }{
		{"unknown project", adminToken, completeURL("nope", "new-checkout")},
		{"unknown feature", adminToken, completeURL("default", "nope")},
		{"feature of another project", adminToken, completeURL("secure", "new-checkout")},
		{"private project the caller cannot see", eveToken, completeURL("hidden", "secret-flag")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodPost, path: c.path, token: c.token, body: `{"status":"kept"}`})
			wantError(t, w, http.StatusNotFound, nameNotFound)
		})
	}
}

func TestCompleteLifecycle413(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	body := `{"status":"kept","statusValue":"` + strings.Repeat("x", int(DefaultMaxBodyBytes)) + `"}`
	wantError(t, e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: body}), http.StatusRequestEntityTooLarge, nameContentTooLarge)
	wantError(t, e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: body, chunked: true}), http.StatusRequestEntityTooLarge, nameContentTooLarge)
}

func TestCompleteLifecycle5xx(t *testing.T) {
	t.Run("503", func(t *testing.T) {
		e := newEnv(t, Config{}, failWith(unavailableErr))
		w := e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"kept"}`})
		wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
		if got := w.Header().Get("Retry-After"); got == "" {
			t.Error("503 without Retry-After")
		}
		mustNotLeak(t, w)
	})
	t.Run("500", func(t *testing.T) {
		e := newEnv(t, Config{}, failWith(errors.New(fakeSQL)))
		w := e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"kept"}`})
		wantError(t, w, http.StatusInternalServerError, nameInternal)
		mustNotLeak(t, w)
	})
}

// TestCompleteLifecyclePermissionBeforeBody checks the order 401, 403,
// then 400: a caller without permission learns that before anything about
// its body (403 before 400), and a private project it cannot see stays 404.
func TestCompleteLifecyclePermissionBeforeBody(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	for _, body := range []string{`{"status":"maybe"}`, `{not json`, `{"status":"kept","extra":1}`} {
		wantError(t, e.do(t, request{method: http.MethodPost, path: completePath, token: vicToken, body: body}), http.StatusForbidden, nameNoAccess)
		wantError(t, e.do(t, request{method: http.MethodPost, path: completeURL("hidden", "secret-flag"), token: eveToken, body: body}), http.StatusNotFound, nameNotFound)
		wantError(t, e.do(t, request{method: http.MethodPost, path: completePath, token: eveToken, body: body}), http.StatusBadRequest, nameBadData)
	}
}

// projectReadCounter counts the reads of projects and of project access
// (the roles).
type projectReadCounter struct {
	flagadmin.Store
	projects, roles atomic.Int64
}

func (s *projectReadCounter) Project(ctx context.Context, id string) (flagadmin.Project, error) {
	s.projects.Add(1)
	return s.Store.Project(ctx, id)
}

func (s *projectReadCounter) ProjectAccess(ctx context.Context, userID int64) (flagadmin.ProjectAccess, error) {
	s.roles.Add(1)
	return s.Store.ProjectAccess(ctx, userID)
}

// TestCompleteLifecycleChecksPermissionOnce: a completion over HTTP reads
// the project, and the caller's project roles, once, whatever its answer:
// the transport's check before the body is the only one.
func TestCompleteLifecycleChecksPermissionOnce(t *testing.T) {
	counter := &projectReadCounter{}
	e := newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store { counter.Store = s; return counter })
	for _, c := range []struct {
		name, token, path, body string
		status                  int
		roles                   int64
	}{
		{"admin completes", adminToken, completePath, `{"status":"kept"}`, http.StatusOK, 0},
		{"editor completes on an open project", eveToken, completePath, `{"status":"discarded"}`, http.StatusOK, 1},
		{"editor with a bad body", eveToken, completePath, `{"status":"maybe"}`, http.StatusBadRequest, 1},
		{"viewer refused", vicToken, completePath, `{"status":"kept"}`, http.StatusForbidden, 1},
		{"private project invisible", eveToken, completeURL("hidden", "secret-flag"), `{"status":"kept"}`, http.StatusNotFound, 1},
		{"feature of another project", adminToken, completeURL("secure", "new-checkout"), `{"status":"kept"}`, http.StatusNotFound, 0},
	} {
		counter.projects.Store(0)
		counter.roles.Store(0)
		w := e.do(t, request{method: http.MethodPost, path: c.path, token: c.token, body: c.body})
		if w.Code != c.status {
			t.Errorf("%s: got %d, want %d; %s", c.name, w.Code, c.status, w.Body)
		}
		if got := counter.projects.Load(); got != 1 {
			t.Errorf("%s: the project was read %d times, want once", c.name, got)
		}
		if got := counter.roles.Load(); got != c.roles {
			t.Errorf("%s: the project roles were read %d times, want %d", c.name, got, c.roles)
		}
	}
}
