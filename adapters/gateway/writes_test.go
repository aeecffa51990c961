package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// fakeWaiter records the writes it is told of; each wait ends when the
// test releases it (or its context ends).
type fakeWaiter struct {
	mu       sync.Mutex
	expected []Write
	waiting  chan Write    // a wait has begun
	release  chan struct{} // ends one wait with success
	fail     error         // returned by Expect when set
}

func newFakeWaiter() *fakeWaiter {
	return &fakeWaiter{waiting: make(chan Write, 10), release: make(chan struct{})}
}

func (f *fakeWaiter) Expect(ctx context.Context, w Write) (func(context.Context) error, error) {
	f.mu.Lock()
	f.expected = append(f.expected, w)
	f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	return func(ctx context.Context) error {
		f.waiting <- w
		select {
		case <-f.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, nil
}

// TestForwardedWriteWaitsForItsEvent: after the upstream accepted a
// lifecycle complete, the client's answer waits until the copy holds the
// write's event; the upstream got the caller's credentials and the body.
func TestForwardedWriteWaitsForItsEvent(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }, true)
	waiter := newFakeWaiter()
	e := newEnv(t, up.URL, func(c *Config) { c.Waiter = waiter; c.FollowWait = time.Minute })
	answered := make(chan *http.Response, 1)
	go func() {
		resp, _ := e.do(t, http.MethodPost, "/api/admin/projects/default/features/new%20flow/lifecycle/complete",
			strings.NewReader(`{"status":"kept"}`), map[string]string{"Authorization": "user:caller", "Content-Type": "application/json"})
		answered <- resp
	}()
	var w Write
	select {
	case w = <-waiter.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway did not wait for the write's event")
	}
	if want := (Write{EventType: EventFeatureCompleted, Project: "default", Feature: "new flow"}); w != want {
		t.Errorf("waits for %+v, want %+v", w, want)
	}
	select {
	case resp := <-answered:
		t.Fatalf("answered %d before the copy held the event", resp.StatusCode)
	default:
	}
	close(waiter.release)
	resp := <-answered
	if resp.StatusCode != http.StatusOK || resp.Header.Get(LagHeader) != "" {
		t.Errorf("got %d, %s %q; want 200 without lag", resp.StatusCode, LagHeader, resp.Header.Get(LagHeader))
	}
	got := up.requests()
	if len(got) != 1 || got[0].header.Get("Authorization") != "user:caller" || got[0].body != `{"status":"kept"}` {
		t.Errorf("upstream got %+v; want the write with the caller's credentials", got)
	}
}

