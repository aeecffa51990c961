package flagadmin_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

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

func serviceWorldService(t *testing.T) (*flagadmin.Service, *memstore.Store) {
	t.Helper()
	svc, store := newService(t)
	if err := svc.LoadSeed(context.Background(), strings.NewReader(serviceWorld)); err != nil {
		t.Fatalf("LoadSeed: %v", err)
	}
	return svc, store
}

func userPrincipal(t *testing.T, store flagadmin.Store, id int64) flagadmin.Principal {
	t.Helper()
	u, err := store.User(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return flagadmin.AsUser(u)
}

func TestCompleteLifecyclePermissions(t *testing.T) {
	tests := []struct {
		name    string
		user    int64 // 0: admin token
		project string
		feature string
		want    error // nil: allowed
	}{
		{"admin token", 0, "priv", "f-priv", nil},
		{"root Admin on private", 1, "priv", "f-priv", nil},
		{"Editor on open", 2, "open", "f-open", nil},
		{"Editor on protected", 2, "prot", "f-prot", flagadmin.ErrNoAccess},
		{"Editor on private is not told it exists", 2, "priv", "f-priv", flagadmin.ErrNotFound},
		{"Editor service account on open", 10, "open", "f-open", nil},
		{"Viewer on open", 3, "open", "f-open", flagadmin.ErrNoAccess},
		{"Viewer member of protected", 4, "prot", "f-prot", nil},
		{"Viewer owner of private", 4, "priv", "f-priv", nil},
		{"Viewer member through a group", 5, "priv", "f-priv", nil},
		{"Viewer not a member of protected", 5, "prot", "f-prot", flagadmin.ErrNoAccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, store := serviceWorldService(t)
			p := flagadmin.AdminToken("admin")
			if tt.user != 0 {
				p = userPrincipal(t, store, tt.user)
			}
			err := svc.CompleteLifecycle(context.Background(), p, tt.project, tt.feature, flagadmin.CompleteRequest{Status: flagadmin.StatusDiscarded})
			events := allEvents(t, store)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CompleteLifecycle: %v", err)
				}
				if events[0].Type != "feature-completed" {
					t.Errorf("newest event %q, want feature-completed", events[0].Type)
				}
				return
			}
			wantKind(t, err, tt.want)
			if len(events) != 4 {
				t.Errorf("store has %d events after a refused completion, want 4", len(events))
			}
		})
	}
}

func TestCompleteLifecycle(t *testing.T) {
	svc, store := serviceWorldService(t)
	ctx := context.Background()
	eve := userPrincipal(t, store, 2)
	complete := func(status string, value *string) error {
		return svc.CompleteLifecycle(ctx, eve, "open", "f-open", flagadmin.CompleteRequest{Status: status, StatusValue: value})
	}
	if err := complete("kept", ptr("v1")); err != nil {
		t.Fatal(err)
	}
	e := allEvents(t, store)[0]
	if e.Type != "feature-completed" || e.CreatedBy != "eve@example.com" || *e.CreatedByUserID != 2 || *e.Project != "open" ||
		*e.FeatureName != "f-open" || !e.CreatedAt.Equal(testNow) || len(e.Tags) != 1 || e.Tags[0].Value != "shop" {
		t.Errorf("event = %+v", e)
	}
	wantData(t, e.Data, `{"status":"kept","statusValue":"v1","kept":true}`)
	if f, _ := store.Feature(ctx, "f-open"); f.Lifecycle != (flagadmin.Lifecycle{Stage: "completed", Status: "kept", StatusValue: "v1"}) {
		t.Errorf("lifecycle = %+v", f.Lifecycle)
	}

	// The same outcome and value: nothing changes, nothing is recorded.
	if err := complete("kept", ptr("v1")); err != nil {
		t.Fatal(err)
	}
	if n := len(allEvents(t, store)); n != 5 {
		t.Errorf("store has %d events after a repeat, want 5", n)
	}
	// Another outcome replaces the first and is recorded.
	if err := complete("discarded", nil); err != nil {
		t.Fatal(err)
	}
	events := allEvents(t, store)
	if len(events) != 6 {
		t.Fatalf("store has %d events, want 6", len(events))
	}
	wantData(t, events[0].Data, `{"status":"discarded","kept":false}`)
	if f, _ := store.Feature(ctx, "f-open"); f.Lifecycle != (flagadmin.Lifecycle{Stage: "completed", Status: "discarded"}) {
		t.Errorf("lifecycle = %+v", f.Lifecycle)
	}
	// Archived features can be completed too.
	if err := svc.CompleteLifecycle(ctx, eve, "open", "f-gone", flagadmin.CompleteRequest{Status: "kept"}); err != nil {
		t.Errorf("archived feature: %v", err)
	}
}

