package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// tiny is a world small enough to load in a test in a fraction of a second.
var tiny = worldgen.Config{Events: 2000, Projects: 20, Features: 400, Users: 60, Groups: 6}

var tinyWorld = sync.OnceValue(func() *worldgen.World { return worldgen.MustNew(tiny) })

func kindNames(ks []kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Name
	}
	return out
}

func TestBuildMixKinds(t *testing.T) {
	mix := buildMix(tinyWorld(), "run1")
	want := []string{
		"varied/none", "varied/feature", "varied/project", "varied/type", "varied/createdBy",
		"varied/any-of", "varied/month", "varied/offset", "varied/projects", "varied/mixed",
		"varied/query", "varied/common", "search/none", "search/feature", "search/project", "search/type-small", "search/type-large",
		"search/createdBy", "search/project-any-of-5", "search/date-range", "search/query", "search/offset-1000",
		"deprecated/empty", "deprecated/type", "projects", "lifecycle/complete", "mixed/search+writes",
		"cursor/first", "cursor/deep", "export/ndjson", "export/csv", "walk/cursor", "stream/fanout",
	}
	if got := kindNames(mix); !slices.Equal(got, want) {
		t.Fatalf("kinds:\ngot  %v\nwant %v", got, want)
	}
	classes := map[string]string{
		"search/none": classPage, "search/feature": classPage, "search/project-any-of-5": classPage,
		"search/date-range": classPage, "search/query": classQuery, "search/offset-1000": classOffset,
		"deprecated/empty": classDeprecated, "deprecated/type": classDeprecated, "projects": classProjects,
		"lifecycle/complete": classWrite, "mixed/search+writes": classMixed,
	}
	for _, k := range mix {
		if want, ok := classes[k.Name]; ok && k.Class != want {
			t.Errorf("%s: got class %q, want %q", k.Name, k.Class, want)
		}
		if k.About == "" {
			t.Errorf("%s: no description", k.Name)
		}
	}
}

// Every search kind sends exactly its probe's parameters, which the
// domain's parser accepts.
func TestBuildMixSearchesSendTheProbes(t *testing.T) {
	w := tinyWorld()
	mix := buildMix(w, "run1")
	for _, p := range w.Probes() {
		i := slices.IndexFunc(mix, func(k kind) bool { return k.Name == "search/"+p.Name })
		if i < 0 {
			t.Errorf("no kind for probe %s", p.Name)
			continue
		}
		r := mix[i].Next(0)
		path, rawQuery, _ := strings.Cut(r.Path, "?")
		if r.Method != "GET" || path != "/api/admin/search/events" || r.Body != nil {
			t.Errorf("%s: got %s %s with body %q, want GET /api/admin/search/events", p.Name, r.Method, path, r.Body)
		}
		v, err := url.ParseQuery(rawQuery)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		got := flagadmin.EventSearchParams{Query: v.Get("query"), Feature: v.Get("feature"), Project: v.Get("project"),
			Type: v.Get("type"), CreatedBy: v.Get("createdBy"), From: v.Get("from"), To: v.Get("to"),
			Offset: v.Get("offset"), Limit: v.Get("limit")}
		if got != p.Params {
			t.Errorf("%s: sends %+v, want %+v", p.Name, got, p.Params)
		}
		if got.Limit != "50" {
			t.Errorf("%s: limit %q, want 50", p.Name, got.Limit)
		}
		if _, err := flagadmin.ParseEventSearch(got); err != nil {
			t.Errorf("%s: the parameters do not parse: %v", p.Name, err)
		}
		if r2 := mix[i].Next(12345); r2.Path != r.Path {
			t.Errorf("%s: request 12345 is %s, want the same as request 0 (%s)", p.Name, r2.Path, r.Path)
		}
	}
}

