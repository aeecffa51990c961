// Package gateway lets a flagadmin server stand where Unleash's address
// was (--upstream). Requests flagadmin serves from its copy of Unleash
// (the searches, the project list, export, stream, proofs, metrics, docs,
// health) go to a local handler, each answer marked X-Flagadmin-Source:
// local; everything else goes to the upstream Unleash through the
// standard library's reverse proxy (net/http/httputil.ReverseProxy), with
// method, path, query, headers and bodies as they came, hop-by-hop
// headers removed and X-Forwarded-For, -Proto and -Host added, bodies
// streamed both ways in constant memory and streaming answers flushed as
// they arrive.
//
// An upstream that cannot be reached answers 502 BadGatewayError, one
// that does not answer within Config.Timeout 504 GatewayTimeout, both
// written by Config.WriteError (the API's error body; see
// upstream.ErrBadGateway). Nothing is sent to the upstream twice that is
// not idempotent. Redirects of the upstream reach the client as they are.
//
// The two writes of the admin API (lifecycle complete, service-account
// delete) are forwarded too, with the caller's credentials; after the
// upstream accepted one, the answer waits until the copy holds the
// write's event (Waiter), so the client's next search through flagadmin
// sees its own write, or at most Config.FollowWait, then carries
// X-Flagadmin-Lag.
//
// Each forwarded request carries the gateway's name in Via (flagadmin-
// and a random token of the Gateway); a request that arrives with it came
// back (the upstream leads back to this server) and is answered 502
// BadGatewayError (upstream.ErrLoop) with LoopHeader, not
// forwarded again. CheckUpstream finds such an upstream at start.
//
// More pieces come with it: Sessions authenticates Unleash's browser
// sessions for the local handler (its cookie, asking the upstream whom it
// belongs to); Edition tells whether the upstream is open-source Unleash,
// whose project list is its default project only.
//
// Request smuggling: Go's server reads each request's length one way
// (Transfer-Encoding chunked over Content-Length, identical Content-Length
// headers as one; conflicting ones, other transfer codings and malformed
// lengths it refuses, closing the connection), and the reverse proxy
// frames what it read anew, so the upstream reads every request as the
// gateway did. What is left is a proxy in front of flagadmin that would
// read a chunked request by its Content-Length: after a chunked request
// the gateway closes the connection, so no request hidden behind its
// chunks is served.
package gateway

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/upstream"
)

// Headers the gateway sets.
const (
	// SourceHeader marks an answer flagadmin served itself: "local". The
	// upstream's answers never carry it (the gateway removes it from them).
	SourceHeader = "X-Flagadmin-Source"
	// LagHeader is on the answer of a forwarded write that the upstream
	// accepted but flagadmin's copy did not show in time: the seconds the
	// gateway waited for it. The next search through flagadmin may not see
	// the write yet.
	LagHeader = "X-Flagadmin-Lag"
	// LoopHeader is on the answer to a request that came back to the
	// gateway that forwarded it (a forwarding loop): that gateway's name in
	// Via. Answers of the upstream keep it, so that CheckUpstream sees a
	// loop through other servers.
	LoopHeader = "X-Flagadmin-Loop"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds the wait for the upstream's answer (its status
	// and headers; the body then takes as long as it streams).
	DefaultTimeout = 30 * time.Second
	// DefaultFollowWait bounds the wait of a forwarded write for its event
	// in the copy (--follow-wait).
	DefaultFollowWait = 5 * time.Second
	// DefaultMaxHeaderBytes is the limit of a forwarded request's line and
	// headers, as the admin API's own (httpapi.DefaultMaxHeaderBytes).
	DefaultMaxHeaderBytes int64 = 1 << 20
	// DefaultBodyReadTimeout is the longest a forwarded request's body may
	// pause: each read from the client must bring bytes within it, as the
	// admin API's own body must arrive within httpapi.DefaultBodyReadTimeout.
	DefaultBodyReadTimeout = 5 * time.Second
	// DefaultStallTimeout is the longest a client may take to accept the
	// next bytes of a forwarded answer, as for the admin API's export.
	DefaultStallTimeout = time.Minute
	// idleConnTimeout closes idle connections to the upstream before
	// Node.js (Unleash's server) closes them (its keepAliveTimeout is 5 s by
	// default): a request sent on a connection the upstream is closing fails,
	// and one with a body cannot be sent again.
	idleConnTimeout = 4 * time.Second
)

