package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/adapters/eventfeed"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// streamServer serves the test world on a memstore with the live stream.
func streamServer(t *testing.T) (*httptest.Server, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	svc := flagadmin.NewService(store)
	if err := svc.LoadSeed(context.Background(), strings.NewReader(worldSeed(t))); err != nil {
		t.Fatal(err)
	}
	feed := eventfeed.New(store, eventfeed.Options{Interval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); feed.Run(ctx) }()
	api := httpapi.New(svc, httpapi.Config{Feed: feed})
	ts := httptest.NewServer(api.Handler())
	t.Cleanup(func() { api.EndStreams(); ts.Close(); cancel(); <-done })
	return ts, store
}

// appendEvents writes n events to store.
func appendEvents(t *testing.T, store *memstore.Store, n int) {
	t.Helper()
	var events []flagadmin.Event
	for range n {
		events = append(events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "tail", CreatedAt: time.Now().UTC(), Project: new("default")})
	}
	if err := store.Write(context.Background(), &flagadmin.Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
}

// tail collects the ids Tail yields until it has n of them.
func tail(t *testing.T, ctx context.Context, c *client.Client, afterID int64, n int, after func(got int), onReconnect func(error, int64)) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var got []int64
	for ev, err := range c.Tail(ctx, flagadmin.EventSearchParams{}, afterID, onReconnect) {
		if err != nil {
			t.Fatalf("Tail after %d events: %v", len(got), err)
		}
		got = append(got, ev.ID)
		if after != nil {
			after(len(got))
		}
		if len(got) == n {
			break
		}
	}
	return got
}

func wantIDs(t *testing.T, got []int64, from int64, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d events, want %d", len(got), n)
	}
	for i, id := range got {
		if id != from+int64(i) {
			t.Fatalf("event %d: id %d, want %d (ids %d..%d once each, in order)", i, id, from+int64(i), from, from+int64(n)-1)
		}
	}
}

func TestTailReplaysThenFollows(t *testing.T) {
	ts, store := streamServer(t)
	c := newClient(t, ts.URL, adminToken)
	got := tail(t, t.Context(), c, 10, worldEvents-10+3, func(n int) {
		if n == worldEvents-10 {
			appendEvents(t, store, 3)
		}
	}, nil)
	wantIDs(t, got, 11, worldEvents-10+3)
}

func TestTailFromNow(t *testing.T) {
	ts, store := streamServer(t)
	c := newClient(t, ts.URL, adminToken)
	go func() {
		time.Sleep(100 * time.Millisecond)
		appendEvents(t, store, 2)
	}()
	wantIDs(t, tail(t, t.Context(), c, client.TailFromNow, 2, nil, nil), worldEvents+1, 2)
}

// TestTailResumesAfterADroppedConnection cuts the connection after every
// 20th event: Tail reconnects with Last-Event-ID, missing and repeating
// nothing.
func TestTailResumesAfterADroppedConnection(t *testing.T) {
	ts, store := streamServer(t)
	c := newClient(t, ts.URL, adminToken)
	var reconnects, received atomic.Int32
	got := tail(t, t.Context(), c, 0, worldEvents+30, func(n int) {
		received.Store(int32(n)) // ids start at 1: the last id is n
		if n%20 == 0 {
			ts.CloseClientConnections()
		}
		if n == worldEvents {
			appendEvents(t, store, 30)
		}
	}, func(err error, after int64) {
		if after != int64(received.Load()) {
			t.Errorf("reconnecting after id %d, want the last one received, %d", after, received.Load())
		}
		reconnects.Add(1)
	})
	wantIDs(t, got, 1, worldEvents+30)
	if reconnects.Load() == 0 {
		t.Error("Tail did not reconnect")
	}
}

func TestTailBadFilterIsAnError(t *testing.T) {
	ts, _ := streamServer(t)
	c := newClient(t, ts.URL, adminToken)
	for _, err := range c.Tail(t.Context(), flagadmin.EventSearchParams{Type: "nope"}, 0, nil) {
		var ve *flagadmin.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("got %v, want a ValidationError", err)
		}
		break
	}
}

// TestTailWaitsForARestartingServer: after the stream breaks, the server
// answers 503 for a while (a restart); Tail keeps trying and resumes.
func TestTailWaitsForARestartingServer(t *testing.T) {
	store := memstore.New()
	if err := flagadmin.NewService(store).LoadSeed(context.Background(), strings.NewReader(worldSeed(t))); err != nil {
		t.Fatal(err)
	}
	feed := eventfeed.New(store, eventfeed.Options{Interval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); feed.Run(ctx) }()
	api := httpapi.New(flagadmin.NewService(store), httpapi.Config{Feed: feed})
	var down atomic.Bool
	var refused atomic.Int32
	h := api.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			refused.Add(1)
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"id":"x","name":"ServiceUnavailable","message":"restarting"}`, http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { api.EndStreams(); ts.Close(); cancel(); <-done })
	c := newClient(t, ts.URL, adminToken)
	got := tail(t, t.Context(), c, worldEvents-5, 8, func(n int) {
		if n == 5 {
			down.Store(true)
			ts.CloseClientConnections()
			go func() {
				time.Sleep(300 * time.Millisecond)
				appendEvents(t, store, 3)
				down.Store(false)
			}()
		}
	}, nil)
	wantIDs(t, got, worldEvents-4, 8)
	if refused.Load() == 0 {
		t.Error("the server never refused a reconnection")
	}
}
