package storetest

import (
	"fmt"
	"slices"
	"strings"
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

// multiProjectFixture is visibilityFixture with events that name several
// projects, as Unleash records those of a token for several projects
// (comma-joined) or for every project ("*"), newer than its own, oldest
// first: default+guarded, default+secret, secret+vault, every, and two
// that name no existing project but look alike: default+secrets,
// default+Secret.
func multiProjectFixture() (*flagadmin.Seed, []namedEvent) {
	seed, events := visibilityFixture()
	for i, e := range []struct{ name, project string }{
		{"default+guarded", "default,guarded"}, {"default+secret", "default,secret"}, {"secret+vault", "secret,vault"},
		{"every", flagadmin.AllProjects}, {"default+secrets", "default,secrets"}, {"default+Secret", "default,Secret"},
	} {
		at := fmt.Sprintf("2025-04-%02dT00:00:00Z", 6+i)
		events = append(events, namedEvent{e.name, ev(flagadmin.EventAPITokenCreated, "ada@example.com", i64(adaID), at, str(e.project), nil, nil,
			`{"tokenName": "`+e.name+`", "projects": ["`+strings.ReplaceAll(e.project, ",", `", "`)+`"]}`)})
	}
	return seed, events
}

// multiProjectCases: an event naming several projects is seen only by a
// caller who may see every one of them, and one naming every project
// ("*") only by a caller who sees every project, in both searches (page
// and total, whatever the filters the totals are summed for), the export
// and the proofs; a project filter matches the project column whole.
func multiProjectCases() []testCase {
	everything := []string{"default+Secret", "default+secrets", "every", "secret+vault", "default+secret", "default+guarded", "global", "vault", "secret", "guarded", "default"}
	outsider := []string{"default+Secret", "default+secrets", "default+guarded", "guarded", "default"}
	member := []string{"default+Secret", "default+secrets", "default+secret", "default+guarded", "secret", "guarded", "default"}
	callers := []struct {
		name   string
		secret string
		want   []string
	}{
		{"admin token sees every event", adminSecret, everything},
		{"Viewer sees those naming only projects it sees", vicSecret, outsider},
		{"Editor sees those naming only projects it sees", eveSecret, outsider},
		{"member of one private project sees those naming only projects it sees", maxSecret, member},
		{"member through a group likewise", gusSecret, member},
	}
	only := func(names []string, keep func(string) bool) []string {
		var out []string
		for _, n := range names {
			if keep(n) {
				out = append(out, n)
			}
		}
		return out
	}
	multi := func(n string) bool { return strings.Contains(n, "+") || n == "every" }
	var cases []testCase
	for _, c := range callers {
		cases = append(cases,
			testCase{"visibility/multi-project/search/" + c.name, func(t *testing.T, w *world) {
				w.fixture(multiProjectFixture())
				p := w.as(c.secret)
				w.wantPage(t, w.search(t, p, params{}), len(c.want), c.want...)
				w.wantPage(t, w.search(t, p, params{Limit: "2", Offset: "1"}), len(c.want), c.want[1:3]...)
				typed := only(c.want, multi)
				w.wantPage(t, w.search(t, p, params{Type: "IS:" + flagadmin.EventAPITokenCreated}), len(typed), typed...)
				w.wantPage(t, w.search(t, p, params{CreatedBy: "IS:" + fmt.Sprint(adaID)}), len(typed), typed...)
				ranged := only(c.want, func(n string) bool { return multi(n) || n == "global" })
				w.wantPage(t, w.search(t, p, params{From: "IS:2025-04-05", To: "IS:2025-04-30"}), len(ranged), ranged...)
				w.wantPage(t, w.search(t, p, params{Query: "tokenname"}), len(typed), typed...)
			}},
			testCase{"visibility/multi-project/deprecated/" + c.name, func(t *testing.T, w *world) {
				w.fixture(multiProjectFixture())
				w.wantPage(t, w.deprecated(t, w.as(c.secret), deprecatedReq{}), len(c.want), c.want...)
			}},
			testCase{"visibility/multi-project/export/" + c.name, func(t *testing.T, w *world) {
				w.fixture(multiProjectFixture())
				got := w.eventNames(w.export(t, w.as(c.secret), exportParams{}))
				want := slices.Clone(c.want)
				slices.Reverse(want)
				if !slices.Equal(got, want) {
					t.Errorf("export: got %v, want %v", got, want)
				}
			}},
		)
	}
	cases = append(cases,
		testCase{"visibility/multi-project/a project filter matches the project column whole", func(t *testing.T, w *world) {
			w.fixture(multiProjectFixture())
			for _, secret := range []string{adminSecret, maxSecret, vicSecret} {
				w.wantPage(t, w.search(t, w.as(secret), params{Project: "IS:default"}), 1, "default")
				w.wantPage(t, w.deprecated(t, w.as(secret), deprecatedReq{Project: str("default")}), 1, "default")
			}
			w.wantPage(t, w.deprecated(t, w.as(maxSecret), deprecatedReq{Project: str("default,secret")}), 1, "default+secret")
			w.wantPage(t, w.deprecated(t, w.as(vicSecret), deprecatedReq{Project: str("default,secret")}), 0)
			w.wantPage(t, w.deprecated(t, w.as(maxSecret), deprecatedReq{Project: str(flagadmin.AllProjects)}), 0)
			w.wantPage(t, w.deprecated(t, w.as(adminSecret), deprecatedReq{Project: str(flagadmin.AllProjects)}), 1, "every")
		}},
		testCase{"visibility/multi-project/every project is seen by a caller who sees every project", func(t *testing.T, w *world) {
			seed, events := multiProjectFixture()
			seed.Projects = slices.DeleteFunc(seed.Projects, func(p flagadmin.Project) bool { return p.ID == "vault" })
			w.load(seed, events...)
			// Max is a member of the only private project left.
			w.wantPage(t, w.search(t, w.as(maxSecret), params{Type: "IS:" + flagadmin.EventAPITokenCreated}), 6,
				"default+Secret", "default+secrets", "every", "secret+vault", "default+secret", "default+guarded")
			w.wantPage(t, w.search(t, w.as(vicSecret), params{Type: "IS:" + flagadmin.EventAPITokenCreated}), 3,
				"default+Secret", "default+secrets", "default+guarded")
		}},
	)
	return cases
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
