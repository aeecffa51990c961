package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

var nextLinkForm = regexp.MustCompile(`^<(/api/admin/search/events\?[^>]*after=([A-Za-z0-9_-]+))>; rel="next"$`)

// walkLinks follows the next links from path as token and returns the ids
// of every page's events and the links seen.
func walkLinks(t *testing.T, e *testEnv, token, path string) (ids []int64, links []string) {
	t.Helper()
	for range 100 {
		w := e.do(t, request{method: http.MethodGet, path: path, token: token})
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: got %d, want 200; body %s", path, w.Code, w.Body)
		}
		var page struct {
			Events []struct {
				ID int64 `json:"id"`
			} `json:"events"`
			Total int `json:"total"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			ids = append(ids, ev.ID)
		}
		link := w.Header().Get("Link")
		if link == "" {
			return ids, links
		}
		links = append(links, link)
		m := nextLinkForm.FindStringSubmatch(link)
		if m == nil {
			t.Fatalf("Link: got %q, want <relative URL with after=CURSOR>; rel=\"next\"", link)
		}
		path = m[1]
	}
	t.Fatal("the walk did not end")
	return nil, nil
}

func TestSearchNextLink(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	ids, links := walkLinks(t, e, adminToken, "/api/admin/search/events?limit=2&unknown=a%20b&offset=0&type=IS_ANY_OF:feature-created,user-created,feature-environment-enabled")
	if got, want := fmt.Sprint(ids), "[5 4 3 2 1]"; got != want {
		t.Errorf("walked ids %s, want %s", got, want)
	}
	if len(links) != 2 {
		t.Fatalf("got %d links, want 2 (a next link on every page but the last): %q", len(links), links)
	}
	// offset is removed, after set last, every other parameter kept as written.
	want := regexp.MustCompile(`^</api/admin/search/events\?limit=2&unknown=a%20b&type=IS_ANY_OF:feature-created,user-created,feature-environment-enabled&after=[A-Za-z0-9_-]{28}>; rel="next"$`)
	for _, l := range links {
		if !want.MatchString(l) {
			t.Errorf("Link: got %q", l)
		}
	}
	// A walk from an offset drops the offset from its links.
	ids, _ = walkLinks(t, e, adminToken, "/api/admin/search/events?offset=1&limit=3")
	if got, want := fmt.Sprint(ids), "[4 3 2 1]"; got != want {
		t.Errorf("walked from offset 1: %s, want %s", got, want)
	}
	// A Viewer's walk sees only what its search sees.
	ids, _ = walkLinks(t, e, vicToken, "/api/admin/search/events?limit=1")
	if got, want := fmt.Sprint(ids), "[5 2 1]"; got != want {
		t.Errorf("Viewer walked %s, want %s", got, want)
	}
	// The last page, and a page holding every match, have no link.
	w := e.do(t, request{method: http.MethodGet, path: "/api/admin/search/events?limit=5", token: adminToken})
	if l := w.Header().Get("Link"); l != "" {
		t.Errorf("a page of every match has Link %q", l)
	}
	// The body of a page is unchanged by the cursor: events and total only.
	w = e.do(t, request{method: http.MethodGet, path: "/api/admin/search/events?limit=2", token: adminToken})
	m := nextLinkForm.FindStringSubmatch(w.Header().Get("Link"))
	w = e.do(t, request{method: http.MethodGet, path: m[1], token: adminToken})
	if got := keysOf(t, w.Body.Bytes()); fmt.Sprint(got) != "[events total]" {
		t.Errorf("keys of a page by cursor: got %v", got)
	}
	if !strings.Contains(w.Body.String(), `"total":5`) {
		t.Errorf("a page by cursor: got %s, want total 5", w.Body)
	}
}

func TestNextLinkEscapes(t *testing.T) {
	got := nextLink("/api/admin/search/events", "q=<b>&offset=5&after=old&x=\"y\"&&z", "CUR")
	want := `</api/admin/search/events?q=%3Cb%3E&x=%22y%22&z&after=CUR>; rel="next"`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got := nextLink("/p", "", "C"); got != `</p?after=C>; rel="next"` {
		t.Errorf("no query: got %s", got)
	}
}

func TestSearchAfterErrors(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cursor := flagadmin.EncodeCursor(flagadmin.EventPosition{CreatedAt: time.Date(2025, 1, 4, 0, 0, 0, 0, time.UTC), ID: 3})
	for _, path := range []string{
		"/api/admin/search/events?after=not-a-cursor",
		"/api/admin/search/events?after=" + cursor + "&offset=2",
		"/api/admin/search/events?after=" + cursor[:27] + "Q",
	} {
		w := e.do(t, request{method: http.MethodGet, path: path, token: adminToken})
		wantDetailPath(t, wantError(t, w, http.StatusBadRequest, nameBadData), "after")
	}
	w := e.do(t, request{method: http.MethodGet, path: "/api/admin/search/events?offset=0&after=" + cursor, token: adminToken})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"id":2`) || strings.Contains(w.Body.String(), `"id":3`) {
		t.Errorf("after with offset=0: got %d %s", w.Code, w.Body)
	}
}

