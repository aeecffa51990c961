package flagadmin_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestParseSeedExample(t *testing.T) {
	f, err := os.Open("testdata/seed-example.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seed, err := flagadmin.ParseSeed(f)
	if err != nil {
		t.Fatalf("ParseSeed: %v", err)
	}
	counts := map[string][2]int{
		"users":           {len(seed.Users), 3},
		"serviceAccounts": {len(seed.ServiceAccounts), 1},
		"groups":          {len(seed.Groups), 1},
		"projects":        {len(seed.Projects), 1},
		"features":        {len(seed.Features), 1},
		"apiTokens":       {len(seed.APITokens), 5},
		"events":          {len(seed.Events), 1},
	}
	for key, c := range counts {
		if c[0] != c[1] {
			t.Errorf("%s: got %d entries, want %d", key, c[0], c[1])
		}
	}
	p := seed.Projects[0]
	if p.ID != "default" || p.Mode != flagadmin.ModeOpen || len(p.Members) != 2 || *p.Members[0].UserID != 1 ||
		p.Members[0].Role != flagadmin.ProjectRoleOwner || *p.Members[1].GroupID != 1 || len(p.FavoritedBy) != 1 {
		t.Errorf("project = %+v", p)
	}
	ft := seed.Features[0]
	if ft.Name != "new-checkout" || ft.LastSeenAt == nil || !ft.LastSeenAt.Equal(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)) ||
		len(ft.Tags) != 1 || ft.Tags[0] != (flagadmin.Tag{Type: "simple", Value: "checkout"}) {
		t.Errorf("feature = %+v", ft)
	}
	tok := seed.APITokens[4]
	if tok.Secret != "user:ci-secret" || tok.UserID == nil || *tok.UserID != 10 || tok.ExpiresAt == nil {
		t.Errorf("token = %+v", tok)
	}
	if e := seed.Events[0]; e.CreatedByUserID == nil || *e.CreatedByUserID != 1 || e.Environment != nil || e.PreData != nil && string(e.PreData) != "null" {
		t.Errorf("event = %+v", e)
	}
}

func TestLoadSeedExample(t *testing.T) {
	svc, store := exampleService(t)
	ctx := context.Background()
	sa, err := store.User(ctx, 10)
	if err != nil || !sa.IsService || sa.Username != "ci-bot" || sa.RootRole != flagadmin.RoleEditor {
		t.Errorf("service account 10 = %+v, %v", sa, err)
	}
	if u, err := store.User(ctx, 2); err != nil || u.IsService {
		t.Errorf("user 2 = %+v, %v; want a normal user", u, err)
	}
	if g, err := store.Group(ctx, 1); err != nil || g.Name != "Platform" || len(g.Users) != 2 {
		t.Errorf("group 1 = %+v, %v", g, err)
	}
	if ft, err := store.Feature(ctx, "new-checkout"); err != nil || ft.Type != flagadmin.TypeRelease || ft.Lifecycle.Stage != flagadmin.StageInitial {
		t.Errorf("feature = %+v, %v; want a release in the initial stage", ft, err)
	}
	tok, _, err := store.LookupToken(ctx, flagadmin.HashSecret("default:development.client-secret"))
	if err != nil || tok.Type != flagadmin.TokenClient || tok.Project != "default" || tok.Environment != "development" || tok.Name != "sdk" {
		t.Errorf("client token = %+v, %v", tok, err)
	}
	// The store holds exactly the file's events: loading records none of its own.
	events := allEvents(t, store)
	if len(events) != 1 {
		t.Fatalf("store has %d events, want the 1 of the file", len(events))
	}
	e := events[0]
	if e.ID != 1 || e.Type != "feature-created" || e.CreatedBy != "ada@example.com" || *e.CreatedByUserID != 1 ||
		!e.CreatedAt.Equal(time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)) || *e.Project != "default" || *e.FeatureName != "new-checkout" ||
		e.Environment != nil || string(e.Data) != `{"name":"new-checkout"}` || e.PreData != nil || len(e.Tags) != 1 {
		t.Errorf("event = %+v", e)
	}
	if _, err := svc.Authenticate(ctx, "user:eve-secret"); err != nil {
		t.Errorf("seeded personal token: %v", err)
	}
}

