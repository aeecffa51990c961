package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestAuthenticationPrecedence(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	big := `{"query":"` + strings.Repeat("x", int(DefaultMaxBodyBytes)) + `"}`
	cases := []struct {
		name    string
		r       request
		status  int
		errName string
	}{
		{"bad token and bad parameters: 401", request{method: http.MethodGet, path: searchPath + "?limit=x&feature=y", token: unknownToken}, http.StatusUnauthorized, nameAuthentication},
		{"no token and a bad body: 401", request{method: http.MethodPost, path: completePath, body: `{"status":"maybe"}`}, http.StatusUnauthorized, nameAuthentication},
		{"no token and a non-JSON body: 401", request{method: http.MethodPost, path: deprecatedPath, body: `x`, contentType: "text/plain"}, http.StatusUnauthorized, nameAuthentication},
		{"no token and a body over the limit: 401", request{method: http.MethodPost, path: deprecatedPath, body: big}, http.StatusUnauthorized, nameAuthentication},
		{"no token and an unknown path: 401", request{method: http.MethodGet, path: "/api/admin/nothing"}, http.StatusUnauthorized, nameAuthentication},
		{"client token and bad parameters: 403", request{method: http.MethodGet, path: searchPath + "?limit=x", token: clientToken}, http.StatusForbidden, nameNoAccess},
		{"client token and a bad body: 403", request{method: http.MethodPost, path: completePath, body: `{"status":"maybe"}`, token: clientToken}, http.StatusForbidden, nameNoAccess},
		{"frontend token and a non-JSON body: 403", request{method: http.MethodPost, path: deprecatedPath, body: `x`, contentType: "text/plain", token: frontendToken}, http.StatusForbidden, nameNoAccess},
		{"client token and an unknown path: 403", request{method: http.MethodGet, path: "/api/admin/nothing", token: clientToken}, http.StatusForbidden, nameNoAccess},
		{"client token and an unknown feature: 403", request{method: http.MethodPost, path: completeURL("nope", "nope"), body: `{"status":"kept"}`, token: clientToken}, http.StatusForbidden, nameNoAccess},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, e.do(t, c.r), c.status, c.errName)
		})
	}
}

func TestBearerPrefix(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	w := e.do(t, request{method: http.MethodGet, path: projectsPath, token: "Bearer " + adminToken})
	if w.Code != http.StatusOK {
		t.Errorf("Bearer token: got %d, want 200", w.Code)
	}
}

func TestAuthenticationStoreFailure(t *testing.T) {
	e := newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store { return &faultyStore{Store: s, lookupErr: unavailableErr} })
	w := e.do(t, request{method: http.MethodGet, path: projectsPath, token: adminToken})
	wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	mustNotLeak(t, w)
}

func TestUnknownPaths(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []request{
		{method: http.MethodGet, path: "/api/admin/nothing", token: adminToken},
		{method: http.MethodGet, path: "/api/admin/projects/", token: adminToken},
		{method: http.MethodGet, path: "/api", token: adminToken},
		{method: http.MethodPost, path: "/api/admin/features", token: adminToken, body: `{}`},
		{method: http.MethodGet, path: deprecatedPath, token: adminToken}, // exists for POST only
		{method: http.MethodPost, path: projectsPath, token: adminToken, body: `{}`},
		{method: http.MethodGet, path: "/nothing"},
		{method: http.MethodGet, path: "/schemas/eventSchema.json"}, // Huma's schema routes are off
	}
	for _, r := range cases {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			wantError(t, e.do(t, r), http.StatusNotFound, nameNotFound)
		})
	}
	got := wantError(t, e.do(t, request{method: http.MethodGet, path: deprecatedPath, token: adminToken}), http.StatusNotFound, nameNotFound)
	if !strings.Contains(got.Message, "POST") {
		t.Errorf("the message should name the supported method: %q", got.Message)
	}
}

func TestBodyLimit(t *testing.T) {
	const limit = 64
	e := newEnv(t, Config{MaxBodyBytes: limit}, nil)
	atLimit := `{"status":"kept","statusValue":"` + strings.Repeat("v", limit-34) + `"}`
	if len(atLimit) != limit {
		t.Fatalf("test body has %d bytes, want %d", len(atLimit), limit)
	}
	over := `{"status":"kept","statusValue":"` + strings.Repeat("v", limit-33) + `"}`
	for _, chunked := range []bool{false, true} {
		wantEmpty200(t, e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: atLimit, chunked: chunked}))
		got := wantError(t, e.do(t, request{method: http.MethodPost, path: completePath, token: adminToken, body: over, chunked: chunked}), http.StatusRequestEntityTooLarge, nameContentTooLarge)
		if !strings.Contains(got.Message, "64 bytes") {
			t.Errorf("message should name the limit: %q", got.Message)
		}
	}
}