var dispositionForm = regexp.MustCompile(`^attachment; filename="events-\d{8}T\d{6}Z\.(ndjson|csv)"$`)

func TestExportNDJSON(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	for _, c := range []struct {
		token, query string
		ids          []int64
	}{
		{adminToken, "", []int64{1, 2, 3, 4, 5}},
		{adminToken, "?format=ndjson&afterId=3", []int64{4, 5}},
		{vicToken, "", []int64{1, 2, 5}},
		{olgaToken, "?project=IS:hidden", []int64{3}},
		{vicToken, "?project=IS:hidden", nil},
		{adminToken, "?type=IS:feature-created&query=secret", []int64{3}},
	} {
		w := e.do(t, request{method: http.MethodGet, path: "/api/admin/events/export" + c.query, token: c.token})
		if w.Code != http.StatusOK {
			t.Fatalf("%s: got %d, want 200; %s", c.query, w.Code, w.Body)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("Content-Type: got %q", ct)
		}
		if cd := w.Header().Get("Content-Disposition"); !dispositionForm.MatchString(cd) || !strings.HasSuffix(cd, `.ndjson"`) {
			t.Errorf("Content-Disposition: got %q", cd)
		}
		// Each line is exactly the event's JSON in the search's pages.
		search := e.do(t, request{method: http.MethodGet, path: "/api/admin/search/events?limit=1000", token: adminToken})
		var page struct {
			Events []json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(search.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		byID := map[int64]string{}
		for _, raw := range page.Events {
			var ev struct {
				ID int64 `json:"id"`
			}
			_ = json.Unmarshal(raw, &ev)
			byID[ev.ID] = string(raw)
		}
		var want strings.Builder
		for _, id := range c.ids {
			want.WriteString(byID[id] + "\n")
		}
		if got := w.Body.String(); got != want.String() {
			t.Errorf("export%s as %s:\ngot  %q\nwant %q", c.query, c.token, got, want.String())
		}
	}
}

func TestExportCSV(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	at := time.Date(2025, 2, 3, 4, 5, 6, 789e6, time.UTC)
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	err := e.store.Write(context.Background(), &flagadmin.Batch{Events: []flagadmin.Event{
		{Type: "feature-updated", CreatedBy: "=HYPERLINK(\"http://x\",\"y\")", CreatedByUserID: n(-42), CreatedAt: at,
			Environment: s("+1,2"), Project: s("default"), FeatureName: s("-rm"),
			// Stored compact, as the Service normalizes every event on write;
			// the export writes stored JSON as it is.
			Data: json.RawMessage(`{"a":"=1,\"x\"","b":[1,2]}`), PreData: json.RawMessage("null"),
			Tags: []flagadmin.Tag{{Type: "simple", Value: "a<b>&c"}}},
		{Type: "feature-updated", CreatedBy: "@admin\tx", CreatedAt: at,
			Environment: s("\tprod"), Project: s("default"), FeatureName: s("\rcr"),
			Data: json.RawMessage(`{"line":"a\nb"}`)},
		{Type: "feature-updated", CreatedBy: "multi\nline \"quoted\"", CreatedAt: at, Project: s("default"),
			FeatureName: s("ünïcödé,é"), PreData: json.RawMessage(`-5`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	w := e.do(t, request{method: http.MethodGet, path: "/api/admin/events/export?format=csv&afterId=5", token: adminToken})
	if w.Code != http.StatusOK {
		t.Fatalf("got %d, want 200; %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type: got %q", ct)
	}
	if cd := w.Header().Get("Content-Disposition"); !dispositionForm.MatchString(cd) || !strings.HasSuffix(cd, `.csv"`) {
		t.Errorf("Content-Disposition: got %q", cd)
	}
	want := "id,createdAt,type,createdBy,createdByUserId,environment,project,featureName,data,preData,tags\n" +
		`6,2025-02-03T04:05:06.789Z,feature-updated,"'=HYPERLINK(""http://x"",""y"")",-42,"'+1,2",default,'-rm,"{""a"":""=1,\""x\"""",""b"":[1,2]}",,"[{""value"":""a<b>&c"",""type"":""simple""}]"` + "\n" +
		"7,2025-02-03T04:05:06.789Z,feature-updated,'@admin\tx,,'\tprod,default,\"'\rcr\",\"{\"\"line\"\":\"\"a\\nb\"\"}\",,[]\n" +
		"8,2025-02-03T04:05:06.789Z,feature-updated,\"multi\nline \"\"quoted\"\"\",,,default,\"ünïcödé,é\",,'-5,[]\n"
	if got := w.Body.String(); got != want {
		t.Errorf("CSV:\ngot  %q\nwant %q", got, want)
	}
	// No events: the header row alone.
	w = e.do(t, request{method: http.MethodGet, path: "/api/admin/events/export?format=csv&afterId=100", token: adminToken})
	if got := w.Body.String(); w.Code != http.StatusOK || got != csvHeader {
		t.Errorf("empty CSV export: got %d %q", w.Code, got)
	}
}

func TestExportBadParameters(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	for query, param := range map[string]string{
		"format=xml":                   "format",
		"format=json":                  "format",
		"afterId=-1":                   "afterId",
		"afterId=abc":                  "afterId",
		"afterId=1e3":                  "afterId",
		"limit=10":                     "limit",
		"offset=0":                     "offset",
		"after=x":                      "after",
		"type=nope":                    "type",
		"from=IS:2025-13-01":           "from",
		"project=default":              "project",
		"createdBy=IS:ada@example.com": "createdBy",
		// a parameter given empty, or twice
		"format=":                           "format",
		"afterId=":                          "afterId",
		"format=csv&format=ndjson":          "format",
		"format=csv&format=csv":             "format",
		"afterId=1&afterId=2":               "afterId",
		"type=":                             "type",
		"type=IS:feature-created&type=IS:x": "type",
		"query=a&query=b":                   "query",
		"limit=":                            "limit",
		"offset=":                           "offset",
		"after=":                            "after",
	} {
		w := e.do(t, request{method: http.MethodGet, path: "/api/admin/events/export?" + query, token: adminToken})
		wantDetailPath(t, wantError(t, w, http.StatusBadRequest, nameBadData), param)
	}
	// An empty free text is no text filter.
	if w := e.do(t, request{method: http.MethodGet, path: "/api/admin/events/export?query=", token: adminToken}); w.Code != http.StatusOK {
		t.Errorf("query=: %d %s, want 200", w.Code, w.Body)
	}
	// Authentication comes first.
	w := e.do(t, request{method: http.MethodGet, path: "/api/admin/events/export?format=&format=csv", token: "*:*.wrong"})
	wantError(t, w, http.StatusUnauthorized, nameAuthentication)
	w = e.do(t, request{method: http.MethodGet, path: "/api/admin/events/export"})
	wantError(t, w, http.StatusUnauthorized, nameAuthentication)
	w = e.do(t, request{method: http.MethodGet, path: "/api/admin/events/export", token: clientToken})
	wantError(t, w, http.StatusForbidden, nameNoAccess)
}

// exportFaultStore fails its exports with err after `after` events.
type exportFaultStore struct {
	flagadmin.Store
	after int
	err   error
	// returned receives ExportEvents' result when it returns.
	returned chan error
}

func (f *exportFaultStore) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	n := 0
	err := f.Store.ExportEvents(ctx, q, afterID, func(e flagadmin.Event) error {
		if n == f.after && f.err != nil {
			return f.err
		}
		n++
		return fn(e)
	})
	if f.returned != nil {
		f.returned <- err
	}
	return err
}

// manyEvents adds n events to e's store.
func manyEvents(t *testing.T, e *testEnv, n int) {
	t.Helper()
	b := &flagadmin.Batch{}
	project := "default"
	for i := range n {
		b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "bulk",
			CreatedAt: time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC), Project: &project, Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 200)))})
	}
	if err := e.store.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

func TestExportAbortsAfterTheFirstByte(t *testing.T) {
	fault := &exportFaultStore{after: 2500, err: unavailableErr}
	e := newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store { fault.Store = s; return fault })
	manyEvents(t, e, 4000)
	srv := httptest.NewServer(e.handler)
	defer srv.Close()
	for _, format := range []string{"ndjson", "csv"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/admin/events/export?format="+format, nil)
		req.Header.Set("Authorization", adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: the response did not begin: %v", format, err)
		}
		if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
			t.Fatalf("%s: got %d %v, want a chunked 200", format, resp.StatusCode, resp.TransferEncoding)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: reading the body: got error %v after %d bytes, want io.ErrUnexpectedEOF (no final chunk)", format, err, len(body))
		}
		if lines := strings.Count(string(body), "\n"); lines < 1000 || lines > 2501 {
			t.Errorf("%s: got %d lines before the abort, want the flushed ones", format, lines)
		}
	}
	// Before the first byte, the failure is a JSON error.
	fault.after = 0
	w := e.do(t, request{method: http.MethodGet, path: "/api/admin/events/export", token: adminToken})
	wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	mustNotLeak(t, w)
}

