package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/webhooks"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/faultproxy"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// testStore is a store of events and sink state.
type testStore interface {
	flagadmin.Store
	flagadmin.SinkStore
}

// backend is a database the tests run on. open returns a function that
// opens a store on one database each time it is called: a server of its
// own (memory: the same store, since it cannot be shared otherwise).
type backend struct {
	name string
	open func(t *testing.T) func(t *testing.T) testStore
}

func sqlBackend(name string, newURL func(testing.TB) string) backend {
	return backend{name, func(t *testing.T) func(t *testing.T) testStore {
		u := newURL(t)
		return func(t *testing.T) testStore { return openSQL(t, u) }
	}}
}

func openSQL(t *testing.T, u string) *bunstore.Store {
	t.Helper()
	s, err := bunstore.Open(context.Background(), u, bunstore.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var backends = []backend{
	{"memory", func(*testing.T) func(*testing.T) testStore {
		s := memstore.New()
		return func(*testing.T) testStore { return s }
	}},
	sqlBackend("SQLite", dbtest.SQLite),
	sqlBackend("Postgres", dbtest.Postgres),
	sqlBackend("MySQL", dbtest.MySQL),
}

// forEachBackend runs test on every backend (memory too unless sqlOnly).
func forEachBackend(t *testing.T, sqlOnly bool, test func(t *testing.T, open func(t *testing.T) testStore)) {
	for _, b := range backends {
		if sqlOnly && b.name == "memory" {
			continue
		}
		t.Run(b.name, func(t *testing.T) { test(t, b.open(t)) })
	}
}

const secret = "test-secret"

// request is one request a receiver got.
type request struct {
	id     int64
	status int
}

// receiver is a webhook endpoint: it checks each request's headers and
// signature, and answers what answer says (200 when nil).
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	requests []request
	bodies   map[int64][]byte
	answer   func(id int64, attempt int) int
	hold     func(id int64, attempt int) // runs before the answer, outside the lock
	attempts map[int64]int
	changed  chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, bodies: map[int64][]byte{}, attempts: map[int64]int{}, changed: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return // the sender went away
	}
	if err := webhooks.Verify(secret, req.Header.Get(webhooks.HeaderTimestamp), req.Header.Get(webhooks.HeaderSignature), body, time.Now(), time.Minute); err != nil {
		r.t.Errorf("request %s: %v", req.Header.Get(webhooks.HeaderEventID), err)
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/json" || req.Method != http.MethodPost {
		r.t.Errorf("got %s with Content-Type %q, want POST application/json", req.Method, ct)
	}
	id, err := strconv.ParseInt(req.Header.Get(webhooks.HeaderEventID), 10, 64)
	if err != nil {
		r.t.Errorf("bad %s: %q", webhooks.HeaderEventID, req.Header.Get(webhooks.HeaderEventID))
	}
	var ev struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID != id || ev.Type != req.Header.Get(webhooks.HeaderEventType) {
		r.t.Errorf("body %s does not match the headers id %d type %q (%v)", body, id, req.Header.Get(webhooks.HeaderEventType), err)
	}
	r.mu.Lock()
	r.attempts[id]++
	status := http.StatusOK
	if r.answer != nil {
		if s := r.answer(id, r.attempts[id]); s != 0 {
			status = s
		}
	}
	r.requests = append(r.requests, request{id, status})
	r.bodies[id] = body
	hold, attempt := r.hold, r.attempts[id]
	r.mu.Unlock()
	if hold != nil {
		hold(id, attempt)
	}
	select {
	case r.changed <- struct{}{}:
	default:
	}
	w.WriteHeader(status)
}

// setAnswer sets how the receiver answers.
func (r *receiver) setAnswer(fn func(id int64, attempt int) int) {
	r.mu.Lock()
	r.answer = fn
	r.mu.Unlock()
}

// delivered returns the ids answered 2xx, in arrival order.
func (r *receiver) delivered() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []int64
	for _, q := range r.requests {
		if q.status/100 == 2 {
			ids = append(ids, q.id)
		}
	}
	return ids
}

