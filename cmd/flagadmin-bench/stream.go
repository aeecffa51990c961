package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// The stream kind: the live stream's fan-out.
//
//   - stream/fanout: --streams streams of GET /api/admin/events/stream
//     (type=IS:feature-completed) stay open while lifecycle completions
//     are written at --stream-rate per second, each carrying its send time
//     in its statusValue. Each delivery's latency is the time from the
//     write's answer (its commit came before: a lower bound of
//     commit-to-delivery, short of the answer's own way back) to its
//     arrival on a stream; the latency from the write's send (an upper
//     bound, the write's own time included) is reported too. It runs only
//     when --kinds names it.

// classStream is the class of the stream kind.
const classStream = "stream"

// Targets of the stream kind.
const (
	streamP99Ms      = 1000.0
	streamPeakRSSMiB = 200.0
)

// streamKind returns the stream kind over the world's features.
func streamKind(w *worldgen.World) kind {
	features := w.Features()
	paths := make([]string, len(features))
	for i, f := range features {
		paths[i] = "/api/admin/projects/" + url.PathEscape(f.Project) + "/features/" + url.PathEscape(f.Name) + "/lifecycle/complete"
	}
	return kind{Name: "stream/fanout", Class: classStream, Explicit: true,
		About: "--streams open streams of feature-completed events while --stream-rate completions/s are written; latency from the write's answer to delivery",
		Run: func(ctx context.Context, spec loadSpec, k kind) phaseResult {
			return runStreams(ctx, spec, k, paths)
		}}
}

// delivery marker: the statusValue of a bench write, "t<send time in Unix ns>".
var sentMarker = []byte(`"statusValue":"t`)

