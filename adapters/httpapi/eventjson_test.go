package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// reflectionJSON is how Huma wrote a response body before the searches
// wrote pre-encoded bytes: encoding/json without HTML escaping, with a
// newline.
func reflectionJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// trickyEvents are events whose strings and payloads exercise every
// escaping rule, written straight to the store as the Service stores
// events (data and preData compact JSON objects, see normalizeEvent).
func trickyEvents() []flagadmin.Event {
	events := trickyEventsAsGiven()
	for i := range events { // as the Service stores them: bytes that are not UTF-8 become U+FFFD
		if _, err := flagadmin.NormalizeEvent(&events[i], flagadmin.RefuseOutOfRange); err != nil {
			panic(err)
		}
	}
	return events
}

func trickyEventsAsGiven() []flagadmin.Event {
	s := func(v string) *string { return &v }
	id := int64(-42)
	return []flagadmin.Event{
		{
			Type: "feature-created", CreatedBy: "a<b>&c \u2028 \u2029 \x01\x1f\x7f \xff\xfe é 😀 \"q\" \\ \t\n\r\b\f", CreatedByUserID: &id,
			CreatedAt: time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC), Project: s("default"), FeatureName: s("x</script>"), Environment: s("\u2028"),
			Data:    json.RawMessage("{\"a\":[1,2,{\"b\":\"<&>\u2028\"}],\"c\":null}"),
			PreData: json.RawMessage(`{"x":"\u003c"}`),
			Tags:    []flagadmin.Tag{{Type: "t<>", Value: "v\u2029"}},
		},
		{Type: "feature-updated", CreatedBy: "", CreatedAt: time.Date(2025, 2, 2, 0, 0, 0, 0, time.UTC), Project: s("default"), Tags: []flagadmin.Tag{}},
	}
}

// TestSearchBodiesLikeReflection checks that both searches answer the
// bytes Huma's reflection encoding of their schemas gives for the same
// page, with the Content-Type Huma negotiated, over pages of several sizes
// in turn (so reused buffers never leak bytes between responses).
func TestSearchBodiesLikeReflection(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Config{}, nil)
	if err := e.store.Write(ctx, &flagadmin.Batch{Events: trickyEvents()}); err != nil {
		t.Fatal(err)
	}
	admin, err := e.svc.AuthenticateAdmin(ctx, adminToken)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, query string
		params      flagadmin.EventSearchParams
		body        string
		accept      string
		wantType    string
		wantEvents  int
	}{
		{"all", "", flagadmin.EventSearchParams{}, `{}`, "", "application/json", 7},
		{"one", "limit=1&offset=1", flagadmin.EventSearchParams{Limit: "1", Offset: "1"}, `{"limit":1,"offset":1}`, "application/json", "application/json", 1},
		{"none", "type=IS:user-deleted", flagadmin.EventSearchParams{Type: "IS:user-deleted"}, `{"type":"user-deleted"}`, "*/*", "application/json", 0},
		{"accept json", "limit=3", flagadmin.EventSearchParams{Limit: "3"}, `{"limit":3}`, "json", "application/json", 3}, // JSON whatever Accept says
		{"accept html", "limit=2", flagadmin.EventSearchParams{Limit: "2"}, `{"limit":2}`, "text/html", "application/json", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			header := map[string]string{}
			if c.accept != "" {
				header["Accept"] = c.accept
			}

			page, err := e.svc.SearchEvents(ctx, admin, c.params)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Events) != c.wantEvents {
				t.Fatalf("page of %d events, want %d", len(page.Events), c.wantEvents)
			}
			w := e.do(t, request{method: http.MethodGet, path: "/api/admin/search/events?" + c.query, token: adminToken, header: header})
			if w.Code != http.StatusOK {
				t.Fatalf("GET: got %d %s", w.Code, w.Body)
			}
			want := reflectionJSON(t, eventSearchResponseSchema{Events: page.Events, Total: page.Total})
			if got := w.Body.String(); got != want {
				t.Fatalf("GET body:\ngot  %s\nwant %s", got, want)
			}
			if got := w.Header().Get("Content-Type"); got != c.wantType {
				t.Errorf("GET Content-Type: got %q, want %q", got, c.wantType)
			}

			var req flagadmin.DeprecatedSearchRequest
			if err := json.Unmarshal([]byte(c.body), &req); err != nil {
				t.Fatal(err)
			}
			page, err = e.svc.DeprecatedSearchEvents(ctx, admin, req)
			if err != nil {
				t.Fatal(err)
			}
			w = e.do(t, request{method: http.MethodPost, path: "/api/admin/events/search", token: adminToken, body: c.body, header: header})
			if w.Code != http.StatusOK {
				t.Fatalf("POST: got %d %s", w.Code, w.Body)
			}
			want = reflectionJSON(t, eventsSchema{Version: flagadmin.DeprecatedSearchVersion, Events: page.Events, TotalEvents: page.Total})
			if got := w.Body.String(); got != want {
				t.Fatalf("POST body:\ngot  %s\nwant %s", got, want)
			}
			if got := w.Header().Get("Content-Type"); got != c.wantType {
				t.Errorf("POST Content-Type: got %q, want %q", got, c.wantType)
			}
			if got := w.Header().Get("Deprecation"); got != "true" {
				t.Errorf("Deprecation: got %q, want true", got)
			}
			if got, want := w.Header().Get("Link"), `</api/admin/search/events>; rel="successor-version"`; got != want {
				t.Errorf("Link: got %q, want %q", got, want)
			}
		})
	}
}

