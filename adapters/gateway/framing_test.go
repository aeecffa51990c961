package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawExchange sends raw bytes to addr and reads the answers, until the
// server closes the connection or wants answers have come.
func rawExchange(t *testing.T, addr, raw string, wants int) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	var out []*http.Response
	for len(out) < wants {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			continue // 100 Continue: the answer follows
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, resp)
		if resp.Close {
			break
		}
	}
	return out
}

// TestSmugglingNeverReachesTheUpstream: requests whose length is
// ambiguous, sent as raw bytes to the gateway's listener, are refused (by
// the gateway, 400 with the connection closed, or by Go's server) and
// nothing of them reaches the upstream, nor what is hidden behind them.
func TestSmugglingNeverReachesTheUpstream(t *testing.T) {
	const hidden = "GET /hidden HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, tc := range []struct {
		name, raw string
	}{
		{"Content-Length and Transfer-Encoding",
			"POST /api/admin/x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden},
		{"Transfer-Encoding then Content-Length",
			"POST /api/admin/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n" + hidden},
		{"Content-Length and Transfer-Encoding in other case",
			"POST /api/admin/x HTTP/1.1\r\nHost: x\r\ncontent-length: 4\r\ntransfer-encoding: CHUNKED\r\n\r\n0\r\n\r\n" + hidden},
		{"Content-Length and Transfer-Encoding on HTTP/1.0",
			"POST /api/admin/x HTTP/1.0\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden},
		{"duplicate Content-Length, same value",
			"POST /api/admin/x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nbody" + hidden},
		{"duplicate Content-Length, other values",
			"POST /api/admin/x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nbody" + hidden},
		{"Content-Length with a list",
			"POST /api/admin/x HTTP/1.1\r\nHost: x\r\nContent-Length: 4, 4\r\n\r\nbody" + hidden},
		{"Transfer-Encoding other than chunked",
			"POST /api/admin/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + hidden},
		{"Transfer-Encoding twice",
			"POST /api/admin/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden},
		{"smuggling on a local route",
			"POST " + localPrefix + "x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden},
		{"second request of a connection",
			"GET /api/admin/first HTTP/1.1\r\nHost: x\r\n\r\n" +
				"POST /api/admin/x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, nil, true)
			e := newEnv(t, up.URL, nil)
			answers := rawExchange(t, e.addr, tc.raw, 3)
			if len(answers) == 0 {
				t.Fatal("no answer")
			}
			last := answers[len(answers)-1]
			if last.StatusCode != http.StatusBadRequest && last.StatusCode != http.StatusNotImplemented {
				t.Errorf("the ambiguous request got %d, want 400 (or Go's 501)", last.StatusCode)
			}
			if !last.Close {
				t.Errorf("the connection stays open after the ambiguous request")
			}
			for _, r := range up.requests() {
				if r.uri != "/api/admin/first" {
					t.Errorf("the upstream got %s %s", r.method, r.uri)
				}
			}
		})
	}
}

// TestWellFramedRequestsPass: a connection carrying bodies of every
// framing (Content-Length, chunked with extensions and trailers, HTTP/1.0,
// Expect: 100-continue), pipelined, is followed exactly: every request
// reaches the upstream and nothing is refused.
func TestWellFramedRequestsPass(t *testing.T) {
	up := newUpstream(t, nil, true)
	e := newEnv(t, up.URL, nil)
	raw := "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world" +
		"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n" +
		"GET /c?q=Content-Length:%205 HTTP/1.1\r\nHost: x\r\nX-Note: Transfer-Encoding: chunked\r\n\r\n" +
		"PUT /d HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\nB\r\nhello world\r\n0\r\n\r\n" +
		"POST /e HTTP/1.1\r\nHost: x\nContent-Length: 2\n\nok" + // bare line feeds
		"GET /f HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" +
		"POST /g HTTP/1.1\r\nHost: x\r\nContent-Length: 19\r\n\r\nGET /h HTTP/1.1\r\n\r\n" // a request-like body
	answers := rawExchange(t, e.addr, raw, 7)
	if len(answers) != 7 {
		t.Fatalf("got %d answers, want 7", len(answers))
	}
	for i, a := range answers {
		if a.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(a.Body)
			t.Errorf("answer %d: %d %s", i, a.StatusCode, b)
		}
	}
	want := []struct{ uri, body string }{
		{"/a", "hello world"}, {"/b", "hello world"}, {"/c?q=Content-Length:%205", ""}, {"/d", "hello world"},
		{"/e", "ok"}, {"/f", ""}, {"/g", "GET /h HTTP/1.1\r\n\r\n"},
	}
	got := up.requests()
	if len(got) != len(want) {
		t.Fatalf("the upstream got %d requests, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].uri != w.uri || got[i].body != w.body {
			t.Errorf("request %d: %s %q, want %s %q", i, got[i].uri, got[i].body, w.uri, w.body)
		}
	}

	// Expect: 100-continue, and HTTP/1.0.
	answers = rawExchange(t, e.addr, "POST /i HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc"+
		"POST /j HTTP/1.0\r\nHost: x\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nhi", 2)
	if len(answers) != 2 || answers[0].StatusCode != http.StatusOK || answers[1].StatusCode != http.StatusOK {
		for _, a := range answers {
			b, _ := io.ReadAll(a.Body)
			t.Logf("%d %s", a.StatusCode, b)
		}
		t.Fatalf("Expect and HTTP/1.0: %d answers, want two 200", len(answers))
	}
}

// TestScannerSplitAnywhere: the notes do not depend on how the bytes are
// split into reads.
func TestScannerSplitAnywhere(t *testing.T) {
	raw := "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world" +
		"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;e\r\nhello\r\n0\r\nT: 1\r\n\r\n" +
		"GET /c HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /d HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
	want := []note{{method: "POST", target: prefix{"/a", 2}}, {method: "POST", target: prefix{"/b", 3 - 1}},
		{method: "GET", target: prefix{"/c", 2}}, {method: "POST", target: prefix{"/d", 2}, ambiguous: true}}
	for split := 1; split < len(raw); split++ {
		var s framingScanner
		var got []note
		push := func(n note) { got = append(got, n) }
		s.feed([]byte(raw[:split]), push)
		s.feed([]byte(raw[split:]), push)
		if len(got) != len(want) {
			t.Fatalf("split at %d: %d notes, want %d", split, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("split at %d: note %d is %+v, want %+v", split, i, got[i], want[i])
			}
		}
		if s.state != stLost {
			t.Fatalf("split at %d: the scanner goes on after an ambiguous request", split)
		}
	}
}

// TestScannerLongLines: a long request target and long headers are
// followed with bounded memory; the note keeps the target's head.
func TestScannerLongLines(t *testing.T) {
	target := "/x?q=" + strings.Repeat("a", 100_000)
	raw := "GET " + target + " HTTP/1.1\r\nCookie: " + strings.Repeat("c", 200_000) + "\r\nContent-Length: 2\r\n\r\nok" +
		"GET /next HTTP/1.0\r\n\r\n"
	var s framingScanner
	var got []note
	for i := 0; i < len(raw); i += 4096 {
		s.feed([]byte(raw[i:min(i+4096, len(raw))]), func(n note) { got = append(got, n) })
	}
	if len(got) != 2 || got[0].ambiguous || !got[0].target.holds(target) || got[0].target.holds(target+"b") || got[1].method != "GET" {
		t.Fatalf("notes %+v", got)
	}
	if cap(s.line) > 2*maxLineHead {
		t.Errorf("the scanner kept %d bytes of a line", cap(s.line))
	}
}
