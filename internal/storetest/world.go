// Package storetest is the storage contract suite: every flagadmin.Store
// implementation runs it with Run and must pass it, so the in-memory store
// and the SQL stores behave alike.
//
// Each case gets a fresh store, builds its world through the domain (the
// Service's create operations with the System principal, or ApplySeed with a
// Seed literal), and asserts the contract of the API (docs/api.md) and of
// seed files (docs/testing.md) through the Service and, where the contract
// concerns storage directly, through the Store. Every Service the suite builds reads the fixed
// time 2026-06-15T12:00:00Z, so ages, staleness and expiry are deterministic.
package storetest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// suiteNow is the current time of every Service the suite builds.
var suiteNow = time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)

// maxEvents is the page size the suite uses to read every stored event.
const maxEvents = 100000

// testCase is one case of the suite: a name grouped by area, such as
// "events/filter/feature IS", and a body that runs on a fresh world.
type testCase struct {
	name string
	run  func(t *testing.T, w *world)
}

// Run runs the contract suite. newStore must return a new, empty store for
// each call; it is called once per case with the case's *testing.T, so it
// may register cleanups there (or skip). Cases run one after another (no
// t.Parallel), and each is independent of the others. At the end Run logs
// the number of cases that ran and prints "storetest: <t.Name()> ran N
// cases" to standard output, where CI collects it per store.
func Run(t *testing.T, newStore func(t *testing.T) flagadmin.Store) {
	t.Helper()
	var cases []testCase
	for _, area := range [][]testCase{
		eventCases(), deprecatedCases(), visibilityCases(), multiProjectCases(), projectCases(), lifecycleCases(),
		serviceAccountCases(), authCases(), seedCases(), storeCases(), concurrencyCases(),
		versionCases(), keysetCases(), exportCases(), accountCases(), settledCases(), logCases(), retentionCases(),
	} {
		cases = append(cases, area...)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("storetest: two cases are named %q", c.name)
		}
		seen[c.name] = true
	}
	n := 0
	// noLog: a store was found to keep no verifiable log, so the log's
	// cases skip without making one (the other cases run first).
	noLog := false
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if noLog && strings.HasPrefix(c.name, "log/") {
				t.Skip("storetest: the store keeps no verifiable log (vlog.Store)")
			}
			w := newWorld(t, newStore(t)) // a newStore that skips leaves the case uncounted
			if _, ok := w.store.(vlog.Store); !ok {
				noLog = true
			}
			n++
			c.run(t, w)
		})
	}
	t.Logf("storetest: %d cases", n)
	fmt.Printf("storetest: %s ran %d cases\n", t.Name(), n)
}

// world is the state of one case: its store, a Service over it with the
// fixed clock, and the names the case's fixture gave its events.
type world struct {
	t     *testing.T
	ctx   context.Context
	store flagadmin.Store
	svc   *flagadmin.Service
	ids   map[string]int64
	names map[int64]string
}

func newWorld(t *testing.T, store flagadmin.Store) *world {
	if store == nil {
		t.Fatal("storetest: newStore returned nil")
	}
	return &world{
		t:     t,
		ctx:   t.Context(),
		store: store,
		svc:   flagadmin.NewService(store, flagadmin.WithClock(func() time.Time { return suiteNow })),
		ids:   map[string]int64{},
		names: map[int64]string{},
	}
}

// namedEvent is a fixture event with the name assertions refer to it by.
type namedEvent struct {
	name string
	ev   flagadmin.Event
}

// load applies seed with events as its events (in this order), checks that
// the store holds exactly those new events, and remembers each event's id
// under its name.
func (w *world) load(seed *flagadmin.Seed, events ...namedEvent) {
	w.t.Helper()
	before := len(w.allEvents())
	seed.Events = nil
	for _, e := range events {
		seed.Events = append(seed.Events, e.ev)
	}
	if err := w.svc.ApplySeed(w.ctx, seed); err != nil {
		w.t.Fatalf("ApplySeed: got error %v, want nil", err)
	}
	all := w.allEvents()
	if got, want := len(all)-before, len(events); got != want {
		w.t.Fatalf("ApplySeed stored %d events, want %d (the seed's, none of its own)", got, want)
	}
	for i, e := range events {
		id := all[before+i].ID
		w.ids[e.name] = id
		w.names[id] = e.name
	}
}

