package worldgen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// small is a world small enough for every test to walk all of it.
var small = worldgen.Config{Events: 20_000, Projects: 30, Features: 600, Users: 80, Groups: 8, Seed: 7}

func mustNew(t testing.TB, c worldgen.Config) *worldgen.World {
	t.Helper()
	w, err := worldgen.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func allEvents(w *worldgen.World) []flagadmin.Event {
	var out []flagadmin.Event
	for b := range w.Events(777) {
		out = append(out, b...)
	}
	return out
}

func eventJSON(t *testing.T, e flagadmin.Event) string {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSameConfigSameWorld(t *testing.T) {
	a, b := mustNew(t, small), mustNew(t, small)
	if !reflect.DeepEqual(a.Batch(), b.Batch()) {
		t.Fatal("two worlds of one config have different batches")
	}
	ea, eb := a.FirstEvents(5000), b.FirstEvents(5000)
	if len(ea) != 5000 || len(eb) != 5000 {
		t.Fatalf("got %d and %d events, want 5000", len(ea), len(eb))
	}
	for i := range ea {
		if ja, jb := eventJSON(t, ea[i]), eventJSON(t, eb[i]); ja != jb {
			t.Fatalf("event %d differs:\n%s\n%s", i, ja, jb)
		}
	}
	// Walking one world twice, in batches of different sizes, gives the same events.
	again := allEvents(a)
	for i, e := range a.FirstEvents(5000) {
		if eventJSON(t, e) != eventJSON(t, again[i]) {
			t.Fatalf("event %d differs between two walks", i)
		}
	}
	for i := range worldgen.AdminTokenCount {
		if a.AdminSecret(i) != b.AdminSecret(i) {
			t.Fatalf("admin secret %d differs", i)
		}
	}
	other := small
	other.Seed++
	if reflect.DeepEqual(a.Batch(), mustNew(t, other).Batch()) {
		t.Fatal("another seed gives the same world")
	}
	if small.Fingerprint() == other.Fingerprint() {
		t.Fatal("another seed gives the same fingerprint")
	}
}

func TestDefaultsAndValidation(t *testing.T) {
	d := worldgen.Config{}.WithDefaults()
	if d.Events != 1_000_000 || d.Projects != 200 || d.Features != 20_000 || d.Users != 500 || d.Groups != 40 {
		t.Fatalf("defaults: got %+v", d)
	}
	if !d.End.Equal(worldgen.DefaultEnd) || !d.Start.Equal(worldgen.DefaultEnd.AddDate(-2, 0, 0)) {
		t.Fatalf("default window: got %s to %s", d.Start, d.End)
	}
	if d.Fingerprint() != (worldgen.Config{}).Fingerprint() {
		t.Fatal("explicit defaults change the fingerprint")
	}
	for _, c := range []worldgen.Config{
		{Users: 2},
		{Events: -1},
		{Groups: -1},
		{Start: worldgen.DefaultEnd.AddDate(0, 0, -3)},
	} {
		if _, err := worldgen.New(c); err == nil {
			t.Errorf("New(%+v): got no error", c)
		}
	}
}

// TestReferentialIntegrity checks that everything an event or a batch row
// names exists, and exists at the event's time.
func TestReferentialIntegrity(t *testing.T) {
	w := mustNew(t, small)
	b := w.Batch()
	users := map[int64]flagadmin.User{}
	for _, u := range b.Users {
		users[u.ID] = u
	}
	groups := map[int64]bool{}
	for _, g := range b.Groups {
		groups[g.ID] = true
		for _, uid := range g.Users {
			if _, ok := users[uid]; !ok {
				t.Errorf("group %d: user %d does not exist", g.ID, uid)
			}
		}
	}
	projects := map[string]flagadmin.Project{}
	for _, p := range b.Projects {
		projects[p.ID] = p
		for _, m := range p.Members {
			if (m.UserID == nil) == (m.GroupID == nil) {
				t.Errorf("project %s: membership names both or neither of user and group", p.ID)
			} else if m.UserID != nil && users[*m.UserID].ID == 0 {
				t.Errorf("project %s: member user %d does not exist", p.ID, *m.UserID)
			} else if m.GroupID != nil && !groups[*m.GroupID] {
				t.Errorf("project %s: member group %d does not exist", p.ID, *m.GroupID)
			}
		}
		for _, uid := range p.FavoritedBy {
			if _, ok := users[uid]; !ok {
				t.Errorf("project %s: favorite of missing user %d", p.ID, uid)
			}
		}
	}
	features := map[string]flagadmin.Feature{}
	for _, f := range b.Features {
		features[f.Name] = f
		if _, ok := projects[f.Project]; !ok {
			t.Errorf("feature %s: project %s does not exist", f.Name, f.Project)
		}
		if f.CreatedAt.Before(projects[f.Project].CreatedAt) {
			t.Errorf("feature %s is older than its project", f.Name)
		}
	}
	if len(features) != len(b.Features) {
		t.Errorf("feature names are not unique")
	}
	for _, tok := range b.Tokens {
		if tok.UserID != nil && users[*tok.UserID].ID == 0 {
			t.Errorf("token %s: user %d does not exist", tok.Name, *tok.UserID)
		}
	}
	cfg := w.Config()
	events := allEvents(w)
	if len(events) != cfg.Events {
		t.Fatalf("got %d events, want %d", len(events), cfg.Events)
	}
	tokenNames := map[string]bool{}
	for i := range worldgen.AdminTokenCount {
		tokenNames[w.AdminTokenName(i)] = true
	}
	var prev time.Time
	for i, e := range events {
		at := e.CreatedAt
		if at.Before(prev) || at.Before(cfg.Start) || !at.Before(cfg.End) || at != flagadmin.Truncate(at) {
			t.Fatalf("event %d: createdAt %s out of order or window", i, at)
		}
		prev = at
		if !flagadmin.IsKnownEventType(e.Type) {
			t.Fatalf("event %d: unknown type %q", i, e.Type)
		}
		if e.Project != nil {
			p, ok := projects[*e.Project]
			if !ok {
				t.Fatalf("event %d: project %s does not exist", i, *e.Project)
			}
			if at.Before(p.CreatedAt) || (p.ArchivedAt != nil && at.After(*p.ArchivedAt)) {
				t.Fatalf("event %d at %s: project %s does not exist then", i, at, p.ID)
			}
		}
		if e.FeatureName != nil {
			f, ok := features[*e.FeatureName]
			if !ok || e.Project == nil || f.Project != *e.Project {
				t.Fatalf("event %d: feature %s does not exist in project %v", i, *e.FeatureName, e.Project)
			}
			if at.Before(f.CreatedAt) || (f.ArchivedAt != nil && at.After(*f.ArchivedAt)) {
				t.Fatalf("event %d (%s) at %s: feature %s does not exist then", i, e.Type, at, f.Name)
			}
		}
		switch id := *e.CreatedByUserID; {
		case id == flagadmin.AdminTokenUserID:
			if !tokenNames[e.CreatedBy] {
				t.Fatalf("event %d: admin token %q does not exist", i, e.CreatedBy)
			}
		case id == flagadmin.SystemUserID:
			if e.CreatedBy != "system" {
				t.Fatalf("event %d: system event by %q", i, e.CreatedBy)
			}
		default:
			u, ok := users[id]
			if !ok || u.DisplayName() != e.CreatedBy {
				t.Fatalf("event %d: created by %q (%d), not a user", i, e.CreatedBy, id)
			}
			if u.RootRole == flagadmin.RoleViewer && e.Project == nil {
				t.Fatalf("event %d: a viewer changed instance settings", i)
			}
		}
		if e.Environment != nil && !slices.Contains([]string{"development", "staging", "production"}, *e.Environment) {
			t.Fatalf("event %d: environment %q", i, *e.Environment)
		}
		if strings.HasPrefix(e.Type, "feature-environment-") && e.Environment == nil {
			t.Fatalf("event %d: %s without environment", i, e.Type)
		}
		for _, raw := range []json.RawMessage{e.Data, e.PreData} {
			if raw == nil {
				continue
			}
			var buf bytes.Buffer
			if raw[0] != '{' || json.Compact(&buf, raw) != nil || buf.String() != string(raw) {
				t.Fatalf("event %d: payload is not a compact JSON object: %s", i, raw)
			}
		}
		if e.Data == nil && e.PreData == nil {
			t.Fatalf("event %d (%s) has no payload", i, e.Type)
		}
		for _, tag := range e.Tags {
			if tag.Validate() != nil {
				t.Fatalf("event %d: invalid tag %+v", i, tag)
			}
		}
	}
}

// TestProfileCountsTheEvents checks Profile against the events themselves,
// and that the rare word matches exactly the planted payloads.
func TestProfileCountsTheEvents(t *testing.T) {
	w := mustNew(t, small)
	p := w.Profile()
	byType, byProject, byFeature, byUser, byMonth := map[string]int{}, map[string]int{}, map[string]int{}, map[int64]int{}, map[string]int{}
	rare, same := 0, 0
	events := allEvents(w)
	for i, e := range events {
		byType[e.Type]++
		if e.Project != nil {
			byProject[*e.Project]++
		}
		if e.FeatureName != nil {
			byFeature[*e.FeatureName]++
		}
		byUser[*e.CreatedByUserID]++
		byMonth[e.CreatedAt.Format("2006-01")]++
		payload, meta := flagadmin.SearchTexts(e)
		if strings.Contains(payload, worldgen.RareWord) {
			rare++
		}
		if strings.Contains(meta, worldgen.RareWord) {
			t.Fatalf("event %d: the rare word is in the type or creator", i)
		}
		if i > 0 && e.CreatedAt.Equal(events[i-1].CreatedAt) {
			same++
		}
	}
	for name, pair := range map[string][2]any{
		"type": {byType, p.ByType}, "project": {byProject, p.ByProject}, "feature": {byFeature, p.ByFeature},
		"createdBy": {byUser, p.ByCreatedBy}, "month": {byMonth, p.ByMonth},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("counts by %s differ between the events and the profile", name)
		}
	}
	if rare != p.Rare || rare == 0 {
		t.Errorf("rare word: %d events contain it, profile says %d", rare, p.Rare)
	}
	if same != p.SameMillisecond || same == 0 {
		t.Errorf("same millisecond: got %d, profile says %d (want some)", same, p.SameMillisecond)
	}
}

// TestCommonWordsAreCommon checks that each of CommonWords is in the
// payload of a good share of a world's events, as its description says.
func TestCommonWordsAreCommon(t *testing.T) {
	w := mustNew(t, small)
	words := worldgen.CommonWords()
	held := make([]int, len(words))
	events := allEvents(w)
	for _, e := range events {
		payload, _ := flagadmin.SearchTexts(e)
		for i, word := range words {
			if strings.Contains(payload, word) {
				held[i]++
			}
		}
	}
	for i, word := range words {
		share := float64(held[i]) / float64(len(events))
		if share < 0.005 || share > 0.5 {
			t.Errorf("%q is in %.2f%% of the events' payloads, want 0.5%% to 50%%", word, 100*share)
		}
	}
}

// TestDefaultWorld checks the shape of the default world: entity mixes,
// the event-type mix, skew, and the selectivity of the probes.
func TestDefaultWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("walks a million event skeletons; skipped with -short")
	}
	w := mustNew(t, worldgen.Config{})
	b := w.Batch()
	share := func(n, of int) float64 { return float64(n) / float64(of) }
	within := func(what string, got, lo, hi float64) {
		t.Helper()
		if got < lo || got > hi {
			t.Errorf("%s: got %.4f, want %.4f to %.4f", what, got, lo, hi)
		}
	}
	roles, services := map[flagadmin.RootRole]int{}, 0
	for _, u := range b.Users {
		roles[u.RootRole]++
		if u.IsService {
			services++
		}
	}
	if len(b.Users) != 500 || roles[flagadmin.RoleAdmin] == 0 || roles[flagadmin.RoleEditor] == 0 || roles[flagadmin.RoleViewer] == 0 {
		t.Errorf("users: got %d with roles %v", len(b.Users), roles)
	}
	within("service accounts", share(services, len(b.Users)), 0.05, 0.15)
	modes, archivedProjects, owned, favorites := map[flagadmin.ProjectMode]int{}, 0, 0, 0
	for _, p := range b.Projects {
		modes[p.Mode]++
		if p.ArchivedAt != nil {
			archivedProjects++
		}
		if slices.ContainsFunc(p.Members, func(m flagadmin.ProjectMembership) bool { return m.Role == flagadmin.ProjectRoleOwner }) {
			owned++
		}
		favorites += len(p.FavoritedBy)
	}
	if len(b.Projects) != 200 || len(b.Groups) != 40 {
		t.Errorf("got %d projects and %d groups", len(b.Projects), len(b.Groups))
	}
	within("open projects", share(modes[flagadmin.ModeOpen], 200), 0.65, 0.9)
	within("private projects", share(modes[flagadmin.ModePrivate], 200), 0.02, 0.10)
	within("archived projects", share(archivedProjects, 200), 0.005, 0.07)
	within("projects with owners", share(owned, 200), 0.5, 0.9)
	if favorites == 0 {
		t.Error("no project is a favorite")
	}
	types, archived, stale, seen, tags := map[flagadmin.FeatureType]int{}, 0, 0, 0, 0
	for _, f := range b.Features {
		types[f.Type]++
		if f.ArchivedAt != nil {
			archived++
		}
		if f.Stale {
			stale++
		}
		if f.LastSeenAt != nil {
			seen++
		}
		if len(f.Tags) > 3 {
			t.Fatalf("feature %s has %d tags", f.Name, len(f.Tags))
		}
		tags += len(f.Tags)
	}
	nf := len(b.Features)
	if nf != 20_000 {
		t.Errorf("got %d features", nf)
	}
	within("release features", share(types[flagadmin.TypeRelease], nf), 0.6, 0.8)
	for _, ft := range flagadmin.FeatureTypes() {
		if types[ft] == 0 {
			t.Errorf("no %s feature", ft)
		}
	}
	within("archived features", share(archived, nf), 0.12, 0.18)
	within("stale features", share(stale, nf), 0.07, 0.13)
	within("features with lastSeenAt", share(seen, nf), 0.8, 0.9)
	within("tags per feature", share(tags, nf), 1, 2)

	p := w.Profile()
	if p.Total != 1_000_000 {
		t.Fatalf("got %d events", p.Total)
	}
	within("events with a feature", share(p.WithFeature, p.Total), 0.975, 0.99)
	within("events with a project", share(p.WithProject, p.Total), 0.98, 0.995)
	featureEvents := 0
	for typ, n := range p.ByType {
		if strings.HasPrefix(typ, "feature-") {
			featureEvents += n
		}
	}
	within("feature-* events", share(featureEvents, p.Total), 0.85, 0.95)
	within("feature-strategy-update", share(p.ByType[flagadmin.EventFeatureStrategyUpdate], p.Total), 0.26, 0.36)
	within("feature-environment-enabled", share(p.ByType[flagadmin.EventFeatureEnvironmentEnabled], p.Total), 0.12, 0.22)
	within("feature-created", share(p.ByType[flagadmin.EventFeatureCreated], p.Total), 0.005, 0.03)
	within("client-register", share(p.ByType[flagadmin.EventClientRegister], p.Total), 0.0002, 0.003)
	if len(p.ByType) < 50 {
		t.Errorf("only %d event types occur", len(p.ByType))
	}
	within("admin-token events", share(p.ByCreatedBy[flagadmin.AdminTokenUserID], p.Total), 0.02, 0.08)
	within("same-millisecond events", share(p.SameMillisecond, p.Total), 0.005, 0.06)
	within("first month vs last month", share(p.ByMonth["2024-06"], p.ByMonth["2026-05"]), 0.4, 0.65)
	projectCounts := make([]int, 0, len(p.ByProject))
	for _, n := range p.ByProject {
		projectCounts = append(projectCounts, n)
	}
	slices.Sort(projectCounts)
	if busiest, median := projectCounts[len(projectCounts)-1], projectCounts[len(projectCounts)/2]; busiest < 10*median {
		t.Errorf("projects are not skewed: busiest %d, median %d", busiest, median)
	}

	want := map[string][2]float64{
		"feature": {0.00005, 0.0002}, "project": {0.01, 0.05}, "type-small": {0.01, 0.05}, "type-large": {0.25, 0.4},
		"createdBy": {0.01, 0.05}, "project-any-of-5": {0.01, 0.05}, "date-range": {0.02, 0.06}, "query": {0.001, 0.01},
		"none": {1, 1}, "offset-100000": {1, 1},
	}
	probes := w.Probes()
	if len(probes) != len(want) {
		t.Errorf("got %d probes, want %d", len(probes), len(want))
	}
	for _, pr := range probes {
		r, ok := want[pr.Name]
		if !ok {
			t.Errorf("unexpected probe %s", pr.Name)
			continue
		}
		within("probe "+pr.Name, pr.Selectivity(p.Total), r[0], r[1])
		if q := pr.Query(); q.Limit != 50 {
			t.Errorf("probe %s: limit %d", pr.Name, q.Limit)
		}
	}
}

