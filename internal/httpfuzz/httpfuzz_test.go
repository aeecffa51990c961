package httpfuzz_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/httpfuzz"
)

// demoSeed is the world of flagadmin serve --demo.
const demoSeed = "../../cmd/flagadmin/demo.json"

// demoWorld is what generated requests address in the demo world.
var demoWorld = httpfuzz.World{
	Tokens: []string{
		"*:*.demo-admin-token", "user:demo-ada-token", "user:demo-eve-token", "user:demo-vic-token", "user:demo-ci-bot-token",
		"default:development.demo-client-token", "default:development.demo-frontend-token",
	},
	Projects:        []string{"default", "checkout", "billing", "legacy-web", "nope"},
	Features:        []string{"dark-mode", "new-checkout", "invoice-v3", "old-homepage", "search-v2", "nope"},
	ServiceAccounts: []string{"10", "11", "1", "999"},
}

// stores are the stores the harness runs against: each returns a fresh,
// empty store, or skips.
var stores = []struct {
	name string
	open func(t *testing.T) flagadmin.Store
}{
	{"memory", func(t *testing.T) flagadmin.Store { return memstore.New() }},
	{"sqlite", func(t *testing.T) flagadmin.Store { return openSQL(t, dbtest.SQLite(t)) }},
	{"postgres", func(t *testing.T) flagadmin.Store { return openSQL(t, dbtest.Postgres(t)) }},
}

