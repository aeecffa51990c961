package flagadmin_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestHealth(t *testing.T) {
	tests := []struct {
		features, stale, potentiallyStale int
		want                              int
	}{
		{0, 0, 0, 100}, // no features
		{-1, 0, 0, 100},
		{1, 0, 0, 100},
		{1, 1, 0, 0},
		{1, 0, 1, 0},
		{4, 1, 1, 50},
		{3, 1, 0, 67},    // 66.67 rounds up
		{3, 0, 1, 67},    // potentially stale counts like stale
		{3, 1, 1, 33},    // 33.33 rounds down
		{8, 1, 0, 88},    // 87.5 rounds half up
		{8, 3, 0, 63},    // 62.5
		{200, 1, 0, 100}, // 99.5
		{200, 1, 2, 99},  // 98.5
		{200, 3, 0, 99},  // 98.5
		{7, 2, 3, 29},    // 28.57
		{2, 2, 2, 0},     // clamped at 0
		{1, 0, -5, 100},  // clamped at 100
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d/%d", tt.features, tt.stale, tt.potentiallyStale), func(t *testing.T) {
			if got := flagadmin.Health(tt.features, tt.stale, tt.potentiallyStale); got != tt.want {
				t.Errorf("Health(%d, %d, %d) = %d, want %d", tt.features, tt.stale, tt.potentiallyStale, got, tt.want)
			}
		})
	}
}

func TestPotentiallyStaleCutoffs(t *testing.T) {
	now := time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)
	got := flagadmin.PotentiallyStaleCutoffs(now)
	want := map[flagadmin.FeatureType]time.Time{
		flagadmin.TypeRelease:     time.Date(2025, 2, 3, 12, 0, 0, 0, time.UTC), // 40 days
		flagadmin.TypeExperiment:  time.Date(2025, 2, 3, 12, 0, 0, 0, time.UTC), // 40 days
		flagadmin.TypeOperational: time.Date(2025, 3, 8, 12, 0, 0, 0, time.UTC), // 7 days
	}
	if len(got) != len(want) {
		t.Errorf("got cut-offs for %d types, want %d (kill-switch and permission never go stale): %v", len(got), len(want), got)
	}
	for typ, w := range want {
		if g, ok := got[typ]; !ok || !g.Equal(w) {
			t.Errorf("cut-off of %s = %v, want %v", typ, g, w)
		}
	}
	for _, typ := range []flagadmin.FeatureType{flagadmin.TypeKillSwitch, flagadmin.TypePermission} {
		if _, ok := got[typ]; ok {
			t.Errorf("%s has a cut-off, want none", typ)
		}
		if typ.Lifetime() != 0 {
			t.Errorf("%s lifetime = %v, want 0", typ, typ.Lifetime())
		}
	}
}