// TestForwardedWriteLag: a copy that does not show the write within
// FollowWait gives the upstream's answer with X-Flagadmin-Lag; a refused
// write (4xx, such as the 404 of Unleash's open-source edition for a
// service-account delete) is answered at once, unchanged.
func TestForwardedWriteLag(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"name":"NotFoundError","message":"The path you were looking for (/api/admin/service-account/7) is not available."}`))
			return
		}
		w.WriteHeader(http.StatusOK)
	}, true)
	waiter := newFakeWaiter()
	e := newEnv(t, up.URL, func(c *Config) { c.Waiter = waiter; c.FollowWait = 300 * time.Millisecond })
	start := time.Now()
	resp, _ := e.do(t, http.MethodPost, "/api/admin/projects/p/features/f/lifecycle/complete", strings.NewReader(`{"status":"discarded"}`), nil)
	lag, err := strconv.ParseFloat(resp.Header.Get(LagHeader), 64)
	if resp.StatusCode != http.StatusOK || err != nil || lag < 0.3 || time.Since(start) < 300*time.Millisecond {
		t.Errorf("got %d, %s %q after %v; want 200 with a lag of about 0.3 after FollowWait", resp.StatusCode, LagHeader, resp.Header.Get(LagHeader), time.Since(start))
	}

	resp, body := e.do(t, http.MethodDelete, "/api/admin/service-account/7", nil, nil)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "is not available") || resp.Header.Get(LagHeader) != "" {
		t.Errorf("service-account delete: %d %q; want Unleash's 404 as it is", resp.StatusCode, body)
	}
	select {
	case w := <-waiter.waiting:
		if w.EventType == EventServiceAccountDeleted {
			t.Errorf("waited for the event of a refused write")
		}
	default:
	}
	waiter.mu.Lock()
	defer waiter.mu.Unlock()
	if len(waiter.expected) != 2 || waiter.expected[1] != (Write{EventType: EventServiceAccountDeleted, ServiceAccountID: 7}) {
		t.Errorf("expected writes %+v", waiter.expected)
	}
}

// TestForwardedWriteLagAfterTheBodyDeadline: the read deadline that
// bounds the client's body ends with the body: a FollowWait longer than
// BodyReadTimeout still ends with the upstream's answer and
// X-Flagadmin-Lag (a deadline left on the connection fired during the wait
// and canceled the request, which lost the header).
func TestForwardedWriteLagAfterTheBodyDeadline(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }, true)
	waiter := newFakeWaiter()
	e := newEnv(t, up.URL, func(c *Config) {
		c.Waiter = waiter
		c.BodyReadTimeout = 100 * time.Millisecond
		c.FollowWait = time.Second
	})
	resp, _ := e.do(t, http.MethodPost, "/api/admin/projects/p/features/f/lifecycle/complete", strings.NewReader(`{"status":"kept"}`), nil)
	lag, err := strconv.ParseFloat(resp.Header.Get(LagHeader), 64)
	if resp.StatusCode != http.StatusOK || err != nil || lag < 1 {
		t.Errorf("got %d, %s %q; want 200 with a lag of about 1 after FollowWait", resp.StatusCode, LagHeader, resp.Header.Get(LagHeader))
	}
}

// TestWriteWithABadParameterIsForwarded: a write whose parameters the
// gateway cannot follow (a service-account id that is not a number) is
// still the upstream's: forwarded unchanged, answered without waiting.
func TestWriteWithABadParameterIsForwarded(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"name":"ValidationError"}`))
	}, true)
	waiter := newFakeWaiter()
	e := newEnv(t, up.URL, func(c *Config) { c.Waiter = waiter })
	resp, body := e.do(t, http.MethodDelete, "/api/admin/service-account/abc", nil, nil)
	if resp.StatusCode != http.StatusBadRequest || body != `{"name":"ValidationError"}` || resp.Header.Get(SourceHeader) != "" {
		t.Errorf("got %d %q (%s %q); want the upstream's 400", resp.StatusCode, body, SourceHeader, resp.Header.Get(SourceHeader))
	}
	if got := up.requests(); len(got) != 1 || got[0].method != http.MethodDelete || got[0].uri != "/api/admin/service-account/abc" {
		t.Errorf("upstream got %+v; want the delete", got)
	}
}

// TestForwardedWriteCannotBeFollowed: when the waiter cannot follow the
// write, it is still forwarded and answered at once, with LagHeader 0.
func TestForwardedWriteCannotBeFollowed(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }, true)
	waiter := newFakeWaiter()
	waiter.fail = errors.New("store down")
	e := newEnv(t, up.URL, func(c *Config) { c.Waiter = waiter })
	resp, _ := e.do(t, http.MethodDelete, "/api/admin/service-account/3/", nil, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(LagHeader) != "0" || len(up.requests()) != 1 {
		t.Errorf("got %d, %s %q, %d upstream requests; want 200 with lag 0, forwarded once", resp.StatusCode, LagHeader, resp.Header.Get(LagHeader), len(up.requests()))
	}
}

// TestWriteOf: only the two writes, exactly, wait for an event.
func TestWriteOf(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         *Write
	}{
		{"POST", "/api/admin/projects/p/features/f/lifecycle/complete", &Write{EventType: EventFeatureCompleted, Project: "p", Feature: "f"}},
		{"POST", "/api/admin/projects/p%2Fq/features/f/lifecycle/complete/", &Write{EventType: EventFeatureCompleted, Project: "p/q", Feature: "f"}},
		{"GET", "/api/admin/projects/p/features/f/lifecycle/complete", nil},
		{"POST", "/api/admin/projects/p/features/f/lifecycle/uncomplete", nil},
		{"POST", "/api/admin/projects//features/f/lifecycle/complete", nil},
		{"DELETE", "/api/admin/service-account/42", &Write{EventType: EventServiceAccountDeleted, ServiceAccountID: 42}},
		{"DELETE", "/api/admin/service-account/abc", nil},
		{"DELETE", "/api/admin/service-account/42/tokens/1", nil},
	} {
		u, _ := url.Parse(tc.path)
		w, ok := writeOf(&http.Request{Method: tc.method, URL: u})
		if ok != (tc.want != nil) || ok && w != *tc.want {
			t.Errorf("%s %s: %+v %v, want %+v", tc.method, tc.path, w, ok, tc.want)
		}
	}
}

