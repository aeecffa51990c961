package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestForwardsRequestsAsTheyCame: method, path (escapes kept), query
// (repeated, empty and unparseable parameters kept), headers and body
// reach the upstream; the answer's status, headers and body come back.
func TestForwardsRequestsAsTheyCame(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", "yes")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "answer body")
	}, true)
	e := newEnv(t, up.URL, nil)
	const target = "/api/admin/features/a%2Fb/x?a=1&a=2&b=%20c;d=e&empty=&q=%E2%9C%93"
	resp, body := e.do(t, http.MethodPatch, target, strings.NewReader(`{"op":"replace"}`),
		map[string]string{"Content-Type": "application/json", "Authorization": "user:secret", "Cookie": "unleash-session=s1", "X-Custom": "kept"})
	if resp.StatusCode != http.StatusTeapot || body != "answer body" || resp.Header.Get("X-Upstream") != "yes" ||
		strings.Join(resp.Header.Values("Set-Cookie"), ";") != "a=1;b=2" {
		t.Errorf("answer: %d %q %v; want 418 with the upstream's body and headers", resp.StatusCode, body, resp.Header)
	}
	if resp.Header.Get(SourceHeader) != "" {
		t.Errorf("a forwarded answer carries %s: %q", SourceHeader, resp.Header.Get(SourceHeader))
	}
	got := up.requests()
	if len(got) != 1 {
		t.Fatalf("the upstream got %d requests, want 1", len(got))
	}
	r := got[0]
	if r.method != http.MethodPatch || r.uri != target || r.body != `{"op":"replace"}` {
		t.Errorf("upstream got %s %s %q; want PATCH %s with the body", r.method, r.uri, r.body, target)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Authorization": "user:secret", "Cookie": "unleash-session=s1", "X-Custom": "kept"} {
		if r.header.Get(k) != v {
			t.Errorf("upstream got %s %q, want %q", k, r.header.Get(k), v)
		}
	}
}

// TestForwardedHeaders: X-Forwarded-For is the client's address (one the
// client sent is not trusted), -Proto and -Host are added; the Host
// header never picks the upstream.
func TestForwardedHeaders(t *testing.T) {
	up := newUpstream(t, nil, true)
	e := newEnv(t, up.URL, nil)
	e.do(t, http.MethodGet, "/api/admin/features", nil, map[string]string{
		"Host": "evil.example", "X-Forwarded-For": "6.6.6.6", "X-Forwarded-Host": "forged.example", "Forwarded": "for=6.6.6.6"})
	got := up.requests()
	if len(got) != 1 {
		t.Fatalf("the upstream got %d requests, want 1 (the Host header must not pick another)", len(got))
	}
	h := got[0].header
	upHost := strings.TrimPrefix(up.URL, "http://")
	if got[0].host != upHost {
		t.Errorf("upstream got Host %q, want its own %q", got[0].host, upHost)
	}
	if h.Get("X-Forwarded-For") != "127.0.0.1" || h.Get("X-Forwarded-Proto") != "http" || h.Get("X-Forwarded-Host") != "evil.example" || h.Get("Forwarded") != "" {
		t.Errorf("upstream got X-Forwarded-For %q, -Proto %q, -Host %q, Forwarded %q; want 127.0.0.1, http, evil.example and none",
			h.Get("X-Forwarded-For"), h.Get("X-Forwarded-Proto"), h.Get("X-Forwarded-Host"), h.Get("Forwarded"))
	}
}

