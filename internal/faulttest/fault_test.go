package faulttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/faultproxy"
)

// deadline is the storage deadline of the tests: short, so that a stall
// is answered quickly.
const deadline = 500 * time.Millisecond

// slack is what an answer may take beyond the deadline: 503 within it plus 1 s.
const slack = time.Second

const adminToken = "*:*.fault-admin"

// features is how many features the writers complete, each owned by one writer.
const features = 8

// seed is the world of the tests: one project with features, an admin token.
func seed() string {
	var fs []string
	for i := range features {
		fs = append(fs, fmt.Sprintf(`{"name": "f%d", "project": "web", "type": "release", "createdAt": "2025-01-02T00:00:00Z"}`, i))
	}
	return `{
  "projects": [{"id": "web", "name": "Web", "mode": "open", "createdAt": "2025-01-01T00:00:00Z"}],
  "features": [` + strings.Join(fs, ",") + `],
  "apiTokens": [{"secret": "` + adminToken + `", "type": "admin", "name": "admin"}]
}`
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is the HTTP handler over a store whose database is behind a proxy.
type env struct {
	proxy *faultproxy.Proxy
	store *bunstore.Store
	srv   *httptest.Server
	logs  *syncBuffer
}

// engines are the databases behind the proxy; each skips without a server.
var engines = []struct {
	name string
	url  func(testing.TB) string
}{
	{"Postgres", dbtest.Postgres},
	{"MySQL", dbtest.MySQL},
}

// newEnv opens a store on rawURL through a proxy, seeds it, and serves it
// with the storage deadline d (0: none) on the store and the transport.
func newEnv(t *testing.T, rawURL string, d time.Duration) *env {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	u.Host = proxy.Addr()
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	store, err := bunstore.Open(ctx, u.String(), bunstore.WithTimeout(d), bunstore.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := flagadmin.NewService(store).LoadSeed(ctx, strings.NewReader(seed())); err != nil {
		t.Fatal(err)
	}
	// As the server runs it, with the result cache; without the token
	// cache, so that every request checks its token in the database.
	cached := storecache.New(store, storecache.Options{ResultCacheSize: storecache.DefaultResultCacheSize})
	svc := flagadmin.NewService(cached)
	api := httpapi.New(svc, httpapi.Config{Logger: log, StorageTimeout: d})
	srv := httptest.NewServer(storecache.Scope(api.Handler()))
	t.Cleanup(srv.Close)
	return &env{proxy: proxy, store: store, srv: srv, logs: logs}
}

// result is one answered request.
type result struct {
	kind       string // "complete", "search" or "projects"
	feature    string
	status     string // the outcome a completion asked for
	value      string
	start      time.Time
	took       time.Duration
	code       int
	retryAfter string
	requestID  string
	errorID    string
	err        error
}

// do sends one request of kind and returns what came back.
func (e *env) do(ctx context.Context, client *http.Client, kind, feature, status, value string) result {
	r := result{kind: kind, feature: feature, status: status, value: value, start: time.Now()}
	var req *http.Request
	switch kind {
	case "complete":
		body := fmt.Sprintf(`{"status": %q, "statusValue": %q}`, status, value)
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/api/admin/projects/web/features/"+feature+"/lifecycle/complete", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	case "search":
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/api/admin/search/events?type=IS:feature-completed&limit=5", nil)
	default:
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/api/admin/projects", nil)
	}
	req.Header.Set("Authorization", adminToken)
	resp, err := client.Do(req)
	r.took = time.Since(r.start)
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r.code, r.retryAfter, r.requestID = resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("X-Request-Id")
	if resp.StatusCode >= 400 {
		var e struct{ ID, Name string }
		_ = json.Unmarshal(body, &e)
		r.errorID = e.ID
		if resp.StatusCode != http.StatusServiceUnavailable || e.Name != "ServiceUnavailable" {
			r.err = fmt.Errorf("%d %s", resp.StatusCode, body)
		}
	}
	return r
}

// phase is a span of the run in one proxy mode.
type phase struct {
	mode faultproxy.Mode
	for_ time.Duration
}

// TestFaults runs concurrent lifecycle completions, event searches and
// project lists while the database stalls and then goes away, and checks
// the answers, the recovery, the data and the log.
func TestFaults(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			e := newEnv(t, engine.url(t), deadline)
			client := &http.Client{Timeout: 10 * time.Second}
			// Every answer comes within the deadline and a second; on
			// MySQL, a COMMIT the server stops answering is bounded by the
			// connection's I/O deadline (bunstore.WithTimeout) instead of
			// the context, so such a request may take twice the deadline.
			bound := deadline + slack
			if engine.name == "MySQL" {
				bound = max(bound, 2*deadline+100*time.Millisecond)
			}
			var (
				mu      sync.Mutex
				results []result
				stop    = make(chan struct{})
				wg      sync.WaitGroup
			)
			record := func(r result) {
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
			const writers = 4
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 0; ; n++ {
						select {
						case <-stop:
							return
						default:
						}
						f := fmt.Sprintf("f%d", w+writers*(n%(features/writers)))
						status := []string{"kept", "discarded"}[n%2]
						record(e.do(context.Background(), client, "complete", f, status, fmt.Sprintf("w%d-%d", w, n)))
					}
				}()
			}
			for _, kind := range []string{"search", "projects", "search"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						record(e.do(context.Background(), client, kind, "", "", ""))
					}
				}()
			}

			// The run: healthy, frozen, healthy, gone, healthy.
			type span struct {
				mode       faultproxy.Mode
				start, end time.Time
			}
			var spans []span
			for _, p := range []phase{
				{faultproxy.Pass, 300 * time.Millisecond},
				{faultproxy.Stall, 2 * time.Second},
				{faultproxy.Pass, 700 * time.Millisecond},
				{faultproxy.Cut, 700 * time.Millisecond},
				{faultproxy.Pass, 700 * time.Millisecond},
			} {
				e.proxy.Set(p.mode)
				s := span{mode: p.mode, start: time.Now()}
				time.Sleep(p.for_)
				s.end = time.Now()
				spans = append(spans, s)
			}
			close(stop)
			wg.Wait()

			// Every answer is a 200 or a 503 with Retry-After, within the
			// deadline and a second.
			var stalled, cut, longest time.Duration
			counts := map[string]int{}
			for _, r := range results {
				longest = max(longest, r.took)
				if r.err != nil {
					t.Errorf("%s %s after %v: %v; its log: %s", r.kind, r.feature, r.took, r.err, logOf(e.logs.String(), r.requestID))
					continue
				}
				counts[fmt.Sprintf("%s %d", r.kind, r.code)]++
				if r.code == http.StatusServiceUnavailable && r.retryAfter == "" {
					t.Errorf("%s: 503 without Retry-After", r.kind)
				}
				if r.took > bound {
					t.Errorf("%s answered %d after %v, want at most %v (deadline %v)", r.kind, r.code, r.took, bound, deadline)
				}
				// A request that began and ended within the stall (or the
				// cut) cannot have reached the database: it must be a 503.
				for _, s := range spans[1:4:4] {
					if s.mode == faultproxy.Pass || r.start.Before(s.start) || r.start.Add(r.took).After(s.end) {
						continue
					}
					if r.code != http.StatusServiceUnavailable {
						t.Errorf("%s during %v: got %d, want 503", r.kind, s.mode, r.code)
					}
					if s.mode == faultproxy.Stall {
						stalled = max(stalled, r.took)
					} else {
						cut = max(cut, r.took)
					}
				}
			}
			t.Logf("answers: %v; longest %v; longest 503 during the stall %v, during the cut %v (deadline %v)", counts, longest, stalled, cut, deadline)
			if stalled == 0 {
				t.Errorf("no request was answered during the stall")
			}
			if stalled < deadline-50*time.Millisecond {
				t.Errorf("the longest answer during the stall took %v, less than the deadline %v: the stall was not felt", stalled, deadline)
			}

			// Recovery: once the proxy passes again, every kind of request succeeds.
			for _, kind := range []string{"projects", "search", "complete"} {
				r := e.do(context.Background(), client, kind, "f0", "kept", "after")
				if r.err != nil || r.code != http.StatusOK {
					t.Errorf("%s after recovery: got %d %v, want 200; its log: %s", kind, r.code, r.err, logOf(e.logs.String(), r.requestID))
				}
				if kind == "complete" {
					record(r)
				}
			}
			checkData(t, e.store, results)
			checkLog(t, e.logs.String(), results)
		})
	}
}

