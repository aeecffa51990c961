// Package memstore is an in-memory flagadmin.Store: for tests, demos and
// programs that embed flagadmin without a database. It passes the same
// contract suite (internal/storetest) as the SQL store, is safe for
// concurrent use, and keeps nothing after the process ends.
package memstore

import (
	"container/heap"
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	logleaf "github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

var _ flagadmin.Store = (*Store)(nil)

// Store is an in-memory flagadmin.Store. The zero value is not usable; call New.
type Store struct {
	mu sync.RWMutex
	w  world
	// version counts the successful writes (see Version).
	version int64
	// sinks is the delivery state of webhook sinks (webhooks.go).
	sinks sinkStates
	// follow is the follow state (follow.go).
	follow followStates
	// checkpoint is the newest checkpoint saved, nil before the first;
	// holds are the legal holds by project (log.go).
	checkpoint *vlog.Checkpoint
	holds      map[string]time.Time
}

// world is everything a Store holds. Writes check everything they would
// change before changing anything, so a failed write changes nothing.
type world struct {
	users    map[int64]flagadmin.User
	groups   map[int64]*group
	projects map[string]*project
	features map[string]flagadmin.Feature
	tokens   map[string]flagadmin.APIToken // by SecretHash
	events   []storedEvent                 // in id order
	// byFeature and byProject hold the ids of the events of each feature
	// name and of each project, in id order, so that a search of a
	// feature's or a project's events reads those alone (candidates).
	byFeature, byProject idIndex
	nextEventID          int64
	// leaves are the leaves of the log's tree, one per event ever
	// written, in id order (log.go); tiles are the stored hashes of its
	// perfect subtrees, by level (1 and up).
	leaves []leaf
	tiles  map[int][][32]byte
	// ruleID is the id of the newest retention-changed event, 0 for none:
	// the rule in force, which pruning reads (log.go).
	ruleID int64
	// nextUserID and nextGroupID are past every id the world has held:
	// the smallest ids Write may assign.
	nextUserID, nextGroupID int64
}

type group struct {
	flagadmin.Group
	members map[int64]bool
}

type project struct {
	flagadmin.Project
	userRoles  map[int64]flagadmin.ProjectRole
	groupRoles map[int64]flagadmin.ProjectRole
	favorites  map[int64]bool
}

type storedEvent struct {
	flagadmin.Event
	payload, meta string
}

// New returns an empty store.
func New() *Store {
	return &Store{w: world{
		users:       map[int64]flagadmin.User{},
		groups:      map[int64]*group{},
		projects:    map[string]*project{},
		features:    map[string]flagadmin.Feature{},
		tokens:      map[string]flagadmin.APIToken{},
		byFeature:   idIndex{},
		byProject:   idIndex{},
		nextEventID: 1,
		nextUserID:  1,
		nextGroupID: 1,
		tiles:       map[int][][32]byte{},
	}, holds: map[string]time.Time{}}
}

// Ping always succeeds.
func (s *Store) Ping(ctx context.Context) error { return ctx.Err() }

// LookupToken implements flagadmin.Store.
func (s *Store) LookupToken(ctx context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.w.tokens[hash]
	if !ok {
		return flagadmin.APIToken{}, nil, flagadmin.ErrNotFound
	}
	t = cloneToken(t)
	if t.UserID == nil {
		return t, nil, nil
	}
	u, ok := s.w.users[*t.UserID]
	if !ok {
		return t, nil, nil
	}
	return t, &u, nil
}

// CountTokens implements flagadmin.Store.
func (s *Store) CountTokens(ctx context.Context, t flagadmin.TokenType) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, tok := range s.w.tokens {
		if tok.Type == t {
			n++
		}
	}
	return n, nil
}

// Project implements flagadmin.Store.
func (s *Store) Project(ctx context.Context, id string) (flagadmin.Project, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.w.projects[id]
	if !ok {
		return flagadmin.Project{}, flagadmin.ErrNotFound
	}
	return bareProject(p), nil
}

func bareProject(p *project) flagadmin.Project {
	out := p.Project
	out.Members, out.FavoritedBy = nil, nil
	out.ArchivedAt = clonePtr(out.ArchivedAt)
	return out
}

