package worldgen

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// skel is the skeleton of an event: everything but its payload. Skeletons
// come from one random stream and payloads from another, seeded by the
// event's index, so counting skeletons (Profile) is cheap and agrees
// exactly with the full events.
type skel struct {
	at      int64 // createdAt, Unix milliseconds
	typ     string
	project int32 // index into World.projects; -1 for none
	feature int32 // index into World.features; -1 for none
	env     int8  // index into environments; -1 for none
	actor   int32 // >= 0: index into World.users; actorSystem; or actorToken(k)
	group   int64 // groupId shared by a burst; 0 for none
	planted bool  // the data names RareCustomer
}

const actorSystem int32 = -1

// actorToken encodes admin token k as an actor.
func actorToken(k int) int32 { return int32(-2 - k) }

// scope says what an event type relates to.
type scope uint8

const (
	scopeFeature  scope = iota // a project and a feature
	scopeProject               // a project only
	scopeInstance              // neither
)

// kind is an event type with its share of the random activity.
type kind struct {
	typ    string
	weight float64 // percent of activity events
	scope  scope
	env    bool // the event names an environment
}

// activityKinds is the event-type mix of the random activity, close to what
// a busy Unleash instance records. Feature events make up 98%.
var activityKinds = []kind{
	{flagadmin.EventFeatureStrategyUpdate, 33, scopeFeature, true},
	{flagadmin.EventFeatureEnvironmentEnabled, 18, scopeFeature, true},
	{flagadmin.EventFeatureEnvironmentDisabled, 11, scopeFeature, true},
	{flagadmin.EventFeatureStrategyAdd, 9.2, scopeFeature, true},
	{flagadmin.EventFeatureUpdated, 5.5, scopeFeature, false},
	{flagadmin.EventFeatureStrategyRemove, 2.5, scopeFeature, true},
	{flagadmin.EventFeatureMetadataUpdated, 2.5, scopeFeature, false},
	{flagadmin.EventFeatureVariantsUpdated, 1.5, scopeFeature, false},
	{flagadmin.EventFeatureEnvironmentVariantsUpdated, 1.5, scopeFeature, true},
	{flagadmin.EventStrategyOrderChanged, 1.2, scopeFeature, true},
	{flagadmin.EventFeatureTagged, 1.8, scopeFeature, false},
	{flagadmin.EventFeatureUntagged, 0.5, scopeFeature, false},
	{flagadmin.EventFeatureStaleOn, 0.8, scopeFeature, false},
	{flagadmin.EventFeatureStaleOff, 0.3, scopeFeature, false},
	{flagadmin.EventFeaturePotentiallyStaleOn, 1.5, scopeFeature, false},
	{flagadmin.EventFeatureTypeUpdated, 0.4, scopeFeature, false},
	{flagadmin.EventFeatureDependencyAdded, 0.5, scopeFeature, false},
	{flagadmin.EventFeatureDependencyRemoved, 0.2, scopeFeature, false},
	{flagadmin.EventFeatureFavorited, 0.8, scopeFeature, false},
	{flagadmin.EventFeatureUnfavorited, 0.2, scopeFeature, false},
	{flagadmin.EventFeatureCompleted, 0.5, scopeFeature, false},
	{flagadmin.EventFeatureUncompleted, 0.1, scopeFeature, false},
	{flagadmin.EventChangeRequestCreated, 1.6, scopeFeature, true},
	{flagadmin.EventChangeRequestApproved, 1.3, scopeFeature, true},
	{flagadmin.EventChangeRequestApplied, 1.3, scopeFeature, true},
	{flagadmin.EventChangeRequestRejected, 0.2, scopeFeature, true},
	{flagadmin.EventFeatureImport, 0.1, scopeFeature, false},

	{flagadmin.EventProjectUserAdded, 0.25, scopeProject, false},
	{flagadmin.EventProjectGroupAdded, 0.1, scopeProject, false},
	{flagadmin.EventProjectUserRemoved, 0.08, scopeProject, false},
	{flagadmin.EventProjectUpdated, 0.15, scopeProject, false},
	{flagadmin.EventProjectFavorited, 0.12, scopeProject, false},
	{flagadmin.EventProjectUnfavorited, 0.03, scopeProject, false},
	{flagadmin.EventProjectEnvironmentAdded, 0.05, scopeProject, true},
	{flagadmin.EventProjectAccessUpdated, 0.07, scopeProject, false},
	{flagadmin.EventProjectUserRoleChanged, 0.05, scopeProject, false},
	{flagadmin.EventProjectGroupRoleChanged, 0.02, scopeProject, false},
	{flagadmin.EventSegmentCreated, 0.03, scopeProject, false},
	{flagadmin.EventSegmentUpdated, 0.05, scopeProject, false},

	{flagadmin.EventClientRegister, 0.12, scopeInstance, false},
	{flagadmin.EventApplicationCreated, 0.06, scopeInstance, false},
	{flagadmin.EventClientMetrics, 0.01, scopeInstance, false},
	{flagadmin.EventUserCreated, 0.08, scopeInstance, false},
	{flagadmin.EventUserUpdated, 0.1, scopeInstance, false},
	{flagadmin.EventUserDeleted, 0.02, scopeInstance, false},
	{flagadmin.EventServiceAccountCreated, 0.01, scopeInstance, false},
	{flagadmin.EventServiceAccountUpdated, 0.02, scopeInstance, false},
	{flagadmin.EventAPITokenCreated, 0.06, scopeInstance, false},
	{flagadmin.EventAPITokenDeleted, 0.03, scopeInstance, false},
	{flagadmin.EventPATCreated, 0.05, scopeInstance, false},
	{flagadmin.EventPATDeleted, 0.02, scopeInstance, false},
	{flagadmin.EventContextFieldCreated, 0.03, scopeInstance, false},
	{flagadmin.EventContextFieldUpdated, 0.05, scopeInstance, false},
	{flagadmin.EventTagCreated, 0.06, scopeInstance, false},
	{flagadmin.EventTagDeleted, 0.01, scopeInstance, false},
	{flagadmin.EventTagTypeCreated, 0.01, scopeInstance, false},
	{flagadmin.EventStrategyCreated, 0.01, scopeInstance, false},
	{flagadmin.EventStrategyUpdated, 0.02, scopeInstance, false},
	{flagadmin.EventAddonConfigCreated, 0.01, scopeInstance, false},
	{flagadmin.EventAddonConfigUpdated, 0.04, scopeInstance, false},
	{flagadmin.EventEnvironmentCreated, 0.01, scopeInstance, true},
	{flagadmin.EventEnvironmentUpdated, 0.01, scopeInstance, true},
	{flagadmin.EventSettingUpdated, 0.03, scopeInstance, false},
	{flagadmin.EventGroupUserAdded, 0.05, scopeInstance, false},
	{flagadmin.EventGroupUserRemoved, 0.02, scopeInstance, false},
	{flagadmin.EventGroupUpdated, 0.02, scopeInstance, false},
	{flagadmin.EventRoleUpdated, 0.01, scopeInstance, false},
	{flagadmin.EventBannerCreated, 0.01, scopeInstance, false},
	{flagadmin.EventChangeRequestConfigurationUpdated, 0.02, scopeInstance, false},
}