func TestCompleteLifecycleRejects(t *testing.T) {
	tests := []struct {
		name             string
		project, feature string
		req              flagadmin.CompleteRequest
		kind             error
		paths            []string
	}{
		{"no status", "open", "f-open", flagadmin.CompleteRequest{}, flagadmin.ErrValidation, []string{"status"}},
		{"unknown status", "open", "f-open", flagadmin.CompleteRequest{Status: "Kept"}, flagadmin.ErrValidation, []string{"status"}},
		{"statusValue too long", "open", "f-open", flagadmin.CompleteRequest{Status: "kept", StatusValue: ptr(strings.Repeat("é", 256))}, flagadmin.ErrValidation, []string{"statusValue"}},
		{"both", "open", "f-open", flagadmin.CompleteRequest{Status: "x", StatusValue: ptr(strings.Repeat("v", 256))}, flagadmin.ErrValidation, []string{"status", "statusValue"}},
		{"unknown project", "nope", "f-open", flagadmin.CompleteRequest{Status: "kept"}, flagadmin.ErrNotFound, nil},
		{"unknown feature", "open", "nope", flagadmin.CompleteRequest{Status: "kept"}, flagadmin.ErrNotFound, nil},
		{"feature of another project", "open", "f-prot", flagadmin.CompleteRequest{Status: "kept"}, flagadmin.ErrNotFound, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, store := serviceWorldService(t)
			err := svc.CompleteLifecycle(context.Background(), flagadmin.AdminToken("admin"), tt.project, tt.feature, tt.req)
			if tt.kind == flagadmin.ErrValidation {
				ve := wantValidation(t, err, tt.paths...)
				if len(ve.Fields) != len(tt.paths) {
					t.Errorf("got fields %q, want %q", fieldPaths(ve), tt.paths)
				}
			} else {
				wantKind(t, err, tt.kind)
			}
			if n := len(allEvents(t, store)); n != 4 {
				t.Errorf("store has %d events, want 4", n)
			}
			if f, _ := store.Feature(context.Background(), "f-prot"); f.Lifecycle.Stage != flagadmin.StageInitial {
				t.Errorf("f-prot lifecycle = %+v, want unchanged", f.Lifecycle)
			}
		})
	}
	// A statusValue of exactly 255 characters is fine.
	svc, _ := serviceWorldService(t)
	if err := svc.CompleteLifecycle(context.Background(), flagadmin.System, "open", "f-open", flagadmin.CompleteRequest{Status: "kept", StatusValue: ptr(strings.Repeat("é", 255))}); err != nil {
		t.Errorf("255 characters: %v", err)
	}
}

// TestCompleteLifecyclePrecedence checks that permission and existence are
// decided before the body is validated: 403 and 404 before 400.
func TestCompleteLifecyclePrecedence(t *testing.T) {
	svc, store := serviceWorldService(t)
	ctx := context.Background()
	bad := flagadmin.CompleteRequest{Status: "maybe"}
	tests := []struct {
		name    string
		p       flagadmin.Principal
		project string
		want    error
	}{
		{"Viewer on open", userPrincipal(t, store, 3), "open", flagadmin.ErrNoAccess},
		{"Editor on protected", userPrincipal(t, store, 2), "prot", flagadmin.ErrNoAccess},
		{"Editor on invisible private", userPrincipal(t, store, 2), "priv", flagadmin.ErrNotFound},
		{"unknown project", flagadmin.AdminToken("admin"), "nope", flagadmin.ErrNotFound},
		{"client token", flagadmin.Principal{Kind: flagadmin.PrincipalClientToken, Name: "sdk"}, "open", flagadmin.ErrNoAccess},
		{"allowed caller gets the validation error", userPrincipal(t, store, 2), "open", flagadmin.ErrValidation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := svc.CompleteLifecycle(ctx, tt.p, tt.project, "f-open", bad)
			wantKind(t, err, tt.want)
			if tt.want == flagadmin.ErrValidation {
				wantValidation(t, err, "status")
				if g, err := svc.AuthorizeLifecycle(ctx, tt.p, tt.project); err != nil || g == nil {
					t.Errorf("AuthorizeLifecycle: %v, %v, want a grant", g, err)
				}
				return
			}
			if errors.Is(err, flagadmin.ErrValidation) {
				t.Errorf("got %v, which is also a validation error", err)
			}
			g, err := svc.AuthorizeLifecycle(ctx, tt.p, tt.project)
			wantKind(t, err, tt.want)
			if g != nil {
				t.Errorf("AuthorizeLifecycle: got a grant with the error %v", err)
			}
		})
	}
}

