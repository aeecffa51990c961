package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/eventfeed"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// streamStore is a store a feed can follow.
type streamStore interface {
	flagadmin.VersionedStore
	eventfeed.Source
}

// streamEnv is a real HTTP server with the live stream over store: the
// flagadmin server's caches (the token cache trusting a lookup for an
// hour, so that only a fresh re-check can see a deleted account), a feed
// reading every 10 ms, and EndStreams on shutdown.
type streamEnv struct {
	store  streamStore
	svc    *flagadmin.Service // over the store without caches: "another server"
	server *Server
	feed   *eventfeed.Feed
	ts     *httptest.Server
}

func newStreamEnv(t *testing.T, store streamStore, cfg Config) *streamEnv {
	return newStreamEnvEvery(t, store, cfg, 10*time.Millisecond)
}

// newStreamEnvEvery is newStreamEnv with the feed reading every interval.
func newStreamEnvEvery(t *testing.T, store streamStore, cfg Config, interval time.Duration) *streamEnv {
	return newStreamEnvFeed(t, store, cfg, eventfeed.Options{Interval: interval})
}

// newStreamEnvFeed is newStreamEnv with a feed of these options.
func newStreamEnvFeed(t *testing.T, store streamStore, cfg Config, opts eventfeed.Options) *streamEnv {
	t.Helper()
	cached := storecache.New(store, storecache.Options{ResultCacheSize: storecache.DefaultResultCacheSize, TokenTTL: time.Hour})
	feed := eventfeed.New(store, opts)
	ctx, cancel := context.WithCancel(context.Background())
	feedDone := make(chan struct{})
	go func() { defer close(feedDone); feed.Run(ctx) }()
	cfg.Feed = feed
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := New(flagadmin.NewService(cached), cfg)
	ts := httptest.NewUnstartedServer(storecache.Scope(s.Handler()))
	ts.Config.RegisterOnShutdown(s.EndStreams)
	ts.Start()
	t.Cleanup(func() {
		s.EndStreams()
		ts.Close()
		cancel()
		<-feedDone
	})
	return &streamEnv{store: store, svc: flagadmin.NewService(store), server: s, feed: feed, ts: ts}
}

// newMemStreamEnv is a streamEnv over a memstore seeded with testSeed.
func newMemStreamEnv(t *testing.T, cfg Config) *streamEnv {
	t.Helper()
	store := memstore.New()
	if err := flagadmin.NewService(store).LoadSeed(context.Background(), strings.NewReader(testSeed)); err != nil {
		t.Fatal(err)
	}
	return newStreamEnv(t, store, cfg)
}

// sseBlock is one block of a stream: its fields, or a comment.
type sseBlock struct {
	id, event, data, retry, comment string
}

// sseStream reads a stream's blocks in a goroutine.
type sseStream struct {
	resp   *http.Response
	blocks chan sseBlock
	cancel context.CancelFunc
}

// openStream opens the stream at path (and query) as token, with the
// headers given; it fails the test unless the answer is 200.
func (e *streamEnv) openStream(t *testing.T, path, token string, header map[string]string) *sseStream {
	t.Helper()
	resp, cancel := e.get(t, path, token, header)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: got %d, want 200; body %s", path, resp.StatusCode, b)
	}
	s := &sseStream{resp: resp, blocks: make(chan sseBlock, 1000), cancel: cancel}
	go func() {
		defer close(s.blocks)
		sc := bufio.NewScanner(resp.Body)
		var b sseBlock
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				s.blocks <- b
				b = sseBlock{}
				continue
			}
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "":
				b.comment = value
			case "id":
				b.id = value
			case "event":
				b.event = value
			case "data":
				b.data = value
			case "retry":
				b.retry = value
			}
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s
}

// get sends GET path as token and returns the response, body open.
func (e *streamEnv) get(t *testing.T, path, token string, header map[string]string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, cancel
}

// next returns the next block that is not a comment (keep-alive), or
// fails after timeout.
func (s *sseStream) next(t *testing.T, timeout time.Duration) sseBlock {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case b, ok := <-s.blocks:
			if !ok {
				t.Fatal("the stream ended")
			}
			if b.comment != "" && b.id == "" && b.event == "" {
				continue
			}
			return b
		case <-deadline:
			t.Fatalf("no event within %v", timeout)
		}
	}
}

