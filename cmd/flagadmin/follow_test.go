package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

func TestFollowConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"not a PostgreSQL URL", []string{"serve", "--follow", "mysql://root@db/unleash"}, nil,
			`flagadmin: --follow: "mysql://root@db/unleash" is not a PostgreSQL URL; Unleash's database is postgres://user:pass@host:5432/unleash`},
		{"from the environment", []string{"serve"}, map[string]string{envFollow: "sqlite:x.db"},
			`flagadmin: FLAGADMIN_FOLLOW: "sqlite:x.db" is not a PostgreSQL URL`},
		{"with a seed", []string{"serve", "--follow", "postgres://u@db/unleash", "--seed", "world.json"}, nil,
			"flagadmin: --seed and --follow exclude each other: a store that follows Unleash holds Unleash's world only"},
		{"with the demo", []string{"serve", "--follow", "postgres://u@db/unleash", "--demo"}, nil,
			"flagadmin: --demo and --follow exclude each other"},
		{"with a retention", []string{"serve", "--follow", "postgres://u@db/unleash", "--retention", "90d"}, nil,
			"flagadmin: --retention and --follow exclude each other: the copy keeps Unleash's event ids"},
		{"into the source itself", []string{"serve", "--follow", "postgres://u:secret@db:5432/unleash", "--db", "postgres://u:secret@db/unleash"}, nil,
			"flagadmin: --follow is the database of --db (postgres://u:xxxxx@db/unleash); the copy goes into another database"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.env, c.args...)
			if code != 1 || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "secret") {
				t.Errorf("exit %d, stderr %q; want 1 and one line starting %q", code, stderr, c.want)
			}
		})
	}
	if err := fx.ValidateApp(serveOptions(Config{Addr: "127.0.0.1:0", DB: memoryURL, Follow: "postgres://u@db/unleash"}, io.Discard)); err != nil {
		t.Errorf("fx.ValidateApp with --follow: %v", err)
	}
}

// TestServeFollow starts a server that follows a restored copy of the
// fixture into each kind of store, with the caches of a production server, and checks
// what a user sees: readiness once the copy is loaded, the follow state on
// /health, in the metrics and in "follow status", writes refused with
// 409, and Unleash's changes at flagadmin within their bounds.
func TestServeFollow(t *testing.T) {
	for _, db := range followDBs {
		t.Run(db.name, func(t *testing.T) { serveFollowInto(t, db.url(t)) })
	}
}

func serveFollowInto(t *testing.T, db string) {
	src := unleashfixture.Restore(t)
	cfg := memoryConfig()
	cfg.DB, cfg.Follow, cfg.TokenCacheTTL, cfg.ResultCacheSize = db, src, defaultTokenCacheTTL, defaultResultCacheSize
	base, stderr := startApp(t, cfg)
	waitHTTP(t, base+"/ready", http.StatusOK)
	const admin = "*:*.unleash-insecure-admin-api-token"

	status, body := call(t, http.MethodGet, base+"/health", "", "")
	var health struct{ Follow follow.Status }
	if err := json.Unmarshal(body, &health); err != nil || status != 200 || health.Follow.State != follow.Following || health.Follow.Position != 2297 {
		t.Fatalf("/health: %d %s", status, body)
	}
	status, body = call(t, http.MethodPost, base+"/api/admin/projects/default/features/dark-mode/lifecycle/complete", admin, `{"status":"kept"}`)
	if status != http.StatusConflict || !strings.Contains(string(body), `"name":"ReadOnlyError"`) || strings.Contains(string(body), "postgres@") {
		t.Errorf("a write: %d %s", status, body)
	}
	for _, want := range []string{"flagadmin_follow_lag_seconds ", "flagadmin_follow_lag_events 0", "flagadmin_follow_applied_total 2297", "flagadmin_follow_errors_total 0"} {
		if _, metrics := call(t, http.MethodGet, base+"/metrics", "", ""); !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
	code, stdout, errOut := runCLI(t, nil, "follow", "status", "--url", base)
	for _, want := range []string{"state        following (this server applies)", "position     event id 2297 (0 ids never committed in Unleash)", "lag          0 events, "} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("follow status: exit %d, %q; stdout has no %q:\n%s", code, errOut, want, stdout)
		}
	}

	// Unleash changes: an event, then a token deleted with its event.
	conn, err := pgx.Connect(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var id int64
	if err := conn.QueryRow(context.Background(), `INSERT INTO events (type, created_by, created_by_user_id, data, project, feature_name)
		VALUES ('feature-created', 'admin', -42, '{"name":"e2e"}', 'default', 'e2e') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	took := waitHTTP(t, fmt.Sprintf("%s/api/admin/search/events?id=IS:%d", base, id), http.StatusOK, admin, `"total":1`)
	t.Logf("event %d searchable after %s", id, took.Round(time.Millisecond))
	start := time.Now()
	tx, err := conn.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `DELETE FROM api_tokens WHERE secret = $1`, admin); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `INSERT INTO events (type, created_by, created_by_user_id, data) VALUES ('api-token-deleted', 'admin', -42, '{}')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, base+"/api/admin/projects", http.StatusUnauthorized, admin)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the deleted token authenticated for %s, want under 5 s", took)
	} else {
		t.Logf("the deleted token refused after %s", took.Round(time.Millisecond))
	}
	if db != memoryURL {
		code, stdout, errOut := runCLI(t, nil, "follow", "status", "--db", db)
		if words := strings.Join(strings.Fields(stdout), " "); code != 0 || !strings.Contains(words, "state recorded in the store") ||
			!strings.Contains(words, fmt.Sprintf("position event id %d", id+1)) || !strings.Contains(words, "applied by "+health.Follow.Holder) {
			t.Errorf("follow status --db: exit %d, %q:\n%s", code, errOut, stdout)
		}
	}
	if !strings.Contains(stderr.String(), "following: imported; now following") {
		t.Errorf("log:\n%s", stderr)
	}
}