// fixture loads a seed and its named events (see load).
func (w *world) fixture(seed *flagadmin.Seed, events []namedEvent) {
	w.t.Helper()
	w.load(seed, events...)
}

// allEvents returns every stored event in id order, read from the store.
func (w *world) allEvents() []flagadmin.Event {
	w.t.Helper()
	return w.storeEvents(flagadmin.EventQuery{})
}

// eventsOfType returns the stored events of type typ in id order.
func (w *world) eventsOfType(typ string) []flagadmin.Event {
	w.t.Helper()
	return w.storeEvents(flagadmin.EventQuery{Types: []string{typ}})
}

func (w *world) storeEvents(q flagadmin.EventQuery) []flagadmin.Event {
	w.t.Helper()
	q.Limit = maxEvents
	page, err := w.store.SearchEvents(w.ctx, q)
	if err != nil {
		w.t.Fatalf("Store.SearchEvents: got error %v, want nil", err)
	}
	if page.Total != len(page.Events) {
		w.t.Fatalf("Store.SearchEvents: got total %d with %d events, want them equal", page.Total, len(page.Events))
	}
	events := slices.Clone(page.Events)
	slices.SortFunc(events, func(a, b flagadmin.Event) int { return cmp.Compare(a.ID, b.ID) })
	return events
}

// as authenticates secret and returns its principal.
func (w *world) as(secret string) flagadmin.Principal {
	w.t.Helper()
	p, err := w.svc.Authenticate(w.ctx, secret)
	if err != nil {
		w.t.Fatalf("Authenticate(%q): got error %v, want nil", secret, err)
	}
	return p
}

// expand replaces each {name} in s by the id of the fixture event name.
func (w *world) expand(s string) string {
	w.t.Helper()
	for {
		start := strings.IndexByte(s, '{')
		if start < 0 {
			return s
		}
		end := strings.IndexByte(s[start:], '}')
		if end < 0 {
			return s
		}
		name := s[start+1 : start+end]
		id, ok := w.ids[name]
		if !ok {
			w.t.Fatalf("fixture has no event named %q", name)
		}
		s = s[:start] + strconv.FormatInt(id, 10) + s[start+end+1:]
	}
}

// eventNames names events by the fixture's names ("#id" for others).
func (w *world) eventNames(events []flagadmin.Event) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		if n, ok := w.names[e.ID]; ok {
			out = append(out, n)
		} else {
			out = append(out, "#"+strconv.FormatInt(e.ID, 10))
		}
	}
	return out
}

// wantPage checks a page's events, by fixture name and in order, and its total.
func (w *world) wantPage(t *testing.T, page flagadmin.EventPage, total int, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if page.Events == nil {
		t.Errorf("got events nil, want a non-nil list")
	}
	if got := w.eventNames(page.Events); !slices.Equal(got, want) {
		t.Errorf("got events %v, want %v", got, want)
	}
	if page.Total != total {
		t.Errorf("got total %d, want %d", page.Total, total)
	}
}

// search runs the query-string search and fails the case on an error.
func (w *world) search(t *testing.T, p flagadmin.Principal, params flagadmin.EventSearchParams) flagadmin.EventPage {
	t.Helper()
	page, err := w.svc.SearchEvents(w.ctx, p, params)
	if err != nil {
		t.Fatalf("SearchEvents(%+v): got error %v, want nil", params, err)
	}
	return page
}

// deprecated runs the deprecated search and fails the case on an error.
func (w *world) deprecated(t *testing.T, p flagadmin.Principal, req flagadmin.DeprecatedSearchRequest) flagadmin.EventPage {
	t.Helper()
	page, err := w.svc.DeprecatedSearchEvents(w.ctx, p, req)
	if err != nil {
		t.Fatalf("DeprecatedSearchEvents: got error %v, want nil", err)
	}
	return page
}

// projects lists projects and fails the case on an error.
func (w *world) projects(t *testing.T, p flagadmin.Principal, archived bool) []flagadmin.ProjectListEntry {
	t.Helper()
	list, err := w.svc.ListProjects(w.ctx, p, flagadmin.ProjectListOptions{Archived: archived})
	if err != nil {
		t.Fatalf("ListProjects: got error %v, want nil", err)
	}
	return list
}

