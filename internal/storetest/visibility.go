package storetest

import (
	"slices"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// visibilityFixture has four projects and one event in each plus one
// project-less event, newest first: global vault secret guarded default.
//
//	default  open
//	guarded  protected, no members
//	secret   private, members: Max (direct), the Platform group (Gus)
//	vault    private, no members
func visibilityFixture() (*flagadmin.Seed, []namedEvent) {
	seed := accounts()
	seed.Projects = []flagadmin.Project{
		{ID: "default", Name: "Default", Mode: flagadmin.ModeOpen},
		{ID: "guarded", Name: "Guarded", Mode: flagadmin.ModeProtected},
		{ID: "secret", Name: "Secret", Mode: flagadmin.ModePrivate, Members: []flagadmin.ProjectMembership{
			userMember(maxID, flagadmin.ProjectRoleMember), groupMember(platformGroupID, flagadmin.ProjectRoleMember),
		}},
		{ID: "vault", Name: "Vault", Mode: flagadmin.ModePrivate},
	}
	e := func(name, project, createdAt string) namedEvent {
		var p *string
		typ := flagadmin.EventFeatureCreated
		if project != "" {
			p = str(project)
		} else {
			typ = flagadmin.EventSettingUpdated
		}
		return namedEvent{name, ev(typ, "system", i64(flagadmin.SystemUserID), createdAt, p, nil, nil, `{"note": "`+name+` plans"}`)}
	}
	return seed, []namedEvent{
		e("default", "default", "2025-04-01T00:00:00Z"),
		e("guarded", "guarded", "2025-04-02T00:00:00Z"),
		e("secret", "secret", "2025-04-03T00:00:00Z"),
		e("vault", "vault", "2025-04-04T00:00:00Z"),
		e("global", "", "2025-04-05T00:00:00Z"),
	}
}

func visibilityCases() []testCase {
	everything := []string{"global", "vault", "secret", "guarded", "default"}
	public := []string{"guarded", "default"}
	withSecret := []string{"secret", "guarded", "default"}
	callers := []struct {
		name   string
		secret string
		want   []string
	}{
		{"admin token sees every event", adminSecret, everything},
		{"root Admin user sees every event", adaSecret, everything},
		{"Editor sees no private or project-less event", eveSecret, public},
		{"Viewer sees no private or project-less event", vicSecret, public},
		{"service account sees no private or project-less event", ciSecret, public},
		{"direct member sees its private project", maxSecret, withSecret},
		{"member through a group sees its private project", gusSecret, withSecret},
	}
	var cases []testCase
	for _, c := range callers {
		cases = append(cases,
			testCase{"visibility/search/" + c.name, func(t *testing.T, w *world) {
				w.fixture(visibilityFixture())
				w.wantPage(t, w.search(t, w.as(c.secret), params{}), len(c.want), c.want...)
			}},
			testCase{"visibility/deprecated/" + c.name, func(t *testing.T, w *world) {
				w.fixture(visibilityFixture())
				w.wantPage(t, w.deprecated(t, w.as(c.secret), deprecatedReq{}), len(c.want), c.want...)
			}},
		)
	}
	cases = append(cases,
		testCase{"visibility/search/Editor in a world without private projects sees every project event", func(t *testing.T, w *world) {
			w.fixture(searchFixture())
			w.wantPage(t, w.search(t, w.as(eveSecret), params{}), 6, "E", "D", "C", "B", "A", "F")
			w.wantPage(t, w.deprecated(t, w.as(vicSecret), deprecatedReq{}), 6, "E", "D", "C", "B", "A", "F")
		}},
		testCase{"visibility/search/filter on a hidden project matches nothing", func(t *testing.T, w *world) {
			w.fixture(visibilityFixture())
			w.wantPage(t, w.search(t, w.as(eveSecret), params{Project: "IS:secret"}), 0)
		}},
		testCase{"visibility/search/filter on hidden and visible projects keeps the visible", func(t *testing.T, w *world) {
			w.fixture(visibilityFixture())
			w.wantPage(t, w.search(t, w.as(eveSecret), params{Project: "IS_ANY_OF:secret,vault,default"}), 1, "default")
		}},
		testCase{"visibility/search/query does not reveal hidden events", func(t *testing.T, w *world) {
			w.fixture(visibilityFixture())
			w.wantPage(t, w.search(t, w.as(vicSecret), params{Query: "plans"}), 2, public...)
			w.wantPage(t, w.search(t, w.as(vicSecret), params{Query: "vault"}), 0)
		}},
		testCase{"visibility/search/id filter does not reveal a hidden event", func(t *testing.T, w *world) {
			w.fixture(visibilityFixture())
			w.wantPage(t, w.search(t, w.as(eveSecret), params{ID: w.expand("IS_ANY_OF:{vault},{global},{default}")}), 1, "default")
		}},
		testCase{"visibility/deprecated/project filter on a hidden project matches nothing", func(t *testing.T, w *world) {
			w.fixture(visibilityFixture())
			w.wantPage(t, w.deprecated(t, w.as(eveSecret), deprecatedReq{Project: str("secret")}), 0)
			w.wantPage(t, w.deprecated(t, w.as(gusSecret), deprecatedReq{Project: str("secret")}), 1, "secret")
		}},
		testCase{"visibility/deprecated/query does not reveal hidden events", func(t *testing.T, w *world) {
			w.fixture(visibilityFixture())
			w.wantPage(t, w.deprecated(t, w.as(eveSecret), deprecatedReq{Query: str("system")}), 2, public...)
		}},
	)

	lists := []struct {
		name   string
		secret string
		want   []string
	}{
		{"admin token lists every project", adminSecret, []string{"default", "guarded", "secret", "vault"}},
		{"root Admin user lists every project", adaSecret, []string{"default", "guarded", "secret", "vault"}},
		{"Editor does not list private projects", eveSecret, []string{"default", "guarded"}},
		{"Viewer does not list private projects", vicSecret, []string{"default", "guarded"}},
		{"direct member lists its private project", maxSecret, []string{"default", "guarded", "secret"}},
		{"member through a group lists its private project", gusSecret, []string{"default", "guarded", "secret"}},
	}
	for _, c := range lists {
		cases = append(cases, testCase{"visibility/projects/" + c.name, func(t *testing.T, w *world) {
			w.fixture(visibilityFixture())
			if got := projectIDs(w.projects(t, w.as(c.secret), false)); !slices.Equal(got, c.want) {
				t.Errorf("got projects %v, want %v", got, c.want)
			}
		}})
	}
	cases = append(cases, testCase{"visibility/projects/archived private project is hidden from non-members", func(t *testing.T, w *world) {
		seed, events := visibilityFixture()
		seed.Projects = append(seed.Projects,
			flagadmin.Project{ID: "old-private", Name: "Old private", Mode: flagadmin.ModePrivate, ArchivedAt: atp("2026-01-01T00:00:00Z")},
			flagadmin.Project{ID: "old-open", Name: "Old open", Mode: flagadmin.ModeOpen, ArchivedAt: atp("2026-01-01T00:00:00Z")},
		)
		w.load(seed, events...)
		if got, want := projectIDs(w.projects(t, w.as(eveSecret), true)), []string{"old-open"}; !slices.Equal(got, want) {
			t.Errorf("Editor: got archived projects %v, want %v", got, want)
		}
		if got, want := projectIDs(w.projects(t, w.as(adminSecret), true)), []string{"old-open", "old-private"}; !slices.Equal(got, want) {
			t.Errorf("admin: got archived projects %v, want %v", got, want)
		}
	}})
	return cases
}
