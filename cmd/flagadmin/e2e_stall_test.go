package main

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/faultproxy"
)

// TestEndToEndStopDuringStall runs the binary on PostgreSQL behind a proxy
// that freezes the database, sends requests, then SIGTERM: every held
// request is answered 503 within the storage deadline and a second, and
// the process exits cleanly well within its stop timeout.
func TestEndToEndStopDuringStall(t *testing.T) {
	bin := buildBinary(t)
	u, err := url.Parse(dbtest.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	u.Host = proxy.Addr()
	const dbTimeout = 2 * time.Second
	addr := freeAddr(t)
	base := "http://" + addr
	p := startBinary(t, bin, "FLAGADMIN_ADDR="+addr, "FLAGADMIN_DB="+u.String(), "FLAGADMIN_DB_TIMEOUT="+dbTimeout.String(),
		"FLAGADMIN_SEED=", "FLAGADMIN_ADMIN_TOKENS=*:*.e2e-admin", "FLAGADMIN_LOG_LEVEL=info", "FLAGADMIN_LOG_FORMAT=text")
	p.waitReady(t, base)

	proxy.Set(faultproxy.Stall)
	defer proxy.Set(faultproxy.Pass)
	type answer struct {
		status     int
		retryAfter string
		took       time.Duration
		err        error
	}
	paths := []string{"/api/admin/projects", "/api/admin/search/events", "/api/admin/projects?archived=true", "/api/admin/search/events?limit=3"}
	answers := make([]answer, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
			req.Header.Set("Authorization", "*:*.e2e-admin")
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			answers[i] = answer{took: time.Since(start), err: err}
			if err == nil {
				resp.Body.Close()
				answers[i].status, answers[i].retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
			}
		}()
	}
	// Wait until the server holds every request (its in-flight gauge; /metrics
	// itself is not counted): a request still in the listen queue at SIGTERM
	// is not the server's to answer.
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n, _ := sample(scrape(t, base+metricsPath), "flagadmin_http_requests_in_flight", nil)
		if n == float64(len(paths)) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%v requests in flight after 20 s, want %d", n, len(paths))
		}
	}
	stopAt := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	select {
	case <-p.done:
	case <-time.After(dbTimeout + 5*time.Second):
		t.Fatalf("flagadmin did not exit within %v of SIGTERM during a stall:\n%s", dbTimeout+5*time.Second, p.stderr)
	}
	exited := time.Since(stopAt)
	if p.err != nil {
		t.Errorf("flagadmin exited with %v, want exit code 0:\n%s", p.err, p.stderr)
	}
	for i, a := range answers {
		if a.err != nil || a.status != http.StatusServiceUnavailable || a.retryAfter == "" {
			t.Errorf("%s: got %d (Retry-After %q) %v, want 503 with Retry-After", paths[i], a.status, a.retryAfter, a.err)
		}
		if a.took > dbTimeout+time.Second {
			t.Errorf("%s: answered after %v, want within the deadline %v and a second", paths[i], a.took, dbTimeout)
		}
	}
	t.Logf("answers %+v; exited %v after SIGTERM (deadline %v, stop timeout %v)\n%s", answers, exited, dbTimeout, stopTimeout, p.stderr)
}