// openSQL opens a bunstore store on url, closed when t ends.
func openSQL(t *testing.T, url string) flagadmin.Store {
	t.Helper()
	s, err := bunstore.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s: %v", strings.SplitN(url, ":", 2)[0], err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// serve loads the demo world into store and returns the production
// handler over it, with the caches and the storage deadline flagadmin
// serve uses.
func serve(t *testing.T, store flagadmin.Store) http.Handler {
	t.Helper()
	seed, err := os.ReadFile(demoSeed)
	if err != nil {
		t.Fatal(err)
	}
	vs, ok := store.(flagadmin.VersionedStore)
	if !ok {
		t.Fatalf("%T is not a flagadmin.VersionedStore", store)
	}
	cached := storecache.New(vs, storecache.Options{ResultCacheSize: storecache.DefaultResultCacheSize, TokenTTL: storecache.DefaultTokenTTL})
	svc := flagadmin.NewService(cached)
	if err := svc.LoadSeed(context.Background(), bytes.NewReader(seed)); err != nil {
		t.Fatalf("load the demo world: %v", err)
	}
	cfg := httpapi.Config{BodyReadTimeout: time.Second, StorageTimeout: 5 * time.Second, BodyCache: cached.Bodies()}
	return storecache.Scope(httpapi.New(svc, cfg).Handler())
}

// fuzzRequests is how many generated requests TestGeneratedRequests sends
// to each store; -short sends a tenth.
const fuzzRequests = 20_000

// burstClients is how many clients send the generated requests at once.
const burstClients = 4

// stallLimit: a burst in which no request is answered for this long has
// wedged the server.
const stallLimit = time.Minute

// answer is the outcome of one generated request.
type answer struct {
	served bool // false: Go's request parser refused it
	code   int
	err    error // the failed check
}

// burst sends raws to h from burstClients goroutines at once and returns
// their answers, in the order of raws. It stops sending after maxFailures
// failed checks, and fails t when no request is answered for stallLimit.
func burst(t *testing.T, h http.Handler, raws [][]byte, maxFailures int64) []answer {
	t.Helper()
	answers := make([]answer, len(raws))
	var next, answered, failed atomic.Int64
	var wg sync.WaitGroup
	for range burstClients {
		wg.Go(func() {
			for failed.Load() < maxFailures {
				i := next.Add(1) - 1
				if i >= int64(len(raws)) {
					return
				}
				if w, req, ok := httpfuzz.Serve(h, raws[i]); ok {
					answers[i] = answer{served: true, code: w.Code, err: httpfuzz.Check(w, req.Method, req.RequestURI)}
					if answers[i].err != nil {
						failed.Add(1)
					}
				}
				answered.Add(1)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(stallLimit)
	defer tick.Stop()
	for seen := int64(-1); ; {
		select {
		case <-done:
			return answers
		case <-tick.C:
			n := answered.Load()
			if n == seen {
				for _, a := range answers {
					if a.err != nil {
						t.Error(a.err)
					}
				}
				t.Fatalf("the server is wedged: no request answered for %v after %d answers", stallLimit, n)
			}
			seen = n
		}
	}
}

// TestGeneratedRequests sends fuzzRequests random requests from a fixed
// seed to the whole handler over each store, from burstClients clients
// at once, and checks every answer (httpfuzz.Check), then that the server
// still answers /health and an event search.
func TestGeneratedRequests(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			h := serve(t, st.open(t))
			n := fuzzRequests
			if testing.Short() {
				n /= 10
			}
			gen := httpfuzz.NewGenerator(1, demoWorld)
			raws := make([][]byte, n)
			for i := range raws {
				raws[i] = gen.Next()
			}
			start := time.Now()
			answers := burst(t, h, raws, 10)
			served, refused, fivexx, failures := 0, 0, 0, 0
			statuses := map[int]int{}
			for i, a := range answers {
				if !a.served {
					refused++
					continue
				}
				served++
				statuses[a.code]++
				if a.code >= 500 {
					fivexx++
				}
				if a.err != nil {
					failures++
					t.Errorf("%v\nrequest: %.500q", a.err, raws[i])
				}
			}
			t.Logf("%s: %d requests generated, %d served by the handler, %d refused by Go's request parser, %d answered 5xx, %d failed checks, in %v; statuses %v",
				st.name, n, served, refused, fivexx, failures, time.Since(start).Round(time.Millisecond), statuses)
			for _, raw := range []string{
				"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
				"GET /api/admin/search/events HTTP/1.1\r\nHost: x\r\nAuthorization: user:demo-vic-token\r\n\r\n",
			} {
				if w, _, _ := httpfuzz.Serve(h, []byte(raw)); w == nil || w.Code != http.StatusOK {
					t.Errorf("%.40q after fuzzing: %v", raw, w)
				}
			}
		})
	}
}

// seedRequests are raw requests for the native fuzz target's corpus:
// refused texts and numbers, and the largest offset.
var seedRequests = []struct{ method, target, token, accept, contentType, body string }{
	{"GET", "/api/admin/search/events?feature=IS:x%00", "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/search/events?project=IS:%ff", "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/search/events?environment=IS:%ff", "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/search/events?feature=IS:%c0%80", "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/search/events?limit=%ZZ", "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/search/events?query=%zz", "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/search/events?limit=", "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/search/events?type=IS:a&type=IS:b", "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/search/events?query=", "user:demo-vic-token", "json", "", ""},
	{"GET", "/api/admin/projects?archived=%ZZ", "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/projects?archived=true", "user:demo-vic-token", "json", "", ""},
	{"GET", "//api/admin/projects", "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/projects/../projects", "user:demo-vic-token", "", "", ""},
	{"DELETE", "/api/admin/service-account/.", "*:*.demo-admin-token", "", "", ""},
	{"DELETE", "/api/admin/service-account/%00", "*:*.demo-admin-token", "", "", ""},
	{"DELETE", "/api/admin/service-account/11", "*:*.demo-admin-token", "text/html", "", ""},
	{"POST", "/api/admin/events/search", "user:demo-vic-token", "", "application/json", `{"project":"x\u0000"}`},
	{"POST", "/api/admin/events/search", "user:demo-vic-token", "", "application/json", `{"feature":"x\u0000"}`},
	{"POST", "/api/admin/events/search", "user:demo-vic-token", "", "application/json", "{\"project\":\"\xff\"}"},
	{"POST", "/api/admin/events/search", "user:demo-vic-token", "", "application/json", `{"limit":10.0}`},
	{"POST", "/api/admin/events/search", "user:demo-vic-token", "", "application/json", `{"limit":1e2}`},
	{"POST", "/api/admin/events/search", "user:demo-vic-token", "", "application/json", `{"limit":10.5}`},
	{"POST", "/api/admin/events/search", "user:demo-vic-token", "", "application/json", `{"limit":`},
	{"POST", "/api/admin/events/search", "user:demo-vic-token", "json", "text/plain", `{}`},
	{"POST", "/api/admin/projects/default/features/dark-mode/lifecycle/complete", "*:*.demo-admin-token", "", "", `{"status":"kept","statusValue":"a\u0000"}`},
	{"POST", "/api/admin/projects/x%00/features/dark-mode/lifecycle/complete", "*:*.demo-admin-token", "", "", `{"status":"kept"}`},
	{"POST", "/api/admin/projects/default/features/x%00/lifecycle/complete", "*:*.demo-admin-token", "", "", `{"status":"kept"}`},
	{"POST", "/api/admin/projects/default/features/dark-mode/lifecycle/complete", "user:demo-eve-token", "", "", `{"status":"kept","extra":1}`},
	{"GET", "/api/admin/" + strings.Repeat("z", 3000), "user:demo-vic-token", "", "", ""},
	{"GET", "/api/admin/search/events?offset=9223372036854775807", "user:demo-vic-token", "", "", ""},
	{"POST", "/api/admin/events/search", "user:demo-vic-token", "", "application/json", `{"offset":9223372036854775807}`},
}

// FuzzRequest fuzzes one request's method, target, token, Accept,
// Content-Type and body against the whole handler over a memory store,
// with seedRequests as its seed corpus. Without -fuzz, go test
// runs the corpus.
func FuzzRequest(f *testing.F) {
	for _, s := range seedRequests {
		f.Add(s.method, s.target, s.token, s.accept, s.contentType, []byte(s.body))
	}
	seed, err := os.ReadFile(demoSeed)
	if err != nil {
		f.Fatal(err)
	}
	store := memstore.New()
	svc := flagadmin.NewService(store)
	if err := svc.LoadSeed(context.Background(), bytes.NewReader(seed)); err != nil {
		f.Fatal(err)
	}
	h := httpapi.New(svc, httpapi.Config{BodyReadTimeout: time.Second}).Handler()
	f.Fuzz(func(t *testing.T, method, target, token, accept, contentType string, body []byte) {
		var b bytes.Buffer
		b.WriteString(method + " " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: " + token + "\r\n")
		if accept != "" {
			b.WriteString("Accept: " + accept + "\r\n")
		}
		if contentType != "" {
			b.WriteString("Content-Type: " + contentType + "\r\n")
		}
		b.WriteString("Content-Length: " + itoa(len(body)) + "\r\n\r\n")
		b.Write(body)
		w, req, ok := httpfuzz.Serve(h, b.Bytes())
		if !ok {
			return // Go's server answers it itself
		}
		if err := httpfuzz.Check(w, req.Method, req.RequestURI); err != nil {
			t.Error(err)
		}
	})
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestTextRuleOnSQLStores: NUL and invalid UTF-8 in filters, the
// deprecated search's fields, the lifecycle's path ids and statusValue,
// and the service account id are 400 naming the parameter on SQLite and
// PostgreSQL, never a 500 from the database refusing the text.
func TestTextRuleOnSQLStores(t *testing.T) {
	const admin, vic = "*:*.demo-admin-token", "user:demo-vic-token"
	cases := []struct {
		method, target, token, body, path string
	}{
		{"GET", "/api/admin/search/events?feature=IS:x%00", vic, "", "feature"},
		{"GET", "/api/admin/search/events?feature=IS:%c0%80", vic, "", "feature"},
		{"GET", "/api/admin/search/events?project=IS:%ff", vic, "", "project"},
		{"GET", "/api/admin/search/events?project=IS_ANY_OF:default,x%00", admin, "", "project"},
		{"GET", "/api/admin/search/events?environment=IS:%ff", vic, "", "environment"},
		{"GET", "/api/admin/search/events?type=IS:%00", vic, "", "type"},
		{"GET", "/api/admin/search/events?query=%ff", vic, "", "query"},
		{"POST", "/api/admin/events/search", vic, `{"project":"x\u0000"}`, "project"},
		{"POST", "/api/admin/events/search", vic, `{"feature":"x\u0000"}`, "feature"},
		{"POST", "/api/admin/events/search", vic, "{\"project\":\"\xff\"}", "project"},
		{"POST", "/api/admin/events/search", vic, "{\"feature\":\"\xc0\x80\"}", "feature"},
		{"POST", "/api/admin/events/search", vic, `{"feature":"\ud800"}`, "feature"},
		{"POST", "/api/admin/projects/x%00/features/dark-mode/lifecycle/complete", admin, `{"status":"kept"}`, "projectId"},
		{"POST", "/api/admin/projects/%ff/features/dark-mode/lifecycle/complete", admin, `{"status":"kept"}`, "projectId"},
		{"POST", "/api/admin/projects/default/features/x%00/lifecycle/complete", admin, `{"status":"kept"}`, "featureName"},
		{"POST", "/api/admin/projects/default/features/%ff/lifecycle/complete", admin, `{"status":"kept"}`, "featureName"},
		{"POST", "/api/admin/projects/default/features/dark-mode/lifecycle/complete", admin, `{"status":"kept","statusValue":"a\u0000"}`, "statusValue"},
		{"POST", "/api/admin/projects/default/features/dark-mode/lifecycle/complete", admin, "{\"status\":\"kept\",\"statusValue\":\"\xff\"}", "statusValue"},
		{"DELETE", "/api/admin/service-account/1%00", admin, "", "id"},
		{"DELETE", "/api/admin/service-account/%ff", admin, "", "id"},
		{"GET", "/api/admin/projects?archived=true%00", vic, "", "archived"},
	}
	for _, st := range stores[1:] {
		t.Run(st.name, func(t *testing.T) {
			h := serve(t, st.open(t))
			for _, c := range cases {
				req := httptest.NewRequest(c.method, "/", strings.NewReader(c.body))
				req.RequestURI = c.target
				u, err := req.URL.Parse(c.target)
				if err != nil {
					t.Fatal(err)
				}
				req.URL = u
				req.Header.Set("Authorization", c.token)
				if c.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				var got struct {
					Name    string `json:"name"`
					Details []struct {
						Path string `json:"path"`
					} `json:"details"`
				}
				_ = json.Unmarshal(w.Body.Bytes(), &got)
				if w.Code != http.StatusBadRequest || got.Name != "BadDataError" || len(got.Details) == 0 || got.Details[0].Path != c.path {
					t.Errorf("%s %s %s: got %d %s, want 400 BadDataError naming %s", c.method, c.target, c.body, w.Code, w.Body, c.path)
				}
				if err := httpfuzz.Check(w, c.method, c.target); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