func TestDeleteServiceAccount(t *testing.T) {
	svc, store := serviceWorldService(t)
	ctx := context.Background()
	for _, who := range []int64{2, 3} {
		wantKind(t, svc.DeleteServiceAccount(ctx, userPrincipal(t, store, who), "10"), flagadmin.ErrNoAccess)
	}
	for _, id := range []string{"99", "x", "", "1", "-10", "10.0"} {
		wantKind(t, svc.DeleteServiceAccount(ctx, flagadmin.AdminToken("admin"), id), flagadmin.ErrNotFound)
	}
	if n := len(allEvents(t, store)); n != 4 {
		t.Fatalf("store has %d events after refused deletes, want 4", n)
	}
	if err := svc.DeleteServiceAccount(ctx, userPrincipal(t, store, 1), "10"); err != nil {
		t.Fatal(err)
	}
	e := allEvents(t, store)[0]
	if e.Type != "service-account-deleted" || e.CreatedBy != "ada@example.com" || *e.CreatedByUserID != 1 || e.Data != nil || e.Project != nil {
		t.Errorf("event = %+v", e)
	}
	wantData(t, e.PreData, `{"id":10,"name":"CI","username":"ci","rootRole":"Editor"}`)
	if _, err := store.User(ctx, 10); !errors.Is(err, flagadmin.ErrNotFound) {
		t.Errorf("service account still stored: %v", err)
	}
	if _, err := svc.Authenticate(ctx, "user:ci"); !errors.Is(err, flagadmin.ErrAuthenticationRequired) {
		t.Errorf("token of the deleted account: got %v, want ErrAuthenticationRequired", err)
	}
	wantKind(t, svc.DeleteServiceAccount(ctx, flagadmin.AdminToken("admin"), "10"), flagadmin.ErrNotFound)
	if n := len(allEvents(t, store)); n != 5 {
		t.Errorf("store has %d events, want 5", n)
	}
}

func TestSearchVisibility(t *testing.T) {
	svc, store := serviceWorldService(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		p        flagadmin.Principal
		params   flagadmin.EventSearchParams
		wantIDs  string
		wantSeen int
	}{
		{"admin token sees everything", flagadmin.AdminToken("admin"), flagadmin.EventSearchParams{}, "4 3 2 1", 4},
		{"root Admin sees everything", userPrincipal(t, store, 1), flagadmin.EventSearchParams{}, "4 3 2 1", 4},
		{"Editor sees neither private nor project-less events", userPrincipal(t, store, 2), flagadmin.EventSearchParams{}, "2 1", 2},
		{"member sees the private project", userPrincipal(t, store, 4), flagadmin.EventSearchParams{}, "3 2 1", 3},
		{"group member sees the private project", userPrincipal(t, store, 5), flagadmin.EventSearchParams{}, "3 2 1", 3},
		{"filter on a hidden project finds nothing", userPrincipal(t, store, 2), flagadmin.EventSearchParams{Project: "IS:priv"}, "", 0},
		{"filter on hidden and visible projects", userPrincipal(t, store, 2), flagadmin.EventSearchParams{Project: "IS_ANY_OF:priv,open"}, "1", 1},
		{"paging keeps the total", flagadmin.System, flagadmin.EventSearchParams{Limit: "2", Offset: "1"}, "3 2", 4},
		{"offset past the end", flagadmin.System, flagadmin.EventSearchParams{Offset: "10"}, "", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := svc.SearchEvents(ctx, tt.p, tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if got := eventIDs(page.Events); got != tt.wantIDs || page.Total != tt.wantSeen {
				t.Errorf("events %q total %d, want %q total %d", got, page.Total, tt.wantIDs, tt.wantSeen)
			}
			if page.Events == nil {
				t.Error("events is nil, want an empty list")
			}
		})
	}
}