// project returns the entry id of a project list, failing the case when it is absent.
func project(t *testing.T, list []flagadmin.ProjectListEntry, id string) flagadmin.ProjectListEntry {
	t.Helper()
	for _, p := range list {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("project list %v: got no project %q, want it listed", projectIDs(list), id)
	return flagadmin.ProjectListEntry{}
}

func projectIDs(list []flagadmin.ProjectListEntry) []string {
	out := make([]string, 0, len(list))
	for _, p := range list {
		out = append(out, p.ID)
	}
	return out
}

// feature reads a feature from the store, failing the case on an error.
func (w *world) feature(t *testing.T, name string) flagadmin.Feature {
	t.Helper()
	f, err := w.store.Feature(w.ctx, name)
	if err != nil {
		t.Fatalf("Store.Feature(%q): got error %v, want nil", name, err)
	}
	return f
}

// wantKind checks that err is of kind (errors.Is).
func wantKind(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Errorf("%s: got error %v, want %v", what, err, kind)
	}
}

// wantNoError checks that err is nil.
func wantNoError(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: got error %v, want nil", what, err)
	}
}

// wantValidation checks that err is ErrValidation, a *ValidationError, and
// names each of paths.
func wantValidation(t *testing.T, err error, paths ...string) {
	t.Helper()
	var ve *flagadmin.ValidationError
	if !errors.Is(err, flagadmin.ErrValidation) || !errors.As(err, &ve) {
		t.Errorf("got error %v, want a *ValidationError (ErrValidation) naming %q", err, paths)
		return
	}
	var got []string
	for _, f := range ve.Fields {
		got = append(got, f.Path)
	}
	for _, p := range paths {
		if !slices.Contains(got, p) {
			t.Errorf("got fields %q, want one naming %q", got, p)
		}
	}
}

// wantJSON compares a JSON value with want by meaning (key order and white
// space aside); want "null" also accepts an absent value.
func wantJSON(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	if want == "null" {
		if len(got) != 0 && string(got) != "null" {
			t.Errorf("%s: got %s, want null", what, got)
		}
		return
	}
	var g, wv any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s: got %q (not JSON: %v), want %s", what, got, err, want)
		return
	}
	if err := json.Unmarshal([]byte(want), &wv); err != nil {
		t.Fatalf("%s: the expected value %q is not JSON: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, wv) {
		t.Errorf("%s: got %s, want %s", what, got, want)
	}
}

// wantEqual compares two comparable values.
func wantEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// wantTime compares two optional times by instant.
func wantTime(t *testing.T, what string, got, want *time.Time) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s: got %s, want %s", what, fmtTime(got), fmtTime(want))
	case !got.Equal(*want):
		t.Errorf("%s: got %s, want %s", what, fmtTime(got), fmtTime(want))
	}
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "null"
	}
	return t.Format(time.RFC3339Nano)
}

func fmtPtr[T any](p *T) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

func str(s string) *string { return &s }
func i64(n int64) *int64   { return &n }
func intp(n int) *int      { return &n }

// at parses an RFC 3339 time of a fixture.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic("storetest: bad fixture time " + s)
	}
	return t
}

func atp(s string) *time.Time { t := at(s); return &t }

// daysAgo returns suiteNow minus d days plus extra.
func daysAgo(d int, extra time.Duration) time.Time {
	return suiteNow.Add(-time.Duration(d)*24*time.Hour + extra)
}

// Secrets and ids of the accounts fixture.
const (
	adminSecret     = "*:*.admin-secret"
	adminTokenName  = "ops-admin"
	clientSecret    = "default:development.client-secret"
	frontendSecret  = "default:development.frontend-secret"
	adaSecret       = "user:ada-secret"
	eveSecret       = "user:eve-secret"
	eveExpired      = "user:eve-expired"
	vicSecret       = "user:vic-secret"
	gusSecret       = "user:gus-secret"
	maxSecret       = "user:max-secret"
	nedSecret       = "user:ned-secret"
	ciSecret        = "user:ci-secret"
	ciSecret2       = "user:ci-secret-2"
	deploySecret    = "user:deploy-secret"
	adaID           = int64(1) // root Admin
	eveID           = int64(2) // root Editor
	vicID           = int64(3) // root Viewer
	gusID           = int64(4) // root Viewer, in the Platform group
	maxID           = int64(5) // root Viewer, given direct project roles by fixtures
	nedID           = int64(6) // root Editor without an email
	ciID            = int64(10)
	deployID        = int64(11)
	platformGroupID = int64(1) // users: Gus
	emptyGroupID    = int64(2) // no users
)

