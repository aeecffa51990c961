package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestETagAnswersIfNoneMatch: complete GET answers carry a strong ETag
// over their body; If-None-Match naming it (also weakly, in a list, or
// "*") gets 304 with no body; a change of the data changes the tag.
func TestETagAnswersIfNoneMatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(flagadmin.Store) flagadmin.Store
	}{
		{"result cache", nil},
		{"no cache", func(s flagadmin.Store) flagadmin.Store { return uncachedStore{s} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{}, tc.wrap)
			for _, path := range []string{searchPath + "?limit=2", projectsPath, "/health"} {
				first := e.do(t, request{method: http.MethodGet, path: path, token: adminToken})
				tag := first.Result().Header.Get("ETag")
				if first.Code != http.StatusOK || tag != etagOf(first.Body.Bytes()) {
					t.Fatalf("GET %s: %d, ETag %q; want 200 and the tag of its body %q", path, first.Code, tag, etagOf(first.Body.Bytes()))
				}
				if !strings.HasPrefix(tag, `"`) || strings.HasPrefix(tag, "W/") {
					t.Errorf("GET %s: ETag %q is not a strong tag", path, tag)
				}
				if cl := first.Result().Header.Get("Content-Length"); cl != fmt.Sprint(first.Body.Len()) {
					t.Errorf("GET %s: Content-Length %q, want %d", path, cl, first.Body.Len())
				}
				for _, inm := range []string{tag, "W/" + tag, `"other", ` + tag, "*"} {
					w := e.do(t, request{method: http.MethodGet, path: path, token: adminToken, header: map[string]string{"If-None-Match": inm}})
					if w.Code != http.StatusNotModified || w.Body.Len() != 0 || w.Result().Header.Get("ETag") != tag {
						t.Errorf("GET %s If-None-Match %s: %d, %d bytes, ETag %q; want 304, no body, %s", path, inm, w.Code, w.Body.Len(), w.Result().Header.Get("ETag"), tag)
					}
				}
				w := e.do(t, request{method: http.MethodGet, path: path, token: adminToken, header: map[string]string{"If-None-Match": `"other"`}})
				if w.Code != http.StatusOK || w.Body.String() != first.Body.String() {
					t.Errorf("GET %s with another tag: %d; want 200 and the body", path, w.Code)
				}
				head := e.do(t, request{method: http.MethodHead, path: path, token: adminToken})
				if head.Result().Header.Get("ETag") != tag {
					t.Errorf("HEAD %s: ETag %q, want the GET's %q", path, head.Result().Header.Get("ETag"), tag)
				}
			}

			// A new event changes the search answer, so its tag.
			before := e.do(t, request{method: http.MethodGet, path: searchPath, token: adminToken}).Result().Header.Get("ETag")
			if _, err := e.svc.AppendEvent(t.Context(), flagadmin.Event{Type: "feature-created", CreatedBy: "admin", Project: ptr("default"), FeatureName: ptr("brand-new")}); err != nil {
				t.Fatal(err)
			}
			w := e.do(t, request{method: http.MethodGet, path: searchPath, token: adminToken, header: map[string]string{"If-None-Match": before}})
			if w.Code != http.StatusOK || w.Result().Header.Get("ETag") == before {
				t.Errorf("search after a new event with the old tag: %d, ETag %q; want 200 and a new tag", w.Code, w.Result().Header.Get("ETag"))
			}
		})
	}
}

// TestETagFollowsTheCaller: the same path answers each caller what it
// sees, so a tag from one caller does not answer 304 to another who sees
// more.
func TestETagFollowsTheCaller(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	vic := e.do(t, request{method: http.MethodGet, path: searchPath, token: vicToken})
	w := e.do(t, request{method: http.MethodGet, path: searchPath, token: adminToken, header: map[string]string{"If-None-Match": vic.Result().Header.Get("ETag")}})
	if w.Code != http.StatusOK {
		t.Errorf("admin with a viewer's tag: %d, want 200 (the admin sees more)", w.Code)
	}
}

// TestETagOnlyOnCompleteAnswers: errors, writes and streamed answers
// carry no ETag, and If-None-Match does not turn them into 304.
func TestETagOnlyOnCompleteAnswers(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	for _, tc := range []struct {
		name string
		r    request
		code int
	}{
		{"401", request{method: http.MethodGet, path: searchPath}, http.StatusUnauthorized},
		{"400", request{method: http.MethodGet, path: searchPath + "?limit=0", token: adminToken}, http.StatusBadRequest},
		{"404", request{method: http.MethodGet, path: "/api/admin/nothing", token: adminToken}, http.StatusNotFound},
		{"export", request{method: http.MethodGet, path: "/api/admin/events/export", token: adminToken}, http.StatusOK},
		{"POST search", request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: "{}"}, http.StatusOK},
	} {
		tc.r.header = map[string]string{"If-None-Match": "*"}
		w := e.do(t, tc.r)
		if w.Code != tc.code || w.Result().Header.Get("ETag") != "" {
			t.Errorf("%s: %d, ETag %q; want %d and none", tc.name, w.Code, w.Result().Header.Get("ETag"), tc.code)
		}
	}
}

// TestETagOfStreamedProjectList: a project list streamed without the body
// cache in more than one piece has no ETag (it is not held whole); one
// of a single piece has the tag a cached one has.
func TestETagOfStreamedProjectList(t *testing.T) {
	plain := newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store { return uncachedStore{s} })
	cached := newEnv(t, Config{}, nil)
	small := func(e *testEnv) string {
		return e.do(t, request{method: http.MethodGet, path: projectsPath, token: adminToken}).Result().Header.Get("ETag")
	}
	if a, b := small(plain), small(cached); a == "" || a != b {
		t.Errorf("a small list: ETag %q streamed, %q cached; want the same tag", a, b)
	}
	b := &flagadmin.Batch{}
	for i := range 400 {
		b.Projects = append(b.Projects, flagadmin.Project{ID: fmt.Sprintf("bulk-%03d", i), Name: "Bulk", Description: strings.Repeat("a long description ", 10)})
	}
	if err := plain.store.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, projectsPath, nil)
	req.Header.Set("Authorization", adminToken)
	req.Header.Set("If-None-Match", "*")
	w := &writesRecorder{ResponseRecorder: httptest.NewRecorder()}
	plain.handler.ServeHTTP(w, req)
	if w.Code != http.StatusOK || w.Result().Header.Get("ETag") != "" || len(w.writes) < 4 {
		t.Errorf("a large streamed list: %d, ETag %q, %d writes; want 200, no ETag, pieces", w.Code, w.Result().Header.Get("ETag"), len(w.writes))
	}
}
