package flagadmin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// onlyEvent returns the single event in store, failing otherwise.
func onlyEvent(t *testing.T, store flagadmin.Store) flagadmin.Event {
	t.Helper()
	events := allEvents(t, store)
	if len(events) != 1 {
		t.Fatalf("store has %d events, want 1: %+v", len(events), events)
	}
	return events[0]
}

// wantSystemEvent checks the type, actor and time of an event the System caused.
func wantSystemEvent(t *testing.T, e flagadmin.Event, typ string) {
	t.Helper()
	if e.Type != typ {
		t.Errorf("event type = %q, want %q", e.Type, typ)
	}
	if e.CreatedBy != "system" || e.CreatedByUserID == nil || *e.CreatedByUserID != flagadmin.SystemUserID {
		t.Errorf("event actor = %q, %v; want system, -1337", e.CreatedBy, e.CreatedByUserID)
	}
	if !e.CreatedAt.Equal(testNow) {
		t.Errorf("event createdAt = %v, want the clock's %v", e.CreatedAt, testNow)
	}
	if e.ID < 1 {
		t.Errorf("event id = %d, want >= 1", e.ID)
	}
}

// wantData checks an event's data against a JSON object.
func wantData(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("event data %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gj, _ := json.Marshal(g)
	wj, _ := json.Marshal(w)
	if !bytes.Equal(gj, wj) {
		t.Errorf("event data = %s, want %s", gj, wj)
	}
}

func TestCreateUser(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	u, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "Ada", Username: "ada", Email: "ada@example.com", RootRole: flagadmin.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != 1 {
		t.Errorf("first user id = %d, want 1", u.ID)
	}
	if got, err := store.User(ctx, u.ID); err != nil || got != u {
		t.Errorf("stored user = %+v, %v; want %+v", got, err, u)
	}
	e := onlyEvent(t, store)
	wantSystemEvent(t, e, "user-created")
	wantData(t, e.Data, `{"id":1,"name":"Ada","username":"ada","email":"ada@example.com","rootRole":"Admin"}`)
	if e.Project != nil || e.FeatureName != nil {
		t.Errorf("user-created event has project %v, feature %v; want null", e.Project, e.FeatureName)
	}

	sa, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{ID: 10, Name: "CI", Username: "ci", IsService: true})
	if err != nil {
		t.Fatal(err)
	}
	if sa.ID != 10 || !sa.IsService || sa.RootRole != flagadmin.RoleViewer {
		t.Errorf("service account = %+v, want id 10, service, Viewer by default", sa)
	}
	events := allEvents(t, store)
	if len(events) != 2 || events[0].Type != "service-account-created" {
		t.Fatalf("events = %+v, want service-account-created newest", events)
	}
	wantData(t, events[0].Data, `{"id":10,"name":"CI","username":"ci","rootRole":"Viewer"}`)

	next, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Email: "eve@example.com"})
	if err != nil || next.ID != 11 {
		t.Errorf("next user = %+v, %v; want id 11", next, err)
	}
}

func TestCreateUserRejects(t *testing.T) {
	tests := []struct {
		name string
		user flagadmin.User
		path string
	}{
		{"root role", flagadmin.User{Name: "a", RootRole: "Root"}, "rootRole"},
		{"no name", flagadmin.User{RootRole: flagadmin.RoleViewer}, "name"},
		{"negative id", flagadmin.User{ID: -1, Name: "a"}, "id"},
		{"existing id", flagadmin.User{ID: 1, Name: "again"}, "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, store := newService(t)
			ctx := context.Background()
			if _, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{ID: 1, Name: "first"}); err != nil {
				t.Fatal(err)
			}
			_, err := svc.CreateUser(ctx, flagadmin.System, tt.user)
			wantValidation(t, err, tt.path)
			if n := len(allEvents(t, store)); n != 1 {
				t.Errorf("store has %d events, want only the first user's", n)
			}
		})
	}
}

