package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/metrics"
)

// TestHandlerRefusesWritesThroughTheErrorWriter: GET and HEAD scrape; any
// other method is answered 405 with Allow, by the error writer it is
// given (the server's one), not by a body of the metrics' own.
func TestHandlerRefusesWritesThroughTheErrorWriter(t *testing.T) {
	var calls []int
	h := metrics.New().Handler(func(w http.ResponseWriter, r *http.Request, status int, message string) {
		calls = append(calls, status)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(message))
	})
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, "/metrics", nil))
		if w.Code != http.StatusOK {
			t.Errorf("%s: got %d, want 200", method, w.Code)
		}
	}
	if len(calls) != 0 {
		t.Errorf("GET and HEAD: the error writer was called: %v", calls)
	}
	for _, method := range []string{http.MethodPost, http.MethodDelete} {
		calls = nil
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, "/metrics", nil))
		if w.Code != http.StatusMethodNotAllowed || len(calls) != 1 || calls[0] != http.StatusMethodNotAllowed {
			t.Errorf("%s: got %d, error writer calls %v; want 405 through the error writer", method, w.Code, calls)
		}
		if allow := w.Header().Get("Allow"); allow != "GET, HEAD" {
			t.Errorf("%s: Allow %q", method, allow)
		}
		if !strings.Contains(w.Body.String(), "/metrics") {
			t.Errorf("%s: message %q does not name the path", method, w.Body)
		}
	}
}