// waitFor waits until every id of want was delivered, or fails t.
func (r *receiver) waitFor(t *testing.T, want []int64, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		got := r.delivered()
		if !slices.ContainsFunc(want, func(id int64) bool { return !slices.Contains(got, id) }) {
			return
		}
		select {
		case <-r.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("after %v: delivered %v, want all of %v", within, got, want)
		}
	}
}

// checkDelivery checks the receiver's log against want, the ids the sink
// should get, in order: every id delivered, in id order (a request for an
// id comes only after every smaller wanted id was answered 2xx), nothing
// else, and at most maxRepeats deliveries of an id already delivered.
func (r *receiver) checkDelivery(t *testing.T, want []int64, maxRepeats int) {
	t.Helper()
	r.mu.Lock()
	requests := slices.Clone(r.requests)
	r.mu.Unlock()
	done := map[int64]bool{}
	repeats := 0
	for i, q := range requests {
		if !slices.Contains(want, q.id) {
			t.Fatalf("request %d is for event %d, which the sink should not get (want %v)", i, q.id, want)
		}
		for _, w := range want {
			if w < q.id && !done[w] {
				t.Fatalf("request %d (event %d) came before event %d was delivered: %v", i, q.id, w, requests)
			}
		}
		if q.status/100 == 2 {
			if done[q.id] {
				repeats++
			}
			done[q.id] = true
		}
	}
	for _, w := range want {
		if !done[w] {
			t.Errorf("event %d never delivered", w)
		}
	}
	if repeats > maxRepeats {
		t.Errorf("%d events delivered again, want at most %d: %v", repeats, maxRepeats, requests)
	}
}

// writeEvents records n events of type typ and returns their ids.
func writeEvents(t *testing.T, s flagadmin.Store, n int, typ string) []int64 {
	t.Helper()
	b := &flagadmin.Batch{}
	for i := range n {
		b.Events = append(b.Events, flagadmin.Event{
			Type: typ, CreatedBy: "test", CreatedAt: time.Now().UTC(), Project: ptr("default"), FeatureName: ptr("f" + strconv.Itoa(i)),
			Data: json.RawMessage(`{"n":` + strconv.Itoa(i) + `,"html":"<b>&</b>"}`),
		})
	}
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatalf("Write: %v", err)
	}
	ids := make([]int64, n)
	for i, e := range b.Events {
		ids[i] = e.ID
	}
	return ids
}

func ptr[T any](v T) *T { return &v }

// fast are engine options for tests: short leases and backoff.
func fast(holder string) webhooks.Options {
	return webhooks.Options{
		Holder: holder, LeaseTTL: 600 * time.Millisecond, RenewEvery: 100 * time.Millisecond,
		PollEvery: 20 * time.Millisecond, RequestTimeout: 2 * time.Second,
		BackoffInitial: 5 * time.Millisecond, BackoffMax: 40 * time.Millisecond,
	}
}

// startEngine starts an engine for sinks on s, stopped when t ends.
func startEngine(t *testing.T, s webhooks.Store, sinks []flagadmin.WebhookSink, opts webhooks.Options) *webhooks.Engine {
	t.Helper()
	e, err := webhooks.New(s, sinks, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { e.Stop(context.Background()) })
	return e
}

func sinkTo(name, u string, filter flagadmin.EventSearchParams) flagadmin.WebhookSink {
	return flagadmin.WebhookSink{Name: name, URL: u, Secret: secret, Filter: filter}
}

// register registers the sinks before an engine starts, so that the events
// written next are after their first position.
func register(t *testing.T, s flagadmin.SinkStore, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := s.RegisterSink(context.Background(), n, time.Now()); err != nil {
			t.Fatalf("RegisterSink: %v", err)
		}
	}
}

