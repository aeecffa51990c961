package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/unleashschema"
)

const (
	searchPath     = "/api/admin/search/events"
	deprecatedPath = "/api/admin/events/search"
)

// eventKeys are the keys of an event of no group:
// groupType and groupId are left out, as Unleash leaves them out.
var eventKeys = []string{"createdAt", "createdBy", "createdByUserId", "data", "environment", "featureName", "id", "preData", "project", "tags", "type"}

// groupedEventKeys are the keys of an event of a group, with groupType
// and groupId.
var groupedEventKeys = []string{"createdAt", "createdBy", "createdByUserId", "data", "environment", "featureName", "groupId", "groupType", "id", "preData", "project", "tags", "type"}

type searchResponse struct {
	Events []json.RawMessage `json:"events"`
	Total  int               `json:"total"`
}

type eventIDs struct {
	ID int64 `json:"id"`
}

func ids(t *testing.T, events []json.RawMessage) []int64 {
	t.Helper()
	out := make([]int64, len(events))
	for i, raw := range events {
		var e eventIDs
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		out[i] = e.ID
	}
	return out
}

func TestSearchEvents200(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []struct {
		name, token, query string
		wantIDs            []int64
		wantTotal          int
	}{
		{"everything, newest first", adminToken, "", []int64{5, 4, 3, 2, 1}, 5},
		{"feature", adminToken, "feature=IS:new-checkout", []int64{2, 1}, 2},
		{"project any of", adminToken, "project=IS_ANY_OF:secure,hidden", []int64{5, 3}, 2},
		{"type", adminToken, "type=IS:user-created", []int64{4}, 1},
		{"createdBy", adminToken, "createdBy=IS:-42", []int64{4}, 1},
		{"environment", adminToken, "environment=IS:production", []int64{2}, 1},
		{"id", adminToken, "id=IS_ANY_OF:1,3", []int64{3, 1}, 2},
		{"from and to", adminToken, "from=IS:2025-01-03&to=IS:2025-01-04", []int64{3, 2}, 2},
		{"query", adminToken, "query=SECRET", []int64{3}, 1},
		{"limit and offset", adminToken, "limit=2&offset=1", []int64{4, 3}, 5},
		{"unknown parameters are ignored", adminToken, "colour=blue", []int64{5, 4, 3, 2, 1}, 5},
		{"an editor sees neither private nor project-less events", eveToken, "", []int64{5, 2, 1}, 3},
		{"a member sees the private project", olgaToken, "", []int64{5, 3, 2, 1}, 4},
		{"a service account", ciToken, "feature=IS:guarded", []int64{5}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodGet, path: searchPath + "?" + c.query, token: c.token})
			got := decodeJSON[searchResponse](t, w)
			if keys := keysOf(t, w.Body.Bytes()); !slices.Equal(keys, []string{"events", "total"}) {
				t.Errorf("keys: got %v, want [events total]", keys)
			}
			if g := ids(t, got.Events); !slices.Equal(g, c.wantIDs) {
				t.Errorf("ids: got %v, want %v", g, c.wantIDs)
			}
			if got.Total != c.wantTotal {
				t.Errorf("total: got %d, want %d", got.Total, c.wantTotal)
			}
		})
	}
}

func TestSearchEventsWireFormat(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	w := e.do(t, request{method: http.MethodGet, path: searchPath + "?id=IS:1", token: adminToken})
	got := decodeJSON[searchResponse](t, w)
	if len(got.Events) != 1 {
		t.Fatalf("got %d events, want 1", len(got.Events))
	}
	if keys := keysOf(t, got.Events[0]); !slices.Equal(keys, eventKeys) {
		t.Errorf("event keys: got %v, want %v", keys, eventKeys)
	}
	want := `{"id":1,"createdAt":"2025-01-02T00:00:00.000Z","type":"feature-created","createdBy":"ada@example.com","createdByUserId":1,"environment":null,"project":"default","featureName":"new-checkout","data":{"name":"new-checkout"},"preData":null,"tags":[{"value":"checkout","type":"simple"}]}`
	if string(got.Events[0]) != want {
		t.Errorf("event:\n got %s\nwant %s", got.Events[0], want)
	}
	if errs := unleashschema.EventErrors(got.Events[0]); errs != nil {
		t.Errorf("Unleash's eventSchema refuses the event: %q", errs)
	}
	if strings.Contains(w.Body.String(), "$schema") {
		t.Errorf("response has an injected $schema: %s", w.Body)
	}
}

