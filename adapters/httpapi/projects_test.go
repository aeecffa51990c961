package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"
)

const projectsPath = "/api/admin/projects"

type projectsResponse struct {
	Version  int               `json:"version"`
	Projects []json.RawMessage `json:"projects"`
}

var projectKeys = []string{"archivedAt", "createdAt", "description", "favorite", "featureCount", "health", "id", "lastReportedFlagUsage", "lastUpdatedAt", "memberCount", "mode", "name", "owners", "technicalDebt"}

func projectIDs(t *testing.T, projects []json.RawMessage) []string {
	t.Helper()
	out := make([]string, len(projects))
	for i, raw := range projects {
		var p struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		out[i] = p.ID
	}
	return out
}

func TestGetProjects200(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []struct {
		name, token, query string
		want               []string
	}{
		{"active projects by name", adminToken, "", []string{"default", "hidden", "secure"}},
		{"archived=false", adminToken, "?archived=false", []string{"default", "hidden", "secure"}},
		{"archived=true", adminToken, "?archived=true", []string{"old"}},
		{"a non-member does not see private projects", eveToken, "", []string{"default", "secure"}},
		{"a member does", olgaToken, "", []string{"default", "hidden", "secure"}},
		{"a root admin user does", adaToken, "", []string{"default", "hidden", "secure"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodGet, path: projectsPath + c.query, token: c.token})
			got := decodeJSON[projectsResponse](t, w)
			if keys := keysOf(t, w.Body.Bytes()); !slices.Equal(keys, []string{"projects", "version"}) {
				t.Errorf("keys: got %v", keys)
			}
			if got.Version != 1 {
				t.Errorf("version: got %d, want 1", got.Version)
			}
			if ids := projectIDs(t, got.Projects); !slices.Equal(ids, c.want) {
				t.Errorf("projects: got %v, want %v", ids, c.want)
			}
			for _, p := range got.Projects {
				if keys := keysOf(t, p); !slices.Equal(keys, projectKeys) {
					t.Errorf("project keys: got %v, want %v", keys, projectKeys)
				}
			}
		})
	}
}

func TestGetProjectsWireFormat(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	got := decodeJSON[projectsResponse](t, e.do(t, request{method: http.MethodGet, path: projectsPath, token: adminToken}))
	var p struct {
		ID                    string           `json:"id"`
		Health                int              `json:"health"`
		TechnicalDebt         int              `json:"technicalDebt"`
		FeatureCount          int              `json:"featureCount"`
		MemberCount           int              `json:"memberCount"`
		CreatedAt             string           `json:"createdAt"`
		LastUpdatedAt         *string          `json:"lastUpdatedAt"`
		ArchivedAt            *string          `json:"archivedAt"`
		Mode                  string           `json:"mode"`
		Owners                []map[string]any `json:"owners"`
		LastReportedFlagUsage *string          `json:"lastReportedFlagUsage"`
	}
	if err := json.Unmarshal(got.Projects[0], &p); err != nil {
		t.Fatal(err)
	}
	// new-checkout is a release created 2025-01-02, potentially stale at 2025-03-01 (40 days).
	if p.ID != "default" || p.Health != 0 || p.TechnicalDebt != 100 || p.FeatureCount != 1 || p.MemberCount != 1 || p.Mode != "open" {
		t.Errorf("default project: got %+v", p)
	}
	if p.CreatedAt != "2025-01-01T00:00:00.000Z" || p.LastUpdatedAt == nil || *p.LastUpdatedAt != "2025-01-03T10:00:00.000Z" || p.ArchivedAt != nil {
		t.Errorf("dates: got createdAt %q lastUpdatedAt %v archivedAt %v", p.CreatedAt, p.LastUpdatedAt, p.ArchivedAt)
	}
	if len(p.Owners) != 1 || p.Owners[0]["ownerType"] != "user" || p.Owners[0]["name"] != "Ada Admin" || p.Owners[0]["email"] != "ada@example.com" {
		t.Errorf("owners: got %v", p.Owners)
	}
	var secure struct {
		Owners []map[string]any `json:"owners"`
	}
	if err := json.Unmarshal(got.Projects[2], &secure); err != nil {
		t.Fatal(err)
	}
	if len(secure.Owners) != 1 || secure.Owners[0]["ownerType"] != "system" || len(secure.Owners[0]) != 1 {
		t.Errorf("owners without an Owner: got %v, want [{ownerType: system}]", secure.Owners)
	}
}

func TestGetProjectsErrors(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	for _, v := range []string{"maybe", "TRUE", "1", "yes"} {
		t.Run("archived="+v, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodGet, path: projectsPath + "?archived=" + v, token: adminToken})
			wantDetailPath(t, wantError(t, w, http.StatusBadRequest, nameBadData), "archived")
		})
	}
	wantError(t, e.do(t, request{method: http.MethodGet, path: projectsPath}), http.StatusUnauthorized, nameAuthentication)
	wantError(t, e.do(t, request{method: http.MethodGet, path: projectsPath, token: expiredToken}), http.StatusUnauthorized, nameAuthentication)
	wantError(t, e.do(t, request{method: http.MethodGet, path: projectsPath, token: clientToken}), http.StatusForbidden, nameNoAccess)

	e = newEnv(t, Config{}, failWith(unavailableErr))
	w := e.do(t, request{method: http.MethodGet, path: projectsPath, token: adminToken})
	wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	mustNotLeak(t, w)

	e = newEnv(t, Config{}, failWith(errors.New(fakeSQL)))
	w = e.do(t, request{method: http.MethodGet, path: projectsPath, token: adminToken})
	wantError(t, w, http.StatusInternalServerError, nameInternal)
	mustNotLeak(t, w)
}