func TestLoadSeedEventsInFileOrder(t *testing.T) {
	svc, store := newService(t)
	seed := `{"events": [
		{"type": "feature-created", "createdBy": "a", "createdAt": "2025-01-03T00:00:00Z"},
		{"type": "feature-updated", "createdBy": "b", "createdAt": "2025-01-01T00:00:00Z"},
		{"type": "feature-archived", "createdBy": "c"}
	]}`
	if err := svc.LoadSeed(context.Background(), strings.NewReader(seed)); err != nil {
		t.Fatal(err)
	}
	byType := map[string]flagadmin.Event{}
	for _, e := range allEvents(t, store) {
		byType[e.Type] = e
	}
	if byType["feature-created"].ID != 1 || byType["feature-updated"].ID != 2 || byType["feature-archived"].ID != 3 {
		t.Errorf("ids by type = %d %d %d, want 1 2 3", byType["feature-created"].ID, byType["feature-updated"].ID, byType["feature-archived"].ID)
	}
	if got := byType["feature-archived"].CreatedAt; !got.Equal(testNow) {
		t.Errorf("event without createdAt got %v, want the clock's %v", got, testNow)
	}
}

// TestLoadSeedTagColors: a seed file's tags may carry Unleash's color key
// (a color or null); the events keep it as written, and one without the
// key stays without it.
func TestLoadSeedTagColors(t *testing.T) {
	svc, store := newService(t)
	tags := `[{"type":"area","value":"web","color":"#34A853"},{"type":"team","value":"growth","color":null},{"value":"checkout","type":"simple"}]`
	seed := `{"events": [{"type": "feature-untagged", "createdBy": "a", "tags": ` + tags + `}]}`
	if err := svc.LoadSeed(context.Background(), strings.NewReader(seed)); err != nil {
		t.Fatal(err)
	}
	events := allEvents(t, store)
	if len(events) != 1 {
		t.Fatalf("got %d events, want 1", len(events))
	}
	if got, err := json.Marshal(events[0].Tags); err != nil || string(got) != tags {
		t.Errorf("tags: got %s (%v), want %s", got, err, tags)
	}
}

func TestLoadSeedWithoutEventsRecordsNone(t *testing.T) {
	svc, store := newService(t)
	seed := `{"users": [{"id": 1, "email": "a@example.com"}], "projects": [{"id": "p"}],
		"features": [{"name": "f", "project": "p"}], "apiTokens": [{"secret": "*:*.s", "type": "admin"}]}`
	if err := svc.LoadSeed(context.Background(), strings.NewReader(seed)); err != nil {
		t.Fatal(err)
	}
	if events := allEvents(t, store); len(events) != 0 {
		t.Errorf("store has %d events after a seed without events, want 0: %+v", len(events), events)
	}
	if u, _ := store.User(context.Background(), 1); u.RootRole != flagadmin.RoleViewer {
		t.Errorf("root role defaults to %q, want Viewer", u.RootRole)
	}
	if p, _ := store.Project(context.Background(), "p"); p.Name != "p" || p.Mode != flagadmin.ModeOpen || !p.CreatedAt.Equal(testNow) {
		t.Errorf("project defaults = %+v, want name p, mode open, createdAt now", p)
	}
}

func TestParseSeedRejects(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		paths []string
	}{
		{"not JSON", `{"users": [`, []string{""}},
		{"not an object", `[]`, []string{""}},
		{"unknown key", `{"users": [], "flags": []}`, []string{"flags"}},
		{"section not an array", `{"users": {"id": 1}}`, []string{"users"}},
		{"unknown entry field", `{"projects": [{"id": "a"}, {"id": "b", "colour": "red"}]}`, []string{"projects[1].colour"}},
		{"wrong type", `{"projects": [{"id": "a", "mode": 3}]}`, []string{"projects[0].mode"}},
		{"wrong type nested", `{"projects": [{"id": "a", "members": [{"userId": "one", "role": "Owner"}]}]}`, []string{"projects[0].members.userId"}},
		{"wrong id type", `{"users": [{"id": "1", "name": "x"}]}`, []string{"users[0].id"}},
		{"not a date", `{"projects": [{"id": "a"}, {"id": "b"}, {"id": "c", "createdAt": "yesterday"}]}`, []string{"projects[2].createdAt"}},
		{"not a date in a token", `{"apiTokens": [{"secret": "*:*.x", "type": "admin", "expiresAt": "2030-01-01"}]}`, []string{"apiTokens[0].expiresAt"}},
		{"entry not an object", `{"events": ["feature-created"]}`, []string{"events[0]"}},
		{"unknown tag field", `{"events": [{"type": "feature-created", "createdBy": "x", "tags": [{"type": "simple", "value": "ok", "colour": "#FFFFFF"}]}]}`, []string{"events[0].tags"}},
		{"tag color not a string", `{"events": [{"type": "feature-created", "createdBy": "x", "tags": [{"type": "simple", "value": "ok", "color": 7}]}]}`, []string{"events[0].tags"}},
		{"several at once", `{"x": 1, "users": [{"id": true}], "features": [{"name": "f", "stale": "no"}]}`, []string{"x", "users[0].id", "features[0].stale"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seed, err := flagadmin.ParseSeed(strings.NewReader(tt.file))
			ve := wantValidation(t, err, tt.paths...)
			if len(ve.Fields) != len(tt.paths) {
				t.Errorf("got fields %q, want %q", fieldPaths(ve), tt.paths)
			}
			if seed != nil {
				t.Errorf("got a seed with the error")
			}
		})
	}
}

func TestParseSeedReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := flagadmin.ParseSeed(iotest.ErrReader(boom))
	if !errors.Is(err, boom) || errors.Is(err, flagadmin.ErrValidation) {
		t.Errorf("got %v, want the read error, not a validation error", err)
	}
}

func TestApplySeedRejects(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		paths []string
	}{
		{"project mode", `{"projects": [{"id": "a"}, {"id": "b"}, {"id": "c", "mode": "secret"}]}`, []string{"projects[2].mode"}},
		{"project id", `{"projects": [{"id": "has space"}]}`, []string{"projects[0].id"}},
		{"member role", `{"users": [{"id": 1, "name": "a"}], "projects": [{"id": "p", "members": [{"userId": 1, "role": "Boss"}]}]}`, []string{"projects[0].members[0].role"}},
		{"member with user and group", `{"users": [{"id": 1, "name": "a"}], "groups": [{"id": 1, "name": "g"}],
			"projects": [{"id": "p", "members": [{"userId": 1, "groupId": 1, "role": "Owner"}]}]}`, []string{"projects[0].members[0].userId"}},
		{"member with neither", `{"projects": [{"id": "p", "members": [{"role": "Owner"}]}]}`, []string{"projects[0].members[0].userId"}},
		{"root role", `{"users": [{"id": 1, "name": "a", "rootRole": "Root"}]}`, []string{"users[0].rootRole"}},
		{"user without id", `{"users": [{"name": "a"}]}`, []string{"users[0].id"}},
		{"user with negative id", `{"serviceAccounts": [{"id": -3, "name": "a"}]}`, []string{"serviceAccounts[0].id"}},
		{"user without any name", `{"serviceAccounts": [{"id": 3}]}`, []string{"serviceAccounts[0].name"}},
		{"group without name", `{"groups": [{"id": 1}]}`, []string{"groups[0].name"}},
		{"feature type", `{"projects": [{"id": "p"}], "features": [{"name": "f", "project": "p", "type": "bogus"}]}`, []string{"features[0].type"}},
		{"feature name", `{"projects": [{"id": "p"}], "features": [{"name": "f/1", "project": "p"}]}`, []string{"features[0].name"}},
		{"feature without project", `{"features": [{"name": "f"}]}`, []string{"features[0].project"}},
		{"feature tag too short", `{"projects": [{"id": "p"}], "features": [{"name": "f", "project": "p", "tags": [{"type": "simple", "value": "x"}]}]}`, []string{"features[0].tags[0].value"}},
		{"feature tag too long", `{"projects": [{"id": "p"}], "features": [{"name": "f", "project": "p", "tags": [{"type": "` + strings.Repeat("t", 51) + `", "value": "ok"}]}]}`, []string{"features[0].tags[0].type"}},
		{"lifecycle completed without status", `{"projects": [{"id": "p"}], "features": [{"name": "f", "project": "p", "lifecycle": {"stage": "completed"}}]}`, []string{"features[0].lifecycle.status"}},
		{"lifecycle status without completion", `{"projects": [{"id": "p"}], "features": [{"name": "f", "project": "p", "lifecycle": {"stage": "live", "status": "kept"}}]}`, []string{"features[0].lifecycle.status"}},
		{"lifecycle stage", `{"projects": [{"id": "p"}], "features": [{"name": "f", "project": "p", "lifecycle": {"stage": "done"}}]}`, []string{"features[0].lifecycle.stage"}},
		{"event type", `{"events": [{"type": "feature-exploded", "createdBy": "x"}]}`, []string{"events[0].type"}},
		{"event without createdBy", `{"events": [{"type": "feature-created"}]}`, []string{"events[0].createdBy"}},
		{"event with an id", `{"events": [{"id": 5, "type": "feature-created", "createdBy": "x"}]}`, []string{"events[0].id"}},
		{"event data not an object", `{"events": [{"type": "feature-created", "createdBy": "x", "data": [1]}]}`, []string{"events[0].data"}},
		{"event preData not an object", `{"events": [{"type": "feature-created", "createdBy": "x", "preData": "s"}]}`, []string{"events[0].preData"}},
		{"event tag", `{"events": [{"type": "feature-created", "createdBy": "x", "tags": [{"type": "s", "value": "ok"}]}]}`, []string{"events[0].tags[0].type"}},
		{"event tag color", `{"events": [{"type": "feature-created", "createdBy": "x", "tags": [{"type": "simple", "value": "ok", "color": "green"}]}]}`, []string{"events[0].tags[0].color"}},
		{"feature tag color", `{"projects": [{"id": "p"}], "features": [{"name": "f", "project": "p", "tags": [{"type": "simple", "value": "ok", "color": "#12345"}]}]}`, []string{"features[0].tags[0].color"}},

		{"feature's project unresolved", `{"features": [{"name": "f", "project": "nowhere"}]}`, []string{"features[0].project"}},
		{"member user unresolved", `{"projects": [{"id": "p", "members": [{"userId": 9, "role": "Owner"}]}]}`, []string{"projects[0].members[0].userId"}},
		{"member group unresolved", `{"projects": [{"id": "p", "members": [{"groupId": 9, "role": "Owner"}]}]}`, []string{"projects[0].members[0].groupId"}},
		{"favorite unresolved", `{"projects": [{"id": "p", "favoritedBy": [9]}]}`, []string{"projects[0].favoritedBy[0]"}},
		{"group user unresolved", `{"groups": [{"id": 1, "name": "g", "users": [9]}]}`, []string{"groups[0].users[0]"}},
		{"token user unresolved", `{"apiTokens": [{"secret": "user:x", "userId": 9}]}`, []string{"apiTokens[0].userId"}},

		{"duplicate user id", `{"users": [{"id": 1, "name": "a"}, {"id": 1, "name": "b"}]}`, []string{"users[1].id"}},
		{"user id used by a service account", `{"users": [{"id": 1, "name": "a"}], "serviceAccounts": [{"id": 1, "name": "b"}]}`, []string{"serviceAccounts[0].id"}},
		{"duplicate group id", `{"groups": [{"id": 1, "name": "a"}, {"id": 1, "name": "b"}]}`, []string{"groups[1].id"}},
		{"duplicate project id", `{"projects": [{"id": "p"}, {"id": "q"}, {"id": "p"}]}`, []string{"projects[2].id"}},
		{"duplicate feature name", `{"projects": [{"id": "p"}], "features": [{"name": "f", "project": "p"}, {"name": "f", "project": "p"}]}`, []string{"features[1].name"}},
		{"duplicate token secret", `{"apiTokens": [{"secret": "*:*.s", "type": "admin"}, {"secret": "*:*.s", "type": "admin"}]}`, []string{"apiTokens[1].secret"}},

		{"admin type with a user secret", `{"apiTokens": [{"secret": "user:x", "type": "admin"}]}`, []string{"apiTokens[0].secret"}},
		{"client type with an admin secret", `{"apiTokens": [{"secret": "*:*.x", "type": "client"}]}`, []string{"apiTokens[0].secret"}},
		{"frontend type with a user secret", `{"apiTokens": [{"secret": "user:x", "type": "frontend"}]}`, []string{"apiTokens[0].secret"}},
		{"personal token with an admin secret", `{"users": [{"id": 1, "name": "a"}], "apiTokens": [{"secret": "*:*.x", "userId": 1}]}`, []string{"apiTokens[0].secret"}},
		{"secret of no shape", `{"apiTokens": [{"secret": "plain", "type": "admin"}]}`, []string{"apiTokens[0].secret"}},
		{"unknown token type", `{"apiTokens": [{"secret": "*:*.x", "type": "root"}]}`, []string{"apiTokens[0].type"}},
		{"token type omitted without user", `{"apiTokens": [{"secret": "*:*.x"}]}`, []string{"apiTokens[0].type"}},
		{"admin token with a user", `{"users": [{"id": 1, "name": "a"}], "apiTokens": [{"secret": "*:*.x", "type": "admin", "userId": 1}]}`, []string{"apiTokens[0].userId"}},
		{"user type without a user", `{"apiTokens": [{"secret": "user:x", "type": "user"}]}`, []string{"apiTokens[0].userId"}},

		{"several entries at once", `{"projects": [{"id": "p", "mode": "x"}], "features": [{"name": "f", "project": "q"}], "events": [{"type": "nope", "createdBy": "x"}]}`,
			[]string{"projects[0].mode", "features[0].project", "events[0].type"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, store := newService(t)
			seed, err := flagadmin.ParseSeed(strings.NewReader(tt.file))
			if err != nil {
				t.Fatalf("ParseSeed: %v", err)
			}
			ve := wantValidation(t, svc.ApplySeed(context.Background(), seed), tt.paths...)
			if len(ve.Fields) != len(tt.paths) {
				t.Errorf("got fields %q (%v), want %q", fieldPaths(ve), ve, tt.paths)
			}
			assertEmpty(t, store)
		})
	}
}

