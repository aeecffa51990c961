package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDocsServesItsAssetsForReadsOnly(t *testing.T) {
	env := newEnv(t, Config{}, nil)
	for _, tc := range []struct {
		method, path string
		status       int
		contentType  string
	}{
		{http.MethodGet, "/docs", http.StatusOK, "text/html"},
		{http.MethodHead, "/docs", http.StatusOK, "text/html"},
		{http.MethodGet, "/docs/", http.StatusOK, "text/html"},
		{http.MethodGet, "/docs/swagger-ui-bundle.js", http.StatusOK, "text/javascript"},
		{http.MethodGet, "/docs/swagger-ui.css", http.StatusOK, "text/css"},
		{http.MethodGet, "/docs/init.js", http.StatusOK, "text/javascript"},
		{http.MethodGet, "/docs/README.md", http.StatusNotFound, "application/json"},
		{http.MethodGet, "/docs/index.html", http.StatusNotFound, "application/json"},
		{http.MethodGet, "/docs/a/init.js", http.StatusNotFound, "application/json"},
		{http.MethodPost, "/docs", http.StatusMethodNotAllowed, "application/json"},
		{http.MethodDelete, "/docs/init.js", http.StatusMethodNotAllowed, "application/json"},
	} {
		w := env.do(t, request{method: tc.method, path: tc.path})
		if w.Code != tc.status || !strings.HasPrefix(w.Header().Get("Content-Type"), tc.contentType) {
			t.Errorf("%s %s: got %d %q, want %d %s", tc.method, tc.path, w.Code, w.Header().Get("Content-Type"), tc.status, tc.contentType)
			continue
		}
		switch tc.status {
		case http.StatusMethodNotAllowed:
			wantError(t, w, tc.status, nameMethodNotAllowed)
			if got := w.Header().Get("Allow"); got != "GET, HEAD" {
				t.Errorf("%s %s: Allow %q, want GET, HEAD", tc.method, tc.path, got)
			}
		case http.StatusNotFound:
			wantError(t, w, tc.status, nameNotFound)
		case http.StatusOK:
			if got := w.Header().Get("Content-Security-Policy"); !strings.Contains(got, "default-src 'self'") {
				t.Errorf("%s %s: Content-Security-Policy %q keeps nothing to the server", tc.method, tc.path, got)
			}
		}
	}
	page := env.do(t, request{method: http.MethodGet, path: "/docs"}).Body.String()
	for _, want := range []string{`src="/docs/swagger-ui-bundle.js"`, `src="/docs/init.js"`, `href="/docs/swagger-ui.css"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not load %s", want)
		}
	}
	if strings.Contains(page, "http") {
		t.Errorf("the page refers to another site:\n%s", page)
	}
}

func TestRouteIsTheTemplate(t *testing.T) {
	env := newEnv(t, Config{}, nil)
	for _, tc := range []struct{ method, path, want string }{
		{http.MethodPost, "/api/admin/projects/default/features/f1/lifecycle/complete", "/api/admin/projects/{projectId}/features/{featureName}/lifecycle/complete"},
		{http.MethodGet, "/api/admin/search/events", "/api/admin/search/events"},
		{http.MethodDelete, "/api/admin/service-account/10", "/api/admin/service-account/{id}"},
		{http.MethodGet, "/api/admin/projects", "/api/admin/projects"},
		{http.MethodGet, "/health", "/health"},
		{http.MethodGet, "/docs/init.js", "/docs/"},
		{http.MethodGet, "/openapi-3.0.json", "/openapi-3.0.json"},
		{http.MethodGet, "/api/admin/nope", ""},
		{http.MethodPut, "/api/admin/projects", ""},
		{http.MethodGet, "//api/admin/projects", ""},
	} {
		r := httptest.NewRequest(tc.method, "http://x"+tc.path, nil)
		if got := env.server.Route(r); got != tc.want {
			t.Errorf("Route(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}