func TestDeprecatedSearchVisibility(t *testing.T) {
	svc, store := serviceWorldService(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		p       flagadmin.Principal
		req     flagadmin.DeprecatedSearchRequest
		wantIDs string
		total   int
	}{
		{"admin", flagadmin.AdminToken("admin"), flagadmin.DeprecatedSearchRequest{}, "4 3 2 1", 4},
		{"Editor", userPrincipal(t, store, 2), flagadmin.DeprecatedSearchRequest{}, "2 1", 2},
		{"Editor asking for the private project", userPrincipal(t, store, 2), flagadmin.DeprecatedSearchRequest{Project: ptr("priv")}, "", 0},
		{"query on type", flagadmin.System, flagadmin.DeprecatedSearchRequest{Query: ptr("USER-CREATED")}, "4", 1},
		{"offset counts matches", flagadmin.System, flagadmin.DeprecatedSearchRequest{Limit: ptr(1), Offset: ptr(1)}, "3", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := svc.DeprecatedSearchEvents(ctx, tt.p, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := eventIDs(page.Events); got != tt.wantIDs || page.Total != tt.total {
				t.Errorf("events %q total %d, want %q total %d", got, page.Total, tt.wantIDs, tt.total)
			}
		})
	}
	_, err := svc.DeprecatedSearchEvents(ctx, flagadmin.System, flagadmin.DeprecatedSearchRequest{Limit: ptr(101)})
	wantValidation(t, err, "limit")
}

// eventIDs lists the ids of events, separated by spaces.
func eventIDs(events []flagadmin.Event) string {
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = strconv.FormatInt(e.ID, 10)
	}
	return strings.Join(ids, " ")
}

// recordingStore records the names of the Store methods called through it.
type recordingStore struct {
	flagadmin.Store
	calls []string
}

func (r *recordingStore) Project(ctx context.Context, id string) (flagadmin.Project, error) {
	r.calls = append(r.calls, "Project")
	return r.Store.Project(ctx, id)
}

func (r *recordingStore) ProjectAccess(ctx context.Context, userID int64) (flagadmin.ProjectAccess, error) {
	r.calls = append(r.calls, "ProjectAccess")
	return r.Store.ProjectAccess(ctx, userID)
}

func (r *recordingStore) Feature(ctx context.Context, name string) (flagadmin.Feature, error) {
	r.calls = append(r.calls, "Feature")
	return r.Store.Feature(ctx, name)
}

func (r *recordingStore) UpdateFeature(ctx context.Context, name string, fn func(*flagadmin.Feature) (*flagadmin.Event, error)) error {
	r.calls = append(r.calls, "UpdateFeature")
	return r.Store.UpdateFeature(ctx, name, fn)
}

// TestLifecycleHiddenProjectSameStoreWork checks that a lifecycle call on a
// private project the caller cannot see does exactly the store work of a
// call on a project that does not exist, so the two 404s cannot be told
// apart by their timing.
func TestLifecycleHiddenProjectSameStoreWork(t *testing.T) {
	for _, user := range []int64{2, 3} { // an Editor and a Viewer, neither a member of priv
		_, store := serviceWorldService(t)
		rec := &recordingStore{Store: store}
		svc := flagadmin.NewService(rec, fixedClock(testNow))
		p := userPrincipal(t, store, user)
		req := flagadmin.CompleteRequest{Status: flagadmin.StatusKept}

		rec.calls = nil
		err := svc.CompleteLifecycle(context.Background(), p, "priv", "f-priv", req)
		wantKind(t, err, flagadmin.ErrNotFound)
		hidden := slices.Clone(rec.calls)

		rec.calls = nil
		err = svc.CompleteLifecycle(context.Background(), p, "no-such-project", "f-priv", req)
		wantKind(t, err, flagadmin.ErrNotFound)
		missing := slices.Clone(rec.calls)

		if !slices.Equal(hidden, missing) {
			t.Errorf("user %d: store calls for a hidden private project %v, for a missing project %v: want the same", user, hidden, missing)
		}
		if hiddenMsg, missingMsg := messageOf(t, svc, p, "priv"), messageOf(t, svc, p, "no-such-project"); strings.ReplaceAll(hiddenMsg, "priv", "X") != strings.ReplaceAll(missingMsg, "no-such-project", "X") {
			t.Errorf("user %d: messages differ beyond the id: %q vs %q", user, hiddenMsg, missingMsg)
		}
	}
}

// messageOf returns the error message of p's completion in project.
func messageOf(t *testing.T, svc *flagadmin.Service, p flagadmin.Principal, project string) string {
	t.Helper()
	err := svc.CompleteLifecycle(context.Background(), p, project, "f-priv", flagadmin.CompleteRequest{Status: flagadmin.StatusKept})
	if err == nil {
		t.Fatalf("completion in %s succeeded, want 404", project)
	}
	return err.Error()
}