func TestDeliversSignedEventsInOrderFromTheFirstPosition(t *testing.T) {
	forEachBackend(t, false, func(t *testing.T, open func(*testing.T) testStore) {
		s := open(t)
		before := writeEvents(t, s, 3, flagadmin.EventFeatureCreated)
		all, archived := newReceiver(t), newReceiver(t)
		register(t, s, "all", "archived")
		st, _ := s.SinkStates(context.Background())
		if st[0].Position != before[2] {
			t.Fatalf("first position %d, want the newest event %d", st[0].Position, before[2])
		}
		var want, wantArchived []int64
		for range 3 {
			want = append(want, writeEvents(t, s, 4, flagadmin.EventFeatureCreated)...)
			ids := writeEvents(t, s, 2, flagadmin.EventFeatureArchived)
			want = append(want, ids...)
			wantArchived = append(wantArchived, ids...)
		}
		e := startEngine(t, s, []flagadmin.WebhookSink{
			sinkTo("all", all.srv.URL, flagadmin.EventSearchParams{}),
			sinkTo("archived", archived.srv.URL, flagadmin.EventSearchParams{Type: "IS:" + flagadmin.EventFeatureArchived}),
		}, fast("a"))
		more := writeEvents(t, s, 5, flagadmin.EventFeatureArchived) // while it delivers
		want = append(want, more...)
		wantArchived = append(wantArchived, more...)
		all.waitFor(t, want, 10*time.Second)
		archived.waitFor(t, wantArchived, 10*time.Second)
		all.checkDelivery(t, want, 0)
		archived.checkDelivery(t, wantArchived, 0)

		// The body is the API's Event JSON (Event.MarshalJSON, as the
		// search pages and the export write it), of the stored event.
		var stored flagadmin.Event
		q, _ := flagadmin.ParseEventSearch(flagadmin.EventSearchParams{ID: "IS:" + strconv.FormatInt(want[0], 10)})
		if err := s.ExportEvents(context.Background(), q, 0, func(ev flagadmin.Event) error { stored = ev; return nil }); err != nil {
			t.Fatal(err)
		}
		wantBody, err := stored.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		all.mu.Lock()
		body := all.bodies[want[0]]
		all.mu.Unlock()
		if string(body) != string(wantBody) {
			t.Errorf("body:\ngot  %s\nwant %s", body, wantBody)
		}

		waitStats(t, e, func(st []webhooks.SinkStats) bool {
			return st[0].Position == want[len(want)-1] && st[0].Delivered == int64(len(want)) && st[0].Holding && st[0].LagEvents == 0
		})
		states, err := s.SinkStates(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if states[0].Name != "all" || states[0].Position != want[len(want)-1] || states[0].Delivered != int64(len(want)) || states[0].Lease.Holder != "a" {
			t.Errorf("stored state %+v, want position %d, delivered %d, holder a", states[0], want[len(want)-1], len(want))
		}
	})
}

// waitStats waits until ok holds for the engine's stats.
func waitStats(t *testing.T, e *webhooks.Engine, ok func([]webhooks.SinkStats) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(e.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", e.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRetriesAFailingReceiverInOrderUntilItRecovers(t *testing.T) {
	forEachBackend(t, false, func(t *testing.T, open func(*testing.T) testStore) {
		s := open(t)
		r := newReceiver(t)
		register(t, s, "flaky")
		// 500 for the first 4 attempts at every third event, 503 once for the others.
		r.setAnswer(func(id int64, attempt int) int {
			switch {
			case id%3 == 0 && attempt <= 4:
				return http.StatusInternalServerError
			case attempt == 1:
				return http.StatusServiceUnavailable
			}
			return 0
		})
		want := writeEvents(t, s, 12, flagadmin.EventFeatureUpdated)
		e := startEngine(t, s, []flagadmin.WebhookSink{sinkTo("flaky", r.srv.URL, flagadmin.EventSearchParams{})}, fast("a"))
		waitStats(t, e, func(st []webhooks.SinkStats) bool { return st[0].Attempts > 0 })
		if st := e.Stats()[0]; st.LastError == "" {
			t.Errorf("no last error while failing: %+v", st)
		}
		r.waitFor(t, want, 20*time.Second)
		r.checkDelivery(t, want, 0)
		r.mu.Lock()
		n := len(r.requests)
		r.mu.Unlock()
		if wantN := 12 + 8 + 4*4; n != wantN {
			t.Errorf("got %d requests, want %d", n, wantN)
		}
		waitStats(t, e, func(st []webhooks.SinkStats) bool { return st[0].Attempts == 0 && st[0].LastError == "" })
	})
}

func TestARequestWithoutAnswerInTimeIsRetried(t *testing.T) {
	s := memstore.New()
	register(t, s, "slow")
	release := make(chan struct{})
	var once sync.Once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first := false
		once.Do(func() { first = true })
		if first {
			<-release // never answered in time
		}
	}))
	defer slow.Close()
	defer close(release)
	want := writeEvents(t, s, 2, flagadmin.EventFeatureUpdated)
	opts := fast("a")
	opts.RequestTimeout = 100 * time.Millisecond
	e := startEngine(t, s, []flagadmin.WebhookSink{sinkTo("slow", slow.URL, flagadmin.EventSearchParams{})}, opts)
	waitStats(t, e, func(st []webhooks.SinkStats) bool { return st[0].Position == want[1] })
	states, _ := s.SinkStates(context.Background())
	if states[0].Delivered != 2 {
		t.Errorf("delivered %d, want 2", states[0].Delivered)
	}
}

