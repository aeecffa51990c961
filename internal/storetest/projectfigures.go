package storetest

import (
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// projectFigureCases check that the figures of the project list follow
// every kind of change after the data is first stored: a store that keeps
// them at write time must update them on each write path.
func projectFigureCases() []testCase {
	return []testCase{
		{"projects/figures follow feature updates", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "p"}, {ID: "other"}}
			seed.Features = []flagadmin.Feature{
				feat("new-release", "p", flagadmin.TypeRelease, daysAgo(1, 0)),
				feat("old-release", "p", flagadmin.TypeRelease, daysAgo(100, 0)),
				feat("old-ops", "p", flagadmin.TypeOperational, daysAgo(10, 0)),
				feat("elsewhere", "other", flagadmin.TypeRelease, daysAgo(100, 0)),
			}
			seed.Features[0].LastSeenAt = atp("2026-06-01T00:00:00.001Z")
			seed.Features[1].LastSeenAt = atp("2026-06-02T00:00:00.002Z")
			w.load(seed)
			check := func(step string, health, featureCount int, lastSeen *time.Time) {
				t.Helper()
				p := project(t, w.projects(t, w.as(adminSecret), false), "p")
				wantEqual(t, step+": health", p.Health, health)
				wantEqual(t, step+": featureCount", p.FeatureCount, featureCount)
				wantTime(t, step+": lastReportedFlagUsage", p.LastReportedFlagUsage, lastSeen)
				other := project(t, w.projects(t, w.as(adminSecret), false), "other")
				wantEqual(t, step+": other project's health", other.Health, 0)
				wantEqual(t, step+": other project's featureCount", other.FeatureCount, 1)
			}
			n := 0
			update := func(name string, change func(f *flagadmin.Feature)) {
				t.Helper()
				n++
				err := w.store.UpdateFeature(w.ctx, name, func(f *flagadmin.Feature) (*flagadmin.Event, error) {
					change(f)
					e := ev(flagadmin.EventFeatureUpdated, "system", nil, fmt.Sprintf("2026-05-%02dT00:00:00Z", n), str("p"), str(name), nil, "")
					return &e, nil
				})
				wantNoError(t, "UpdateFeature "+name, err)
			}
			// 2 of 3 potentially stale (old-release, old-ops).
			check("stored", 33, 3, atp("2026-06-02T00:00:00.002Z"))
			update("new-release", func(f *flagadmin.Feature) { f.Stale = true })
			check("new-release stale", 0, 3, atp("2026-06-02T00:00:00.002Z")) // 1 stale + 2 potentially stale
			update("old-ops", func(f *flagadmin.Feature) { f.Type = flagadmin.TypeKillSwitch })
			check("old-ops a kill switch", 33, 3, atp("2026-06-02T00:00:00.002Z"))
			update("old-release", func(f *flagadmin.Feature) { f.ArchivedAt = atp("2026-06-03T00:00:00Z") })
			check("old-release archived", 50, 2, atp("2026-06-02T00:00:00.002Z"))
			update("old-release", func(f *flagadmin.Feature) { f.LastSeenAt = nil })
			check("old-release's lastSeenAt cleared", 50, 2, atp("2026-06-01T00:00:00.001Z"))
			update("new-release", func(f *flagadmin.Feature) { f.LastSeenAt = atp("2026-05-01T00:00:00Z") })
			check("new-release seen earlier", 50, 2, atp("2026-05-01T00:00:00Z"))
			update("old-ops", func(f *flagadmin.Feature) { f.LastSeenAt = atp("2026-07-01T00:00:00.007Z") })
			check("old-ops seen", 50, 2, atp("2026-07-01T00:00:00.007Z"))
			update("old-release", func(f *flagadmin.Feature) { f.ArchivedAt = nil })
			check("old-release revived", 33, 3, atp("2026-07-01T00:00:00.007Z"))
			update("new-release", func(f *flagadmin.Feature) { f.Stale = false; f.Type = flagadmin.TypeOperational })
			check("new-release fresh operational", 67, 3, atp("2026-07-01T00:00:00.007Z"))
			update("new-release", func(f *flagadmin.Feature) { f.Stale = true; f.ArchivedAt = atp("2026-06-04T00:00:00Z") })
			check("new-release stale and archived", 50, 2, atp("2026-07-01T00:00:00.007Z"))

			// A callback that writes nothing changes nothing.
			err := w.store.UpdateFeature(w.ctx, "old-ops", func(f *flagadmin.Feature) (*flagadmin.Event, error) {
				f.Stale = true
				return nil, nil
			})
			wantNoError(t, "UpdateFeature without an event", err)
			check("nothing written", 50, 2, atp("2026-07-01T00:00:00.007Z"))
			wantTime(t, "lastUpdatedAt", project(t, w.projects(t, w.as(adminSecret), false), "p").LastUpdatedAt, atp(fmt.Sprintf("2026-05-%02dT00:00:00Z", n)))
		}},
		{"projects/features added later count", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "p"}}
			seed.Features = []flagadmin.Feature{feat("first", "p", flagadmin.TypeRelease, daysAgo(1, 0))}
			w.load(seed)
			more := &flagadmin.Batch{Features: []flagadmin.Feature{
				feat("old", "p", flagadmin.TypeExperiment, daysAgo(41, 0)),
				stale(feat("tired", "p", flagadmin.TypePermission, daysAgo(1, 0))),
				archived(feat("gone", "p", flagadmin.TypeRelease, daysAgo(400, 0))),
				feat("fresh", "p", flagadmin.TypeRelease, daysAgo(2, 0)),
			}}
			more.Features[3].LastSeenAt = atp("2026-06-05T00:00:00.005Z")
			wantNoError(t, "Write features", w.store.Write(w.ctx, more))
			p := project(t, w.projects(t, w.as(adminSecret), false), "p")
			wantEqual(t, "featureCount", p.FeatureCount, 4)
			wantEqual(t, "health", p.Health, 50) // 1 stale + 1 potentially stale of 4
			wantTime(t, "lastReportedFlagUsage", p.LastReportedFlagUsage, atp("2026-06-05T00:00:00.005Z"))
		}},
		{"projects/potentially stale follows the clock", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "p"}}
			seed.Features = []flagadmin.Feature{
				feat("release-20", "p", flagadmin.TypeRelease, daysAgo(20, 0)),
				feat("experiment-35", "p", flagadmin.TypeExperiment, daysAgo(35, 0)),
				feat("ops-1", "p", flagadmin.TypeOperational, daysAgo(1, 0)),
				feat("kill-1", "p", flagadmin.TypeKillSwitch, daysAgo(1, 0)),
				stale(feat("release-1", "p", flagadmin.TypeRelease, daysAgo(1, 0))),
			}
			w.load(seed)
			for _, c := range []struct {
				later  time.Duration
				health int
			}{
				{0, 80},                                 // 1 stale of 5
				{6*24*time.Hour - time.Millisecond, 60}, // + experiment-35 (41 days); ops-1 a millisecond short of 7 days
				{6 * 24 * time.Hour, 60},                // ops-1 exactly 7 days old
				{6*24*time.Hour + time.Millisecond, 40}, // + ops-1
				{20*24*time.Hour - time.Millisecond, 40},
				{20 * 24 * time.Hour, 40},                // release-20 exactly 40 days old
				{20*24*time.Hour + time.Millisecond, 20}, // + release-20
				{3650 * 24 * time.Hour, 20},              // kill-1 never; release-1 is stale only
				{-30 * 24 * time.Hour, 80},               // a clock behind: nothing old enough
			} {
				svc := flagadmin.NewService(w.store, flagadmin.WithClock(func() time.Time { return suiteNow.Add(c.later) }))
				list, err := svc.ListProjects(w.ctx, w.as(adminSecret), flagadmin.ProjectListOptions{})
				wantNoError(t, "ListProjects", err)
				wantEqual(t, fmt.Sprintf("health %v later", c.later), project(t, list, "p").Health, c.health)
			}
		}},
		{"projects/memberCount follows group and member changes", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Groups = append(seed.Groups, flagadmin.Group{ID: 3, Name: "Team", Users: []int64{eveID}})
			seed.Projects = []flagadmin.Project{
				{ID: "p", Members: []flagadmin.ProjectMembership{groupMember(3, flagadmin.ProjectRoleMember), userMember(vicID, flagadmin.ProjectRoleMember)}},
				{ID: "q", Members: []flagadmin.ProjectMembership{groupMember(3, flagadmin.ProjectRoleOwner)}},
				{ID: "r"},
			}
			w.load(seed)
			check := func(step string, p, q, r int) {
				t.Helper()
				list := w.projects(t, w.as(adminSecret), false)
				wantEqual(t, step+": p memberCount", project(t, list, "p").MemberCount, p)
				wantEqual(t, step+": q memberCount", project(t, list, "q").MemberCount, q)
				wantEqual(t, step+": r memberCount", project(t, list, "r").MemberCount, r)
			}
			check("stored", 2, 1, 0)
			wantNoError(t, "add Gus to the group", w.store.Write(w.ctx, &flagadmin.Batch{GroupMembers: []flagadmin.GroupMember{{GroupID: 3, UserID: gusID}}}))
			check("Gus in the group", 3, 2, 0)
			wantNoError(t, "add Gus to the group again", w.store.Write(w.ctx, &flagadmin.Batch{GroupMembers: []flagadmin.GroupMember{{GroupID: 3, UserID: gusID}}}))
			check("Gus in the group again", 3, 2, 0)
			wantNoError(t, "give Eve a direct role in q and r", w.store.Write(w.ctx, &flagadmin.Batch{ProjectMembers: []flagadmin.ProjectMember{
				{ProjectID: "q", ProjectMembership: userMember(eveID, flagadmin.ProjectRoleOwner)},
				{ProjectID: "r", ProjectMembership: userMember(eveID, flagadmin.ProjectRoleMember)},
			}}))
			check("Eve direct", 3, 2, 1)
			wantNoError(t, "make Vic an owner of p", w.store.Write(w.ctx, &flagadmin.Batch{ProjectMembers: []flagadmin.ProjectMember{
				{ProjectID: "p", ProjectMembership: userMember(vicID, flagadmin.ProjectRoleOwner)},
			}}))
			check("Vic an owner", 3, 2, 1)
			wantEqual(t, "p owners", fmt.Sprint(ownerList(project(t, w.projects(t, w.as(adminSecret), false), "p").Owners)), "[user:Vic Viewer]")
			err := w.store.DeleteUser(w.ctx, eveID, func(u flagadmin.User) (flagadmin.Event, error) {
				return ev(flagadmin.EventUserDeleted, "system", nil, "2026-05-01T00:00:00Z", nil, nil, nil, ""), nil
			})
			wantNoError(t, "DeleteUser Eve", err)
			check("Eve deleted", 2, 1, 0)
			wantEqual(t, "q owners", fmt.Sprint(ownerList(project(t, w.projects(t, w.as(adminSecret), false), "q").Owners)), "[group:Team]")
			err = w.store.DeleteUser(w.ctx, gusID, func(u flagadmin.User) (flagadmin.Event, error) {
				return ev(flagadmin.EventUserDeleted, "system", nil, "2026-05-02T00:00:00Z", nil, nil, nil, ""), nil
			})
			wantNoError(t, "DeleteUser Gus", err)
			check("Gus deleted", 1, 0, 0)
		}},
		{"projects/memberCount is the domain's CountedMembers", memberCountIsCountedMembers},
		{"projects/lastUpdatedAt counts events stored before the project", func(t *testing.T, w *world) {
			w.load(accounts(),
				namedEvent{"early", ev(flagadmin.EventFeatureUpdated, "system", nil, "2025-05-02T00:00:00.002Z", str("later"), nil, nil, "")},
				namedEvent{"earlier", ev(flagadmin.EventFeatureUpdated, "system", nil, "2025-05-01T00:00:00Z", str("later"), nil, nil, "")},
			)
			wantNoError(t, "create the project", w.store.Write(w.ctx, &flagadmin.Batch{Projects: []flagadmin.Project{{ID: "later"}, {ID: "quiet"}}}))
			list := w.projects(t, w.as(adminSecret), false)
			wantTime(t, "later lastUpdatedAt", project(t, list, "later").LastUpdatedAt, atp("2025-05-02T00:00:00.002Z"))
			wantTime(t, "quiet lastUpdatedAt", project(t, list, "quiet").LastUpdatedAt, nil)
			write := func(createdAt string, projects ...string) {
				t.Helper()
				b := &flagadmin.Batch{}
				for _, p := range projects {
					b.Events = append(b.Events, ev(flagadmin.EventFeatureUpdated, "system", nil, createdAt, str(p), nil, nil, ""))
				}
				wantNoError(t, "Write events", w.store.Write(w.ctx, b))
			}
			write("2025-04-01T00:00:00Z", "later", "quiet")
			list = w.projects(t, w.as(adminSecret), false)
			wantTime(t, "later lastUpdatedAt after an older event", project(t, list, "later").LastUpdatedAt, atp("2025-05-02T00:00:00.002Z"))
			wantTime(t, "quiet lastUpdatedAt after its first event", project(t, list, "quiet").LastUpdatedAt, atp("2025-04-01T00:00:00Z"))
			write("2025-06-01T00:00:00.006Z", "quiet", "later", "nowhere")
			list = w.projects(t, w.as(adminSecret), false)
			wantTime(t, "later lastUpdatedAt after a newer event", project(t, list, "later").LastUpdatedAt, atp("2025-06-01T00:00:00.006Z"))
			wantTime(t, "quiet lastUpdatedAt after a newer event", project(t, list, "quiet").LastUpdatedAt, atp("2025-06-01T00:00:00.006Z"))
		}},
		{"projects/lastUpdatedAt is the newest event under concurrent completions", func(t *testing.T, w *world) {
			seed := accounts()
			seed.Projects = []flagadmin.Project{{ID: "p"}, {ID: "q"}}
			for i := range goroutines {
				seed.Features = append(seed.Features, feat(fmt.Sprintf("f%02d", i), "p", flagadmin.TypeRelease, daysAgo(1, 0)))
			}
			seed.Features = append(seed.Features, feat("elsewhere", "q", flagadmin.TypeRelease, daysAgo(1, 0)))
			w.load(seed, namedEvent{"start", ev(flagadmin.EventFeatureUpdated, "system", nil, "2026-06-01T00:00:00Z", str("p"), nil, nil, "")})
			start := at("2026-06-01T00:00:00Z")
			// Each goroutine completes its own feature of p with an event
			// time of its own, in an order unrelated to the goroutines':
			// (17 i) mod 50 takes every value in [0, 50) once.
			complete := func(offset time.Duration) {
				t.Helper()
				errs := together(goroutines, func(i int) error {
					name := fmt.Sprintf("f%02d", i)
					createdAt := start.Add(offset + time.Duration((17*i)%goroutines)*time.Second + time.Duration(i)*time.Millisecond)
					return w.store.UpdateFeature(w.ctx, name, func(f *flagadmin.Feature) (*flagadmin.Event, error) {
						f.Lifecycle = flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusKept, StatusValue: offset.String()}
						e := ev(flagadmin.EventFeatureCompleted, "system", nil, "2026-01-01T00:00:00Z", str("p"), str(name), nil, "")
						e.CreatedAt = createdAt
						return &e, nil
					})
				})
				for i, err := range errs {
					if err != nil {
						t.Fatalf("goroutine %d: UpdateFeature: got error %v, want nil", i, err)
					}
				}
			}
			// newest is the newest createdAt among the stored events of p.
			newest := func() *time.Time {
				var out *time.Time
				for _, e := range w.storeEvents(flagadmin.EventQuery{Projects: []string{"p"}}) {
					if out == nil || e.CreatedAt.After(*out) {
						c := e.CreatedAt
						out = &c
					}
				}
				return out
			}
			complete(time.Hour) // every event newer than start
			list := w.projects(t, w.as(adminSecret), false)
			wantTime(t, "lastUpdatedAt after concurrent newer events", project(t, list, "p").LastUpdatedAt, newest())
			// f47's is the newest: second 47 * 17 mod 50 = 49, millisecond 47.
			wantTime(t, "lastUpdatedAt after concurrent newer events", project(t, list, "p").LastUpdatedAt, atp("2026-06-01T01:00:49.047Z"))
			wantTime(t, "q lastUpdatedAt", project(t, list, "q").LastUpdatedAt, nil)
			complete(-time.Hour) // every event older than the newest: lastUpdatedAt stays
			list = w.projects(t, w.as(adminSecret), false)
			wantTime(t, "lastUpdatedAt after concurrent older events", project(t, list, "p").LastUpdatedAt, atp("2026-06-01T01:00:49.047Z"))
			wantTime(t, "lastUpdatedAt after concurrent older events", project(t, list, "p").LastUpdatedAt, newest())
		}},
	}
}

