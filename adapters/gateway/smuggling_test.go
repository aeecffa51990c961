package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request smuggling through the gateway: a client (or a proxy in front of
// flagadmin) and the upstream must not read a request's length two ways.
// Go's server delimits each request once (Transfer-Encoding chunked
// before Content-Length, identical Content-Length headers folded into
// one; conflicting ones, other transfer codings and malformed lengths
// refused with the connection closed), and the reverse proxy sends what
// it read with framing of its own. These tests send the attempts as raw
// bytes and look at the raw bytes the upstream receives.

// rawUpstream is an upstream on a plain TCP listener: it records the bytes
// of each connection exactly as they arrive, and answers every request
// (delimited by Go's parser) with 200 and the request's target as body.
type rawUpstream struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []*bytes.Buffer
}

func newRawUpstream(t *testing.T) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln}
	var wg sync.WaitGroup
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		u.mu.Lock()
		for _, c := range open {
			c.Close()
		}
		u.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			open = append(open, c)
			u.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				u.serve(c)
			}()
		}
	}()
	return u
}

// lockedBuffer records a connection's bytes under the upstream's lock.
type lockedBuffer struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (b lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (u *rawUpstream) serve(c net.Conn) {
	buf := &bytes.Buffer{}
	u.mu.Lock()
	u.conns = append(u.conns, buf)
	u.mu.Unlock()
	br := bufio.NewReader(io.TeeReader(c, lockedBuffer{&u.mu, buf}))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if req.Header.Get("Expect") == "100-continue" {
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(req.RequestURI), req.RequestURI)
	}
}

// bytesPerConn returns what each connection has received so far.
func (u *rawUpstream) bytesPerConn() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for _, b := range u.conns {
		out = append(out, b.String())
	}
	return out
}

// seenRequest is a request as one side delimited it.
type seenRequest struct{ method, uri, body string }

func (r seenRequest) String() string { return fmt.Sprintf("%s %s %q", r.method, r.uri, r.body) }

// delimit splits the bytes of one upstream connection into requests as Go
// delimits them, and checks each request's framing as it travelled:
// header lines ended by CRLF, none folded, at most one of Content-Length
// (digits only, once) and Transfer-Encoding (exactly "chunked", once), so
// that any reader finds the same length. Bytes after the last request are
// an error too.
func delimit(data string) ([]seenRequest, []string) {
	var reqs []seenRequest
	var problems []string
	rd := strings.NewReader(data)
	br := bufio.NewReader(rd)
	start := 0
	for start < len(data) {
		req, err := http.ReadRequest(br)
		if err != nil {
			problems = append(problems, fmt.Sprintf("bytes Go cannot read as a request: %q (%v)", data[start:], err))
			break
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: a body Go cannot read: %v", req.Method, req.RequestURI, err))
			break
		}
		end := len(data) - rd.Len() - br.Buffered()
		if p := framingProblem(data[start:end]); p != "" {
			problems = append(problems, fmt.Sprintf("%s %s: %s", req.Method, req.RequestURI, p))
		}
		reqs = append(reqs, seenRequest{req.Method, req.RequestURI, string(body)})
		start = end
	}
	return reqs, problems
}