func TestExportClientGoneReleasesTheStore(t *testing.T) {
	fault := &exportFaultStore{returned: make(chan error, 1)}
	e := newEnv(t, Config{}, func(s flagadmin.Store) flagadmin.Store { fault.Store = s; return fault })
	manyEvents(t, e, 20000) // about 5 MB: more than the connection's buffers hold
	srv := httptest.NewServer(e.handler)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/admin/events/export", nil)
	req.Header.Set("Authorization", adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, `{"id":1,`) {
		t.Fatalf("first line: %q, %v", line, err)
	}
	// The client reads no more, then goes away.
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-fault.returned:
		t.Fatalf("the export ended (%v) while its client was connected and not reading", err)
	default:
	}
	resp.Body.Close()
	select {
	case err := <-fault.returned:
		if err == nil {
			t.Error("the export of a client that went away ended without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the export still runs 10 s after its client went away")
	}
}

func TestOpenAPIExport(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	_, raw := fetchOpenAPI(t, e)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
			Responses map[string]struct {
				Content map[string]json.RawMessage `json:"content"`
				Headers map[string]json.RawMessage `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	op := doc.Paths["/api/admin/events/export"]["get"]
	var params []string
	for _, p := range op.Parameters {
		if p.In == "query" {
			params = append(params, p.Name)
		}
	}
	for _, want := range []string{"query", "feature", "project", "type", "createdBy", "environment", "id", "groupId", "from", "to", "format", "afterId", "limit", "offset", "after"} {
		if !strings.Contains(","+strings.Join(params, ",")+",", ","+want+",") {
			t.Errorf("the export does not declare the query parameter %s (got %v)", want, params)
		}
	}
	ok := op.Responses["200"]
	for _, ct := range []string{"application/x-ndjson", "text/csv"} {
		if _, found := ok.Content[ct]; !found {
			t.Errorf("the export's 200 has no %s content", ct)
		}
	}
	if _, found := ok.Headers["Content-Disposition"]; !found {
		t.Error("the export's 200 does not document Content-Disposition")
	}
	search := doc.Paths["/api/admin/search/events"]["get"]
	found := false
	for _, p := range search.Parameters {
		found = found || p.Name == "after"
	}
	if !found {
		t.Error("the search does not declare after")
	}
	if _, found := search.Responses["200"].Headers["Link"]; !found {
		t.Error("the search's 200 does not document Link")
	}
}

// slowExportStore pauses before each batch of an export.
type slowExportStore struct {
	flagadmin.Store
	pause time.Duration
}

func (s *slowExportStore) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	n := 0
	return s.Store.ExportEvents(ctx, q, afterID, func(e flagadmin.Event) error {
		if n%flagadmin.ExportBatchSize == 0 {
			select {
			case <-time.After(s.pause):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		n++
		return fn(e)
	})
}

// The storage deadline bounds a request, but an export takes as long as
// its size needs: it must not be cut short by the deadline when every
// batch is quick (the store bounds each of its operations itself).
func TestExportOutlivesTheStorageDeadline(t *testing.T) {
	const deadline = 100 * time.Millisecond
	slow := &slowExportStore{pause: deadline / 2}
	e := newEnv(t, Config{StorageTimeout: deadline}, func(s flagadmin.Store) flagadmin.Store { slow.Store = s; return slow })
	manyEvents(t, e, 4*flagadmin.ExportBatchSize)
	srv := httptest.NewServer(e.handler)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/admin/events/export", nil)
	req.Header.Set("Authorization", adminToken)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the export: %v after %d bytes (%s): the storage deadline cut it short", err, len(body), time.Since(start))
	}
	if took := time.Since(start); took < 2*deadline {
		t.Fatalf("the export took %s, less than twice the deadline: the test does not test anything", took)
	}
	lines := strings.Count(string(body), "\n")
	page, err := e.store.SearchEvents(context.Background(), flagadmin.EventQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := page.Total; lines != want {
		t.Errorf("got %d events, want all %d", lines, want)
	}
}

// TestExportFailureAfterTheStorageDeadlineIsLogged: an export that fails
// after running longer than the request's storage deadline (which it
// outlives) logs its failure: the client did not go away.
func TestExportFailureAfterTheStorageDeadlineIsLogged(t *testing.T) {
	const deadline = 50 * time.Millisecond
	fault := &exportFaultStore{after: 3 * flagadmin.ExportBatchSize, err: errors.New(fakeSQL)}
	slow := &slowExportStore{pause: deadline}
	e := newEnv(t, Config{StorageTimeout: deadline}, func(s flagadmin.Store) flagadmin.Store { fault.Store = s; slow.Store = fault; return slow })
	manyEvents(t, e, 4*flagadmin.ExportBatchSize)
	srv := httptest.NewServer(e.handler)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/admin/events/export", nil)
	req.Header.Set("Authorization", adminToken)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading the export: %v, want the abort", err)
	}
	if took := time.Since(start); took < 2*deadline {
		t.Fatalf("the export took %s, less than twice the deadline: the test does not test anything", took)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "SQLSTATE 42P01") {
		t.Errorf("the failure is not logged:\n%s", logs)
	}
}