var activityCum = func() []float64 {
	w := make([]float64, len(activityKinds))
	for i, k := range activityKinds {
		w[i] = k.weight
	}
	return cumulative(w)
}()

// burstTypes are the events that follow the first one of a burst: one
// user's several changes to one feature in the same millisecond.
var burstTypes = []string{
	flagadmin.EventFeatureStrategyUpdate, flagadmin.EventFeatureEnvironmentEnabled,
	flagadmin.EventFeatureEnvironmentDisabled, flagadmin.EventFeatureStrategyAdd,
}

const (
	// burstRate is the share of feature actions that are bursts of 2 to 4 events.
	burstRate = 0.02
	// plantRate is the share of strategy-add and strategy-update events whose data names RareCustomer.
	plantRate = 0.012
	// growth: activity at the end of the window is 1+growth times that at its start.
	growth = 1.0
	// scheduleShare bounds the events at fixed times (creations, archivals) as a share of all events.
	scheduleShare = 0.10
)

// envCum weighs development, staging and production.
var envCum = cumulative([]float64{0.45, 0.20, 0.35})

func (w *World) buildSchedule() {
	r := newRand(w.cfg.Seed, saltSchedule)
	in := func(ms int64) bool { return ms >= w.startMs && ms < w.endMs }
	var s []skel
	add := func(at int64, typ string, project, feature int32, sc scope) {
		e := skel{at: at, typ: typ, project: project, feature: feature, env: -1}
		e.actor = w.pickActor(r, kind{typ: typ, scope: sc}, project)
		s = append(s, e)
	}
	for pi, p := range w.proj {
		if in(p.createdMs) {
			add(p.createdMs, flagadmin.EventProjectCreated, int32(pi), -1, scopeInstance)
		}
		if p.archivedMs != 0 && in(p.archivedMs) {
			add(p.archivedMs, flagadmin.EventProjectArchived, int32(pi), -1, scopeInstance)
		}
	}
	for fi, f := range w.feat {
		if in(f.createdMs) {
			add(f.createdMs, flagadmin.EventFeatureCreated, f.project, int32(fi), scopeFeature)
		}
		if f.archivedMs != 0 && in(f.archivedMs) {
			add(f.archivedMs, flagadmin.EventFeatureArchived, f.project, int32(fi), scopeFeature)
		}
	}
	// Small histories keep only a sample of the fixed events, so random
	// activity still makes up most of the log.
	if limit := scheduleShare * float64(w.cfg.Events); float64(len(s)) > limit {
		keep := limit / float64(len(s))
		s = slices.DeleteFunc(s, func(skel) bool { return r.Float64() >= keep })
	}
	// Stable: a project-created stays before its first feature-created of the same millisecond.
	slices.SortStableFunc(s, func(a, b skel) int { return cmp.Compare(a.at, b.at) })
	if len(s) > w.cfg.Events/2 {
		s = s[:w.cfg.Events/2]
	}
	w.schedule = s
	w.activity = w.cfg.Events - len(s)
}

