package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/flagadmin/flagadmin/adapters/gateway"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// fakeUnleash stands for the upstream Unleash in the gateway's tests: its
// session check (GET /api/admin/user, as Unleash 8 answers it), a static
// asset, a route of its own, the two writes (a completion's event reaches
// flagadmin's store after followDelay, as the follower would bring it;
// the service-account delete answers the open-source edition's 404), and
// a route that never answers.
type fakeUnleash struct {
	url         string
	requests    atomic.Int32
	store       func() flagadmin.Store // flagadmin's store, once started
	followDelay time.Duration
	enterprise  string // versionInfo.current.enterprise of its ui-config: "" for the open-source edition
	mu          sync.Mutex
	completedAt map[string]time.Time // feature -> when its event reached the store
}

// unleashSessions are the sessions the fake Unleash accepts: demo users.
var unleashSessions = map[string]string{
	"ada-session":  `{"user":{"id":1,"name":"Ada Admin","email":"ada@example.com","rootRole":1},"permissions":[{"permission":"ADMIN"}],"feedback":[],"splash":{}}`,
	"vic-session":  `{"user":{"id":3,"name":"Vic Viewer","email":"vic@example.com","rootRole":3},"permissions":[],"feedback":[],"splash":{}}`,
	"olga-session": `{"user":{"id":4,"name":"Olga Owner","email":"olga@example.com","rootRole":2},"permissions":[{"permission":"UPDATE_FEATURE","project":"billing"}],"feedback":[],"splash":{}}`,
}

// staticAsset is the fake Unleash's UI bundle.
var staticAsset = strings.Repeat("console.log('unleash');\n", 2000)

func newFakeUnleash(t *testing.T) *fakeUnleash {
	t.Helper()
	u := &fakeUnleash{followDelay: 150 * time.Millisecond, completedAt: map[string]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/admin/user", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("unleash-session")
		if err != nil || unleashSessions[c.Value] == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, unleashSessions[c.Value])
	})
	mux.HandleFunc("GET /api/admin/ui-config", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("unleash-session")
		if r.Header.Get("Authorization") == "" && (err != nil || unleashSessions[c.Value] == "") {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprintf(w, `{"version":"8.2.0","versionInfo":{"current":{"oss":"8.2.0","enterprise":%q},"isLatest":true},"flags":{}}`, u.enterprise)
	})
	mux.HandleFunc("GET /static/app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/javascript")
		io.WriteString(w, staticAsset)
	})
	mux.HandleFunc("GET /api/admin/features", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"version":2,"features":[]}`)
	})
	mux.HandleFunc("POST /api/admin/projects", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /docs/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"openapi":"3.0.3","info":{"title":"Unleash API"}}`)
	})
	mux.HandleFunc("POST /api/admin/projects/{project}/features/{feature}/lifecycle/complete", func(w http.ResponseWriter, r *http.Request) {
		project, feature := r.PathValue("project"), r.PathValue("feature")
		w.WriteHeader(http.StatusOK)
		go func() {
			select { // the follower's lag (this stands for Unleash and its follower)
			case <-time.After(u.followDelay):
			case <-t.Context().Done():
				return
			}
			by := int64(-42)
			ev := flagadmin.Event{Type: "feature-completed", CreatedAt: time.Now().UTC(), CreatedBy: "admin", CreatedByUserID: &by,
				Project: &project, FeatureName: &feature, Data: json.RawMessage(`{"status":"kept","kept":true}`)}
			if err := u.store().Write(t.Context(), &flagadmin.Batch{Events: []flagadmin.Event{ev}}); err != nil {
				if t.Context().Err() == nil {
					t.Errorf("store the completion's event: %v", err)
				}
				return
			}
			u.mu.Lock()
			u.completedAt[feature] = time.Now()
			u.mu.Unlock()
		}()
	})
	mux.HandleFunc("DELETE /api/admin/service-account/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"id":"ae1dd6c6-23ff-4fb5-b390-22011566fbe0","name":"NotFoundError","message":"The path you were looking for (/api/admin/service-account/1) is not available."}`)
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/admin/user", "/api/admin/ui-config", "/health": // flagadmin's questions: sessions, edition, the check at start
		default:
			u.requests.Add(1)
		}
		mux.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	u.url = "http://" + ln.Addr().String()
	return u
}