func TestAReceiverDownForAWhileGetsEverything(t *testing.T) {
	forEachBackend(t, false, func(t *testing.T, open func(*testing.T) testStore) {
		s := open(t)
		// A free port with nothing listening, listened on later.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		register(t, s, "down")
		want := writeEvents(t, s, 5, flagadmin.EventFeatureUpdated)
		e := startEngine(t, s, []flagadmin.WebhookSink{sinkTo("down", "http://"+addr+"/hook", flagadmin.EventSearchParams{})}, fast("a"))
		waitStats(t, e, func(st []webhooks.SinkStats) bool { return st[0].Attempts >= 3 })
		if st := e.Stats()[0]; st.LagEvents != 5 || st.LagAtLeast || st.OldestPending.IsZero() || st.LagSeconds(time.Now()) <= 0 || st.Failures < 3 || st.Position != want[0]-1 {
			t.Errorf("stats while down: %+v, want a lag of 5 events since the first one's time, and failures", st)
		}
		states, _ := s.SinkStates(context.Background())
		if states[0].Attempts < 1 || states[0].LastError == "" {
			t.Errorf("stored state while down: %+v, want attempts and an error", states[0])
		}
		r := &receiver{t: t, bodies: map[int64][]byte{}, attempts: map[int64]int{}, changed: make(chan struct{}, 1)}
		r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
		if r.srv.Listener, err = net.Listen("tcp", addr); err != nil {
			t.Skipf("cannot listen again on %s: %v", addr, err)
		}
		r.srv.Start()
		defer r.srv.Close()
		want = append(want, writeEvents(t, s, 5, flagadmin.EventFeatureUpdated)...)
		r.waitFor(t, want, 10*time.Second)
		r.checkDelivery(t, want, 0)
	})
}

// noRelease is a store whose engine dies without releasing its leases.
type noRelease struct{ testStore }

func (noRelease) ReleaseSinkLease(context.Context, string, string) error { return nil }

func TestACrashResendsAtMostTheEventInFlight(t *testing.T) {
	forEachBackend(t, false, func(t *testing.T, open func(*testing.T) testStore) {
		s := open(t)
		r := newReceiver(t)
		register(t, s, "crash")
		want := writeEvents(t, s, 20, flagadmin.EventFeatureUpdated)
		inFlight := want[9]
		arrived := make(chan struct{})
		hold := make(chan struct{})
		var once sync.Once
		r.hold = func(id int64, attempt int) {
			if id == inFlight && attempt == 1 {
				once.Do(func() { close(arrived) })
				<-hold // answered only after the engine died
			}
		}
		a, err := webhooks.New(noRelease{open(t)}, []flagadmin.WebhookSink{sinkTo("crash", r.srv.URL, flagadmin.EventSearchParams{})}, fast("a"))
		if err != nil {
			t.Fatal(err)
		}
		a.Start(context.Background())
		<-arrived
		a.Stop(context.Background()) // dies mid-request, lease kept until it ends
		close(hold)
		b := startEngine(t, open(t), []flagadmin.WebhookSink{sinkTo("crash", r.srv.URL, flagadmin.EventSearchParams{})}, fast("b"))
		want = append(want, writeEvents(t, s, 5, flagadmin.EventFeatureUpdated)...)
		r.waitFor(t, want, 10*time.Second)
		r.checkDelivery(t, want, 1)
		// b delivers from the one in flight on.
		waitStats(t, b, func(st []webhooks.SinkStats) bool { return st[0].Delivered == int64(len(want)-9) })
	})
}