// activityTime returns the time of activity event k, u in [0, 1): activity
// grows linearly over the window, and times never decrease with k.
func (w *World) activityTime(k int, u float64) int64 {
	f := (float64(k) + u) / float64(w.activity)
	// Inverse of the CDF of the density (1+growth*x)/(1+growth/2) on [0, 1].
	x := (math.Sqrt(1+2*growth*f*(1+growth/2)) - 1) / growth
	ms := w.startMs + int64(x*float64(w.endMs-w.startMs))
	return min(ms, w.endMs-1)
}

// pickProject draws a project that exists and is not archived at time at.
func (w *World) pickProject(r *rand.Rand, at int64) int32 {
	for range 64 {
		p := pick(r, w.projCum, len(w.projCum))
		if info := w.proj[p]; info.createdMs <= at && (info.archivedMs == 0 || at < info.archivedMs) {
			return int32(p)
		}
	}
	return 0
}

// pickFeature draws a project and one of its features that exists and is
// not archived at time at, busy ones more often. Project 0 and its first
// feature, created before the window and never archived, are the fallback.
func (w *World) pickFeature(r *rand.Rand, at int64) (int32, int32) {
	for range 64 {
		p := w.pickProject(r, at)
		info := &w.proj[p]
		n, _ := slices.BinarySearch(info.featCreated, at+1)
		if n == 0 {
			continue
		}
		f := info.features[pick(r, info.featCum, n)]
		if a := w.feat[f].archivedMs; a == 0 || at < a {
			return p, f
		}
	}
	return 0, w.proj[0].features[0]
}

// pickActor draws who causes an event of kind k in project p (-1 for none).
func (w *World) pickActor(r *rand.Rand, k kind, p int32) int32 {
	token := func() int32 {
		switch x := r.Float64(); {
		case x < 0.7:
			return actorToken(0)
		case x < 0.9:
			return actorToken(1)
		default:
			return actorToken(2)
		}
	}
	switch k.typ {
	case flagadmin.EventFeaturePotentiallyStaleOn, flagadmin.EventClientRegister, flagadmin.EventClientMetrics, flagadmin.EventApplicationCreated:
		return actorSystem
	}
	x := r.Float64()
	if k.scope == scopeInstance {
		if x < 0.25 {
			return token()
		}
		return w.admins[r.IntN(len(w.admins))]
	}
	if x < 0.04 {
		return token()
	}
	if members := w.proj[p].actors; len(members) > 0 && x < 0.04+0.96*0.65 {
		return members[r.IntN(len(members))]
	}
	return w.actors[pick(r, w.actorCum, len(w.actorCum))]
}

// gen walks the skeletons of a world's events in order.
type gen struct {
	w       *World
	r       *rand.Rand
	k       int // activity events drawn so far
	sched   int // next event of the schedule
	pending []skel
	next    int // next event of pending
}

func (w *World) newGen() *gen { return &gen{w: w, r: newRand(w.cfg.Seed, saltActivity)} }

