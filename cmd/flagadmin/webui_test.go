package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/flagadmin/flagadmin/adapters/gateway"
	"github.com/flagadmin/flagadmin/internal/browsertest"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
	"github.com/flagadmin/flagadmin/internal/unleashserver"
)

// The web UI test's accounts: Unleash's first admin (its default
// password) and a Viewer the test creates.
const (
	webuiAdmin, webuiAdminPassword   = "admin", "unleash4all"
	webuiViewer, webuiViewerPassword = "vera@example.com", "Viewer-pass-4-webui"
)

// webuiBound bounds the whole test, the start of Unleash included.
const webuiBound = 170 * time.Second

// TestUnleashWebUI drives Unleash's own web UI (unleash-server 8.2.0, in
// headless Chromium) through flagadmin standing in front of it (serve
// --follow <Unleash's database> --upstream <Unleash>):
//
//   - the admin signs in at flagadmin's address;
//   - the event log pages (global /history, a project's, a flag's) show
//     the events of the search answers flagadmin served (each marked
//     X-Flagadmin-Source: local, read back from the browser's network
//     events), which are Unleash's own answer to the same search;
//   - each event's card on the event log shows what it shows when the
//     browser talks to Unleash directly: a "Group id" row with the
//     event's group (Unleash groups the events of one transaction), none
//     for an event without a group;
//   - text typed in the event log's search box reaches flagadmin's
//     search as its query;
//   - the personal dashboard's event timeline shows what it shows when
//     the browser talks to Unleash directly: as many events, at the same
//     times, from the same events served (its tooltips word them apart:
//     flagadmin's events carry no label and summary (they are optional), so the
//     UI writes "admin triggered feature-created" where Unleash's summary
//     says "admin created checkout-banner in project default");
//   - the Projects page reads as when the browser talks to Unleash
//     directly: "Projects (1)" (open-source Unleash lists its default
//     project only), the card's flags, flags in cleanup and last
//     reported usage;
//   - a Viewer sees no event of a private project and no project-less
//     event. Unleash's open-source build has no private
//     projects of its own (a project's mode is an Enterprise setting, and
//     it shows a Viewer every project's events): the private project is
//     made in Unleash's database, as an Enterprise Unleash would store it,
//     and followed by flagadmin as such; project-less events (a segment's,
//     a user's) are Unleash's own.
//
// A screenshot of the event log through flagadmin is left in the test's
// temporary directory, and at $FLAGADMIN_WEBUI_SCREENSHOT when set
// (docs/unleash-event-log.png is made that way).
//
// It runs in parallel with the tests that mostly wait for a follow lease
// to run out (TestFollowKilledMidBatch, TestFollowSharedPostgresStore).
func TestUnleashWebUI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Unleash and a browser; skipped with -short")
	}
	t.Parallel()
	started := time.Now()
	allocCtx := browsertest.Start(t, 1280, 900)
	u := unleashserver.Start(t)
	t.Logf("Unleash up after %s", time.Since(started).Round(time.Millisecond))
	ctx := context.Background()
	db, err := pgx.Connect(ctx, u.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(ctx) })
	seedWebUI(t, u, db)

	// flagadmin follows Unleash's database into memory and stands in
	// front of Unleash; the test sees each search that reaches it.
	cfg := memoryConfig()
	cfg.Follow, cfg.TokenCacheTTL, cfg.ResultCacheSize = u.DatabaseURL, defaultTokenCacheTTL, defaultResultCacheSize
	upstream, err := parseUpstream(u.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.GatewayConfig = GatewayConfig{Upstream: upstream, UpstreamTimeout: 30 * time.Second, FollowWait: 5 * time.Second}
	searches := &searchesAtFlagadmin{}
	stderr := &syncbuffer.Buffer{}
	var l *Listener
	app := fxtest.New(t, serveOptions(cfg, stderr), fx.Decorate(searches.wrap), fx.Populate(&l))
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	base := "http://" + l.Addr().String()
	var last int64
	if err := db.QueryRow(ctx, `SELECT max(id) FROM events`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, fmt.Sprintf("%s/api/admin/search/events?id=IS:%d", base, last), http.StatusOK, unleashserver.AdminToken, `"total":1`)
	t.Logf("flagadmin holds Unleash's %d events after %s", last, time.Since(started).Round(time.Millisecond))

	browserCtx, cancel := context.WithTimeout(allocCtx, webuiBound-time.Since(started))
	defer cancel()
	admin := newUITab(t, browserCtx, base)
	defer func() {
		if t.Failed() {
			t.Logf("flagadmin's log:\n%s", stderr)
		}
	}()

	// Sign in at flagadmin's address: Unleash's login form, forwarded.
	admin.signIn(webuiAdmin, webuiAdminPassword)

	// The global event log.
	global := admin.eventLog("/history", "")
	admin.sameAsUnleash(u, global)
	cards := admin.eventCards("/history") // compared with Unleash's below
	if global.total != int(last) {
		t.Errorf("/history: the page counts %d events, Unleash has %d", global.total, last)
	}
	var shot []byte
	admin.run(chromedp.CaptureScreenshot(&shot))
	path := filepath.Join(t.TempDir(), "unleash-event-log.png")
	if out := os.Getenv("FLAGADMIN_WEBUI_SCREENSHOT"); out != "" {
		path = out
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the event log through flagadmin: %s (%d bytes)", path, len(shot))

	// Text typed in the search box is flagadmin's search query.
	admin.run(chromedp.SendKeys(`input[aria-label^="Search"]`, "checkout", chromedp.ByQuery))
	searches.waitFor(t, func(q url.Values) bool { return q.Get("query") == "checkout" })
	found := admin.eventLog("/history", "query=checkout")
	admin.sameAsUnleash(u, found)
	if found.total == 0 || found.total >= global.total {
		t.Errorf("the search for %q shows %d of %d events", "checkout", found.total, global.total)
	}
	for _, e := range found.served.Events {
		if !strings.Contains(string(e.raw), "checkout") {
			t.Errorf("the search for %q shows event %d, which does not mention it: %s", "checkout", e.ID, e.raw)
		}
	}

	// A project's event log, a flag's, and the private project's.
	project := admin.eventLog("/projects/default/logs", "project=IS%3Adefault")
	admin.sameAsUnleash(u, project)
	flag := admin.eventLog("/projects/default/features/checkout-banner/logs", "feature=IS%3Acheckout-banner")
	admin.sameAsUnleash(u, flag)
	for _, e := range flag.served.Events {
		if e.FeatureName == nil || *e.FeatureName != "checkout-banner" {
			t.Errorf("the flag's event log shows event %d of another flag: %s", e.ID, e.raw)
		}
	}
	if flag.total < 4 || flag.total >= project.total || project.total >= global.total {
		t.Errorf("event logs: the flag's %d, its project's %d, all %d; want 4 or more, and each fewer than the next", flag.total, project.total, global.total)
	}
	vault := admin.eventLog("/projects/vault/logs", "project=IS%3Avault")
	if vault.total == 0 {
		t.Errorf("the admin sees no event of the private project")
	}

	// The personal dashboard's timeline, through flagadmin and directly.
	timeline := admin.timeline()
	direct := newUITab(t, browserCtx, u.URL) // a browser of its own: cookies are not kept apart by port
	direct.signIn(webuiAdmin, webuiAdminPassword)
	unleashTimeline := direct.timeline()
	if !sameSearch(timeline.served, unleashTimeline.served) { // the day changed in between: read it again
		timeline = admin.timeline()
	}
	if timeline.count != unleashTimeline.count || !slices.Equal(timeline.times, unleashTimeline.times) ||
		!slices.Equal(timeline.served.ids(), slices.SortedStableFunc(slices.Values(unleashTimeline.served.ids()), flagadminOrder(t, db))) {
		t.Errorf("the event timeline through flagadmin shows %d events at %q (served %v); directly, Unleash's shows %d at %q (served %v)",
			timeline.count, timeline.times, timeline.served.ids(), unleashTimeline.count, unleashTimeline.times, unleashTimeline.served.ids())
	}
	if timeline.count == 0 {
		t.Errorf("the event timeline shows no event")
	}
	t.Logf("the timeline's tooltips through flagadmin:\n%s\ndirectly:\n%s", strings.Join(timeline.tooltips, "\n"), strings.Join(unleashTimeline.tooltips, "\n"))

	// Each event's card on the event log, through flagadmin and directly:
	// Unleash's UI shows a "Group id" row (a link to the group's events)
	// for an event of a group (Unleash groups the events of one
	// transaction, such as a flag's creation) and none for an event
	// without one (a segment's).
	directCards := inFlagadminOrder(t, db, direct.eventCards("/history"))
	if !reflect.DeepEqual(cards, directCards) {
		t.Errorf("the event log's cards through flagadmin:\n%s\ndirectly:\n%s", cardsText(cards), cardsText(directCards))
	}
	groups := eventGroups(t, db)
	var grouped, ungrouped int
	for _, c := range cards {
		g, ok := groups[c.ID]
		switch {
		case !ok:
			t.Errorf("the event log shows event %d, which Unleash does not hold", c.ID)
		case g == "" && c.Group != nil:
			t.Errorf("event %d has no group; its card shows %s", c.ID, c.groupRow())
		case g == "":
			ungrouped++
		case c.Group == nil || c.Group.Text != g || !strings.Contains(c.Group.Href, "groupId="+url.QueryEscape("IS:"+g)):
			t.Errorf("event %d is of group %q; its card shows %s", c.ID, g, c.groupRow())
		default:
			grouped++
		}
	}
	if len(cards) != min(len(groups), 25) || grouped == 0 || ungrouped == 0 {
		t.Errorf("the event log shows %d cards of Unleash's %d events, %d of a group and %d of none; want the first page, some of each", len(cards), len(groups), grouped, ungrouped)
	}
	t.Logf("the event log's cards through flagadmin are Unleash's: %d of a group, %d without a Group id row", grouped, ungrouped)

	// The Projects page, through flagadmin and directly: the count in its
	// heading and each card's name, flags, flags in cleanup and when an
	// SDK last reported one of its flags. Open-source Unleash lists its
	// default project only; flagadmin's copy is read again until it
	// agrees (it asks Unleash which build it stands in front of within a
	// second of the first project list).
	unleashProjects := direct.projects(false)
	if unleashProjects.Heading != "Projects (1)" || len(unleashProjects.Cards) != 1 ||
		!slices.Contains(unleashProjects.Cards[0], "2 flags · 1 in cleanup") || slices.Contains(unleashProjects.Cards[0], "No activity") {
		t.Errorf("directly, Unleash's Projects page reads %q with the cards %q; want the default project, a flag in cleanup and a reported usage", unleashProjects.Heading, unleashProjects.Cards)
	}
	for deadline, reload := time.Now().Add(20*time.Second), false; ; reload = true {
		projects := admin.projects(reload)
		if reflect.DeepEqual(projects, unleashProjects) {
			t.Logf("the Projects page through flagadmin is Unleash's: %q, cards %q", projects.Heading, projects.Cards)
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the Projects page through flagadmin reads %q with the cards %q; directly, %q with %q",
				projects.Heading, projects.Cards, unleashProjects.Heading, unleashProjects.Cards)
			break
		}
	}

	for _, a := range direct.answers() {
		if a.source != "" {
			t.Errorf("Unleash's own answer %s carries %s: %q", a.url, gateway.SourceHeader, a.source)
		}
	}
	admin.allLocal()

	direct.close()

	// A Viewer, in a browser of their own.
	u.Must(t, http.MethodPost, "/api/admin/user-admin", map[string]any{
		"email": webuiViewer, "name": "Vera Viewer", "rootRole": 3, "password": webuiViewerPassword, "sendEmail": false}, nil)
	if err := db.QueryRow(ctx, `SELECT max(id) FROM events`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, fmt.Sprintf("%s/api/admin/search/events?id=IS:%d", base, last), http.StatusOK, unleashserver.AdminToken, `"total":1`)
	hidden := hiddenFromViewers(t, db)
	vera := newUITab(t, browserCtx, base)
	vera.signIn(webuiViewer, webuiViewerPassword)
	if v := vera.eventLog("/projects/vault/logs", "project=IS%3Avault"); v.total != 0 {
		t.Errorf("the Viewer sees %d events of the private project: %v", v.total, v.served.ids())
	}
	if v := vera.eventLog("/projects/default/logs", "project=IS%3Adefault"); v.total != project.total {
		t.Errorf("the Viewer sees %d events of the open project default, the admin %d", v.total, project.total)
	}
	// Unleash's UI opens the global event log to ADMIN and READ_LOGS only;
	// the Viewer's session asks flagadmin's search for everything.
	all := vera.fetchSearch("/api/admin/search/events?limit=1000")
	if all.source != "local" || all.status != http.StatusOK {
		t.Fatalf("the Viewer's search: %d, %s %q; want 200 served locally", all.status, gateway.SourceHeader, all.source)
	}
	for _, e := range all.Events {
		if e.Project == nil || *e.Project == "vault" {
			t.Errorf("the Viewer sees event %d: %s", e.ID, e.raw)
		}
	}
	if all.Total != int(last)-len(hidden) || len(hidden) == 0 {
		t.Errorf("the Viewer sees %d events; Unleash has %d, %d of them private or project-less (%v)", all.Total, last, len(hidden), hidden)
	}
	veraTimeline := vera.timeline()
	for _, e := range veraTimeline.served.Events {
		if slices.Contains(hidden, e.ID) {
			t.Errorf("the Viewer's timeline was served event %d: %s", e.ID, e.raw)
		}
	}
	if !sameSearch(timeline.served, veraTimeline.served) { // the day changed in between
		timeline = admin.timeline()
	}
	var visible []int64
	for _, id := range timeline.served.ids() {
		if !slices.Contains(hidden, id) {
			visible = append(visible, id)
		}
	}
	hiddenShown := timeline.served.count(hidden)
	if veraTimeline.count != timeline.count-hiddenShown || !slices.Equal(veraTimeline.served.ids(), visible) {
		t.Errorf("the Viewer's timeline shows %d events (served %v), the admin's %d (served %v) of which %d are private or project-less",
			veraTimeline.count, veraTimeline.served.ids(), timeline.count, timeline.served.ids(), hiddenShown)
	}
	if hiddenShown == 0 {
		t.Logf("the admin's timeline holds no private or project-less event (the day changed since they were made)")
	}
	vera.allLocal()
	t.Logf("done after %s", time.Since(started).Round(time.Millisecond))
}