// Config configures a Gateway.
type Config struct {
	// Upstream is the base URL of the upstream Unleash, http or https, such
	// as http://unleash:4242 or https://unleash.example.com/base (a path is
	// the base every forwarded path goes under). Required.
	Upstream *url.URL
	// Local answers what flagadmin serves itself: the admin API's
	// handler, and /metrics. Required.
	Local http.Handler
	// Serves reports whether Local answers r (httpapi.Server.Serves, and
	// /metrics). Required. The two forwarded writes go upstream whatever
	// it says.
	Serves func(r *http.Request) bool
	// WriteError writes an error answer the way the admin API writes
	// them (httpapi.Server.WriteError): the gateway's errors are of kinds
	// upstream.ErrBadGateway (502), upstream.ErrTimeout (504),
	// flagadmin.ErrValidation (400: headers over the limit, a forwarded
	// body cut short) and os.ErrDeadlineExceeded (408: a forwarded body
	// that stopped arriving). Required.
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	// Waiter tells when the copy holds a forwarded write's event; nil
	// answers forwarded writes as soon as the upstream does.
	Waiter Waiter
	// Timeout bounds the wait for the upstream's answer (and dialing it);
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// FollowWait bounds a forwarded write's wait for its event in the
	// copy; 0 means DefaultFollowWait.
	FollowWait time.Duration
	// MaxHeaderBytes, BodyReadTimeout and StallTimeout bound forwarded
	// requests (see their defaults); 0 means the default.
	MaxHeaderBytes  int64
	BodyReadTimeout time.Duration
	StallTimeout    time.Duration
	// Transport carries requests to the upstream; nil means
	// NewTransport(Timeout). Share it with Sessions to share connections.
	Transport http.RoundTripper
	// Logger receives one line per forwarded request and the causes of
	// failures; nil discards them.
	Logger *slog.Logger
	// RequestID returns the id of the request a context belongs to
	// (httpapi.RequestID, with httpapi.RequestIDs in front of the gateway,
	// which also sends it upstream), for the log line of each forwarded
	// request; nil logs none.
	RequestID func(context.Context) string
	// Edition, when not nil, learns which Unleash the upstream is from
	// the requests for the project list (Edition.Learn) before they are
	// served locally.
	Edition *Edition
}

// Gateway is the handler in front of the local API and the upstream.
type Gateway struct {
	upstream        *url.URL
	local           http.Handler
	serves          func(*http.Request) bool
	writeError      func(http.ResponseWriter, *http.Request, error)
	waiter          Waiter
	followWait      time.Duration
	maxHeader       int64
	bodyRead, stall time.Duration
	log             *slog.Logger
	requestID       func(context.Context) string
	edition         *Edition
	proxy           *httputil.ReverseProxy
	transport       http.RoundTripper
	upstreamHost    string // for messages
	// via is the gateway's name in the Via header of the requests it
	// forwards: "flagadmin-" and a random token of this Gateway, so that a
	// request that comes back to it is recognized (a loop), while one from
	// another flagadmin server in front of it (chained on purpose) is not.
	via string
}

// New returns a Gateway for cfg.
func New(cfg Config) (*Gateway, error) {
	if err := checkUpstream(cfg.Upstream); err != nil {
		return nil, err
	}
	if cfg.Local == nil || cfg.Serves == nil || cfg.WriteError == nil {
		return nil, errors.New("gateway: Local, Serves and WriteError are required")
	}
	g := &Gateway{
		upstream: cfg.Upstream, local: cfg.Local, serves: cfg.Serves, writeError: cfg.WriteError, waiter: cfg.Waiter,
		followWait: positive(cfg.FollowWait, DefaultFollowWait), maxHeader: cfg.MaxHeaderBytes,
		bodyRead: positive(cfg.BodyReadTimeout, DefaultBodyReadTimeout), stall: positive(cfg.StallTimeout, DefaultStallTimeout),
		log: cfg.Logger, requestID: cfg.RequestID, edition: cfg.Edition, upstreamHost: cfg.Upstream.Host, via: "flagadmin-" + rand.Text()[:16],
	}
	if g.maxHeader <= 0 {
		g.maxHeader = DefaultMaxHeaderBytes
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	transport := cfg.Transport
	if transport == nil {
		transport = NewTransport(positive(cfg.Timeout, DefaultTimeout))
	}
	g.transport = transport
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		Transport:      transport,
		ModifyResponse: g.modifyResponse,
		ErrorHandler:   g.proxyError,
		BufferPool:     copyBuffers{},
		ErrorLog:       slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
	}
	return g, nil
}

