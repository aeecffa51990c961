package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/flagadmin"
)

const emptyPage = `{"events":[],"total":0}`

// flaky answers the first fail requests with 503 (Retry-After retryAfter
// when set) and the rest with 200 and body; it counts requests.
func flaky(fail int, retryAfter, body string) (http.Handler, *atomic.Int64) {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if n.Add(1) <= int64(fail) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"id":"e-503","name":"ServiceUnavailable","message":"The storage is unavailable."}`))
			return
		}
		_, _ = w.Write([]byte(body))
	}), &n
}

// TestRetryOn503 checks which requests are retried on 503 and how often.
func TestRetryOn503(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		fail     int
		call     func(*client.Client) error
		wantErr  bool
		attempts int64
	}{
		{"GET retried until 200", 2, func(c *client.Client) error {
			_, err := c.SearchEvents(ctx, flagadmin.EventSearchParams{})
			return err
		}, false, 3},
		{"GET gives up after MaxAttempts", 10, func(c *client.Client) error {
			_, err := c.SearchEvents(ctx, flagadmin.EventSearchParams{})
			return err
		}, true, 4},
		{"DELETE retried", 1, func(c *client.Client) error { return c.DeleteServiceAccount(ctx, "10") }, false, 2},
		{"deprecated search, a read, retried", 1, func(c *client.Client) error {
			_, err := c.DeprecatedSearchEvents(ctx, flagadmin.DeprecatedSearchRequest{})
			return err
		}, false, 2},
		{"lifecycle complete, a write, not retried", 1, func(c *client.Client) error {
			return c.CompleteLifecycle(ctx, "default", "f", flagadmin.CompleteRequest{Status: "kept"})
		}, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := emptyPage
			if tt.name == "deprecated search, a read, retried" {
				body = `{"version":1,"events":[],"totalEvents":0}`
			}
			h, n := flaky(tt.fail, "", body)
			srv := httptest.NewServer(h)
			defer srv.Close()
			err := tt.call(newClient(t, srv.URL, adminToken))
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error: %v", err, tt.wantErr)
			}
			if err != nil {
				ce := wantAPIError(t, err, http.StatusServiceUnavailable, "ServiceUnavailable", flagadmin.ErrUnavailable)
				if ce.ID != "e-503" {
					t.Errorf("error id %q, want e-503", ce.ID)
				}
			}
			if got := n.Load(); got != tt.attempts {
				t.Errorf("%d attempts, want %d", got, tt.attempts)
			}
		})
	}
}

// TestRetryAfter checks that the wait of Retry-After is honoured, and that
// a wait beyond MaxElapsed or the context's deadline is not made.
func TestRetryAfter(t *testing.T) {
	ctx := context.Background()
	h, n := flaky(1, "1", emptyPage)
	srv := httptest.NewServer(h)
	defer srv.Close()
	start := time.Now()
	if _, err := newClient(t, srv.URL, adminToken).SearchEvents(ctx, flagadmin.EventSearchParams{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 900*time.Millisecond || n.Load() != 2 {
		t.Errorf("answered after %v in %d attempts, want about 1s (Retry-After: 1) in 2", d, n.Load())
	}

	// A Retry-After longer than MaxElapsed: the 503 is returned at once.
	h, n = flaky(1, "120", emptyPage)
	srv2 := httptest.NewServer(h)
	defer srv2.Close()
	start = time.Now()
	_, err := newClient(t, srv2.URL, adminToken).SearchEvents(ctx, flagadmin.EventSearchParams{})
	if !errors.Is(err, flagadmin.ErrUnavailable) || n.Load() != 1 || time.Since(start) > 500*time.Millisecond {
		t.Errorf("Retry-After 120: got %v after %d attempts in %v, want ErrUnavailable at once after 1", err, n.Load(), time.Since(start))
	}

	// An HTTP date two seconds ahead, but a context that ends sooner.
	h, n = flaky(1, time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat), emptyPage)
	srv3 := httptest.NewServer(h)
	defer srv3.Close()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = newClient(t, srv3.URL, adminToken).SearchEvents(short, flagadmin.EventSearchParams{})
	if !errors.Is(err, flagadmin.ErrUnavailable) || n.Load() != 1 {
		t.Errorf("Retry-After beyond the deadline: got %v after %d attempts, want ErrUnavailable after 1", err, n.Load())
	}
}

// closingServer accepts connections and closes each of the first fail
// ones without answering; later ones are served by h. It counts accepted
// connections.
func closingServer(t *testing.T, fail int, h http.Handler) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	ln := srv.Listener
	srv.Listener = &closingListener{Listener: ln, fail: int64(fail), n: &n}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

type closingListener struct {
	net.Listener
	fail int64
	n    *atomic.Int64
}

func (l *closingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.n.Add(1) <= l.fail {
			// Read the request, then close: the client sees the
			// connection reset or closed before any response.
			buf := make([]byte, 1024)
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			_, _ = c.Read(buf)
			c.Close()
			continue
		}
		return c, nil
	}
}

// TestRetryOnClosedConnections checks that a GET is retried when the
// server closes the connection without answering, and that the lifecycle
// completion, whose request reached the server, is not.
func TestRetryOnClosedConnections(t *testing.T) {
	ctx := context.Background()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(emptyPage))
	})
	url, n := closingServer(t, 2, ok)
	noKeepAlive := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	c := newClient(t, url, adminToken, client.WithHTTPClient(noKeepAlive))
	if _, err := c.SearchEvents(ctx, flagadmin.EventSearchParams{}); err != nil {
		t.Fatalf("GET after two closed connections: %v", err)
	}
	if got := n.Load(); got != 3 {
		t.Errorf("GET: %d connections, want 3", got)
	}

	url, n = closingServer(t, 1, ok)
	c = newClient(t, url, adminToken, client.WithHTTPClient(noKeepAlive))
	err := c.CompleteLifecycle(ctx, "default", "f", flagadmin.CompleteRequest{Status: "kept"})
	if err == nil {
		t.Fatal("POST after a closed connection: got no error, want the connection error")
	}
	var ce *client.Error
	if errors.As(err, &ce) {
		t.Errorf("got a server error %v, want a connection error", err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("POST: %d connections, want 1 (never retried once sent)", got)
	}

	// A bound on attempts: a server that always closes.
	url, n = closingServer(t, 100, ok)
	c = newClient(t, url, adminToken, client.WithHTTPClient(noKeepAlive), client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond}))
	if _, err := c.ListProjects(ctx, flagadmin.ProjectListOptions{}); err == nil {
		t.Error("a server that always closes: got no error")
	}
	if got := n.Load(); got != 3 {
		t.Errorf("always closing: %d connections, want MaxAttempts 3", got)
	}
}

// TestRetryPOSTWhenUnsent checks that a write is retried when the
// connection could not be opened: the request never left.
func TestRetryPOSTWhenUnsent(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
	defer srv.Close()
	var dials atomic.Int64
	dialer := &net.Dialer{}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) <= 2 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused")}
		}
		return dialer.DialContext(ctx, network, addr)
	}}}
	c := newClient(t, srv.URL, adminToken, client.WithHTTPClient(hc))
	if err := c.CompleteLifecycle(context.Background(), "default", "f", flagadmin.CompleteRequest{Status: "kept"}); err != nil {
		t.Fatal(err)
	}
	if dials.Load() != 3 || posts.Load() != 1 {
		t.Errorf("%d dials and %d requests served, want 3 and 1", dials.Load(), posts.Load())
	}
}

// TestContextCancelStopsRetries checks that a canceled context ends the
// waits between attempts.
func TestContextCancelStopsRetries(t *testing.T) {
	h, n := flaky(100, "", emptyPage)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := newClient(t, srv.URL, adminToken, client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 100, BaseDelay: time.Second, MaxDelay: time.Second}))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.SearchEvents(ctx, flagadmin.EventSearchParams{})
	if !errors.Is(err, context.Canceled) || time.Since(start) > 900*time.Millisecond || n.Load() != 1 {
		t.Errorf("got %v after %v and %d attempts, want context.Canceled soon after 1", err, time.Since(start), n.Load())
	}
}
