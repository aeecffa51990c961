package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// Target classes of the varied workload.
const (
	classVariedPage     = "varied-page"     // varied unfiltered and single-filter pages: p99 < 25 ms and >= 12% of the ceiling
	classVariedOffset   = "varied-offset"   // pages at random offsets over the whole history: p99 < 50 ms
	classVariedProjects = "varied-projects" // the project list as different users: p99 < 25 ms (200 projects)
	classVariedOther    = "varied-other"    // varied IS_ANY_OF sets and month ranges: no target of their own
)

// callersPerRole is how many users of each root role (with a personal
// access token) the varied kinds send requests as, besides the admin tokens.
const callersPerRole = 4

// caller is one Authorization value of the varied workload and who it is.
type caller struct {
	token string
	role  string // "admin token", or the user's root role
}

// variedCallers returns the callers of the varied kinds: the world's admin
// tokens and up to callersPerRole users of each root role, so requests see
// different visibilities (root admins see everything; Editors and Viewers
// do not see project-less events nor private projects they are not members
// of) and the token cache and result cache see different callers.
func variedCallers(w *worldgen.World) []caller {
	var out []caller
	for i := range worldgen.AdminTokenCount {
		out = append(out, caller{token: w.AdminSecret(i), role: "admin token"})
	}
	roles := map[int64]flagadmin.RootRole{}
	for _, u := range w.Users() {
		roles[u.ID] = u.RootRole
	}
	perRole := map[flagadmin.RootRole]int{}
	for _, id := range w.TokenUsers() {
		role := roles[id]
		if perRole[role] >= callersPerRole {
			continue
		}
		secret, ok := w.UserSecret(id)
		if !ok {
			continue
		}
		perRole[role]++
		out = append(out, caller{token: secret, role: string(role)})
	}
	return out
}

// describeCallers says who the callers are, for the kinds' descriptions.
func describeCallers(cs []caller) string {
	n := map[string]int{}
	var order []string
	for _, c := range cs {
		if n[c.role] == 0 {
			order = append(order, c.role)
		}
		n[c.role]++
	}
	parts := make([]string, len(order))
	for i, r := range order {
		parts[i] = fmt.Sprintf("%d %s", n[r], r)
	}
	return strings.Join(parts, ", ")
}

// variedRand returns the random source of request n of a kind: the same n
// always draws the same request, whatever the connection or the run, and
// concurrent connections need no lock.
func variedRand(salt, n uint64) *rand.Rand {
	return rand.New(rand.NewPCG(salt, n))
}