// logOf returns the log lines of the request with id.
func logOf(logs, id string) string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if id != "" && strings.Contains(l, id) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// checkData checks that every acknowledged completion has its event, and
// that the newest feature-completed event of each feature describes its
// current lifecycle: no change without its event, no event without its
// change.
func checkData(t *testing.T, store *bunstore.Store, results []result) {
	t.Helper()
	ctx := context.Background()
	page, err := store.SearchEvents(ctx, flagadmin.EventQuery{Types: []string{"feature-completed"}, Limit: flagadmin.SearchMaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total > len(page.Events) {
		t.Fatalf("%d events, more than one page: make the run shorter", page.Total)
	}
	type outcome struct{ status, value string }
	recorded := map[string]map[outcome]bool{}
	newest := map[string]outcome{} // events are newest first
	for _, ev := range page.Events {
		var d struct {
			Status      string `json:"status"`
			StatusValue string `json:"statusValue"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil || ev.FeatureName == nil {
			t.Fatalf("event %d: %v %s", ev.ID, err, ev.Data)
		}
		f, o := *ev.FeatureName, outcome{d.Status, d.StatusValue}
		if recorded[f] == nil {
			recorded[f] = map[outcome]bool{}
			newest[f] = o
		}
		recorded[f][o] = true
	}
	acked := 0
	for _, r := range results {
		if r.kind == "complete" && r.code == http.StatusOK {
			acked++
			if !recorded[r.feature][outcome{r.status, r.value}] {
				t.Errorf("completion of %s as %s %s was acknowledged, but has no event", r.feature, r.status, r.value)
			}
		}
	}
	for i := range features {
		name := fmt.Sprintf("f%d", i)
		f, err := store.Feature(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		got := outcome{f.Lifecycle.Status, f.Lifecycle.StatusValue}
		if n, ok := newest[name]; (ok || f.Lifecycle.Stage == "completed") && n != got {
			t.Errorf("%s: lifecycle %s %+v, but its newest feature-completed event says %+v", name, f.Lifecycle.Stage, got, n)
		}
	}
	t.Logf("%d acknowledged completions, %d feature-completed events", acked, len(page.Events))
	if acked == 0 {
		t.Errorf("no completion was acknowledged")
	}
}

// checkLog checks that each failed request is logged once, with its request
// id and the error id of its body, and nothing else is logged as an error.
func checkLog(t *testing.T, logs string, results []result) {
	t.Helper()
	lines := map[string][]map[string]any{}
	for _, raw := range strings.Split(strings.TrimSpace(logs), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		if l["msg"] == "request" {
			continue // the access log
		}
		id, _ := l["request_id"].(string)
		if id == "" && l["level"] != "DEBUG" {
			t.Errorf("a log line without a request id: %s", raw)
		}
		lines[id] = append(lines[id], l)
	}
	for _, r := range results {
		if r.code != http.StatusServiceUnavailable {
			continue
		}
		got := lines[r.requestID]
		if len(got) != 1 {
			t.Errorf("request %s (503): %d log lines about it, want 1: %v", r.requestID, len(got), got)
			continue
		}
		if got[0]["error_id"] != r.errorID {
			t.Errorf("request %s: logged error id %v, the body's is %s", r.requestID, got[0]["error_id"], r.errorID)
		}
	}
}

// TestClientGoneCancelsStorageWork checks that a client that gives up
// ends the storage work of its request, without any deadline: the request
// stalled on the frozen database ends at once (logged as canceled by the
// client), and the driver gives up its connection. go-sql-driver/mysql
// closes it at once. pgx asks the server to cancel the statement (a
// CancelRequest, on a new connection) and closes the connection when the
// server answers, or after 15 s: against a frozen server, both linger.
func TestClientGoneCancelsStorageWork(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			closesAtOnce := engine.name == "MySQL"
			e := newEnv(t, engine.url(t), 0)
			client := &http.Client{}
			if r := e.do(context.Background(), client, "projects", "", "", ""); r.code != http.StatusOK {
				t.Fatalf("before the stall: got %d %v", r.code, r.err)
			}
			e.proxy.Set(faultproxy.Stall)
			defer e.proxy.Set(faultproxy.Pass)
			before := e.proxy.Conns()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan result)
			go func() { done <- e.do(ctx, client, "search", "", "", "") }()
			time.Sleep(300 * time.Millisecond)
			during := e.proxy.Conns()
			cancel()
			<-done
			gone := time.Now()
			// The server's log shows the request ended: canceled by the client.
			var waited time.Duration
			for !strings.Contains(e.logs.String(), "request canceled by the client") {
				if waited = time.Since(gone); waited > 2*time.Second {
					t.Fatalf("the request still runs %v after its client left:\n%s", waited, e.logs)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if !closesAtOnce {
				// pgx: a new connection carries the CancelRequest.
				for e.proxy.Conns() <= during {
					if time.Since(gone) > 2*time.Second {
						t.Fatalf("connections through the proxy: %d during the request, %d after the client left; want the cancel request's", during, e.proxy.Conns())
					}
					time.Sleep(10 * time.Millisecond)
				}
				t.Logf("the request ended %v after its client left; connections %d before, %d during, %d after (the cancel request)", waited, before, during, e.proxy.Conns())
				return
			}
			// Its connection is closed (the idle ones stay).
			for e.proxy.Conns() >= during {
				if time.Since(gone) > 2*time.Second {
					t.Fatalf("connections through the proxy: %d before the request, %d during it, still %d after the client left", before, during, e.proxy.Conns())
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("the request ended %v after its client left; connections %d before, %d during, %d after", waited, before, during, e.proxy.Conns())
		})
	}
}
