package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// Target classes: which of the search targets a kind of request is held to.
const (
	classPage       = "page"       // a search page of 50 with its exact total: p99 < 25 ms and >= 30% of the ceiling
	classQuery      = "query"      // the selective free-text query: p99 < 100 ms
	classOffset     = "offset"     // offset=100000: p99 < 100 ms
	classProjects   = "projects"   // the project list: p99 < 25 ms (200 projects) or < 100 ms (10,000)
	classDeprecated = "deprecated" // the deprecated search: no latency target, no errors
	classWrite      = "write"      // lifecycle completions: no latency target, no errors
	classMixed      = "mixed"      // reads among writes: no latency target, no errors
	classCeiling    = "ceiling"    // the bare net/http handler
)

// request is one HTTP request of a kind, relative to the server's base URL.
type request struct {
	Method string
	Path   string // path and query string
	Body   []byte // nil for none; sent as application/json
	// Token is the Authorization value of this request; "" sends the
	// run's token (--token, else the world's first admin token).
	Token string
}

// kind is one kind of request of the mix. Next returns the n-th request of
// the kind (n counts from 0 within a phase, across all connections), so a
// kind may vary its requests; it must be safe for concurrent use.
type kind struct {
	Name  string
	About string
	Class string
	Next  func(n uint64) request
	// Connections, when not 0, replaces the run's --connections for this
	// kind (the export runs alone on one); Events is how many events one
	// request (or Run) reads, for events/s; Prepare runs before the phase
	// (it may build the requests from the server's answers); Run, when
	// set, measures the kind instead of the phase of Next's requests.
	// See keyset.go.
	Connections int
	Events      int
	Prepare     func(ctx context.Context, c *http.Client, spec loadSpec) error
	Run         func(ctx context.Context, spec loadSpec, k kind) phaseResult
	// Explicit kinds run only when --kinds names them (not with "all").
	Explicit bool
}

// fixed returns a Next that always sends r.
func fixed(r request) func(uint64) request {
	return func(uint64) request { return r }
}

// searchPath returns the path and query string of the event search with
// params: every parameter the domain declares (flagadmin.FilterParams)
// that is not empty.
func searchPath(p flagadmin.EventSearchParams) string {
	v := url.Values{}
	for _, f := range flagadmin.FilterParams() {
		if value := f.Value(&p); value != "" {
			v.Set(f.Name, value)
		}
	}
	if len(v) == 0 {
		return "/api/admin/search/events"
	}
	return "/api/admin/search/events?" + v.Encode()
}

// describe says what a probe's parameters ask for, for the tables: its
// parameters that are not empty, in their declared order.
func describe(p flagadmin.EventSearchParams) string {
	var parts []string
	for _, f := range flagadmin.FilterParams() {
		if value := f.Value(&p); value != "" {
			parts = append(parts, f.Name+"="+value)
		}
	}
	return strings.Join(parts, " ")
}

// buildMix returns the request mix over world w, in the order the phases
// run: first the varied kinds (buildVaried), which measure
// what users send; then the fixed kinds, each repeating one
// request: every search probe of the world (no filter, each
// single filter, IS_ANY_OF of 5 projects, a month, the selective query,
// offset 100000, all pages of 50), the deprecated search with {} and with
// a type, the project list, and lifecycle completions. runID makes the
// completions' statusValue unique to the run, so every completion changes
// the feature and writes an event, even on a world reused from an earlier run.
func buildMix(w *worldgen.World, runID string) []kind {
	out := buildVaried(w, runID)
	var typeSmall string
	for _, p := range w.Probes() {
		class := classPage
		switch {
		case p.Name == "query":
			class = classQuery
		case strings.HasPrefix(p.Name, "offset-"):
			class = classOffset
		}
		if p.Name == "type-small" {
			typeSmall = strings.TrimPrefix(p.Params.Type, "IS:")
		}
		about := fmt.Sprintf("%s (%d matches)", describe(p.Params), p.Total)
		out = append(out, kind{Name: "search/" + p.Name, About: about, Class: class,
			Next: fixed(request{Method: "GET", Path: searchPath(p.Params)})})
	}

	deprecated := func(body flagadmin.DeprecatedSearchRequest) []byte {
		b, err := json.Marshal(body)
		if err != nil {
			panic(err) // a struct of strings and ints always encodes
		}
		return b
	}
	out = append(out,
		kind{Name: "deprecated/empty", About: "POST /api/admin/events/search {} (100 events)", Class: classDeprecated,
			Next: fixed(request{Method: "POST", Path: "/api/admin/events/search", Body: deprecated(flagadmin.DeprecatedSearchRequest{})})},
		kind{Name: "deprecated/type", About: fmt.Sprintf("POST /api/admin/events/search {\"type\":%q}", typeSmall), Class: classDeprecated,
			Next: fixed(request{Method: "POST", Path: "/api/admin/events/search", Body: deprecated(flagadmin.DeprecatedSearchRequest{Type: &typeSmall})})},
		kind{Name: "projects", About: fmt.Sprintf("GET /api/admin/projects (%d projects)", w.Config().Projects), Class: classProjects,
			Next: fixed(request{Method: "GET", Path: "/api/admin/projects"})},
		lifecycleKind(w.Features(), runID),
	)
	var none string
	for _, p := range w.Probes() {
		if p.Name == "none" {
			none = searchPath(p.Params)
		}
	}
	if none != "" {
		out = append(out, mixedKind(none, lifecycleKind(w.Features(), runID+"-mixed")))
	}
	out = append(out, keysetKinds(w)...)
	return append(out, streamKind(w))
}