// assertEmpty checks that nothing of a failed seed reached the store.
func assertEmpty(t *testing.T, store *memstore.Store) {
	t.Helper()
	ctx := context.Background()
	if events := allEvents(t, store); len(events) != 0 {
		t.Errorf("store has %d events, want none", len(events))
	}
	for _, id := range []int64{1, 2, 3, 9, 10} {
		if _, err := store.User(ctx, id); !errors.Is(err, flagadmin.ErrNotFound) {
			t.Errorf("user %d: got %v, want ErrNotFound", id, err)
		}
	}
	if _, err := store.Group(ctx, 1); !errors.Is(err, flagadmin.ErrNotFound) {
		t.Errorf("group 1: got %v, want ErrNotFound", err)
	}
	for _, id := range []string{"a", "b", "p", "q", "default"} {
		if _, err := store.Project(ctx, id); !errors.Is(err, flagadmin.ErrNotFound) {
			t.Errorf("project %q: got %v, want ErrNotFound", id, err)
		}
	}
	for _, name := range []string{"f", "new-checkout"} {
		if _, err := store.Feature(ctx, name); !errors.Is(err, flagadmin.ErrNotFound) {
			t.Errorf("feature %q: got %v, want ErrNotFound", name, err)
		}
	}
	stats, err := store.ProjectStats(ctx, flagadmin.ProjectStatsQuery{})
	if err != nil || len(stats) != 0 {
		t.Errorf("project stats = %v, %v; want none", stats, err)
	}
}