// events reads n events, checking each block's form.
func (s *sseStream) events(t *testing.T, n int) []flagadmin.Event {
	t.Helper()
	var out []flagadmin.Event
	for len(out) < n {
		// A generous bound: the database is shared with other test
		// binaries in a full run, and a missing event fails all the same.
		b := s.next(t, 30*time.Second)
		if b.data == "" {
			continue // the start position
		}
		var ev flagadmin.Event
		if err := json.Unmarshal([]byte(b.data), &ev); err != nil {
			t.Fatalf("data %q: %v", b.data, err)
		}
		if b.id != strconv.FormatInt(ev.ID, 10) || b.event != ev.Type {
			t.Errorf("block id %q event %q, want %d %q", b.id, b.event, ev.ID, ev.Type)
		}
		out = append(out, ev)
	}
	return out
}

// complete completes new-checkout's lifecycle with status through the
// uncached service (as another server would), recording one event.
func (e *streamEnv) complete(t *testing.T, status string) {
	t.Helper()
	err := e.svc.CompleteLifecycle(context.Background(), flagadmin.AdminToken("admin"), "default", "new-checkout", flagadmin.CompleteRequest{Status: status})
	if err != nil {
		t.Fatalf("CompleteLifecycle: %v", err)
	}
}

func TestStreamReplaysThenFollows(t *testing.T) {
	e := newMemStreamEnv(t, Config{})
	s := e.openStream(t, "/api/admin/events/stream?afterId=2", adminToken, nil)
	if ct := s.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type: got %q, want text/event-stream", ct)
	}
	first := s.next(t, time.Second)
	if first.retry != "1000" || first.id != "2" || first.data != "" {
		t.Errorf("first block: got %+v, want retry 1000 and id 2 without data", first)
	}
	if got := eventtest.IDs(s.events(t, 3)); len(got) != 3 || got[0] != 3 || got[2] != 5 {
		t.Errorf("replay: got ids %v, want [3 4 5]", got)
	}
	e.complete(t, flagadmin.StatusKept)
	e.complete(t, flagadmin.StatusDiscarded)
	got := s.events(t, 2)
	if got[0].ID != 6 || got[1].ID != 7 || got[0].Type != flagadmin.EventFeatureCompleted {
		t.Errorf("live: got %v, want ids 6 and 7, feature-completed", eventtest.IDs(got))
	}
}

func TestStreamWithoutResumeStartsNowAndLastEventIDWins(t *testing.T) {
	e := newMemStreamEnv(t, Config{})
	s := e.openStream(t, "/api/admin/events/stream", adminToken, nil)
	if b := s.next(t, time.Second); b.id != "5" {
		t.Errorf("start position: got %+v, want id 5", b)
	}
	e.complete(t, flagadmin.StatusKept)
	if got := eventtest.IDs(s.events(t, 1)); got[0] != 6 {
		t.Errorf("got %v, want [6]", got)
	}
	// Last-Event-ID wins over afterId.
	s2 := e.openStream(t, "/api/admin/events/stream?afterId=0", adminToken, map[string]string{"Last-Event-ID": "4"})
	if got := eventtest.IDs(s2.events(t, 2)); got[0] != 5 || got[1] != 6 {
		t.Errorf("Last-Event-ID 4: got %v, want [5 6]", got)
	}
}

func TestStreamVisibilityAndFilters(t *testing.T) {
	e := newMemStreamEnv(t, Config{})
	// The Viewer sees neither the private project's event (3) nor the
	// project-less one (4).
	s := e.openStream(t, "/api/admin/events/stream?afterId=0", vicToken, nil)
	if got := eventtest.IDs(s.events(t, 3)); got[0] != 1 || got[1] != 2 || got[2] != 5 {
		t.Errorf("Viewer: got %v, want [1 2 5]", got)
	}
	f := e.openStream(t, "/api/admin/events/stream?afterId=0&type=IS:feature-completed", adminToken, nil)
	e.complete(t, flagadmin.StatusKept)
	if got := f.events(t, 1); got[0].ID != 6 {
		t.Errorf("type filter: got %v, want [6]", eventtest.IDs(got))
	}
}

