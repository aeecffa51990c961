package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// wantEmptyStore checks that nothing of lifecycleFixture or accounts is stored.
func (w *world) wantEmptyStore(t *testing.T) {
	t.Helper()
	ctx := w.ctx
	for _, id := range []int64{adaID, ciID} {
		_, err := w.store.User(ctx, id)
		wantKind(t, "Store.User", err, flagadmin.ErrNotFound)
	}
	_, err := w.store.Group(ctx, platformGroupID)
	wantKind(t, "Store.Group", err, flagadmin.ErrNotFound)
	_, err = w.store.Project(ctx, "default")
	wantKind(t, "Store.Project", err, flagadmin.ErrNotFound)
	_, err = w.store.Feature(ctx, "alpha")
	wantKind(t, "Store.Feature", err, flagadmin.ErrNotFound)
	_, _, err = w.store.LookupToken(ctx, flagadmin.HashSecret(adminSecret))
	wantKind(t, "Store.LookupToken", err, flagadmin.ErrNotFound)
	for _, typ := range []flagadmin.TokenType{flagadmin.TokenAdmin, flagadmin.TokenUser, flagadmin.TokenClient} {
		n, err := w.store.CountTokens(ctx, typ)
		wantNoError(t, "Store.CountTokens", err)
		wantEqual(t, "tokens of type "+string(typ), n, 0)
	}
	if n := len(w.allEvents()); n != 0 {
		t.Errorf("got %d events, want none", n)
	}
	list, err := w.svc.ListProjects(ctx, flagadmin.System, flagadmin.ProjectListOptions{})
	wantNoError(t, "ListProjects", err)
	if len(list) != 0 {
		t.Errorf("got projects %v, want none", projectIDs(list))
	}
}

// seedEvents are three valid events for seeds.
func seedEvents() []flagadmin.Event {
	return []flagadmin.Event{
		ev(flagadmin.EventProjectCreated, "system", nil, "2025-01-01T00:00:00Z", str("default"), nil, nil, `{"n": 0}`),
		ev(flagadmin.EventFeatureCreated, "system", nil, "2025-01-02T00:00:00Z", str("default"), str("alpha"), nil, `{"n": 1}`),
		ev(flagadmin.EventFeatureCreated, "system", nil, "2025-01-03T00:00:00Z", str("default"), str("old"), nil, `{"n": 2}`),
	}
}

