package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestQueryStringHygiene: the input rules for query strings, on every
// operation with query parameters.
func TestQueryStringHygiene(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []struct {
		name, path string
		status     int
		detail     string // the detail path a 400 must name
	}{
		{"malformed escape in limit", searchPath + "?limit=%ZZ", 400, "limit"},
		{"malformed escape in query", searchPath + "?query=%zz", 400, "query"},
		{"truncated escape", searchPath + "?feature=IS:a%2", 400, "feature"},
		{"malformed escape in archived", projectsPath + "?archived=%ZZ", 400, "archived"},
		{"malformed escape in an unknown parameter", searchPath + "?colour=%zz", 400, "colour"},
		{"malformed escape in a key", searchPath + "?%zz=1", 400, "%zz"},
		{"semicolon separator", searchPath + "?limit=5;offset=1", 400, "limit"},
		{"empty limit", searchPath + "?limit=", 400, "limit"},
		{"empty limit without =", searchPath + "?limit", 400, "limit"},
		{"empty offset", searchPath + "?offset=", 400, "offset"},
		{"empty filter", searchPath + "?type=", 400, "type"},
		{"empty from", searchPath + "?from=", 400, "from"},
		{"empty archived", projectsPath + "?archived=", 400, "archived"},
		{"filter given twice", searchPath + "?type=IS:a&type=IS:b", 400, "type"},
		{"limit given twice", searchPath + "?limit=1&limit=1", 400, "limit"},
		{"archived given twice", projectsPath + "?archived=true&archived=true", 400, "archived"},
		{"empty query means no filter", searchPath + "?query=", 200, ""},
		{"unknown parameters are ignored", searchPath + "?colour=blue&colour=red&x=", 200, ""},
		{"empty pairs are ignored", searchPath + "?&&limit=1&", 200, ""},
		{"escapes decode", searchPath + "?type=IS%3Afeature-created&limit=%31", 200, ""},
		{"plus is a space", searchPath + "?query=new+checkout", 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodGet, path: c.path, token: adminToken})
			if c.status == http.StatusOK {
				if w.Code != http.StatusOK {
					t.Fatalf("status: got %d, want 200; body %s", w.Code, w.Body)
				}
				return
			}
			wantDetailPath(t, wantError(t, w, c.status, nameBadData), c.detail)
		})
	}
}

// badTextCases are values (NUL, invalid UTF-8) refused in any parameter, path
// segment or JSON string, as URL escapes.
var badTextCases = map[string]string{
	"NUL":            "x%00",
	"invalid byte":   "%ff",
	"overlong":       "%c0%80",
	"lone surrogate": "%ed%a0%80",
}

// TestTextRuleOverHTTP: NUL and invalid UTF-8 in every parameter, path
// segment and body string that reaches the domain are 400 naming it. The
// same cases run against SQLite and PostgreSQL in
// TestTextRuleOverHTTPOnSQL (sqlstores_test.go).
func TestTextRuleOverHTTP(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	for _, c := range textRuleCases() {
		t.Run(c.name, func(t *testing.T) {
			wantDetailPath(t, wantError(t, e.do(t, c.req), http.StatusBadRequest, nameBadData), c.path)
		})
	}
}

// textRuleCase is one request carrying bad text, and the name it must get.
type textRuleCase struct {
	name string
	req  request
	path string
}