func TestStreamBadParametersAre400BeforeTheStream(t *testing.T) {
	e := newMemStreamEnv(t, Config{})
	for _, c := range []struct {
		query  string
		header map[string]string
		path   string
	}{
		{"?afterId=-1", nil, "afterId"},
		{"?afterId=abc", nil, "afterId"},
		{"", map[string]string{"Last-Event-ID": "x1"}, "Last-Event-ID"},
		{"", map[string]string{"Last-Event-ID": "-5"}, "Last-Event-ID"},
		{"?limit=5", nil, "limit"},
		{"?after=abc", nil, "after"},
		{"?type=no-such-type", nil, "type"},
		{"?from=IS:2025-02-30", nil, "from"},
		// a parameter given empty, or twice
		{"?afterId=", nil, "afterId"},
		{"?afterId=1&afterId=2", nil, "afterId"},
		{"?type=", nil, "type"},
		{"?type=IS:feature-created&type=IS:feature-created", nil, "type"},
		{"?project=", nil, "project"},
		{"?limit=", nil, "limit"},
	} {
		resp, cancel := e.get(t, "/api/admin/events/stream"+c.query, adminToken, c.header)
		w := recorded(t, resp)
		cancel()
		got := wantError(t, w, http.StatusBadRequest, nameBadData)
		if len(got.Details) == 0 || got.Details[0].Path != c.path {
			t.Errorf("%s %v: details %+v, want path %s", c.query, c.header, got.Details, c.path)
		}
	}
	for _, c := range []struct {
		token  string
		status int
		name   string
	}{{"", http.StatusUnauthorized, nameAuthentication}, {clientToken, http.StatusForbidden, nameNoAccess}} {
		resp, cancel := e.get(t, "/api/admin/events/stream", c.token, nil)
		wantError(t, recorded(t, resp), c.status, c.name)
		cancel()
	}
}