// mixedWriteEvery is the share of writes in the mixed kind: one request in
// mixedWriteEvery is a lifecycle completion.
const mixedWriteEvery = 10

// mixedKind sends the unfiltered search page (path) with one lifecycle
// completion of writes in every mixedWriteEvery requests: every write
// changes the event log, so a server that caches results must recompute
// the page after each one. The table shows the two together.
func mixedKind(path string, writes kind) kind {
	page := request{Method: "GET", Path: path}
	return kind{
		Name:  "mixed/search+writes",
		About: fmt.Sprintf("%s, with 1 request in %d a lifecycle completion", path, mixedWriteEvery),
		Class: classMixed,
		Next: func(n uint64) request {
			if n%mixedWriteEvery == mixedWriteEvery-1 {
				return writes.Next(n / mixedWriteEvery)
			}
			return page
		},
	}
}

// lifecycleKind completes the world's features in turn: request n goes to
// feature n mod len(features); on its even visits the feature is kept (with
// a statusValue unique to the run and visit), on its odd ones discarded, so
// every request replaces the previous outcome and writes an event.
func lifecycleKind(features []flagadmin.Feature, runID string) kind {
	paths := make([]string, len(features))
	for i, f := range features {
		paths[i] = "/api/admin/projects/" + url.PathEscape(f.Project) + "/features/" + url.PathEscape(f.Name) + "/lifecycle/complete"
	}
	discarded := []byte(`{"status":"discarded"}`)
	return kind{
		Name:  "lifecycle/complete",
		About: fmt.Sprintf("POST .../lifecycle/complete, kept and discarded in turn over %d features", len(features)),
		Class: classWrite,
		Next: func(n uint64) request {
			i, visit := n%uint64(len(paths)), n/uint64(len(paths))
			body := discarded
			if visit%2 == 0 {
				value := fmt.Sprintf("bench-%s-%d", runID, visit)
				body, _ = json.Marshal(flagadmin.CompleteRequest{Status: flagadmin.StatusKept, StatusValue: &value})
			}
			return request{Method: "POST", Path: paths[i], Body: body}
		},
	}
}

// selectKinds keeps the kinds spec names: a comma-separated list of kind
// names or name prefixes ("search/", "projects"); "" or "all" keeps all.
// Each entry must select at least one kind.
func selectKinds(all []kind, spec string) ([]kind, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "all" {
		var out []kind
		for _, k := range all {
			if !k.Explicit {
				out = append(out, k)
			}
		}
		return out, nil
	}
	keep := make([]bool, len(all))
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		found := false
		for i, k := range all {
			if k.Name == entry || strings.HasPrefix(k.Name, entry) {
				keep[i], found = true, true
			}
		}
		if !found {
			names := make([]string, len(all))
			for i, k := range all {
				names[i] = k.Name
			}
			return nil, fmt.Errorf("--kinds: %q matches no kind; the kinds are %s", entry, strings.Join(names, ", "))
		}
	}
	var out []kind
	for i, k := range all {
		if keep[i] {
			out = append(out, k)
		}
	}
	return out, nil
}