// runStreams opens the streams, writes at the rate for warm-up plus
// duration, and records the deliveries of the writes sent in the
// measured window.
func runStreams(ctx context.Context, spec loadSpec, k kind, paths []string) phaseResult {
	res := phaseResult{Kind: k.Name, Class: k.Class, Connections: spec.Streams, Statuses: map[int]int{}}
	res.About = fmt.Sprintf("%d streams of feature-completed events, %d completions/s written; latency from the write's answer to its delivery", spec.Streams, spec.StreamRate)
	tr := &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxConnsPerHost: spec.Streams + 64, MaxIdleConnsPerHost: 64, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var measureFrom atomic.Int64 // Unix ns of the window's first write
	measureFrom.Store(1<<63 - 1)
	var mu sync.Mutex
	var got []delivery
	var answered sync.Map // the write's send time (Unix ns) -> the time its answer arrived
	var failures atomic.Int64
	var firstErr atomic.Pointer[string]
	fail := func(err error) {
		failures.Add(1)
		s := err.Error()
		firstErr.CompareAndSwap(nil, &s)
	}
	var opened, wg sync.WaitGroup
	delivered := make([]int64, spec.Streams) // deliveries of window writes, per stream
	for i := range spec.Streams {
		opened.Add(1)
		wg.Go(func() {
			var once sync.Once
			ready := func() { once.Do(opened.Done) }
			defer ready()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, spec.BaseURL+"/api/admin/events/stream?type=IS:feature-completed", nil)
			req.Header.Set("Authorization", spec.Token)
			resp, err := c.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					fail(err)
				}
				return
			}
			defer resp.Body.Close()
			mu.Lock()
			res.Statuses[resp.StatusCode]++
			mu.Unlock()
			if resp.StatusCode != http.StatusOK {
				fail(fmt.Errorf("stream %d: %s", i, resp.Status))
				return
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 0, 16<<10), 1<<20)
			var mine []delivery
			for sc.Scan() {
				line := sc.Bytes()
				if bytes.HasPrefix(line, []byte("id: ")) {
					ready() // the start position: connected
					continue
				}
				if !bytes.HasPrefix(line, []byte("data: ")) {
					if bytes.HasPrefix(line, []byte("event: end")) {
						fail(fmt.Errorf("stream %d ended by the server", i))
					}
					continue
				}
				now := time.Now().UnixNano()
				at := bytes.Index(line, sentMarker)
				if at < 0 {
					continue
				}
				rest := line[at+len(sentMarker):]
				end := bytes.IndexByte(rest, '"')
				sent, err := strconv.ParseInt(string(rest[:max(end, 0)]), 10, 64)
				if err != nil || sent < measureFrom.Load() {
					continue
				}
				mine = append(mine, delivery{sent: sent, at: now})
			}
			if ctx.Err() == nil {
				fail(fmt.Errorf("stream %d closed: %v", i, sc.Err()))
			}
			mu.Lock()
			got = append(got, mine...)
			delivered[i] = int64(len(mine))
			mu.Unlock()
		})
	}
	opened.Wait()
	time.Sleep(200 * time.Millisecond) // past the streams' start positions

	// The writer: one completion every 1/rate, each in its own goroutine
	// (a slow write does not delay the next).
	var writes, writeErrs atomic.Int64
	var wmu sync.Mutex
	var writeLat []time.Duration
	interval := time.Second / time.Duration(max(spec.StreamRate, 1))
	tick := time.NewTicker(interval)
	start := time.Now()
	windowStart := start.Add(spec.Warmup)
	windowEnd := windowStart.Add(spec.Duration)
	var writers sync.WaitGroup
	var cpu0 cpuSample
	for n := 0; time.Now().Before(windowEnd); n++ {
		<-tick.C
		now := time.Now()
		inWindow := !now.Before(windowStart)
		if inWindow && measureFrom.Load() == 1<<63-1 {
			measureFrom.Store(now.UnixNano())
			cpu0 = sampleCPU(spec.ServerPID)
		}
		sent := now
		writers.Go(func() {
			body, _ := json.Marshal(map[string]string{"status": flagadmin.StatusKept, "statusValue": "t" + strconv.FormatInt(sent.UnixNano(), 10)})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, spec.BaseURL+paths[n%len(paths)], bytes.NewReader(body))
			req.Header.Set("Authorization", spec.Token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				writeErrs.Add(1)
				fail(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				writeErrs.Add(1)
				fail(fmt.Errorf("write: %s", resp.Status))
				return
			}
			if inWindow {
				answered.Store(sent.UnixNano(), time.Now().UnixNano())
				writes.Add(1)
				wmu.Lock()
				writeLat = append(writeLat, time.Since(sent))
				wmu.Unlock()
			}
		})
	}
	tick.Stop()
	writers.Wait()
	time.Sleep(2 * time.Second) // the last deliveries
	cpu1 := sampleCPU(spec.ServerPID)
	cancel()
	wg.Wait()

	// Each delivery from its write's answer (the commit came before it:
	// a lower bound of commit-to-delivery) and from its send (an upper
	// bound).
	lat := make([]time.Duration, 0, len(got))
	fromSend := make([]time.Duration, 0, len(got))
	for _, d := range got {
		fromSend = append(fromSend, time.Duration(d.at-d.sent))
		if a, ok := answered.Load(d.sent); ok {
			lat = append(lat, time.Duration(max(d.at-a.(int64), 0)))
		}
	}
	got = nil
	up := summarize(fromSend)
	elapsed := spec.Duration
	s := summarize(lat)
	res.Seconds = elapsed.Seconds()
	res.Requests = s.Count
	res.RPS = float64(s.Count) / elapsed.Seconds()
	res.MeanMs, res.MinMs, res.P50Ms, res.P90Ms, res.P99Ms, res.MaxMs = millis(s.Mean), millis(s.Min), millis(s.P50), millis(s.P90), millis(s.P99), millis(s.Max)
	res.Errors = int(failures.Load())
	want := writes.Load() * int64(spec.Streams)
	if missing := want - int64(s.Count); missing != 0 {
		res.Errors++
		msg := fmt.Sprintf("%d deliveries of %d window writes to %d streams, want %d", s.Count, writes.Load(), spec.Streams, want)
		firstErr.CompareAndSwap(nil, &msg)
	}
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	ws := summarize(writeLat)
	res.About += fmt.Sprintf("; %d writes in the window, write latency p50 %.1f ms p99 %.1f ms; from the write's send (upper bound) p50 %.1f ms p99 %.1f ms max %.1f ms",
		writes.Load(), millis(ws.P50), millis(ws.P99), millis(up.P50), millis(up.P99), millis(up.Max))
	if use, ok := cpuBetween(cpu0, cpu1, s.Count, spec.InProcess); ok {
		res.CPU = &use
	}
	return res
}

// delivery is one event's arrival on one stream: its write's send time
// and its arrival, Unix ns.
type delivery struct{ sent, at int64 }

// evaluateStream checks the stream targets on the stream kind.
func evaluateStream(r *results, add func(target, got string, ok bool)) {
	for _, k := range r.Kinds {
		if k.Class != classStream {
			continue
		}
		add(fmt.Sprintf("%s p99 commit-to-delivery < %.0f ms", k.Kind, streamP99Ms), fmt.Sprintf("%.1f ms", k.P99Ms), k.P99Ms < streamP99Ms && k.Requests > 0)
		add(k.Kind+" every write delivered to every stream", fmt.Sprintf("%d errors", k.Errors), k.Errors == 0)
		if k.ServerPeakRSSBytes > 0 && r.Server.Mode == "child" {
			rss := float64(k.ServerPeakRSSBytes) / mib
			add(fmt.Sprintf("server peak RSS with %d streams < %.0f MiB", k.Connections, streamPeakRSSMiB), fmt.Sprintf("%.1f MiB", rss), rss < streamPeakRSSMiB)
		}
	}
}