func TestBuildMixDeprecatedBodies(t *testing.T) {
	w := tinyWorld()
	mix := buildMix(w, "run1")
	typeSmall, _ := w.Probe("type-small")
	for name, want := range map[string]flagadmin.DeprecatedSearchRequest{
		"deprecated/empty": {},
		"deprecated/type":  {Type: new(strings.TrimPrefix(typeSmall.Params.Type, "IS:"))},
	} {
		i := slices.IndexFunc(mix, func(k kind) bool { return k.Name == name })
		r := mix[i].Next(0)
		if r.Method != "POST" || r.Path != "/api/admin/events/search" {
			t.Errorf("%s: got %s %s, want POST /api/admin/events/search", name, r.Method, r.Path)
		}
		var got flagadmin.DeprecatedSearchRequest
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatalf("%s: body %q: %v", name, r.Body, err)
		}
		if (got.Type == nil) != (want.Type == nil) || (got.Type != nil && *got.Type != *want.Type) ||
			got.Project != nil || got.Feature != nil || got.Query != nil || got.Limit != nil || got.Offset != nil {
			t.Errorf("%s: body %s, want type %v only", name, r.Body, want.Type)
		}
		if _, err := flagadmin.ParseDeprecatedSearch(got); err != nil {
			t.Errorf("%s: the body does not parse: %v", name, err)
		}
	}
	if string(mix[slices.IndexFunc(mix, func(k kind) bool { return k.Name == "deprecated/empty" })].Next(0).Body) != "{}" {
		t.Error("deprecated/empty does not send {}")
	}
}

func TestLifecycleKindAlternates(t *testing.T) {
	features := []flagadmin.Feature{{Name: "a", Project: "p1"}, {Name: "b c", Project: "p/2"}, {Name: "d", Project: "p1"}}
	k := lifecycleKind(features, "run7")
	type body struct {
		Status      string  `json:"status"`
		StatusValue *string `json:"statusValue"`
	}
	decode := func(n uint64) (string, body) {
		r := k.Next(n)
		if r.Method != "POST" {
			t.Fatalf("request %d: method %s, want POST", n, r.Method)
		}
		var b body
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatalf("request %d: body %q: %v", n, r.Body, err)
		}
		return r.Path, b
	}
	wantPaths := []string{
		"/api/admin/projects/p1/features/a/lifecycle/complete",
		"/api/admin/projects/p%2F2/features/b%20c/lifecycle/complete",
		"/api/admin/projects/p1/features/d/lifecycle/complete",
	}
	values := map[string]bool{}
	for n := range uint64(9) {
		path, b := decode(n)
		if want := wantPaths[n%3]; path != want {
			t.Errorf("request %d: path %s, want %s", n, path, want)
		}
		visit := n / 3
		switch {
		case visit%2 == 0 && (b.Status != "kept" || b.StatusValue == nil):
			t.Errorf("request %d (visit %d): got %+v, want kept with a statusValue", n, visit, b)
		case visit%2 == 1 && (b.Status != "discarded" || b.StatusValue != nil):
			t.Errorf("request %d (visit %d): got %+v, want discarded", n, visit, b)
		}
		if b.StatusValue != nil {
			if !strings.Contains(*b.StatusValue, "run7") {
				t.Errorf("request %d: statusValue %q does not name the run", n, *b.StatusValue)
			}
			values[path+" "+*b.StatusValue] = true
		}
	}
	if len(values) != 6 {
		t.Errorf("got %d distinct (feature, statusValue) pairs among the kept requests, want 6 (one per kept visit)", len(values))
	}
}