func TestRequestID(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	w := e.do(t, request{method: http.MethodGet, path: "/health", header: map[string]string{RequestIDHeader: "abc-123.x:y_z"}})
	if got := w.Header().Get(RequestIDHeader); got != "abc-123.x:y_z" {
		t.Errorf("echo: got %q", got)
	}
	for name, sent := range map[string]string{"none": "", "with spaces": "a b", "with quotes": `a"b`, "too long": strings.Repeat("a", 129)} {
		t.Run(name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodGet, path: projectsPath, header: map[string]string{RequestIDHeader: sent}})
			if got := w.Header().Get(RequestIDHeader); !uuidV4.MatchString(got) {
				t.Errorf("generated id: got %q, want a UUID", got)
			}
		})
	}
}

func TestAccessLog(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	e.do(t, request{method: http.MethodGet, path: searchPath + "?limit=2", token: adminToken, header: map[string]string{RequestIDHeader: "log-1"}})
	e.do(t, request{method: http.MethodGet, path: searchPath, token: unknownToken, header: map[string]string{RequestIDHeader: "log-2"}})

	logs := e.logs.String()
	for _, secret := range []string{adminToken, unknownToken, "admin-secret", "no-such-secret"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log contains a token: %q", secret)
		}
	}
	type line struct {
		Msg       string  `json:"msg"`
		Method    string  `json:"method"`
		Route     string  `json:"route"`
		Path      string  `json:"path"`
		Status    int     `json:"status"`
		Bytes     int64   `json:"bytes"`
		Duration  float64 `json:"duration"`
		RequestID string  `json:"request_id"`
	}
	var lines []line
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line is not JSON: %s", sc.Text())
		}
		if l.Msg == "request" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("got %d access lines, want 2:\n%s", len(lines), logs)
	}
	for i, want := range []struct {
		id     string
		status int
	}{{"log-1", 200}, {"log-2", 401}} {
		l := lines[i]
		if l.Method != "GET" || l.Route != "GET /api/admin/search/events" || l.Path != searchPath || l.Status != want.status || l.RequestID != want.id || l.Bytes == 0 {
			t.Errorf("access line %d: got %+v", i, l)
		}
	}
}

func TestHealthAndReady(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	for path, want := range map[string]string{"/health": `{"health":"GOOD","status":"ok"}`, "/ready": `{"status":"ready"}`} {
		w := e.do(t, request{method: http.MethodGet, path: path})
		if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != want {
			t.Errorf("%s: got %d %s, want 200 %s", path, w.Code, w.Body, want)
		}
	}

	e = newEnv(t, Config{}, failWith(unavailableErr))
	w := e.do(t, request{method: http.MethodGet, path: "/ready"})
	wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	if w.Header().Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	mustNotLeak(t, w)
	// A ping failing with an error of no kind is still "not ready".
	e = newEnv(t, Config{}, failWith(errors.New(fakeSQL)))
	w = e.do(t, request{method: http.MethodGet, path: "/ready"})
	wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	mustNotLeak(t, w)
	// /health does not touch the store.
	if w := e.do(t, request{method: http.MethodGet, path: "/health"}); w.Code != http.StatusOK {
		t.Errorf("/health with a failing store: got %d, want 200", w.Code)
	}
}

func TestPanicRecovery(t *testing.T) {
	e := newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store { return &faultyStore{Store: s, panics: true} })
	w := e.do(t, request{method: http.MethodGet, path: searchPath, token: adminToken})
	wantError(t, w, http.StatusInternalServerError, nameInternal)
	mustNotLeak(t, w)
	if strings.Contains(w.Body.String(), "exploded") {
		t.Errorf("the panic value leaks: %s", w.Body)
	}
	if !strings.Contains(e.logs.String(), "store exploded") {
		t.Errorf("the panic is not logged:\n%s", e.logs)
	}
}

// panicOnceStore is a VersionedStore (so served behind the result cache)
// whose first event search panics.
type panicOnceStore struct {
	flagadmin.VersionedStore
	panicked atomic.Bool
}