// checkUpstream accepts an absolute http or https URL without query,
// fragment or user information.
func checkUpstream(u *url.URL) error {
	switch {
	case u == nil:
		return errors.New("gateway: no upstream URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("gateway: the upstream URL must be http:// or https://, not %q", u.Scheme+":")
	case u.Host == "":
		return errors.New("gateway: the upstream URL has no host")
	case u.User != nil:
		return errors.New("gateway: the upstream URL must not hold credentials (clients send their own)")
	case u.RawQuery != "" || u.Fragment != "":
		return errors.New("gateway: the upstream URL must not have a query or fragment")
	}
	return nil
}

func positive(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// NewTransport returns a transport to an upstream: HTTP/1.1 on a pool of
// keep-alive connections (closed after 4 s idle, before Unleash closes
// them), no proxy from the environment, no compression of its own (the
// client's Accept-Encoding goes through as it is), and timeout on dialing,
// on the TLS handshake and on the wait for an answer's headers after the
// request was sent.
func NewTransport(timeout time.Duration) *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       idleConnTimeout,
		DisableCompression:    true,
	}
}

// ServeHTTP answers r: the two writes go upstream and wait for their
// event; what Serves accepts is served locally; the rest goes upstream.
// A chunked request ends its connection.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.TransferEncoding) > 0 {
		// Go's server reads a chunked request by its chunks and drops a
		// Content-Length it came with, unseen here. A proxy in front that
		// went by that Content-Length instead could carry a request hidden
		// after the chunks, which Go's server would read as the next one:
		// so nothing more is read on this connection (RFC 9112 asks that
		// of a request with both).
		w.Header().Set("Connection", "close")
	}
	if g.cameBack(r) {
		w.Header().Set(LoopHeader, g.via)
		g.writeError(w, r, fmt.Errorf("%w: %s %s came back from %s", upstream.ErrLoop, r.Method, r.URL.Path, g.upstreamHost))
		return
	}
	write, route, isWrite := writeRoute(r)
	if !route && g.serves(r) {
		if g.edition != nil && r.Method == http.MethodGet && r.URL.Path == projectListPath {
			g.edition.Learn(r)
		}
		w.Header().Set(SourceHeader, "local")
		g.local.ServeHTTP(w, r)
		return
	}
	var wp *Write
	if isWrite {
		wp = &write
	}
	g.forward(w, r, wp)
}

// cameBack reports whether r was forwarded by this gateway: its name is
// in r's Via header. Every request that arrives so is refused, a locally
// served one too, so that a loop ends at its second pass whatever the path.
func (g *Gateway) cameBack(r *http.Request) bool {
	for _, v := range r.Header.Values("Via") {
		for entry := range strings.SplitSeq(v, ",") {
			// received-protocol received-by [comment]
			if f := strings.Fields(entry); len(f) >= 2 && f[1] == g.via {
				return true
			}
		}
	}
	return false
}

// viaEntry is the gateway's entry in the Via header of a request it forwards.
func (g *Gateway) viaEntry(r *http.Request) string {
	if r.ProtoMajor >= 2 {
		return strconv.Itoa(r.ProtoMajor) + " " + g.via
	}
	return strconv.Itoa(r.ProtoMajor) + "." + strconv.Itoa(r.ProtoMinor) + " " + g.via
}

// ErrUpstreamIsSelf is CheckUpstream's error when the upstream leads back
// to the gateway itself.
var ErrUpstreamIsSelf = errors.New("the upstream leads back to this server: a request forwarded to it comes back")

