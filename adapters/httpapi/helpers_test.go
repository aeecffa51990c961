package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// Tokens of the test world.
const (
	adminToken    = "*:*.admin-secret"
	clientToken   = "default:development.client-secret"
	frontendToken = "default:development.frontend-secret"
	eveToken      = "user:eve-secret"  // root Editor
	vicToken      = "user:vic-secret"  // root Viewer
	olgaToken     = "user:olga-secret" // root Viewer, member of the private project
	adaToken      = "user:ada-secret"  // root Admin
	ciToken       = "user:ci-secret"   // service account 10
	expiredToken  = "user:expired-secret"
	unknownToken  = "*:*.no-such-secret"
	malformedAuth = "not a token"
)

// fakeSQL is driver text a broken store returns; it must never reach a response.
const fakeSQL = `ERROR: relation "events" does not exist (SQLSTATE 42P01) in SELECT * FROM events WHERE secret = 'hunter2'`

// testSeed is the world every test starts from.
const testSeed = `{
  "users": [
    {"id": 1, "name": "Ada Admin", "username": "ada", "email": "ada@example.com", "rootRole": "Admin"},
    {"id": 2, "name": "Eve Editor", "email": "eve@example.com", "rootRole": "Editor"},
    {"id": 3, "name": "Vic Viewer", "email": "vic@example.com", "rootRole": "Viewer"},
    {"id": 4, "name": "Olga Outsider", "email": "olga@example.com", "rootRole": "Viewer"}
  ],
  "serviceAccounts": [
    {"id": 10, "name": "CI bot", "username": "ci-bot", "rootRole": "Editor"},
    {"id": 11, "name": "Ops bot", "username": "ops-bot", "rootRole": "Viewer"}
  ],
  "projects": [
    {"id": "default", "name": "Default", "description": "Default project", "mode": "open",
     "createdAt": "2025-01-01T00:00:00Z", "members": [{"userId": 1, "role": "Owner"}]},
    {"id": "secure", "name": "Secure", "mode": "protected", "createdAt": "2025-01-01T00:00:00Z"},
    {"id": "hidden", "name": "Hidden", "mode": "private", "createdAt": "2025-01-01T00:00:00Z",
     "members": [{"userId": 4, "role": "Member"}]},
    {"id": "old", "name": "Old", "mode": "open", "createdAt": "2024-01-01T00:00:00Z", "archivedAt": "2024-06-01T00:00:00Z"}
  ],
  "features": [
    {"name": "new-checkout", "project": "default", "type": "release", "createdAt": "2025-01-02T00:00:00Z",
     "tags": [{"type": "simple", "value": "checkout"}]},
    {"name": "guarded", "project": "secure", "type": "kill-switch", "createdAt": "2025-01-02T00:00:00Z"},
    {"name": "secret-flag", "project": "hidden", "type": "permission", "createdAt": "2025-01-02T00:00:00Z"}
  ],
  "apiTokens": [
    {"secret": "*:*.admin-secret", "type": "admin", "name": "admin"},
    {"secret": "default:development.client-secret", "type": "client", "name": "sdk"},
    {"secret": "default:development.frontend-secret", "type": "frontend", "name": "web"},
    {"secret": "user:ada-secret", "userId": 1, "name": "ada laptop"},
    {"secret": "user:eve-secret", "userId": 2, "name": "eve laptop"},
    {"secret": "user:vic-secret", "userId": 3, "name": "vic laptop"},
    {"secret": "user:olga-secret", "userId": 4, "name": "olga laptop"},
    {"secret": "user:ci-secret", "userId": 10, "name": "ci"},
    {"secret": "user:expired-secret", "userId": 3, "name": "old", "expiresAt": "2020-01-01T00:00:00Z"}
  ],
  "events": [
    {"type": "feature-created", "createdBy": "ada@example.com", "createdByUserId": 1, "createdAt": "2025-01-02T00:00:00Z",
     "project": "default", "featureName": "new-checkout", "data": {"name": "new-checkout"}, "tags": [{"type": "simple", "value": "checkout"}]},
    {"type": "feature-environment-enabled", "createdBy": "ada@example.com", "createdByUserId": 1, "createdAt": "2025-01-03T10:00:00Z",
     "project": "default", "featureName": "new-checkout", "environment": "production", "data": {"enabled": true}},
    {"type": "feature-created", "createdBy": "ada@example.com", "createdByUserId": 1, "createdAt": "2025-01-04T00:00:00Z",
     "project": "hidden", "featureName": "secret-flag", "data": {"name": "secret-flag"}},
    {"type": "user-created", "createdBy": "admin", "createdByUserId": -42, "createdAt": "2025-01-05T00:00:00Z",
     "data": {"name": "Vic Viewer"}},
    {"type": "feature-created", "createdBy": "eve@example.com", "createdByUserId": 2, "createdAt": "2025-01-06T00:00:00Z",
     "project": "secure", "featureName": "guarded", "data": {"name": "guarded"}}
  ]
}`