// recorded reads resp, an error answer, into a ResponseRecorder, for
// wantError. A stream that opened instead fails the test at once rather
// than being read until it ends (never).
func recorded(t *testing.T, resp *http.Response) *httptest.ResponseRecorder {
	t.Helper()
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("the stream opened (status %d), want an error answer", resp.StatusCode)
	}
	w := httptest.NewRecorder()
	w.Code = resp.StatusCode
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	if _, err := io.Copy(w.Body, resp.Body); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestStreamMaxStreams(t *testing.T) {
	e := newMemStreamEnv(t, Config{MaxStreams: 2})
	e.openStream(t, "/api/admin/events/stream", adminToken, nil)
	s := e.openStream(t, "/api/admin/events/stream", adminToken, nil)
	resp, cancel := e.get(t, "/api/admin/events/stream", adminToken, nil)
	w := recorded(t, resp)
	cancel()
	wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	if w.Header().Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	// Closing one makes room.
	s.cancel()
	for range 100 {
		if e.server.OpenStreams() < 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.openStream(t, "/api/admin/events/stream", adminToken, nil)
}

func TestStreamKeepAlive(t *testing.T) {
	e := newMemStreamEnv(t, Config{StreamKeepAlive: 20 * time.Millisecond})
	s := e.openStream(t, "/api/admin/events/stream", adminToken, nil)
	deadline := time.After(2 * time.Second)
	for comments := 0; comments < 3; {
		select {
		case b := <-s.blocks:
			if b.comment == "keep-alive" {
				comments++
			}
		case <-deadline:
			t.Fatal("fewer than 3 keep-alive comments in 2 s at a 20 ms interval")
		}
	}
}

// TestStreamEndsWhenTheTokenNoLongerAuthenticates deletes the service
// account of the stream's token through another service (as another
// server would): the token cache of the streaming server trusts the token
// for an hour, yet the stream ends within the re-check interval.
func TestStreamEndsWhenTheTokenNoLongerAuthenticates(t *testing.T) {
	const check = 100 * time.Millisecond
	e := newMemStreamEnv(t, Config{StreamTokenCheck: check})
	s := e.openStream(t, "/api/admin/events/stream", ciToken, nil)
	s.next(t, time.Second)
	time.Sleep(2 * check) // the token is checked, and cached, meanwhile
	deleted := time.Now()
	if err := e.svc.As(flagadmin.AdminToken("admin")).DeleteServiceAccount(context.Background(), "10"); err != nil {
		t.Fatal(err)
	}
	var end sseBlock
	for end.event == "" {
		end = s.next(t, 2*time.Second)
	}
	if took := time.Since(deleted); end.event != "end" || took > 2*check+50*time.Millisecond {
		t.Errorf("got %+v after %v, want an end event within %v", end, took, 2*check)
	}
	if !strings.Contains(end.data, "no longer authenticates") {
		t.Errorf("end data: got %s, want the reason", end.data)
	}
	if _, ok := <-s.blocks; ok {
		t.Error("the stream went on after its end event")
	}
}

// TestStreamEndEventAfterTheStorageDeadline: a stream older than the
// request's storage deadline (--db-timeout, which a stream outlives) still
// gets its end event, when its token no longer authenticates and when the
// server shuts down.
func TestStreamEndEventAfterTheStorageDeadline(t *testing.T) {
	const deadline = 50 * time.Millisecond
	e := newMemStreamEnv(t, Config{StorageTimeout: deadline, StreamTokenCheck: 4 * deadline})
	revoked := e.openStream(t, "/api/admin/events/stream", ciToken, nil)
	revoked.next(t, time.Second)
	other := e.openStream(t, "/api/admin/events/stream", adminToken, nil)
	other.next(t, time.Second)
	time.Sleep(2 * deadline) // both streams outlive the storage deadline
	if err := e.svc.As(flagadmin.AdminToken("admin")).DeleteServiceAccount(context.Background(), "10"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    *sseStream
		want string
	}{{revoked, "no longer authenticates"}, {other, "shutting down"}} {
		if c.want == "shutting down" {
			e.server.EndStreams()
		}
		var end sseBlock
		for end.event != "end" { // after the events, such as the deletion
			end = c.s.next(t, 2*time.Second)
		}
		if !strings.Contains(end.data, c.want) {
			t.Errorf("got %+v, want the end event saying %q", end, c.want)
		}
	}
}

// TestStreamShutdownEndsStreams shuts the HTTP server down gracefully
// with streams open: Shutdown returns at once, each stream getting its
// end event.
func TestStreamShutdownEndsStreams(t *testing.T) {
	e := newMemStreamEnv(t, Config{})
	var streams []*sseStream
	for range 3 {
		s := e.openStream(t, "/api/admin/events/stream", adminToken, nil)
		s.next(t, time.Second)
		streams = append(streams, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.ts.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v after %v", err, time.Since(start))
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Shutdown took %v with open streams", took)
	}
	for i, s := range streams {
		b := s.next(t, time.Second)
		if b.event != "end" || !strings.Contains(b.data, "shutting down") {
			t.Errorf("stream %d: got %+v, want the end event of a shutdown", i, b)
		}
	}
}

// TestStreamSlowClientIsDroppedOthersGoOn: a client that stops reading
// is cut off by the feed once its buffer is full (its socket buffers are
// full long before), while a stream that reads gets every event.
func TestStreamSlowClientIsDroppedOthersGoOn(t *testing.T) {
	store := memstore.New()
	if err := flagadmin.NewService(store).LoadSeed(context.Background(), strings.NewReader(testSeed)); err != nil {
		t.Fatal(err)
	}
	e := newStreamEnvFeed(t, store, Config{}, eventfeed.Options{Interval: 5 * time.Millisecond, Buffer: 64})
	// The slow client: a raw connection that sends the request and never reads.
	conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/admin/events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n", adminToken)
	reader := e.openStream(t, "/api/admin/events/stream", adminToken, nil)
	reader.next(t, 30*time.Second)
	for deadline := time.Now().Add(30 * time.Second); e.feed.Stats().OpenStreams != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("open streams: %d, want 2", e.feed.Stats().OpenStreams)
		}
	}
	// 4,000 events of 4 KiB: 16 MiB, more than the socket buffers hold.
	// Each batch of 10 is written once the reading stream has the one
	// before, so that one is never behind by more than a batch, however
	// slow the machine, while the client that does not read falls behind
	// by all of them.
	pad := strings.Repeat("x", 4096)
	const n = 4000
	var got []flagadmin.Event
	for range n / 10 {
		var events []flagadmin.Event
		for range 10 {
			events = append(events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "bulk", CreatedAt: time.Now().UTC(),
				Project: new("default"), Data: json.RawMessage(`{"pad":"` + pad + `"}`)})
		}
		if err := store.Write(context.Background(), &flagadmin.Batch{Events: events}); err != nil {
			t.Fatal(err)
		}
		got = append(got, reader.events(t, 10)...)
	}
	if got[0].ID != 6 || got[n-1].ID != 5+n {
		t.Errorf("the reading stream got ids %d..%d, want 6..%d", got[0].ID, got[n-1].ID, 5+n)
	}
	if d := e.feed.Stats().Dropped; d != 1 {
		t.Errorf("dropped streams: got %d, want 1 (the client that does not read)", d)
	}
}