// startGateway starts the demo world's server in front of upstream.
func startGateway(t *testing.T, upstream string, edit func(*Config)) (string, flagadmin.Store, *syncbuffer.Buffer) {
	t.Helper()
	cfg := memoryConfig()
	cfg.Demo = true
	u, err := parseUpstream(upstream)
	if err != nil {
		t.Fatal(err)
	}
	cfg.GatewayConfig = GatewayConfig{Upstream: u, UpstreamTimeout: 5 * time.Second, FollowWait: 5 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	stderr := &syncbuffer.Buffer{}
	var (
		l     *Listener
		store flagadmin.Store
	)
	app := fxtest.New(t, serveOptions(cfg, stderr), fx.Populate(&l, &store))
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	return "http://" + l.Addr().String(), store, stderr
}

// get sends a GET with the headers and returns the answer and its body.
func get(t *testing.T, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	return send(t, http.MethodGet, url, "", header)
}

func send(t *testing.T, method, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestGatewayRouteSplit: flagadmin's routes are answered locally and
// marked so, with an ETag and 304 on If-None-Match; everything else,
// Unleash's own paths and methods of flagadmin's paths it does not serve,
// reaches Unleash unmarked.
func TestGatewayRouteSplit(t *testing.T) {
	up := newFakeUnleash(t)
	base, store, _ := startGateway(t, up.url, nil)
	up.store = func() flagadmin.Store { return store }

	for _, path := range []string{"/api/admin/search/events?limit=5", "/api/admin/projects", "/health", "/ready", "/docs", "/openapi.json", "/metrics"} {
		resp, body := get(t, base+path, map[string]string{"Authorization": demoAdmin})
		if resp.StatusCode != http.StatusOK || resp.Header.Get(gateway.SourceHeader) != "local" {
			t.Errorf("GET %s: %d, %s %q; want 200 served locally", path, resp.StatusCode, gateway.SourceHeader, resp.Header.Get(gateway.SourceHeader))
			continue
		}
		if path == "/metrics" {
			continue
		}
		tag := resp.Header.Get("ETag")
		if tag == "" {
			t.Errorf("GET %s has no ETag", path)
			continue
		}
		again, rest := get(t, base+path, map[string]string{"Authorization": demoAdmin, "If-None-Match": tag})
		if again.StatusCode != http.StatusNotModified || rest != "" || again.Header.Get(gateway.SourceHeader) != "local" {
			t.Errorf("GET %s If-None-Match: %d %d bytes; want 304 without a body (first answer %d bytes)", path, again.StatusCode, len(rest), len(body))
		}
	}
	if up.requests.Load() != 0 {
		t.Errorf("Unleash got %d requests for flagadmin's routes", up.requests.Load())
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/api/admin/features"}, {http.MethodPost, "/api/admin/projects"}, {http.MethodGet, "/static/app.js"},
		{http.MethodGet, "/docs/openapi.json"}, {http.MethodGet, "/api/admin/no-such-route"},
	} {
		before := up.requests.Load()
		resp, _ := send(t, c.method, base+c.path, "", map[string]string{"Authorization": demoAdmin})
		if up.requests.Load() != before+1 || resp.Header.Get(gateway.SourceHeader) != "" || resp.Header.Get("ETag") != "" {
			t.Errorf("%s %s: not forwarded (%d, %s %q)", c.method, c.path, resp.StatusCode, gateway.SourceHeader, resp.Header.Get(gateway.SourceHeader))
		}
	}
	_, metrics := get(t, base+"/metrics", nil)
	if !strings.Contains(metrics, `route="upstream"`) {
		t.Errorf("the metrics do not count forwarded requests under route=\"upstream\"")
	}
}

// TestGatewayErrors: Unleash unreachable is 502 BadGatewayError, too slow
// 504 GatewayTimeout, both in the API's error body.
func TestGatewayErrors(t *testing.T) {
	closed := "http://" + freeAddr(t) // nothing listens there
	base, _, _ := startGateway(t, closed, nil)
	resp, body := get(t, base+"/api/admin/features", nil)
	wantAPIError(t, resp, body, http.StatusBadGateway, "BadGatewayError")

	up := newFakeUnleash(t)
	base, _, _ = startGateway(t, up.url, func(c *Config) { c.UpstreamTimeout = 300 * time.Millisecond })
	resp, body = get(t, base+"/slow", nil)
	wantAPIError(t, resp, body, http.StatusGatewayTimeout, "GatewayTimeout")
}

// wantAPIError checks an answer is the API's JSON error of status and name.
func wantAPIError(t *testing.T, resp *http.Response, body string, status int, name string) {
	t.Helper()
	var e struct{ ID, Name, Message string }
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &e) != nil ||
		e.Name != name || e.ID == "" || e.Message == "" {
		t.Errorf("got %d %s %s; want %d %s as the API's JSON error", resp.StatusCode, resp.Header.Get("Content-Type"), body, status, name)
	}
}

// TestGatewayReadYourWrites: a forwarded completion is answered once
// flagadmin's copy holds its event, so the next search through flagadmin
// sees it; a copy slower than --follow-wait gives X-Flagadmin-Lag. The
// open-source edition's 404 of a service-account delete comes back as it is.
func TestGatewayReadYourWrites(t *testing.T) {
	up := newFakeUnleash(t)
	base, store, _ := startGateway(t, up.url, nil)
	up.store = func() flagadmin.Store { return store }

	var after []time.Duration // from the event reaching the copy to the answer
	for i := range 10 {
		feature := fmt.Sprintf("flag-%d", i)
		start := time.Now()
		resp, _ := send(t, http.MethodPost, base+"/api/admin/projects/default/features/"+feature+"/lifecycle/complete", `{"status":"kept"}`,
			map[string]string{"Authorization": demoAdmin, "Content-Type": "application/json"})
		answered := time.Now()
		up.mu.Lock()
		stored, ok := up.completedAt[feature]
		up.mu.Unlock()
		if resp.StatusCode != http.StatusOK || resp.Header.Get(gateway.LagHeader) != "" || !ok || answered.Before(stored) {
			t.Fatalf("completion: %d, lag %q, event stored %v (at %v, answered at %v); want 200 after the event reached the copy",
				resp.StatusCode, resp.Header.Get(gateway.LagHeader), ok, stored.Sub(start), answered.Sub(start))
		}
		after = append(after, answered.Sub(stored))
		_, body := get(t, base+"/api/admin/search/events?type=IS:feature-completed&feature=IS:"+feature, map[string]string{"Authorization": demoAdmin})
		if !strings.Contains(body, `"featureName":"`+feature+`"`) {
			t.Errorf("the search after the completion does not show it: %s", body)
		}
	}
	slices.Sort(after)
	t.Logf("answered after the event reached the copy: median %v, max %v (the feed reads the store every 250 ms)", after[len(after)/2], after[len(after)-1])
	if after[len(after)-1] > time.Second {
		t.Errorf("an answer came %v after its event reached the copy, want within 1 s", after[len(after)-1])
	}

	resp, body := send(t, http.MethodDelete, base+"/api/admin/service-account/1", "", map[string]string{"Authorization": demoAdmin})
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "is not available") {
		t.Errorf("service-account delete: %d %s; want Unleash's 404 as it is", resp.StatusCode, body)
	}

	slow := newFakeUnleash(t)
	slow.followDelay = 2 * time.Second
	base, store, _ = startGateway(t, slow.url, func(c *Config) { c.FollowWait = 200 * time.Millisecond })
	slow.store = func() flagadmin.Store { return store }
	resp, _ = send(t, http.MethodPost, base+"/api/admin/projects/default/features/dark-mode/lifecycle/complete", `{"status":"kept"}`,
		map[string]string{"Authorization": demoAdmin})
	if resp.StatusCode != http.StatusOK || resp.Header.Get(gateway.LagHeader) == "" {
		t.Errorf("a slow copy: %d, lag %q; want 200 with %s", resp.StatusCode, resp.Header.Get(gateway.LagHeader), gateway.LagHeader)
	}
}

