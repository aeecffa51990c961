package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// unversionedStore hides the VersionedStore methods of a store, so the
// test server serves it without a result cache.
type unversionedStore struct{ flagadmin.Store }

// cachesResults reports whether the test server's Service is over a
// result cache.
func cachesResults(e *testEnv) bool {
	_, ok := e.served.(*storecache.Store)
	return ok
}

// TestGetProjectsStreamedBytes: the list written by hand is byte for byte
// what Huma's JSON format wrote for projectsSchema, with every Accept the
// API negotiates, for a list of a hundred kilobytes, streamed in pieces,
// with and without a result cache.
func TestGetProjectsStreamedBytes(t *testing.T) {
	t.Run("cached", func(t *testing.T) {
		e := newEnv(t, Config{}, nil)
		if !cachesResults(e) {
			t.Fatal("the test server has no result cache")
		}
		checkProjectsBytes(t, e)
	})
	t.Run("uncached", func(t *testing.T) {
		e := newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store { return unversionedStore{s} })
		if cachesResults(e) {
			t.Fatal("the test server has a result cache")
		}
		checkProjectsBytes(t, e)
	})
}

func checkProjectsBytes(t *testing.T, e *testEnv) {
	b := &flagadmin.Batch{}
	for i := range 400 {
		uid := int64(1)
		b.Projects = append(b.Projects, flagadmin.Project{
			ID: fmt.Sprintf("bulk-%03d", i), Name: fmt.Sprintf("Bulk <%d> & \u2028 \"x\"", i%37),
			Description: strings.Repeat("a long description é ", 5),
			Members:     []flagadmin.ProjectMembership{{UserID: &uid, Role: flagadmin.ProjectRoleOwner}},
		})
	}
	if err := e.store.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	list, err := e.svc.ListProjects(t.Context(), flagadmin.AdminToken("admin"), flagadmin.ProjectListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := huma.DefaultJSONFormat.Marshal(&want, projectsSchema{Version: flagadmin.ProjectListVersion, Projects: list}); err != nil {
		t.Fatal(err)
	}
	if want.Len() < 96<<10 {
		t.Fatalf("the list is %d bytes, want a large one", want.Len())
	}
	for _, accept := range []string{"", "application/json", "json", "*/*", "text/html", "application/json;q=0.5, json"} {
		r := request{method: http.MethodGet, path: projectsPath, token: adminToken}
		if accept != "" {
			r.header = map[string]string{"Accept": accept}
		}
		w := e.do(t, r)
		if w.Code != http.StatusOK {
			t.Fatalf("Accept %q: status %d", accept, w.Code)
		}
		if !bytes.Equal(w.Body.Bytes(), want.Bytes()) {
			t.Errorf("Accept %q: the body differs from Huma's encoding (%d vs %d bytes)", accept, w.Body.Len(), want.Len())
		}
		// application/json whatever Accept says.
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Accept %q: Content-Type %q, want application/json", accept, ct)
		}
	}
	var decoded projectsResponse
	if err := json.Unmarshal(want.Bytes(), &decoded); err != nil || len(decoded.Projects) != len(list) {
		t.Fatalf("decoded %d projects (%v), want %d", len(decoded.Projects), err, len(list))
	}
}
