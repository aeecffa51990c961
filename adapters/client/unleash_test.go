package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// loadRecordings reads every recorded exchange of unleash-server 8.2.0,
// or skips t when the fixtures are not there (docs/testing.md).
func loadRecordings(t *testing.T) []unleashfixture.Recording {
	t.Helper()
	out := unleashfixture.Recordings(t)
	if len(out) < 30 {
		t.Fatalf("index.json lists %d recordings, want the 35 of the fixture", len(out))
	}
	return out
}

// replay serves recordings: a request is answered with the recording of
// the same method, path, query (compared as values) and Authorization;
// anything else fails the test with 599. It counts the requests.
type replay struct {
	t    *testing.T
	recs []unleashfixture.Recording
	hits atomic.Int64
}

func (rp *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rp.hits.Add(1)
	var body any
	if r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			rp.t.Errorf("%s %s: the request body is not JSON: %v", r.Method, r.URL, err)
		}
	}
	for _, rec := range rp.recs {
		u, err := url.Parse(rec.Request.Path)
		if err != nil {
			rp.t.Errorf("%s: %v", rec.File, err)
			continue
		}
		if r.Method != rec.Request.Method || r.URL.Path != u.Path || !reflect.DeepEqual(r.URL.Query(), u.Query()) ||
			r.Header.Get("Authorization") != rec.Request.Headers["Authorization"] {
			continue
		}
		var want any
		if rec.Request.Body != nil {
			if err := json.Unmarshal([]byte(*rec.Request.Body), &want); err != nil {
				rp.t.Fatalf("%s: %v", rec.File, err)
			}
		}
		if !reflect.DeepEqual(body, want) {
			continue
		}
		for k, v := range rec.Response.Headers {
			switch k {
			case "content-length", "transfer-encoding", "connection", "date":
			default:
				w.Header().Set(k, v)
			}
		}
		w.WriteHeader(rec.Response.Status)
		_, _ = w.Write([]byte(rec.Response.Body))
		return
	}
	rp.t.Errorf("no recording for %s %s (Authorization %q)", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"))
	w.WriteHeader(599)
}

// TestUnleashRecordings replays every recorded exchange of unleash-server
// 8.2.0 to the client, which sends the recorded request and must decode
// the recorded answer: events and totals, project fields, and the error
// kinds, names and ids of the error answers.
func TestUnleashRecordings(t *testing.T) {
	recs := loadRecordings(t)
	srv := httptest.NewServer(&replay{t: t, recs: recs})
	defer srv.Close()
	ctx := context.Background()
	covered := 0
	for _, rec := range recs {
		t.Run(strings.TrimSuffix(rec.File, ".json"), func(t *testing.T) {
			c := newClient(t, srv.URL, rec.Request.Headers["Authorization"], client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 1}))
			u, err := url.Parse(rec.Request.Path)
			if err != nil {
				t.Fatal(err)
			}
			var got any // what the client decoded, for 200 answers
			switch {
			case rec.Request.Method == http.MethodGet && u.Path == "/api/admin/search/events":
				var page flagadmin.EventPage
				page, err = c.SearchEvents(ctx, searchParams(t, u.Query()))
				got = page
			case rec.Request.Method == http.MethodGet && u.Path == "/api/admin/projects":
				got, err = c.ListProjects(ctx, flagadmin.ProjectListOptions{Archived: u.Query().Get("archived") == "true"})
			case rec.Request.Method == http.MethodDelete && strings.HasPrefix(u.Path, "/api/admin/service-account/"):
				err = c.DeleteServiceAccount(ctx, strings.TrimPrefix(u.Path, "/api/admin/service-account/"))
			case rec.Request.Method == http.MethodPost && u.Path == "/api/admin/events/search":
				var req flagadmin.DeprecatedSearchRequest
				if err := json.Unmarshal([]byte(*rec.Request.Body), &req); err != nil {
					t.Fatal(err)
				}
				got, err = c.DeprecatedSearchEvents(ctx, req)
			case rec.Request.Method == http.MethodPost && strings.HasSuffix(u.Path, "/lifecycle/complete"):
				parts := strings.Split(u.Path, "/") // "", api, admin, projects, :p, features, :f, lifecycle, complete
				var req flagadmin.CompleteRequest
				if err := json.Unmarshal([]byte(*rec.Request.Body), &req); err != nil {
					t.Fatal(err)
				}
				err = c.CompleteLifecycle(ctx, parts[4], parts[6], req)
			default:
				// GET .../lifecycle, the lifecycle stages: not one of the five operations.
				if u.Path != "/api/admin/projects/default/features/new-onboarding-flow/lifecycle" {
					t.Fatalf("no client operation sends %s %s", rec.Request.Method, rec.Request.Path)
				}
				t.Skip("GET .../lifecycle is not an operation of the client")
			}
			covered++
			if rec.Response.Status >= 300 {
				checkRecordedError(t, rec, err)
				return
			}
			if err != nil {
				t.Fatalf("got %v, want the recorded %d", err, rec.Response.Status)
			}
			switch v := got.(type) {
			case flagadmin.EventPage:
				checkRecordedPage(t, rec.Response.Body, v)
			case []flagadmin.ProjectListEntry:
				checkRecordedProjects(t, rec.Response.Body, v)
			}
		})
	}
	if covered != len(recs)-1 {
		t.Errorf("the client sent %d of the %d recorded requests, want all but GET .../lifecycle", covered, len(recs))
	}
}