// waitHTTP polls url (with token, when given) until it answers status and
// its body holds every one of want, and returns how long it took.
func waitHTTP(t *testing.T, url string, status int, tokenAndWant ...string) time.Duration {
	t.Helper()
	token := ""
	if len(tokenAndWant) > 0 {
		token = tokenAndWant[0]
	}
	start := time.Now()
	for {
		got, body := call(t, http.MethodGet, url, token, "")
		ok := got == status
		for _, w := range tokenAndWant[min(1, len(tokenAndWant)):] {
			ok = ok && strings.Contains(string(body), w)
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("GET %s: %d %s; want %d within 15 s", url, got, body, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFollowStatusCommand(t *testing.T) {
	base, _ := startApp(t, memoryConfig())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"follow", "status", "--url", base}, "flagadmin: the server at " + base + " follows no Unleash database (it runs without --follow)"},
		{[]string{"follow", "status", "--db", "memory:"}, "flagadmin: memory: keeps nothing between processes; ask the server with --url"},
		{[]string{"follow", "status", "--url", "http://127.0.0.1:1"}, "flagadmin: cannot reach the server at http://127.0.0.1:1"},
		{[]string{"follow", "stop"}, `flagadmin: unknown subcommand "stop" of flagadmin follow; the only one is status`},
	} {
		code, _, stderr := runCLI(t, nil, c.args...)
		if code != 1 || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, %q; want one line starting %q", c.args, code, stderr, c.want)
		}
	}
	code, stdout, _ := runCLI(t, nil, "follow", "-h")
	if code != 0 || !strings.Contains(stdout, "Usage: flagadmin follow status") {
		t.Errorf("follow -h: %d %s", code, stdout)
	}
}

// TestWritingCommandsRefuseAFollowingStore: the writing commands, given a
// store that follows Unleash, refuse with one line naming the source.
func TestWritingCommandsRefuseAFollowingStore(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	if _, ok, _ := store.AcquireFollowLease(ctx, "t", time.Now(), time.Now().Add(time.Minute)); !ok {
		t.Fatal("lease")
	}
	src := follow.Source{SystemID: "1", Database: "unleash", URL: "postgres://db.internal:5432/unleash"}
	if err := store.LoadFollow(ctx, "t", time.Now(), follow.State{Source: src}, &flagadmin.Batch{}, func(func([]flagadmin.Event) error) error { return nil }); err != nil {
		t.Fatal(err)
	}
	svc := flagadmin.NewService(storecache.New(store, storecache.Options{}), flagadmin.WithReadOnly(store))
	var out, errOut strings.Builder
	c := &cli{getenv: func(string) string { return "" }, stdout: &out, stderr: &errOut}
	err := c.createAccount(ctx, svc, Config{DB: "postgres://copy"}, flagadmin.User{Name: "Zoe", RootRole: flagadmin.RoleViewer}, false, "", nil)
	want := "read-only: the store is a copy of the Unleash database postgres://db.internal:5432/unleash, kept by following it; make the change in Unleash"
	if err == nil || !strings.Contains(oneLine(err), want) || strings.Contains(oneLine(err), "\n") {
		t.Errorf("user create: got %v, want one line saying %q", err, want)
	}
	_, _, err = svc.CreateAPIToken(ctx, flagadmin.System, flagadmin.NewAPIToken{Type: flagadmin.TokenAdmin})
	if got := oneLine(tokenError(err)); !strings.HasPrefix(got, "cannot create the token: "+want) {
		t.Errorf("token create: got %q", got)
	}
	if got := seedError("seed file w.json", svc.ApplySeed(ctx, &flagadmin.Seed{Projects: []flagadmin.Project{{ID: "p", Name: "P", Mode: flagadmin.ModeOpen}}})); !strings.HasPrefix(oneLine(got), "cannot load seed file w.json: "+want) {
		t.Errorf("seed: got %q", oneLine(got))
	}
}