// TestGatewaySessions: a request with Unleash's session cookie and no
// Authorization header is the user Unleash says, seeing what that user
// sees: a Viewer no private project nor project-less
// events, the private project's owner its events, an admin everything.
// A session Unleash refuses is 401.
func TestGatewaySessions(t *testing.T) {
	up := newFakeUnleash(t)
	base, store, _ := startGateway(t, up.url, nil)
	up.store = func() flagadmin.Store { return store }
	projectsSeen := func(session string) (map[string]bool, bool) {
		t.Helper()
		resp, body := get(t, base+"/api/admin/search/events?limit=1000", map[string]string{"Cookie": "unleash-session=" + session})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("search with %s: %d %s", session, resp.StatusCode, body)
		}
		var page struct {
			Events []struct{ Project *string }
		}
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatal(err)
		}
		seen, projectless := map[string]bool{}, false
		for _, e := range page.Events {
			if e.Project == nil {
				projectless = true
			} else {
				seen[*e.Project] = true
			}
		}
		return seen, projectless
	}
	if seen, projectless := projectsSeen("vic-session"); seen["billing"] || projectless || !seen["default"] {
		t.Errorf("Vic (Viewer) sees %v, project-less %v; want no billing (private) and no project-less events", seen, projectless)
	}
	if seen, projectless := projectsSeen("olga-session"); !seen["billing"] || projectless {
		t.Errorf("Olga (owner of billing) sees %v, project-less %v; want billing and no project-less events", seen, projectless)
	}
	if seen, projectless := projectsSeen("ada-session"); !seen["billing"] || !projectless {
		t.Errorf("Ada (Admin) sees %v, project-less %v; want everything", seen, projectless)
	}
	resp, body := get(t, base+"/api/admin/search/events", map[string]string{"Cookie": "unleash-session=signed-out"})
	wantAPIError(t, resp, body, http.StatusUnauthorized, "AuthenticationRequired")
	resp, body = get(t, base+"/api/admin/projects", nil)
	wantAPIError(t, resp, body, http.StatusUnauthorized, "AuthenticationRequired")
	// A token wins over a cookie.
	if resp, _ := get(t, base+"/api/admin/projects", map[string]string{"Authorization": demoAdmin, "Cookie": "unleash-session=signed-out"}); resp.StatusCode != http.StatusOK {
		t.Errorf("a token with a refused cookie: %d, want 200", resp.StatusCode)
	}
}