// searchParams turns a recorded query into search parameters.
func searchParams(t *testing.T, q url.Values) flagadmin.EventSearchParams {
	t.Helper()
	p := flagadmin.EventSearchParams{}
	fields := map[string]*string{
		"query": &p.Query, "feature": &p.Feature, "project": &p.Project, "type": &p.Type, "createdBy": &p.CreatedBy,
		"environment": &p.Environment, "id": &p.ID, "groupId": &p.GroupID, "from": &p.From, "to": &p.To,
		"offset": &p.Offset, "limit": &p.Limit,
	}
	for k, v := range q {
		dst, ok := fields[k]
		if !ok || len(v) != 1 {
			t.Fatalf("recorded query parameter %s=%q has no single search parameter", k, v)
		}
		*dst = v[0]
	}
	return p
}

// checkRecordedError checks the client's error against a recorded error
// answer: the kind of its status, its name, id and details.
func checkRecordedError(t *testing.T, rec unleashfixture.Recording, err error) {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %T %v, want a *client.Error", err, err)
	}
	var body struct {
		ID      string `json:"id"`
		Name    string `json:"name"`
		Message string `json:"message"`
		Details []struct {
			Path string `json:"path"`
		} `json:"details"`
	}
	if err := json.Unmarshal([]byte(rec.Response.Body), &body); err != nil {
		t.Fatal(err)
	}
	if ce.Status != rec.Response.Status || ce.ID != body.ID || ce.Name != body.Name || ce.Message != body.Message {
		t.Errorf("got status %d id %q name %q message %q, want %d %q %q %q",
			ce.Status, ce.ID, ce.Name, ce.Message, rec.Response.Status, body.ID, body.Name, body.Message)
	}
	kinds := map[int]error{
		400: flagadmin.ErrValidation, 401: flagadmin.ErrAuthenticationRequired,
		403: flagadmin.ErrNoAccess, 404: flagadmin.ErrNotFound,
	}
	if kind, ok := kinds[rec.Response.Status]; ok {
		if !errors.Is(err, kind) {
			t.Errorf("errors.Is(%v, %v) = false", err, kind)
		}
	} else if ce.Unwrap() != nil {
		t.Errorf("status %d (%s): got kind %v, want none", ce.Status, ce.Name, ce.Unwrap())
	}
	if rec.Response.Status == 400 {
		var ve *flagadmin.ValidationError
		if !errors.As(err, &ve) || len(ve.Fields) != len(body.Details) {
			t.Fatalf("got %v, want a *ValidationError with %d fields", err, len(body.Details))
		}
		for i, d := range body.Details {
			want := d.Path[strings.LastIndex(d.Path, "/")+1:] // "/query/type" is the parameter "type"
			if ve.Fields[i].Path != want || ve.Fields[i].Message == "" {
				t.Errorf("field %d: got %+v, want path %q with a message", i, ve.Fields[i], want)
			}
		}
	}
}

// checkRecordedPage compares a decoded page with the recorded JSON.
func checkRecordedPage(t *testing.T, body string, page flagadmin.EventPage) {
	t.Helper()
	var want struct {
		Events []map[string]json.RawMessage `json:"events"`
		Total  int                          `json:"total"`
	}
	if err := json.Unmarshal([]byte(body), &want); err != nil {
		t.Fatal(err)
	}
	if page.Total != want.Total || len(page.Events) != len(want.Events) || len(want.Events) == 0 {
		t.Fatalf("got %d events of %d, want %d of %d", len(page.Events), page.Total, len(want.Events), want.Total)
	}
	for i, w := range want.Events {
		ev := page.Events[i]
		var createdAt time.Time
		if err := json.Unmarshal(w["createdAt"], &createdAt); err != nil {
			t.Fatal(err)
		}
		if !ev.CreatedAt.Equal(createdAt) || ev.CreatedAt.Location() != time.UTC {
			t.Errorf("event %d: createdAt %v, want %v in UTC", ev.ID, ev.CreatedAt, createdAt)
		}
		for _, f := range []struct {
			name string
			got  any
		}{
			{"id", ev.ID}, {"type", ev.Type}, {"createdBy", ev.CreatedBy}, {"createdByUserId", ev.CreatedByUserID},
			{"environment", ev.Environment}, {"project", ev.Project}, {"featureName", ev.FeatureName},
			{"data", ev.Data}, {"preData", ev.PreData}, {"groupType", ev.GroupType}, {"groupId", ev.GroupID},
		} {
			if !sameValue(t, f.got, w[f.name]) {
				t.Errorf("event %d: %s decoded as %v, recorded %s", ev.ID, f.name, f.got, w[f.name])
			}
		}
		// Tags keep every key Unleash wrote, and write themselves back
		// byte for byte: {"value","type"}, or {"type","value","color"}.
		if tags, err := json.Marshal(ev.Tags); err != nil || string(tags) != string(w["tags"]) {
			t.Errorf("event %d: tags decoded and written back as %s (%v), recorded %s", ev.ID, tags, err, w["tags"])
		}
		// The event written back has groupType and groupId exactly when
		// Unleash wrote them.
		back, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(back, &keys); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"groupType", "groupId"} {
			_, recorded := w[k]
			if _, written := keys[k]; written != recorded {
				t.Errorf("event %d: %s written back %v, recorded %v: %s", ev.ID, k, written, recorded, back)
			}
		}
	}
}

