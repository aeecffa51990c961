package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// newClient returns a keep-alive client for conns concurrent connections
// to one host: every connection stays open between requests.
func newClient(conns int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// phaseResult is what one phase measured: one kind of request sent alone
// on every connection for the phase's duration, after a warm-up.
type phaseResult struct {
	Kind        string  `json:"kind"`
	About       string  `json:"about"`
	Class       string  `json:"class"`
	Connections int     `json:"connections"`
	Seconds     float64 `json:"seconds"`
	// Requests counts the requests completed during the measured window,
	// Errors those among them that failed: a transport error or a status
	// outside 2xx.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// Late counts the requests still in flight when the window closed:
	// awaited, not recorded.
	Late   int     `json:"late"`
	RPS    float64 `json:"requestsPerSecond"`
	MeanMs float64 `json:"meanMs"`
	MinMs  float64 `json:"minMs"`
	P50Ms  float64 `json:"p50Ms"`
	P90Ms  float64 `json:"p90Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
	// Bytes is the total size of the response bodies; BytesPerRequest its mean.
	Bytes           int64   `json:"bytes"`
	BytesPerRequest float64 `json:"bytesPerRequest"`
	// Statuses counts responses by HTTP status; transport errors count under 0.
	Statuses map[int]int `json:"statuses"`
	// FirstError describes the first failure, for diagnosis.
	FirstError string `json:"firstError,omitempty"`
	// CeilingFraction is RPS over the ceiling's requests/s (0 when not measured).
	CeilingFraction float64 `json:"ceilingFraction,omitempty"`
	// EventsPerSecond is the events read per second by a kind that counts
	// them (the export and the cursor walk, see keyset.go); 0 otherwise.
	EventsPerSecond float64 `json:"eventsPerSecond,omitempty"`
	// ServerPeakRSSBytes is the server's peak resident set (VmHWM) at the
	// end of the phase; 0 when unknown.
	ServerPeakRSSBytes int64 `json:"serverPeakRssBytes,omitempty"`
	// CPU is where the machine's CPU time went during the measured window;
	// nil when it could not be read.
	CPU *cpuUse `json:"cpu,omitempty"`
}

// loadSpec says how to drive a phase.
type loadSpec struct {
	BaseURL     string
	Token       string
	Connections int
	Warmup      time.Duration
	Duration    time.Duration
	// ServerPID is the server's process, for its CPU time (0: unknown);
	// InProcess says it is this process.
	ServerPID int
	InProcess bool
	// Streams and StreamRate drive the stream kind (stream.go).
	Streams, StreamRate int
}

// worker is what one connection's goroutine records.
type worker struct {
	latencies  []time.Duration
	late       int
	bytes      int64
	errors     int
	statuses   map[int]int
	firstError string
}

// runPhase sends requests of k on spec.Connections connections at once,
// each connection issuing its next request as soon as the previous one is
// answered, for spec.Warmup (not recorded) then spec.Duration. A request
// is recorded when it completes inside the measured window, so RPS is the
// recorded count over the window's length.
func runPhase(ctx context.Context, client *http.Client, spec loadSpec, k kind) phaseResult {
	start := time.Now()
	measureFrom := start.Add(spec.Warmup)
	measureTo := measureFrom.Add(spec.Duration)
	var seq atomic.Uint64
	workers := make([]*worker, spec.Connections)
	var wg sync.WaitGroup
	var cpuFrom, cpuTo cpuSample
	wg.Go(func() {
		if sleepUntil(ctx, measureFrom) {
			cpuFrom = sampleCPU(spec.ServerPID)
		}
		if sleepUntil(ctx, measureTo) {
			cpuTo = sampleCPU(spec.ServerPID)
		}
	})
	for i := range workers {
		w := &worker{statuses: map[int]int{}}
		workers[i] = w
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(measureTo) {
				r := k.Next(seq.Add(1) - 1)
				t0 := time.Now()
				status, n, err := send(ctx, client, spec, r)
				t1 := time.Now()
				if t1.After(measureTo) {
					w.late++
					continue
				}
				if t1.Before(measureFrom) {
					continue
				}
				w.latencies = append(w.latencies, t1.Sub(t0))
				w.bytes += n
				w.statuses[status]++
				if err != nil {
					w.errors++
					if w.firstError == "" {
						w.firstError = err.Error()
					}
				}
			}
		})
	}
	wg.Wait()

	res := phaseResult{Kind: k.Name, About: k.About, Class: k.Class, Connections: spec.Connections,
		Seconds: spec.Duration.Seconds(), Statuses: map[int]int{}}
	var all []time.Duration
	for _, w := range workers {
		all = append(all, w.latencies...)
		res.Bytes += w.bytes
		res.Errors += w.errors
		res.Late += w.late
		for s, n := range w.statuses {
			res.Statuses[s] += n
		}
		if res.FirstError == "" {
			res.FirstError = w.firstError
		}
	}
	sum := summarize(all)
	res.Requests = sum.Count
	if res.Seconds > 0 {
		res.RPS = float64(sum.Count) / res.Seconds
	}
	res.MeanMs, res.MinMs = millis(sum.Mean), millis(sum.Min)
	res.P50Ms, res.P90Ms, res.P99Ms, res.MaxMs = millis(sum.P50), millis(sum.P90), millis(sum.P99), millis(sum.Max)
	if sum.Count > 0 {
		res.BytesPerRequest = float64(res.Bytes) / float64(sum.Count)
	}
	if use, ok := cpuBetween(cpuFrom, cpuTo, sum.Count, spec.InProcess); ok {
		res.CPU = &use
	}
	return res
}

// sleepUntil waits until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// send issues r and reads the whole response body. It returns the status
// (0 for a transport error), the body's size, and an error for a transport
// failure or a status outside 2xx.
func send(ctx context.Context, client *http.Client, spec loadSpec, r request) (int, int64, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, spec.BaseURL+r.Path, body)
	if err != nil {
		return 0, 0, err
	}
	if token := cmp.Or(r.Token, spec.Token); token != "" {
		req.Header.Set("Authorization", token)
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("%s %s: %w", r.Method, r.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, int64(len(b)), fmt.Errorf("%s %s: %s: %s", r.Method, r.Path, resp.Status, strings.TrimSpace(string(b[:min(len(b), 300)])))
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, n, fmt.Errorf("%s %s: reading the body: %w", r.Method, r.Path, err)
	}
	return resp.StatusCode, n, nil
}

// fetch issues one request and returns the body of a 2xx answer.
func fetch(ctx context.Context, client *http.Client, spec loadSpec, r request) ([]byte, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, spec.BaseURL+r.Path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", cmp.Or(r.Token, spec.Token))
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s %s: %s: %s", r.Method, r.Path, resp.Status, strings.TrimSpace(string(b[:min(len(b), 300)])))
	}
	return b, nil
}
