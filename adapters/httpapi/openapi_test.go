package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// openAPIDoc is the part of the OpenAPI document the tests read.
type openAPIDoc struct {
	OpenAPI    string `json:"openapi"`
	Components struct {
		Schemas         map[string]schemaDoc `json:"schemas"`
		SecuritySchemes map[string]struct {
			Type string `json:"type"`
			In   string `json:"in"`
			Name string `json:"name"`
		} `json:"securitySchemes"`
	} `json:"components"`
	Paths map[string]map[string]operationDoc `json:"paths"`
}

type schemaDoc struct {
	Ref         string               `json:"$ref"`
	Properties  map[string]schemaDoc `json:"properties"`
	Required    []string             `json:"required"`
	Pattern     string               `json:"pattern"`
	Examples    []any                `json:"examples"`
	Minimum     *float64             `json:"minimum"`
	Maximum     *float64             `json:"maximum"`
	Description string               `json:"description"`
	Type        any                  `json:"type"`
}

type operationDoc struct {
	OperationID string                `json:"operationId"`
	Tags        []string              `json:"tags"`
	Deprecated  bool                  `json:"deprecated"`
	Description string                `json:"description"`
	Security    []map[string][]string `json:"security"`
	Parameters  []struct {
		Name        string    `json:"name"`
		In          string    `json:"in"`
		Description string    `json:"description"`
		Schema      schemaDoc `json:"schema"`
	} `json:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema schemaDoc `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Description string `json:"description"`
		Content     map[string]struct {
			Schema schemaDoc `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

func fetchOpenAPI(t *testing.T, e *testEnv) (openAPIDoc, string) {
	t.Helper()
	w := e.do(t, request{method: http.MethodGet, path: "/openapi.json"})
	if w.Code != http.StatusOK {
		t.Fatalf("/openapi.json: got %d", w.Code)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatalf("/openapi.json does not parse: %v", err)
	}
	return doc, w.Body.String()
}

func TestOpenAPIOperations(t *testing.T) {
	e := newEnv(t, Config{Version: "1.2.3"}, nil)
	doc, raw := fetchOpenAPI(t, e)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi: got %q, want 3.1.0", doc.OpenAPI)
	}
	if !strings.Contains(raw, `"version":"1.2.3"`) {
		t.Error("info.version is not Config.Version")
	}
	if s := doc.Components.SecuritySchemes[securityScheme]; s.Type != "apiKey" || s.In != "header" || s.Name != "Authorization" {
		t.Errorf("security scheme: got %+v", s)
	}
	cases := []struct {
		path, method, id, tag string
		deprecated            bool
		statuses              []string
	}{
		{"/api/admin/projects/{projectId}/features/{featureName}/lifecycle/complete", "post", "complete", tagFeatures, false,
			[]string{"200", "400", "401", "403", "404", "409", "413", "500", "503"}},
		{"/api/admin/search/events", "get", "searchEvents", tagEvents, false,
			[]string{"200", "400", "401", "403", "500", "503"}},
		{"/api/admin/events/export", "get", "exportEvents", tagEvents, false,
			[]string{"200", "400", "401", "403", "500", "503"}},
		{"/api/admin/events/search", "post", "deprecatedSearchEvents", tagEvents, true,
			[]string{"200", "400", "401", "403", "413", "415", "500", "503"}},
		{"/api/admin/projects", "get", "getProjects", tagProjects, false,
			[]string{"200", "400", "401", "403", "500", "503"}},
		{"/api/admin/service-account/{id}", "delete", "deleteServiceAccount", tagServiceAccounts, false,
			[]string{"200", "400", "401", "403", "404", "409", "500", "503"}},
		{"/api/admin/log/checkpoint", "get", "getLogCheckpoint", tagLog, false,
			[]string{"200", "401", "403", "404", "409", "500", "503"}},
		{"/api/admin/log/proof", "get", "getLogInclusionProof", tagLog, false,
			[]string{"200", "400", "401", "403", "404", "500", "503"}},
		{"/api/admin/log/consistency", "get", "getLogConsistencyProof", tagLog, false,
			[]string{"200", "400", "401", "403", "404", "500", "503"}},
		{"/api/admin/log/leaves", "get", "getLogLeaves", tagLog, false,
			[]string{"200", "400", "401", "403", "404", "500", "503"}},
	}
	count := 0
	for _, ops := range doc.Paths {
		count += len(ops)
	}
	if count != len(cases) {
		t.Errorf("got %d operations, want %d", count, len(cases))
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			op, ok := doc.Paths[c.path][c.method]
			if !ok {
				t.Fatalf("no %s %s", c.method, c.path)
			}
			if op.OperationID != c.id || !slices.Equal(op.Tags, []string{c.tag}) || op.Deprecated != c.deprecated {
				t.Errorf("got id %q tags %v deprecated %v", op.OperationID, op.Tags, op.Deprecated)
			}
			if len(op.Security) != 1 || op.Security[0][securityScheme] == nil {
				t.Errorf("security: got %v", op.Security)
			}
			if op.Description == "" {
				t.Error("no description")
			}
			var statuses []string
			for s := range op.Responses {
				statuses = append(statuses, s)
			}
			slices.Sort(statuses)
			if !slices.Equal(statuses, c.statuses) {
				t.Errorf("responses: got %v, want %v", statuses, c.statuses)
			}
			for _, s := range c.statuses[1:] {
				r := op.Responses[s]
				if r.Description == "" || r.Content["application/json"].Schema.Ref != "#/components/schemas/errorSchema" {
					t.Errorf("response %s: got %+v, want the error schema", s, r)
				}
			}
		})
	}
	errSchema := doc.Components.Schemas["errorSchema"]
	for _, k := range []string{"id", "name", "message", "details"} {
		if _, ok := errSchema.Properties[k]; !ok {
			t.Errorf("errorSchema lacks %q", k)
		}
	}
}

func TestOpenAPIParameters(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	doc, _ := fetchOpenAPI(t, e)
	params := map[string]string{}
	descriptions := map[string]string{}
	for _, p := range doc.Paths["/api/admin/search/events"]["get"].Parameters {
		params[p.Name] = p.Schema.Pattern
		descriptions[p.Name] = p.Description
	}
	const filter = `^(IS|IS_ANY_OF):(.*?)(,([a-zA-Z0-9_]+))*$`
	const day = `^(IS):\d{4}-\d{2}-\d{2}$`
	want := map[string]string{
		"query": "", "feature": filter, "project": filter, "type": filter, "createdBy": filter,
		"environment": filter, "id": filter, "groupId": filter, "from": day, "to": day, "offset": "", "limit": "",
	}
	for name, pattern := range want {
		got, ok := params[name]
		if !ok {
			t.Errorf("parameter %q is missing", name)
			continue
		}
		if got != pattern {
			t.Errorf("%s pattern: got %q, want %q", name, got, pattern)
		}
		if descriptions[name] == "" {
			t.Errorf("%s has no description", name)
		}
	}
	// The export documents its filters as the search does, example included.
	search := map[string]string{}
	for _, p := range doc.Paths["/api/admin/search/events"]["get"].Parameters {
		search[p.Name] = fmt.Sprint(p.Description, p.Schema.Pattern, p.Schema.Examples)
	}
	for _, p := range doc.Paths["/api/admin/events/export"]["get"].Parameters {
		f, ok := flagadmin.FilterParamNamed(p.Name)
		if !ok || f.Kind == flagadmin.FilterPaging {
			continue
		}
		if got := fmt.Sprint(p.Description, p.Schema.Pattern, p.Schema.Examples); got != search[p.Name] || len(p.Schema.Examples) == 0 {
			t.Errorf("export parameter %s: got %q, want the search's %q, with an example", p.Name, got, search[p.Name])
		}
	}
	if !strings.Contains(descriptions["limit"], "1000") || !strings.Contains(descriptions["limit"], "50") {
		t.Errorf("limit description lacks its bounds: %q", descriptions["limit"])
	}

	body := doc.Components.Schemas["deprecatedSearchEventsSchema"]
	limit, offset := body.Properties["limit"], body.Properties["offset"]
	if limit.Minimum == nil || *limit.Minimum != 1 || limit.Maximum == nil || *limit.Maximum != flagadmin.DeprecatedMaxLimit {
		t.Errorf("deprecated limit bounds: got %v..%v", limit.Minimum, limit.Maximum)
	}
	if offset.Minimum == nil || *offset.Minimum != 0 || !strings.Contains(offset.Description, "skip") {
		t.Errorf("deprecated offset: got minimum %v, description %q", offset.Minimum, offset.Description)
	}
	if !strings.Contains(doc.Paths["/api/admin/events/search"]["post"].Description, "skip") {
		t.Error("the deprecated search's description does not say what offset skips")
	}
	status := doc.Components.Schemas["featureLifecycleCompletedSchema"].Properties["status"]
	if status.Type != "string" {
		t.Errorf("status: got type %v", status.Type)
	}
}

// TestOpenAPIEventAsUnleashWritesIt: the served document says what
// Unleash's eventSchema says of groupType and groupId (strings, never
// null, left out when the event belongs to no group) and of a tag's color
// (a string or null, not required), and keeps every other field required.
func TestOpenAPIEventAsUnleashWritesIt(t *testing.T) {
	doc, _ := fetchOpenAPI(t, newEnv(t, Config{}, nil))
	event, tag := doc.Components.Schemas["eventSchema"], doc.Components.Schemas["tagSchema"]
	for _, name := range []string{"groupType", "groupId"} {
		if slices.Contains(event.Required, name) {
			t.Errorf("eventSchema requires %s, which is left out when absent", name)
		}
		if typ := event.Properties[name].Type; typ != "string" {
			t.Errorf("eventSchema.%s: type %v, want string (never null)", name, typ)
		}
	}
	for _, name := range []string{"id", "createdAt", "type", "createdBy", "createdByUserId", "environment", "project", "featureName", "data", "preData", "tags"} {
		if !slices.Contains(event.Required, name) {
			t.Errorf("eventSchema does not require %s, which every event has", name)
		}
	}
	if slices.Contains(tag.Required, "color") || !slices.Contains(tag.Required, "value") || !slices.Contains(tag.Required, "type") {
		t.Errorf("tagSchema requires %q, want value and type, not color", tag.Required)
	}
	if typ, _ := tag.Properties["color"].Type.([]any); len(typ) != 2 || typ[0] != "string" || typ[1] != "null" {
		t.Errorf("tagSchema.color: type %v, want [string null]", tag.Properties["color"].Type)
	}
}

func TestOpenAPINoSchemaInjection(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	doc, raw := fetchOpenAPI(t, e)
	if strings.Contains(raw, "$schema") {
		t.Error("the document mentions $schema")
	}
	for name, s := range doc.Components.Schemas {
		if _, ok := s.Properties["$schema"]; ok {
			t.Errorf("schema %s has a $schema property", name)
		}
	}
	// Responses carry neither a $schema field nor a describedby Link.
	w := e.do(t, request{method: http.MethodGet, path: projectsPath, token: adminToken})
	if strings.Contains(w.Body.String(), "$schema") || w.Header().Get("Link") != "" {
		t.Errorf("schema injection: body %s, Link %q", w.Body, w.Header().Get("Link"))
	}
}

func TestOpenAPIYAML(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	w := e.do(t, request{method: http.MethodGet, path: "/openapi.yaml"})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "openapi: 3.1.0") || !strings.Contains(w.Body.String(), "operationId: deprecatedSearchEvents") {
		t.Errorf("/openapi.yaml: got %d %.200s", w.Code, w.Body)
	}
}

// TestOpenAPIDescriptionCountsTheOperations: the API's description (which
// /docs shows) names as many operations as the document lists, with the
// live stream and without.
func TestOpenAPIDescriptionCountsTheOperations(t *testing.T) {
	words := map[int]string{10: "ten", 11: "eleven"}
	for _, stream := range []bool{false, true} {
		var h http.Handler
		if stream {
			h = newMemStreamEnv(t, Config{}).server.Handler()
		} else {
			h = New(flagadmin.NewService(memstore.New()), Config{}).Handler()
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
		var doc struct {
			Info struct {
				Description string `json:"description"`
			} `json:"info"`
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
			t.Fatalf("/openapi.json: %v", err)
		}
		count := 0
		for _, ops := range doc.Paths {
			count += len(ops)
		}
		want := "The admin API of flagadmin: " + words[count] + " operations:"
		if !strings.HasPrefix(doc.Info.Description, want) || strings.Contains(doc.Info.Description, "five operations") {
			t.Errorf("stream %v: %d operations, description %.120q; want it to start with %q", stream, count, doc.Info.Description, want)
		}
		if strings.Contains(doc.Info.Description, "live stream") != stream {
			t.Errorf("stream %v: the description mentions the live stream: %v", stream, !stream)
		}
	}
}

// TestErrorSchemaNamesEveryError holds the error schema's name enum to the
// names the server answers with: a client generated from the document must
// accept every error body it can receive.
func TestErrorSchemaNamesEveryError(t *testing.T) {
	field, ok := reflect.TypeFor[errorSchema]().FieldByName("Name")
	if !ok {
		t.Fatal("errorSchema has no Name field")
	}
	documented := strings.Split(field.Tag.Get("enum"), ",")
	for _, name := range []string{nameBadData, nameAuthentication, nameNoAccess, nameNotFound, nameMethodNotAllowed, nameConflict,
		nameReadOnly, nameContentTooLarge, nameContentType, nameRequestTimeout, nameInternal, nameServiceUnavailable, nameBadGateway, nameGatewayTimeout} {
		if !slices.Contains(documented, name) {
			t.Errorf("errorSchema's name enum %v lacks %q", documented, name)
		}
	}
}