func textRuleCases() []textRuleCase {
	var out []textRuleCase
	for name, bad := range badTextCases {
		get := func(label, query, path string) {
			out = append(out, textRuleCase{label + "/" + name, request{method: http.MethodGet, path: searchPath + "?" + query, token: adminToken}, path})
		}
		get("feature", "feature=IS:"+bad, "feature")
		get("project", "project=IS:"+bad, "project")
		get("environment", "environment=IS:"+bad, "environment")
		get("type", "type=IS_ANY_OF:feature-created,"+bad, "type")
		get("query", "query="+bad, "query")
		get("limit", "limit="+bad, "limit")
		out = append(out,
			textRuleCase{"archived/" + name, request{method: http.MethodGet, path: projectsPath + "?archived=" + bad, token: adminToken}, "archived"},
			textRuleCase{"lifecycle projectId/" + name, request{method: http.MethodPost, path: completeURL(bad, "new-checkout"), token: adminToken, body: `{"status":"kept"}`}, "projectId"},
			textRuleCase{"lifecycle featureName/" + name, request{method: http.MethodPost, path: completeURL("default", bad), token: adminToken, body: `{"status":"kept"}`}, "featureName"},
			textRuleCase{"service account id/" + name, request{method: http.MethodDelete, path: "/api/admin/service-account/" + bad, token: adminToken}, "id"},
		)
		raw := unescape(bad)
		if name == "NUL" {
			raw = `x\u0000` // a raw NUL in a JSON string is a syntax error; escaped, it is text
		}
		post := func(label, body, path string) {
			out = append(out, textRuleCase{label + "/" + name, request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: body}, path})
		}
		post("deprecated project", `{"project":"`+raw+`"}`, "project")
		post("deprecated feature", `{"feature":"`+raw+`"}`, "feature")
		post("deprecated type", `{"type":"`+raw+`"}`, "type")
		post("deprecated query", `{"query":"`+raw+`"}`, "query")
		out = append(out, textRuleCase{"statusValue/" + name, request{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"kept","statusValue":"` + raw + `"}`}, "statusValue"})
	}
	for _, esc := range []string{`\u0000`, `x\u0000`} {
		out = append(out,
			textRuleCase{"deprecated feature " + esc, request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: `{"feature":"` + esc + `"}`}, "feature"},
			textRuleCase{"statusValue " + esc, request{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"kept","statusValue":"` + esc + `"}`}, "statusValue"},
		)
	}
	for _, esc := range []string{`\ud800`, `\udc00x`, `\ud800\u0041`} {
		out = append(out,
			textRuleCase{"deprecated project " + esc, request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: `{"project":"` + esc + `"}`}, "project"},
			textRuleCase{"statusValue " + esc, request{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"kept","statusValue":"` + esc + `"}`}, "statusValue"},
		)
	}
	return out
}

// unescape decodes a %XX string into its raw bytes.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s)+0 {
			var v byte
			for _, c := range []byte(s[i+1 : i+3]) {
				v <<= 4
				switch {
				case c >= '0' && c <= '9':
					v |= c - '0'
				case c >= 'a' && c <= 'f':
					v |= c - 'a' + 10
				}
			}
			b.WriteByte(v)
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestJSONBodyHygiene: the input rules for JSON bodies: numbers, syntax
// errors, invalid UTF-8 and the API's own words.
func TestJSONBodyHygiene(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []struct {
		name, path, body string
		status           int
		detail, message  string // the first detail's path and a part of the message
	}{
		{"10.0 is 10", deprecatedPath, `{"limit":10.0}`, 200, "", ""},
		{"1e2 is 100", deprecatedPath, `{"limit":1e2}`, 200, "", ""},
		{"0.2e1 is 2", deprecatedPath, `{"limit":0.2e1,"offset":0.0}`, 200, "", ""},
		{"1e3 is 1000, out of range", deprecatedPath, `{"limit":1e3}`, 400, "limit", "limit: must be an integer from 1 to 100"},
		{"10.5", deprecatedPath, `{"limit":10.5}`, 400, "limit", "limit: must be an integer from 1 to 100"},
		{"1e-1", deprecatedPath, `{"limit":1e-1}`, 400, "limit", "limit: must be an integer from 1 to 100"},
		{"beyond int64", deprecatedPath, `{"limit":1e30}`, 400, "limit", "limit: must be an integer from 1 to 100"},
		{"offset 0.5", deprecatedPath, `{"offset":0.5}`, 400, "offset", "offset: must be an integer of 0 or more"},
		{"limit a string", deprecatedPath, `{"limit":"10"}`, 400, "limit", "limit: must be an integer from 1 to 100"},
		{"type a number", deprecatedPath, `{"type":5}`, 400, "type", "type: must be a string"},
		{"not an object", deprecatedPath, `[1]`, 400, "body", "must be a JSON object"},
		{"syntax: cut short", deprecatedPath, `{"limit":`, 400, "body", "byte offset 9"},
		{"syntax: bad character", deprecatedPath, `{"limit" 1}`, 400, "body", "unexpected '1' at byte offset 9"},
		{"syntax: trailing data", deprecatedPath, `{} {}`, 400, "body", "unexpected '{' at byte offset 3"},
		{"syntax: invalid byte outside strings", deprecatedPath, "{\xff}", 400, "body", "byte 0xff at byte offset 1"},
		{"invalid UTF-8 in an unknown field", deprecatedPath, "{\"colour\":\"\xff\"}", 400, "colour", "must be valid UTF-8"},
		{"invalid UTF-8 in a field name", deprecatedPath, "{\"\xff\":1}", 400, "body", "field names must be valid UTF-8"},
		{"lifecycle: the domain's words for status", completePath, `{"status":"maybe"}`, 400, "status", "status: must be kept or discarded"},
		{"lifecycle: missing status", completePath, `{}`, 400, "status", "status: is required"},
		{"lifecycle: statusValue too long", completePath, `{"status":"kept","statusValue":"` + strings.Repeat("é", 256) + `"}`, 400, "statusValue", "statusValue: must be at most 255 characters"},
		{"lifecycle: unknown field", completePath, `{"status":"kept","reason":1}`, 400, "reason", "reason: is not a field"},
		{"lifecycle: syntax", completePath, `{"status":"kept",}`, 400, "body", "unexpected '}' at byte offset 17"},
		{"lifecycle: empty body", completePath, ``, 400, "body", "is required"},
		{"lifecycle: 255 characters", completePath, `{"status":"kept","statusValue":"` + strings.Repeat("é", 255) + `"}`, 200, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodPost, path: c.path, token: adminToken, body: c.body, contentType: "application/json"})
			if c.status == http.StatusOK {
				if w.Code != http.StatusOK {
					t.Fatalf("status: got %d, want 200; body %s", w.Code, w.Body)
				}
				return
			}
			got := wantError(t, w, c.status, nameBadData)
			if got.Details[0].Path != c.detail {
				t.Errorf("details[0].path: got %q, want %q (%s)", got.Details[0].Path, c.detail, w.Body)
			}
			if !strings.Contains(got.Message, c.message) {
				t.Errorf("message %q does not say %q", got.Message, c.message)
			}
			for _, goWords := range []string{"json:", "Go struct", "Go value", "unmarshal", "JSON input", "expected required"} {
				if strings.Contains(w.Body.String(), goWords) {
					t.Errorf("the body speaks Go (%q): %s", goWords, w.Body)
				}
			}
		})
	}
	// The integral notations page like the integers they are.
	a := decodeJSON[eventsResponse](t, e.do(t, request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: `{"limit":2.0,"offset":1e0}`}))
	b := decodeJSON[eventsResponse](t, e.do(t, request{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: `{"limit":2,"offset":1}`}))
	if len(a.Events) != 2 || string(a.Events[0]) != string(b.Events[0]) {
		t.Errorf("limit 2.0/offset 1e0 gave %d events, want the page of limit 2/offset 1", len(a.Events))
	}
}

func TestParseJSONInteger(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"10", 10, true}, {"-3", -3, true}, {"10.0", 10, true}, {"1e2", 100, true}, {"1E+2", 100, true},
		{"1.5e1", 15, true}, {"150e-1", 15, true}, {"-0.0", 0, true}, {"0e999999999999999999999", 0, true},
		{"9223372036854775807", 9223372036854775807, true}, {"9223372036854775807.0", 9223372036854775807, true},
		{"9223372036854775808", 0, false}, {"10.5", 0, false}, {"1e-1", 0, false}, {"1e30", 0, false},
		{"1e-9223372036854775808", 0, false}, {"1e9223372036854775807", 0, false}, {"1" + strings.Repeat("0", 30) + "e-30", 1, true},
	}
	for _, c := range cases {
		got, ok := parseJSONInteger(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("parseJSONInteger(%s) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestErrorBodiesBounded: a message quotes at most 100 characters of the
// input and an error body stays under 4 KiB.
func TestErrorBodiesBounded(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	huge := strings.Repeat("z", 300_000)
	many := searchPath + "?"
	for _, p := range []string{"feature", "project", "type", "createdBy", "environment", "id", "groupId", "from", "to", "limit", "offset", "query"} {
		many += p + "=" + strings.Repeat("%01", 2000) + "&"
	}
	cases := []request{
		{method: http.MethodGet, path: "/api/admin/" + huge, token: adminToken},
		{method: http.MethodGet, path: "/" + huge},
		{method: http.MethodGet, path: searchPath + "?feature=" + huge, token: adminToken},
		{method: http.MethodGet, path: searchPath + "?from=" + huge + "&to=" + huge + "&limit=" + huge + "&offset=" + huge + "&createdBy=IS:" + huge + "&type=IS:" + huge, token: adminToken},
		{method: http.MethodGet, path: many, token: adminToken},
		{method: http.MethodGet, path: searchPath + "?" + huge + "=%zz", token: adminToken},
		{method: http.MethodGet, path: projectsPath + "?archived=" + huge, token: adminToken},
		{method: http.MethodPost, path: completeURL(huge, "x"), token: adminToken, body: `{"status":"kept"}`},
		{method: http.MethodPost, path: completeURL("default", huge), token: adminToken, body: `{"status":"kept"}`},
		{method: http.MethodDelete, path: "/api/admin/service-account/" + huge, token: adminToken},
		{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: `{"type":"` + huge + `"}`},
		{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"kept","` + huge + `":1}`},
	}
	for i, r := range cases {
		w := e.do(t, r)
		if w.Code < 400 {
			t.Errorf("case %d: got %d, want an error", i, w.Code)
			continue
		}
		wantError(t, w, w.Code, nameOf(t, w))
		if w.Body.Len() >= 4096 {
			t.Errorf("case %d: error body of %d bytes, want under 4 KiB", i, w.Body.Len())
		}
		if strings.Contains(w.Body.String(), strings.Repeat("z", 101)) {
			t.Errorf("case %d: the body quotes more than 100 characters of the input", i)
		}
	}
	// The bound itself, on an error with many long details.
	var details []errorDetail
	for range 50 {
		details = append(details, errorDetail{Path: strings.Repeat("p", 500), Message: strings.Repeat("\x01", 1000)})
	}
	got := toAPIError(badData(details))
	if size := encodedSize(got); size > maxErrorBody || len(got.Details) == 0 {
		t.Errorf("bounded body: %d bytes with %d details", size, len(got.Details))
	}
}

