package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// Keyset kinds: keyset paging and the export.
//
//   - cursor/first: the first unfiltered page of 50, as a walk starts.
//   - cursor/deep: the page of 50 after a cursor 90% deep into the history
//     (900,000 events in the 1M world), its cursor taken from the Link of
//     the offset page at that depth before the phase.
//   - export/ndjson, export/csv: the whole export, on one connection, each
//     request one export of every event; events/s is the world's events
//     over the mean export time. Run them alone (--kinds export/) for the
//     server's peak RSS to be theirs.
//   - walk/cursor: one walk of every event by next links through
//     adapters/client, pages of 1000; events/s is its events over its time.

// Classes of the keyset kinds.
const (
	classCursorFirst = "cursor-first" // the first page: the reference of the deep one
	classCursorDeep  = "cursor-deep"  // a deep page by cursor: p99 within 2x the first page's
	classExport      = "export"       // the whole export: >= 100,000 events/s (NDJSON), CSV within 1.5x, RSS < 100 MiB
	classWalk        = "walk"         // the client walking every event by cursor: >= 30,000 events/s
)

// Targets of the keyset kinds.
const (
	cursorDeepX        = 2.0
	exportNDJSONRate   = 100000.0
	exportCSVX         = 1.5
	exportPeakRSSMiB   = 100.0
	walkRate           = 30000.0
	cursorDepthPercent = 90
)

// linkAfter finds the cursor of a Link rel="next".
var linkAfter = regexp.MustCompile(`<[^>]*[?&]after=([A-Za-z0-9_-]+)>; rel="next"`)

// keysetKinds returns the keyset kinds over world w.
func keysetKinds(w *worldgen.World) []kind {
	total := w.Profile().Total
	depth := max(1, min(total*cursorDepthPercent/100, total-50))
	var deepPath atomic.Pointer[string]
	deep := kind{Name: "cursor/deep", About: fmt.Sprintf("limit=50&after=<the cursor %s events deep>", thousands(int64(depth))), Class: classCursorDeep,
		Prepare: func(ctx context.Context, c *http.Client, spec loadSpec) error {
			// The offset page of one event at that depth links to the page after it.
			path := searchPath(flagadmin.EventSearchParams{Limit: "1", Offset: strconv.Itoa(depth - 1)})
			link, err := fetchLink(ctx, c, spec, path)
			if err != nil {
				return err
			}
			m := linkAfter.FindStringSubmatch(link)
			if m == nil {
				return fmt.Errorf("GET %s: no next link (%q)", path, link)
			}
			p := "/api/admin/search/events?limit=50&after=" + m[1]
			deepPath.Store(&p)
			return nil
		},
		Next: func(uint64) request { return request{Method: "GET", Path: *deepPath.Load()} }}
	exportKind := func(format string) kind {
		return kind{Name: "export/" + format, About: fmt.Sprintf("GET /api/admin/events/export?format=%s (%s events), 1 connection", format, thousands(int64(total))),
			Class: classExport, Connections: 1, Events: total,
			Next: fixed(request{Method: "GET", Path: "/api/admin/events/export?format=" + format})}
	}
	return []kind{
		{Name: "cursor/first", About: "limit=50, the first page of a walk", Class: classCursorFirst,
			Next: fixed(request{Method: "GET", Path: searchPath(flagadmin.EventSearchParams{Limit: "50"})})},
		deep,
		exportKind("ndjson"),
		exportKind("csv"),
		{Name: "walk/cursor", About: fmt.Sprintf("adapters/client walking all %s events by next links, pages of 1000", thousands(int64(total))),
			Class: classWalk, Events: total, Run: runWalk},
	}
}

// fetchLink returns the Link header of a GET of path.
func fetchLink(ctx context.Context, c *http.Client, spec loadSpec, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, spec.BaseURL+path, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", spec.Token)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return resp.Header.Get("Link"), nil
}

// runKind runs the phase of k: its own Run, or runPhase on k's own number
// of connections (with no client timeout: an export takes as long as it
// takes) when it has one; then its events/s.
func runKind(ctx context.Context, c *http.Client, spec loadSpec, k kind) phaseResult {
	if k.Prepare != nil {
		if err := k.Prepare(ctx, c, spec); err != nil {
			return phaseResult{Kind: k.Name, About: k.About, Class: k.Class, Errors: 1, FirstError: err.Error(), Statuses: map[int]int{}}
		}
	}
	if k.Run != nil {
		return k.Run(ctx, spec, k)
	}
	if k.Connections > 0 {
		spec.Connections = k.Connections
		c = newClient(k.Connections)
		c.Timeout = 0
		defer c.CloseIdleConnections()
	}
	p := runPhase(ctx, c, spec, k)
	if k.Events > 0 && p.MeanMs > 0 {
		p.EventsPerSecond = float64(k.Events) / (p.MeanMs / 1000)
	}
	return p
}