func TestApplySeedIsAllOrNothing(t *testing.T) {
	example, err := os.ReadFile("testdata/seed-example.json")
	if err != nil {
		t.Fatal(err)
	}
	var file map[string][]json.RawMessage
	if err := json.Unmarshal(example, &file); err != nil {
		t.Fatal(err)
	}
	// The whole valid example plus one bad event at the end.
	file["events"] = append(file["events"], json.RawMessage(`{"type": "feature-created", "createdBy": "x", "tags": [{"type": "simple", "value": "!"}]}`))
	bad, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	svc, store := newService(t)
	err = svc.LoadSeed(context.Background(), strings.NewReader(string(bad)))
	wantValidation(t, err, "events[1].tags[0].value")
	assertEmpty(t, store)
	if _, err := svc.Authenticate(context.Background(), "*:*.admin-secret"); !errors.Is(err, flagadmin.ErrAuthenticationRequired) {
		t.Errorf("token of a failed seed: got %v, want ErrAuthenticationRequired", err)
	}
}

func TestApplySeedAgainstExistingRows(t *testing.T) {
	svc, store := exampleService(t)
	ctx := context.Background()
	example, err := os.ReadFile("testdata/seed-example.json")
	if err != nil {
		t.Fatal(err)
	}
	// The same file again: every id, name and secret already exists.
	err = svc.LoadSeed(ctx, strings.NewReader(string(example)))
	wantValidation(t, err, "users[0].id", "serviceAccounts[0].id", "groups[0].id", "projects[0].id", "features[0].name", "apiTokens[0].secret", "apiTokens[4].secret")
	if n := len(allEvents(t, store)); n != 1 {
		t.Errorf("store has %d events after a rejected second load, want 1", n)
	}
	// References may resolve to rows already in the store.
	more := `{"features": [{"name": "second", "project": "default"}],
		"projects": [{"id": "other", "members": [{"userId": 3, "role": "Member"}, {"groupId": 1, "role": "Owner"}]}],
		"apiTokens": [{"secret": "user:vic-secret", "userId": 3}],
		"events": [{"type": "feature-created", "createdBy": "x", "project": "default", "featureName": "second"}]}`
	if err := svc.LoadSeed(ctx, strings.NewReader(more)); err != nil {
		t.Fatalf("second seed referring to existing rows: %v", err)
	}
	events := allEvents(t, store)
	if len(events) != 2 || events[0].ID != 2 {
		t.Errorf("events after the second seed = %+v, want the new one with id 2 first", events)
	}
}