// seedWebUI makes Unleash's world of the test through its admin API: a
// segment created and updated (project-less events), a private project
// (in the database: the open-source build has no API for it) with a flag,
// and two flags of project default with strategies and environments
// turned on (and one off again).
func seedWebUI(t *testing.T, u *unleashserver.Server, db *pgx.Conn) {
	t.Helper()
	var segment struct{ ID int64 }
	u.Must(t, http.MethodPost, "/api/admin/segments", map[string]any{"name": "beta-users", "constraints": []any{}}, &segment)
	u.Must(t, http.MethodPut, fmt.Sprintf("/api/admin/segments/%d", segment.ID), map[string]any{"name": "beta-users", "description": "early adopters", "constraints": []any{}}, nil)
	for _, q := range []string{`INSERT INTO projects (id, name) VALUES ('vault', 'Vault')`, `INSERT INTO project_settings (project, project_mode) VALUES ('vault', 'private')`} {
		if _, err := db.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	u.Must(t, http.MethodPost, "/api/admin/projects/vault/features", map[string]any{"name": "vault-key", "type": "release"}, nil)
	for _, f := range []struct{ name, env string }{{"search-ranking", "development"}, {"checkout-banner", "production"}} {
		u.Must(t, http.MethodPost, "/api/admin/projects/default/features", map[string]any{"name": f.name, "type": "release"}, nil)
		u.Must(t, http.MethodPost, "/api/admin/projects/default/features/"+f.name+"/environments/"+f.env+"/strategies", map[string]any{"name": "default"}, nil)
		u.Must(t, http.MethodPost, "/api/admin/projects/default/features/"+f.name+"/environments/"+f.env+"/on", nil, nil)
	}
	u.Must(t, http.MethodPost, "/api/admin/projects/default/features/checkout-banner/environments/production/off", nil, nil)
	// search-ranking is done (in cleanup), and an SDK reported
	// checkout-banner 8 days ago, as Unleash's last-seen job writes it.
	waitInitialStage(t, db, "search-ranking")
	u.Must(t, http.MethodPost, "/api/admin/projects/default/features/search-ranking/lifecycle/complete", map[string]any{"status": "kept"}, nil)
	if _, err := db.Exec(context.Background(), `INSERT INTO last_seen_at_metrics (feature_name, environment, last_seen_at) VALUES ('checkout-banner', 'production', now() - interval '8 days')`); err != nil {
		t.Fatal(err)
	}
}

// eventGroups returns the group id of each of Unleash's events, "" for
// an event without a group.
func eventGroups(t *testing.T, db *pgx.Conn) map[int64]string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT id, coalesce(group_id, '') FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	groups := map[int64]string{}
	var id int64
	var group string
	if _, err := pgx.ForEachRow(rows, []any{&id, &group}, func() error { groups[id] = group; return nil }); err != nil {
		t.Fatal(err)
	}
	return groups
}