func TestSearchEventsGroupID(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	gtype, group := "transaction", "01M8564MBTV5HMX3GH6SHGBVKG"
	tags := []flagadmin.Tag{{Type: "area", Value: "web", Color: flagadmin.ColorOf("#34A853")}, {Type: "team", Value: "growth", Color: flagadmin.NullColor}}
	if _, err := e.svc.AppendEvent(context.Background(), flagadmin.Event{Type: "feature-updated", CreatedBy: "ci", Tags: tags, GroupType: &gtype, GroupID: &group}); err != nil {
		t.Fatal(err)
	}
	w := e.do(t, request{method: http.MethodGet, path: searchPath + "?groupId=IS_ANY_OF:7,01M8564MBTV5HMX3GH6SHGBVKG", token: adminToken})
	got := decodeJSON[searchResponse](t, w)
	if g := ids(t, got.Events); !slices.Equal(g, []int64{6}) || got.Total != 1 {
		t.Fatalf("groupId filter: got %v (total %d), want [6]", g, got.Total)
	}
	// The client sees the value it filtered on (Unleash's own tests check e.groupId).
	if keys := keysOf(t, got.Events[0]); !slices.Equal(keys, groupedEventKeys) {
		t.Errorf("event keys: got %v, want %v", keys, groupedEventKeys)
	}
	var ev struct{ GroupType, GroupID *string }
	if err := json.Unmarshal(got.Events[0], &ev); err != nil || ev.GroupID == nil || *ev.GroupID != group || ev.GroupType == nil || *ev.GroupType != gtype {
		t.Errorf("groupType/groupId: got %s", got.Events[0])
	}
	// Tags keep their color as Unleash writes it: a string, or null.
	if want := `"tags":[{"type":"area","value":"web","color":"#34A853"},{"type":"team","value":"growth","color":null}],"groupType":"transaction","groupId":"01M8564MBTV5HMX3GH6SHGBVKG"}`; !strings.HasSuffix(string(got.Events[0]), want) {
		t.Errorf("event:\n got %s\nwant it to end with %s", got.Events[0], want)
	}
	if errs := unleashschema.EventErrors(got.Events[0]); errs != nil {
		t.Errorf("Unleash's eventSchema refuses the event: %q", errs)
	}
}

func TestSearchEvents400(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []struct{ query, path string }{
		{"feature=new-checkout", "feature"},
		{"project=is:default", "project"},
		{"type=no-such-type", "type"},
		{"type=IS:", "type"},
		{"createdBy=IS:ada", "createdBy"},
		{"id=IS:one", "id"},
		{"groupId=x", "groupId"},
		{"environment=ANY:prod", "environment"},
		{"from=2025-01-01", "from"},
		{"to=IS:2025-02-30", "to"},
		{"from=IS:2025-02-01&to=IS:2025-01-01", "from"},
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=ten", "limit"},
		{"offset=-1", "offset"},
		{"query=" + url.QueryEscape(strings.Repeat("q", 1001)), "query"},
	}
	for _, c := range cases {
		t.Run(c.query[:min(len(c.query), 40)], func(t *testing.T) {
			w := e.do(t, request{method: http.MethodGet, path: searchPath + "?" + c.query, token: adminToken})
			wantDetailPath(t, wantError(t, w, http.StatusBadRequest, nameBadData), c.path)
		})
	}
	t.Run("every offending parameter is named", func(t *testing.T) {
		w := e.do(t, request{method: http.MethodGet, path: searchPath + "?limit=x&feature=y", token: adminToken})
		got := wantError(t, w, http.StatusBadRequest, nameBadData)
		wantDetailPath(t, got, "limit")
		wantDetailPath(t, got, "feature")
	})
}

func TestSearchEvents401And403(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	wantError(t, e.do(t, request{method: http.MethodGet, path: searchPath}), http.StatusUnauthorized, nameAuthentication)
	wantError(t, e.do(t, request{method: http.MethodGet, path: searchPath, token: unknownToken}), http.StatusUnauthorized, nameAuthentication)
	wantError(t, e.do(t, request{method: http.MethodGet, path: searchPath, token: clientToken}), http.StatusForbidden, nameNoAccess)
	wantError(t, e.do(t, request{method: http.MethodGet, path: searchPath, token: frontendToken}), http.StatusForbidden, nameNoAccess)
}

func TestSearchEvents5xx(t *testing.T) {
	e := newEnv(t, Config{}, failWith(unavailableErr))
	w := e.do(t, request{method: http.MethodGet, path: searchPath, token: adminToken})
	wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	if w.Header().Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	mustNotLeak(t, w)

	e = newEnv(t, Config{}, failWith(errors.New(fakeSQL)))
	w = e.do(t, request{method: http.MethodGet, path: searchPath, token: adminToken, header: map[string]string{RequestIDHeader: "req-500"}})
	got := wantError(t, w, http.StatusInternalServerError, nameInternal)
	mustNotLeak(t, w)
	// The cause is logged with the request id and the error id.
	logs := e.logs.String()
	if !strings.Contains(logs, "SQLSTATE 42P01") || !strings.Contains(logs, `"request_id":"req-500"`) || !strings.Contains(logs, got.ID) {
		t.Errorf("the log lacks the cause, request id or error id:\n%s", logs)
	}
}

type eventsResponse struct {
	Version     int               `json:"version"`
	Events      []json.RawMessage `json:"events"`
	TotalEvents int               `json:"totalEvents"`
}