// nameOf returns the name of an error response.
func nameOf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var e errorResponse
	_ = json.Unmarshal(w.Body.Bytes(), &e)
	return e.Name
}

// TestAlwaysJSON: every response is application/json whatever Accept says.
func TestAlwaysJSON(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	reqs := []request{
		{method: http.MethodGet, path: searchPath, token: adminToken},
		{method: http.MethodGet, path: searchPath + "?limit=0", token: adminToken},
		{method: http.MethodGet, path: projectsPath, token: adminToken},
		{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: `{}`},
		{method: http.MethodPost, path: deprecatedPath, token: adminToken, body: `{"limit":0}`},
		{method: http.MethodPost, path: completePath, token: adminToken, body: `{"status":"x"}`},
		{method: http.MethodDelete, path: "/api/admin/service-account/999", token: adminToken},
		{method: http.MethodGet, path: projectsPath},
	}
	for _, accept := range []string{"json", "text/html", "application/xml", "application/cbor", "*/*;q=0", "application/json;q=0", "", "garbage;;;"} {
		for _, r := range reqs {
			r.header = map[string]string{"Accept": accept}
			w := e.do(t, r)
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Accept %q, %s %s: %d with Content-Type %q", accept, r.method, r.path, w.Code, ct)
			}
		}
	}
}

