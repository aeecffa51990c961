// Package httpfuzz drives the whole HTTP handler of flagadmin with raw
// HTTP/1.1 requests, generated at random from a fixed seed or fuzzed, and
// checks every answer against the API's failure rules (docs/api.md,
// "Errors"): no 5xx, every error a JSON {id, name, message} whose name belongs
// to its status, no SQL, driver, file path or stack text in any body, and
// error bodies under 4 KiB. Its tests run it against every store.
package httpfuzz

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
)

// Serve parses raw as Go's HTTP/1.1 server does and serves it with h. ok
// is false when the parsing fails: Go's server answers such a request
// itself, before any handler runs.
func Serve(h http.Handler, raw []byte) (w *httptest.ResponseRecorder, req *http.Request, ok bool) {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return nil, nil, false
	}
	req.RemoteAddr = "192.0.2.1:1234"
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w, req, true
}

// AllowedNames are the error names of each status a server that neither
// follows nor stands in front of Unleash answers.
var AllowedNames = map[int]string{
	400: "BadDataError",
	401: "AuthenticationRequired",
	403: "NoAccessError",
	404: "NotFoundError",
	405: "MethodNotAllowedError", // the read-only /docs pages
	408: "RequestTimeout",
	413: "ContentTooLarge",
	415: "ContentTypeError",
	500: "InternalError",
	503: "ServiceUnavailable",
}

// MaxErrorBody bounds an error body: under 4 KiB.
const MaxErrorBody = 4096

// leaks are texts of SQL, drivers, file paths and stacks that no body may
// show: the store's, the runtime's, or this machine's.
var leaks = []string{
	"SELECT ", "INSERT ", "SQLSTATE", "sqlite", "SQLite", "pgx", "pq: ", "postgres", "mysql", "Error 1", "syntax error",
	"goroutine ", ".go:", "panic", "runtime.", "/work/", "/home/", "/tmp/", "json: ", "Go struct", "Go value", "cannot unmarshal",
}

