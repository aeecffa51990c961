package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// Tokens of the test world.
const (
	adminToken  = "*:*.admin-secret"
	clientToken = "default:development.client-secret"
	eveToken    = "user:eve-secret" // root Editor
	vicToken    = "user:vic-secret" // root Viewer
)

// worldEvents is how many events the test world holds: more than two pages
// of DefaultWalkPageSize.
const worldEvents = 2*client.DefaultWalkPageSize + 37

// worldStart is the createdAt of the first event; each next one is a
// minute later.
var worldStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// worldSeed returns the seed of the test world: users, a service account
// (id 10), an open project with a feature, a private project, and
// worldEvents events, every third one in the private project.
func worldSeed(t testing.TB) string {
	t.Helper()
	events := make([]map[string]any, worldEvents)
	for i := range events {
		project, feature := "default", "new-checkout"
		if i%3 == 2 {
			project, feature = "hidden", "secret-flag"
		}
		events[i] = map[string]any{
			"type": "feature-updated", "createdBy": "ada@example.com", "createdByUserId": 1,
			"createdAt": worldStart.Add(time.Duration(i) * time.Minute), "project": project,
			"featureName": feature, "data": map[string]any{"n": i + 1}, "tags": []any{},
		}
	}
	seed := map[string]any{
		"users": []any{
			map[string]any{"id": 1, "name": "Ada Admin", "email": "ada@example.com", "rootRole": "Admin"},
			map[string]any{"id": 2, "name": "Eve Editor", "email": "eve@example.com", "rootRole": "Editor"},
			map[string]any{"id": 3, "name": "Vic Viewer", "email": "vic@example.com", "rootRole": "Viewer"},
		},
		"serviceAccounts": []any{map[string]any{"id": 10, "name": "CI bot", "username": "ci-bot", "rootRole": "Editor"}},
		"projects": []any{
			map[string]any{"id": "default", "name": "Default", "description": "Default project", "mode": "open",
				"createdAt": "2025-01-01T00:00:00Z", "members": []any{map[string]any{"userId": 1, "role": "Owner"}}},
			map[string]any{"id": "hidden", "name": "Hidden", "mode": "private", "createdAt": "2025-01-01T00:00:00Z"},
		},
		"features": []any{
			map[string]any{"name": "new-checkout", "project": "default", "type": "release", "createdAt": "2025-01-02T00:00:00Z",
				"tags": []any{map[string]any{"type": "simple", "value": "checkout"}}},
			map[string]any{"name": "secret-flag", "project": "hidden", "type": "permission", "createdAt": "2025-01-02T00:00:00Z"},
		},
		"apiTokens": []any{
			map[string]any{"secret": adminToken, "type": "admin", "name": "admin"},
			map[string]any{"secret": clientToken, "type": "client", "name": "sdk"},
			map[string]any{"secret": eveToken, "userId": 2, "name": "eve laptop"},
			map[string]any{"secret": vicToken, "userId": 3, "name": "vic laptop"},
		},
		"events": events,
	}
	b, err := json.Marshal(seed)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// backend is a real flagadmin server over one store.
type backend struct {
	name string
	open func(t *testing.T) flagadmin.Store
}

// backends are the stores the client is tested over.
var backends = []backend{
	{"memstore", func(t *testing.T) flagadmin.Store { return memstore.New() }},
	{"sqlite", func(t *testing.T) flagadmin.Store {
		s, err := bunstore.Open(context.Background(), dbtest.SQLite(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

// server is a running flagadmin server with its request counter.
type server struct {
	*httptest.Server
	svc      *flagadmin.Service
	store    flagadmin.Store // the service's
	requests atomic.Int64
	mu       sync.Mutex
	paths    []string // request paths with queries, in order
}

// startServer seeds store with the test world and serves it with httpapi.
func startServer(t *testing.T, store flagadmin.Store) *server {
	t.Helper()
	svc := flagadmin.NewService(store)
	if err := svc.LoadSeed(context.Background(), strings.NewReader(worldSeed(t))); err != nil {
		t.Fatalf("load seed: %v", err)
	}
	s := &server{svc: svc, store: store}
	h := httpapi.New(svc, httpapi.Config{}).Handler()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.RequestURI())
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// newClient returns a client of url with token and fast retries.
func newClient(t testing.TB, url, token string, opts ...client.Option) *client.Client {
	t.Helper()
	opts = append([]client.Option{client.WithRetryPolicy(client.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})}, opts...)
	c, err := client.New(url, token, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantAPIError asserts that err is a *client.Error of status and name with
// an error id, matching kind with errors.Is (when kind is not nil).
func wantAPIError(t *testing.T, err error, status int, name string, kind error) *client.Error {
	t.Helper()
	ce, ok := err.(*client.Error)
	if !ok {
		t.Fatalf("got %T (%v), want a *client.Error", err, err)
	}
	if ce.Status != status || ce.Name != name {
		t.Errorf("got %d %s, want %d %s (%v)", ce.Status, ce.Name, status, name, err)
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("errors.Is(%v, %v) = false, want true", err, kind)
	}
	return ce
}

func ptr[T any](v T) *T { return &v }

func fmtIDs(ids []int64) string {
	if len(ids) > 8 {
		return fmt.Sprintf("%v ... %v (%d)", ids[:4], ids[len(ids)-4:], len(ids))
	}
	return fmt.Sprint(ids)
}