func TestCreateGroupAndAddGroupMember(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if _, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	g, err := svc.CreateGroup(ctx, flagadmin.System, flagadmin.Group{Name: "Platform", Users: []int64{1}})
	if err != nil {
		t.Fatal(err)
	}
	if g.ID != 1 {
		t.Errorf("group id = %d, want 1", g.ID)
	}
	e := allEvents(t, store)[0]
	wantSystemEvent(t, e, "group-created")
	wantData(t, e.Data, `{"id":1,"name":"Platform","users":[1]}`)

	if err := svc.AddGroupMember(ctx, flagadmin.System, g.ID, 2); err != nil {
		t.Fatal(err)
	}
	e = allEvents(t, store)[0]
	wantSystemEvent(t, e, "group-user-added")
	wantData(t, e.Data, `{"groupId":1,"userId":2}`)
	if got, _ := store.Group(ctx, g.ID); len(got.Users) != 2 {
		t.Errorf("group users = %v, want [1 2]", got.Users)
	}

	// Adding a member again changes nothing and records nothing.
	if err := svc.AddGroupMember(ctx, flagadmin.System, g.ID, 2); err != nil {
		t.Fatal(err)
	}
	if n := len(allEvents(t, store)); n != 4 {
		t.Errorf("store has %d events after a repeated AddGroupMember, want 4", n)
	}

	_, err = svc.CreateGroup(ctx, flagadmin.System, flagadmin.Group{Name: "Ghosts", Users: []int64{1, 9}})
	wantValidation(t, err, "users[1]")
	_, err = svc.CreateGroup(ctx, flagadmin.System, flagadmin.Group{})
	wantValidation(t, err, "name")
	wantValidation(t, svc.AddGroupMember(ctx, flagadmin.System, 9, 1), "groupId")
	wantValidation(t, svc.AddGroupMember(ctx, flagadmin.System, 1, 9), "userId")
	if n := len(allEvents(t, store)); n != 4 {
		t.Errorf("store has %d events, want 4 (2 users, group, member)", n)
	}
}