// buildVaried returns the varied kinds over world w: every request draws
// its parameters and its caller at random (deterministically from its
// sequence number), so a cache sees what users send, not one request
// repeated. runID makes the mixed kind's writes unique to the run.
func buildVaried(w *worldgen.World, runID string) []kind {
	callers := variedCallers(w)
	who := describeCallers(callers)
	features := w.Features()
	projects := w.Projects()
	users := w.Users()
	types := flagadmin.EventTypes()
	total := w.Profile().Total
	cfg := w.Config()
	// Months that hold events: the first of each month from Start to End.
	var months []time.Time
	for m := time.Date(cfg.Start.Year(), cfg.Start.Month(), 1, 0, 0, 0, 0, time.UTC); m.Before(cfg.End); m = m.AddDate(0, 1, 0) {
		months = append(months, m)
	}
	// firstPages bounds the offsets of the unfiltered kind: one of its
	// first 10 pages of 50.
	const firstPages = 10

	search := func(name, about, class string, salt uint64, params func(r *rand.Rand) flagadmin.EventSearchParams) kind {
		return kind{Name: name, About: about + "; as " + who, Class: class,
			Next: func(n uint64) request {
				r := variedRand(salt, n)
				p := params(r)
				p.Limit = "50"
				return request{Method: "GET", Path: searchPath(p), Token: callers[r.IntN(len(callers))].token}
			}}
	}
	pick := func(r *rand.Rand, n int) int { return r.IntN(n) }

	kinds := []kind{
		search("varied/none", fmt.Sprintf("no filter, one of the first %d pages", firstPages), classVariedPage, 1,
			func(r *rand.Rand) flagadmin.EventSearchParams {
				return flagadmin.EventSearchParams{Offset: strconv.Itoa(50 * r.IntN(firstPages))}
			}),
		search("varied/feature", fmt.Sprintf("feature=IS:<one of %d features>", len(features)), classVariedPage, 2,
			func(r *rand.Rand) flagadmin.EventSearchParams {
				return flagadmin.EventSearchParams{Feature: "IS:" + features[pick(r, len(features))].Name}
			}),
		search("varied/project", fmt.Sprintf("project=IS:<one of %d projects>", len(projects)), classVariedPage, 3,
			func(r *rand.Rand) flagadmin.EventSearchParams {
				return flagadmin.EventSearchParams{Project: "IS:" + projects[pick(r, len(projects))].ID}
			}),
		search("varied/type", fmt.Sprintf("type=IS:<one of %d event types>", len(types)), classVariedPage, 4,
			func(r *rand.Rand) flagadmin.EventSearchParams {
				return flagadmin.EventSearchParams{Type: "IS:" + types[pick(r, len(types))]}
			}),
		search("varied/createdBy", fmt.Sprintf("createdBy=IS:<one of %d users>", len(users)), classVariedPage, 5,
			func(r *rand.Rand) flagadmin.EventSearchParams {
				return flagadmin.EventSearchParams{CreatedBy: "IS:" + strconv.FormatInt(users[pick(r, len(users))].ID, 10)}
			}),
		search("varied/any-of", "project=IS_ANY_OF:<2 to 8 random projects>", classVariedOther, 6,
			func(r *rand.Rand) flagadmin.EventSearchParams {
				n := 2 + r.IntN(7)
				ids := make([]string, 0, n)
				for _, i := range r.Perm(len(projects))[:min(n, len(projects))] {
					ids = append(ids, projects[i].ID)
				}
				return flagadmin.EventSearchParams{Project: "IS_ANY_OF:" + strings.Join(ids, ",")}
			}),
		search("varied/month", fmt.Sprintf("from/to: one of %d calendar months", len(months)), classVariedOther, 7,
			func(r *rand.Rand) flagadmin.EventSearchParams {
				m := months[r.IntN(len(months))]
				return flagadmin.EventSearchParams{From: "IS:" + m.Format(time.DateOnly), To: "IS:" + m.AddDate(0, 1, -1).Format(time.DateOnly)}
			}),
		search("varied/offset", fmt.Sprintf("no filter, offset uniform over the %s events", thousands(int64(total))), classVariedOffset, 8,
			func(r *rand.Rand) flagadmin.EventSearchParams {
				return flagadmin.EventSearchParams{Offset: strconv.Itoa(r.IntN(max(1, total-50)))}
			}),
	}
	kinds = append(kinds, kind{Name: "varied/projects", About: "GET /api/admin/projects as " + who, Class: classVariedProjects,
		Next: func(n uint64) request {
			r := variedRand(9, n)
			return request{Method: "GET", Path: "/api/admin/projects", Token: callers[r.IntN(len(callers))].token}
		}})
	kinds = append(kinds, variedMixedKind(slices.Clone(kinds), lifecycleKind(features, runID+"-varied")))
	// After the mixed kind, which it does not join, so that the mixed
	// kind sends what it sent before this kind existed.
	kinds = append(kinds, search("varied/query", "query=<a feature's name (7 in 10), a user's name (2 in 10) or "+worldgen.RareWord+">",
		classVariedOther, 11, func(r *rand.Rand) flagadmin.EventSearchParams {
			switch n := r.IntN(10); {
			case n < 7:
				return flagadmin.EventSearchParams{Query: features[pick(r, len(features))].Name}
			case n < 9:
				return flagadmin.EventSearchParams{Query: users[pick(r, len(users))].Username}
			default:
				return flagadmin.EventSearchParams{Query: worldgen.RareWord}
			}
		}))
	common := worldgen.CommonWords()
	kinds = append(kinds, search("varied/common", fmt.Sprintf("query=<one of %d words that 1%% to a third of the events hold, such as %s>", len(common), common[0]),
		classVariedOther, 12, func(r *rand.Rand) flagadmin.EventSearchParams {
			return flagadmin.EventSearchParams{Query: common[pick(r, len(common))]}
		}))
	return kinds
}

// variedMixedKind sends the requests of the varied read kinds in turn (a
// random one for each request), with one request in mixedWriteEvery a
// lifecycle completion: every write makes a caching server compute the
// next pages anew.
func variedMixedKind(reads []kind, writes kind) kind {
	return kind{
		Name:  "varied/mixed",
		About: fmt.Sprintf("a random varied read, with 1 request in %d a lifecycle completion", mixedWriteEvery),
		Class: classMixed,
		Next: func(n uint64) request {
			if n%mixedWriteEvery == mixedWriteEvery-1 {
				return writes.Next(n / mixedWriteEvery)
			}
			r := variedRand(10, n)
			return reads[r.IntN(len(reads))].Next(n)
		},
	}
}
