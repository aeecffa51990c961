package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// serviceAccountFixture adds to the accounts a project "default" whose
// members are the CI bot (directly) and the group "Bots" (CI bot and Eve),
// and a project "ops" that the CI bot owns and favorited.
func serviceAccountFixture() *flagadmin.Seed {
	seed := accounts()
	seed.Groups = append(seed.Groups, flagadmin.Group{ID: 3, Name: "Bots", Users: []int64{ciID, eveID}})
	seed.Projects = []flagadmin.Project{
		{ID: "default", Members: []flagadmin.ProjectMembership{userMember(ciID, flagadmin.ProjectRoleMember), groupMember(3, flagadmin.ProjectRoleMember)}},
		{ID: "ops", Members: []flagadmin.ProjectMembership{userMember(ciID, flagadmin.ProjectRoleOwner)}, FavoritedBy: []int64{ciID}},
	}
	return seed
}

// deleteSA runs DeleteServiceAccount as the token secret.
func (w *world) deleteSA(secret, id string) error {
	w.t.Helper()
	return w.svc.DeleteServiceAccount(w.ctx, w.as(secret), id)
}

// wantDeletedEvents checks the number of service-account-deleted events.
func (w *world) wantDeletedEvents(t *testing.T, n int) []flagadmin.Event {
	t.Helper()
	events := w.eventsOfType(flagadmin.EventServiceAccountDeleted)
	if len(events) != n {
		t.Errorf("got %d service-account-deleted events, want %d", len(events), n)
	}
	return events
}

// wantAccount checks whether the account id exists in the store.
func (w *world) wantAccount(t *testing.T, id int64, exists bool) {
	t.Helper()
	_, err := w.store.User(w.ctx, id)
	switch {
	case exists && err != nil:
		t.Errorf("Store.User(%d): got error %v, want the account", id, err)
	case !exists && !errors.Is(err, flagadmin.ErrNotFound):
		t.Errorf("Store.User(%d): got error %v, want %v", id, err, flagadmin.ErrNotFound)
	}
}

// wantAuth checks whether secret still authenticates.
func (w *world) wantAuth(t *testing.T, secret string, works bool) {
	t.Helper()
	_, err := w.svc.Authenticate(w.ctx, secret)
	switch {
	case works && err != nil:
		t.Errorf("Authenticate(%q): got error %v, want nil", secret, err)
	case !works && !errors.Is(err, flagadmin.ErrAuthenticationRequired):
		t.Errorf("Authenticate(%q): got error %v, want %v", secret, err, flagadmin.ErrAuthenticationRequired)
	}
}

