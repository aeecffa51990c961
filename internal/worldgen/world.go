package worldgen

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Salts of the independent random streams, so that changing how one part
// of the world is drawn does not shift every other part.
const (
	saltUsers uint64 = iota + 0x5eed0001
	saltGroups
	saltProjects
	saltFeatures
	saltTokens
	saltSchedule
	saltActivity
	saltPayload
)

const (
	dayMs  = int64(24 * time.Hour / time.Millisecond)
	hourMs = int64(time.Hour / time.Millisecond)
)

// World is a generated world. Build it with New; it is immutable and safe
// for concurrent use.
type World struct {
	cfg            Config
	startMs, endMs int64

	users    []flagadmin.User
	groups   []flagadmin.Group
	projects []flagadmin.Project
	features []flagadmin.Feature
	tokens   []flagadmin.APIToken

	adminNames, adminSecrets []string
	userSecrets              map[int64]string
	patUsers                 []int64

	proj     []projInfo
	projCum  []float64 // cumulative activity weight of the projects
	feat     []featInfo
	actors   []int32 // indexes of users with the Admin or Editor root role
	actorCum []float64
	admins   []int32 // indexes of users with the Admin root role

	schedule []skel // events at fixed times (creations, archivals), in time order
	activity int    // number of events drawn at random besides the schedule

	profileOnce sync.Once
	profile     *Profile
}

// projInfo is what event generation needs to know about a project.
type projInfo struct {
	createdMs, archivedMs int64 // archivedMs 0: never archived
	features              []int32
	featCreated           []int64   // createdMs of features, ascending
	featCum               []float64 // cumulative popularity of features
	actors                []int32   // users with a role in the project, directly or through a group
}

// featInfo is what event generation needs to know about a feature.
type featInfo struct {
	project               int32
	createdMs, archivedMs int64
}

// New builds the world c describes (after WithDefaults).
func New(c Config) (*World, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("worldgen: %w", err)
	}
	c = c.WithDefaults()
	w := &World{cfg: c, startMs: c.Start.UnixMilli(), endMs: c.End.UnixMilli(), userSecrets: map[int64]string{}}
	w.buildUsers()
	w.buildGroups()
	w.buildProjects()
	w.buildFeatures()
	w.buildTokens()
	w.buildSchedule()
	return w, nil
}

// MustNew is New for configurations known to be valid; it panics otherwise.
func MustNew(c Config) *World {
	w, err := New(c)
	if err != nil {
		panic(err)
	}
	return w
}

// Config returns the world's configuration with the defaults applied.
func (w *World) Config() Config { return w.cfg }

func newRand(seed, salt uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, salt)) }

// between returns a millisecond time drawn uniformly from [lo, hi); lo when the range is empty.
func between(r *rand.Rand, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + r.Int64N(hi-lo)
}

// zipfWeights returns the weights of n items whose popularity rank is a
// random permutation: the item of rank k weighs 1/k^s.
func zipfWeights(r *rand.Rand, n int, s float64) []float64 {
	weight := make([]float64, n)
	for i, rank := range r.Perm(n) {
		weight[i] = 1 / math.Pow(float64(rank+1), s)
	}
	return weight
}

// cumulative returns the running sums of weights.
func cumulative(weights []float64) []float64 {
	cum := make([]float64, len(weights))
	total := 0.0
	for i, x := range weights {
		total += x
		cum[i] = total
	}
	return cum
}

// pick draws an index from cumulative weights, looking only at the first n.
func pick(r *rand.Rand, cum []float64, n int) int {
	if n <= 0 {
		return -1
	}
	x := r.Float64() * cum[n-1]
	i, _ := slices.BinarySearch(cum[:n], x)
	return min(i, n-1)
}

func title(s string) string {
	words := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '.' || r == ' ' })
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

// unique returns base, or base with the smallest numeric suffix not yet in seen, and records it.
func unique(seen map[string]bool, base string) string {
	name := base
	for n := 2; seen[name]; n++ {
		name = fmt.Sprintf("%s-%d", base, n)
	}
	seen[name] = true
	return name
}

