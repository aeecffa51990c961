package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/upstream"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// TestMapErrorKinds holds each error kind to its status, name and message,
// and the kinds an error may be several of to the one that wins.
func TestMapErrorKinds(t *testing.T) {
	own := newAPIError(http.StatusTeapot, "TeapotError", "short and stout")
	cases := []struct {
		name    string
		err     error
		status  int
		errName string
		message string // "" when the case does not hold it
	}{
		{"nil", nil, 500, nameInternal, msgInternal},
		{"an error of the API's own", fmt.Errorf("handler: %w", own), http.StatusTeapot, "TeapotError", "short and stout"},
		{"body over the limit", fmt.Errorf("read: %w", &http.MaxBytesError{Limit: 10}), 413, nameContentTooLarge,
			"The request body is larger than the limit of 10 bytes."},
		{"body badly framed", fmt.Errorf("read: %w", errBodyFraming), 400, nameBadData, ""},
		{"body too slow", errBodyTimeout, 408, nameRequestTimeout, msgTimeout},
		{"headers too large", errHeadersTooLarge, 400, nameBadData, msgBadData + ": " + errHeadersTooLarge.Error()},
		{"validation kind without fields", fmt.Errorf("%w: limit: too big", flagadmin.ErrValidation), 400, nameBadData, msgBadData + ": invalid input: limit: too big"},
		{"authentication, the domain's message", fmt.Errorf("%w: the token expired", flagadmin.ErrAuthenticationRequired), 401, nameAuthentication,
			"authentication required: the token expired"},
		{"no access, the domain's message", fmt.Errorf("%w: admins only", flagadmin.ErrNoAccess), 403, nameNoAccess, "no access: admins only"},
		{"not found, the domain's message", fmt.Errorf("%w: no such feature", flagadmin.ErrNotFound), 404, nameNotFound, "not found: no such feature"},
		{"read-only copy", &flagadmin.ReadOnlyError{Source: "postgres://db/unleash"}, 409, nameReadOnly,
			"This flagadmin keeps a read-only copy of the Unleash database postgres://db/unleash (it follows it): make the change in Unleash."},
		{"log refused, before the conflict it is", &vlog.RefusedError{Problem: "no key"}, 409, nameConflict,
			"This server refuses to sign the log's checkpoints: no key"},
		{"conflict, its cause hidden", fmt.Errorf("unique violation: %w", flagadmin.ErrConflict), 409, nameConflict, msgConflict},
		{"upstream loop, before the bad gateway it is", upstream.ErrLoop, 502, nameBadGateway, msgUpstreamLoop},
		{"bad gateway", upstream.ErrBadGateway, 502, nameBadGateway, msgBadGateway},
		{"bad gateway wrapping a context deadline", fmt.Errorf("%w: %w", upstream.ErrBadGateway, context.DeadlineExceeded), 502, nameBadGateway, msgBadGateway},
		{"gateway timeout wrapping a context deadline", fmt.Errorf("%w: %w", upstream.ErrTimeout, context.DeadlineExceeded), 504, nameGatewayTimeout, msgGateway504},
		{"storage unavailable", fmt.Errorf("dial: %w", flagadmin.ErrUnavailable), 503, nameServiceUnavailable, msgUnavailable},
		{"request context ended", context.Canceled, 503, nameServiceUnavailable, msgUnavailable},
		{"connection read deadline", fmt.Errorf("read body: %w", os.ErrDeadlineExceeded), 408, nameRequestTimeout, msgTimeout},
		{"huma's 404", &humaError{status: 404, msg: "not found"}, 404, nameNotFound, "The resource does not exist."},
		{"anything else", errors.New("boom"), 500, nameInternal, msgInternal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mapError(c.err)
			if got.status != c.status || got.Name != c.errName {
				t.Errorf("got %d %s, want %d %s", got.status, got.Name, c.status, c.errName)
			}
			if c.message != "" && got.Message != c.message {
				t.Errorf("got message %q, want %q", got.Message, c.message)
			}
			if retry := got.GetHeaders().Get("Retry-After"); (got.status == 503) != (retry != "") {
				t.Errorf("got Retry-After %q with %d, want it with 503 only", retry, got.status)
			}
		})
	}
}

// TestMapErrorBodyFraming: a body cut short names the body.
func TestMapErrorBodyFraming(t *testing.T) {
	got := mapError(errBodyFraming)
	want := errorDetail{Path: pathBody, Message: "is cut short or badly framed: fewer bytes than Content-Length, or a broken chunked encoding"}
	if len(got.Details) != 1 || got.Details[0] != want {
		t.Errorf("got details %+v, want [%+v]", got.Details, want)
	}
}