// flagadminOrder compares two of Unleash's event ids as flagadmin orders
// them. Unleash orders by createdAt alone, in microseconds, so the events
// of one transaction (one createdAt) come in either order; flagadmin
// orders by the millisecond it shows, then by id, newest first.
func flagadminOrder(t *testing.T, db *pgx.Conn) func(a, b int64) int {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT id, floor(extract(epoch FROM created_at) * 1000)::bigint FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	millis := map[int64]int64{}
	var id, ms int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &ms}, func() error { millis[id] = ms; return nil }); err != nil {
		t.Fatal(err)
	}
	return func(a, b int64) int {
		if c := cmp.Compare(millis[b], millis[a]); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	}
}

// inFlagadminOrder returns Unleash's cards of one page in the order
// flagadmin lists the same events (flagadminOrder): only ties move.
func inFlagadminOrder(t *testing.T, db *pgx.Conn, cards []eventCard) []eventCard {
	t.Helper()
	order := flagadminOrder(t, db)
	out := slices.Clone(cards)
	slices.SortStableFunc(out, func(a, b eventCard) int { return order(a.ID, b.ID) })
	return out
}

// hiddenFromViewers returns the ids of Unleash's events a Viewer may not
// see: the project-less ones, and those naming the private project or
// every project ("*"), alone or among others (a token's projects,
// comma-joined).
func hiddenFromViewers(t *testing.T, db *pgx.Conn) []int64 {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT id FROM events WHERE project IS NULL OR string_to_array(project, ',') && ARRAY['vault', '*'] ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// searchesAtFlagadmin records the event searches that reach flagadmin's
// listener: their query and whether flagadmin answered them itself.
type searchesAtFlagadmin struct {
	mu   sync.Mutex
	seen []searchAtFlagadmin
}

type searchAtFlagadmin struct {
	query  url.Values
	source string
}

// wrap decorates the front door (fx.Decorate) with the recording.
func (s *searchesAtFlagadmin) wrap(d *frontDoor) *frontDoor {
	next := d.handler
	wrapped := *d
	wrapped.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if r.URL.Path == "/api/admin/search/events" {
			s.mu.Lock()
			s.seen = append(s.seen, searchAtFlagadmin{query: r.URL.Query(), source: w.Header().Get(gateway.SourceHeader)})
			s.mu.Unlock()
		}
	})
	return &wrapped
}