func (w *World) buildUsers() {
	r := newRand(w.cfg.Seed, saltUsers)
	seen := map[string]bool{}
	for i := range w.cfg.Users {
		u := flagadmin.User{ID: int64(i + 1)}
		u.IsService = i >= 3 && r.Float64() < 0.10
		if u.IsService {
			svc := serviceNames[r.IntN(len(serviceNames))]
			u.Username = unique(seen, "svc-"+svc)
			u.Name = title(svc) + " service account"
			u.RootRole = flagadmin.RoleEditor
			if r.Float64() < 0.2 {
				u.RootRole = flagadmin.RoleAdmin
			}
		} else {
			first, last := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
			u.Username = unique(seen, first+"."+last)
			u.Name = title(first) + " " + title(last)
			u.Email = u.Username + "@example.com"
			switch x := r.Float64(); {
			case x < 0.06:
				u.RootRole = flagadmin.RoleAdmin
			case x < 0.66:
				u.RootRole = flagadmin.RoleEditor
			default:
				u.RootRole = flagadmin.RoleViewer
			}
		}
		// The first three accounts hold the three root roles, so every world has each.
		if i < 3 {
			u.RootRole = []flagadmin.RootRole{flagadmin.RoleAdmin, flagadmin.RoleEditor, flagadmin.RoleViewer}[i]
		}
		w.users = append(w.users, u)
		if u.RootRole != flagadmin.RoleViewer {
			w.actors = append(w.actors, int32(i))
		}
		if u.RootRole == flagadmin.RoleAdmin {
			w.admins = append(w.admins, int32(i))
		}
	}
	w.actorCum = cumulative(zipfWeights(r, len(w.actors), 1.0))
}

func (w *World) buildGroups() {
	r := newRand(w.cfg.Seed, saltGroups)
	seen := map[string]bool{}
	for i := range w.cfg.Groups {
		g := flagadmin.Group{ID: int64(i + 1), Name: unique(seen, "Team "+title(areas[r.IntN(len(areas))]))}
		size := min(len(w.users), 3+r.IntN(18))
		for _, k := range r.Perm(len(w.users))[:size] {
			g.Users = append(g.Users, w.users[k].ID)
		}
		slices.Sort(g.Users)
		w.groups = append(w.groups, g)
	}
}

func (w *World) buildProjects() {
	r := newRand(w.cfg.Seed, saltProjects)
	span := w.endMs - w.startMs
	n := w.cfg.Projects
	// Modes and archival go by quota, so small worlds get them too: about
	// 5% private, 15% protected and 3% archived, never the default project.
	share := func(f float64) int { return int(math.Round(f * float64(n-1))) }
	mode := map[int]flagadmin.ProjectMode{}
	for k, i := range r.Perm(n - 1) {
		switch {
		case k < max(1, share(0.05)):
			mode[i+1] = flagadmin.ModePrivate
		case k < max(1, share(0.05))+share(0.15):
			mode[i+1] = flagadmin.ModeProtected
		}
	}
	archive := map[int]bool{}
	for k, i := range r.Perm(n - 1) {
		archive[i+1] = k < share(0.03)
	}
	seen := map[string]bool{"default": true}
	for i := range n {
		var p flagadmin.Project
		var info projInfo
		if i == 0 {
			p = flagadmin.Project{ID: "default", Name: "Default", Description: "Default project", Mode: flagadmin.ModeOpen}
			info.createdMs = w.startMs - span
		} else {
			area, comp := areas[r.IntN(len(areas))], components[r.IntN(len(components))]
			p.ID = unique(seen, area+"-"+comp)
			p.Name = title(p.ID)
			p.Description = fmt.Sprintf("Feature flags of the %s %s, owned by the %s team", area, comp, area)
			p.Mode = cmp.Or(mode[i], flagadmin.ModeOpen)
			if r.Float64() < 0.85 {
				info.createdMs = between(r, w.startMs-span, w.startMs)
			} else {
				info.createdMs = between(r, w.startMs, w.startMs+span*85/100)
			}
			if archive[i] {
				lo, hi := max(info.createdMs+span/10, w.startMs+span/2), w.endMs-span/50
				if lo < hi {
					info.archivedMs = between(r, lo, hi)
					at := time.UnixMilli(info.archivedMs).UTC()
					p.ArchivedAt = &at
				}
			}
			w.addMembers(r, &p)
		}
		p.CreatedAt = time.UnixMilli(info.createdMs).UTC()
		w.projects = append(w.projects, p)
		w.proj = append(w.proj, info)
	}
	w.projCum = cumulative(zipfWeights(r, len(w.projects), 1.0))
	for i := range w.proj {
		w.proj[i].actors = w.memberUsers(w.projects[i])
	}
}