// framingProblem says what makes raw's length readable two ways, or "".
func framingProblem(raw string) string {
	head, _, ok := strings.Cut(raw, "\r\n\r\n")
	if !ok {
		return "no CRLF CRLF ends the header section"
	}
	var cl, te []string
	for i, line := range strings.Split(head, "\r\n") {
		switch {
		case strings.Contains(line, "\n") || strings.Contains(line, "\r"):
			return fmt.Sprintf("a bare CR or LF in %q", line)
		case i == 0:
			continue
		case line == "" || line[0] == ' ' || line[0] == '\t':
			return fmt.Sprintf("a folded or empty header line %q", line)
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.Trim(value, " \t")
		switch {
		case strings.EqualFold(name, "Content-Length"):
			cl = append(cl, value)
		case strings.EqualFold(name, "Transfer-Encoding"):
			te = append(te, value)
		}
	}
	switch {
	case len(cl) > 0 && len(te) > 0:
		return fmt.Sprintf("Content-Length %q with Transfer-Encoding %q", cl, te)
	case len(cl) > 1 || len(te) > 1:
		return fmt.Sprintf("Content-Length %q, Transfer-Encoding %q", cl, te)
	case len(te) == 1 && te[0] != "chunked":
		return fmt.Sprintf("Transfer-Encoding %q", te[0])
	case len(cl) == 1:
		if _, err := strconv.ParseUint(cl[0], 10, 63); err != nil || cl[0][0] == '+' {
			return fmt.Sprintf("Content-Length %q", cl[0])
		}
	}
	return ""
}

// smuggleEnv is a Gateway served by a plain http.Server on a plain
// listener, in front of a rawUpstream, with what the gateway's handler was
// given recorded.
type smuggleEnv struct {
	addr string
	up   *rawUpstream
	mu   sync.Mutex
	saw  []seenRequest
}

func newSmuggleEnv(t *testing.T) *smuggleEnv {
	t.Helper()
	e := &smuggleEnv{up: newRawUpstream(t)}
	u, _ := url.Parse("http://" + e.up.ln.Addr().String())
	gw, err := New(Config{Upstream: u, Local: localHandler, WriteError: writeError,
		Serves: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, localPrefix) }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Noted before the answer leaves, the body as the proxy reads it.
			e.mu.Lock()
			i := len(e.saw)
			e.saw = append(e.saw, seenRequest{method: r.Method, uri: r.RequestURI})
			e.mu.Unlock()
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, writerFunc(func(p []byte) (int, error) {
				e.mu.Lock()
				defer e.mu.Unlock()
				e.saw[i].body += string(p)
				return len(p), nil
			})), r.Body}
			gw.ServeHTTP(w, r)
		}),
		DisableGeneralOptionsHandler: true,
		ReadHeaderTimeout:            10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: time.Minute,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return e
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// answer is one answer the client read.
type answer struct {
	status int
	header http.Header
	body   string
	close  bool
}

func (a answer) String() string { return fmt.Sprintf("%d %q", a.status, a.body) }

// endPath is the target of the request that ends an exchange whose
// connection stays open; the rawUpstream answers it with its path.
const endPath = "/end"

// sendRaw sends raw on a new connection and reads the answers: n of them
// or until one closes the connection; if none did, it sends GET /end and
// reads on until its answer, so the answers hold everything the server
// made of raw. It also reports whether the server closed the connection.
func sendRaw(t *testing.T, addr, raw string, n int) (answers []answer, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second)) // bounds a hang, never reached when it works
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	read := func() (answer, error) {
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return answer{}, err
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return answer{}, err
			}
			if resp.StatusCode >= 100 && resp.StatusCode < 200 {
				continue // 100 Continue: the answer follows
			}
			return answer{resp.StatusCode, resp.Header, string(body), resp.Close}, nil
		}
	}
	for len(answers) < n {
		a, err := read()
		if err != nil {
			return answers, true
		}
		answers = append(answers, a)
		if a.close {
			break
		}
	}
	if len(answers) > 0 && answers[len(answers)-1].close {
		if a, err := read(); err == nil {
			t.Errorf("an answer after Connection: close: %v", a)
		}
		return answers, true
	}
	if _, err := io.WriteString(c, "GET "+endPath+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return answers, true
	}
	for {
		a, err := read()
		if err != nil {
			return answers, true
		}
		if a.body == endPath {
			return answers, false
		}
		answers = append(answers, a)
	}
}

// smuggled is the request every attempt hides: the upstream must never
// get it as a request.
const smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

// upstreamGot returns the requests the upstream got, but GET /end, in the
// form "METHOD target body", checking their framing as they travelled and
// that they are the ones the gateway forwarded, bodies included: the
// upstream delimits as the gateway did.
func (e *smuggleEnv) upstreamGot(t *testing.T) []string {
	t.Helper()
	var upstream []seenRequest
	for _, data := range e.up.bytesPerConn() {
		t.Logf("the upstream received %q", data)
		reqs, problems := delimit(data)
		for _, p := range problems {
			t.Errorf("the upstream got a request of ambiguous length: %s", p)
		}
		for _, r := range reqs {
			if r.uri != endPath {
				upstream = append(upstream, r)
			}
		}
	}
	e.mu.Lock()
	var forwarded []seenRequest
	for _, r := range e.saw {
		if r.uri != endPath && !strings.HasPrefix(r.uri, localPrefix) {
			forwarded = append(forwarded, r)
		}
	}
	e.mu.Unlock()
	if fmt.Sprint(forwarded) != fmt.Sprint(upstream) {
		t.Errorf("the gateway forwarded %v, the upstream got %v", forwarded, upstream)
	}
	var got []string
	for _, r := range upstream {
		got = append(got, r.method+" "+r.uri+" "+r.body)
	}
	return got
}

