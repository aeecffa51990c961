package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// DefaultUserAgent is the User-Agent of a Client without WithUserAgent.
const DefaultUserAgent = "flagadmin-go-client/1"

// DefaultWalkPageSize is the page size Events asks for when the search
// parameters set no limit: larger than the API's default of 50 so that a
// walk needs fewer requests, smaller than its maximum of 1000 so that one
// page stays small.
const DefaultWalkPageSize = 500

// maxBodyBytes bounds a JSON response body read into memory; maxErrorBytes
// bounds an error body (ours stay under 4 KiB, a proxy's page may not).
const (
	maxBodyBytes  = 64 << 20
	maxErrorBytes = 64 << 10
)

// Client calls the admin API of one server with one token. It is safe for
// concurrent use.
type Client struct {
	base      *url.URL // scheme, host and path prefix; the path has no trailing slash
	token     string
	http      *http.Client
	userAgent string
	retry     RetryPolicy
	pageSize  int
}

var _ flagadmin.Admin = (*Client)(nil)

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client requests go through (default
// http.DefaultClient). Its Timeout, if any, bounds each attempt.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithUserAgent sets the User-Agent header (default DefaultUserAgent).
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRetryPolicy sets how requests are retried; zero fields take the
// defaults of RetryPolicy, and MaxAttempts 1 turns retries off.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithWalkPageSize sets the page size Events asks for when the search
// parameters set no limit (default DefaultWalkPageSize); it is clamped to
// 1..flagadmin.SearchMaxLimit.
func WithWalkPageSize(n int) Option {
	return func(c *Client) { c.pageSize = min(max(n, 1), flagadmin.SearchMaxLimit) }
}

// New returns a Client of the server at baseURL, the address the API's
// paths (/api/admin/...) are relative to: "https://flags.example.com", or
// with a path prefix "https://example.com/unleash". token is sent as the
// Authorization header of every request (an admin API token, a personal
// access token or a service account token); empty sends none.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http:// or https:// and a host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("client: base URL %q: want no query, fragment or user information", baseURL)
	}
	if strings.ContainsAny(token, "\r\n\x00") {
		return nil, errors.New("client: the token contains a line break or NUL")
	}
	base := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimRight(u.Path, "/")}
	if u.RawPath != "" {
		base.RawPath = strings.TrimRight(u.RawPath, "/")
	}
	c := &Client{base: base, token: token, http: http.DefaultClient, userAgent: DefaultUserAgent, pageSize: DefaultWalkPageSize}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	return c, nil
}

// retryMode says when a request may be sent again.
type retryMode int

const (
	// retrySafe: a request without effect, or whose repetition has the same
	// effect (GET, DELETE, the deprecated search): retried on 503, 429 and
	// any connection error.
	retrySafe retryMode = iota
	// retryUnsent: a write; retried only when the connection could not be
	// opened, so the request never left this process.
	retryUnsent
)

// request is one API call, before retries.
type request struct {
	method string
	url    *url.URL
	body   []byte // JSON; nil for none
	accept string
	retry  retryMode
	// header holds extra request headers (Last-Event-ID).
	header http.Header
}

// endpoint returns the URL of path under the base URL, with query q. path
// is already escaped: fixed text and segment() values.
func (c *Client) endpoint(path string, q url.Values) *url.URL {
	u := *c.base
	raw := c.base.EscapedPath() + path
	p, err := url.PathUnescape(raw)
	if err != nil { // cannot happen: the base path and every segment are escaped
		p = c.base.Path + path
	}
	u.Path, u.RawPath = p, raw
	u.RawQuery = q.Encode()
	return &u
}

// segment escapes one path segment. The dot segments "." and ".." are
// escaped too, so that no proxy or server removes them as relative paths.
func segment(s string) string {
	switch s {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(s)
}

// requirePathParams refuses empty path parameters, which would make the
// path of another route; no request is sent.
func requirePathParams(params ...string) error {
	v := &flagadmin.ValidationError{}
	for i := 0; i+1 < len(params); i += 2 {
		if params[i+1] == "" {
			v.Fields = append(v.Fields, flagadmin.FieldError{Path: params[i], Message: "must not be empty"})
		}
	}
	if len(v.Fields) > 0 {
		return v
	}
	return nil
}

// attempt sends req once. A response with a status of 300 or more is read
// and returned as an *Error. With stream, a successful response is returned
// with its body open; otherwise the body is read (up to maxBodyBytes) and
// returned, and a failure to read it is a connectionError.
func (c *Client) attempt(ctx context.Context, req request, stream bool) (*http.Response, []byte, error) {
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.method, req.url.String(), body)
	if err != nil {
		return nil, nil, fmt.Errorf("client: %w", err)
	}
	if c.token != "" {
		hreq.Header.Set("Authorization", c.token)
	}
	for k, v := range req.header {
		hreq.Header[k] = v
	}
	hreq.Header.Set("Accept", req.accept)
	hreq.Header.Set("User-Agent", c.userAgent)
	if req.body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, nil, &connectionError{op: req.method + " " + req.url.Path, err: err, unsent: isDialError(err)}
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes)) // a cut-off error body still maps by status
		return nil, nil, newError(resp, b)
	}
	if stream {
		return resp, nil, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return nil, nil, &connectionError{op: req.method + " " + req.url.Path, err: err}
	}
	if len(b) > maxBodyBytes {
		return nil, nil, fmt.Errorf("client: %s %s: the response body is larger than %d bytes", req.method, req.url.Path, maxBodyBytes)
	}
	return resp, b, nil
}

// do sends req with retries and returns the body of its successful response.
func (c *Client) do(ctx context.Context, req request) (*http.Response, []byte, error) {
	return c.exchange(ctx, req, false)
}

// requireJSON checks that a response holds JSON.
func requireJSON(resp *http.Response, what string) error {
	return requireMediaType(resp, what, func(mt string) bool {
		return mt == "application/json" || strings.HasSuffix(mt, "+json")
	})
}

// requireMediaType checks the response's Content-Type with ok.
func requireMediaType(resp *http.Response, what string, ok func(string) bool) error {
	ct := resp.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !ok(mt) {
		return fmt.Errorf("client: %s: the server answered %d with Content-Type %q", what, resp.StatusCode, ct)
	}
	return nil
}