func TestDeprecatedSearch200(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []struct {
		name, token, body, contentType string
		wantIDs                        []int64
		wantTotal                      int
	}{
		{"empty body", adminToken, "", "", []int64{5, 4, 3, 2, 1}, 5},
		{"empty body with a non-JSON Content-Type", adminToken, "", "text/plain", []int64{5, 4, 3, 2, 1}, 5},
		{"empty object", adminToken, `{}`, "", []int64{5, 4, 3, 2, 1}, 5},
		{"type", adminToken, `{"type":"feature-created"}`, "", []int64{5, 3, 1}, 3},
		{"project", adminToken, `{"project":"default"}`, "", []int64{2, 1}, 2},
		{"feature", adminToken, `{"feature":"guarded"}`, "", []int64{5}, 1},
		{"query matches the creator", adminToken, `{"query":"EVE@"}`, "", []int64{5}, 1},
		{"query matches the type and counts in totalEvents", adminToken, `{"query":"user-created"}`, "", []int64{4}, 1},
		{"offset skips matching events", adminToken, `{"limit":2,"offset":2}`, "", []int64{3, 2}, 5},
		{"empty strings mean no filter", adminToken, `{"type":"","project":"","feature":"","query":""}`, "", []int64{5, 4, 3, 2, 1}, 5},
		{"unknown fields are ignored", adminToken, `{"colour":"blue","feature":"guarded"}`, "", []int64{5}, 1},
		{"JSON with a charset", adminToken, `{"feature":"guarded"}`, "application/json; charset=utf-8", []int64{5}, 1},
		{"visibility applies", eveToken, `{}`, "", []int64{5, 2, 1}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodPost, path: deprecatedPath, token: c.token, body: c.body, contentType: c.contentType})
			got := decodeJSON[eventsResponse](t, w)
			if keys := keysOf(t, w.Body.Bytes()); !slices.Equal(keys, []string{"events", "totalEvents", "version"}) {
				t.Errorf("keys: got %v", keys)
			}
			if got.Version != 1 {
				t.Errorf("version: got %d, want 1", got.Version)
			}
			if g := ids(t, got.Events); !slices.Equal(g, c.wantIDs) {
				t.Errorf("ids: got %v, want %v", g, c.wantIDs)
			}
			if got.TotalEvents != c.wantTotal {
				t.Errorf("totalEvents: got %d, want %d", got.TotalEvents, c.wantTotal)
			}
			if got := w.Header().Get("Deprecation"); got != "true" {
				t.Errorf("Deprecation: got %q, want true", got)
			}
			if got, want := w.Header().Get("Link"), `</api/admin/search/events>; rel="successor-version"`; got != want {
				t.Errorf("Link: got %q, want %q", got, want)
			}
			if len(got.Events) > 0 {
				if keys := keysOf(t, got.Events[len(got.Events)-1]); !slices.Equal(keys, eventKeys) {
					t.Errorf("event keys: got %v, want %v", keys, eventKeys)
				}
			}
		})
	}
}

func TestDeprecatedSearch400(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []struct{ name, body, path string }{
		{"limit 0", `{"limit":0}`, "limit"},
		{"limit 101", `{"limit":101}`, "limit"},
		{"limit not an integer", `{"limit":"ten"}`, "limit"},
		{"fractional limit", `{"limit":1.5}`, "limit"},
		{"negative offset", `{"offset":-1}`, "offset"},
		{"unknown type", `{"type":"no-such-type"}`, "type"},
		{"type not a string", `{"type":5}`, "type"},
		{"query too long", `{"query":"` + strings.Repeat("q", 1001) + `"}`, "query"},
		{"JSON syntax error", `{"type":`, ""},
		{"not an object", `[1]`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: c.body})
			got := wantError(t, w, http.StatusBadRequest, nameBadData)
			if c.path != "" {
				wantDetailPath(t, got, c.path)
			}
		})
	}
}

func TestDeprecatedSearch415(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/xml"} {
		t.Run(ct, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: `{}`, contentType: ct})
			wantError(t, w, http.StatusUnsupportedMediaType, nameContentType)
		})
	}
}

func TestDeprecatedSearchErrors(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	wantError(t, e.do(t, request{method: http.MethodPost, path: deprecatedPath, body: `{}`}), http.StatusUnauthorized, nameAuthentication)
	wantError(t, e.do(t, request{method: http.MethodPost, path: deprecatedPath, token: clientToken, body: `{}`}), http.StatusForbidden, nameNoAccess)

	big := `{"query":"` + strings.Repeat("x", int(DefaultMaxBodyBytes)) + `"}`
	wantError(t, e.do(t, request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: big}), http.StatusRequestEntityTooLarge, nameContentTooLarge)

	e = newEnv(t, Config{}, failWith(unavailableErr))
	w := e.do(t, request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: `{}`})
	wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	mustNotLeak(t, w)

	e = newEnv(t, Config{}, failWith(errors.New(fakeSQL)))
	w = e.do(t, request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: `{}`})
	wantError(t, w, http.StatusInternalServerError, nameInternal)
	mustNotLeak(t, w)
}
