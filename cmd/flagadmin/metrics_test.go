package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// scrape fetches url and parses the Prometheus text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET %s: Content-Type %q, want the text format", url, ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return families
}

// sample returns the value of the series of family name whose labels
// include want (a counter, gauge or untyped value, or a histogram's
// count), and whether it exists.
func sample(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := families[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// startMetricsApp starts a server on a fresh SQLite file with a known admin
// token and returns its base URL and the metrics listener.
func startMetricsApp(t *testing.T, metricsAddr string) (string, *MetricsListener) {
	t.Helper()
	cfg := Config{Addr: "127.0.0.1:0", DB: "sqlite:" + filepath.Join(t.TempDir(), "m.db"), LogLevel: slog.LevelWarn, LogFormat: "text",
		AdminTokens: []string{metricsToken}, TokenCacheTTL: defaultTokenCacheTTL, ResultCacheSize: defaultResultCacheSize, MetricsAddr: metricsAddr}
	var l *Listener
	var ml *MetricsListener
	app := fxtest.New(t, serveOptions(cfg, &syncbuffer.Buffer{}), fx.Populate(&l, &ml))
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	return "http://" + l.Addr().String(), ml
}

const metricsToken = "*:*.metrics-test-token"

func TestMetricsMoveWithRequests(t *testing.T) {
	base, _ := startMetricsApp(t, "")
	before := scrape(t, base+"/metrics")

	projects := map[string]string{"route": "/api/admin/projects", "method": "GET", "status": "200"}
	lifecycle := map[string]string{"route": "/api/admin/projects/{projectId}/features/{featureName}/lifecycle/complete", "method": "POST", "status": "404"}
	unauthorized := map[string]string{"route": "/api/admin/projects", "method": "GET", "status": "401"}
	unmatched := map[string]string{"route": "unmatched", "method": "GET", "status": "404"}
	for range 2 {
		if status, body := call(t, http.MethodGet, base+"/api/admin/projects", metricsToken, ""); status != http.StatusOK {
			t.Fatalf("list projects: %d %s", status, body)
		}
	}
	call(t, http.MethodPost, base+"/api/admin/projects/default/features/nope-secret-name/lifecycle/complete", metricsToken, `{"status":"kept"}`)
	call(t, http.MethodGet, base+"/api/admin/projects", "", "")
	call(t, http.MethodGet, base+"/no/such/path-with-user-input", "", "")
	if status, body := call(t, http.MethodPost, base+"/api/admin/events/search", metricsToken, `{}`); status != http.StatusOK {
		t.Fatalf("search: %d %s", status, body)
	}

	after := scrape(t, base+"/metrics")
	for _, tc := range []struct {
		name   string
		labels map[string]string
		delta  float64
	}{
		{"flagadmin_http_requests_total", projects, 2},
		{"flagadmin_http_request_duration_seconds", projects, 2},
		{"flagadmin_http_requests_total", lifecycle, 1},
		{"flagadmin_http_requests_total", unauthorized, 1},
		{"flagadmin_http_requests_total", unmatched, 1},
		// The first request authenticated through the database, the others from the token cache.
		{"flagadmin_cache_misses_total", map[string]string{"cache": "token"}, 1},
		{"flagadmin_cache_hits_total", map[string]string{"cache": "token"}, 3},
		// Each list reads the change counter, then its statistics: a miss, then a hit.
		{"flagadmin_cache_hits_total", map[string]string{"cache": "result"}, 1},
		{"flagadmin_events_recorded_total", map[string]string{"type": "api-token-created"}, 0},
	} {
		got, ok := sample(after, tc.name, tc.labels)
		if !ok {
			t.Errorf("%s%v: missing after the requests", tc.name, tc.labels)
			continue
		}
		was, _ := sample(before, tc.name, tc.labels)
		if got-was != tc.delta {
			t.Errorf("%s%v: moved by %v, want %v", tc.name, tc.labels, got-was, tc.delta)
		}
	}
	// The admin token created at start is an event recorded through the store.
	if got, ok := sample(before, "flagadmin_events_recorded_total", map[string]string{"type": "api-token-created"}); !ok || got != 1 {
		t.Errorf("events recorded at start: api-token-created = %v (present %v), want 1", got, ok)
	}
	for _, pool := range []string{"write", "read"} {
		if n, ok := sample(after, "flagadmin_db_pool_open_connections", map[string]string{"pool": pool}); !ok || n < 1 {
			t.Errorf("pool %s: open connections %v (present %v), want at least 1", pool, n, ok)
		}
		if _, ok := sample(after, "flagadmin_db_pool_wait_duration_seconds_total", map[string]string{"pool": pool}); !ok {
			t.Errorf("pool %s: no wait duration", pool)
		}
	}
	if _, ok := sample(after, "flagadmin_storage_errors_total", map[string]string{"kind": "unavailable"}); !ok {
		t.Error("flagadmin_storage_errors_total{kind=unavailable} is not shown at 0")
	}
	if n, ok := sample(after, "flagadmin_http_requests_in_flight", nil); !ok || n != 0 {
		t.Errorf("requests in flight between requests: %v (present %v), want 0", n, ok)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := after[name]; !ok {
			t.Errorf("%s missing: the Go and process collectors are registered", name)
		}
	}
	// No label value holds a client's path.
	for name, f := range after {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if strings.Contains(l.GetValue(), "nope-secret-name") || strings.Contains(l.GetValue(), "path-with-user-input") {
					t.Errorf("%s has a label from the request's path: %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}

func TestMetricsAnswerOnlyGetAndHead(t *testing.T) {
	base, _ := startMetricsApp(t, "")
	for _, method := range []string{http.MethodPost, http.MethodDelete, http.MethodPut} {
		req, _ := http.NewRequest(method, base+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ ID, Name, Message string }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || err != nil || body.ID == "" || body.Name == "" || body.Message == "" {
			t.Errorf("%s /metrics: got %d %+v (decode error %v), want 405 with a JSON error body", method, resp.StatusCode, body, err)
		}
		if allow := resp.Header.Get("Allow"); allow != "GET, HEAD" {
			t.Errorf("%s /metrics: Allow %q, want GET, HEAD", method, allow)
		}
	}
	resp, err := http.Head(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD /metrics: %d, want 200", resp.StatusCode)
	}
}

func TestMetricsOnTheirOwnListener(t *testing.T) {
	base, ml := startMetricsApp(t, "127.0.0.1:0")
	if status, _ := call(t, http.MethodGet, base+"/metrics", "", ""); status != http.StatusNotFound {
		t.Errorf("GET /metrics on the main listener with --metrics-addr: %d, want 404", status)
	}
	call(t, http.MethodGet, base+"/api/admin/projects", metricsToken, "")
	families := scrape(t, "http://"+ml.Addr().String()+"/metrics")
	if n, ok := sample(families, "flagadmin_http_requests_total", map[string]string{"route": "/api/admin/projects", "status": "200"}); !ok || n != 1 {
		t.Errorf("requests counted on the metrics listener: %v (present %v), want 1", n, ok)
	}
	if status, _ := call(t, http.MethodGet, "http://"+ml.Addr().String()+"/api/admin/projects", metricsToken, ""); status != http.StatusNotFound {
		t.Errorf("the API on the metrics listener: %d, want 404", status)
	}
}
