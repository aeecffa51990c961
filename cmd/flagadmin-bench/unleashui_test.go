package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestEventLogQueries(t *testing.T) {
	today := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	qs := eventLogQueries(20, today)
	if len(qs) != 20 {
		t.Fatalf("got %d queries, want 20", len(qs))
	}
	for _, c := range []struct {
		i    int
		want string
	}{
		{0, "/api/admin/search/events?offset=0&limit=25&from=IS%3A2025-11-27&to=IS%3A2026-11-27"},
		{4, "/api/admin/search/events?offset=100&limit=25&from=IS%3A2025-11-27&to=IS%3A2026-11-27"},
		{5, "/api/admin/search/events?offset=0&limit=25&from=IS%3A2026-05-27&to=IS%3A2026-11-27"},
		{12, "/api/admin/search/events?offset=50&limit=25&from=IS%3A2024-11-27&to=IS%3A2025-11-27"},
		{19, "/api/admin/search/events?offset=100&limit=25&from=IS%3A2026-02-27&to=IS%3A2026-08-27"},
	} {
		if qs[c.i] != c.want {
			t.Errorf("query %d: got %s, want %s", c.i, qs[c.i], c.want)
		}
	}
}

func TestMainScript(t *testing.T) {
	for _, c := range []struct {
		name, index, want string
		ok                bool
	}{
		{"Unleash 8.2.0's index.html", `<head><script type="module" crossorigin src="/static/index-CiroQYlg.js"></script><link rel="stylesheet" href="/static/style.css"></head>`, "/static/index-CiroQYlg.js", true},
		{"no script", `<html><body>nothing</body></html>`, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(c.index))
			}))
			defer srv.Close()
			got, err := mainScript(t.Context(), srv.Client(), srv.URL)
			if (err == nil) != c.ok || got != c.want {
				t.Errorf("got %q, %v; want %q, ok %v", got, err, c.want, c.ok)
			}
		})
	}
}

func TestUnleashUIUsage(t *testing.T) {
	var stderr strings.Builder
	if code := unleashUICommand(t.Context(), []string{"--flagadmin", "x", "--unleash", "y", "--db", "z", "--target", "mysql"}, &strings.Builder{}, &stderr); code != 2 {
		t.Errorf("--target mysql: exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "--target must be memory or sqlite") {
		t.Errorf("--target mysql: %q does not name the flag", stderr.String())
	}
	stderr.Reset()
	if code := unleashUICommand(t.Context(), []string{"--flagadmin", "x", "--unleash", "y", "--db", "z", "--phases", "feature,assets"}, &strings.Builder{}, &stderr); code != 2 {
		t.Errorf("--phases feature,assets: exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), `no phase "assets"`) {
		t.Errorf("--phases feature,assets: %q does not name the phase", stderr.String())
	}
	if code := unleashUICommand(t.Context(), nil, &strings.Builder{}, &strings.Builder{}); code != 2 {
		t.Errorf("no flags: exit %d, want 2", code)
	}
}

func TestFeatureQuery(t *testing.T) {
	if got, want := featureQuery("checkout/new flow"), "/api/admin/search/events?offset=0&limit=25&feature=IS%3Acheckout%2Fnew+flow"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