// TestWriteMatches: the event of a completion matches by type, project
// and feature; that of a delete by type and the account's id in preData.
func TestWriteMatches(t *testing.T) {
	p, f, other := "p", "f", "g"
	complete := Write{EventType: EventFeatureCompleted, Project: "p", Feature: "f"}
	del := Write{EventType: EventServiceAccountDeleted, ServiceAccountID: 7}
	for _, tc := range []struct {
		w    Write
		e    flagadmin.Event
		want bool
	}{
		{complete, flagadmin.Event{Type: EventFeatureCompleted, Project: &p, FeatureName: &f}, true},
		{complete, flagadmin.Event{Type: EventFeatureCompleted, Project: &p, FeatureName: &other}, false},
		{complete, flagadmin.Event{Type: "feature-updated", Project: &p, FeatureName: &f}, false},
		{del, flagadmin.Event{Type: EventServiceAccountDeleted, PreData: json.RawMessage(`{"id":7,"name":"ci"}`)}, true},
		{del, flagadmin.Event{Type: EventServiceAccountDeleted, PreData: json.RawMessage(`{"id":8}`)}, false},
		{del, flagadmin.Event{Type: EventServiceAccountDeleted}, false},
	} {
		if got := tc.w.Matches(tc.e); got != tc.want {
			t.Errorf("%+v matches %+v: %v, want %v", tc.w, tc.e, got, tc.want)
		}
	}
}

// fakeFeed is a flagadmin.EventFeed over a list of events that grows.
type fakeFeed struct {
	mu     sync.Mutex
	events []flagadmin.Event
	added  chan struct{}
	// read gets, after each batch a Follow handled, the id it read up to.
	read chan int64
}

func (f *fakeFeed) add(e flagadmin.Event) {
	f.mu.Lock()
	e.ID = int64(len(f.events) + 1)
	f.events = append(f.events, e)
	close(f.added)
	f.added = make(chan struct{})
	f.mu.Unlock()
}

func (f *fakeFeed) LastEventID(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int64(len(f.events)), nil
}

func (f *fakeFeed) Follow(ctx context.Context, q flagadmin.EventQuery, after int64, fn func([]flagadmin.Event) error) error {
	for {
		f.mu.Lock()
		var batch []flagadmin.Event
		for _, e := range f.events[after:] {
			if q.Matches(e, "", "") {
				batch = append(batch, e)
			}
		}
		after = int64(len(f.events))
		added := f.added
		f.mu.Unlock()
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
		}
		select {
		case f.read <- after:
		default:
		}
		select {
		case <-added:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestFeedWaiter: the wait ends at the first matching event recorded
// after Expect, not at an older one, nor at another write's.
func TestFeedWaiter(t *testing.T) {
	p, f := "p", "f"
	feed := &fakeFeed{added: make(chan struct{}), read: make(chan int64, 100)}
	feed.add(flagadmin.Event{Type: EventFeatureCompleted, Project: &p, FeatureName: &f}) // before the write
	wait, err := FeedWaiter{Feed: feed}.Expect(context.Background(), Write{EventType: EventFeatureCompleted, Project: "p", Feature: "f"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wait(context.Background()) }()
	feed.add(flagadmin.Event{Type: "feature-updated", Project: &p, FeatureName: &f})
	for id := int64(0); id < 2; { // until the wait has read the event
		select {
		case id = <-feed.read:
		case err := <-done:
			t.Fatalf("the wait ended (%v) before the write's event", err)
		}
	}
	feed.add(flagadmin.Event{Type: EventFeatureCompleted, Project: &p, FeatureName: &f})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end at the write's event")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	wait, _ = FeedWaiter{Feed: feed}.Expect(ctx, Write{EventType: EventServiceAccountDeleted, ServiceAccountID: 1})
	if err := wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a wait with no event: %v, want the context's deadline", err)
	}
}