// addMembers gives p owners, members, a group and favorites.
func (w *World) addMembers(r *rand.Rand, p *flagadmin.Project) {
	owners, members := 0, r.IntN(6)
	if r.Float64() < 0.7 || p.Mode == flagadmin.ModePrivate {
		owners = 1 + r.IntN(2)
	}
	picked := r.Perm(len(w.users))
	for k := 0; k < owners+members && k < len(picked); k++ {
		id := w.users[picked[k]].ID
		role := flagadmin.ProjectRoleMember
		if k < owners {
			role = flagadmin.ProjectRoleOwner
		}
		p.Members = append(p.Members, flagadmin.ProjectMembership{UserID: &id, Role: role})
	}
	if len(w.groups) > 0 && r.Float64() < 0.35 {
		id := w.groups[r.IntN(len(w.groups))].ID
		role := flagadmin.ProjectRoleMember
		if r.Float64() < 0.3 {
			role = flagadmin.ProjectRoleOwner
		}
		p.Members = append(p.Members, flagadmin.ProjectMembership{GroupID: &id, Role: role})
	}
	for _, k := range r.Perm(len(w.users))[:min(len(w.users), r.IntN(5))] {
		p.FavoritedBy = append(p.FavoritedBy, w.users[k].ID)
	}
	slices.Sort(p.FavoritedBy)
}