// clonePtr returns a copy of *p in memory of its own, or nil. Everything the
// store hands out or takes in is copied, so no caller can change stored rows
// through a pointer it holds.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneFeature(f flagadmin.Feature) flagadmin.Feature {
	f.ArchivedAt, f.LastSeenAt = clonePtr(f.ArchivedAt), clonePtr(f.LastSeenAt)
	f.Tags = slices.Clone(f.Tags)
	return f
}

func cloneToken(t flagadmin.APIToken) flagadmin.APIToken {
	t.UserID, t.ExpiresAt = clonePtr(t.UserID), clonePtr(t.ExpiresAt)
	return t
}

// Feature implements flagadmin.Store.
func (s *Store) Feature(ctx context.Context, name string) (flagadmin.Feature, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.w.features[name]
	if !ok {
		return flagadmin.Feature{}, flagadmin.ErrNotFound
	}
	return cloneFeature(f), nil
}

// User implements flagadmin.Store.
func (s *Store) User(ctx context.Context, id int64) (flagadmin.User, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u, ok := s.w.users[id]
	if !ok {
		return flagadmin.User{}, flagadmin.ErrNotFound
	}
	return u, nil
}

// Group implements flagadmin.Store.
func (s *Store) Group(ctx context.Context, id int64) (flagadmin.Group, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, ok := s.w.groups[id]
	if !ok {
		return flagadmin.Group{}, flagadmin.ErrNotFound
	}
	out := g.Group
	out.Users = slices.Sorted(maps.Keys(g.members))
	return out, nil
}

// ProjectAccess implements flagadmin.Store.
func (s *Store) ProjectAccess(ctx context.Context, userID int64) (flagadmin.ProjectAccess, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := flagadmin.ProjectAccess{Roles: map[string]flagadmin.ProjectRole{}}
	for id, p := range s.w.projects {
		for _, r := range s.w.rolesOf(p, userID) {
			out.AddRole(id, r)
		}
		if p.Mode == flagadmin.ModePrivate {
			out.Private = append(out.Private, id)
		}
	}
	slices.Sort(out.Private)
	return out, nil
}

// rolesOf lists the roles userID holds in p, directly and through groups.
func (w *world) rolesOf(p *project, userID int64) []flagadmin.ProjectRole {
	var roles []flagadmin.ProjectRole
	if r, ok := p.userRoles[userID]; ok {
		roles = append(roles, r)
	}
	for gid, r := range p.groupRoles {
		if g, ok := w.groups[gid]; ok && g.members[userID] {
			roles = append(roles, r)
		}
	}
	return roles
}

// memberships returns p's role holders as the domain writes them.
func (p *project) memberships() []flagadmin.ProjectMembership {
	out := make([]flagadmin.ProjectMembership, 0, len(p.userRoles)+len(p.groupRoles))
	for uid, r := range p.userRoles {
		out = append(out, flagadmin.ProjectMembership{UserID: &uid, Role: r})
	}
	for gid, r := range p.groupRoles {
		out = append(out, flagadmin.ProjectMembership{GroupID: &gid, Role: r})
	}
	return out
}

// groupUsers returns the users of group id (none for a missing group).
func (w *world) groupUsers(id int64) iter.Seq[int64] {
	g, ok := w.groups[id]
	if !ok {
		return func(func(int64) bool) {}
	}
	return maps.Keys(g.members)
}

// SearchEvents implements flagadmin.Store with flagadmin.EventQuery.Matches.
// It counts the matches and keeps only the page's worth of them (the
// first Offset+Limit in CompareEvents order, or Limit after a cursor) in
// a bounded heap: a date range over a million events then costs one pass,
// not a sort of every match.
func (s *Store) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	start := 0
	if q.After == nil {
		start = q.Offset
	}
	events, total := s.pageMatches(q, start)
	return flagadmin.EventPage{Total: total, Events: events}, nil
}

// pageMatches returns copies of the first q.PageEnd() matches of q in
// order, less the first skip, and the count of all matches, under the read
// lock.
func (s *Store) pageMatches(q flagadmin.EventQuery, skip int) (events []flagadmin.Event, total int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keep := q.PageEnd()
	top := &pageHeap{}
	s.w.candidates(q, func(c *storedEvent) {
		e := &c.Event
		if !q.Matches(*e, c.payload, c.meta) {
			return
		}
		total++
		if keep == 0 || !q.AfterCursor(*e) {
			return
		}
		if top.Len() < keep {
			heap.Push(top, e)
		} else if flagadmin.CompareEvents(*e, *(*top)[0]) < 0 {
			(*top)[0] = e
			heap.Fix(top, 0)
		}
	})
	matches := []*flagadmin.Event(*top)
	slices.SortFunc(matches, func(a, b *flagadmin.Event) int { return flagadmin.CompareEvents(*a, *b) })
	events = []flagadmin.Event{}
	for _, e := range matches[min(skip, len(matches)):] {
		events = append(events, cloneEvent(*e))
	}
	return events, total
}

