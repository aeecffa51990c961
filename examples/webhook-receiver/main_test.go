package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/webhooks"
	"github.com/flagadmin/flagadmin/flagadmin"
)

const secret = "s3cr3t"

// post sends body as flagadmin would at ts, with the signature sig ("" for
// the right one), and returns the status.
func post(t *testing.T, h http.Handler, id int64, body []byte, ts int64, sig string) int {
	t.Helper()
	if sig == "" {
		sig = webhooks.Sign(secret, ts, body)
	}
	req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	req.Header.Set("X-Flagadmin-Event-Id", strconv.FormatInt(id, 10))
	req.Header.Set("X-Flagadmin-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-Flagadmin-Signature", sig)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func TestReceiverChecksSignatureAndTimeAndProcessesEachEventOnce(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var handled []int64
	r := &Receiver{Secret: secret, Tolerance: 5 * time.Minute, Now: func() time.Time { return now },
		Handle: func(e Event) error { handled = append(handled, e.ID); return nil }}
	body := func(id int64) []byte {
		return []byte(`{"id":` + strconv.FormatInt(id, 10) + `,"type":"feature-created","project":null}`)
	}
	ts := now.Unix()
	cases := []struct {
		name string
		id   int64
		body []byte
		ts   int64
		sig  string
		want int
	}{
		{"valid", 1, body(1), ts, "", 200},
		{"the same event again", 1, body(1), ts + 30, "", 200},
		{"the next one", 2, body(2), ts, "", 200},
		{"signed with another secret", 3, body(3), ts, webhooks.Sign("other", ts, body(3)), 401},
		{"body changed", 3, []byte(`{"id":3,"type":"feature-deleted"}`), ts, webhooks.Sign(secret, ts, body(3)), 401},
		{"timestamp changed", 3, body(3), ts + 1, webhooks.Sign(secret, ts, body(3)), 401},
		{"no sha256= prefix", 3, body(3), ts, webhooks.Sign(secret, ts, body(3))[len("sha256="):], 401},
		{"stale", 3, body(3), ts - 301, "", 401},
		{"from the future", 3, body(3), ts + 301, "", 401},
		{"id header not the body's", 4, body(3), ts, "", 400},
		{"recovered", 3, body(3), ts, "", 200},
	}
	for _, c := range cases {
		if got := post(t, r, c.id, c.body, c.ts, c.sig); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
	if want := []int64{1, 2, 3}; len(handled) != 3 || handled[0] != 1 || handled[1] != 2 || handled[2] != 3 {
		t.Errorf("handled %v, want %v", handled, want)
	}
}

// The receiver behind flagadmin's own delivery engine: every event
// arrives, verified, once, in order.
func TestReceiverWithTheDeliveryEngine(t *testing.T) {
	store := memstore.New()
	var mu sync.Mutex
	var got []int64
	failOnce := true
	r := &Receiver{Secret: secret, Tolerance: time.Minute, Handle: func(e Event) error {
		mu.Lock()
		defer mu.Unlock()
		if failOnce && e.ID == 2 {
			failOnce = false
			return context.DeadlineExceeded // processed later
		}
		got = append(got, e.ID)
		return nil
	}}
	srv := httptest.NewServer(r)
	defer srv.Close()
	ctx := context.Background()
	if _, err := store.RegisterSink(ctx, "example", time.Now()); err != nil {
		t.Fatal(err)
	}
	b := &flagadmin.Batch{}
	for i := range 5 {
		b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "t", CreatedAt: time.Now(), Data: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)})
	}
	if err := store.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	e, err := webhooks.New(store, []flagadmin.WebhookSink{{Name: "example", URL: srv.URL + "/hook", Secret: secret}},
		webhooks.Options{PollEvery: 10 * time.Millisecond, BackoffInitial: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(ctx)
	defer e.Stop(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, id := range got {
		if id != b.Events[i].ID {
			t.Fatalf("got %v, want the ids of %d events in order", got, len(b.Events))
		}
	}
	if len(got) != 5 {
		t.Fatalf("got %v, want 5 events", got)
	}
}