func TestCreateProjectAndAddProjectMember(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	if _, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateGroup(ctx, flagadmin.System, flagadmin.Group{Name: "g"}); err != nil {
		t.Fatal(err)
	}
	p, err := svc.CreateProject(ctx, flagadmin.System, flagadmin.Project{ID: "web", Description: "the shop",
		Members: []flagadmin.ProjectMembership{{UserID: ptr[int64](1), Role: flagadmin.ProjectRoleOwner}}, FavoritedBy: []int64{1}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "web" || p.Mode != flagadmin.ModeOpen || !p.CreatedAt.Equal(testNow) {
		t.Errorf("project = %+v, want name = id, mode open, createdAt now", p)
	}
	e := allEvents(t, store)[0]
	wantSystemEvent(t, e, "project-created")
	wantData(t, e.Data, `{"id":"web","name":"web","description":"the shop","mode":"open"}`)
	if e.Project == nil || *e.Project != "web" {
		t.Errorf("event project = %v, want web", e.Project)
	}
	access, _ := store.ProjectAccess(ctx, 1)
	if access.Roles["web"] != flagadmin.ProjectRoleOwner {
		t.Errorf("roles of user 1 = %v, want Owner of web", access.Roles)
	}

	if err := svc.AddProjectMember(ctx, flagadmin.System, "web", flagadmin.ProjectMembership{GroupID: ptr[int64](1), Role: flagadmin.ProjectRoleMember}); err != nil {
		t.Fatal(err)
	}
	e = allEvents(t, store)[0]
	wantSystemEvent(t, e, "project-group-added")
	wantData(t, e.Data, `{"role":"Member","groupId":1}`)
	if e.Project == nil || *e.Project != "web" {
		t.Errorf("event project = %v, want web", e.Project)
	}
	if _, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.AddProjectMember(ctx, flagadmin.System, "web", flagadmin.ProjectMembership{UserID: ptr[int64](2), Role: flagadmin.ProjectRoleMember}); err != nil {
		t.Fatal(err)
	}
	e = allEvents(t, store)[0]
	wantSystemEvent(t, e, "project-user-added")
	wantData(t, e.Data, `{"role":"Member","userId":2}`)
	if access, _ := store.ProjectAccess(ctx, 2); access.Roles["web"] != flagadmin.ProjectRoleMember {
		t.Errorf("roles of user 2 = %v, want Member of web", access.Roles)
	}
}

func TestCreateProjectRejects(t *testing.T) {
	tests := []struct {
		name    string
		project flagadmin.Project
		paths   []string
	}{
		{"id", flagadmin.Project{ID: "has space"}, []string{"id"}},
		{"empty id", flagadmin.Project{}, []string{"id"}},
		{"mode", flagadmin.Project{ID: "p", Mode: "secret"}, []string{"mode"}},
		{"existing id", flagadmin.Project{ID: "taken"}, []string{"id"}},
		{"member role", flagadmin.Project{ID: "p", Members: []flagadmin.ProjectMembership{{UserID: ptr[int64](1), Role: "Boss"}}}, []string{"members[0].role"}},
		{"member unresolved", flagadmin.Project{ID: "p", Members: []flagadmin.ProjectMembership{{UserID: ptr[int64](1), Role: flagadmin.ProjectRoleOwner}, {GroupID: ptr[int64](9), Role: flagadmin.ProjectRoleOwner}}}, []string{"members[1].groupId"}},
		{"member with user and group", flagadmin.Project{ID: "p", Members: []flagadmin.ProjectMembership{{UserID: ptr[int64](1), GroupID: ptr[int64](1), Role: flagadmin.ProjectRoleOwner}}}, []string{"members[0].userId"}},
		{"favorite unresolved", flagadmin.Project{ID: "p", FavoritedBy: []int64{1, 9}}, []string{"favoritedBy[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, store := newService(t)
			ctx := context.Background()
			if _, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "a"}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.CreateProject(ctx, flagadmin.System, flagadmin.Project{ID: "taken"}); err != nil {
				t.Fatal(err)
			}
			_, err := svc.CreateProject(ctx, flagadmin.System, tt.project)
			wantValidation(t, err, tt.paths...)
			if n := len(allEvents(t, store)); n != 2 {
				t.Errorf("store has %d events, want 2", n)
			}
		})
	}
}

func TestAddProjectMemberRejects(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	if _, err := svc.CreateProject(ctx, flagadmin.System, flagadmin.Project{ID: "p"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		project string
		m       flagadmin.ProjectMembership
		path    string
	}{
		{"unknown project", "nope", flagadmin.ProjectMembership{UserID: ptr[int64](1), Role: flagadmin.ProjectRoleOwner}, "projectId"},
		{"unknown user", "p", flagadmin.ProjectMembership{UserID: ptr[int64](1), Role: flagadmin.ProjectRoleOwner}, "userId"},
		{"unknown group", "p", flagadmin.ProjectMembership{GroupID: ptr[int64](1), Role: flagadmin.ProjectRoleOwner}, "groupId"},
		{"role", "p", flagadmin.ProjectMembership{UserID: ptr[int64](1), Role: "owner"}, "role"},
		{"neither user nor group", "p", flagadmin.ProjectMembership{Role: flagadmin.ProjectRoleOwner}, "userId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantValidation(t, svc.AddProjectMember(ctx, flagadmin.System, tt.project, tt.m), tt.path)
		})
	}
	if n := len(allEvents(t, store)); n != 1 {
		t.Errorf("store has %d events, want only project-created", n)
	}
}

func TestCreateFeature(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	if _, err := svc.CreateProject(ctx, flagadmin.System, flagadmin.Project{ID: "web"}); err != nil {
		t.Fatal(err)
	}
	ft, err := svc.CreateFeature(ctx, flagadmin.System, flagadmin.Feature{Name: "checkout", Project: "web",
		Tags: []flagadmin.Tag{{Type: "simple", Value: "shop"}}})
	if err != nil {
		t.Fatal(err)
	}
	if ft.Type != flagadmin.TypeRelease || ft.Lifecycle.Stage != flagadmin.StageInitial || !ft.CreatedAt.Equal(testNow) {
		t.Errorf("feature = %+v, want a release in the initial stage created now", ft)
	}
	e := allEvents(t, store)[0]
	wantSystemEvent(t, e, "feature-created")
	wantData(t, e.Data, `{"name":"checkout","project":"web","type":"release","stale":false}`)
	if e.Project == nil || *e.Project != "web" || e.FeatureName == nil || *e.FeatureName != "checkout" {
		t.Errorf("event project %v feature %v, want web, checkout", e.Project, e.FeatureName)
	}
	if len(e.Tags) != 1 || e.Tags[0] != (flagadmin.Tag{Type: "simple", Value: "shop"}) {
		t.Errorf("event tags = %v, want the feature's", e.Tags)
	}
	if got, err := store.Feature(ctx, "checkout"); err != nil || got.Project != "web" || len(got.Tags) != 1 {
		t.Errorf("stored feature = %+v, %v", got, err)
	}

	rejects := []struct {
		name    string
		feature flagadmin.Feature
		path    string
	}{
		{"unknown project", flagadmin.Feature{Name: "f", Project: "nope"}, "project"},
		{"no project", flagadmin.Feature{Name: "f"}, "project"},
		{"existing name", flagadmin.Feature{Name: "checkout", Project: "web"}, "name"},
		{"bad name", flagadmin.Feature{Name: "a b", Project: "web"}, "name"},
		{"type", flagadmin.Feature{Name: "f", Project: "web", Type: "toggle"}, "type"},
		{"tag", flagadmin.Feature{Name: "f", Project: "web", Tags: []flagadmin.Tag{{Type: "simple", Value: "ok"}, {Type: "simple", Value: strings.Repeat("v", 51)}}}, "tags[1].value"},
	}
	for _, tt := range rejects {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.CreateFeature(ctx, flagadmin.System, tt.feature)
			wantValidation(t, err, tt.path)
		})
	}
	if n := len(allEvents(t, store)); n != 2 {
		t.Errorf("store has %d events, want 2", n)
	}
}