// projectWorld is a seed for the project list tests; the clock is testNow
// (2025-03-15T12:00:00Z), so release features created before 2025-02-03T12:00Z
// and operational ones created before 2025-03-08T12:00Z are potentially stale.
const projectWorld = `{
  "users": [
    {"id": 1, "name": "Zed", "email": "Zed@Example.com", "rootRole": "Admin"},
    {"id": 2, "name": "Amy", "username": "amy", "rootRole": "Editor"},
    {"id": 3, "username": "bob", "email": "bob@example.com", "rootRole": "Editor"},
    {"id": 4, "name": "Val", "email": "val@example.com", "rootRole": "Viewer"}
  ],
  "groups": [
    {"id": 1, "name": "Ops", "users": [4]},
    {"id": 2, "name": "Dev", "users": [2, 3]}
  ],
  "projects": [
    {"id": "alpha", "name": "Alpha", "mode": "open", "createdAt": "2025-01-01T00:00:00Z",
     "members": [{"userId": 1, "role": "Owner"}, {"groupId": 1, "role": "Owner"}, {"userId": 2, "role": "Owner"},
                 {"groupId": 2, "role": "Owner"}, {"userId": 3, "role": "Member"}],
     "favoritedBy": [3]},
    {"id": "beta", "name": "Alpha", "description": "same name, later id", "mode": "protected", "createdAt": "2025-01-02T00:00:00Z"},
    {"id": "gamma", "name": "Gamma", "createdAt": "2024-01-01T00:00:00Z", "archivedAt": "2025-01-01T00:00:00Z"},
    {"id": "secret", "name": "Secret", "mode": "private", "createdAt": "2025-01-03T00:00:00Z"},
    {"id": "aardvark", "name": "Zoo", "createdAt": "2025-01-04T00:00:00Z", "members": [{"userId": 4, "role": "Member"}]}
  ],
  "features": [
    {"name": "fresh", "project": "alpha", "type": "release", "createdAt": "2025-03-10T00:00:00Z", "lastSeenAt": "2025-03-14T00:00:00Z"},
    {"name": "old-release", "project": "alpha", "type": "release", "createdAt": "2025-01-01T00:00:00Z"},
    {"name": "old-ops", "project": "alpha", "type": "operational", "createdAt": "2025-03-01T00:00:00Z"},
    {"name": "switch", "project": "alpha", "type": "kill-switch", "createdAt": "2020-01-01T00:00:00Z"},
    {"name": "stale-exp", "project": "alpha", "type": "experiment", "stale": true, "createdAt": "2020-01-01T00:00:00Z"},
    {"name": "gone", "project": "alpha", "type": "release", "createdAt": "2020-01-01T00:00:00Z", "archivedAt": "2024-01-01T00:00:00Z"},
    {"name": "secret-one", "project": "secret", "type": "permission", "createdAt": "2025-01-03T00:00:00Z"}
  ],
  "apiTokens": [{"secret": "*:*.admin", "type": "admin"}],
  "events": [
    {"type": "project-created", "createdBy": "x", "project": "alpha", "createdAt": "2025-01-01T00:00:00Z"},
    {"type": "feature-created", "createdBy": "x", "project": "alpha", "featureName": "fresh", "createdAt": "2025-03-10T00:00:00Z"},
    {"type": "user-created", "createdBy": "x", "createdAt": "2025-03-12T00:00:00Z"}
  ]
}`

// projectService returns a service loaded with projectWorld.
func projectService(t *testing.T) *flagadmin.Service {
	t.Helper()
	svc, _ := newService(t)
	if err := svc.LoadSeed(context.Background(), strings.NewReader(projectWorld)); err != nil {
		t.Fatalf("LoadSeed: %v", err)
	}
	return svc
}

func listIDs(entries []flagadmin.ProjectListEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}