func TestTwoServersOneDeliversAndTheOtherTakesOver(t *testing.T) {
	forEachBackend(t, false, func(t *testing.T, open func(*testing.T) testStore) {
		s := open(t)
		r := newReceiver(t)
		register(t, s, "shared")
		sinks := []flagadmin.WebhookSink{sinkTo("shared", r.srv.URL, flagadmin.EventSearchParams{})}
		a, err := webhooks.New(noRelease{open(t)}, sinks, fast("a"))
		if err != nil {
			t.Fatal(err)
		}
		a.Start(context.Background())
		waitStats(t, a, func(st []webhooks.SinkStats) bool { return st[0].Holding })
		b := startEngine(t, open(t), sinks, fast("b"))
		want := writeEvents(t, s, 30, flagadmin.EventFeatureUpdated)
		r.waitFor(t, want, 10*time.Second)
		waitStats(t, a, func(st []webhooks.SinkStats) bool { return st[0].Delivered == 30 })
		if got := a.Stats()[0].Delivered; got != 30 || b.Stats()[0].Holding || b.Stats()[0].Delivered != 0 {
			t.Fatalf("a delivered %d (want 30), b holding %v delivered %d (want none)", got, b.Stats()[0].Holding, b.Stats()[0].Delivered)
		}
		died := time.Now()
		a.Stop(context.Background()) // a dies holding the lease
		more := writeEvents(t, s, 10, flagadmin.EventFeatureUpdated)
		want = append(want, more...)
		r.waitFor(t, want, 10*time.Second)
		// Takeover within LeaseTTL + RenewEvery (0.7 s here; 25 s by default).
		if took := time.Since(died); took > 3*time.Second {
			t.Errorf("takeover took %v", took)
		}
		r.checkDelivery(t, want, 0)
		waitStats(t, b, func(st []webhooks.SinkStats) bool { return st[0].Holding && st[0].Delivered == 10 })
	})
}

func TestACleanStopHandsOverAtOnce(t *testing.T) {
	s := memstore.New()
	r := newReceiver(t)
	register(t, s, "h")
	sinks := []flagadmin.WebhookSink{sinkTo("h", r.srv.URL, flagadmin.EventSearchParams{})}
	opts := fast("a")
	opts.LeaseTTL, opts.RenewEvery = time.Hour, 50*time.Millisecond
	a := startEngine(t, s, sinks, opts)
	waitStats(t, a, func(st []webhooks.SinkStats) bool { return st[0].Holding })
	opts.Holder = "b"
	b := startEngine(t, s, sinks, opts)
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := writeEvents(t, s, 3, flagadmin.EventFeatureUpdated)
	r.waitFor(t, want, 5*time.Second) // long before an hour's lease ends
	r.checkDelivery(t, want, 0)
	waitStats(t, b, func(st []webhooks.SinkStats) bool { return st[0].Delivered == 3 })
}