// Every lifecycle completion of the mix changes the feature and records an
// event, through the real handler: the kind measures writes, not no-ops.
func TestLifecycleKindWritesEveryTime(t *testing.T) {
	ctx := context.Background()
	w := tinyWorld()
	store := memstore.New()
	if err := store.Write(ctx, w.Batch()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(apiHandler(store, false, storecache.DefaultResultCacheSize))
	defer srv.Close()
	k := lifecycleKind(w.Features(), "runX")
	spec := loadSpec{BaseURL: srv.URL, Token: w.AdminSecret(0)}
	n := 2*len(w.Features()) + 10 // every feature kept, then discarded, then ten kept again
	for i := range uint64(n) {
		status, _, err := send(ctx, srv.Client(), spec, k.Next(i))
		if err != nil || status != http.StatusOK {
			t.Fatalf("request %d: status %d, %v", i, status, err)
		}
	}
	page, err := store.SearchEvents(ctx, flagadmin.EventQuery{Types: []string{flagadmin.EventFeatureCompleted}})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != n {
		t.Errorf("got %d feature-completed events after %d completions, want one each", page.Total, n)
	}
}

func TestSelectKinds(t *testing.T) {
	mix := buildMix(tinyWorld(), "run1")
	all := slices.DeleteFunc(kindNames(mix), func(name string) bool { return name == "stream/fanout" }) // only when named
	tests := []struct {
		spec string
		want []string
	}{
		{"", all},
		{"all", all},
		{"stream/", []string{"stream/fanout"}},
		{"projects", []string{"projects"}},
		{"deprecated/", []string{"deprecated/empty", "deprecated/type"}},
		{"lifecycle/complete, search/none", []string{"search/none", "lifecycle/complete"}},
		{"search/type", []string{"search/type-small", "search/type-large"}},
	}
	for _, tc := range tests {
		got, err := selectKinds(mix, tc.spec)
		if err != nil {
			t.Errorf("selectKinds(%q): %v", tc.spec, err)
			continue
		}
		if names := kindNames(got); !slices.Equal(names, tc.want) {
			t.Errorf("selectKinds(%q) = %v, want %v", tc.spec, names, tc.want)
		}
	}
	if _, err := selectKinds(mix, "projects,nothing"); err == nil || !strings.Contains(err.Error(), `"nothing"`) {
		t.Errorf("selectKinds with an unknown kind: got %v, want an error naming it", err)
	}
}

func TestSearchPath(t *testing.T) {
	tests := []struct {
		params flagadmin.EventSearchParams
		want   string
	}{
		{flagadmin.EventSearchParams{}, "/api/admin/search/events"},
		{flagadmin.EventSearchParams{Limit: "50"}, "/api/admin/search/events?limit=50"},
		{flagadmin.EventSearchParams{Project: "IS_ANY_OF:a,b", Limit: "50"}, "/api/admin/search/events?limit=50&project=IS_ANY_OF%3Aa%2Cb"},
		{flagadmin.EventSearchParams{Query: "a b&c"}, "/api/admin/search/events?query=a+b%26c"},
	}
	for _, tc := range tests {
		if got := searchPath(tc.params); got != tc.want {
			t.Errorf("searchPath(%+v) = %s, want %s", tc.params, got, tc.want)
		}
	}
}

// The mixed kind sends the page, with every mixedWriteEvery-th request the
// next completion of its own lifecycle sequence, whose statusValues differ
// from the lifecycle kind's so they change features that kind left kept.
func TestMixedKindInterleavesWrites(t *testing.T) {
	w := tinyWorld()
	mix := buildMix(w, "run3")
	i := slices.IndexFunc(mix, func(k kind) bool { return k.Name == "mixed/search+writes" })
	if i < 0 {
		t.Fatal("no mixed kind")
	}
	writes := lifecycleKind(w.Features(), "run3-mixed")
	plain := lifecycleKind(w.Features(), "run3")
	for n := range uint64(3 * mixedWriteEvery) {
		r := mix[i].Next(n)
		if n%mixedWriteEvery != mixedWriteEvery-1 {
			if r.Method != "GET" || !strings.HasPrefix(r.Path, "/api/admin/search/events") || r.Body != nil {
				t.Errorf("request %d: got %s %s, want the search page", n, r.Method, r.Path)
			}
			continue
		}
		want := writes.Next(n / mixedWriteEvery)
		if r.Method != "POST" || r.Path != want.Path || string(r.Body) != string(want.Body) {
			t.Errorf("request %d: got %s %s %s, want completion %s %s", n, r.Method, r.Path, r.Body, want.Path, want.Body)
		}
		if other := plain.Next(n / mixedWriteEvery); string(other.Body) == string(r.Body) && strings.Contains(string(r.Body), "statusValue") {
			t.Errorf("request %d: same statusValue as the lifecycle kind's: %s", n, r.Body)
		}
	}
}

// The varied kinds draw different requests from different callers of every
// root role, the same ones for the same request number, and every search
// they send parses.
func TestVariedKindsVary(t *testing.T) {
	w := tinyWorld()
	roles := map[string]flagadmin.RootRole{}
	for _, id := range w.TokenUsers() {
		u := slices.IndexFunc(w.Users(), func(u flagadmin.User) bool { return u.ID == id })
		secret, _ := w.UserSecret(id)
		roles[secret] = w.Users()[u].RootRole
	}
	for _, k := range buildVaried(w, "run4") {
		if k.Class == classMixed {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			paths, tokens := map[string]bool{}, map[string]bool{}
			seenRoles := map[flagadmin.RootRole]bool{}
			admins := 0
			for n := range uint64(300) {
				r := k.Next(n)
				if again := k.Next(n); again.Path != r.Path || again.Token != r.Token {
					t.Fatalf("request %d drawn twice: %s (%q) then %s (%q)", n, r.Path, r.Token, again.Path, again.Token)
				}
				paths[r.Path], tokens[r.Token] = true, true
				if role, ok := roles[r.Token]; ok {
					seenRoles[role] = true
				} else if strings.HasPrefix(r.Token, "*:*.") {
					admins++
				} else {
					t.Fatalf("request %d: token %q is neither an admin token nor a user's", n, r.Token)
				}
				path, rawQuery, _ := strings.Cut(r.Path, "?")
				if path != "/api/admin/search/events" {
					continue
				}
				v, err := url.ParseQuery(rawQuery)
				if err != nil {
					t.Fatal(err)
				}
				p := flagadmin.EventSearchParams{Query: v.Get("query"), Feature: v.Get("feature"), Project: v.Get("project"), Type: v.Get("type"),
					CreatedBy: v.Get("createdBy"), From: v.Get("from"), To: v.Get("to"), Offset: v.Get("offset"), Limit: v.Get("limit")}
				if _, err := flagadmin.ParseEventSearch(p); err != nil {
					t.Errorf("request %d (%s) does not parse: %v", n, r.Path, err)
				}
			}
			if want := 10; len(paths) < want && k.Name != "varied/projects" {
				t.Errorf("%d distinct paths in 300 requests, want at least %d", len(paths), want)
			}
			for _, role := range []flagadmin.RootRole{flagadmin.RoleAdmin, flagadmin.RoleEditor, flagadmin.RoleViewer} {
				if !seenRoles[role] {
					t.Errorf("no request as a user with root role %s", role)
				}
			}
			if admins == 0 || len(tokens) < 6 {
				t.Errorf("%d requests with admin tokens, %d distinct tokens: want several callers", admins, len(tokens))
			}
		})
	}
}

// The varied mixed kind sends a completion as every tenth request and a
// varied read otherwise.
func TestVariedMixedKind(t *testing.T) {
	kinds := buildVaried(tinyWorld(), "run5")
	i := slices.IndexFunc(kinds, func(k kind) bool { return k.Name == "varied/mixed" })
	if i < 0 {
		t.Fatalf("no varied/mixed among %v", kindNames(kinds))
	}
	mixed := kinds[i]
	paths := map[string]bool{}
	for n := range uint64(10 * mixedWriteEvery) {
		r := mixed.Next(n)
		isWrite := r.Method == "POST" && strings.HasSuffix(r.Path, "/lifecycle/complete")
		if want := n%mixedWriteEvery == mixedWriteEvery-1; isWrite != want {
			t.Errorf("request %d: %s %s, write %v, want %v", n, r.Method, r.Path, isWrite, want)
		}
		paths[strings.SplitN(r.Path, "?", 2)[0]] = true
	}
	if !paths["/api/admin/search/events"] || !paths["/api/admin/projects"] {
		t.Errorf("paths %v: want searches and project lists among the reads", paths)
	}
}
