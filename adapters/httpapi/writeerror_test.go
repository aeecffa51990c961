package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin/upstream"
)

// TestWriteErrorIsTheAPIsErrorBody: the errors of handlers served beside
// the API (the metrics) have the API's body, the name of their status, a
// fresh id, and the JSON content type; a status without a name is a 500.
func TestWriteErrorIsTheAPIsErrorBody(t *testing.T) {
	s := newEnv(t, Config{}, nil).server
	for _, c := range []struct {
		status     int
		wantStatus int
		name       string
		message    string
	}{
		{http.StatusNotFound, http.StatusNotFound, nameNotFound, "This listener serves only /metrics."},
		{http.StatusMethodNotAllowed, http.StatusMethodNotAllowed, nameMethodNotAllowed, "The path \"/metrics\" answers only GET and HEAD."},
		{http.StatusTeapot, http.StatusInternalServerError, nameInternal, msgInternal},
	} {
		w := httptest.NewRecorder()
		s.WriteStatus(w, httptest.NewRequest(http.MethodPost, "/metrics", nil), c.status, c.message)
		var body struct{ ID, Name, Message string }
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%d: %v: %s", c.status, err, w.Body)
		}
		if w.Code != c.wantStatus || body.Name != c.name || body.Message != c.message || len(body.ID) != 36 {
			t.Errorf("WriteError(%d): got %d %+v", c.status, w.Code, body)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("WriteError(%d): Content-Type %q", c.status, ct)
		}
	}
}

// TestWriteErrorOfAGateway: a gateway's errors are 502 BadGatewayError and
// 504 GatewayTimeout; a forwarding loop is a 502 whose message says what
// to fix, never the cause's text (the upstream's address).
func TestWriteErrorOfAGateway(t *testing.T) {
	s := newEnv(t, Config{}, nil).server
	for _, c := range []struct {
		err     error
		status  int
		name    string
		message string
	}{
		{fmt.Errorf("%w: cannot reach unleash:4242", upstream.ErrBadGateway), http.StatusBadGateway, nameBadGateway, msgBadGateway},
		{fmt.Errorf("%w: unleash:4242 did not answer", upstream.ErrTimeout), http.StatusGatewayTimeout, nameGatewayTimeout, msgGateway504},
		{fmt.Errorf("%w: GET /x came back from 127.0.0.1:4242", upstream.ErrLoop), http.StatusBadGateway, nameBadGateway,
			"The request came back to the flagadmin server that forwarded it (a forwarding loop): its upstream leads back to itself. Set its upstream (--upstream) to Unleash's address."},
	} {
		w := httptest.NewRecorder()
		s.WriteError(w, httptest.NewRequest(http.MethodGet, "/x", nil), c.err)
		var body struct{ ID, Name, Message string }
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%v: %v: %s", c.err, err, w.Body)
		}
		if w.Code != c.status || body.Name != c.name || body.Message != c.message {
			t.Errorf("WriteError(%v): got %d %+v", c.err, w.Code, body)
		}
	}
}