// memberCountIsCountedMembers holds a store's MemberCount to the domain's
// rule (flagadmin.CountedMembers) over a generated world of users, groups
// and projects with overlapping memberships, after it is stored and after
// each kind of change that moves the figure: users added to groups, roles
// granted or changed, users deleted. A store that counts in its own terms
// (bunstore's SQL) is checked against the one statement of the rule.
func memberCountIsCountedMembers(t *testing.T, w *world) {
	rng := rand.New(rand.NewPCG(11, 17))
	seed := accounts()
	var users []int64
	for _, u := range seed.Users {
		users = append(users, u.ID)
	}
	for id := int64(20); id < 40; id++ {
		seed.Users = append(seed.Users, flagadmin.User{ID: id, Name: fmt.Sprintf("User %d", id), Email: fmt.Sprintf("u%d@example.com", id), RootRole: flagadmin.RoleViewer})
		users = append(users, id)
	}
	// The model: each group's users, each project's role holders.
	groups := map[int64][]int64{}
	for _, g := range seed.Groups {
		groups[g.ID] = slices.Clone(g.Users)
	}
	for id := int64(3); id <= 8; id++ {
		var in []int64
		for _, u := range users {
			if rng.IntN(4) == 0 {
				in = append(in, u)
			}
		}
		if id == 8 {
			in = []int64{}
		}
		groups[id] = in
		seed.Groups = append(seed.Groups, flagadmin.Group{ID: id, Name: fmt.Sprintf("Group %d", id), Users: in})
	}
	groupIDs := slices.Sorted(maps.Keys(groups))
	role := func() flagadmin.ProjectRole {
		return []flagadmin.ProjectRole{flagadmin.ProjectRoleMember, flagadmin.ProjectRoleOwner}[rng.IntN(2)]
	}
	members := map[string][]flagadmin.ProjectMembership{}
	// grant replaces an earlier role of the same user or group, as a store does.
	grant := func(project string, m flagadmin.ProjectMembership) {
		ms := slices.DeleteFunc(members[project], func(o flagadmin.ProjectMembership) bool {
			return (m.UserID != nil && o.UserID != nil && *m.UserID == *o.UserID) || (m.GroupID != nil && o.GroupID != nil && *m.GroupID == *o.GroupID)
		})
		members[project] = append(ms, m)
	}
	var projects []string
	for i := range 12 {
		id := fmt.Sprintf("p%02d", i)
		projects = append(projects, id)
		for _, u := range users {
			if rng.IntN(6) == 0 {
				grant(id, userMember(u, role()))
			}
		}
		for _, g := range groupIDs {
			if rng.IntN(3) == 0 {
				grant(id, groupMember(g, role()))
			}
		}
		seed.Projects = append(seed.Projects, flagadmin.Project{ID: id, Members: slices.Clone(members[id])})
	}
	w.load(seed)
	check := func(step string) {
		t.Helper()
		stats, err := w.store.ProjectStats(w.ctx, flagadmin.ProjectStatsQuery{})
		wantNoError(t, step+": ProjectStats", err)
		got := map[string]int{}
		for _, st := range stats {
			got[st.Project.ID] = st.MemberCount
		}
		nonzero := 0
		for _, p := range projects {
			want := len(flagadmin.CountedMembers(members[p], func(g int64) iter.Seq[int64] { return slices.Values(groups[g]) }))
			wantEqual(t, step+": "+p+" memberCount", got[p], want)
			if want > 0 {
				nonzero++
			}
		}
		if nonzero < len(projects)/2 {
			t.Fatalf("%s: %d of %d projects have members: the world tests too little", step, nonzero, len(projects))
		}
	}
	check("stored")

	var add flagadmin.Batch
	for range 10 {
		g, u := groupIDs[rng.IntN(len(groupIDs))], users[rng.IntN(len(users))]
		add.GroupMembers = append(add.GroupMembers, flagadmin.GroupMember{GroupID: g, UserID: u})
		if !slices.Contains(groups[g], u) {
			groups[g] = append(groups[g], u)
		}
	}
	wantNoError(t, "add users to groups", w.store.Write(w.ctx, &add))
	check("users added to groups")

	var grants flagadmin.Batch
	for range 10 {
		p := projects[rng.IntN(len(projects))]
		m := userMember(users[rng.IntN(len(users))], role())
		if rng.IntN(2) == 0 {
			m = groupMember(groupIDs[rng.IntN(len(groupIDs))], role())
		}
		grants.ProjectMembers = append(grants.ProjectMembers, flagadmin.ProjectMember{ProjectID: p, ProjectMembership: m})
		grant(p, m)
	}
	wantNoError(t, "grant roles", w.store.Write(w.ctx, &grants))
	check("roles granted")

	for i, u := range []int64{users[rng.IntN(len(users))], 4 /* Gus, in Platform */} {
		err := w.store.DeleteUser(w.ctx, u, func(flagadmin.User) (flagadmin.Event, error) {
			return ev(flagadmin.EventUserDeleted, "system", nil, fmt.Sprintf("2026-05-0%dT00:00:00Z", i+1), nil, nil, nil, ""), nil
		})
		wantNoError(t, fmt.Sprintf("DeleteUser %d", u), err)
		for g := range groups {
			groups[g] = slices.DeleteFunc(groups[g], func(x int64) bool { return x == u })
		}
		for p := range members {
			members[p] = slices.DeleteFunc(members[p], func(m flagadmin.ProjectMembership) bool { return m.UserID != nil && *m.UserID == u })
		}
		check(fmt.Sprintf("user %d deleted", u))
	}
}