// TestSmugglingAttemptsReachTheUpstreamUnambiguous sends each attempt on
// its own connection to a Gateway served by a plain http.Server, and
// checks what the client gets back and what the upstream gets: every
// request framed so that any reader finds the same length, exactly the
// requests the gateway's handler was given, and never the request hidden
// in a body. A chunked request ends its connection: a reader in front of
// flagadmin that went by its Content-Length (or did not unfold its
// Transfer-Encoding) would take what follows the chunks as its body.
func TestSmugglingAttemptsReachTheUpstreamUnambiguous(t *testing.T) {
	// cover is a Content-Length that takes the chunked body "0\r\n\r\n"
	// and the smuggled request as one body.
	cover := strconv.Itoa(len("0\r\n\r\n" + smuggled))
	inChunk := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(smuggled), smuggled)
	// Answers of Go's server itself, written before any handler: plain
	// text, no Date header (every answer through a handler has one).
	const (
		goBadRequest = -400
		goNotImpl    = -501
	)
	for _, tc := range []struct {
		name, raw string
		answers   []int // statuses; negative: Go's server's own
		closes    bool
		upstream  []string // "METHOD target body" of each request the upstream gets
	}{
		{"Content-Length then Transfer-Encoding, the smuggled request inside the length",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: " + cover + "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{200}, true, []string{"POST /a "}},
		{"Transfer-Encoding then Content-Length, the smuggled request inside the length",
			"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: " + cover + "\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{200}, true, []string{"POST /a "}},
		{"Transfer-Encoding with a short Content-Length, the smuggled request in a chunk",
			"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n" + inChunk,
			[]int{200}, true, []string{"POST /a " + smuggled}},
		{"Content-Length and Transfer-Encoding in other case",
			"POST /a HTTP/1.1\r\nHost: x\r\ncontent-length: " + cover + "\r\ntransfer-encoding: CHUNKED\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{200}, true, []string{"POST /a "}},
		{"Content-Length and Transfer-Encoding on a local route",
			"POST " + localPrefix + "x HTTP/1.1\r\nHost: x\r\nContent-Length: " + cover + "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{200}, true, nil},
		{"Content-Length and Transfer-Encoding on the second request of a connection",
			"GET /first HTTP/1.1\r\nHost: x\r\n\r\n" +
				"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: " + cover + "\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{200, 200}, true, []string{"GET /first ", "POST /a "}},
		{"Transfer-Encoding folded onto a second line, with Content-Length",
			"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\nContent-Length: " + cover + "\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{200}, true, []string{"POST /a "}},
		{"Transfer-Encoding folded after chunked",
			"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n identity\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{goNotImpl}, true, nil},
		{"Transfer-Encoding: chunked, identity",
			"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\nContent-Length: " + cover + "\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{goNotImpl}, true, nil},
		{"Transfer-Encoding: xchunked",
			"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\nContent-Length: " + cover + "\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{goNotImpl}, true, nil},
		{"Transfer-Encoding twice",
			"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{goNotImpl}, true, nil},
		{"duplicate Content-Length, same value",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello" + "GET /next HTTP/1.1\r\nHost: x\r\n\r\n",
			[]int{200, 200}, false, []string{"POST /a hello", "GET /next "}},
		{"conflicting Content-Length",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: " + strconv.Itoa(5+len(smuggled)) + "\r\n\r\nhello" + smuggled,
			[]int{goBadRequest}, true, nil},
		{"Content-Length as a list",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello" + smuggled,
			[]int{goBadRequest}, true, nil},
		{"Content-Length with a leading plus",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello" + smuggled,
			[]int{goBadRequest}, true, nil},
		{"Content-Length with spaces around it",
			"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length:   5  \r\n\r\nhello" + "GET /next HTTP/1.1\r\nHost: x\r\n\r\n",
			[]int{200, 200}, false, []string{"POST /a hello", "GET /next "}},
		{"a GET with a body that looks like a request",
			"GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(smuggled)) + "\r\n\r\n" + smuggled,
			[]int{200}, false, []string{"GET /a " + smuggled}},
		{"HTTP/1.0 with Transfer-Encoding and Content-Length, kept alive",
			"POST /a HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: " + cover + "\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{200}, false, []string{"POST /a 0\r\n\r\n" + smuggled}},
		{"HTTP/1.0 with Transfer-Encoding alone, kept alive",
			"POST /a HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
			[]int{200, goBadRequest}, true, []string{"POST /a "}},
		{"a request pipelined after a chunked body",
			"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + "GET /next HTTP/1.1\r\nHost: x\r\n\r\n",
			[]int{200}, true, []string{"POST /a hello"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newSmuggleEnv(t)
			answers, closed := sendRaw(t, e.addr, tc.raw, len(tc.answers))
			t.Logf("the client got %v, connection closed: %t", answers, closed)
			got := e.upstreamGot(t)

			var statuses []int
			for _, a := range answers {
				status := a.status
				if a.header.Get("Date") == "" {
					status = -status
					if ct := a.header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
						t.Errorf("Go's own %d is %s", a.status, ct)
					}
					if strings.Contains(a.body, e.up.ln.Addr().String()) || strings.Contains(a.body, "smuggled") {
						t.Errorf("Go's own %d tells more than it should: %q", a.status, a.body)
					}
				}
				statuses = append(statuses, status)
			}
			if fmt.Sprint(statuses) != fmt.Sprint(tc.answers) {
				t.Errorf("the client got %v, want %v", statuses, tc.answers)
			}
			if closed != tc.closes {
				t.Errorf("connection closed: %t, want %t", closed, tc.closes)
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.upstream) {
				t.Errorf("the upstream got %q, want %q", got, tc.upstream)
			}
		})
	}
}

// TestWellFramedRequestsPass: bodies of every framing reach the upstream
// as they were sent: Content-Length (with a request-like body, bare line
// feeds, Expect: 100-continue, HTTP/1.0 kept alive) pipelined on one
// connection that stays open, and chunked bodies (extensions, trailers,
// the coding's name in another case), each then ending its connection.
func TestWellFramedRequestsPass(t *testing.T) {
	e := newSmuggleEnv(t)
	raw := "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world" +
		"GET /c?q=Content-Length:%205 HTTP/1.1\r\nHost: x\r\nX-Note: Transfer-Encoding: chunked\r\n\r\n" +
		"POST /e HTTP/1.1\r\nHost: x\nContent-Length: 2\n\nok" + // bare line feeds
		"GET /f HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" +
		"POST /g HTTP/1.1\r\nHost: x\r\nContent-Length: 19\r\n\r\nGET /h HTTP/1.1\r\n\r\n" + // a request-like body
		"POST /i HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc" +
		"POST /j HTTP/1.0\r\nHost: x\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nhi"
	answers, closed := sendRaw(t, e.addr, raw, 7)
	if len(answers) != 7 || closed {
		t.Fatalf("got %v, connection closed: %t; want 7 answers on a connection kept open", answers, closed)
	}
	for _, chunked := range []string{
		"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
		"PUT /d HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\nB\r\nhello world\r\n0\r\n\r\n",
	} {
		a, closed := sendRaw(t, e.addr, chunked, 1)
		if len(a) != 1 || !closed {
			t.Fatalf("got %v, connection closed: %t; want 1 answer and the connection closed", a, closed)
		}
		answers = append(answers, a...)
	}
	for i, a := range answers {
		if a.status != http.StatusOK {
			t.Errorf("answer %d: %v", i, a)
		}
	}
	want := []string{"POST /a hello world", "GET /c?q=Content-Length:%205 ", "POST /e ok", "GET /f ",
		"POST /g GET /h HTTP/1.1\r\n\r\n", "POST /i abc", "POST /j hi", "POST /b hello world", "PUT /d hello world"}
	if got := e.upstreamGot(t); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("the upstream got %q, want %q", got, want)
	}
}
