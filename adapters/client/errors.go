package client

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Error is an error answer of the server: its status and body
// ({id, name, message, details}). It unwraps to the domain's kind of the
// status, so errors.Is(err, flagadmin.ErrNotFound) and errors.As(err,
// &validationErr) work on it:
//
//	400        *flagadmin.ValidationError (errors.Is ErrValidation) with Details as its Fields
//	401        flagadmin.ErrAuthenticationRequired
//	403        flagadmin.ErrNoAccess
//	404        flagadmin.ErrNotFound
//	409        flagadmin.ErrConflict
//	503        flagadmin.ErrUnavailable
//
// Any other status maps by the error's name when it is one of the API's
// names (BadDataError, NotFoundError, ...), else to no kind (Unwrap
// returns nil) and the caller reads Status. A body that is not JSON (a
// proxy's HTML page) or is empty still maps by status, with the status text
// as Message.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// ID is the server's id of this error instance, to quote when reporting
	// it; empty when the body had none (Unleash omits it on some answers).
	ID string
	// Name is the error's name, such as NotFoundError; empty without one.
	Name string
	// Message says what went wrong.
	Message string
	// Details lists offending parameters or fields, when the server named
	// them. Unleash's paths such as "/query/type" are given as "type".
	Details []flagadmin.FieldError
	// RequestID is the X-Request-Id response header, when the server sent one.
	RequestID string

	kind       error
	retryAfter string
}

// Error returns "<status> <name>: <message> (error id <id>)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("flagadmin server: ")
	b.WriteString(strconv.Itoa(e.Status))
	if e.Name != "" {
		b.WriteString(" " + e.Name)
	}
	b.WriteString(": " + e.Message)
	if e.ID != "" {
		b.WriteString(" (error id " + e.ID + ")")
	}
	return b.String()
}

// Unwrap returns the domain's kind of the error (a *flagadmin.ValidationError
// for 400), or nil when the status has none.
func (e *Error) Unwrap() error { return e.kind }

// errorBody is the error body, read tolerantly: every field optional, extra
// fields (Unleash adds path, type, defaultHidden) ignored.
type errorBody struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Message string `json:"message"`
	Details []struct {
		Message string `json:"message"`
		Path    string `json:"path"`
	} `json:"details"`
}

// newError builds the Error of a response with status >= 300 and its body.
func newError(resp *http.Response, body []byte) *Error {
	e := &Error{
		Status:     resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		retryAfter: resp.Header.Get("Retry-After"),
	}
	var eb errorBody
	if isJSONType(resp.Header.Get("Content-Type")) && json.Unmarshal(body, &eb) == nil {
		e.ID, e.Name, e.Message = eb.ID, eb.Name, strings.TrimSpace(eb.Message)
		for _, d := range eb.Details {
			e.Details = append(e.Details, flagadmin.FieldError{Path: plainPath(d.Path), Message: d.Message})
		}
	}
	if e.Message == "" {
		e.Message = http.StatusText(e.Status)
		if e.Message == "" {
			e.Message = "status " + strconv.Itoa(e.Status)
		}
	}
	e.kind = kindOf(e)
	return e
}

// isJSONType reports whether a Content-Type names JSON. An absent one is
// tried as JSON too: some servers send error JSON without it.
func isJSONType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// kindOf maps an error answer to the domain's kind: by status, else by name.
func kindOf(e *Error) error {
	switch e.Status {
	case http.StatusBadRequest:
		return validationError(e)
	case http.StatusUnauthorized:
		return flagadmin.ErrAuthenticationRequired
	case http.StatusForbidden:
		return flagadmin.ErrNoAccess
	case http.StatusNotFound:
		return flagadmin.ErrNotFound
	case http.StatusConflict:
		return flagadmin.ErrConflict
	case http.StatusServiceUnavailable:
		return flagadmin.ErrUnavailable
	}
	switch e.Name {
	case "BadDataError", "ValidationError":
		return validationError(e)
	case "AuthenticationRequired", "UnauthorizedError":
		return flagadmin.ErrAuthenticationRequired
	case "NoAccessError", "PermissionError":
		return flagadmin.ErrNoAccess
	case "NotFoundError":
		return flagadmin.ErrNotFound
	case "ConflictError", "NameExistsError":
		return flagadmin.ErrConflict
	case "ServiceUnavailable":
		return flagadmin.ErrUnavailable
	}
	return nil
}

// validationError is the *flagadmin.ValidationError of a 400: its details,
// or the message when it has none.
func validationError(e *Error) *flagadmin.ValidationError {
	if len(e.Details) > 0 {
		return &flagadmin.ValidationError{Fields: e.Details}
	}
	return &flagadmin.ValidationError{Fields: []flagadmin.FieldError{{Message: e.Message}}}
}

// plainPath turns Unleash's JSON pointer paths ("/query/type", "/body/status")
// into the plain names the domain uses ("type", "status"); other paths are
// kept.
func plainPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return p
	}
	p = strings.TrimPrefix(p, "/")
	for _, loc := range []string{"query/", "body/", "params/", "path/"} {
		if rest, ok := strings.CutPrefix(p, loc); ok {
			p = rest
			break
		}
	}
	return strings.ReplaceAll(p, "/", ".")
}