func (s *panicOnceStore) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	if !s.panicked.Swap(true) {
		explodeInSearch()
	}
	return s.VersionedStore.SearchEvents(ctx, q)
}

// explodeInSearch panics; the log must name it in the panic's stack.
func explodeInSearch() { panic("store exploded in search") }

// TestPanicThroughResultCache: a panic in a store read computed by the
// result cache is logged with the stack where it was raised, and leaves
// nothing held: the same search is then answered, and so is a write.
func TestPanicThroughResultCache(t *testing.T) {
	e := newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store {
		return &panicOnceStore{VersionedStore: s.(flagadmin.VersionedStore)}
	})
	if _, ok := e.served.(*storecache.Store); !ok {
		t.Fatalf("the served store is %T, want the result cache", e.served)
	}
	w := e.do(t, request{method: http.MethodGet, path: searchPath, token: vicToken})
	wantError(t, w, http.StatusInternalServerError, nameInternal)
	mustNotLeak(t, w)
	logs := e.logs.String()
	if !strings.Contains(logs, "store exploded in search") || !strings.Contains(logs, "explodeInSearch") {
		t.Errorf("the log lacks the panic value or the stack where it was raised:\n%s", logs)
	}
	for _, r := range []request{
		{method: http.MethodGet, path: searchPath, token: vicToken},
		{method: http.MethodPost, path: "/api/admin/events/search", token: vicToken, body: `{}`},
		{method: http.MethodPost, path: "/api/admin/projects/default/features/new-checkout/lifecycle/complete", token: adminToken, body: `{"status":"kept"}`},
		{method: http.MethodGet, path: searchPath, token: vicToken},
	} {
		if w := e.do(t, r); w.Code != http.StatusOK {
			t.Errorf("%s %s after the panic: got %d %s, want 200", r.method, r.path, w.Code, w.Body)
		}
	}
}

func TestAPIWithoutMiddlewareFailsClosed(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	r := httptest.NewRequest(http.MethodGet, projectsPath, nil)
	r.Header.Set("Authorization", adminToken)
	w := httptest.NewRecorder()
	e.server.API().Adapter().ServeHTTP(w, r)
	wantError(t, w, http.StatusUnauthorized, nameAuthentication)
}

func TestToAPIError(t *testing.T) {
	cases := []struct {
		err    error
		status int
		name   string
	}{
		{&flagadmin.ValidationError{Fields: []flagadmin.FieldError{{Path: "limit", Message: "bad"}}}, 400, nameBadData},
		{flagadmin.ErrAuthenticationRequired, 401, nameAuthentication},
		{flagadmin.ErrNoAccess, 403, nameNoAccess},
		{flagadmin.ErrNotFound, 404, nameNotFound},
		{flagadmin.ErrConflict, 409, nameConflict},
		{&flagadmin.ReadOnlyError{Source: "postgres://db:5432/unleash"}, 409, nameReadOnly},
		{fmt.Errorf("write: %w", &flagadmin.ReadOnlyError{Source: "postgres://db:5432/unleash"}), 409, nameReadOnly},
		{&http.MaxBytesError{Limit: 10}, 413, nameContentTooLarge},
		{errors.New(fakeSQL), 500, nameInternal},
		{unavailableErr, 503, nameServiceUnavailable},
		{context.DeadlineExceeded, 503, nameServiceUnavailable},
		{fmt.Errorf("search events: %w", context.DeadlineExceeded), 503, nameServiceUnavailable},
		{context.Canceled, 503, nameServiceUnavailable},
		{&humaError{status: 422, msg: "validation failed"}, 400, nameBadData},
		{&humaError{status: 415, msg: "unknown content type"}, 415, nameContentType},
		{&humaError{status: 500, msg: "unexpected", errs: []error{flagadmin.ErrNotFound}}, 404, nameNotFound},
		{&humaError{status: 500, msg: "cannot read request body", errs: []error{errors.New(fakeSQL)}}, 500, nameInternal},
	}
	for _, c := range cases {
		got := toAPIError(c.err)
		if got.status != c.status || got.Name != c.name {
			t.Errorf("%v: got %d %s, want %d %s", c.err, got.status, got.Name, c.status, c.name)
		}
		if got.status == 503 && got.GetHeaders().Get("Retry-After") == "" {
			t.Errorf("%v: 503 without Retry-After", c.err)
		}
		if strings.Contains(got.Message, "SELECT") {
			t.Errorf("%v: message leaks the cause: %q", c.err, got.Message)
		}
	}
}