// waitFor waits until a search matching match has reached flagadmin and
// was served there.
func (s *searchesAtFlagadmin) waitFor(t *testing.T, match func(url.Values) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		var queries []string
		for _, q := range s.seen {
			if match(q.query) && q.source == "local" {
				s.mu.Unlock()
				t.Logf("flagadmin served the search %s", q.query.Encode())
				return
			}
			queries = append(queries, q.query.Encode())
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the search did not reach flagadmin within 30 s; it saw %q", queries)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// uiTab is a browser tab on Unleash's web UI at base (flagadmin's address
// or Unleash's own) that keeps every answer to an event search it loads.
type uiTab struct {
	t       *testing.T
	ctx     context.Context
	close   func()
	base    string
	started time.Time

	mu        sync.Mutex
	responses []searchAnswer // every answer, as its headers arrived
	pending   map[network.RequestID]*searchAnswer
	done      []*searchAnswer // the answers whose bodies were read
}

// searchAnswer is an answer to GET /api/admin/search/events as the
// browser received it.
type searchAnswer struct {
	url    string
	status int
	source string // X-Flagadmin-Source
	searchPage
}

// searchPage is the body of an event search.
type searchPage struct {
	Events []webuiEvent `json:"events"`
	Total  int          `json:"total"`
}

type webuiEvent struct {
	ID          int64   `json:"id"`
	Project     *string `json:"project"`
	FeatureName *string `json:"featureName"`
	Environment *string `json:"environment"`
	CreatedAt   string  `json:"createdAt"`
	raw         json.RawMessage
}

func (e *webuiEvent) UnmarshalJSON(b []byte) error {
	type plain webuiEvent
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	e.raw = slices.Clone(b)
	return nil
}

func (p searchPage) ids() []int64 {
	ids := make([]int64, 0, len(p.Events))
	for _, e := range p.Events {
		ids = append(ids, e.ID)
	}
	return ids
}

// count returns how many of p's events have one of ids.
func (p searchPage) count(ids []int64) int {
	n := 0
	for _, e := range p.Events {
		if slices.Contains(ids, e.ID) {
			n++
		}
	}
	return n
}

// newUITab starts a browser of the allocator alloc (a browser of its own,
// with its own cookies) and opens a tab on base; it is stopped when t
// ends, or by close.
func newUITab(t *testing.T, alloc context.Context, base string) *uiTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	tab := &uiTab{t: t, ctx: ctx, close: cancel, base: base, started: time.Now(), pending: map[network.RequestID]*searchAnswer{}}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *network.EventResponseReceived:
			if !strings.Contains(e.Response.URL, "/api/admin/search/events") {
				return
			}
			a := &searchAnswer{url: e.Response.URL, status: int(e.Response.Status)}
			for k, v := range e.Response.Headers {
				if strings.EqualFold(k, gateway.SourceHeader) {
					a.source = fmt.Sprint(v)
				}
			}
			tab.mu.Lock()
			tab.responses = append(tab.responses, *a)
			tab.pending[e.RequestID] = a
			tab.mu.Unlock()
		case *network.EventLoadingFinished:
			tab.mu.Lock()
			a := tab.pending[e.RequestID]
			delete(tab.pending, e.RequestID)
			tab.mu.Unlock()
			if a == nil {
				return
			}
			go func() { // a command may not be sent from the listener itself
				c := chromedp.FromContext(ctx)
				body, err := network.GetResponseBody(e.RequestID).Do(cdp.WithExecutor(ctx, c.Target))
				if err == nil {
					err = json.Unmarshal(body, &a.searchPage)
				}
				if err != nil {
					if ctx.Err() == nil {
						t.Logf("the body of %s: %v", a.url, err)
					}
					return
				}
				tab.mu.Lock()
				tab.done = append(tab.done, a)
				tab.mu.Unlock()
			}()
		}
	})
	tab.run(network.Enable())
	return tab
}