// TestPathsNeverRedirect: a path ServeMux would clean and redirect is no
// route: 404 NotFoundError as JSON.
func TestPathsNeverRedirect(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []request{
		{method: http.MethodGet, path: "//api/admin/projects", token: adminToken},
		{method: http.MethodGet, path: "/api/admin//projects", token: adminToken},
		{method: http.MethodGet, path: "/api/admin/projects/../projects", token: adminToken},
		{method: http.MethodGet, path: "/api/admin/./projects", token: adminToken},
		{method: http.MethodGet, path: "/api/admin/projects/.", token: adminToken},
		{method: http.MethodDelete, path: "/api/admin/service-account/.", token: adminToken},
		{method: http.MethodDelete, path: "/api/admin/service-account/..", token: adminToken},
		{method: http.MethodPost, path: "/api/admin/projects/default/features/new-checkout/lifecycle/complete/..", token: adminToken, body: `{"status":"kept"}`},
		{method: http.MethodGet, path: "/health/", token: adminToken},
		{method: http.MethodGet, path: "//health"},
	}
	for _, r := range cases {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			w := e.do(t, r)
			wantError(t, w, http.StatusNotFound, nameNotFound)
			if loc := w.Header().Get("Location"); loc != "" {
				t.Errorf("Location %q: the path was redirected", loc)
			}
		})
	}
}

