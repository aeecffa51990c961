package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
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