// TestFollowedEventsReachStreamsExportsAndWebhooks: events that Unleash
// commits reach a live stream, the export, keyset paging and a webhook
// sink as events flagadmin wrote itself do, with Unleash's ids, in order,
// without the id of a transaction that rolled back; the sink starts after
// the imported history.
func TestFollowedEventsReachStreamsExportsAndWebhooks(t *testing.T) {
	src := unleashfixture.Restore(t)
	var mu sync.Mutex
	var delivered []string
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		delivered = append(delivered, r.Header.Get("X-Flagadmin-Event-Id"))
		mu.Unlock()
	}))
	defer sink.Close()
	cfg := memoryConfig()
	cfg.Follow = src
	cfg.WebhookSinks = []flagadmin.WebhookSink{{Name: "audit", URL: sink.URL, Secret: "s3cret"}}
	base, _ := startApp(t, cfg)
	waitHTTP(t, base+"/ready", http.StatusOK)
	const admin = "*:*.unleash-insecure-admin-api-token"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// From the end of the imported history (the live feed may still be
	// reading it when the server turns ready).
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/admin/events/stream?afterId=2297", nil)
	req.Header.Set("Authorization", admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	streamed := make(chan string, 100)
	var lines syncbuffer.Buffer
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			fmt.Fprintln(&lines, sc.Text())
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok && id != "2297" {
				streamed <- id
			}
		}
	}()

	conn, err := pgx.Connect(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	insert := `INSERT INTO events (type, created_by, created_by_user_id, data, project, feature_name) VALUES ('feature-updated', 'admin', -42, '{}', 'default', 'dark-mode') RETURNING id`
	var a, b, c int64
	if err := conn.QueryRow(ctx, insert).Scan(&a); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, insert).Scan(&b); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, insert).Scan(&c); err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprint(a), fmt.Sprint(c)}
	for _, id := range want {
		select {
		case got := <-streamed:
			if got != id {
				t.Fatalf("streamed id %s, want %s (the ids %v, %d rolled back)", got, id, want, b)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("id %s not streamed within 5 s; the stream:\n%s", id, &lines)
		}
	}
	waitFor := func(what string, done func() bool) {
		t.Helper()
		for start := time.Now(); !done(); time.Sleep(20 * time.Millisecond) {
			if time.Since(start) > 15*time.Second {
				t.Fatalf("%s: not within 15 s", what)
			}
		}
	}
	waitFor("the webhook deliveries", func() bool { mu.Lock(); defer mu.Unlock(); return len(delivered) >= 2 })
	time.Sleep(200 * time.Millisecond) // no more than these
	mu.Lock()
	if fmt.Sprint(delivered) != fmt.Sprint(want) {
		t.Errorf("the sink got %v, want %v (the history imported before it started is not sent)", delivered, want)
	}
	mu.Unlock()
	status, body := call(t, http.MethodGet, base+"/api/admin/events/export?afterId=2297", admin, "")
	var exported []string
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var e struct{ ID int64 }
		if err := json.Unmarshal([]byte(line), &e); err == nil {
			exported = append(exported, fmt.Sprint(e.ID))
		}
	}
	if status != http.StatusOK || fmt.Sprint(exported) != fmt.Sprint(want) {
		t.Errorf("export after 2297: %d %v, want %v", status, exported, want)
	}
	// Keyset paging walks the followed events like any others.
	page := "/api/admin/search/events?limit=1&feature=IS:dark-mode&type=IS:feature-updated"
	var walked []string
	for page != "" && len(walked) < 3 {
		req, _ := http.NewRequest(http.MethodGet, base+page, nil)
		req.Header.Set("Authorization", admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Events []struct{ ID int64 } }
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if err != nil || len(p.Events) != 1 {
			t.Fatalf("page %s: %v %+v", page, err, p)
		}
		walked = append(walked, fmt.Sprint(p.Events[0].ID))
		page = ""
		if link := resp.Header.Get("Link"); strings.HasSuffix(link, `>; rel="next"`) {
			page = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		}
	}
	if len(walked) < 2 || walked[0] != want[1] || walked[1] != want[0] {
		t.Errorf("keyset walk: %v, want %s then %s first", walked, want[1], want[0])
	}
}