// CheckUpstream asks the upstream once whether it answers (GET
// <upstream>/health, as a forwarded request, bounded by ctx) and returns
// the status of its answer. It returns ErrUpstreamIsSelf when the request
// came back to this gateway (the upstream is this server, or leads back
// to it), and the transport's error when the upstream does not answer.
// The gateway must be serving for it to tell itself.
func (g *Gateway) CheckUpstream(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.upstream.JoinPath("health").String(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Via", g.viaEntry(req))
	resp, err := g.transport.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // the connection goes back to the pool
	if resp.Header.Get(LoopHeader) == g.via {
		return resp.StatusCode, ErrUpstreamIsSelf
	}
	return resp.StatusCode, nil
}

// Forwards reports whether ServeHTTP sends r to the upstream (or refuses
// it) rather than to the local handler.
func (g *Gateway) Forwards(r *http.Request) bool {
	_, route, _ := writeRoute(r)
	return route || !g.serves(r)
}

// exchange is the state of one forwarded request, in its context.
type exchange struct {
	write *Write
	// wait waits for the write's event (Waiter.Expect); nil when there
	// is nothing to wait with (no Waiter, or Expect failed: lagged).
	wait   func(context.Context) error
	lagged bool // Expect failed: answer with LagHeader at once
	body   *clientBody
	waited time.Duration
	lag    bool // the answer carries LagHeader
}

type exchangeKey struct{}

func exchangeOf(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	return x
}

// forward sends r to the upstream and its answer back, and logs it.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, write *Write) {
	start := time.Now()
	if n := headerBytes(r); n > g.maxHeader {
		g.writeError(w, r, &flagadmin.ValidationError{Fields: []flagadmin.FieldError{{
			Message: fmt.Sprintf("the request line and headers are larger than the limit of %d bytes", g.maxHeader)}}})
		return
	}
	x := &exchange{write: write}
	if write != nil && g.waiter != nil {
		wait, err := g.waiter.Expect(r.Context(), *write)
		if err != nil {
			g.log.WarnContext(r.Context(), "cannot follow a forwarded write; it is answered without waiting for the copy",
				slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("error", err.Error()))
			x.lagged = true
		}
		x.wait = wait
	}
	rc := http.NewResponseController(w)
	if r.Body != nil && r.Body != http.NoBody {
		x.body = &clientBody{ReadCloser: r.Body, rc: rc, timeout: g.bodyRead}
		r.Body = x.body
	}
	fw := &forwardWriter{ResponseWriter: w, rc: rc, stall: g.stall}
	defer func() {
		// Also while a failed copy of the answer aborts the handler.
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", fw.statusOrOK()),
			slog.Int64("bytes", fw.bytes), slog.Duration("duration", time.Since(start)), slog.String("source", "upstream"),
		}
		if x.write != nil {
			attrs = append(attrs, slog.Duration("follow_wait", x.waited), slog.Bool("lag", x.lag))
		}
		if g.requestID != nil {
			attrs = append(attrs, slog.String("request_id", g.requestID(r.Context())))
		}
		g.log.LogAttrs(r.Context(), slog.LevelInfo, "forwarded", attrs...)
	}()
	g.proxy.ServeHTTP(fw, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x)))
}

// rewrite makes the outbound request: the upstream's scheme, host and base
// path (never the client's Host header, which becomes X-Forwarded-Host),
// the query exactly as it came, X-Forwarded-For (the client's address
// only: one it sent is not trusted), -Proto and -Host. The reverse proxy
// has removed the hop-by-hop headers and those the Connection header names.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(g.upstream)
	pr.Out.URL.RawQuery = pr.In.URL.RawQuery // ReverseProxy drops the parameters url.ParseQuery rejects
	pr.SetXForwarded()
	pr.Out.Header.Add("Via", g.viaEntry(pr.In))
	neverResent(pr.Out)
}

// neverResent makes sure the transport does not send out again: Go's
// transport resends a request whose connection broke when it deems it
// replayable, and a request without a body but with an Idempotency-Key
// header is such even with a method that is not idempotent. Giving it an
// empty body that cannot be rewound makes it not replayable (the wire is
// the same: no body).
func neverResent(out *http.Request) {
	switch out.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return
	}
	if (out.Body == nil || out.Body == http.NoBody) && (out.Header.Get("Idempotency-Key") != "" || out.Header.Get("X-Idempotency-Key") != "") {
		out.Body, out.GetBody, out.ContentLength = emptyBody{}, nil, 0
	}
}

// emptyBody is an empty request body that cannot be rewound.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }

