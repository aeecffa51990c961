package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// stallingStore is a Store whose token lookups (when lookup is set) and
// event searches wait until their context ends, like a store over a
// database that stopped answering, or at most hold.
type stallingStore struct {
	flagadmin.Store
	lookup bool
	hold   time.Duration
}

func (s *stallingStore) stall(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return errors.Join(flagadmin.ErrUnavailable, ctx.Err())
	case <-time.After(s.hold):
		return errors.New("the stalled store was never canceled")
	}
}

func (s *stallingStore) LookupToken(ctx context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	if s.lookup {
		return flagadmin.APIToken{}, nil, s.stall(ctx)
	}
	return s.Store.LookupToken(ctx, hash)
}

func (s *stallingStore) SearchEvents(ctx context.Context, _ flagadmin.EventQuery) (flagadmin.EventPage, error) {
	return flagadmin.EventPage{}, s.stall(ctx)
}

// TestStorageDeadline checks that Config.StorageTimeout bounds a request's
// storage work, the token check before routing included: a store that
// never answers gives 503 ServiceUnavailable with Retry-After once the
// deadline passes.
func TestStorageDeadline(t *testing.T) {
	const deadline = 100 * time.Millisecond
	for _, c := range []struct {
		name   string
		lookup bool
	}{{"token check", true}, {"operation", false}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Config{StorageTimeout: deadline}, func(s flagadmin.Store) flagadmin.Store {
				return &stallingStore{Store: s, lookup: c.lookup, hold: 5 * time.Second}
			})
			start := time.Now()
			w := e.do(t, request{method: http.MethodGet, path: searchPath, token: adminToken})
			took := time.Since(start)
			wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
			if w.Header().Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if took < deadline || took > deadline+time.Second {
				t.Errorf("answered after %v, want between the deadline %v and a second more", took, deadline)
			}
		})
	}
}

// driverError is what a store returns for a failed statement: a kind, and
// the driver's text for the log only (shown by its LogValue).
type driverError struct{ kind error }

func (e driverError) Error() string        { return "store: search events: " + e.kind.Error() }
func (e driverError) Unwrap() error        { return e.kind }
func (e driverError) LogValue() slog.Value { return slog.StringValue(fakeSQL) }

// logLine is one line of the JSON log.
type logLine struct {
	Level     string `json:"level"`
	Msg       string `json:"msg"`
	RequestID string `json:"request_id"`
	ErrorID   string `json:"error_id"`
	Cause     string `json:"cause"`
	Error     string `json:"error"`
}

func failureLines(t *testing.T, logs string) []logLine {
	t.Helper()
	var out []logLine
	for _, raw := range strings.Split(strings.TrimSpace(logs), "\n") {
		var l logLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		if l.Msg != "request" { // the access log line
			out = append(out, l)
		}
	}
	return out
}

// TestFailLogsOnce checks the one log line of a failed request: its level
// and message by how the request ended, with the request id, the error id
// of the body, and the store's driver detail (which the body never shows).
func TestFailLogsOnce(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	cases := []struct {
		name      string
		ctx       context.Context
		err       error
		status    int
		level     string
		msg       string
		wantCause string
	}{
		{"storage failure", context.Background(), driverError{flagadmin.ErrUnavailable}, 503, "WARN", "storage unavailable", fakeSQL},
		{"deadline passed", expired, driverError{flagadmin.ErrUnavailable}, 503, "WARN", "storage unavailable", fakeSQL},
		{"deadline, raw context error", expired, context.DeadlineExceeded, 503, "WARN", "storage unavailable", ""},
		{"client went away", canceled, driverError{flagadmin.ErrUnavailable}, 503, "INFO", "request canceled by the client", fakeSQL},
		{"client went away, raw context error", canceled, context.Canceled, 503, "INFO", "request canceled by the client", ""},
		{"unexpected failure", context.Background(), driverError{errors.New("no kind")}, 500, "ERROR", "request failed", fakeSQL},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Config{}, nil)
			r := httptest.NewRequest(http.MethodGet, searchPath, nil)
			r = r.WithContext(context.WithValue(c.ctx, requestIDKey{}, "req-1"))
			w := httptest.NewRecorder()
			e.server.writeError(w, r, c.err)
			if w.Code != c.status {
				t.Fatalf("status: got %d, want %d", w.Code, c.status)
			}
			if c.status == 503 && w.Header().Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			mustNotLeak(t, w)
			var body errorResponse
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			lines := failureLines(t, e.logs.String())
			if len(lines) != 1 {
				t.Fatalf("got %d log lines about the failure, want 1:\n%s", len(lines), e.logs)
			}
			l := lines[0]
			if l.Level != c.level || l.Msg != c.msg {
				t.Errorf("got %s %q, want %s %q", l.Level, l.Msg, c.level, c.msg)
			}
			if l.RequestID != "req-1" || l.ErrorID != body.ID {
				t.Errorf("got request_id %q error_id %q, want req-1 and the body's id %q", l.RequestID, l.ErrorID, body.ID)
			}
			if l.Cause != c.wantCause {
				t.Errorf("cause: got %q, want %q", l.Cause, c.wantCause)
			}
		})
	}
}