// TestLoadIntoMemstore loads a small world through Store.Write and checks
// that searches through the Service find exactly what the probes promise.
func TestLoadIntoMemstore(t *testing.T) {
	ctx := context.Background()
	w := mustNew(t, worldgen.Config{Events: 5000, Projects: 20, Features: 300, Users: 60, Groups: 6})
	store := memstore.New()
	if err := store.Write(ctx, w.Batch()); err != nil {
		t.Fatalf("write the batch: %v", err)
	}
	for b := range w.Events(1000) {
		if err := store.Write(ctx, &flagadmin.Batch{Events: b}); err != nil {
			t.Fatalf("write events: %v", err)
		}
	}
	svc := flagadmin.NewService(store)
	admin, err := svc.Authenticate(ctx, "Bearer "+w.AdminSecret(1))
	if err != nil || !admin.IsRootAdmin() {
		t.Fatalf("authenticate with admin secret: %v, %+v", err, admin)
	}
	for _, pr := range w.Probes() {
		page, err := svc.SearchEvents(ctx, admin, pr.Params)
		if err != nil {
			t.Fatalf("probe %s: %v", pr.Name, err)
		}
		if page.Total != pr.Total || pr.Total == 0 {
			t.Errorf("probe %s: got total %d, want %d (non-zero)", pr.Name, page.Total, pr.Total)
		}
		if want := min(50, max(0, pr.Total-pr.Query().Offset)); len(page.Events) != want {
			t.Errorf("probe %s: got %d events, want %d", pr.Name, len(page.Events), want)
		}
		if !slices.IsSortedFunc(page.Events, flagadmin.CompareEvents) {
			t.Errorf("probe %s: page not in order", pr.Name)
		}
	}
	// Every personal token authenticates as its user; a viewer sees fewer events.
	var viewer *flagadmin.Principal
	for _, id := range w.TokenUsers() {
		secret, ok := w.UserSecret(id)
		if !ok {
			t.Fatalf("user %d: no secret", id)
		}
		p, err := svc.Authenticate(ctx, secret)
		if err != nil || p.User == nil || p.User.ID != id {
			t.Fatalf("user %d: authenticate: %v", id, err)
		}
		if !p.IsRootAdmin() && viewer == nil {
			viewer = &p
		}
	}
	if viewer != nil {
		page, err := svc.SearchEvents(ctx, *viewer, flagadmin.EventSearchParams{})
		if err != nil || page.Total == 0 || page.Total >= 5000 {
			t.Errorf("non-admin search: total %d, err %v; want some but not all", page.Total, err)
		}
	}
	list, err := svc.ListProjects(ctx, admin, flagadmin.ProjectListOptions{})
	if err != nil || len(list) == 0 {
		t.Fatalf("list projects: %d, %v", len(list), err)
	}
	// The Service accepts the events as they are: they are already normalized.
	for _, e := range w.FirstEvents(300) {
		stored, err := svc.AppendEvent(ctx, e)
		if err != nil {
			t.Fatalf("append %s: %v", e.Type, err)
		}
		stored.ID = 0
		if eventJSON(t, stored) != eventJSON(t, e) {
			t.Fatalf("the service changed the event:\n%s\n%s", eventJSON(t, e), eventJSON(t, stored))
		}
	}
}