// TestHeaderLimit: headers over the API's limit are a JSON 400 when the
// server's own limit is above it.
func TestHeaderLimit(t *testing.T) {
	e := newEnv(t, Config{MaxHeaderBytes: 4 << 10}, nil)
	srv := httptest.NewUnstartedServer(e.handler)
	srv.Config.MaxHeaderBytes = 64 << 10
	srv.Start()
	defer srv.Close()
	for _, size := range []int{8 << 10, 60 << 10} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/health", nil)
		req.Header.Set("X-Padding", strings.Repeat("p", size))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), nameBadData) {
			t.Errorf("%d bytes of headers: got %d %q %s", size, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/health", nil)
	req.Header.Set("X-Padding", strings.Repeat("p", 2<<10))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("headers under the limit: got %d", resp.StatusCode)
	}
}

// rawExchange writes raw to a new connection to srv, half-closes it when
// halfClose is set, and reads the response.
func rawExchange(t *testing.T, addr, raw string, halfClose bool) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		_ = conn.(*net.TCPConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// TestBodyFraming: a body cut short or badly framed is a 400 BadDataError,
// one that stops arriving a 408 RequestTimeout, never a 500; over raw
// connections, on both operations with a body.
func TestBodyFraming(t *testing.T) {
	e := newEnv(t, Config{BodyReadTimeout: 300 * time.Millisecond}, nil)
	srv := httptest.NewServer(e.handler)
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	for _, path := range []string{deprecatedPath, completePath} {
		head := "POST " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: " + adminToken + "\r\nContent-Type: application/json\r\n"
		cases := []struct {
			name      string
			raw       string
			halfClose bool
			status    int
			name2     string
		}{
			{"fewer bytes than Content-Length, then a half-close", head + "Content-Length: 40\r\n\r\n{\"status\":", true, 400, nameBadData},
			{"chunk size not hex", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", false, 400, nameBadData},
			{"chunk longer than announced", head + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}}}\r\n0\r\n\r\n", false, 400, nameBadData},
			{"chunks cut short, then a half-close", head + "Transfer-Encoding: chunked\r\n\r\n10\r\n{\"st", true, 400, nameBadData},
			{"no last chunk, then a half-close", head + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n", true, 400, nameBadData},
			{"fewer bytes than Content-Length, then silence", head + "Content-Length: 40\r\n\r\n{\"status\":", false, 408, nameRequestTimeout},
			{"chunks stop arriving", head + "Transfer-Encoding: chunked\r\n\r\n10\r\n{\"st", false, 408, nameRequestTimeout},
		}
		for _, c := range cases {
			t.Run(path+"/"+c.name, func(t *testing.T) {
				resp, body := rawExchange(t, addr, c.raw, c.halfClose)
				var got errorResponse
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatalf("%d: body is not JSON: %q", resp.StatusCode, body)
				}
				if resp.StatusCode != c.status || got.Name != c.name2 || resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("got %d %s (%s), want %d %s", resp.StatusCode, got.Name, resp.Header.Get("Content-Type"), c.status, c.name2)
				}
				if c.status == http.StatusBadRequest && (len(got.Details) == 0 || got.Details[0].Path != "body") {
					t.Errorf("details: got %+v, want path body", got.Details)
				}
			})
		}
	}
	// The server still answers.
	resp, _ := rawExchange(t, addr, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", false)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health after: got %d", resp.StatusCode)
	}
}