// TestServeFollowRefusesASourceThatCannotBeFollowed: a --follow source
// that answers but can never be followed as configured (not an Unleash
// database, a database that does not exist, a role refused) ends serve at
// start with one line, not a server that runs without a copy.
func TestServeFollowRefusesASourceThatCannotBeFollowed(t *testing.T) {
	src := unleashfixture.ReadOnly(t)
	with := func(change func(*url.URL)) string {
		u, err := url.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		change(u)
		return u.String()
	}
	for _, c := range []struct{ name, source, want string }{
		{"not an Unleash database", dbtest.Postgres(t), "flagadmin: --follow: not an Unleash database: "},
		{"a database that does not exist", with(func(u *url.URL) { u.Path = "/no_such_database_here" }),
			`flagadmin: --follow: the Unleash database refused the connection at postgres://postgres@127.0.0.1:5432/no_such_database_here: database "no_such_database_here" does not exist`},
		{"a role that does not exist", with(func(u *url.URL) { u.User = url.User("no_such_role_here") }),
			`role "no_such_role_here" does not exist`},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A server that starts all the same runs until ctx ends.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, errOut syncbuffer.Buffer
			code := run(ctx, []string{"serve", "--db", memoryURL, "--addr", "127.0.0.1:0", "--follow", c.source},
				func(string) string { return "" }, &out, &errOut)
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			last := lines[len(lines)-1]
			if code != 1 || ctx.Err() != nil || !strings.HasPrefix(last, "flagadmin: --follow: ") || !strings.Contains(last, c.want) {
				t.Errorf("exit %d; stderr:\n%s\nwant exit 1 at start and a last line with %q", code, errOut.String(), c.want)
			}
			if n := strings.Count(errOut.String(), "flagadmin: "); n != 1 || strings.Contains(errOut.String(), "following stopped") {
				t.Errorf("stderr has %d error lines, want 1:\n%s", n, errOut.String())
			}
		})
	}
}

// TestServeFollowUnreachableSourceBeforeTheCopy: a --follow source that
// cannot be reached while the store holds no copy yet: the server runs and
// retries, /ready, the API (503, not 401) and "follow status" say so,
// naming the error once.
func TestServeFollowUnreachableSourceBeforeTheCopy(t *testing.T) {
	cfg := memoryConfig()
	cfg.Follow = "postgres://postgres@127.0.0.1:1/unleash?sslmode=disable"
	base, _ := startApp(t, cfg)
	const want = "The copy of the Unleash database is not loaded yet: the import that starts following cannot run: the Unleash database cannot be reached: "
	waitHTTP(t, base+"/ready", http.StatusServiceUnavailable, "", want)
	status, body := call(t, http.MethodGet, base+"/api/admin/search/events", "*:*.unleash-insecure-admin-api-token", "")
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), `"name":"ServiceUnavailable"`) || !strings.Contains(string(body), want) {
		t.Errorf("an API call: %d %s; want 503 ServiceUnavailable saying %q", status, body, want)
	}
	code, stdout, _ := runCLI(t, nil, "follow", "status", "--url", base)
	words := strings.Join(strings.Fields(stdout), " ")
	if code != 0 || !strings.Contains(words, "state paused copy not loaded yet: the import that starts following cannot run: the Unleash database cannot be reached: ") ||
		strings.Count(words, "cannot be reached") != 1 || strings.Contains(words, "stopped") || strings.Contains(words, "position") {
		t.Errorf("follow status: exit %d:\n%s", code, stdout)
	}
}
