package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// runPhase counts every answer, classifies non-2xx answers and transport
// errors as errors, and sums the body sizes.
func TestRunPhaseCountsErrorsAndBytes(t *testing.T) {
	var n atomic.Int64
	body := strings.Repeat("x", 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "secret" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/p" || r.URL.Query().Get("i") == "" {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
		if n.Add(1)%3 == 0 {
			http.Error(w, "every third fails", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, body)
	}))
	defer srv.Close()
	var sent atomic.Int64
	k := kind{Name: "k", Class: classPage, Next: func(i uint64) request {
		sent.Add(1)
		return request{Method: "GET", Path: "/p?i=" + string(rune('a'+i%26))}
	}}
	client := newClient(3)
	spec := loadSpec{BaseURL: srv.URL, Token: "secret", Connections: 3, Duration: 300 * time.Millisecond}
	res := runPhase(context.Background(), client, spec, k)
	if res.Requests == 0 {
		t.Fatal("no request was recorded")
	}
	if int64(res.Requests) > sent.Load() {
		t.Errorf("recorded %d requests but only %d were sent", res.Requests, sent.Load())
	}
	ok, failed := res.Statuses[http.StatusOK], res.Statuses[http.StatusInternalServerError]
	if ok+failed != res.Requests || len(res.Statuses) > 2 {
		t.Errorf("statuses %v do not add up to %d requests of 200 or 500", res.Statuses, res.Requests)
	}
	if res.Errors != failed {
		t.Errorf("got %d errors, want the %d answers of 500", res.Errors, failed)
	}
	if failed > 0 && !strings.Contains(res.FirstError, "500") {
		t.Errorf("first error %q does not name the status", res.FirstError)
	}
	if res.Bytes < int64(ok*len(body)) {
		t.Errorf("got %d bytes, want at least %d for %d answers of %d bytes", res.Bytes, ok*len(body), ok, len(body))
	}
	if res.RPS != float64(res.Requests)/0.3 {
		t.Errorf("RPS %v, want requests over the duration (%v)", res.RPS, float64(res.Requests)/0.3)
	}
	if !(res.P50Ms <= res.P90Ms && res.P90Ms <= res.P99Ms && res.P99Ms <= res.MaxMs) {
		t.Errorf("percentiles out of order: p50 %v p90 %v p99 %v max %v", res.P50Ms, res.P90Ms, res.P99Ms, res.MaxMs)
	}
}

// A server that cannot be reached gives transport errors (status 0), all counted.
func TestRunPhaseTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	k := kind{Name: "k", Next: fixed(request{Method: "GET", Path: "/"})}
	res := runPhase(context.Background(), newClient(1), loadSpec{BaseURL: base, Connections: 1, Duration: 100 * time.Millisecond}, k)
	if res.Requests == 0 || res.Errors != res.Requests || res.Statuses[0] != res.Requests {
		t.Errorf("got %d requests, %d errors, statuses %v; want every request a transport error", res.Requests, res.Errors, res.Statuses)
	}
}

func TestCeilingHandlerServesTheBody(t *testing.T) {
	body := []byte(`{"events":[],"total":0}`)
	srv := httptest.NewServer(ceilingHandler(body))
	defer srv.Close()
	got, err := fetch(context.Background(), srv.Client(), loadSpec{BaseURL: srv.URL}, request{Method: "GET", Path: "/api/admin/search/events?limit=50"})
	if err != nil || string(got) != string(body) {
		t.Errorf("got %q, %v; want %q", got, err, body)
	}
}

func TestPeakRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc on this system: peak RSS is read from /proc/PID/status")
	}
	rss, err := peakRSS(os.Getpid())
	if err != nil || rss <= 0 {
		t.Errorf("peakRSS(self) = %d, %v; want a positive size", rss, err)
	}
	if _, err := peakRSS(-1); err == nil {
		t.Error("peakRSS(-1): want an error")
	}
}

func TestCPUBetween(t *testing.T) {
	a := cpuSample{server: 1 * time.Second, self: 2 * time.Second, busy: 10 * time.Second, total: 20 * time.Second, ok: true}
	b := cpuSample{server: 3 * time.Second, self: 3 * time.Second, busy: 16 * time.Second, total: 28 * time.Second, ok: true}
	got, ok := cpuBetween(a, b, 1000, false)
	want := cpuUse{ServerMsPerRequest: 2, LoadGenMsPerRequest: 1, OtherMsPerRequest: 3, MachineBusy: 0.75}
	if !ok || got != want {
		t.Errorf("cpuBetween = %+v, %v; want %+v", got, ok, want)
	}
	// In-process, the server's time is this process's: nothing is counted twice.
	a.server, b.server = a.self, b.self
	got, _ = cpuBetween(a, b, 1000, true)
	if want := (cpuUse{LoadGenMsPerRequest: 1, OtherMsPerRequest: 5, MachineBusy: 0.75}); got != want {
		t.Errorf("in-process: cpuBetween = %+v, want %+v", got, want)
	}
	if _, ok := cpuBetween(a, cpuSample{}, 1000, false); ok {
		t.Error("cpuBetween with an unread sample: want not ok")
	}
	if _, ok := cpuBetween(a, b, 0, false); ok {
		t.Error("cpuBetween over no request: want not ok")
	}
}

func TestSampleCPU(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc on this system: CPU times are read from /proc")
	}
	s := sampleCPU(os.Getpid())
	if !s.ok || s.total <= 0 || s.busy < 0 || s.busy > s.total {
		t.Errorf("sampleCPU(self) = %+v", s)
	}
	if s := sampleCPU(0); s.ok {
		t.Error("sampleCPU without a server process: want not ok")
	}
}