// accounts returns a seed with the fixture's users, service accounts,
// groups and tokens, and no projects.
func accounts() *flagadmin.Seed {
	return &flagadmin.Seed{
		Users: []flagadmin.User{
			{ID: adaID, Name: "Ada Admin", Username: "ada", Email: "ada@example.com", RootRole: flagadmin.RoleAdmin},
			{ID: eveID, Name: "Eve Editor", Email: "eve@example.com", RootRole: flagadmin.RoleEditor},
			{ID: vicID, Name: "Vic Viewer", Email: "vic@example.com", RootRole: flagadmin.RoleViewer},
			{ID: gusID, Name: "Gus Grouped", Email: "gus@example.com", RootRole: flagadmin.RoleViewer},
			{ID: maxID, Name: "Max Member", Email: "max@example.com", RootRole: flagadmin.RoleViewer},
			{ID: nedID, Name: "Ned Nomail", Username: "ned", RootRole: flagadmin.RoleEditor},
		},
		ServiceAccounts: []flagadmin.User{
			{ID: ciID, Name: "CI bot", Username: "ci-bot", RootRole: flagadmin.RoleEditor},
			{ID: deployID, Name: "Deploy bot", Username: "deploy-bot", RootRole: flagadmin.RoleViewer},
		},
		Groups: []flagadmin.Group{
			{ID: platformGroupID, Name: "Platform", Users: []int64{gusID}},
			{ID: emptyGroupID, Name: "Empty", Users: []int64{}},
		},
		APITokens: []flagadmin.SeedToken{
			{Secret: adminSecret, Type: flagadmin.TokenAdmin, Name: adminTokenName},
			{Secret: clientSecret, Type: flagadmin.TokenClient, Name: "sdk"},
			{Secret: frontendSecret, Type: flagadmin.TokenFrontend, Name: "web"},
			{Secret: adaSecret, UserID: i64(adaID), Name: "ada laptop"},
			{Secret: eveSecret, UserID: i64(eveID), Name: "eve laptop"},
			{Secret: eveExpired, UserID: i64(eveID), Name: "eve old", ExpiresAt: atp("2026-01-01T00:00:00Z")},
			{Secret: vicSecret, UserID: i64(vicID), Name: "vic laptop"},
			{Secret: gusSecret, UserID: i64(gusID), Name: "gus laptop"},
			{Secret: maxSecret, UserID: i64(maxID), Name: "max laptop"},
			{Secret: nedSecret, UserID: i64(nedID), Name: "ned laptop"},
			{Secret: ciSecret, UserID: i64(ciID), Name: "ci"},
			{Secret: ciSecret2, UserID: i64(ciID), Name: "ci spare", ExpiresAt: atp("2030-01-01T00:00:00Z")},
			{Secret: deploySecret, UserID: i64(deployID), Name: "deploy"},
		},
	}
}

// userMember and groupMember build project memberships.
func userMember(id int64, role flagadmin.ProjectRole) flagadmin.ProjectMembership {
	return flagadmin.ProjectMembership{UserID: i64(id), Role: role}
}

func groupMember(id int64, role flagadmin.ProjectRole) flagadmin.ProjectMembership {
	return flagadmin.ProjectMembership{GroupID: i64(id), Role: role}
}

// ev builds a fixture event.
func ev(typ, createdBy string, byID *int64, createdAt string, project, feature, env *string, data string) flagadmin.Event {
	e := flagadmin.Event{
		Type: typ, CreatedBy: createdBy, CreatedByUserID: byID, CreatedAt: at(createdAt),
		Project: project, FeatureName: feature, Environment: env,
	}
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return e
}