// fixedRandom is a source of token secrets that repeats one byte.
type fixedRandom byte

func (r fixedRandom) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func TestCreateAPIToken(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		token      flagadmin.NewAPIToken
		wantPrefix string
		wantKind   flagadmin.PrincipalKind
		wantType   string
		wantData   string
	}{
		{"admin", flagadmin.NewAPIToken{Name: "deploy", Type: flagadmin.TokenAdmin}, "*:*.", flagadmin.PrincipalAdminToken,
			"api-token-created", `{"tokenName":"deploy","type":"admin"}`},
		{"admin without name", flagadmin.NewAPIToken{Type: flagadmin.TokenAdmin}, "*:*.", flagadmin.PrincipalAdminToken,
			"api-token-created", `{"tokenName":"admin","type":"admin"}`},
		{"client", flagadmin.NewAPIToken{Name: "sdk", Type: flagadmin.TokenClient, Project: "web", Environment: "production"}, "web:production.", flagadmin.PrincipalClientToken,
			"api-token-created", `{"tokenName":"sdk","type":"client","project":"web","environment":"production"}`},
		{"client for every project", flagadmin.NewAPIToken{Name: "sdk", Type: flagadmin.TokenClient, Environment: "development"}, "*:development.", flagadmin.PrincipalClientToken,
			"api-token-created", `{"tokenName":"sdk","type":"client","project":"*","environment":"development"}`},
		{"frontend for every environment", flagadmin.NewAPIToken{Name: "web", Type: flagadmin.TokenFrontend, Project: "web", Environment: "*"}, "web:*.", flagadmin.PrincipalClientToken,
			"api-token-created", `{"tokenName":"web","type":"frontend","project":"web","environment":"*"}`},
		{"personal", flagadmin.NewAPIToken{Name: "laptop", Type: flagadmin.TokenUser, UserID: ptr[int64](1)}, "user:", flagadmin.PrincipalUser,
			"pat-created", `{"description":"laptop","userId":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, store := newService(t, flagadmin.WithRandom(fixedRandom(0xab)))
			if _, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Email: "ada@example.com", RootRole: flagadmin.RoleEditor}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.CreateProject(ctx, flagadmin.System, flagadmin.Project{ID: "web"}); err != nil {
				t.Fatal(err)
			}
			secret, tok, err := svc.CreateAPIToken(ctx, flagadmin.System, tt.token)
			if err != nil {
				t.Fatal(err)
			}
			random := strings.Repeat("ab", 24)
			if secret != tt.wantPrefix+random {
				t.Errorf("secret = %q, want %q", secret, tt.wantPrefix+random)
			}
			if tok.SecretHash != flagadmin.HashSecret(secret) || tok.Type != tt.token.Type || !tok.CreatedAt.Equal(testNow) {
				t.Errorf("token = %+v", tok)
			}
			p, err := svc.Authenticate(ctx, "Bearer "+secret)
			if err != nil {
				t.Fatalf("the new secret does not authenticate: %v", err)
			}
			if p.Kind != tt.wantKind {
				t.Errorf("principal kind = %v, want %v", p.Kind, tt.wantKind)
			}
			if tt.wantKind == flagadmin.PrincipalUser && (p.User == nil || p.User.ID != 1) {
				t.Errorf("principal user = %+v, want user 1", p.User)
			}
			e := allEvents(t, store)[0]
			wantSystemEvent(t, e, tt.wantType)
			wantData(t, e.Data, tt.wantData)
			for _, e := range allEvents(t, store) {
				raw, _ := json.Marshal(e)
				if bytes.Contains(raw, []byte(random[:16])) || bytes.Contains(raw, []byte(tok.SecretHash)) {
					t.Errorf("event %s contains the secret or its hash", raw)
				}
			}
		})
	}
}

func TestCreateAPITokenExpiry(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	expires := testNow.Add(time.Hour)
	secret, tok, err := svc.CreateAPIToken(ctx, flagadmin.System, flagadmin.NewAPIToken{Name: "short", Type: flagadmin.TokenAdmin, ExpiresAt: &expires})
	if err != nil {
		t.Fatal(err)
	}
	if tok.ExpiresAt == nil || !tok.ExpiresAt.Equal(expires) {
		t.Errorf("expiresAt = %v, want %v", tok.ExpiresAt, expires)
	}
	later := flagadmin.NewService(store, fixedClock(expires))
	if _, err := later.Authenticate(ctx, secret); !errors.Is(err, flagadmin.ErrAuthenticationRequired) {
		t.Errorf("expired token: got %v, want ErrAuthenticationRequired", err)
	}
	// Two tokens get different secrets from the default random source.
	other, _, err := svc.CreateAPIToken(ctx, flagadmin.System, flagadmin.NewAPIToken{Type: flagadmin.TokenAdmin})
	if err != nil || other == secret {
		t.Errorf("second secret = %q, %v; want a different one", other, err)
	}
}

func TestCreateAPITokenRejects(t *testing.T) {
	tests := []struct {
		name  string
		token flagadmin.NewAPIToken
		paths []string
	}{
		{"no type", flagadmin.NewAPIToken{Name: "x"}, []string{"type"}},
		{"unknown type", flagadmin.NewAPIToken{Type: "root"}, []string{"type"}},
		{"personal without user", flagadmin.NewAPIToken{Type: flagadmin.TokenUser}, []string{"userId"}},
		{"personal with unknown user", flagadmin.NewAPIToken{Type: flagadmin.TokenUser, UserID: ptr[int64](9)}, []string{"userId"}},
		{"admin with user", flagadmin.NewAPIToken{Type: flagadmin.TokenAdmin, UserID: ptr[int64](1)}, []string{"userId"}},
		{"client with user", flagadmin.NewAPIToken{Type: flagadmin.TokenClient, Environment: "dev", UserID: ptr[int64](1)}, []string{"userId"}},
		{"client project", flagadmin.NewAPIToken{Type: flagadmin.TokenClient, Project: "a b", Environment: "dev"}, []string{"project"}},
		{"client environment", flagadmin.NewAPIToken{Type: flagadmin.TokenClient, Environment: "a:b"}, []string{"environment"}},
		{"client project and environment", flagadmin.NewAPIToken{Type: flagadmin.TokenClient, Project: "a.b:", Environment: "a:b"}, []string{"project", "environment"}},
		{"client for everything", flagadmin.NewAPIToken{Type: flagadmin.TokenClient}, []string{"environment"}},
		{"frontend for everything", flagadmin.NewAPIToken{Type: flagadmin.TokenFrontend, Project: "*", Environment: "*"}, []string{"environment"}},
		{"client of a project named user", flagadmin.NewAPIToken{Type: flagadmin.TokenClient, Project: "user", Environment: "dev"}, []string{"project"}},
		{"client of a missing project", flagadmin.NewAPIToken{Type: flagadmin.TokenClient, Project: "nosuch", Environment: "dev"}, []string{"project"}},
		{"frontend of a missing project", flagadmin.NewAPIToken{Type: flagadmin.TokenFrontend, Project: "nosuch", Environment: "*"}, []string{"project"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, store := newService(t)
			ctx := context.Background()
			if _, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "a"}); err != nil {
				t.Fatal(err)
			}
			secret, _, err := svc.CreateAPIToken(ctx, flagadmin.System, tt.token)
			ve := wantValidation(t, err, tt.paths...)
			if len(ve.Fields) != len(tt.paths) {
				t.Errorf("got fields %q, want %q", fieldPaths(ve), tt.paths)
			}
			if secret != "" {
				t.Errorf("got secret %q with the error", secret)
			}
			if n := len(allEvents(t, store)); n != 1 {
				t.Errorf("store has %d events, want only user-created", n)
			}
		})
	}
}

func TestCreateAPITokenRandomFailure(t *testing.T) {
	boom := errors.New("entropy exhausted")
	svc, store := newService(t, flagadmin.WithRandom(iotest.ErrReader(boom)))
	_, _, err := svc.CreateAPIToken(context.Background(), flagadmin.System, flagadmin.NewAPIToken{Type: flagadmin.TokenAdmin})
	if !errors.Is(err, boom) {
		t.Errorf("got %v, want the random source's error", err)
	}
	if n := len(allEvents(t, store)); n != 0 {
		t.Errorf("store has %d events, want none", n)
	}
}

func TestAppendEvent(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	at := time.Date(2025, 1, 2, 3, 4, 5, 678901234, time.FixedZone("CET", 3600))
	e, err := svc.AppendEvent(ctx, flagadmin.Event{Type: "feature-updated", CreatedBy: "importer", CreatedAt: at,
		Project: ptr("web"), Data: json.RawMessage(` { "a" : 1 } `), PreData: json.RawMessage("null")})
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != 1 || !e.CreatedAt.Equal(at.Truncate(time.Millisecond)) || e.CreatedAt.Location() != time.UTC {
		t.Errorf("event = %+v, want id 1, createdAt in UTC at millisecond precision", e)
	}
	if string(e.Data) != `{"a":1}` || e.PreData != nil {
		t.Errorf("data %q preData %q, want compact data and null preData", e.Data, e.PreData)
	}
	stored := onlyEvent(t, store)
	if stored.ID != e.ID || stored.Type != e.Type || !stored.CreatedAt.Equal(e.CreatedAt) {
		t.Errorf("stored %+v, returned %+v", stored, e)
	}
	now, err := svc.AppendEvent(ctx, flagadmin.Event{Type: "feature-archived", CreatedBy: "importer"})
	if err != nil || now.ID != 2 || !now.CreatedAt.Equal(testNow) {
		t.Errorf("event without createdAt = %+v, %v; want id 2 at the clock's time", now, err)
	}

	rejects := []struct {
		name  string
		event flagadmin.Event
		paths []string
	}{
		{"unknown type", flagadmin.Event{Type: "nope", CreatedBy: "x"}, []string{"type"}},
		{"no createdBy", flagadmin.Event{Type: "feature-created"}, []string{"createdBy"}},
		{"id given", flagadmin.Event{ID: 9, Type: "feature-created", CreatedBy: "x"}, []string{"id"}},
		{"data not an object", flagadmin.Event{Type: "feature-created", CreatedBy: "x", Data: json.RawMessage(`[1]`)}, []string{"data"}},
		{"preData not JSON", flagadmin.Event{Type: "feature-created", CreatedBy: "x", PreData: json.RawMessage(`{`)}, []string{"preData"}},
		{"tag", flagadmin.Event{Type: "feature-created", CreatedBy: "x", Tags: []flagadmin.Tag{{Type: "t", Value: "v"}}}, []string{"tags[0].type", "tags[0].value"}},
		{"everything", flagadmin.Event{ID: 1, Type: "", Data: json.RawMessage(`"s"`)}, []string{"id", "type", "createdBy", "data"}},
	}
	for _, tt := range rejects {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.AppendEvent(ctx, tt.event)
			ve := wantValidation(t, err, tt.paths...)
			if len(ve.Fields) != len(tt.paths) {
				t.Errorf("got fields %q, want %q", fieldPaths(ve), tt.paths)
			}
		})
	}
	if n := len(allEvents(t, store)); n != 2 {
		t.Errorf("store has %d events, want 2", n)
	}
}

func TestCreateOperationsNeedAdmin(t *testing.T) {
	ctx := context.Background()
	admin := flagadmin.User{ID: 1, Email: "ada@example.com", RootRole: flagadmin.RoleAdmin}
	refused := map[string]flagadmin.Principal{
		"editor":         flagadmin.AsUser(flagadmin.User{ID: 2, Email: "eve@example.com", RootRole: flagadmin.RoleEditor}),
		"viewer":         flagadmin.AsUser(flagadmin.User{ID: 3, Email: "vic@example.com", RootRole: flagadmin.RoleViewer}),
		"editor service": flagadmin.AsUser(flagadmin.User{ID: 10, Username: "ci", RootRole: flagadmin.RoleEditor, IsService: true}),
		"client token":   {Kind: flagadmin.PrincipalClientToken, Name: "sdk"},
		"nobody":         {},
	}
	// ops runs every create operation as p, on a world holding user 1,
	// group 1 and project p.
	ops := func(svc *flagadmin.Service, p flagadmin.Principal) map[string]error {
		errs := map[string]error{}
		_, errs["CreateUser"] = svc.CreateUser(ctx, p, flagadmin.User{Name: "new"})
		_, errs["CreateGroup"] = svc.CreateGroup(ctx, p, flagadmin.Group{Name: "new"})
		errs["AddGroupMember"] = svc.AddGroupMember(ctx, p, 1, 1)
		_, errs["CreateProject"] = svc.CreateProject(ctx, p, flagadmin.Project{ID: "new"})
		errs["AddProjectMember"] = svc.AddProjectMember(ctx, p, "p", flagadmin.ProjectMembership{UserID: ptr[int64](1), Role: flagadmin.ProjectRoleMember})
		_, errs["CreateFeature"] = svc.CreateFeature(ctx, p, flagadmin.Feature{Name: "new", Project: "p"})
		_, _, errs["CreateAPIToken"] = svc.CreateAPIToken(ctx, p, flagadmin.NewAPIToken{Type: flagadmin.TokenAdmin})
		return errs
	}
	world := func(t *testing.T) (*flagadmin.Service, *memstore.Store) {
		svc, store := newService(t)
		if _, err := svc.CreateUser(ctx, flagadmin.System, admin); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.CreateGroup(ctx, flagadmin.System, flagadmin.Group{Name: "g"}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.CreateProject(ctx, flagadmin.System, flagadmin.Project{ID: "p"}); err != nil {
			t.Fatal(err)
		}
		return svc, store
	}
	for name, p := range refused {
		t.Run(name, func(t *testing.T) {
			svc, store := world(t)
			for op, err := range ops(svc, p) {
				if !errors.Is(err, flagadmin.ErrNoAccess) {
					t.Errorf("%s: got %v, want ErrNoAccess", op, err)
				}
			}
			if n := len(allEvents(t, store)); n != 3 {
				t.Errorf("store has %d events after refused operations, want the world's 3", n)
			}
		})
	}
	for name, p := range map[string]flagadmin.Principal{"admin user": flagadmin.AsUser(admin), "admin token": flagadmin.AdminToken("ops")} {
		t.Run(name, func(t *testing.T) {
			svc, store := world(t)
			for op, err := range ops(svc, p) {
				if err != nil {
					t.Errorf("%s: %v", op, err)
				}
			}
			by, id := p.Actor()
			events := allEvents(t, store)
			if len(events) != 3+7 {
				t.Fatalf("store has %d events, want 10", len(events))
			}
			for _, e := range events[:7] {
				if e.CreatedBy != by || *e.CreatedByUserID != *id {
					t.Errorf("%s event by %q (%d), want %q (%d)", e.Type, e.CreatedBy, *e.CreatedByUserID, by, *id)
				}
			}
		})
	}
}
