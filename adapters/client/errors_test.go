package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestErrorMapping checks the kind, name, id and message of error answers,
// including bodies that are not the API's: a proxy's HTML page, an empty
// body, Unleash's variants.
func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		kind        error // nil: no kind
		wantName    string
		wantID      string
		wantMessage string
	}{
		{"html 502 from a proxy", 502, "text/html", "<html><body>Bad Gateway</body></html>", nil, "", "", "Bad Gateway"},
		{"html 503 from a proxy", 503, "text/html", "<html>down</html>", flagadmin.ErrUnavailable, "", "", "Service Unavailable"},
		{"empty 404", 404, "", "", flagadmin.ErrNotFound, "", "", "Not Found"},
		{"empty 401", 401, "application/json", "", flagadmin.ErrAuthenticationRequired, "", "", "Unauthorized"},
		{"conflict", 409, "application/json", `{"id":"c1","name":"ConflictError","message":"The change conflicts with existing data."}`, flagadmin.ErrConflict, "ConflictError", "c1", "The change conflicts with existing data."},
		{"unleash 403 without id", 403, "application/json; charset=utf-8", `{"message":"invalid token"}`, flagadmin.ErrNoAccess, "", "", "invalid token"},
		{"422 named BadDataError", 422, "application/json", `{"id":"v1","name":"BadDataError","message":"bad","details":[{"path":"/body/status","message":"must be kept"}]}`, flagadmin.ErrValidation, "BadDataError", "v1", "bad"},
		{"413 has no kind", 413, "application/json", `{"id":"b1","name":"ContentTooLarge","message":"too large"}`, nil, "ContentTooLarge", "b1", "too large"},
		{"500 has no kind", 500, "application/json", `{"id":"i1","name":"InternalError","message":"Quote the error id."}`, nil, "InternalError", "i1", "Quote the error id."},
		{"400 without details", 400, "application/json", `{"id":"v2","name":"ValidationError","message":"name is required"}`, flagadmin.ErrValidation, "ValidationError", "v2", "name is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				w.Header().Set("X-Request-Id", "req-1")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, adminToken, client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 1}))
			err := c.DeleteServiceAccount(context.Background(), "10")
			var ce *client.Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %T %v, want a *client.Error", err, err)
			}
			if ce.Status != tt.status || ce.Name != tt.wantName || ce.ID != tt.wantID || ce.Message != tt.wantMessage || ce.RequestID != "req-1" {
				t.Errorf("got %d %q id %q message %q request %q, want %d %q id %q message %q request req-1",
					ce.Status, ce.Name, ce.ID, ce.Message, ce.RequestID, tt.status, tt.wantName, tt.wantID, tt.wantMessage)
			}
			if tt.kind == nil {
				if ce.Unwrap() != nil {
					t.Errorf("got kind %v, want none", ce.Unwrap())
				}
				return
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.kind)
			}
			if tt.kind == flagadmin.ErrValidation {
				var ve *flagadmin.ValidationError
				if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Message == "" {
					t.Fatalf("got %v, want a *ValidationError with one field", err)
				}
				if len(ce.Details) == 1 && ve.Fields[0].Path != "status" {
					t.Errorf("field path %q, want status (from /body/status)", ve.Fields[0].Path)
				}
			}
		})
	}
}

// TestNew checks the base URLs New accepts.
func TestNew(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"http://localhost:4242", true},
		{"https://example.com/unleash/", true},
		{"ftp://example.com", false},
		{"example.com", false},
		{"http://example.com?x=1", false},
		{"http://user:pw@example.com", false},
	} {
		_, err := client.New(tt.url, adminToken)
		if (err == nil) != tt.ok {
			t.Errorf("New(%q): error %v, want ok %v", tt.url, err, tt.ok)
		}
	}
	if _, err := client.New("http://example.com", "a\r\nX-Evil: 1"); err == nil {
		t.Error("New with a token holding a line break: got no error")
	}
}