// TestHopByHopHeadersStripped: hop-by-hop headers, and those Connection
// names, go neither to the upstream nor back to the client.
func TestHopByHopHeadersStripped(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Connection", "X-Up-Hop")
		h.Set("X-Up-Hop", "1")
		h.Set("Keep-Alive", "timeout=1")
		h.Set("Proxy-Authenticate", "Basic")
		h.Set("X-Up-Kept", "1")
		h.Set(SourceHeader, "local") // never on a forwarded answer
		h.Set(LagHeader, "9")
	}, true)
	e := newEnv(t, up.URL, nil)
	resp, _ := e.do(t, http.MethodGet, "/api/admin/x", nil, map[string]string{
		"Connection": "keep-alive, X-Hop", "X-Hop": "secret", "Keep-Alive": "timeout=5", "Proxy-Authorization": "Basic eA==",
		"Te": "gzip", "X-Kept": "1"})
	h := up.requests()[0].header
	for _, k := range []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Te"} {
		if v := h.Values(k); len(v) > 0 {
			t.Errorf("the upstream got hop-by-hop header %s: %q", k, v)
		}
	}
	if h.Get("X-Kept") != "1" {
		t.Errorf("the upstream did not get X-Kept")
	}
	for _, k := range []string{"X-Up-Hop", "Keep-Alive", "Proxy-Authenticate", SourceHeader, LagHeader} {
		if v := resp.Header.Values(k); len(v) > 0 {
			t.Errorf("the client got header %s: %q", k, v)
		}
	}
	if resp.Header.Get("X-Up-Kept") != "1" {
		t.Errorf("the client did not get X-Up-Kept")
	}
}

// TestLocalRoutes: what Serves accepts is answered locally with
// X-Flagadmin-Source: local and never reaches the upstream; the two
// writes go upstream whatever Serves says.
func TestLocalRoutes(t *testing.T) {
	up := newUpstream(t, nil, true)
	e := newEnv(t, up.URL, nil)
	resp, body := e.do(t, http.MethodGet, localPrefix+"search", nil, nil)
	if body != "local "+localPrefix+"search" || resp.Header.Get(SourceHeader) != "local" {
		t.Errorf("local route: %q, %s %q; want the local answer marked local", body, SourceHeader, resp.Header.Get(SourceHeader))
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream got %d requests for a local route", n)
	}
	resp, _ = e.do(t, http.MethodPost, "/api/admin/projects/p/features/f/lifecycle/complete", strings.NewReader(`{"status":"kept"}`), nil)
	if len(up.requests()) != 1 || resp.Header.Get(SourceHeader) != "" {
		t.Errorf("lifecycle complete: upstream got %d requests, %s %q; want it forwarded", len(up.requests()), SourceHeader, resp.Header.Get(SourceHeader))
	}
	if !e.gw.Forwards(httpRequest(t, http.MethodGet, "/anything")) || e.gw.Forwards(httpRequest(t, http.MethodGet, localPrefix+"x")) {
		t.Errorf("Forwards does not match where ServeHTTP sends requests")
	}
}