// run runs actions in the tab, failing the test with the page's text
// when one fails.
func (tab *uiTab) run(actions ...chromedp.Action) {
	tab.t.Helper()
	if err := chromedp.Run(tab.ctx, actions...); err != nil {
		tab.fail(err)
	}
}

// fail fails the test with err and the page's text.
func (tab *uiTab) fail(err error) {
	tab.t.Helper()
	var text string
	_ = chromedp.Run(tab.ctx, chromedp.Evaluate(`location.href + "\n" + (document.body ? document.body.innerText.slice(0, 3000) : "")`, &text))
	tab.t.Fatalf("browser at %s: %v\nthe page:\n%s", tab.base, err, text)
}

// poll waits until expression (JavaScript) is truthy, at most 45 s. A
// poll does not survive a navigation (the UI's own, after signing in,
// replaces the page's JavaScript context): it is started again in the
// new page.
func (tab *uiTab) poll(expression string, res any) {
	tab.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		err := chromedp.Run(tab.ctx, chromedp.Poll(expression, res, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		if !navigatedAway(err) || time.Now().After(deadline) {
			tab.fail(err)
		}
	}
}

// navigatedAway reports whether err says the page's JavaScript context
// went away under a command (the page navigated).
func navigatedAway(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") || strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Inspected target navigated or closed")
}

// answers returns the search answers the tab has received so far.
func (tab *uiTab) answers() []*searchAnswer {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return slices.Clone(tab.done)
}