// runWalk walks every event by the server's next links with
// adapters/client, once, and measures events/s.
func runWalk(ctx context.Context, spec loadSpec, k kind) phaseResult {
	res := phaseResult{Kind: k.Name, About: k.About, Class: k.Class, Connections: 1, Statuses: map[int]int{}}
	counted := &countingTransport{next: http.DefaultTransport}
	api, err := client.New(spec.BaseURL, spec.Token, client.WithWalkPageSize(flagadmin.SearchMaxLimit),
		client.WithHTTPClient(&http.Client{Transport: counted}))
	if err != nil {
		res.Errors, res.FirstError = 1, err.Error()
		return res
	}
	start := time.Now()
	n := 0
	for _, err := range api.Events(ctx, flagadmin.EventSearchParams{}) {
		if err != nil {
			res.Errors, res.FirstError = 1, err.Error()
			break
		}
		n++
	}
	elapsed := time.Since(start)
	res.Seconds = elapsed.Seconds()
	res.Requests = int(counted.requests.Load())
	res.Statuses[http.StatusOK] = res.Requests - res.Errors
	res.Bytes = counted.bytes.Load()
	res.BytesPerRequest = float64(res.Bytes) / float64(max(res.Requests, 1))
	res.RPS = float64(res.Requests) / max(res.Seconds, 1e-9)
	res.MeanMs = res.Seconds * 1000 / float64(max(res.Requests, 1))
	res.EventsPerSecond = float64(n) / max(res.Seconds, 1e-9)
	if n < k.Events {
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = fmt.Sprintf("the walk visited %d events, want at least %d", n, k.Events)
		}
	}
	return res
}

// evaluateKeyset checks the keyset targets on the kinds that ran.
func evaluateKeyset(r *results, add func(target, got string, ok bool)) {
	byClass := map[string]phaseResult{}
	for _, k := range r.Kinds {
		if k.Requests > 0 {
			byClass[k.Kind] = k
		}
	}
	first, okFirst := byClass["cursor/first"]
	if deep, ok := byClass["cursor/deep"]; ok && okFirst {
		add(fmt.Sprintf("cursor/deep p99 <= %.0fx cursor/first's (%.1f ms)", cursorDeepX, first.P99Ms), fmt.Sprintf("%.1f ms", deep.P99Ms), deep.P99Ms <= cursorDeepX*first.P99Ms)
	}
	nd, okND := byClass["export/ndjson"]
	if okND {
		add(fmt.Sprintf("export/ndjson >= %s events/s", thousands(int64(exportNDJSONRate))), fmt.Sprintf("%.0f events/s", nd.EventsPerSecond), nd.EventsPerSecond >= exportNDJSONRate)
	}
	if csv, ok := byClass["export/csv"]; ok && okND {
		add(fmt.Sprintf("export/csv within %.1fx export/ndjson's time", exportCSVX), fmt.Sprintf("%.0f events/s", csv.EventsPerSecond), csv.EventsPerSecond*exportCSVX >= nd.EventsPerSecond)
	}
	for _, name := range []string{"export/ndjson", "export/csv"} {
		if k, ok := byClass[name]; ok && k.ServerPeakRSSBytes > 0 && r.Server.Mode == "child" {
			rss := float64(k.ServerPeakRSSBytes) / mib
			add(fmt.Sprintf("server peak RSS after %s < %.0f MiB (run export/ alone)", name, exportPeakRSSMiB), fmt.Sprintf("%.1f MiB", rss), rss < exportPeakRSSMiB)
		}
	}
	if walk, ok := byClass["walk/cursor"]; ok {
		add(fmt.Sprintf("walk/cursor >= %s events/s", thousands(int64(walkRate))), fmt.Sprintf("%.0f events/s", walk.EventsPerSecond), walk.EventsPerSecond >= walkRate)
	}
}

// countingTransport counts the requests and response body bytes that go
// through it.
type countingTransport struct {
	next     http.RoundTripper
	requests atomic.Int64
	bytes    atomic.Int64
}

// RoundTrip implements http.RoundTripper.
func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	t.requests.Add(1)
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &t.bytes}
	return resp, nil
}

// countingBody adds the bytes read to n.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}