// memberUsers returns the indexes of the users with a role in p, directly or through a group.
func (w *World) memberUsers(p flagadmin.Project) []int32 {
	var out []int32
	for _, m := range p.Members {
		if m.UserID != nil {
			out = append(out, int32(*m.UserID-1))
			continue
		}
		for _, uid := range w.groups[*m.GroupID-1].Users {
			out = append(out, int32(uid-1))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (w *World) buildFeatures() {
	r := newRand(w.cfg.Seed, saltFeatures)
	nProj := len(w.projects)
	// Every project gets one feature; the rest go to projects by a skewed size.
	counts := make([]int, nProj)
	sizeCum := cumulative(zipfWeights(r, nProj, 0.8))
	for i := range counts {
		counts[i] = 1
	}
	for range w.cfg.Features - nProj {
		counts[pick(r, sizeCum, nProj)]++
	}
	seen := map[string]bool{}
	for pi := range w.projects {
		for k := range counts[pi] {
			w.features = append(w.features, w.newFeature(r, seen, pi, k == 0))
		}
	}
	weight := zipfWeights(r, len(w.features), 1.0)
	byProject := make([][]int32, nProj)
	for fi := range w.features {
		byProject[w.feat[fi].project] = append(byProject[w.feat[fi].project], int32(fi))
	}
	for pi, fs := range byProject {
		slices.SortStableFunc(fs, func(a, b int32) int {
			return cmp.Compare(w.feat[a].createdMs, w.feat[b].createdMs)
		})
		info := &w.proj[pi]
		info.features = fs
		total := 0.0
		for _, fi := range fs {
			total += weight[fi]
			info.featCreated = append(info.featCreated, w.feat[fi].createdMs)
			info.featCum = append(info.featCum, total)
		}
	}
}

// newFeature draws feature number k of project pi; the first one (first)
// is created with the project and lives as long as it does.
func (w *World) newFeature(r *rand.Rand, seen map[string]bool, pi int, first bool) flagadmin.Feature {
	pinfo := w.proj[pi]
	base := featureAdjectives[r.IntN(len(featureAdjectives))] + "-" + featureNouns[r.IntN(len(featureNouns))]
	if r.Float64() < 0.4 {
		base += "-" + featureQualifiers[r.IntN(len(featureQualifiers))]
	}
	f := flagadmin.Feature{Name: unique(seen, base), Project: w.projects[pi].ID}
	info := featInfo{project: int32(pi)}
	last := w.endMs - 7*dayMs
	if pinfo.archivedMs != 0 {
		last = pinfo.archivedMs - 3*dayMs
	}
	if first {
		info.createdMs = between(r, pinfo.createdMs, pinfo.createdMs+hourMs)
	} else {
		info.createdMs = between(r, pinfo.createdMs+dayMs, last)
	}
	switch x := r.Float64(); {
	case x < 0.70:
		f.Type = flagadmin.TypeRelease
	case x < 0.82:
		f.Type = flagadmin.TypeExperiment
	case x < 0.91:
		f.Type = flagadmin.TypeOperational
	case x < 0.97:
		f.Type = flagadmin.TypeKillSwitch
	default:
		f.Type = flagadmin.TypePermission
	}
	archiveRoll, staleRoll := r.Float64(), r.Float64()
	if !first && archiveRoll < 0.15 && info.createdMs+14*dayMs < w.endMs-dayMs {
		info.archivedMs = between(r, info.createdMs+14*dayMs, w.endMs-dayMs)
	}
	if pinfo.archivedMs != 0 {
		end := max(info.createdMs+1, pinfo.archivedMs-between(r, 0, 3*dayMs))
		if info.archivedMs == 0 || info.archivedMs > end {
			info.archivedMs = end
		}
	}
	f.Stale = info.archivedMs == 0 && staleRoll < 0.12
	if r.Float64() < 0.85 {
		var seenMs int64
		switch {
		case info.archivedMs != 0:
			seenMs = between(r, info.createdMs, info.archivedMs)
		case r.Float64() < 0.7:
			seenMs = w.endMs - between(r, 0, 3*dayMs)
		default:
			seenMs = between(r, info.createdMs, w.endMs)
		}
		at := time.UnixMilli(seenMs).UTC()
		f.LastSeenAt = &at
	}
	f.Tags = drawTags(r, w.projects[pi].ID)
	f.Lifecycle = drawLifecycle(r, info.archivedMs != 0, f.Stale)
	f.CreatedAt = time.UnixMilli(info.createdMs).UTC()
	if info.archivedMs != 0 {
		at := time.UnixMilli(info.archivedMs).UTC()
		f.ArchivedAt = &at
	}
	w.feat = append(w.feat, info)
	return f
}

func drawTags(r *rand.Rand, project string) []flagadmin.Tag {
	var tags []flagadmin.Tag
	for range r.IntN(4) {
		var t flagadmin.Tag
		switch t.Type = tagTypes[r.IntN(len(tagTypes))]; t.Type {
		case "team":
			area, _, _ := strings.Cut(project, "-")
			t.Value = "team-" + area
		case "jira":
			t.Value = fmt.Sprintf("FLAG-%d", 100+r.IntN(9900))
		case "release":
			t.Value = releaseNames[r.IntN(len(releaseNames))]
		default:
			t.Value = []string{"frontend", "backend", "beta", "cleanup", "high-risk", "customer-facing"}[r.IntN(6)]
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags
}

func drawLifecycle(r *rand.Rand, archived, stale bool) flagadmin.Lifecycle {
	completed := func() flagadmin.Lifecycle {
		if r.Float64() < 0.7 {
			return flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusKept, StatusValue: variantNames[r.IntN(len(variantNames))]}
		}
		return flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusDiscarded}
	}
	switch x := r.Float64(); {
	case archived:
		return flagadmin.Lifecycle{Stage: flagadmin.StageArchived}
	case stale && x < 0.6:
		return completed()
	case stale:
		return flagadmin.Lifecycle{Stage: flagadmin.StageLive}
	case x < 0.15:
		return flagadmin.Lifecycle{Stage: flagadmin.StageInitial}
	case x < 0.35:
		return flagadmin.Lifecycle{Stage: flagadmin.StagePreLive}
	case x < 0.90:
		return flagadmin.Lifecycle{Stage: flagadmin.StageLive}
	default:
		return completed()
	}
}

// secret returns 24 random bytes in hex.
func secret(r *rand.Rand) string {
	var b [24]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(b[:])
}

func (w *World) buildTokens() {
	r := newRand(w.cfg.Seed, saltTokens)
	created := time.UnixMilli(w.startMs - 30*dayMs).UTC()
	for _, name := range []string{"admin", "terraform", "ci-pipeline"} {
		s := "*:*." + secret(r)
		w.adminNames = append(w.adminNames, name)
		w.adminSecrets = append(w.adminSecrets, s)
		w.tokens = append(w.tokens, flagadmin.APIToken{SecretHash: flagadmin.HashSecret(s), Name: name, Type: flagadmin.TokenAdmin, CreatedAt: created})
	}
	for _, u := range w.users {
		if !u.IsService && r.Float64() >= 0.15 {
			continue
		}
		s := "user:" + secret(r)
		id := u.ID
		w.userSecrets[id] = s
		w.patUsers = append(w.patUsers, id)
		w.tokens = append(w.tokens, flagadmin.APIToken{SecretHash: flagadmin.HashSecret(s), Name: "pat-" + u.Username, Type: flagadmin.TokenUser, UserID: &id, CreatedAt: created})
	}
	for i := range 6 {
		typ, project, env := flagadmin.TokenClient, w.projects[r.IntN(len(w.projects))].ID, environments[r.IntN(len(environments))]
		if i >= 4 {
			typ, project = flagadmin.TokenFrontend, "*"
		}
		s := project + ":" + env + "." + secret(r)
		w.tokens = append(w.tokens, flagadmin.APIToken{SecretHash: flagadmin.HashSecret(s), Name: fmt.Sprintf("%s-%s-%d", typ, env, i), Type: typ, Project: project, Environment: env, CreatedAt: created})
	}
}

// AdminTokenCount is the number of admin tokens in every world.
const AdminTokenCount = 3

// AdminSecret returns the secret of admin token i (0 <= i < AdminTokenCount),
// as sent in the Authorization header.
func (w *World) AdminSecret(i int) string { return w.adminSecrets[i] }

// AdminTokenName returns the name of admin token i, what its events record as createdBy.
func (w *World) AdminTokenName(i int) string { return w.adminNames[i] }

// UserSecret returns the secret of the personal access token of the user
// with this id, and whether the user has one.
func (w *World) UserSecret(id int64) (string, bool) {
	s, ok := w.userSecrets[id]
	return s, ok
}

// TokenUsers returns the ids of the users that have a personal access token, ascending.
func (w *World) TokenUsers() []int64 { return slices.Clone(w.patUsers) }

// Users returns a copy of the world's accounts (ids 1..Users).
func (w *World) Users() []flagadmin.User { return slices.Clone(w.users) }

// Projects returns a deep copy of the world's projects, members and favorites included.
func (w *World) Projects() []flagadmin.Project {
	out := make([]flagadmin.Project, len(w.projects))
	for i, p := range w.projects {
		out[i] = cloneProject(p)
	}
	return out
}

// Features returns a deep copy of the world's features.
func (w *World) Features() []flagadmin.Feature {
	out := make([]flagadmin.Feature, len(w.features))
	for i, f := range w.features {
		out[i] = cloneFeature(f)
	}
	return out
}

func cloneProject(p flagadmin.Project) flagadmin.Project {
	p.ArchivedAt = clonePtr(p.ArchivedAt)
	p.FavoritedBy = slices.Clone(p.FavoritedBy)
	p.Members = slices.Clone(p.Members)
	for i, m := range p.Members {
		p.Members[i].UserID, p.Members[i].GroupID = clonePtr(m.UserID), clonePtr(m.GroupID)
	}
	return p
}

func cloneFeature(f flagadmin.Feature) flagadmin.Feature {
	f.ArchivedAt, f.LastSeenAt = clonePtr(f.ArchivedAt), clonePtr(f.LastSeenAt)
	f.Tags = slices.Clone(f.Tags)
	return f
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Batch returns everything but the events, ready for Store.Write: users,
// groups with their members, projects with members and favorites,
// features with tags, and tokens. Each call returns a fresh deep copy, so
// the ids a store writes back do not touch the world.
func (w *World) Batch() *flagadmin.Batch {
	b := &flagadmin.Batch{Users: slices.Clone(w.users), Features: w.Features(), Projects: w.Projects()}
	for _, g := range w.groups {
		g.Users = slices.Clone(g.Users)
		b.Groups = append(b.Groups, g)
	}
	for _, t := range w.tokens {
		t.UserID = clonePtr(t.UserID)
		b.Tokens = append(b.Tokens, t)
	}
	return b
}