func TestTheDatabaseDownWhileDeliveringPausesAndResumes(t *testing.T) {
	for _, b := range []struct {
		name   string
		newURL func(testing.TB) string
	}{{"Postgres", dbtest.Postgres}, {"MySQL", dbtest.MySQL}} {
		t.Run(b.name, func(t *testing.T) {
			raw := b.newURL(t)
			direct := openSQL(t, raw)
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			proxy, err := faultproxy.New(u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			u.Host = proxy.Addr()
			proxied := openSQL(t, u.String())
			r := newReceiver(t)
			register(t, direct, "db")
			want := writeEvents(t, direct, 10, flagadmin.EventFeatureUpdated)
			opts := fast("a")
			opts.LeaseTTL = 3 * time.Second // outlives the outage: the same engine resumes
			e := startEngine(t, proxied, []flagadmin.WebhookSink{sinkTo("db", r.srv.URL, flagadmin.EventSearchParams{})}, opts)
			r.waitFor(t, want, 10*time.Second)
			for _, mode := range []faultproxy.Mode{faultproxy.Cut, faultproxy.Stall} {
				proxy.Set(mode)
				more := writeEvents(t, direct, 10, flagadmin.EventFeatureUpdated)
				want = append(want, more...)
				time.Sleep(400 * time.Millisecond)
				proxy.Set(faultproxy.Pass)
				r.waitFor(t, want, 15*time.Second)
			}
			r.checkDelivery(t, want, 2) // at most the event in flight at each outage
			waitStats(t, e, func(st []webhooks.SinkStats) bool { return st[0].Position == want[len(want)-1] })
		})
	}
}

func TestRetryWaitsDoubleWithJitterUpToTheMaximum(t *testing.T) {
	// The schedule's defaults: 1 s doubling to 5 min.
	waits := webhooks.RetryWaits(webhooks.Options{}, 12)
	want := []time.Duration{1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300}
	for i, w := range waits {
		base := want[i] * time.Second
		lo, hi := base/2, min(base*3/2, 5*time.Minute)
		if w < lo || w > hi {
			t.Errorf("wait %d: %v, want within [%v, %v]", i+1, w, lo, hi)
		}
	}
}

func TestNotifyWakesAWaitingSink(t *testing.T) {
	s := memstore.New()
	r := newReceiver(t)
	register(t, s, "woken")
	opts := fast("a")
	opts.PollEvery = time.Hour // only Notify can end the wait
	e := startEngine(t, s, []flagadmin.WebhookSink{sinkTo("woken", r.srv.URL, flagadmin.EventSearchParams{})}, opts)
	waitStats(t, e, func(st []webhooks.SinkStats) bool { return st[0].Holding })
	time.Sleep(50 * time.Millisecond) // into the wait
	want := writeEvents(t, s, 1, flagadmin.EventFeatureUpdated)
	e.Notify()
	r.waitFor(t, want, 5*time.Second)
}

func TestStartRegistersANewSinkBeforeItReturns(t *testing.T) {
	forEachBackend(t, false, func(t *testing.T, open func(*testing.T) testStore) {
		s := open(t)
		before := writeEvents(t, s, 3, flagadmin.EventFeatureCreated)
		r := newReceiver(t)
		startEngine(t, s, []flagadmin.WebhookSink{sinkTo("new", r.srv.URL, flagadmin.EventSearchParams{})}, fast("a"))
		// No wait: an event written as soon as Start returns comes after
		// the sink's first position.
		states, err := s.SinkStates(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(states) != 1 || states[0].Name != "new" || states[0].Position != before[2] {
			t.Fatalf("stored sinks when Start returned: %+v, want sink new at the newest event %d", states, before[2])
		}
		want := writeEvents(t, s, 2, flagadmin.EventFeatureUpdated)
		r.waitFor(t, want, 10*time.Second)
		r.checkDelivery(t, want, 0)
	})
}

// failingRegistration is a store whose RegisterSink fails until ok is set.
type failingRegistration struct {
	*memstore.Store
	ok atomic.Bool
}

func (f *failingRegistration) RegisterSink(ctx context.Context, name string, now time.Time) (flagadmin.SinkState, error) {
	if !f.ok.Load() {
		return flagadmin.SinkState{}, errors.New("database down")
	}
	return f.Store.RegisterSink(ctx, name, now)
}

func TestASinkThatCannotRegisterAtStartRegistersWhenTheDatabaseAnswers(t *testing.T) {
	s := &failingRegistration{Store: memstore.New()}
	r := newReceiver(t)
	var logs syncbuffer.Buffer
	opts := fast("a")
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	e := startEngine(t, s, []flagadmin.WebhookSink{sinkTo("late", r.srv.URL, flagadmin.EventSearchParams{})}, opts)
	if !strings.Contains(logs.String(), `register sink \"late\": database down`) {
		t.Errorf("log %q does not say that sink late could not register", logs.String())
	}
	if states, _ := s.SinkStates(context.Background()); len(states) != 0 {
		t.Fatalf("stored sinks %+v, want none", states)
	}
	writeEvents(t, s, 2, flagadmin.EventFeatureCreated) // before the sink registers: not its
	s.ok.Store(true)
	waitStats(t, e, func(st []webhooks.SinkStats) bool { return st[0].Holding })
	want := writeEvents(t, s, 1, flagadmin.EventFeatureUpdated)
	r.waitFor(t, want, 10*time.Second)
	r.checkDelivery(t, want, 0)
}
