package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/upstream"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// writeError writes errors by kind as the admin API does (status and
// name; httpapi holds the one mapping, which cmd/flagadmin's tests check
// through the gateway).
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, name := http.StatusInternalServerError, "InternalError"
	switch {
	case errors.Is(err, upstream.ErrBadGateway):
		status, name = http.StatusBadGateway, "BadGatewayError"
	case errors.Is(err, upstream.ErrTimeout):
		status, name = http.StatusGatewayTimeout, "GatewayTimeout"
	case errors.Is(err, flagadmin.ErrValidation):
		status, name = http.StatusBadRequest, "BadDataError"
	case errors.Is(err, os.ErrDeadlineExceeded):
		status, name = http.StatusRequestTimeout, "RequestTimeout"
	case errors.Is(err, flagadmin.ErrAuthenticationRequired):
		status, name = http.StatusUnauthorized, "AuthenticationRequired"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"name": name, "message": err.Error()})
}

// received is a request as the upstream got it.
type received struct {
	method, uri, host string
	header            http.Header
	body              string
}

// fakeUpstream is a test upstream that records what it receives and answers
// with its handler.
type fakeUpstream struct {
	*httptest.Server
	mu  sync.Mutex
	got []received
}

func (u *fakeUpstream) requests() []received {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]received(nil), u.got...)
}

// newUpstream serves handler, recording every request (and, unless the
// handler reads it itself, its body).
func newUpstream(t testing.TB, handler http.HandlerFunc, readBody bool) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := received{method: r.Method, uri: r.RequestURI, host: r.Host, header: r.Header.Clone()}
		if readBody {
			b, _ := io.ReadAll(r.Body)
			rec.body = string(b)
		}
		u.mu.Lock()
		u.got = append(u.got, rec)
		u.mu.Unlock()
		if handler != nil {
			handler(w, r)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// env is a Gateway served by an http.Server, as cmd/flagadmin serves it.
type env struct {
	gw     *Gateway
	url    string // the gateway's base URL
	addr   string
	logs   *syncbuffer.Buffer
	client *http.Client
}

// localPrefix is what the test's local handler serves.
const localPrefix = "/local/"

// localHandler answers "local <path>".
var localHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "local "+r.URL.Path)
})

// selfUpstream as newEnv's upstream URL is the gateway's own address.
const selfUpstream = "self"

// newEnv serves a Gateway in front of upstreamURL; edit changes its
// configuration.
func newEnv(t testing.TB, upstreamURL string, edit func(*Config)) *env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if upstreamURL == selfUpstream {
		upstreamURL = "http://" + ln.Addr().String()
	}
	u, err := url.Parse(upstreamURL)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncbuffer.Buffer{}
	cfg := Config{
		Upstream: u,
		Local:    localHandler,
		Serves: func(r *http.Request) bool {
			// As the admin API's routes: both writes' routes are its own.
			return strings.HasPrefix(r.URL.Path, localPrefix) || strings.HasSuffix(r.URL.Path, "/lifecycle/complete") ||
				strings.HasPrefix(r.URL.Path, "/api/admin/service-account/")
		},
		WriteError: writeError,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if edit != nil {
		edit(&cfg)
	}
	gw, err := New(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw, DisableGeneralOptionsHandler: true,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: time.Minute}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	client := &http.Client{
		Transport:     &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(client.CloseIdleConnections)
	return &env{gw: gw, url: "http://" + ln.Addr().String(), addr: ln.Addr().String(), logs: logs, client: client}
}

// do sends a request to the gateway and returns the answer with its body read.
func (e *env) do(t *testing.T, method, path string, body io.Reader, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp, string(b)
}

// errorName decodes the name of an error body.
func errorName(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("the body %q is not a JSON error: %v", body, err)
	}
	return e.Name
}