func serviceAccountCases() []testCase {
	var cases []testCase
	for _, r := range []struct{ who, secret string }{
		{"an Editor", eveSecret}, {"a Viewer", vicSecret}, {"the service account itself", ciSecret}, {"a project Owner", maxSecret},
	} {
		cases = append(cases, testCase{"serviceaccounts/403 for " + r.who, func(t *testing.T, w *world) {
			seed := serviceAccountFixture()
			seed.Projects[0].Members = append(seed.Projects[0].Members, userMember(maxID, flagadmin.ProjectRoleOwner))
			w.load(seed)
			wantKind(t, "DeleteServiceAccount", w.deleteSA(r.secret, "10"), flagadmin.ErrNoAccess)
			w.wantAccount(t, ciID, true)
			w.wantAuth(t, ciSecret, true)
			w.wantDeletedEvents(t, 0)
		}})
	}
	notFound := []struct{ name, id string }{
		{"a normal user's id", "2"},
		{"an admin user's id", "1"},
		{"a non-numeric id", "ci-bot"},
		{"a number with trailing text", "10x"},
		{"an empty id", ""},
		{"an unknown id", "999"},
		{"a negative id", "-10"},
	}
	for _, r := range notFound {
		cases = append(cases, testCase{"serviceaccounts/404 for " + r.name, func(t *testing.T, w *world) {
			w.load(serviceAccountFixture())
			wantKind(t, "DeleteServiceAccount", w.deleteSA(adminSecret, r.id), flagadmin.ErrNotFound)
			for _, id := range []int64{adaID, eveID, ciID, deployID} {
				w.wantAccount(t, id, true)
			}
			w.wantAuth(t, eveSecret, true)
			w.wantDeletedEvents(t, 0)
		}})
	}
	cases = append(cases,
		testCase{"serviceaccounts/403 before 404 for non-admins", func(t *testing.T, w *world) {
			w.load(serviceAccountFixture())
			wantKind(t, "DeleteServiceAccount(unknown id)", w.deleteSA(eveSecret, "999"), flagadmin.ErrNoAccess)
			wantKind(t, "DeleteServiceAccount(non-numeric id)", w.deleteSA(eveSecret, "abc"), flagadmin.ErrNoAccess)
		}},
		testCase{"serviceaccounts/admin token deletes and its tokens stop working", func(t *testing.T, w *world) {
			w.load(serviceAccountFixture())
			w.wantAuth(t, ciSecret, true)
			w.wantAuth(t, ciSecret2, true)
			wantNoError(t, "DeleteServiceAccount", w.deleteSA(adminSecret, "10"))
			w.wantAccount(t, ciID, false)
			w.wantAuth(t, ciSecret, false)
			w.wantAuth(t, ciSecret2, false)
			for _, s := range []string{ciSecret, ciSecret2} {
				_, _, err := w.store.LookupToken(w.ctx, flagadmin.HashSecret(s))
				wantKind(t, "Store.LookupToken of a deleted account's token", err, flagadmin.ErrNotFound)
			}
			w.wantAccount(t, deployID, true)
			w.wantAuth(t, deploySecret, true)
			w.wantAuth(t, eveSecret, true)
		}},
		testCase{"serviceaccounts/event records the account in preData and the admin token as creator", func(t *testing.T, w *world) {
			w.load(serviceAccountFixture())
			wantNoError(t, "DeleteServiceAccount", w.deleteSA(adminSecret, "10"))
			events := w.wantDeletedEvents(t, 1)
			if len(events) != 1 {
				return
			}
			e := events[0]
			wantJSON(t, "preData", e.PreData, `{"id": 10, "name": "CI bot", "username": "ci-bot", "rootRole": "Editor"}`)
			wantJSON(t, "data", e.Data, "null")
			wantEqual(t, "createdBy", e.CreatedBy, adminTokenName)
			wantEqual(t, "createdByUserId", fmtPtr(e.CreatedByUserID), "-42")
			wantEqual(t, "project", fmtPtr(e.Project), "null")
			wantEqual(t, "featureName", fmtPtr(e.FeatureName), "null")
			wantTime(t, "createdAt", &e.CreatedAt, &suiteNow)
		}},
		testCase{"serviceaccounts/root Admin user deletes and is the creator", func(t *testing.T, w *world) {
			w.load(serviceAccountFixture())
			wantNoError(t, "DeleteServiceAccount", w.deleteSA(adaSecret, "11"))
			w.wantAccount(t, deployID, false)
			w.wantAuth(t, deploySecret, false)
			w.wantAuth(t, ciSecret, true)
			if events := w.wantDeletedEvents(t, 1); len(events) == 1 {
				wantEqual(t, "createdBy", events[0].CreatedBy, "ada@example.com")
				wantEqual(t, "createdByUserId", fmtPtr(events[0].CreatedByUserID), "1")
				wantJSON(t, "preData", events[0].PreData, `{"id": 11, "name": "Deploy bot", "username": "deploy-bot", "rootRole": "Viewer"}`)
			}
		}},
		testCase{"serviceaccounts/second delete is 404 and records nothing", func(t *testing.T, w *world) {
			w.load(serviceAccountFixture())
			wantNoError(t, "first DeleteServiceAccount", w.deleteSA(adminSecret, "10"))
			wantKind(t, "second DeleteServiceAccount", w.deleteSA(adminSecret, "10"), flagadmin.ErrNotFound)
			w.wantDeletedEvents(t, 1)
		}},
		testCase{"serviceaccounts/delete removes project and group memberships", func(t *testing.T, w *world) {
			w.load(serviceAccountFixture())
			admin := w.as(adminSecret)
			before := w.projects(t, admin, false)
			wantEqual(t, "default memberCount before", project(t, before, "default").MemberCount, 2)
			wantEqual(t, "ops owners before", fmt.Sprint(ownerList(project(t, before, "ops").Owners)), "[user:CI bot]")
			wantNoError(t, "DeleteServiceAccount", w.deleteSA(adminSecret, "10"))
			after := w.projects(t, admin, false)
			wantEqual(t, "default memberCount after", project(t, after, "default").MemberCount, 1)
			wantEqual(t, "ops memberCount after", project(t, after, "ops").MemberCount, 0)
			wantEqual(t, "ops owners after", fmt.Sprint(ownerList(project(t, after, "ops").Owners)), "[system]")
			g, err := w.store.Group(w.ctx, 3)
			wantNoError(t, "Store.Group", err)
			if !slices.Equal(g.Users, []int64{eveID}) {
				t.Errorf("Bots users: got %v, want [%d]", g.Users, eveID)
			}
			access, err := w.store.ProjectAccess(w.ctx, ciID)
			wantNoError(t, "Store.ProjectAccess", err)
			if len(access.Roles) != 0 {
				t.Errorf("roles of the deleted account: got %v, want none", access.Roles)
			}
		}},
		testCase{"serviceaccounts/a new account with the freed id starts clean", func(t *testing.T, w *world) {
			w.load(serviceAccountFixture())
			wantNoError(t, "DeleteServiceAccount", w.deleteSA(adminSecret, "10"))
			bot, err := w.svc.CreateUser(w.ctx, flagadmin.System, flagadmin.User{ID: ciID, Name: "New bot", Username: "new-bot", IsService: true, RootRole: flagadmin.RoleViewer})
			wantNoError(t, "CreateUser with the freed id", err)
			w.wantAuth(t, ciSecret, false)
			list := w.projects(t, flagadmin.AsUser(bot), false)
			wantEqual(t, "ops memberCount", project(t, list, "ops").MemberCount, 0)
			wantEqual(t, "ops favorite", project(t, list, "ops").Favorite, false)
			access, err := w.store.ProjectAccess(w.ctx, ciID)
			wantNoError(t, "Store.ProjectAccess", err)
			if len(access.Roles) != 0 {
				t.Errorf("roles of the new account: got %v, want none", access.Roles)
			}
		}},
	)
	return cases
}