// Check checks the answer to a request for method and path (the request
// line's target, for messages).
func Check(w *httptest.ResponseRecorder, method, target string) error {
	body := w.Body.Bytes()
	docs := strings.HasPrefix(target, "/openapi.") || target == "/docs" || strings.HasPrefix(target, "/docs?") || strings.HasPrefix(target, "/docs/")
	if w.Code >= 500 {
		return fmt.Errorf("%s %.200s: status %d: %.300s", method, target, w.Code, body)
	}
	if len(body) > 0 && !docs {
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			return fmt.Errorf("%s %.200s: %d with Content-Type %q", method, target, w.Code, ct)
		}
		if !docs {
			for _, l := range leaks {
				if bytes.Contains(body, []byte(l)) {
					return fmt.Errorf("%s %.200s: %d body shows %q: %.300s", method, target, w.Code, l, body)
				}
			}
		}
	}
	if w.Code < 400 {
		return nil
	}
	if len(body) >= MaxErrorBody {
		return fmt.Errorf("%s %.200s: %d error body of %d bytes", method, target, w.Code, len(body))
	}
	var e struct {
		ID      string `json:"id"`
		Name    string `json:"name"`
		Message string `json:"message"`
		Details []struct {
			Message string `json:"message"`
		} `json:"details"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Errorf("%s %.200s: %d error body is not JSON: %.300s", method, target, w.Code, body)
	}
	if e.ID == "" || e.Message == "" || e.Name != AllowedNames[w.Code] {
		return fmt.Errorf("%s %.200s: %d error body %.300s: want id, message and name %q", method, target, w.Code, body, AllowedNames[w.Code])
	}
	if w.Code == 400 && len(e.Details) == 0 {
		return fmt.Errorf("%s %.200s: 400 without details: %.300s", method, target, body)
	}
	return nil
}

// World names what the generated requests address: tokens of every kind
// and role, and ids that exist.
type World struct {
	Tokens          []string
	Projects        []string
	Features        []string
	ServiceAccounts []string
}

// Generator writes random raw requests from a fixed seed: the same seed
// gives the same requests.
type Generator struct {
	rng   *rand.Rand
	world World
}

// NewGenerator returns a Generator of requests about w.
func NewGenerator(seed uint64, w World) *Generator {
	return &Generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), world: w}
}

func (g *Generator) pick(options ...string) string { return options[g.rng.IntN(len(options))] }
func (g *Generator) chance(percent int) bool       { return g.rng.IntN(100) < percent }

// badTexts are escapes of text the API refuses: NUL, invalid bytes, an
// overlong encoding, a surrogate half, and a malformed escape.
var badTexts = []string{"%00", "x%00y", "%ff", "%c0%80", "%ed%a0%80", "%e2%82", "%ZZ", "%2", "%", "%%41"}

// segment returns a path segment: a known id, a weird one, or bad text.
func (g *Generator) segment(known []string) string {
	switch g.rng.IntN(10) {
	case 0, 1, 2, 3:
		return g.pick(known...)
	case 4:
		return g.pick(badTexts...)
	case 5:
		return g.pick(".", "..", "", "%2e", "%2e%2e", "a%2Fb", "%20", "-1", "0", "99999999999999999999", "1e2", "+1")
	case 6:
		return strings.Repeat(g.pick("x", "%41", "%ff", "é"), 1+g.rng.IntN(300))
	case 7:
		return g.pick(known...) + g.pick(badTexts...)
	}
	return g.word()
}

// word returns a short random word of URL-safe characters.
func (g *Generator) word() string {
	const letters = "abcdefghijklmnopqrstuvwxyzABC0123456789-_.~"
	b := make([]byte, 1+g.rng.IntN(12))
	for i := range b {
		b[i] = letters[g.rng.IntN(len(letters))]
	}
	return string(b)
}

// path returns a request target's path and the method of its route
// ("" for none).
func (g *Generator) path() (string, string) {
	w := g.world
	switch g.rng.IntN(16) {
	case 0, 1, 2:
		return "/api/admin/search/events", "GET"
	case 3, 4:
		return "/api/admin/events/search", "POST"
	case 5, 6:
		return "/api/admin/projects", "GET"
	case 7, 8, 9:
		return "/api/admin/projects/" + g.segment(w.Projects) + "/features/" + g.segment(w.Features) + "/lifecycle/complete", "POST"
	case 10:
		return "/api/admin/service-account/" + g.segment(w.ServiceAccounts), "DELETE"
	}
	return g.otherPath(), ""
}

// otherPath returns a path that is no route, or not quite one.
func (g *Generator) otherPath() string {
	w := g.world
	switch g.rng.IntN(6) {
	case 0:
		return g.pick("/health", "/ready", "/openapi.json", "/api", "/api/", "/api/admin", "/api/admin/nothing", "/", "/docs")
	case 1:
		return g.pick("//api/admin/projects", "/api/admin/projects/../projects", "/api/admin/./projects", "/api/admin/projects/",
			"/api/admin/service-account/.", "/api//admin/search/events", "/api/admin/projects/.", "/health/..", "*")
	case 2:
		return "/api/admin/" + g.segment(w.Projects) + "/" + g.segment(w.Features)
	case 3:
		return "/api/admin/projects/" + g.segment(w.Projects) + "/features/" + g.segment(w.Features) + "/lifecycle/complete/" + g.word()
	}
	return "/" + g.pick(badTexts...) + "/" + g.word()
}

// queryParams are the parameters the query string draws from: the
// declared ones and unknown ones.
var queryParams = []string{
	"query", "feature", "project", "type", "createdBy", "environment", "id", "groupId", "from", "to", "offset", "limit",
	"archived", "colour", "after", "format", "Limit", "",
}

// value returns a query parameter value.
func (g *Generator) value(name string) string {
	switch g.rng.IntN(12) {
	case 0:
		return ""
	case 1:
		return g.pick(badTexts...)
	case 2:
		return "IS:" + g.pick(badTexts...)
	case 3:
		return g.pick("IS:", "IS_ANY_OF:", "IS_ANY_OF:,,", "is:a", "IS:a,b", "IS_ANY_OF:default,checkout", "IS:feature-created",
			"IS_ANY_OF:feature-created,feature-completed", "IS:-42", "IS:1,2,3", "IS:x")
	case 4:
		return g.pick("IS:2025-01-01", "IS:2025-02-30", "IS:2025-1-1", "IS:9999-12-31", "IS:0000-01-01")
	case 5:
		return g.pick("0", "1", "50", "1000", "1001", "-1", "1.0", "1e2", "10.5", " 5", "99999999999999999999", "9223372036854775807",
			"9223372036854775000", "true", "false", "TRUE")
	case 6:
		if g.chance(5) {
			return strings.Repeat(g.pick("a", "%41", "%00", "%ff", "+"), 1000+g.rng.IntN(20000))
		}
		return strings.Repeat(g.pick("a", "%41", "+"), g.rng.IntN(200))
	case 7:
		return g.pick("%E2%82%AC", "%C3%A9", "new+checkout", "100%25", "%22%27%3B--", "a%26b%3Dc", "%0d%0a", "%09")
	case 8:
		return "IS_ANY_OF:" + strings.Repeat(g.word()+",", g.rng.IntN(1200))
	}
	return "IS:" + g.word()
}

// edgeCounts are counts at the edges of the paging parameters' ranges.
var edgeCounts = []string{"0", "1", "49", "50", "100", "101", "999", "1000", "4611686018427387904", "9223372036854775806", "9223372036854775807"}

// plausibleSearch returns the target and method of an event search with
// known filter values and paging at the edges of its range: a request
// that reaches the store.
func (g *Generator) plausibleSearch() (target, method string) {
	if g.chance(50) {
		return "/api/admin/events/search", "POST"
	}
	w := g.world
	var parts []string
	for range g.rng.IntN(3) {
		parts = append(parts, g.pick("project=IS:"+g.pick(w.Projects...), "feature=IS:"+g.pick(w.Features...),
			"project=IS_ANY_OF:"+g.pick(w.Projects...)+","+g.pick(w.Projects...), "type=IS:feature-created", "query=a"))
	}
	parts = append(parts, "offset="+g.pick(edgeCounts...), "limit="+g.pick(edgeCounts...))
	return "/api/admin/search/events?" + strings.Join(parts[:len(parts)-g.rng.IntN(2)], "&"), "GET"
}

// plausibleBody returns a deprecated search body with known filter values
// and paging at the edges of its range.
func (g *Generator) plausibleBody() string {
	fields := []string{`"offset":` + g.pick(edgeCounts...)}
	if g.chance(50) {
		fields = append(fields, `"limit":`+g.pick(edgeCounts...))
	}
	if g.chance(50) {
		fields = append(fields, `"project":`+strconv.Quote(g.pick(g.world.Projects...)))
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// query returns a query string (without "?"), "" for none.
func (g *Generator) query() string {
	if g.chance(25) {
		return ""
	}
	var parts []string
	for range 1 + g.rng.IntN(5) {
		name := g.pick(queryParams...)
		switch g.rng.IntN(10) {
		case 0:
			parts = append(parts, name) // no "="
		case 1:
			parts = append(parts, name+"="+g.value(name), name+"="+g.value(name)) // twice
		case 2:
			parts = append(parts, name+"="+g.value(name)+";"+g.pick(queryParams...)+"=1")
		case 3:
			parts = append(parts, g.pick(badTexts...)+"="+g.value(name))
		default:
			parts = append(parts, name+"="+g.value(name))
		}
	}
	if g.chance(10) {
		parts = append(parts, "")
	}
	return strings.Join(parts, "&")
}

// jsonValues are JSON values for body fields: numbers in every notation,
// escapes of NUL and surrogates, wrong types, raw invalid UTF-8.
var jsonValues = []string{
	`"kept"`, `"discarded"`, `"maybe"`, `""`, `null`, `true`, `1`, `10`, `10.0`, `1e2`, `1E+1`, `10.5`, `1e-1`, `-0`, `-1`, `0`, `101`,
	`1e400`, `-1e400`, `1e999999999999999999999`, `99999999999999999999`, `9223372036854775807`, `9223372036854775000`, `0.0000001e7`, `"10"`, `[]`, `{}`, `[1,2]`, `{"a":1}`,
	`"\u0000"`, `"x\u0000"`, `"\ud800"`, `"\udc00"`, `"\ud800\udc00"`, `"\ud800x"`, "\"\xff\"", "\"\xc0\x80\"", "\"\xed\xa0\x80\"",
	`"feature-created"`, `"no-such-type"`, `"default"`, `"checkout"`, `"new-checkout"`, `"\"'; DROP TABLE events; --"`,
	`"%"`, `"_"`, `"é"`, `"\n"`,
}

// bodyFields are the fields bodies draw from.
var bodyFields = []string{"status", "statusValue", "type", "project", "feature", "query", "limit", "offset", "extra", "", "\xff", "status"}

// body returns a request body.
func (g *Generator) body() string {
	switch g.rng.IntN(14) {
	case 0:
		return ""
	case 1:
		return g.pick(`{`, `{"status":`, `{"status":"kept",}`, `{"limit" 1}`, `{} {}`, `[`, `nul`, `"kept"`, `[1]`, `1`, `null`, "\xff", "{\x00}",
			`{"a":1}}`, "\xef\xbb\xbf{}", `{'status':'kept'}`, `{"status":"kept"`)
	case 2:
		depth := 1 + g.rng.IntN(12000)
		return `{"extra":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}"
	case 3:
		return `{"query":"` + strings.Repeat(g.pick("q", "é", `\u0000`, "\xff"), g.rng.IntN(5000)) + `"}`
	case 4:
		return `{"statusValue":"` + strings.Repeat("v", 200+g.rng.IntN(100)) + `","status":"kept"}`
	}
	var fields []string
	for range g.rng.IntN(5) {
		fields = append(fields, strconv.Quote(g.pick(bodyFields...))+":"+g.pick(jsonValues...))
	}
	if g.chance(50) {
		fields = append(fields, `"status":`+g.pick(`"kept"`, `"discarded"`))
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// Next returns the next raw request.
func (g *Generator) Next() []byte {
	target, method := g.path()
	plausible := g.chance(5)
	switch {
	case plausible:
		target, method = g.plausibleSearch()
	case method == "" || g.chance(20):
		method = g.pick("GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS", "get", "FOO")
	}
	if q := g.query(); !plausible && (q != "" || g.chance(5)) {
		target += "?" + q
	}
	var b strings.Builder
	b.WriteString(method + " " + target + " HTTP/1.1\r\nHost: flagadmin.test\r\n")
	if !g.chance(10) {
		token := g.pick(g.world.Tokens...)
		switch g.rng.IntN(8) {
		case 0:
			token = "Bearer " + token
		case 1:
			token = g.pick("", "Bearer", "*:*.nope", "user:nope", "user:", "*:*.", "x:y.z", strings.Repeat("t", 3000), "user:\x7f")
		}
		b.WriteString("Authorization: " + token + "\r\n")
	}
	if g.chance(60) {
		b.WriteString("Accept: " + g.pick("application/json", "json", "text/html", "*/*", "application/xml", "application/cbor",
			"application/json;q=0", "text/event-stream", "garbage;;;q=x", "") + "\r\n")
	}
	if g.chance(30) {
		b.WriteString("X-Request-Id: " + g.pick("abc", "../../etc", strings.Repeat("r", 200), "a b") + "\r\n")
	}
	body := ""
	switch {
	case plausible && method == "POST":
		body = g.plausibleBody()
	case method == "POST" || method == "PUT" || method == "PATCH" || g.chance(5):
		body = g.body()
	}
	if body != "" || g.chance(20) {
		b.WriteString("Content-Type: " + g.pick("application/json", "application/json", "application/json; charset=utf-8",
			"text/plain", "application/merge-patch+json", "application/x-www-form-urlencoded", "", "application/json; charset=\"") + "\r\n")
	}
	switch g.rng.IntN(12) {
	case 0: // chunked, well formed
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		if body != "" {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", len(body), body)
		}
		b.WriteString("0\r\n\r\n")
	case 1: // chunked, broken
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		b.WriteString(g.pick("zz\r\n"+body+"\r\n0\r\n\r\n", fmt.Sprintf("%x\r\n%s", len(body)+5, body), "2\r\n{}}}\r\n0\r\n\r\n",
			fmt.Sprintf("%x\r\n%s\r\n", len(body), body), "-1\r\n\r\n", "ffffffffffffffffff\r\n"))
	case 2: // fewer bytes than Content-Length, or more than the limit announced
		if g.chance(20) {
			fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", 2<<20, body)
			break
		}
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body)+1+g.rng.IntN(100), body)
	default:
		if body != "" || g.chance(30) {
			fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
		}
		b.WriteString("\r\n" + body)
	}
	return []byte(b.String())
}
