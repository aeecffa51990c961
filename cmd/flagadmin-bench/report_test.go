package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseDatabase(t *testing.T) {
	tests := []struct {
		raw        string
		system     string
		persistent bool
		name       string
	}{
		{"memory:", "memory", false, ""},
		{"sqlite::memory:", "sqlite", false, ""},
		{"sqlite:/tmp/x/world.db", "sqlite", true, "/tmp/x/world.db"},
		{"sqlite:///tmp/world.db", "sqlite", true, "/tmp/world.db"},
		{"sqlite:rel.db", "sqlite", true, "rel.db"},
		{"postgres://postgres@127.0.0.1:5432/flagadmin_bench?sslmode=disable", "postgres", true, "flagadmin_bench"},
		{"postgresql://u:p@h/db", "postgres", true, "db"},
		{"mysql://root@127.0.0.1:3306/bench", "mysql", true, "bench"},
	}
	for _, tc := range tests {
		d, err := parseDatabase(tc.raw)
		if err != nil {
			t.Errorf("parseDatabase(%q): %v", tc.raw, err)
			continue
		}
		if d.System != tc.system || d.Persistent != tc.persistent || d.name != tc.name || d.URL != tc.raw {
			t.Errorf("parseDatabase(%q) = system %q persistent %v name %q, want %q %v %q", tc.raw, d.System, d.Persistent, d.name, tc.system, tc.persistent, tc.name)
		}
	}
	for _, raw := range []string{"", "memory:x", "sqlite:", "sqlite:a.db?x=1", "postgres://h:5432", "postgres://h/a/b", "mysql://h:3306", "redis://h", "flagadmin.db"} {
		if _, err := parseDatabase(raw); err == nil {
			t.Errorf("parseDatabase(%q): want an error", raw)
		}
	}
}

func TestEvaluate(t *testing.T) {
	r := &results{
		World:   worldInfo{Projects: 200},
		Server:  serverInfo{Mode: "child", PeakRSSBytes: 100 * mib, PeakRSSMiB: 100},
		Ceiling: &phaseResult{Kind: "ceiling", Class: classCeiling, RPS: 1000},
		Kinds: []phaseResult{
			{Requests: 100, Kind: "search/none", Class: classPage, P99Ms: 20, RPS: 400, CeilingFraction: 0.4},
			{Requests: 100, Kind: "search/feature", Class: classPage, P99Ms: 30, RPS: 200, CeilingFraction: 0.2},
			{Requests: 100, Kind: "search/query", Class: classQuery, P99Ms: 99},
			{Requests: 100, Kind: "search/offset-100000", Class: classOffset, P99Ms: 101},
			{Requests: 100, Kind: "projects", Class: classProjects, P99Ms: 30},
			{Requests: 100, Kind: "lifecycle/complete", Class: classWrite, P99Ms: 500, Errors: 2},
			{Kind: "search/type-large", Class: classPage, Requests: 0, Late: 16},
		},
	}
	got := map[string]bool{}
	for _, c := range evaluate(r) {
		got[c.Target] = c.OK
	}
	want := map[string]bool{
		"search/none p99 < 25 ms":                      true,
		"search/none >= 30% of the ceiling":            true,
		"search/feature p99 < 25 ms":                   false,
		"search/feature >= 30% of the ceiling":         false,
		"search/query p99 < 100 ms":                    true,
		"search/offset-100000 p99 < 100 ms":            false,
		"projects (200 projects) p99 < 25 ms":          false,
		"no errors":                                    false,
		"server peak RSS < 150 MiB":                    true,
		"search/type-large answered within the window": false,
	}
	if len(got) != len(want) {
		t.Errorf("got %d checks %v, want %d", len(got), got, len(want))
	}
	for target, ok := range want {
		if g, found := got[target]; !found || g != ok {
			t.Errorf("%s: got ok=%v (present %v), want ok=%v", target, g, found, ok)
		}
	}

	// At 10,000 projects the project list may take up to 100 ms.
	r.World.Projects = 10_000
	for _, c := range evaluate(r) {
		if strings.HasPrefix(c.Target, "projects") && (c.Target != "projects (10000 projects) p99 < 100 ms" || !c.OK) {
			t.Errorf("at 10,000 projects: %+v, want p99 < 100 ms met", c)
		}
	}
}

func TestCompareResults(t *testing.T) {
	pg := &results{Database: dbInfo{System: "postgres"}, Kinds: []phaseResult{
		{Kind: "search/none", P50Ms: 10, P99Ms: 20, RPS: 100},
		{Kind: "search/query", P50Ms: 10, P99Ms: 20, RPS: 100},
		{Kind: "projects", P50Ms: 1, P99Ms: 2, RPS: 100},
	}}
	lite := &results{Database: dbInfo{System: "sqlite"}, Kinds: []phaseResult{
		{Kind: "search/none", P50Ms: 25, P99Ms: 50, RPS: 50},
		{Kind: "search/query", P50Ms: 40, P99Ms: 50, RPS: 30},
		{Kind: "projects", P50Ms: 10, P99Ms: 20, RPS: 10},
	}}
	var out bytes.Buffer
	if compareResults(&out, pg, lite) {
		t.Errorf("search/query at 4x p50 passed the 3x check:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "2.50x") || !strings.Contains(out.String(), "MISS") {
		t.Errorf("comparison lacks the ratios or the verdict:\n%s", out.String())
	}
	lite.Kinds[1].P50Ms = 20
	out.Reset()
	if !compareResults(&out, pg, lite) {
		t.Errorf("every search within 3x (projects is no search) failed the check:\n%s", out.String())
	}
}

func TestEvaluateKeyset(t *testing.T) {
	r := &results{Server: serverInfo{Mode: "child"}, Kinds: []phaseResult{
		{Kind: "cursor/first", Requests: 10, P99Ms: 4},
		{Kind: "cursor/deep", Requests: 10, P99Ms: 9},
		{Kind: "export/ndjson", Requests: 2, EventsPerSecond: 120000, ServerPeakRSSBytes: 80 << 20},
		{Kind: "export/csv", Requests: 2, EventsPerSecond: 70000, ServerPeakRSSBytes: 120 << 20},
		{Kind: "walk/cursor", Requests: 1000, EventsPerSecond: 31000},
	}}
	got := map[string]bool{}
	evaluateKeyset(r, func(target, _ string, ok bool) { got[target] = ok })
	want := map[string]bool{
		"cursor/deep p99 <= 2x cursor/first's (4.0 ms)":                     false,
		"export/ndjson >= 100,000 events/s":                                 true,
		"export/csv within 1.5x export/ndjson's time":                       false,
		"server peak RSS after export/ndjson < 100 MiB (run export/ alone)": true,
		"server peak RSS after export/csv < 100 MiB (run export/ alone)":    false,
		"walk/cursor >= 30,000 events/s":                                    true,
	}
	for target, ok := range want {
		if g, found := got[target]; !found || g != ok {
			t.Errorf("%s: got %v (found %v), want %v; all: %v", target, g, found, ok, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d targets, want %d: %v", len(got), len(want), got)
	}
}