// TestGatewaySmuggling: on the real listener, a request with
// Transfer-Encoding chunked and a Content-Length that would take a second
// request as its body goes to Unleash as one request, framed by its
// chunks, and ends its connection: the request hidden behind the chunks
// is neither answered nor sent to Unleash.
func TestGatewaySmuggling(t *testing.T) {
	up := newFakeUnleash(t)
	base, _, _ := startGateway(t, up.url, nil)
	u, _ := url.Parse(base)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const hidden = "GET /api/admin/features HTTP/1.1\r\nHost: x\r\n\r\n"
	fmt.Fprintf(c, "POST /api/admin/features HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: %d\r\n\r\n0\r\n\r\n%s",
		len("0\r\n\r\n"+hidden), hidden)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusMethodNotAllowed { // the fake Unleash's answer to POST /api/admin/features
		t.Errorf("the chunked request got %d, want Unleash's 405", resp.StatusCode)
	}
	if !resp.Close {
		t.Errorf("the connection stays open after a chunked request")
	}
	if resp, err := http.ReadResponse(br, nil); err == nil {
		t.Errorf("the request hidden behind the chunks was answered: %d", resp.StatusCode)
	}
	if n := up.requests.Load(); n != 1 {
		t.Errorf("Unleash got %d requests, want 1", n)
	}
}

