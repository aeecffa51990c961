package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// feat builds a fixture feature.
func feat(name, project string, typ flagadmin.FeatureType, createdAt time.Time) flagadmin.Feature {
	return flagadmin.Feature{Name: name, Project: project, Type: typ, CreatedAt: createdAt}
}

// fresh returns n non-stale release features of project created a day ago,
// named prefix-0 .. prefix-(n-1).
func freshFeatures(project, prefix string, n int) []flagadmin.Feature {
	var out []flagadmin.Feature
	for i := range n {
		out = append(out, feat(fmt.Sprintf("%s-%d", prefix, i), project, flagadmin.TypeRelease, daysAgo(1, 0)))
	}
	return out
}

// healthCase is a project list case over one project's features.
type healthCase struct {
	name          string
	features      []flagadmin.Feature // all in project "p"
	health        int
	featureCount  int
	staleFeatures []string // names among features to mark stale
}

func projectCases() []testCase {
	cases := []testCase{
		{"projects/empty store lists nothing", func(t *testing.T, w *world) {
			w.load(accounts())
			admin := w.as(adminSecret)
			if got := w.projects(t, admin, false); len(got) != 0 {
				t.Errorf("active: got %v, want no projects", projectIDs(got))
			}
			if got := w.projects(t, admin, true); len(got) != 0 {
				t.Errorf("archived: got %v, want no projects", projectIDs(got))
			}
		}},
		{"projects/stored fields round-trip", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "web", Name: "Web shop", Description: "The web shop ✓", Mode: flagadmin.ModeProtected, CreatedAt: at("2025-01-01T10:30:00.123+02:00")}}
			w.load(seed)
			p := project(t, w.projects(t, w.as(adminSecret), false), "web")
			wantEqual(t, "name", p.Name, "Web shop")
			wantEqual(t, "description", p.Description, "The web shop ✓")
			wantEqual(t, "mode", p.Mode, flagadmin.ModeProtected)
			wantEqual(t, "createdAt", p.CreatedAt.Format(time.RFC3339Nano), "2025-01-01T08:30:00.123Z")
			wantTime(t, "archivedAt", p.ArchivedAt, nil)
			wantTime(t, "lastUpdatedAt", p.LastUpdatedAt, nil)
			wantTime(t, "lastReportedFlagUsage", p.LastReportedFlagUsage, nil)
			wantEqual(t, "featureCount", p.FeatureCount, 0)
			wantEqual(t, "memberCount", p.MemberCount, 0)
			wantEqual(t, "health", p.Health, 100)
			wantEqual(t, "technicalDebt", p.TechnicalDebt, 0)
			wantEqual(t, "favorite", p.Favorite, false)
			wantEqual(t, "owners", fmt.Sprint(ownerList(p.Owners)), "[system]")
			stored, err := w.store.Project(w.ctx, "web")
			wantNoError(t, "Store.Project", err)
			wantEqual(t, "stored mode", stored.Mode, flagadmin.ModeProtected)
			wantEqual(t, "stored createdAt", stored.CreatedAt.Format(time.RFC3339Nano), "2025-01-01T08:30:00.123Z")
			_, err = w.store.Project(w.ctx, "Web")
			wantKind(t, "Store.Project of a differently cased id", err, flagadmin.ErrNotFound)
		}},
		{"projects/order by name then id", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "zz", Name: "Alpha"}, {ID: "aa", Name: "Beta"}, {ID: "mm", Name: "Alpha"}, {ID: "cc", Name: "Alpha 2"}}
			w.load(seed)
			if got, want := projectIDs(w.projects(t, w.as(adminSecret), false)), []string{"mm", "zz", "cc", "aa"}; !slices.Equal(got, want) {
				t.Errorf("got projects %v, want %v", got, want)
			}
		}},
		{"projects/archived absent or false lists only active projects", func(t *testing.T, w *world) {
			w.load(archiveFixture())
			if got, want := projectIDs(w.projects(t, w.as(adminSecret), false)), []string{"live-a", "live-b"}; !slices.Equal(got, want) {
				t.Errorf("got projects %v, want %v", got, want)
			}
		}},
		{"projects/archived true lists only archived projects", func(t *testing.T, w *world) {
			w.load(archiveFixture())
			list := w.projects(t, w.as(adminSecret), true)
			if got, want := projectIDs(list), []string{"gone-a", "gone-b"}; !slices.Equal(got, want) {
				t.Errorf("got projects %v, want %v", got, want)
			}
			wantTime(t, "archivedAt", project(t, list, "gone-a").ArchivedAt, atp("2026-02-01T10:00:00.5Z"))
		}},
		{"projects/featureCount excludes archived features", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "p"}, {ID: "q"}}
			seed.Features = append(freshFeatures("p", "p", 3), freshFeatures("q", "q", 1)...)
			seed.Features[1].ArchivedAt = atp("2026-06-01T00:00:00Z")
			w.load(seed)
			list := w.projects(t, w.as(adminSecret), false)
			wantEqual(t, "p featureCount", project(t, list, "p").FeatureCount, 2)
			wantEqual(t, "q featureCount", project(t, list, "q").FeatureCount, 1)
		}},
	}

	month := 30
	healths := []healthCase{
		{"health/100 when every feature is archived", []flagadmin.Feature{
			archived(stale(feat("a", "p", flagadmin.TypeRelease, daysAgo(400, 0)))),
		}, 100, 0, nil},
		{"health/stale features lower it", freshFeatures("p", "f", 4), 75, 4, []string{"f-0"}},
		{"health/0 when every feature is stale", freshFeatures("p", "f", 2), 0, 2, []string{"f-0", "f-1"}},
		{"health/release features are potentially stale after 40 days", []flagadmin.Feature{
			feat("over", "p", flagadmin.TypeRelease, daysAgo(40, -time.Millisecond)),
			feat("exactly", "p", flagadmin.TypeRelease, daysAgo(40, 0)),
		}, 50, 2, nil},
		{"health/experiment features are potentially stale after 40 days", []flagadmin.Feature{
			feat("over", "p", flagadmin.TypeExperiment, daysAgo(40, -time.Millisecond)),
			feat("exactly", "p", flagadmin.TypeExperiment, daysAgo(40, 0)),
		}, 50, 2, nil},
		{"health/operational features are potentially stale after 7 days", []flagadmin.Feature{
			feat("over", "p", flagadmin.TypeOperational, daysAgo(7, -time.Millisecond)),
			feat("exactly", "p", flagadmin.TypeOperational, daysAgo(7, 0)),
			feat("release-8-days", "p", flagadmin.TypeRelease, daysAgo(8, 0)),
		}, 67, 3, nil},
		{"health/kill-switch features are never potentially stale", []flagadmin.Feature{
			feat("ancient", "p", flagadmin.TypeKillSwitch, daysAgo(10*365, 0)),
		}, 100, 1, nil},
		{"health/permission features are never potentially stale", []flagadmin.Feature{
			feat("ancient", "p", flagadmin.TypePermission, daysAgo(10*365, 0)),
		}, 100, 1, nil},
		{"health/stale and potentially stale combine", []flagadmin.Feature{
			feat("rel-old", "p", flagadmin.TypeRelease, daysAgo(41, 0)),
			feat("rel-new", "p", flagadmin.TypeRelease, daysAgo(39, 0)),
			feat("exp-old", "p", flagadmin.TypeExperiment, daysAgo(2*month, 0)),
			feat("op-old", "p", flagadmin.TypeOperational, daysAgo(8, 0)),
			feat("op-new", "p", flagadmin.TypeOperational, daysAgo(6, 0)),
			feat("kill-old", "p", flagadmin.TypeKillSwitch, daysAgo(400, 0)),
			feat("perm-old", "p", flagadmin.TypePermission, daysAgo(400, 0)),
		}, 43, 7, []string{"perm-old"}}, // 100 - 1/7 stale - 3/7 potentially stale = 42.86
		{"health/a stale feature is not also potentially stale", []flagadmin.Feature{
			feat("old", "p", flagadmin.TypeRelease, daysAgo(400, 0)),
			feat("new", "p", flagadmin.TypeRelease, daysAgo(1, 0)),
		}, 50, 2, []string{"old"}},
		{"health/archived features do not count", append(freshFeatures("p", "f", 2),
			archived(stale(feat("old-stale", "p", flagadmin.TypeRelease, daysAgo(1, 0)))),
			archived(feat("old-release", "p", flagadmin.TypeRelease, daysAgo(400, 0))),
		), 100, 2, nil},
		{"health/rounds 66.67 up", freshFeatures("p", "f", 3), 67, 3, []string{"f-0"}},
		{"health/rounds 83.33 down", freshFeatures("p", "f", 6), 83, 6, []string{"f-0"}},
		{"health/rounds 87.5 half up", freshFeatures("p", "f", 8), 88, 8, []string{"f-0"}},
	}
	for _, h := range healths {
		cases = append(cases, testCase{"projects/" + h.name, func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "p"}, {ID: "other"}}
			for _, f := range h.features {
				f.Stale = f.Stale || slices.Contains(h.staleFeatures, f.Name)
				seed.Features = append(seed.Features, f)
			}
			// A stale feature of another project must not count for p.
			seed.Features = append(seed.Features, stale(feat("elsewhere", "other", flagadmin.TypeRelease, daysAgo(400, 0))))
			w.load(seed)
			p := project(t, w.projects(t, w.as(adminSecret), false), "p")
			wantEqual(t, "health", p.Health, h.health)
			wantEqual(t, "technicalDebt", p.TechnicalDebt, 100-h.health)
			wantEqual(t, "featureCount", p.FeatureCount, h.featureCount)
		}})
	}

	cases = append(cases,
		testCase{"projects/memberCount counts distinct users directly and through groups", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Groups = append(seed.Groups,
				flagadmin.Group{ID: 3, Name: "Team", Users: []int64{eveID, vicID}},
				flagadmin.Group{ID: 4, Name: "Viewers", Users: []int64{vicID, gusID}},
			)
			seed.Projects = []flagadmin.Project{
				{ID: "p", Members: []flagadmin.ProjectMembership{
					userMember(adaID, flagadmin.ProjectRoleOwner), userMember(eveID, flagadmin.ProjectRoleMember),
					groupMember(3, flagadmin.ProjectRoleMember), groupMember(4, flagadmin.ProjectRoleOwner),
					groupMember(emptyGroupID, flagadmin.ProjectRoleMember),
				}},
				{ID: "q", Members: []flagadmin.ProjectMembership{groupMember(platformGroupID, flagadmin.ProjectRoleMember)}},
				{ID: "r", Members: []flagadmin.ProjectMembership{groupMember(emptyGroupID, flagadmin.ProjectRoleOwner)}},
				{ID: "s"},
			}
			w.load(seed)
			list := w.projects(t, w.as(adminSecret), false)
			wantEqual(t, "p memberCount (Ada, Eve, Vic, Gus)", project(t, list, "p").MemberCount, 4)
			wantEqual(t, "q memberCount (Gus)", project(t, list, "q").MemberCount, 1)
			wantEqual(t, "r memberCount (an empty group)", project(t, list, "r").MemberCount, 0)
			wantEqual(t, "s memberCount", project(t, list, "s").MemberCount, 0)
		}},
		testCase{"projects/owners are users then groups, each by name", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Groups = append(seed.Groups, flagadmin.Group{ID: 3, Name: "Alpha team", Users: []int64{vicID}})
			seed.Projects = []flagadmin.Project{{ID: "p", Members: []flagadmin.ProjectMembership{
				groupMember(platformGroupID, flagadmin.ProjectRoleOwner), userMember(vicID, flagadmin.ProjectRoleOwner),
				userMember(eveID, flagadmin.ProjectRoleMember), groupMember(3, flagadmin.ProjectRoleOwner),
				userMember(nedID, flagadmin.ProjectRoleOwner), userMember(adaID, flagadmin.ProjectRoleOwner),
				groupMember(emptyGroupID, flagadmin.ProjectRoleMember),
			}}}
			w.load(seed)
			p := project(t, w.projects(t, w.as(adminSecret), false), "p")
			want := []string{"user:Ada Admin", "user:Ned Nomail", "user:Vic Viewer", "group:Alpha team", "group:Platform"}
			if got := ownerList(p.Owners); !slices.Equal(got, want) {
				t.Fatalf("got owners %v, want %v", got, want)
			}
			wantEqual(t, "Ada's email", fmtPtr(p.Owners[0].Email), "ada@example.com")
			if p.Owners[0].ImageURL == nil {
				t.Errorf("Ada's imageUrl: got null, want an avatar URL")
			}
			wantEqual(t, "Ned's email", fmtPtr(p.Owners[1].Email), "null")
			wantEqual(t, "Ned's imageUrl", fmtPtr(p.Owners[1].ImageURL), "null")
		}},
		testCase{"projects/owners fall back to the system", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "p", Members: []flagadmin.ProjectMembership{
				userMember(eveID, flagadmin.ProjectRoleMember), groupMember(platformGroupID, flagadmin.ProjectRoleMember),
			}}}
			w.load(seed)
			p := project(t, w.projects(t, w.as(adminSecret), false), "p")
			wantEqual(t, "owners", fmt.Sprint(ownerList(p.Owners)), "[system]")
			wantEqual(t, "memberCount", p.MemberCount, 2)
		}},
		testCase{"projects/favorite is per caller", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "fav", FavoritedBy: []int64{eveID, gusID}}, {ID: "plain"}}
			w.load(seed)
			for _, c := range []struct {
				who, secret string
				fav         bool
			}{{"Eve", eveSecret, true}, {"Gus", gusSecret, true}, {"Vic", vicSecret, false}, {"Ada", adaSecret, false}, {"admin token", adminSecret, false}} {
				list := w.projects(t, w.as(c.secret), false)
				wantEqual(t, c.who+": fav favorite", project(t, list, "fav").Favorite, c.fav)
				wantEqual(t, c.who+": plain favorite", project(t, list, "plain").Favorite, false)
			}
		}},
		testCase{"projects/lastUpdatedAt is the newest event of the project", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "p"}, {ID: "q"}, {ID: "r"}}
			e := func(project *string, createdAt string) namedEvent {
				return namedEvent{createdAt, ev(flagadmin.EventFeatureUpdated, "system", nil, createdAt, project, nil, nil, "")}
			}
			w.load(seed,
				e(str("p"), "2025-05-01T00:00:00Z"),
				e(str("p"), "2025-05-03T04:05:06.789Z"),
				e(str("p"), "2025-05-02T00:00:00Z"),
				e(str("q"), "2025-06-01T00:00:00Z"),
				e(nil, "2025-07-01T00:00:00Z"),
			)
			list := w.projects(t, w.as(adminSecret), false)
			wantTime(t, "p lastUpdatedAt", project(t, list, "p").LastUpdatedAt, atp("2025-05-03T04:05:06.789Z"))
			wantTime(t, "q lastUpdatedAt", project(t, list, "q").LastUpdatedAt, atp("2025-06-01T00:00:00Z"))
			wantTime(t, "r lastUpdatedAt", project(t, list, "r").LastUpdatedAt, nil)
		}},
		testCase{"projects/lastReportedFlagUsage is the newest lastSeenAt", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "p"}, {ID: "q"}}
			seed.Features = append(freshFeatures("p", "p", 3), freshFeatures("q", "q", 1)...)
			seed.Features[0].LastSeenAt = atp("2026-06-01T10:00:00.250Z")
			seed.Features[1].LastSeenAt = atp("2026-06-10T08:00:00.125Z")
			w.load(seed)
			list := w.projects(t, w.as(adminSecret), false)
			wantTime(t, "p lastReportedFlagUsage", project(t, list, "p").LastReportedFlagUsage, atp("2026-06-10T08:00:00.125Z"))
			wantTime(t, "q lastReportedFlagUsage", project(t, list, "q").LastReportedFlagUsage, nil)
		}},
		testCase{"projects/cleanupCount counts the features InCleanup", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "p"}, {ID: "q"}}
			seed.Features = append(freshFeatures("p", "p", 4), freshFeatures("q", "q", 1)...)
			seed.Features[0].Lifecycle = flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusKept}
			seed.Features[1].Lifecycle = flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusDiscarded}
			seed.Features[1].ArchivedAt = atp("2026-06-01T10:00:00Z") // archived, its stage still completed: counted
			seed.Features[2].Lifecycle = flagadmin.Lifecycle{Stage: flagadmin.StageLive}
			seed.Features[4].Lifecycle = flagadmin.Lifecycle{Stage: flagadmin.StageArchived}
			w.load(seed)
			want := map[string]int{}
			for _, f := range seed.Features {
				if flagadmin.InCleanup(f) {
					want[f.Project]++
				}
			}
			list := w.projects(t, w.as(adminSecret), false)
			for _, id := range []string{"p", "q"} {
				if got := project(t, list, id).CleanupCount; got != want[id] || id == "p" && got != 2 {
					t.Errorf("%s cleanupCount: got %d, want %d", id, got, want[id])
				}
			}
		}},
		testCase{"projects/figures of a world built through the service", func(t *testing.T, w *world) {
			ctx, sys := w.ctx, flagadmin.System
			olga, err := w.svc.CreateUser(ctx, sys, flagadmin.User{Name: "Olga Owner", Email: "olga@example.com", RootRole: flagadmin.RoleEditor})
			wantNoError(t, "CreateUser", err)
			paul, err := w.svc.CreateUser(ctx, sys, flagadmin.User{Name: "Paul Peer", Email: "paul@example.com"})
			wantNoError(t, "CreateUser", err)
			crew, err := w.svc.CreateGroup(ctx, sys, flagadmin.Group{Name: "Crew", Users: []int64{olga.ID}})
			wantNoError(t, "CreateGroup", err)
			_, err = w.svc.CreateProject(ctx, sys, flagadmin.Project{ID: "shop", Name: "Shop", Members: []flagadmin.ProjectMembership{userMember(olga.ID, flagadmin.ProjectRoleOwner)}, FavoritedBy: []int64{paul.ID}})
			wantNoError(t, "CreateProject", err)
			wantNoError(t, "AddProjectMember", w.svc.AddProjectMember(ctx, sys, "shop", groupMember(crew.ID, flagadmin.ProjectRoleMember)))
			wantNoError(t, "AddGroupMember", w.svc.AddGroupMember(ctx, sys, crew.ID, paul.ID))
			_, err = w.svc.CreateFeature(ctx, sys, flagadmin.Feature{Name: "cart", Project: "shop", CreatedAt: daysAgo(50, 0)})
			wantNoError(t, "CreateFeature", err)
			_, err = w.svc.CreateFeature(ctx, sys, flagadmin.Feature{Name: "pay", Project: "shop"})
			wantNoError(t, "CreateFeature", err)

			p := project(t, w.projects(t, flagadmin.AsUser(paul), false), "shop")
			wantEqual(t, "featureCount", p.FeatureCount, 2)
			wantEqual(t, "health", p.Health, 50)
			wantEqual(t, "memberCount", p.MemberCount, 2)
			wantEqual(t, "owners", fmt.Sprint(ownerList(p.Owners)), "[user:Olga Owner]")
			wantEqual(t, "favorite", p.Favorite, true)
			wantTime(t, "createdAt", &p.CreatedAt, &suiteNow)
			wantTime(t, "lastUpdatedAt", p.LastUpdatedAt, &suiteNow)
		}},
	)
	return append(cases, projectFigureCases()...)
}

// archiveFixture has active projects live-a, live-b and archived gone-a, gone-b.
func archiveFixture() *flagadmin.Seed {
	seed := accounts()
	seed.Projects = []flagadmin.Project{
		{ID: "gone-b", ArchivedAt: atp("2026-03-01T00:00:00Z")},
		{ID: "live-b"},
		{ID: "gone-a", ArchivedAt: atp("2026-02-01T10:00:00.5Z")},
		{ID: "live-a"},
	}
	return seed
}

func stale(f flagadmin.Feature) flagadmin.Feature { f.Stale = true; return f }

func archived(f flagadmin.Feature) flagadmin.Feature {
	f.ArchivedAt = atp("2026-06-01T00:00:00Z")
	return f
}

// ownerList writes owners as "user:Name", "group:Name" or "system".
func ownerList(owners []flagadmin.ProjectOwner) []string {
	out := make([]string, 0, len(owners))
	for _, o := range owners {
		if o.OwnerType == flagadmin.OwnerSystem {
			out = append(out, "system")
			continue
		}
		out = append(out, o.OwnerType+":"+o.Name)
	}
	return out
}
