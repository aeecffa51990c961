package storecache_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// testNow is the time of the tests' worlds.
var testNow = time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)

// exampleService returns a service without caches over a memstore loaded
// with flagadmin's example seed, and the store.
func exampleService(t *testing.T) (*flagadmin.Service, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	svc := flagadmin.NewService(store, flagadmin.WithClock(func() time.Time { return testNow }))
	f, err := os.Open("../../flagadmin/testdata/seed-example.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := svc.LoadSeed(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	return svc, store
}

// serviceWorld has one project of each mode, users of each root role, and
// events in public, private and no project. The clock is testNow.
const serviceWorld = `{
  "users": [
    {"id": 1, "name": "Ada", "email": "ada@example.com", "rootRole": "Admin"},
    {"id": 2, "name": "Eve", "email": "eve@example.com", "rootRole": "Editor"},
    {"id": 3, "name": "Vic", "email": "vic@example.com", "rootRole": "Viewer"},
    {"id": 4, "name": "Mia", "email": "mia@example.com", "rootRole": "Viewer"},
    {"id": 5, "name": "Gus", "email": "gus@example.com", "rootRole": "Viewer"}
  ],
  "serviceAccounts": [{"id": 10, "name": "CI", "username": "ci", "rootRole": "Editor"}],
  "groups": [{"id": 1, "name": "Insiders", "users": [5]}],
  "projects": [
    {"id": "open", "mode": "open"},
    {"id": "prot", "mode": "protected", "members": [{"userId": 4, "role": "Member"}]},
    {"id": "priv", "mode": "private", "members": [{"userId": 4, "role": "Owner"}, {"groupId": 1, "role": "Member"}]}
  ],
  "features": [
    {"name": "f-open", "project": "open", "tags": [{"type": "simple", "value": "shop"}]},
    {"name": "f-prot", "project": "prot"},
    {"name": "f-priv", "project": "priv"},
    {"name": "f-gone", "project": "open", "archivedAt": "2025-01-01T00:00:00Z"}
  ],
  "apiTokens": [{"secret": "user:ci", "userId": 10}],
  "events": [
    {"type": "feature-created", "createdBy": "x", "project": "open", "featureName": "f-open", "createdAt": "2025-03-01T00:00:00Z"},
    {"type": "feature-created", "createdBy": "x", "project": "prot", "featureName": "f-prot", "createdAt": "2025-03-02T00:00:00Z"},
    {"type": "feature-created", "createdBy": "x", "project": "priv", "featureName": "f-priv", "createdAt": "2025-03-03T00:00:00Z"},
    {"type": "user-created", "createdBy": "x", "createdAt": "2025-03-04T00:00:00Z"}
  ]
}`

func userPrincipal(t *testing.T, store flagadmin.Store, id int64) flagadmin.Principal {
	t.Helper()
	u, err := store.User(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return flagadmin.AsUser(u)
}

func eventIDs(events []flagadmin.Event) string {
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = strconv.FormatInt(e.ID, 10)
	}
	return strings.Join(ids, " ")
}

func ptr[T any](v T) *T { return &v }