// TestGatewayRequestID: a forwarded request has its id as a local one:
// the client's X-Request-Id echoed (or a new one), sent to Unleash with
// the request, and on the log lines of the request, its 502 included.
func TestGatewayRequestID(t *testing.T) {
	var (
		mu   sync.Mutex
		sent []string
	)
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return // the check at start
		}
		mu.Lock()
		sent = append(sent, r.Header.Get("X-Request-Id"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: up}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base, _, logs := startGateway(t, "http://"+ln.Addr().String(), nil)

	resp, _ := get(t, base+"/api/admin/features", map[string]string{"X-Request-Id": "client-id-1"})
	fresh, _ := get(t, base+"/api/admin/features", map[string]string{"X-Request-Id": "not a usable id"})
	mu.Lock()
	got := slices.Clone(sent)
	mu.Unlock()
	if resp.Header.Get("X-Request-Id") != "client-id-1" || fresh.Header.Get("X-Request-Id") == "" || fresh.Header.Get("X-Request-Id") == "not a usable id" ||
		!slices.Equal(got, []string{"client-id-1", fresh.Header.Get("X-Request-Id")}) {
		t.Errorf("answers' ids %q and %q, Unleash got %q; want the client's usable id echoed, a new one for the other, each sent upstream",
			resp.Header.Get("X-Request-Id"), fresh.Header.Get("X-Request-Id"), got)
	}

	closedURL := "http://" + freeAddr(t) // nothing listens there
	base, _, logs = startGateway(t, closedURL, nil)
	resp, body := get(t, base+"/api/admin/features", nil)
	wantAPIError(t, resp, body, http.StatusBadGateway, "BadGatewayError")
	id := resp.Header.Get("X-Request-Id")
	if id == "" {
		t.Fatalf("the 502 has no X-Request-Id")
	}
	var failed, forwarded bool
	for _, line := range strings.Split(logs.String(), "\n") {
		failed = failed || strings.Contains(line, `msg="request failed"`) && strings.Contains(line, "request_id="+id)
		forwarded = forwarded || strings.Contains(line, "msg=forwarded") && strings.Contains(line, "request_id="+id)
	}
	if !failed || !forwarded {
		t.Errorf("the log lines of the 502 with request_id=%s: failure %v, forwarded %v; log:\n%s", id, failed, forwarded, logs.String())
	}
}

// TestGatewaySessionUnleashHangs: while Unleash accepts connections but
// never answers, a session checked a moment ago keeps working from its
// kept answer, and a new session is a 504 GatewayTimeout within the
// session check's bound, not after --upstream-timeout.
func TestGatewaySessionUnleashHangs(t *testing.T) {
	var hang atomic.Bool
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			select {
			case <-r.Context().Done():
			case <-t.Context().Done():
			}
			return
		}
		c, err := r.Cookie("unleash-session")
		if r.URL.Path != "/api/admin/user" || err != nil || unleashSessions[c.Value] == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, unleashSessions[c.Value])
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: up}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	const upstreamTimeout = 30 * time.Second
	base, _, _ := startGateway(t, "http://"+ln.Addr().String(), func(c *Config) { c.UpstreamTimeout = upstreamTimeout })

	search := base + "/api/admin/search/events?limit=1"
	if resp, body := get(t, search, map[string]string{"Cookie": "unleash-session=ada-session"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("search with a session while Unleash answers: %d %s", resp.StatusCode, body)
	}
	hang.Store(true)
	if resp, body := get(t, search, map[string]string{"Cookie": "unleash-session=ada-session"}); resp.StatusCode != http.StatusOK {
		t.Errorf("the session checked a moment ago, Unleash hanging: %d %s; want 200 from the kept answer", resp.StatusCode, body)
	}
	start := time.Now()
	resp, body := get(t, search, map[string]string{"Cookie": "unleash-session=vic-session"})
	took := time.Since(start)
	wantAPIError(t, resp, body, http.StatusGatewayTimeout, "GatewayTimeout")
	// The bound is gateway.DefaultSessionTimeout; the margin is for a busy machine.
	if took > gateway.DefaultSessionTimeout+upstreamTimeout/3 {
		t.Errorf("a new session's check took %v with Unleash hanging; want about %v, far less than --upstream-timeout %v",
			took, gateway.DefaultSessionTimeout, upstreamTimeout)
	}
}