// checkRecordedProjects compares decoded projects with the recorded JSON.
func checkRecordedProjects(t *testing.T, body string, projects []flagadmin.ProjectListEntry) {
	t.Helper()
	var want struct {
		Projects []map[string]json.RawMessage `json:"projects"`
	}
	if err := json.Unmarshal([]byte(body), &want); err != nil {
		t.Fatal(err)
	}
	if len(projects) != len(want.Projects) || len(projects) == 0 {
		t.Fatalf("got %d projects, want %d", len(projects), len(want.Projects))
	}
	for i, w := range want.Projects {
		p := projects[i]
		owners := make([]map[string]any, len(p.Owners))
		for j, o := range p.Owners {
			owners[j] = map[string]any{"ownerType": o.OwnerType}
		}
		favorite := json.RawMessage("false") // Unleash leaves it out for admin tokens
		if f, ok := w["favorite"]; ok {
			favorite = f
		}
		for _, f := range []struct {
			name string
			got  any
			want json.RawMessage
		}{
			{"id", p.ID, w["id"]}, {"name", p.Name, w["name"]}, {"description", p.Description, w["description"]},
			{"health", p.Health, w["health"]}, {"technicalDebt", p.TechnicalDebt, w["technicalDebt"]},
			{"featureCount", p.FeatureCount, w["featureCount"]}, {"memberCount", p.MemberCount, w["memberCount"]},
			{"mode", p.Mode, w["mode"]}, {"favorite", p.Favorite, favorite}, {"owners", owners, w["owners"]},
			{"createdAt", p.CreatedAt.Format(flagadmin.TimeLayout), w["createdAt"]},
			{"lastUpdatedAt", timeText(p.LastUpdatedAt), w["lastUpdatedAt"]},
			{"archivedAt", timeText(p.ArchivedAt), w["archivedAt"]},
			{"lastReportedFlagUsage", timeText(p.LastReportedFlagUsage), w["lastReportedFlagUsage"]},
		} {
			if !sameValue(t, f.got, f.want) {
				t.Errorf("project %s: %s decoded as %v, recorded %s", p.ID, f.name, f.got, f.want)
			}
		}
	}
}

func timeText(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.Format(flagadmin.TimeLayout)
	return &s
}

// sameValue reports whether got, encoded as JSON, means the same as the
// recorded raw JSON (a nil raw message is null).
func sameValue(t *testing.T, got any, recorded json.RawMessage) bool {
	t.Helper()
	if raw, ok := got.(json.RawMessage); ok && raw == nil {
		got = nil
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(recorded) == 0 {
		recorded = json.RawMessage("null")
	}
	if err := json.Unmarshal(recorded, &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}

// TestUnleashWalk walks Unleash's recorded pages 1 and 2 (limit 5, offset 0
// and 5): Unleash sends no Link, so the walk pages by offset. Stopping
// after ten events makes exactly the two recorded requests.
func TestUnleashWalk(t *testing.T) {
	recs := loadRecordings(t)
	rp := &replay{t: t, recs: recs}
	srv := httptest.NewServer(rp)
	defer srv.Close()
	c := newClient(t, srv.URL, "*:*.unleash-insecure-admin-api-token")
	var got []int64
	for ev, err := range c.Events(context.Background(), flagadmin.EventSearchParams{Limit: "5"}) {
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, ev.ID); len(got) == 10 {
			break
		}
	}
	want := []int64{2297, 2296, 2295, 2294, 2293, 2292, 2291, 2290, 2289, 2288}
	if !reflect.DeepEqual(got, want) || rp.hits.Load() != 2 {
		t.Errorf("got %v in %d requests, want %v in 2", got, rp.hits.Load(), want)
	}
}