func httpRequest(t *testing.T, method, target string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, "http://x"+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestUpstreamAnswersPassThrough: redirects are not followed (the client
// sees them), and 4xx/5xx bodies arrive byte for byte.
func TestUpstreamAnswersPassThrough(t *testing.T) {
	const page = "<html><body>Unleash is down for maintenance\x00\xff</body></html>"
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "http://unleash.internal/login?next=%2F", http.StatusFound)
		case "/error":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, page)
		case "/missing":
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"name":"NotFoundError","message":"The path you were looking for is not available."}`)
		}
	}, true)
	e := newEnv(t, up.URL, nil)
	resp, _ := e.do(t, http.MethodGet, "/redirect", nil, nil)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://unleash.internal/login?next=%2F" || len(up.requests()) != 1 {
		t.Errorf("redirect: %d Location %q after %d upstream requests; want 302 passed through, not followed",
			resp.StatusCode, resp.Header.Get("Location"), len(up.requests()))
	}
	resp, body := e.do(t, http.MethodGet, "/error", nil, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || body != page || resp.Header.Get("Content-Type") != "text/html" {
		t.Errorf("5xx: %d %q %q; want the upstream's 503 and its body unchanged", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, body = e.do(t, http.MethodDelete, "/missing", nil, nil)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "is not available") {
		t.Errorf("4xx: %d %q; want the upstream's 404 unchanged", resp.StatusCode, body)
	}
}

// TestUpstreamUnreachable: 502 BadGatewayError as JSON.
func TestUpstreamUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	e := newEnv(t, closed, nil)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		resp, body := e.do(t, method, "/api/admin/features", strings.NewReader("{}"), nil)
		if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Content-Type") != "application/json" || errorName(t, body) != "BadGatewayError" {
			t.Errorf("%s to a closed port: %d %s; want 502 BadGatewayError", method, resp.StatusCode, body)
		}
	}
}

// TestUpstreamTooSlow: no answer within Timeout gives 504 GatewayTimeout
// as JSON; an answer that started in time streams however long it takes.
func TestUpstreamTooSlow(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			w.WriteHeader(http.StatusOK)
			http.NewResponseController(w).Flush()
			select {
			case <-time.After(600 * time.Millisecond):
			case <-r.Context().Done():
			}
			_, _ = io.WriteString(w, "late but whole")
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, true)
	defer close(release)
	e := newEnv(t, up.URL, func(c *Config) { c.Timeout = 300 * time.Millisecond })
	start := time.Now()
	resp, body := e.do(t, http.MethodGet, "/api/admin/slow", nil, nil)
	if resp.StatusCode != http.StatusGatewayTimeout || errorName(t, body) != "GatewayTimeout" {
		t.Errorf("a silent upstream: %d %s; want 504 GatewayTimeout", resp.StatusCode, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the 504 took %v", d)
	}
	resp, body = e.do(t, http.MethodGet, "/slow-body", nil, nil)
	if resp.StatusCode != http.StatusOK || body != "late but whole" {
		t.Errorf("a slow body after prompt headers: %d %q; want it whole", resp.StatusCode, body)
	}
}

// TestNotIdempotentNeverResent: when the upstream closes a reused
// connection after reading a request, Go's transport sends a GET again on
// a new one (the check that the scene provokes resending), but never a
// POST, a DELETE, nor a bodiless POST carrying an Idempotency-Key.
func TestNotIdempotentNeverResent(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		header       map[string]string
		body         string
		wantSent     int
	}{
		{"GET (resent)", http.MethodGet, nil, "", 2},
		{"POST with a body", http.MethodPost, nil, `{"status":"kept"}`, 1},
		{"DELETE", http.MethodDelete, nil, "", 1},
		{"POST with Idempotency-Key", http.MethodPost, map[string]string{"Idempotency-Key": "k1"}, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newHangingUpUpstream(t)
			e := newEnv(t, up.url, nil)
			// The first request opens a connection the upstream keeps alive.
			if resp, _ := e.do(t, http.MethodGet, "/warm", nil, nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("warm-up: %d", resp.StatusCode)
			}
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			resp, _ := e.do(t, tc.method, "/hang-up", body, tc.header)
			if n := up.hangUps.Load(); n != int32(tc.wantSent) {
				t.Errorf("the upstream got the request %d times, want %d", n, tc.wantSent)
			}
			if tc.wantSent == 1 && resp.StatusCode != http.StatusBadGateway {
				t.Errorf("got %d, want 502", resp.StatusCode)
			}
		})
	}
}

// hangingUpUpstream answers /warm with keep-alive and, for /hang-up,
// reads the whole request and closes the connection without answering.
type hangingUpUpstream struct {
	url     string
	hangUps atomic.Int32
}

func newHangingUpUpstream(t *testing.T) *hangingUpUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	u := &hangingUpUpstream{url: "http://" + ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if req.URL.Path == "/hang-up" {
						u.hangUps.Add(1)
						return
					}
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}()
		}
	}()
	return u
}

// TestForwardedRequestLimits: headers over the limit are refused with 400
// before anything is forwarded; a body that stops arriving gets 408.
func TestForwardedRequestLimits(t *testing.T) {
	up := newUpstream(t, nil, true)
	e := newEnv(t, up.URL, func(c *Config) {
		c.MaxHeaderBytes = 4 << 10
		c.BodyReadTimeout = 300 * time.Millisecond
	})
	resp, body := e.do(t, http.MethodGet, "/api/admin/x", nil, map[string]string{"X-Big": strings.Repeat("a", 5<<10)})
	if resp.StatusCode != http.StatusBadRequest || errorName(t, body) != "BadDataError" || len(up.requests()) != 0 {
		t.Errorf("large headers: %d %s, %d upstream requests; want 400 BadDataError and none", resp.StatusCode, body, len(up.requests()))
	}

	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /api/admin/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly part of it")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || errorName(t, string(b)) != "RequestTimeout" {
		t.Errorf("a stalled body: %d %s; want 408 RequestTimeout", resp.StatusCode, b)
	}
}

// TestClientGoneCancelsUpstream: a client that goes away cancels the
// forwarded request.
func TestClientGoneCancelsUpstream(t *testing.T) {
	canceled := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		close(canceled)
	}, true)
	e := newEnv(t, up.URL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/api/admin/wait", nil)
	go func() {
		for len(up.requests()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	if _, err := e.client.Do(req); err == nil {
		t.Fatal("the canceled request succeeded")
	}
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not canceled")
	}
}

// TestUpstreamBasePath: an upstream URL with a path puts every forwarded
// path under it.
func TestUpstreamBasePath(t *testing.T) {
	up := newUpstream(t, nil, true)
	e := newEnv(t, up.URL+"/unleash", nil)
	e.do(t, http.MethodGet, "/api/admin/features?x=1", nil, nil)
	if got := up.requests()[0].uri; got != "/unleash/api/admin/features?x=1" {
		t.Errorf("upstream got %q, want /unleash/api/admin/features?x=1", got)
	}
}

// TestNewChecksTheUpstream: New refuses an upstream URL it cannot use.
func TestNewChecksTheUpstream(t *testing.T) {
	for _, raw := range []string{"ftp://x", "http://", "http://u:p@x", "http://x/?a=1"} {
		u, _ := url.Parse(raw)
		if _, err := New(Config{Upstream: u, Local: localHandler, Serves: func(*http.Request) bool { return false }, WriteError: writeError}); err == nil {
			t.Errorf("New accepted the upstream %q", raw)
		}
	}
}

// TestForwardingLoop: a gateway whose upstream is itself forwards a
// request once; when it comes back (the gateway's name in Via), it is
// answered 502 BadGatewayError with LoopHeader and not forwarded again.
// CheckUpstream (whose /health would be a local route) tells the gateway
// it is its own upstream.
func TestForwardingLoop(t *testing.T) {
	e := newEnv(t, selfUpstream, func(c *Config) {
		serves := c.Serves
		c.Serves = func(r *http.Request) bool { return r.URL.Path == "/health" || serves(r) }
	})
	resp, body := e.do(t, http.MethodGet, "/api/admin/features", nil, nil)
	if resp.StatusCode != http.StatusBadGateway || errorName(t, body) != "BadGatewayError" || resp.Header.Get(LoopHeader) == "" ||
		!strings.Contains(body, "leads back to this server") {
		t.Errorf("through a gateway in front of itself: %d %s %s %q; want 502 BadGatewayError saying it loops",
			resp.StatusCode, body, LoopHeader, resp.Header.Get(LoopHeader))
	}
	if n := strings.Count(e.logs.String(), `"msg":"forwarded"`); n != 1 {
		t.Errorf("%d requests forwarded, want 1 (it comes back once):\n%s", n, e.logs.String())
	}
	if _, err := e.gw.CheckUpstream(t.Context()); !errors.Is(err, ErrUpstreamIsSelf) {
		t.Errorf("CheckUpstream of a gateway in front of itself: %v, want ErrUpstreamIsSelf", err)
	}
}

// TestChainedGateways: a gateway in front of another one (chained on
// purpose) is not a loop: the request reaches the upstream with both
// gateways' Via entries, and CheckUpstream reports the upstream's answer.
func TestChainedGateways(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }, false)
	inner := newEnv(t, up.URL, nil)
	outer := newEnv(t, inner.url, nil)
	resp, body := outer.do(t, http.MethodGet, "/api/admin/features", nil, map[string]string{"Via": "1.1 corporate-proxy"})
	if resp.StatusCode != http.StatusTeapot {
		t.Fatalf("through two gateways: %d %s, want the upstream's 418", resp.StatusCode, body)
	}
	got := up.requests()
	if len(got) != 1 {
		t.Fatalf("the upstream got %d requests, want 1", len(got))
	}
	via := strings.Join(got[0].header.Values("Via"), ", ")
	if entries := strings.Split(via, ", "); len(entries) != 3 || entries[0] != "1.1 corporate-proxy" ||
		entries[1] != "1.1 "+outer.gw.via || entries[2] != "1.1 "+inner.gw.via {
		t.Errorf("Via at the upstream %q, want the client's entry then each gateway's", via)
	}
	if status, err := outer.gw.CheckUpstream(t.Context()); err != nil || status != http.StatusTeapot {
		t.Errorf("CheckUpstream through another gateway: %d %v, want the upstream's 418", status, err)
	}
}