// pageHeap holds the first matches of a search: a heap whose root is the
// one that sorts last (CompareEvents), to be replaced by a match that
// sorts before it. It holds pointers into the world (read under its
// lock), which move cheaply.
type pageHeap []*flagadmin.Event

func (h pageHeap) Len() int           { return len(h) }
func (h pageHeap) Less(i, j int) bool { return flagadmin.CompareEvents(*h[i], *h[j]) > 0 }
func (h pageHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pageHeap) Push(x any)        { *h = append(*h, x.(*flagadmin.Event)) }
func (h *pageHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// candidates calls fn with each event q may match, in id order: those of
// its ids, found by binary search (events are in id order), when it names
// ids; else those of its features (byFeature), when it names features;
// else those of its projects (byProject), when it names projects; else
// all. fn matches each against q (EventQuery.Matches).
func (w *world) candidates(q flagadmin.EventQuery, fn func(e *storedEvent)) {
	ids := q.IDs
	if len(ids) == 0 {
		switch {
		case len(q.Features) > 0:
			ids = w.byFeature.ids(q.Features)
		case len(q.Projects) > 0:
			ids = w.byProject.ids(q.Projects)
		default:
			for i := range w.events {
				fn(&w.events[i])
			}
			return
		}
	}
	at := make([]int, 0, len(ids))
	for _, id := range ids {
		if i, ok := w.eventAt(id); ok {
			at = append(at, i)
		}
	}
	slices.Sort(at)
	for _, i := range slices.Compact(at) {
		fn(&w.events[i])
	}
}

// eventAt returns the position of the event id in w.events, and whether
// it is there. Events are in id order, each id at least one more than the
// one before it, so id can only be within id-first positions of the
// first event and last-id of the last: the binary search looks there
// alone (its last position is the one read when none before it holds
// an id as large). Where ids are dense, as a copy's usually are, that is
// that one position; a search over all of a large world's events read
// about 20 events scattered in memory for each candidate of an index.
func (w *world) eventAt(id int64) (int, bool) {
	n := len(w.events)
	if n == 0 || id < w.events[0].ID || id > w.events[n-1].ID {
		return 0, false
	}
	lo := max(0, n-1-int(min(w.events[n-1].ID-id, int64(n))))
	hi := min(n, int(min(id-w.events[0].ID, int64(n))))
	i := lo + sort.Search(hi-lo, func(i int) bool { return w.events[lo+i].ID >= id })
	return i, i < n && w.events[i].ID == id
}

// indexEvent adds the event e, the last of w.events, to the indexes.
func (w *world) indexEvent(e *flagadmin.Event) {
	w.byFeature.add(e.FeatureName, e.ID)
	w.byProject.add(e.Project, e.ID)
}

// unindexEvents takes the events of pruned, which w.events holds, off the
// indexes.
func (w *world) unindexEvents(pruned []*flagadmin.Event) {
	w.byFeature.remove(pruned, func(e *flagadmin.Event) *string { return e.FeatureName })
	w.byProject.remove(pruned, func(e *flagadmin.Event) *string { return e.Project })
}

// idIndex holds the ids of the events of each value of a column, in id
// order (events are added in id order).
type idIndex map[string][]int64

// add adds event id to the ids of value, unless value is nil.
func (x idIndex) add(value *string, id int64) {
	if value != nil {
		x[*value] = append(x[*value], id)
	}
}

// ids returns the ids of the events of values, those of each value in id
// order.
func (x idIndex) ids(values []string) []int64 {
	var out []int64
	for _, v := range values {
		out = append(out, x[v]...)
	}
	return out
}

// remove takes the events of gone off x, each under its value (column).
func (x idIndex) remove(gone []*flagadmin.Event, column func(*flagadmin.Event) *string) {
	byValue := map[string]map[int64]bool{}
	for _, e := range gone {
		if v := column(e); v != nil {
			if byValue[*v] == nil {
				byValue[*v] = map[int64]bool{}
			}
			byValue[*v][e.ID] = true
		}
	}
	for v, ids := range byValue {
		kept := slices.DeleteFunc(x[v], func(id int64) bool { return ids[id] })
		if len(kept) == 0 {
			delete(x, v)
		} else {
			x[v] = kept
		}
	}
}

// eventFields are the declared fields of an event, which cloneEvent copies.
var eventFields = flagadmin.EventFields()

// cloneEvent returns a copy of e that shares nothing it could write
// through: each declared field's pointer, JSON and tags, and the salt.
func cloneEvent(e flagadmin.Event) flagadmin.Event {
	for _, f := range eventFields {
		switch f.Kind {
		case flagadmin.FieldIntOrNull:
			*f.IntOrNull(&e) = clonePtr(*f.IntOrNull(&e))
		case flagadmin.FieldTextOrNull, flagadmin.FieldTextOrAbsent:
			*f.TextOrNull(&e) = clonePtr(*f.TextOrNull(&e))
		case flagadmin.FieldJSONOrNull:
			*f.JSON(&e) = slices.Clone(*f.JSON(&e))
		case flagadmin.FieldTags:
			*f.Tags(&e) = slices.Clone(*f.Tags(&e))
		}
	}
	e.Salt = slices.Clone(e.Salt)
	return e
}

// ProjectStats implements flagadmin.Store.
func (s *Store) ProjectStats(ctx context.Context, q flagadmin.ProjectStatsQuery) ([]flagadmin.ProjectStats, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	byProject := map[string]*flagadmin.ProjectStats{}
	var out []*flagadmin.ProjectStats
	for id, p := range s.w.projects {
		if (p.ArchivedAt != nil) != q.Archived {
			continue
		}
		st := s.w.projectStats(p, q)
		byProject[id] = st
		out = append(out, st)
	}
	for _, f := range s.w.features {
		if st, ok := byProject[f.Project]; ok {
			countFeature(st, f, q)
		}
	}
	for _, e := range s.w.events {
		if e.Project == nil {
			continue
		}
		if st, ok := byProject[*e.Project]; ok {
			st.LastUpdatedAt = later(st.LastUpdatedAt, e.CreatedAt)
		}
	}
	res := make([]flagadmin.ProjectStats, len(out))
	for i, st := range out {
		res[i] = *st
	}
	return res, nil
}

// projectStats begins the figures of p with what the project itself
// holds: whether the user of q made it a favorite, its owners and how
// many members it counts.
func (w *world) projectStats(p *project, q flagadmin.ProjectStatsQuery) *flagadmin.ProjectStats {
	st := &flagadmin.ProjectStats{Project: bareProject(p), Owners: w.projectOwners(p)}
	if q.FavoritesOf != nil {
		st.Favorite = p.favorites[*q.FavoritesOf]
	}
	st.MemberCount = len(flagadmin.CountedMembers(p.memberships(), w.groupUsers))
	return st
}

// projectOwners returns the users, then the groups, holding p's Owner role.
func (w *world) projectOwners(p *project) []flagadmin.ProjectOwner {
	var owners []flagadmin.ProjectOwner
	for uid, r := range p.userRoles {
		if r == flagadmin.ProjectRoleOwner {
			owners = append(owners, flagadmin.UserOwner(w.users[uid]))
		}
	}
	for gid, r := range p.groupRoles {
		if r == flagadmin.ProjectRoleOwner {
			owners = append(owners, flagadmin.GroupOwner(w.groups[gid].Group))
		}
	}
	return owners
}

// countFeature adds f to the figures of its project: when it was last
// seen, whether it is in cleanup, and its standing, when q counts it.
func countFeature(st *flagadmin.ProjectStats, f flagadmin.Feature, q flagadmin.ProjectStatsQuery) {
	if f.LastSeenAt != nil {
		st.LastReportedFlagUsage = later(st.LastReportedFlagUsage, *f.LastSeenAt)
	}
	if flagadmin.InCleanup(f) {
		st.CleanupCount++
	}
	switch q.Standing(f) {
	case flagadmin.NotCounted:
		return
	case flagadmin.Stale:
		st.StaleCount++
	case flagadmin.PotentiallyStale:
		st.PotentiallyStaleCount++
	}
	st.FeatureCount++
}

// later returns the later of at (nil: none yet) and t.
func later(at *time.Time, t time.Time) *time.Time {
	if at != nil && !t.After(*at) {
		return at
	}
	return &t
}

// UpdateFeature implements flagadmin.Store. The write lock serializes
// concurrent updates.
func (s *Store) UpdateFeature(ctx context.Context, name string, fn func(*flagadmin.Feature) (*flagadmin.Event, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.w.features[name]
	if !ok {
		return flagadmin.ErrNotFound
	}
	f = cloneFeature(f)
	e, err := fn(&f)
	if err != nil || e == nil {
		return err
	}
	if _, err := s.w.appendEvent(*e); err != nil {
		return err
	}
	f = cloneFeature(f)
	f.Name, f.Project, f.CreatedAt, f.Tags = name, s.w.features[name].Project, s.w.features[name].CreatedAt, s.w.features[name].Tags
	s.w.features[name] = f
	s.version++
	return nil
}

// DeleteUser implements flagadmin.Store.
func (s *Store) DeleteUser(ctx context.Context, id int64, fn func(flagadmin.User) (flagadmin.Event, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.w.users[id]
	if !ok {
		return flagadmin.ErrNotFound
	}
	e, err := fn(u)
	if err != nil {
		return err
	}
	if _, err := s.w.appendEvent(e); err != nil {
		return err
	}
	delete(s.w.users, id)
	for hash, t := range s.w.tokens {
		if t.UserID != nil && *t.UserID == id {
			delete(s.w.tokens, hash)
		}
	}
	for _, g := range s.w.groups {
		delete(g.members, id)
	}
	for _, p := range s.w.projects {
		delete(p.userRoles, id)
		delete(p.favorites, id)
	}
	s.version++
	return nil
}

// preparedEvent is an event ready to be stored with its id, its search
// texts and its leaf (log.go).
type preparedEvent struct {
	stored storedEvent
	leaf   leaf
}

// prepareEvents gives copies of events the next ids, a salt to those
// without one (logleaf.NewSalt), and computes their leaves, changing
// nothing: an event whose leaf hash cannot be computed (data or preData
// that is not JSON, a given salt of the wrong size) is an error of kind
// ErrValidation. The salt is kept with the leaf, not with the stored
// event: the store reads it back only for the log.
func (w *world) prepareEvents(events []flagadmin.Event) ([]preparedEvent, error) {
	out := make([]preparedEvent, len(events))
	for i, e := range events {
		e = cloneEvent(e)
		e.ID = w.nextEventID + int64(i)
		if e.Salt == nil {
			e.Salt = logleaf.NewSalt()
		}
		content, err := logleaf.ContentCommitment(e)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		hash := logleaf.LeafOf(vlog.Leaf{EventID: e.ID, CreatedAt: e.CreatedAt, Project: e.Project, Type: e.Type, Content: content})
		l := leaf{eventID: e.ID, hash: hash, createdAt: flagadmin.Truncate(e.CreatedAt), project: clonePtr(e.Project), typ: e.Type, content: content, salt: e.Salt}
		e.Salt = nil
		payload, meta := flagadmin.SearchTexts(e)
		out[i] = preparedEvent{stored: storedEvent{Event: e, payload: payload, meta: meta}, leaf: l}
	}
	return out, nil
}

// appendEvents stores prepared events and their leaves, and returns
// copies of the events with their ids.
func (w *world) appendEvents(prepared []preparedEvent) []flagadmin.Event {
	out := make([]flagadmin.Event, len(prepared))
	for i, p := range prepared {
		w.events = append(w.events, p.stored)
		w.indexEvent(&p.stored.Event)
		w.leaves = append(w.leaves, p.leaf)
		w.nextEventID = p.stored.ID + 1
		if p.stored.Type == flagadmin.EventRetentionChanged {
			w.ruleID = p.stored.ID
		}
		out[i] = cloneEvent(p.stored.Event)
	}
	return out
}

// appendEvent stores a copy of e with the next id, with its leaf, and
// returns another copy with that id; nothing is changed on an error.
func (w *world) appendEvent(e flagadmin.Event) (flagadmin.Event, error) {
	prepared, err := w.prepareEvents([]flagadmin.Event{e})
	if err != nil {
		return flagadmin.Event{}, err
	}
	return w.appendEvents(prepared)[0], nil
}
