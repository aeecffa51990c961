// Webhook-receiver is a receiver of flagadmin's webhooks, written with the
// standard library only so that it can be copied into any Go program. It
// checks each request's signature (HMAC-SHA256 of "<timestamp>.<body>"
// with the sink's secret, compared in constant time), refuses timestamps
// more than 5 minutes away from its clock (a replayed request), and
// processes each event once: flagadmin delivers at least once, so after a
// crash of the server the event in flight comes again with the same
// X-Flagadmin-Event-Id.
//
//	WEBHOOK_SECRET=s3cr3t go run ./examples/webhook-receiver -addr 127.0.0.1:9000
//
// and, in the server's webhook file:
//
//	[{"name": "example", "url": "http://127.0.0.1:9000/hook", "secret": "s3cr3t"}]
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	flag.Parse()
	secret := os.Getenv("WEBHOOK_SECRET")
	if secret == "" {
		fmt.Fprintln(os.Stderr, "webhook-receiver: set WEBHOOK_SECRET to the sink's secret")
		os.Exit(1)
	}
	r := &Receiver{Secret: secret, Tolerance: 5 * time.Minute, Handle: func(e Event) error {
		fmt.Printf("%d %s %s project=%s feature=%s\n", e.ID, e.CreatedAt, e.Type, deref(e.Project), deref(e.FeatureName))
		return nil
	}}
	srv := &http.Server{Addr: *addr, Handler: r, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	log.Printf("listening on http://%s", *addr)
	log.Fatal(srv.ListenAndServe())
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// Event is the part of flagadmin's Event JSON this receiver reads.
type Event struct {
	ID          int64           `json:"id"`
	CreatedAt   string          `json:"createdAt"`
	Type        string          `json:"type"`
	CreatedBy   string          `json:"createdBy"`
	Project     *string         `json:"project"`
	FeatureName *string         `json:"featureName"`
	Environment *string         `json:"environment"`
	Data        json.RawMessage `json:"data"`
	PreData     json.RawMessage `json:"preData"`
}

// Receiver is an http.Handler for one sink's requests.
type Receiver struct {
	// Secret is the sink's secret.
	Secret string
	// Tolerance is how far a request's timestamp may be from now.
	Tolerance time.Duration
	// Handle processes an event; an error answers 500, so flagadmin
	// sends the event again later.
	Handle func(Event) error
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// mu serializes the handling of events, so that the check for a
	// duplicate and the processing are one step.
	mu sync.Mutex
	// last is the id of the last event processed. A sink receives its
	// events in id order, one at a time, so every id up to it has been
	// processed: remembering one number is enough to deduplicate. (A store
	// that must survive restarts keeps it next to what Handle writes.)
	last int64
}

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	now := time.Now()
	if rc.Now != nil {
		now = rc.Now()
	}
	ts, err := strconv.ParseInt(r.Header.Get("X-Flagadmin-Timestamp"), 10, 64)
	if err != nil {
		http.Error(w, "missing or bad X-Flagadmin-Timestamp", http.StatusBadRequest)
		return
	}
	if d := now.Sub(time.Unix(ts, 0)); d > rc.Tolerance || d < -rc.Tolerance {
		http.Error(w, "stale timestamp", http.StatusUnauthorized)
		return
	}
	if !validSignature(rc.Secret, r.Header.Get("X-Flagadmin-Timestamp"), body, r.Header.Get("X-Flagadmin-Signature")) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	id, err := strconv.ParseInt(r.Header.Get("X-Flagadmin-Event-Id"), 10, 64)
	if err != nil {
		http.Error(w, "missing or bad X-Flagadmin-Event-Id", http.StatusBadRequest)
		return
	}
	var e Event
	if err := json.Unmarshal(body, &e); err != nil || e.ID != id {
		http.Error(w, "the body is not the event the headers name", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if id <= rc.last {
		w.WriteHeader(http.StatusOK) // a repeat of an event already processed
		return
	}
	if err := rc.Handle(e); err != nil {
		http.Error(w, "not processed; send it again", http.StatusInternalServerError)
		return
	}
	rc.last = id
	w.WriteHeader(http.StatusOK)
}

// validSignature reports whether signature ("sha256=<hex>") is the
// HMAC-SHA256 of "<timestamp>.<body>" under secret, compared in constant time.
func validSignature(secret, timestamp string, body []byte, signature string) bool {
	got, err := hex.DecodeString(strings.TrimPrefix(signature, "sha256="))
	if err != nil || !strings.HasPrefix(signature, "sha256=") {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}