// testNow is the clock of the served Service.
var testNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// testEnv is a Server over a seeded memstore, with its log.
type testEnv struct {
	svc     *flagadmin.Service
	store   *memstore.Store
	served  flagadmin.Store // the Store of svc
	server  *Server
	handler http.Handler
	logs    *syncbuffer.Buffer
}

// newEnv seeds a memstore with testSeed and serves it, with the result
// cache of the flagadmin server when the served store is a
// flagadmin.VersionedStore (a storecache.Store over it, with its body
// cache, each request in its own scope). wrap, when not nil, wraps the
// store the server's Service uses (for fault injection).
func newEnv(t *testing.T, cfg Config, wrap func(flagadmin.Store) flagadmin.Store) *testEnv {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	if err := flagadmin.NewService(store).LoadSeed(ctx, strings.NewReader(testSeed)); err != nil {
		t.Fatalf("load seed: %v", err)
	}
	var served flagadmin.Store = store
	if wrap != nil {
		served = wrap(store)
	}
	clock := func() time.Time { return testNow }
	if vs, ok := served.(flagadmin.VersionedStore); ok {
		cs := storecache.New(vs, storecache.Options{ResultCacheSize: storecache.DefaultResultCacheSize, Clock: clock})
		served, cfg.BodyCache = cs, cs.Bodies()
	}
	svc := flagadmin.NewService(served, flagadmin.WithClock(clock))
	logs := &syncbuffer.Buffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s := New(svc, cfg)
	return &testEnv{svc: svc, store: store, served: served, server: s, handler: storecache.Scope(s.Handler()), logs: logs}
}

// request describes one call.
type request struct {
	method, path, token string
	body                string
	// contentType defaults to application/json when body is set.
	contentType string
	header      map[string]string
	// chunked sends the body without a Content-Length.
	chunked bool
}