func seedCases() []testCase {
	badSeeds := []struct {
		name   string
		path   string
		mutate func(s *flagadmin.Seed)
	}{
		{"a bad project mode", "projects[1].mode", func(s *flagadmin.Seed) { s.Projects[1].Mode = "secretive" }},
		{"a bad feature type", "features[2].type", func(s *flagadmin.Seed) { s.Features[2].Type = "forever" }},
		{"a bad root role", "serviceAccounts[1].rootRole", func(s *flagadmin.Seed) { s.ServiceAccounts[1].RootRole = "Boss" }},
		{"a feature of a missing project", "features[2].project", func(s *flagadmin.Seed) { s.Features[2].Project = "nope" }},
		{"a member that is no user", "projects[1].members[0].userId", func(s *flagadmin.Seed) { s.Projects[1].Members[0].UserID = i64(99) }},
		{"a member that is no group", "projects[1].members[1].groupId", func(s *flagadmin.Seed) { s.Projects[1].Members[1].GroupID = i64(99) }},
		{"a group user that does not exist", "groups[0].users[0]", func(s *flagadmin.Seed) { s.Groups[0].Users = []int64{99} }},
		{"a favorite of a missing user", "projects[0].favoritedBy[0]", func(s *flagadmin.Seed) { s.Projects[0].FavoritedBy = []int64{99} }},
		{"a token of a missing user", "apiTokens[4].userId", func(s *flagadmin.Seed) { s.APITokens[4].UserID = i64(99) }},
		{"a duplicate token secret", "apiTokens[4].secret", func(s *flagadmin.Seed) { s.APITokens[4].Secret = adaSecret }},
		{"a user id used twice across users and service accounts", "serviceAccounts[0].id", func(s *flagadmin.Seed) { s.ServiceAccounts[0].ID = eveID }},
		{"a duplicate feature name", "features[1].name", func(s *flagadmin.Seed) { s.Features[1].Name = "alpha" }},
		{"an unknown event type", "events[1].type", func(s *flagadmin.Seed) { s.Events[1].Type = "feature-exploded" }},
		{"an event tag too short", "events[2].tags[0].value", func(s *flagadmin.Seed) { s.Events[2].Tags = []flagadmin.Tag{{Type: "simple", Value: "x"}} }},
		{"event data that is not an object", "events[0].data", func(s *flagadmin.Seed) { s.Events[0].Data = json.RawMessage(`[1, 2]`) }},
	}
	var cases []testCase
	for _, b := range badSeeds {
		cases = append(cases, testCase{"seed/all or nothing: " + b.name, func(t *testing.T, w *world) {
			seed := lifecycleFixture()
			seed.Events = seedEvents()
			b.mutate(seed)
			wantValidation(t, w.svc.ApplySeed(w.ctx, seed), b.path)
			w.wantEmptyStore(t)
		}})
	}
	cases = append(cases,
		testCase{"seed/a second seed with a taken id changes nothing", func(t *testing.T, w *world) {
			w.load(accounts())
			second := &flagadmin.Seed{
				Users:    []flagadmin.User{{ID: 50, Name: "Fresh"}, {ID: adaID, Name: "Ada again"}},
				Projects: []flagadmin.Project{{ID: "fresh"}},
				Events:   seedEvents(),
			}
			wantValidation(t, w.svc.ApplySeed(w.ctx, second), "users[1].id")
			_, err := w.store.User(w.ctx, 50)
			wantKind(t, "Store.User(50)", err, flagadmin.ErrNotFound)
			_, err = w.store.Project(w.ctx, "fresh")
			wantKind(t, "Store.Project(fresh)", err, flagadmin.ErrNotFound)
			u, err := w.store.User(w.ctx, adaID)
			wantNoError(t, "Store.User(1)", err)
			wantEqual(t, "Ada's name", u.Name, "Ada Admin")
			if n := len(w.allEvents()); n != 0 {
				t.Errorf("got %d events, want none", n)
			}
		}},
		testCase{"seed/events get increasing ids in file order", func(t *testing.T, w *world) {
			var evs []namedEvent
			for i, ts := range []string{"2025-03-05T00:00:00Z", "2025-03-01T00:00:00Z", "2025-03-09T00:00:00Z", "2025-03-01T00:00:00Z", "2025-02-01T00:00:00Z"} {
				n := strconv.Itoa(i)
				evs = append(evs, namedEvent{n, ev(flagadmin.EventFeatureUpdated, "system", nil, ts, nil, nil, nil, `{"n": `+n+`}`)})
			}
			w.load(accounts(), evs...)
			all := w.allEvents()
			for i, e := range all {
				n := strconv.Itoa(i)
				wantJSON(t, "data of event "+n, e.Data, `{"n": `+n+`}`)
				if i > 0 && e.ID <= all[i-1].ID {
					t.Errorf("event %d: got id %d after %d, want increasing ids", i, e.ID, all[i-1].ID)
				}
			}
			w.wantPage(t, w.search(t, w.as(adminSecret), params{}), 5, "2", "0", "3", "1", "4")
		}},
		testCase{"seed/rows read back from the store", func(t *testing.T, w *world) {
			seed := lifecycleFixture()
			seed.Features[0].Lifecycle = completed(flagadmin.StatusKept, "v1")
			w.load(seed)
			ctx := w.ctx
			u, err := w.store.User(ctx, adaID)
			wantNoError(t, "Store.User", err)
			wantEqual(t, "Ada", u, seed.Users[0])
			sa, err := w.store.User(ctx, ciID)
			wantNoError(t, "Store.User", err)
			wantEqual(t, "CI bot", sa, flagadmin.User{ID: ciID, Name: "CI bot", Username: "ci-bot", RootRole: flagadmin.RoleEditor, IsService: true})
			g, err := w.store.Group(ctx, platformGroupID)
			wantNoError(t, "Store.Group", err)
			wantEqual(t, "group name", g.Name, "Platform")
			wantEqual(t, "group users", slices.Equal(g.Users, []int64{gusID}), true)
			p, err := w.store.Project(ctx, "guarded")
			wantNoError(t, "Store.Project", err)
			wantEqual(t, "mode", p.Mode, flagadmin.ModeProtected)
			if p.Members != nil || p.FavoritedBy != nil {
				t.Errorf("Store.Project: got members %v and favoritedBy %v, want neither", p.Members, p.FavoritedBy)
			}
			f := w.feature(t, "alpha")
			wantEqual(t, "project", f.Project, "default")
			wantEqual(t, "type", f.Type, flagadmin.TypeRelease)
			wantEqual(t, "tags", slices.Equal(f.Tags, []flagadmin.Tag{{Type: "simple", Value: "checkout", Color: flagadmin.ColorOf("#FFFFFF")}, {Type: "team", Value: "payments"}}), true)
			wantTime(t, "lastSeenAt", f.LastSeenAt, atp("2026-06-01T00:00:00Z"))
			wantTime(t, "createdAt", &f.CreatedAt, atp("2026-01-01T00:00:00Z"))
			wantEqual(t, "lifecycle", f.Lifecycle, completed(flagadmin.StatusKept, "v1"))
			old := w.feature(t, "old")
			wantEqual(t, "old stale", old.Stale, true)
			wantEqual(t, "old type", old.Type, flagadmin.TypeOperational)
			wantTime(t, "old archivedAt", old.ArchivedAt, atp("2026-05-01T00:00:00Z"))
			wantEqual(t, "old lifecycle", old.Lifecycle, initial)
			_, err = w.store.Feature(ctx, "Alpha")
			wantKind(t, "Store.Feature of a differently cased name", err, flagadmin.ErrNotFound)
		}},
		testCase{"seed/project roles are the strongest, direct or through a group", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Groups = append(seed.Groups, flagadmin.Group{ID: 3, Name: "Leads", Users: []int64{gusID}})
			seed.Projects = []flagadmin.Project{
				{ID: "both", Members: []flagadmin.ProjectMembership{userMember(gusID, flagadmin.ProjectRoleMember), groupMember(3, flagadmin.ProjectRoleOwner)}},
				{ID: "direct-owner", Members: []flagadmin.ProjectMembership{userMember(gusID, flagadmin.ProjectRoleOwner), groupMember(platformGroupID, flagadmin.ProjectRoleMember)}},
				{ID: "group-only", Members: []flagadmin.ProjectMembership{groupMember(platformGroupID, flagadmin.ProjectRoleMember)}},
				{ID: "none", Members: []flagadmin.ProjectMembership{userMember(eveID, flagadmin.ProjectRoleOwner)}},
				{ID: "hidden", Mode: flagadmin.ModePrivate},
				{ID: "closed", Mode: flagadmin.ModePrivate, ArchivedAt: atp("2026-01-01T00:00:00Z")},
			}
			w.load(seed)
			access, err := w.store.ProjectAccess(w.ctx, gusID)
			wantNoError(t, "Store.ProjectAccess", err)
			want := map[string]flagadmin.ProjectRole{"both": flagadmin.ProjectRoleOwner, "direct-owner": flagadmin.ProjectRoleOwner, "group-only": flagadmin.ProjectRoleMember}
			if len(access.Roles) != len(want) {
				t.Errorf("got roles %v, want %v", access.Roles, want)
			}
			for id, r := range want {
				wantEqual(t, "role in "+id, access.Roles[id], r)
			}
			wantEqual(t, "Gus's private projects, sorted", fmt.Sprint(access.Private), "[closed hidden]")
			none, err := w.store.ProjectAccess(w.ctx, vicID)
			wantNoError(t, "Store.ProjectAccess", err)
			if len(none.Roles) != 0 {
				t.Errorf("Vic: got roles %v, want none", none.Roles)
			}
			wantEqual(t, "Vic's private projects, sorted", fmt.Sprint(none.Private), "[closed hidden]")
		}},
	)
	return cases
}