func TestListProjectsFigures(t *testing.T) {
	svc := projectService(t)
	list, err := svc.ListProjects(context.Background(), flagadmin.System, flagadmin.ProjectListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Ordered by name, then id; archived gamma left out.
	if got, want := fmt.Sprint(listIDs(list)), "[alpha beta secret aardvark]"; got != want {
		t.Fatalf("projects = %s, want %s", got, want)
	}
	alpha := list[0]
	// 5 non-archived features: 1 stale, 2 potentially stale (old-release, old-ops).
	if alpha.FeatureCount != 5 || alpha.Health != 40 || alpha.TechnicalDebt != 60 {
		t.Errorf("alpha: featureCount %d, health %d, technicalDebt %d; want 5, 40, 60", alpha.FeatureCount, alpha.Health, alpha.TechnicalDebt)
	}
	if alpha.MemberCount != 4 {
		t.Errorf("alpha: memberCount %d, want 4 (users 1, 2, 3 directly, 4 through Ops)", alpha.MemberCount)
	}
	if alpha.LastUpdatedAt == nil || !alpha.LastUpdatedAt.Equal(time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("alpha: lastUpdatedAt %v, want its newest event 2025-03-10", alpha.LastUpdatedAt)
	}
	if alpha.LastReportedFlagUsage == nil || !alpha.LastReportedFlagUsage.Equal(time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("alpha: lastReportedFlagUsage %v, want 2025-03-14", alpha.LastReportedFlagUsage)
	}
	if alpha.Favorite {
		t.Error("alpha: favorite for the system principal, want false")
	}
	beta := list[1]
	if beta.FeatureCount != 0 || beta.Health != 100 || beta.TechnicalDebt != 0 || beta.MemberCount != 0 {
		t.Errorf("beta: %+v, want no features, health 100, no members", beta)
	}
	if beta.LastUpdatedAt != nil || beta.LastReportedFlagUsage != nil || beta.ArchivedAt != nil {
		t.Errorf("beta: dates %v %v %v, want null", beta.LastUpdatedAt, beta.LastReportedFlagUsage, beta.ArchivedAt)
	}
	if beta.Mode != flagadmin.ModeProtected || beta.Description != "same name, later id" {
		t.Errorf("beta: mode %q description %q", beta.Mode, beta.Description)
	}
	if list[2].Health != 100 || list[2].FeatureCount != 1 {
		t.Errorf("secret: health %d featureCount %d, want 100, 1 (permission features never go stale)", list[2].Health, list[2].FeatureCount)
	}
}

func TestListProjectsOwners(t *testing.T) {
	svc := projectService(t)
	list, err := svc.ListProjects(context.Background(), flagadmin.AdminToken("admin"), flagadmin.ProjectListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owners, err := json.Marshal(list[0].Owners)
	if err != nil {
		t.Fatal(err)
	}
	// Users first, by name, then groups, by name; a user without email has
	// null email and imageUrl.
	want := `[{"ownerType":"user","name":"Amy","email":null,"imageUrl":null},` +
		`{"ownerType":"user","name":"Zed","email":"Zed@Example.com","imageUrl":"https://gravatar.com/avatar/` + gravatar("zed@example.com") + `?s=42\u0026d=retro\u0026r=g"},` +
		`{"ownerType":"group","name":"Dev"},{"ownerType":"group","name":"Ops"}]`
	if string(owners) != want {
		t.Errorf("alpha owners =\n%s\nwant\n%s", owners, want)
	}
	for _, e := range list[1:] {
		if got, _ := json.Marshal(e.Owners); string(got) != `[{"ownerType":"system"}]` {
			t.Errorf("%s owners = %s, want the system owner", e.ID, got)
		}
	}
}

func TestListProjectsArchived(t *testing.T) {
	svc := projectService(t)
	list, err := svc.ListProjects(context.Background(), flagadmin.System, flagadmin.ProjectListOptions{Archived: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "gamma" || list[0].ArchivedAt == nil {
		t.Fatalf("archived list = %v, want gamma with archivedAt", listIDs(list))
	}
}

func TestListProjectsVisibilityAndFavorites(t *testing.T) {
	svc := projectService(t)
	ctx := context.Background()
	tests := []struct {
		name      string
		user      flagadmin.User
		want      string
		favorites string
	}{
		{"admin user sees private projects", flagadmin.User{ID: 1, RootRole: flagadmin.RoleAdmin}, "[alpha beta secret aardvark]", "[]"},
		{"non-member viewer does not", flagadmin.User{ID: 4, RootRole: flagadmin.RoleViewer}, "[alpha beta aardvark]", "[]"},
		{"favorites are the caller's", flagadmin.User{ID: 3, RootRole: flagadmin.RoleEditor}, "[alpha beta aardvark]", "[alpha]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := svc.ListProjects(ctx, flagadmin.AsUser(tt.user), flagadmin.ProjectListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(listIDs(list)); got != tt.want {
				t.Errorf("projects = %s, want %s", got, tt.want)
			}
			var favs []string
			for _, e := range list {
				if e.Favorite {
					favs = append(favs, e.ID)
				}
			}
			if got := fmt.Sprintf("%v", append([]string{}, favs...)); got != tt.favorites {
				t.Errorf("favorites = %s, want %s", got, tt.favorites)
			}
		})
	}
}

// gravatar returns the hex MD5 of an e-mail address, as Gravatar URLs use it.
func gravatar(email string) string {
	sum := md5.Sum([]byte(email))
	return hex.EncodeToString(sum[:])
}

func TestStanding(t *testing.T) {
	now := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	q := flagadmin.ProjectStatsQuery{PotentiallyStaleBefore: flagadmin.PotentiallyStaleCutoffs(now)}
	old, recent := now.AddDate(0, 0, -41), now.AddDate(0, 0, -39)
	cut := now.AddDate(0, 0, -40)
	archived := now
	for _, c := range []struct {
		name string
		f    flagadmin.Feature
		want flagadmin.FeatureStanding
	}{
		{"archived", flagadmin.Feature{Type: flagadmin.TypeRelease, CreatedAt: old, ArchivedAt: &archived}, flagadmin.NotCounted},
		{"archived and stale", flagadmin.Feature{Type: flagadmin.TypeRelease, Stale: true, CreatedAt: old, ArchivedAt: &archived}, flagadmin.NotCounted},
		{"stale beats potentially stale", flagadmin.Feature{Type: flagadmin.TypeRelease, Stale: true, CreatedAt: old}, flagadmin.Stale},
		{"release past its lifetime", flagadmin.Feature{Type: flagadmin.TypeRelease, CreatedAt: old}, flagadmin.PotentiallyStale},
		{"release within its lifetime", flagadmin.Feature{Type: flagadmin.TypeRelease, CreatedAt: recent}, flagadmin.Fresh},
		{"release created at the cut-off", flagadmin.Feature{Type: flagadmin.TypeRelease, CreatedAt: cut}, flagadmin.Fresh},
		{"operational past 7 days", flagadmin.Feature{Type: flagadmin.TypeOperational, CreatedAt: now.AddDate(0, 0, -8)}, flagadmin.PotentiallyStale},
		{"kill switch never", flagadmin.Feature{Type: flagadmin.TypeKillSwitch, CreatedAt: old.AddDate(-5, 0, 0)}, flagadmin.Fresh},
		{"permission never", flagadmin.Feature{Type: flagadmin.TypePermission, CreatedAt: old.AddDate(-5, 0, 0)}, flagadmin.Fresh},
	} {
		if got := q.Standing(c.f); got != c.want {
			t.Errorf("%s: got standing %d, want %d", c.name, got, c.want)
		}
	}
}

func TestCountedMembers(t *testing.T) {
	groups := map[int64][]int64{1: {3, 4}, 2: {4, 5}, 3: {}}
	groupUsers := func(id int64) iter.Seq[int64] { return slices.Values(groups[id]) }
	user := func(id int64) flagadmin.ProjectMembership {
		return flagadmin.ProjectMembership{UserID: &id, Role: flagadmin.ProjectRoleMember}
	}
	group := func(id int64, role flagadmin.ProjectRole) flagadmin.ProjectMembership {
		return flagadmin.ProjectMembership{GroupID: &id, Role: role}
	}
	for _, c := range []struct {
		name    string
		members []flagadmin.ProjectMembership
		want    []int64
	}{
		{"none", nil, nil},
		{"direct", []flagadmin.ProjectMembership{user(7), user(2)}, []int64{2, 7}},
		{"through a group", []flagadmin.ProjectMembership{group(1, flagadmin.ProjectRoleMember)}, []int64{3, 4}},
		{"an empty group adds none", []flagadmin.ProjectMembership{group(3, flagadmin.ProjectRoleOwner)}, nil},
		{"in two groups, counted once", []flagadmin.ProjectMembership{group(1, flagadmin.ProjectRoleMember), group(2, flagadmin.ProjectRoleOwner)}, []int64{3, 4, 5}},
		{"direct and through a group, counted once", []flagadmin.ProjectMembership{user(4), group(2, flagadmin.ProjectRoleOwner)}, []int64{4, 5}},
	} {
		if got := flagadmin.CountedMembers(c.members, groupUsers); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