// step stores the next skeleton in s; false at the end of the history.
func (g *gen) step(s *skel) bool {
	if g.next >= len(g.pending) && g.k < g.w.activity {
		g.drawAction()
	}
	hasAct, hasSched := g.next < len(g.pending), g.sched < len(g.w.schedule)
	switch {
	case hasSched && (!hasAct || g.w.schedule[g.sched].at <= g.pending[g.next].at):
		*s = g.w.schedule[g.sched]
		g.sched++
	case hasAct:
		*s = g.pending[g.next]
		g.next++
	default:
		return false
	}
	return true
}

// drawAction draws the next activity: one event, or a burst of events of
// one user on one feature in the same millisecond sharing a groupId.
func (g *gen) drawAction() {
	w, r := g.w, g.r
	g.pending, g.next = g.pending[:0], 0
	s := skel{at: w.activityTime(g.k, r.Float64()), project: -1, feature: -1, env: -1}
	k := activityKinds[pick(r, activityCum, len(activityCum))]
	s.typ = k.typ
	size := 1
	if k.scope == scopeFeature && r.Float64() < burstRate {
		size = min(2+r.IntN(3), w.activity-g.k)
	}
	switch k.scope {
	case scopeFeature:
		s.project, s.feature = w.pickFeature(r, s.at)
	case scopeProject:
		s.project = w.pickProject(r, s.at)
	}
	if k.env {
		s.env = int8(pick(r, envCum, len(envCum)))
	}
	s.actor = w.pickActor(r, k, s.project)
	if (s.typ == flagadmin.EventFeatureStrategyAdd || s.typ == flagadmin.EventFeatureStrategyUpdate) && r.Float64() < plantRate {
		s.planted = true
	}
	if size > 1 {
		s.group = int64(g.k) + 1
	}
	g.pending = append(g.pending, s)
	for j := 1; j < size; j++ {
		m := s
		m.typ, m.planted = burstTypes[r.IntN(len(burstTypes))], false
		m.env = int8((max(int(s.env), 0) + j) % len(environments))
		g.pending = append(g.pending, m)
	}
	g.k += size
}

// Events returns the world's event history in batches of up to batch
// events (1000 when batch <= 0), in createdAt order, ids left 0 for the
// store to assign. Every iteration generates the same events; each batch is
// a new slice the caller may keep. Events are valid as the Service writes
// them: known types, compact JSON objects, UTC milliseconds.
func (w *World) Events(batch int) iter.Seq[[]flagadmin.Event] {
	if batch <= 0 {
		batch = 1000
	}
	return func(yield func([]flagadmin.Event) bool) {
		g, p := w.newGen(), newPayloads(w)
		out := make([]flagadmin.Event, 0, batch)
		var s skel
		for i := 0; g.step(&s); i++ {
			out = append(out, p.event(i, &s))
			if len(out) == batch {
				if !yield(out) {
					return
				}
				out = make([]flagadmin.Event, 0, batch)
			}
		}
		if len(out) > 0 {
			yield(out)
		}
	}
}

// FirstEvents returns the first n events of the history (fewer when it is shorter).
func (w *World) FirstEvents(n int) []flagadmin.Event {
	var out []flagadmin.Event
	for b := range w.Events(min(n, 1000)) {
		out = append(out, b...)
		if len(out) >= n {
			return out[:n]
		}
	}
	return out
}

// event turns skeleton number i into an event.
func (p *payloads) event(i int, s *skel) flagadmin.Event {
	w := p.w
	e := flagadmin.Event{CreatedAt: time.UnixMilli(s.at).UTC(), Type: s.typ}
	switch {
	case s.actor >= 0:
		u := w.users[s.actor]
		e.CreatedBy, e.CreatedByUserID = u.DisplayName(), ptr(u.ID)
	case s.actor == actorSystem:
		e.CreatedBy, e.CreatedByUserID = flagadmin.System.Name, ptr(flagadmin.SystemUserID)
	default:
		e.CreatedBy, e.CreatedByUserID = w.adminNames[-2-s.actor], ptr(flagadmin.AdminTokenUserID)
	}
	if s.project >= 0 {
		e.Project = ptr(w.projects[s.project].ID)
	}
	if s.feature >= 0 {
		e.FeatureName = ptr(w.features[s.feature].Name)
	}
	if s.env >= 0 {
		e.Environment = ptr(environments[s.env])
	}
	if s.group != 0 {
		e.GroupType, e.GroupID = ptr("transaction"), ptr(groupID(s.group))
	}
	p.fill(i, s, &e)
	return e
}

func ptr[T any](v T) *T { return &v }

// groupID is the groupId of burst g: 26 characters, like the ULIDs Unleash
// gives the events of one transaction.
func groupID(g int64) string { return fmt.Sprintf("01WG%022d", g) }