// modifyResponse removes the gateway's own headers from the upstream's
// answer and, for a forwarded write the upstream accepted (2xx), waits
// until the copy holds its event, or FollowWait, before the answer is sent.
func (g *Gateway) modifyResponse(resp *http.Response) error {
	resp.Header.Del(SourceHeader)
	resp.Header.Del(LagHeader)
	x := exchangeOf(resp.Request.Context())
	if x == nil || x.write == nil || resp.StatusCode < 200 || resp.StatusCode > 299 || (x.wait == nil && !x.lagged) {
		return nil
	}
	ctx := resp.Request.Context()
	if x.lagged {
		x.lag = true
		resp.Header.Set(LagHeader, "0")
		return nil
	}
	start := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, g.followWait)
	err := x.wait(waitCtx)
	cancel()
	x.waited = time.Since(start)
	if err != nil && ctx.Err() == nil {
		x.lag = true
		resp.Header.Set(LagHeader, strconv.FormatFloat(x.waited.Seconds(), 'f', 3, 64))
		g.log.WarnContext(ctx, "the copy did not show a forwarded write in time",
			slog.String("path", resp.Request.URL.Path), slog.Duration("waited", x.waited), slog.String("error", err.Error()))
	}
	return nil
}

// proxyError answers a request the upstream did not answer: 408 or 400
// when the client's own body failed, nothing when the client went away,
// 504 when the upstream was too slow, else 502.
func (g *Gateway) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	x := exchangeOf(r.Context())
	if x != nil && x.body != nil {
		if berr := x.body.failure(); berr != nil {
			var ne net.Error
			if errors.As(berr, &ne) && ne.Timeout() {
				g.writeError(w, r, fmt.Errorf("forwarded request body: %w", os.ErrDeadlineExceeded))
				return
			}
			g.writeError(w, r, &flagadmin.ValidationError{Fields: []flagadmin.FieldError{{Path: "body",
				Message: "is cut short or badly framed: fewer bytes than Content-Length, or a broken chunked encoding"}}})
			return
		}
	}
	if r.Context().Err() != nil {
		g.log.InfoContext(r.Context(), "request canceled by the client while forwarded", slog.String("path", r.URL.Path))
		return
	}
	var (
		op *net.OpError
		ne net.Error
	)
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		err = fmt.Errorf("%w: cannot reach %s: %v", upstream.ErrBadGateway, g.upstreamHost, err)
	case errors.As(err, &ne) && ne.Timeout():
		err = fmt.Errorf("%w: %s did not answer %s %s in time: %v", upstream.ErrTimeout, g.upstreamHost, r.Method, r.URL.Path, err)
	default:
		err = fmt.Errorf("%w: %s %s to %s: %v", upstream.ErrBadGateway, r.Method, r.URL.Path, g.upstreamHost, err)
	}
	g.writeError(w, r, err)
}

// headerBytes is about the size of r's request line and headers on the
// wire (as the admin API counts them).
func headerBytes(r *http.Request) int64 {
	n := int64(len(r.Method) + len(r.RequestURI) + len(r.Proto) + len(r.Host) + 4)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}

// clientBody is a forwarded request's body: each read must bring bytes
// within timeout (the connection's read deadline moves on before each),
// and its failure is kept, so that proxyError blames the client, not the
// upstream.
type clientBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	mu      sync.Mutex
	err     error
}

func (b *clientBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		// The deadline bounds the body only: left on the connection, it
		// would fire while the answer is awaited (a forwarded write waits
		// up to FollowWait for its event) and cancel the request.
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil:
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
	}
	return n, err
}

// Close ends the body's deadline too (the upstream may answer before it
// read the whole body).
func (b *clientBody) Close() error {
	_ = b.rc.SetReadDeadline(time.Time{})
	return b.ReadCloser.Close()
}

func (b *clientBody) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// forwardWriter is the client's side of a forwarded answer: each write
// must be taken within stall (the write deadline moves on before each),
// and it counts the status and bytes for the log. Flushes reach the
// connection through Unwrap (http.ResponseController).
type forwardWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	stall  time.Duration
	status int
	bytes  int64
}

func (w *forwardWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		w.status = status
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	w.ResponseWriter.WriteHeader(status)
}

func (w *forwardWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *forwardWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *forwardWriter) statusOrOK() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// copyBuffers lends the reverse proxy its copy buffers, of 64 KiB: half
// the system calls of the proxy's default 32 KiB on a large answer (about
// a quarter less CPU per 256 KiB asset in flagadmin-bench gateway), while a
// streaming answer, which holds one for its life, still costs little.
type copyBuffers struct{}

var copyPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

func (copyBuffers) Get() []byte  { return *copyPool.Get().(*[]byte) }
func (copyBuffers) Put(b []byte) { copyPool.Put(&b) }