// TestGatewayUpstreamIsItself: a server whose upstream is its own address
// fails start-up with one line saying so (the command exits 1 with it).
func TestGatewayUpstreamIsItself(t *testing.T) {
	addr := freeAddr(t)
	cfg := memoryConfig()
	cfg.Demo = true
	cfg.Addr = addr
	u, err := parseUpstream("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.GatewayConfig = GatewayConfig{Upstream: u, UpstreamTimeout: 5 * time.Second, FollowWait: 5 * time.Second}
	app := fx.New(serveOptions(cfg, io.Discard))
	err = app.Start(t.Context())
	if err == nil {
		app.Stop(t.Context())
		t.Fatal("the server started in front of itself")
	}
	want := "--upstream http://" + addr + " is this flagadmin server (a request forwarded to it comes back): give Unleash's address"
	if got := startupError(err).Error(); got != want {
		t.Errorf("start-up error %q, want %q", got, want)
	}
}

// TestGatewayChecksUpstreamAtStart: at start, the server says in one log
// line whether Unleash answers: a warning when it does not (it may start
// later; serving goes on), an info line with its status when it does.
func TestGatewayChecksUpstreamAtStart(t *testing.T) {
	closedURL := "http://" + freeAddr(t) // nothing listens there
	base, _, logs := startGateway(t, closedURL, nil)
	if !strings.Contains(logs.String(), `level=WARN msg="the upstream does not answer yet; requests forwarded to it get 502 or 504 until it does" upstream=`+closedURL) {
		t.Errorf("no warning that the upstream does not answer:\n%s", logs.String())
	}
	if resp, body := get(t, base+"/health", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("/health with the upstream down: %d %s, want 200", resp.StatusCode, body)
	}
	up := newFakeUnleash(t)
	_, _, logs = startGateway(t, up.url, nil)
	if !strings.Contains(logs.String(), `level=INFO msg="the upstream answers" upstream=`+up.url+" status=404") {
		t.Errorf("no line that the upstream answers:\n%s", logs.String())
	}
}

// TestGatewayProjectListAsUnleash: in front of open-source Unleash, whose
// project list is its default project only (whatever archived says), the
// project list served from the copy is too; in front of Unleash
// Enterprise it lists every project, as a server on its own does.
func TestGatewayProjectListAsUnleash(t *testing.T) {
	ids := func(base string, header map[string]string, query string) []string {
		t.Helper()
		resp, body := get(t, base+"/api/admin/projects"+query, header)
		if resp.StatusCode != http.StatusOK || resp.Header.Get(gateway.SourceHeader) != "local" {
			t.Fatalf("project list: %d %s", resp.StatusCode, body)
		}
		var list struct{ Projects []struct{ ID string } }
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range list.Projects {
			out = append(out, p.ID)
		}
		return out
	}
	admin := map[string]string{"Authorization": demoAdmin}
	oss := newFakeUnleash(t)
	base, _, _ := startGateway(t, oss.url, nil)
	for _, c := range []struct {
		header map[string]string
		query  string
	}{{admin, ""}, {admin, "?archived=true"}, {map[string]string{"Cookie": "unleash-session=ada-session"}, ""}} {
		if got := ids(base, c.header, c.query); !slices.Equal(got, []string{"default"}) {
			t.Errorf("in front of open-source Unleash, %v%s lists %v; want [default] as Unleash's own", c.header, c.query, got)
		}
	}
	if resp, body := get(t, base+"/api/admin/projects?archived=maybe", admin); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("archived=maybe: %d %s, want 400", resp.StatusCode, body)
	}

	enterprise := newFakeUnleash(t)
	enterprise.enterprise = "8.2.0"
	base, _, _ = startGateway(t, enterprise.url, nil)
	if got := ids(base, admin, ""); len(got) < 2 || !slices.Contains(got, "default") {
		t.Errorf("in front of Unleash Enterprise the list is %v; want every active project", got)
	}
}