// do serves r through the production handler.
func (e *testEnv) do(t *testing.T, r request) *httptest.ResponseRecorder {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req := httptest.NewRequest(r.method, r.path, body)
	if r.chunked {
		req.ContentLength = -1
		req.Body = io.NopCloser(strings.NewReader(r.body))
	}
	if r.token != "" {
		req.Header.Set("Authorization", r.token)
	}
	switch {
	case r.contentType != "":
		req.Header.Set("Content-Type", r.contentType)
	case r.body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	e.handler.ServeHTTP(w, req)
	return w
}

// errorResponse is the decoded error body.
type errorResponse struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Message string `json:"message"`
	Details []struct {
		Message string `json:"message"`
		Path    string `json:"path"`
	} `json:"details"`
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// wantError checks an error response: status, JSON Content-Type, only the
// keys id, name, message, details; id a UUID v4; the name; a message; and
// details on 400.
func wantError(t *testing.T, w *httptest.ResponseRecorder, status int, name string) errorResponse {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status: got %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
		t.Fatalf("error body is not a JSON object: %v; body %s", err, w.Body)
	}
	for k := range raw {
		if !slices.Contains([]string{"id", "name", "message", "details"}, k) {
			t.Errorf("error body has unexpected key %q: %s", k, w.Body)
		}
	}
	var e errorResponse
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("decode error body: %v", err)
	}
	if !uuidV4.MatchString(e.ID) {
		t.Errorf("id: got %q, want a UUID v4", e.ID)
	}
	if e.Name != name {
		t.Errorf("name: got %q, want %q; body %s", e.Name, name, w.Body)
	}
	if e.Message == "" {
		t.Errorf("message is empty")
	}
	if status == http.StatusBadRequest && len(e.Details) == 0 {
		t.Errorf("a 400 needs details: %s", w.Body)
	}
	for i, d := range e.Details {
		if d.Message == "" {
			t.Errorf("details[%d].message is empty", i)
		}
	}
	return e
}

// wantDetailPath checks that a detail names path.
func wantDetailPath(t *testing.T, e errorResponse, path string) {
	t.Helper()
	for _, d := range e.Details {
		if d.Path == path {
			return
		}
	}
	t.Errorf("no detail with path %q in %+v", path, e.Details)
}

// wantEmpty200 checks a 200 response without a body.
func wantEmpty200(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status: got %d, want 200; body %s", w.Code, w.Body)
	}
	if w.Body.Len() != 0 {
		t.Errorf("body: got %q, want none", w.Body)
	}
}

// decodeJSON decodes a 200 JSON response.
func decodeJSON[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status: got %d, want 200; body %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	var v T
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %s: %v", w.Body, err)
	}
	return v
}

// keysOf returns the sorted keys of a JSON object.
func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %s", raw)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// faultyStore is a Store whose data operations and Ping fail with err (or
// panic when panics is set); token lookups work unless lookupErr is set, so
// requests authenticate and reach the failing operation.
type faultyStore struct {
	flagadmin.Store
	err       error
	lookupErr error
	panics    bool
}

func (f *faultyStore) fail() error {
	if f.panics {
		panic("store exploded")
	}
	return f.err
}

func (f *faultyStore) LookupToken(ctx context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	if f.lookupErr != nil {
		return flagadmin.APIToken{}, nil, f.lookupErr
	}
	return f.Store.LookupToken(ctx, hash)
}

func (f *faultyStore) Project(context.Context, string) (flagadmin.Project, error) {
	return flagadmin.Project{}, f.fail()
}

func (f *faultyStore) SearchEvents(context.Context, flagadmin.EventQuery) (flagadmin.EventPage, error) {
	return flagadmin.EventPage{}, f.fail()
}

func (f *faultyStore) ProjectStats(context.Context, flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	return nil, f.fail()
}

func (f *faultyStore) DeleteUser(context.Context, int64, func(flagadmin.User) (flagadmin.Event, error)) error {
	return f.fail()
}

func (f *faultyStore) Ping(context.Context) error { return f.fail() }

// failWith returns a wrap function for newEnv.
func failWith(err error) func(flagadmin.Store) flagadmin.Store {
	return func(s flagadmin.Store) flagadmin.Store { return &faultyStore{Store: s, err: err} }
}

// unavailableErr is what a store returns when its database is down.
var unavailableErr = errors.Join(flagadmin.ErrUnavailable, errors.New("dial tcp 10.0.0.1:5432: connect: connection refused"))

// mustNotLeak checks a body shows none of the cause's text.
func mustNotLeak(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	for _, s := range []string{"SELECT", "SQLSTATE", "relation", "hunter2", "dial tcp", "connection refused", "goroutine", ".go:"} {
		if strings.Contains(w.Body.String(), s) {
			t.Errorf("response leaks %q: %s", s, w.Body)
		}
	}
}