// answer waits until the tab has received, after its first since
// answers, an answer to a search whose URL has want in its query, and
// returns the last such.
func (tab *uiTab) answer(since int, want string) *searchAnswer {
	tab.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var urls []string
		for _, a := range slices.Backward(tab.answers()[since:]) {
			if strings.Contains(a.url, want) {
				return a
			}
			urls = append(urls, a.url)
		}
		if time.Now().After(deadline) {
			tab.t.Fatalf("no answer to a search with %q within 30 s; the answers: %q", want, urls)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allLocal checks every search answer the tab received was flagadmin's.
func (tab *uiTab) allLocal() {
	tab.t.Helper()
	tab.mu.Lock()
	answers := slices.Clone(tab.responses)
	tab.mu.Unlock()
	for _, a := range answers {
		if a.source != "local" || a.status != http.StatusOK && a.status != http.StatusNotModified {
			tab.t.Errorf("%s: %d, %s %q; want flagadmin's answer (local)", a.url, a.status, gateway.SourceHeader, a.source)
		}
	}
	tab.t.Logf("%s: %d event search answers, all served by flagadmin", tab.base, len(answers))
}

// signIn signs in with Unleash's login form.
func (tab *uiTab) signIn(user, password string) {
	tab.t.Helper()
	tab.run(
		chromedp.Navigate(tab.base+"/login"),
		chromedp.WaitVisible(`#username`, chromedp.ByQuery),
		chromedp.SendKeys(`#username`, user, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
		chromedp.Click(`[data-testid=LOGIN_BUTTON]`, chromedp.ByQuery),
	)
	tab.poll(`!location.pathname.startsWith("/login")`, nil)
	tab.t.Logf("%s: signed in as %s [%s]", tab.base, user, tab.elapsed())
}

// elapsed is the time since the tab's browser was started.
func (tab *uiTab) elapsed() time.Duration { return time.Since(tab.started).Round(time.Millisecond) }

// shownLog is what an event log page shows: its count and the ids of the
// events listed, and the search answer they came from.
type shownLog struct {
	path   string
	total  int
	ids    []int64
	served *searchAnswer
}

// eventLogScript reads an event log page once it has loaded: its count
// ("Event log (N)") and the ids listed ("Event id: N"), null while the
// list does not yet hold the count's first page (25).
const eventLogScript = `(() => {
	const text = document.querySelector("main") ? document.querySelector("main").innerText : "";
	const m = text.match(/Event log \((\d+)\)/i);
	if (!m) return null;
	const total = Number(m[1]);
	const ids = [...text.matchAll(/Event id:\s*(\d+)/g)].map(x => Number(x[1]));
	if (ids.length !== Math.min(total, 25) || (total === 0 && !/No events found/i.test(text))) return null;
	return {total, ids};
})()`

// eventLog opens the event log at path (unless the tab is there) and
// waits until it lists the events of an answer to a search with want in
// its query, which must be flagadmin's.
func (tab *uiTab) eventLog(path, want string) shownLog {
	tab.t.Helper()
	var loc string
	tab.poll(`location.pathname`, &loc)
	if loc != path {
		tab.run(chromedp.Navigate(tab.base + path))
	}
	var shown shownLog
	deadline := time.Now().Add(45 * time.Second)
	for {
		var page struct {
			Total int
			IDs   []int64
		}
		tab.poll(eventLogScript, &page)
		shown = shownLog{path: path, total: page.Total, ids: page.IDs}
		a := tab.latest(want)
		if a != nil && a.Total == page.Total && slices.Equal(a.ids(), page.IDs) {
			shown.served = a
			break
		}
		if time.Now().After(deadline) {
			tab.t.Fatalf("%s: the page shows %d events %v, not those of the last answer with %q: %+v", path, page.Total, page.IDs, want, a)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if shown.served.source != "local" {
		tab.t.Errorf("%s: the events shown came from %s, %s %q; want flagadmin's (local)", path, shown.served.url, gateway.SourceHeader, shown.served.source)
	}
	tab.t.Logf("%s: shows the %d events of the answer to %s (%s %q) [%s]", path, shown.total, shown.served.url, gateway.SourceHeader, shown.served.source, tab.elapsed())
	return shown
}

// sameSearch reports whether a and b answer the same search (path and
// query, whichever the server).
func sameSearch(a, b *searchAnswer) bool {
	ua, errA := url.Parse(a.url)
	ub, errB := url.Parse(b.url)
	return errA == nil && errB == nil && ua.Path == ub.Path && ua.RawQuery == ub.RawQuery
}

// latest returns the last answer with want in its URL's query, nil if none.
func (tab *uiTab) latest(want string) *searchAnswer {
	for _, a := range slices.Backward(tab.answers()) {
		if u, err := url.Parse(a.url); err == nil && (want == "" && !strings.Contains(u.RawQuery, "query=") && !strings.Contains(u.RawQuery, "project=") && !strings.Contains(u.RawQuery, "feature=") && !strings.Contains(u.RawQuery, "type=") || want != "" && strings.Contains(u.RawQuery, want)) {
			return a
		}
	}
	return nil
}

// sameAsUnleash checks that what the page shows is Unleash's own answer
// to the same search (asked directly, with the admin token).
func (tab *uiTab) sameAsUnleash(u *unleashserver.Server, shown shownLog) {
	tab.t.Helper()
	q, err := url.Parse(shown.served.url)
	if err != nil {
		tab.t.Fatal(err)
	}
	var direct searchPage
	u.Must(tab.t, http.MethodGet, "/api/admin/search/events?"+q.RawQuery, nil, &direct)
	// Unleash keeps createdAt in microseconds and orders by it alone, so
	// two events of one millisecond come in either order; flagadmin keeps
	// the milliseconds its answers show, and orders such ties by id
	// (newest first, as the search orders them). Unleash's events, in that order:
	slices.SortStableFunc(direct.Events, func(a, b webuiEvent) int {
		if c := strings.Compare(b.CreatedAt, a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	if direct.Total != shown.total || !slices.Equal(direct.ids(), shown.ids) {
		tab.t.Errorf("%s: the page shows %d events %v; Unleash answers %d events %v to %s", shown.path, shown.total, shown.ids, direct.Total, direct.ids(), q.RawQuery)
	}
}

// shownTimeline is what the personal dashboard's event timeline shows:
// its count ("N events"), the times of its events (from the tooltips of
// its markers, sorted), and the search answer it drew.
type shownTimeline struct {
	count    int
	times    []string
	tooltips []string
	served   *searchAnswer
}

// timelineWindow is the timeline's default window ("last 30 min") and
// timelineEnvironment its default environment.
const (
	timelineWindow      = 30 * time.Minute
	timelineEnvironment = "production"
)

var clockTime = regexp.MustCompile(`\d{1,2}:\d{2}:\d{2}\s?[AP]M`)

// timeline opens the personal dashboard, unfolds the event timeline and
// reads it, hovering each of its markers.
func (tab *uiTab) timeline() shownTimeline {
	tab.t.Helper()
	since := len(tab.answers())
	tab.run(chromedp.Navigate(tab.base + "/personal"))
	tab.poll(`!!document.querySelector("#timeline-panel-header")`, nil)
	var expanded string
	tab.run(chromedp.AttributeValue(`#timeline-panel-header`, "aria-expanded", &expanded, nil, chromedp.ByQuery))
	if expanded != "true" {
		tab.run(chromedp.Click(`#timeline-panel-header`, chromedp.ByQuery))
	}
	a := tab.answer(since, "type=IS_ANY_OF")
	// The events the timeline draws: of its environment or none, in its window.
	want := 0
	for _, e := range a.Events {
		at, err := time.Parse(time.RFC3339, e.CreatedAt)
		if err != nil {
			tab.t.Fatalf("timeline event %d: createdAt %q: %v", e.ID, e.CreatedAt, err)
		}
		if (e.Environment == nil || *e.Environment == timelineEnvironment) && time.Since(at) < timelineWindow {
			want++
		}
	}
	var count string
	tab.poll(`(() => { const c = document.querySelector("#timeline-panel-content"); const m = c && c.innerText.match(/(\d+) events?\b/); return m && m[1]; })()`, &count)
	shown := shownTimeline{served: a}
	shown.count, _ = strconv.Atoi(count)
	if shown.count != want {
		tab.t.Errorf("%s: the timeline shows %d events; of the %d served, %d are of %s or none and of the last %s", tab.base, shown.count, len(a.Events), want, timelineEnvironment, timelineWindow)
	}
	// Each marker (an icon on the track; a group of events carries a
	// badge) shows its events in a tooltip while hovered.
	var markers [][]float64
	tab.run(chromedp.Evaluate(`[...document.querySelectorAll("#timeline-panel-content svg")]
		.filter(s => !s.closest(".MuiFormControl-root, [aria-label=Help], .MuiBadge-badge"))
		.map(s => { const r = (s.closest(".MuiBadge-root") || s).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })`, &markers))
	for _, xy := range markers {
		var tip string
		tab.run(chromedp.MouseEvent(input.MouseMoved, xy[0], xy[1]))
		tab.poll(`(() => { const t = document.querySelector("[role=tooltip]"); return t && t.innerText.trim(); })()`, &tip)
		shown.times = append(shown.times, clockTime.FindAllString(tip, -1)...)
		shown.tooltips = append(shown.tooltips, tip)
		tab.run(chromedp.MouseEvent(input.MouseMoved, 1, 1))
		tab.poll(`!document.querySelector("[role=tooltip]")`, nil)
	}
	slices.Sort(shown.times)
	if len(shown.times) != shown.count {
		tab.t.Errorf("%s: the timeline counts %d events, its %d markers show %d (%q)", tab.base, shown.count, len(markers), len(shown.times), shown.times)
	}
	tab.t.Logf("%s: the timeline shows %d events (%d markers), drawn from %d served by %s (%d, %s %q) [%s]", tab.base, shown.count, len(markers), len(a.Events), a.url, a.status, gateway.SourceHeader, a.source, tab.elapsed())
	return shown
}

// fetchSearch runs a search from the page with its session (as the UI's
// own requests do) and returns the answer.
func (tab *uiTab) fetchSearch(path string) searchAnswer {
	tab.t.Helper()
	var res struct {
		Status int
		Source string
		Body   string
	}
	tab.run(chromedp.Evaluate(fmt.Sprintf(`fetch(%q).then(async r => ({status: r.status, source: r.headers.get(%q) || "", body: await r.text()}))`, path, gateway.SourceHeader),
		&res, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	a := searchAnswer{url: path, status: res.Status, source: res.Source}
	if err := json.Unmarshal([]byte(res.Body), &a.searchPage); err != nil {
		tab.t.Fatalf("%s: %v in %s", path, err, res.Body)
	}
	return a
}

// eventCard is an event's card on an event log page: its id and its
// "Group id" row, nil when the card has none.
type eventCard struct {
	ID    int64
	Group *struct{ Text, Href string }
}

func (c eventCard) groupRow() string {
	if c.Group == nil {
		return "no Group id row"
	}
	return fmt.Sprintf("the Group id row %q (a link to %q)", c.Group.Text, c.Group.Href)
}

func cardsText(cards []eventCard) string {
	var b strings.Builder
	for _, c := range cards {
		fmt.Fprintf(&b, "  event %d: %s\n", c.ID, c.groupRow())
	}
	return b.String()
}

// eventCardsScript reads the cards of an event log page once its first
// page (25) is listed (none, while loading): each card's rows ("Event id:", "Group id:", …)
// are the terms and descriptions of a list.
const eventCardsScript = `(() => {
	const main = document.querySelector("main");
	const m = main && main.innerText.match(/Event log \((\d+)\)/i);
	if (!m) return null;
	const cards = [...main.querySelectorAll("dl")].map(dl => {
		const rows = {};
		for (const dd of dl.querySelectorAll(":scope > dd")) {
			const label = dd.previousElementSibling, a = dd.querySelector("a");
			if (label) rows[label.innerText.trim()] = {text: dd.innerText.trim(), href: a ? a.getAttribute("href") : ""};
		}
		return rows;
	}).filter(rows => rows["Event id:"]);
	if (Number(m[1]) === 0 || cards.length !== Math.min(Number(m[1]), 25)) return null; // 0: still loading
	return cards.map(rows => ({id: Number(rows["Event id:"].text), group: rows["Group id:"] || null}));
})()`

// eventCards opens the event log at path (unless the tab is there) and
// reads its cards.
func (tab *uiTab) eventCards(path string) []eventCard {
	tab.t.Helper()
	var loc string
	tab.poll(`location.pathname`, &loc)
	if loc != path {
		tab.route(path)
	}
	var cards []eventCard
	tab.poll(eventCardsScript, &cards)
	tab.t.Logf("%s%s: %d event cards read [%s]", tab.base, path, len(cards), tab.elapsed())
	return cards
}

// route shows path in the tab as the UI's own links do, without loading
// the UI again (which takes seconds on a busy machine).
func (tab *uiTab) route(path string) {
	tab.t.Helper()
	tab.run(chromedp.Evaluate(fmt.Sprintf(`history.pushState(null, "", %q); dispatchEvent(new PopStateEvent("popstate"))`, path), nil))
	tab.poll(fmt.Sprintf(`location.pathname === %q`, path), nil)
}

// shownProjects is what the Projects page shows: its heading and each
// project card (a link to the project; not the open-source build's card
// offering more projects): the link, then the card's text above its
// footer, one line an item (the footer's update time and member count
// are not compared: flagadmin's lastUpdatedAt differs from Unleash's by
// design).
type shownProjects struct {
	Heading string
	Cards   [][]string
}

// projectsScript reads the Projects page once its cards are those of
// the count in its heading (not none, nor the placeholders, shown while
// loading).
const projectsScript = `(() => {
	const root = document.querySelector("main") || document.body;
	const m = root.innerText.match(/Projects \(\d+\)/);
	if (!m) return null;
	const cards = [...root.querySelectorAll('a[href^="/projects/"] > .MuiCard-root')]
		.map(c => [c.parentElement.getAttribute("href"), ...c.firstElementChild.innerText.split("\n").map(l => l.trim()).filter(l => l)]);
	if (!cards.length || cards.length !== Number(m[0].match(/\d+/)[0]) || cards.some(c => c.length < 2 || /^\/projects\/loading\d/.test(c[0]))) return null;
	return {heading: m[0], cards};
})()`

// projects opens the Projects page (loading the UI again when reload)
// and reads it.
func (tab *uiTab) projects(reload bool) shownProjects {
	tab.t.Helper()
	if reload {
		tab.run(chromedp.Navigate(tab.base + "/projects"))
	} else {
		tab.route("/projects")
	}
	var shown shownProjects
	tab.poll(projectsScript, &shown)
	tab.t.Logf("%s/projects: %q read [%s]", tab.base, shown.Heading, tab.elapsed())
	return shown
}