// fixedPageStore answers every search with one page, so a benchmark
// measures the transport rather than the store's search.
type fixedPageStore struct {
	flagadmin.Store
	page flagadmin.EventPage
}

func (f fixedPageStore) SearchEvents(context.Context, flagadmin.EventQuery) (flagadmin.EventPage, error) {
	return f.page, nil
}

// BenchmarkSearchHandler serves pages of 50 events of a generated world
// through the whole handler (middleware, authentication, search,
// encoding): "memstore" searches a memstore of its first 2,000 events,
// "fixed" answers with 50 of them without searching, "cached" answers from
// the result cache.
func BenchmarkSearchHandler(b *testing.B) {
	w, err := worldgen.New(worldgen.Config{Events: 2000, Projects: 20, Features: 300, Users: 50, Groups: 5, Seed: 11})
	if err != nil {
		b.Fatal(err)
	}
	store := memstore.New()
	batch := w.Batch()
	batch.Events = w.FirstEvents(2000)
	if err := store.Write(context.Background(), batch); err != nil {
		b.Fatal(err)
	}
	fixed := fixedPageStore{Store: store, page: flagadmin.EventPage{Events: batch.Events[1950:], Total: 1_000_000}}
	token := w.AdminSecret(0)
	for _, s := range []struct {
		name  string
		store flagadmin.Store
	}{
		{"memstore", store},
		{"fixed", fixed},
		// cached: the server's defaults, every page a hit of the result cache.
		{"cached", storecache.New(store, storecache.Options{ResultCacheSize: storecache.DefaultResultCacheSize, TokenTTL: storecache.DefaultTokenTTL})},
	} {
		handler := storecache.Scope(New(flagadmin.NewService(s.store), Config{}).Handler())
		for _, c := range []struct{ name, method, target, body string }{
			{"GET", http.MethodGet, "/api/admin/search/events?limit=50&offset=100", ""},
			{"POST", http.MethodPost, "/api/admin/events/search", `{"limit":50,"offset":100}`},
		} {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				size := 0
				for b.Loop() {
					req := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
					req.Header.Set("Authorization", token)
					if c.body != "" {
						req.Header.Set("Content-Type", "application/json")
					}
					rec := httptest.NewRecorder()
					handler.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("got %d %s", rec.Code, rec.Body)
					}
					size = rec.Body.Len()
				}
				b.SetBytes(int64(size))
			})
		}
	}
}
