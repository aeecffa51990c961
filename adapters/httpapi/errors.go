package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/upstream"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Error names of the API, one per status (docs/api.md, "Errors").
const (
	nameBadData        = "BadDataError"
	nameAuthentication = "AuthenticationRequired"
	nameNoAccess       = "NoAccessError"
	nameNotFound       = "NotFoundError"
	// nameMethodNotAllowed is the 405 of the paths that only serve reads
	// (the docs page; the metrics, through WriteError).
	nameMethodNotAllowed   = "MethodNotAllowedError"
	nameConflict           = "ConflictError"
	nameReadOnly           = "ReadOnlyError"
	nameContentTooLarge    = "ContentTooLarge"
	nameContentType        = "ContentTypeError"
	nameRequestTimeout     = "RequestTimeout"
	nameInternal           = "InternalError"
	nameServiceUnavailable = "ServiceUnavailable"
	nameBadGateway         = "BadGatewayError"
	nameGatewayTimeout     = "GatewayTimeout"
)

// retryAfterSeconds is the Retry-After value of a 503 answer.
const retryAfterSeconds = "5"

// Fixed messages of the errors whose cause must not reach the caller.
const (
	msgInternal     = "An unexpected error occurred. Quote the error id when you report it."
	msgUnavailable  = "The storage is unavailable or did not answer in time. Try again later."
	msgConflict     = "The change conflicts with existing data."
	msgBadData      = "Request validation failed"
	msgContentType  = "The request body must be JSON (Content-Type application/json)."
	msgTimeout      = "The request body did not arrive in time."
	msgBadGateway   = "The upstream server could not be reached or did not answer properly. Try again later."
	msgGateway504   = "The upstream server did not answer in time. Try again later."
	msgUpstreamLoop = "The request came back to the flagadmin server that forwarded it (a forwarding loop): " +
		"its upstream leads back to itself. Set its upstream (--upstream) to Unleash's address."
)

// apiError is the body of every error response: {id, name, message,
// details?}, with the status and headers it is sent with. It
// implements huma.StatusError and huma.HeadersError, so handlers return it
// and Huma writes it; the middleware writes it with writeError.
type apiError struct {
	status  int
	headers http.Header

	ID      string        `json:"id"`
	Name    string        `json:"name"`
	Message string        `json:"message"`
	Details []errorDetail `json:"details,omitempty"`
}

// errorDetail names one offending parameter or body field.
type errorDetail struct {
	Message string `json:"message"`
	Path    string `json:"path,omitempty"`
}

// Error returns the name and message.
func (e *apiError) Error() string { return e.Name + ": " + e.Message }

// GetStatus returns the HTTP status the error is sent with.
func (e *apiError) GetStatus() int { return e.status }

// GetHeaders returns the headers the error is sent with (Retry-After on 503).
func (e *apiError) GetHeaders() http.Header { return e.headers }

// humaError is an error Huma itself reports through huma.NewError: a status
// with Huma's message and details, such as a 422 for a body that does not
// match its schema or a 413 for a body over the limit.
type humaError struct {
	status int
	msg    string
	errs   []error
}

func (e *humaError) Error() string   { return e.msg }
func (e *humaError) Unwrap() []error { return e.errs }

// installErrorModel replaces huma.NewError, once per process, so every error
// Huma produces (validation, body parsing, body size) is built by
// toAPIError and has the same body as the errors of the handlers. Huma keeps
// this hook in a package variable; the replacement is the same for every
// Server and does not depend on one, so New can install it safely. It must
// run before the first huma.Register, which builds the error schema from it.
var installErrorModel = sync.OnceFunc(func() {
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		return toAPIError(&humaError{status: status, msg: msg, errs: errs})
	}
})

// toAPIError is the one mapping from an error to the status and body of the
// response: domain error kinds, the body limit and body reading, and Huma's
// own errors. The cause of a 5xx never reaches the body; the caller logs it
// (Server.fail). Every body it returns fits maxErrorBody.
func toAPIError(err error) *apiError {
	e := mapError(err)
	e.bound()
	return e
}

// mapError answers err with the rule of the first error kind it is (nil,
// or none of them: a 500).
func mapError(err error) *apiError {
	if err == nil {
		return internalError(err)
	}
	for _, rule := range errorRules {
		if e := rule(err); e != nil {
			return e
		}
	}
	return internalError(err)
}

// errorRule answers an error of its kind; nil when err is not of it.
type errorRule func(err error) *apiError

// errorRules are the error kinds and their answers, the first that matches
// wins. The order matters where an error is of several kinds: an upstream
// loop is also a bad gateway; an upstream that failed (502) or timed out
// (504) is so whatever storage or context error it also wraps.
var errorRules = []errorRule{
	as(func(ae *apiError) *apiError { return ae }),
	as(func(mbe *http.MaxBytesError) *apiError {
		return newAPIError(http.StatusRequestEntityTooLarge, nameContentTooLarge,
			fmt.Sprintf("The request body is larger than the limit of %d bytes.", mbe.Limit))
	}),
	is(errBodyFraming, func(error) *apiError {
		return badData([]errorDetail{{Path: pathBody, Message: "is cut short or badly framed: fewer bytes than Content-Length, or a broken chunked encoding"}})
	}),
	is(errBodyTimeout, fixedError(http.StatusRequestTimeout, nameRequestTimeout, msgTimeout)),
	is(errHeadersTooLarge, badDataOf),
	as(func(ve *flagadmin.ValidationError) *apiError { return badData(fieldDetails(ve.Fields)) }),
	is(flagadmin.ErrValidation, badDataOf),
	is(flagadmin.ErrAuthenticationRequired, sayingError(http.StatusUnauthorized, nameAuthentication)),
	is(flagadmin.ErrNoAccess, sayingError(http.StatusForbidden, nameNoAccess)),
	is(flagadmin.ErrNotFound, sayingError(http.StatusNotFound, nameNotFound)),
	// A server that follows Unleash, with no upstream: the message names
	// the source, whose URL carries no credentials.
	as(func(ro *flagadmin.ReadOnlyError) *apiError {
		return newAPIError(http.StatusConflict, nameReadOnly, "This flagadmin keeps a read-only copy of the Unleash database "+
			ro.Source+" (it follows it): make the change in Unleash.")
	}),
	as(func(lr *vlog.RefusedError) *apiError {
		return newAPIError(http.StatusConflict, nameConflict, lr.Error())
	}),
	is(flagadmin.ErrConflict, fixedError(http.StatusConflict, nameConflict, msgConflict)),
	is(upstream.ErrLoop, fixedError(http.StatusBadGateway, nameBadGateway, msgUpstreamLoop)),
	is(upstream.ErrBadGateway, fixedError(http.StatusBadGateway, nameBadGateway, msgBadGateway)),
	is(upstream.ErrTimeout, fixedError(http.StatusGatewayTimeout, nameGatewayTimeout, msgGateway504)),
	// The storage did not answer in time, or the request's context ended
	// while it waited (the client went away: the log says so).
	is(flagadmin.ErrUnavailable, unavailableError),
	is(context.DeadlineExceeded, unavailableError),
	is(context.Canceled, unavailableError),
	// A read deadline on the client's connection passed: its request body
	// stopped arriving (a gateway forwarding it says so).
	is(os.ErrDeadlineExceeded, fixedError(http.StatusRequestTimeout, nameRequestTimeout, msgTimeout)),
	as(fromHuma),
}

// is is the rule of the errors that are kind (errors.Is).
func is(kind error, answer func(err error) *apiError) errorRule {
	return func(err error) *apiError {
		if errors.Is(err, kind) {
			return answer(err)
		}
		return nil
	}
}

// as is the rule of the errors of type T (errors.As), answered from the
// one found.
func as[T error](answer func(T) *apiError) errorRule {
	return func(err error) *apiError {
		var target T
		if errors.As(err, &target) {
			return answer(target)
		}
		return nil
	}
}

// fixedError answers with a status, a name and a fixed message: the cause
// is not the caller's to read.
func fixedError(status int, name, message string) func(error) *apiError {
	return func(error) *apiError { return newAPIError(status, name, message) }
}

// sayingError answers with a status and a name, and the error's own
// message, which the domain writes for the caller.
func sayingError(status int, name string) func(error) *apiError {
	return func(err error) *apiError { return newAPIError(status, name, err.Error()) }
}

// badDataOf is a 400 whose one detail is the error's message.
func badDataOf(err error) *apiError { return badData([]errorDetail{{Message: err.Error()}}) }

// internalError is a 500; its cause is logged, never shown.
func internalError(error) *apiError {
	return newAPIError(http.StatusInternalServerError, nameInternal, msgInternal)
}

// unavailableError is a 503, to be tried again after Retry-After.
func unavailableError(error) *apiError {
	e := newAPIError(http.StatusServiceUnavailable, nameServiceUnavailable, msgUnavailable)
	e.headers = http.Header{"Retry-After": {retryAfterSeconds}}
	return e
}

// fromHuma maps an error Huma reports. Its 422 (schema validation) is a 400
// BadDataError like any other malformed input.
func fromHuma(he *humaError) *apiError {
	switch he.status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return badData(humaDetails(he))
	case http.StatusUnsupportedMediaType:
		return newAPIError(he.status, nameContentType, msgContentType)
	case http.StatusRequestTimeout:
		return newAPIError(he.status, nameRequestTimeout, msgTimeout)
	case http.StatusNotFound:
		return newAPIError(he.status, nameNotFound, "The resource does not exist.")
	case http.StatusRequestEntityTooLarge:
		return newAPIError(he.status, nameContentTooLarge, "The request body is too large.")
	case 0, http.StatusInternalServerError:
		return newAPIError(http.StatusInternalServerError, nameInternal, msgInternal)
	}
	if he.status >= 500 {
		return newAPIError(he.status, nameInternal, msgInternal)
	}
	// Any other client error Huma may raise is a malformed request: the
	// names of statusNames are the only ones this API answers.
	return badData(humaDetails(he))
}

// humaDetails turns Huma's error details into ours: its locations such as
// "body.status", "query.limit" or "path.id" become the plain names "status",
// "limit", "id"; a missing required property is named by its own path.
func humaDetails(he *humaError) []errorDetail {
	var out []errorDetail
	for _, err := range he.errs {
		if err == nil {
			continue
		}
		var d huma.ErrorDetailer
		if !errors.As(err, &d) {
			out = append(out, errorDetail{Message: err.Error()})
			continue
		}
		detail := d.ErrorDetail()
		path := plainPath(detail.Location)
		if strings.HasPrefix(detail.Message, "json: ") || strings.HasPrefix(detail.Message, "unexpected end of JSON") {
			// A decoder's words (checkJSONBody should have answered first).
			detail.Message = "does not match the body's schema"
			if path == "" {
				path = pathBody
			}
		}
		var missing string
		if _, err := fmt.Sscanf(detail.Message, "expected required property %s to be present", &missing); err == nil && missing != "" {
			path = joinPath(path, missing)
		}
		out = append(out, errorDetail{Path: path, Message: detail.Message})
	}
	if len(out) == 0 && he.msg != "" {
		out = append(out, errorDetail{Message: he.msg})
	}
	return out
}

// plainPath strips Huma's location prefix (body, query, path, header) from a
// location.
func plainPath(location string) string {
	for _, prefix := range []string{"body", "query", "path", "header", "cookie"} {
		if location == prefix {
			return ""
		}
		if rest, ok := strings.CutPrefix(location, prefix+"."); ok {
			return rest
		}
		if rest, ok := strings.CutPrefix(location, prefix+"["); ok {
			return "[" + rest
		}
	}
	return location
}

func joinPath(base, field string) string {
	if base == "" {
		return field
	}
	return base + "." + field
}

// fieldDetails turns the domain's field errors into details.
func fieldDetails(fields []flagadmin.FieldError) []errorDetail {
	out := make([]errorDetail, len(fields))
	for i, f := range fields {
		out[i] = errorDetail{Path: f.Path, Message: f.Message}
	}
	return out
}

// badData returns a 400 BadDataError whose message summarises the details.
func badData(details []errorDetail) *apiError {
	if len(details) == 0 {
		details = []errorDetail{{Message: "the request is malformed"}}
	}
	parts := make([]string, len(details))
	for i, d := range details {
		parts[i] = d.Message
		if d.Path != "" {
			parts[i] = d.Path + ": " + d.Message
		}
	}
	e := newAPIError(http.StatusBadRequest, nameBadData, msgBadData+": "+strings.Join(parts, "; "))
	e.Details = details
	return e
}

func newAPIError(status int, name, message string) *apiError {
	return &apiError{status: status, ID: newUUID(), Name: name, Message: message}
}

// fail maps err to its response (toAPIError) and logs the cause of every
// 5xx with the request id and the error id, since the body never shows it.
// This is the one log line of a failure: stores return their driver detail
// in the error, shown by a slog.LogValuer in its chain (as "cause"), and
// do not log it themselves.
func (s *Server) fail(ctx context.Context, err error) *apiError {
	e := toAPIError(err)
	if e.status < 500 {
		return e
	}
	attrs := []any{slog.String("request_id", requestID(ctx)), slog.String("error_id", e.ID), slog.Int("status", e.status), slog.String("error", err.Error())}
	var detail slog.LogValuer
	if errors.As(err, &detail) {
		attrs = append(attrs, slog.Any("cause", detail))
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		// The client went away (the server cancels the request's context
		// when its connection closes): nothing failed on our side.
		s.log.InfoContext(ctx, "request canceled by the client", attrs...)
	case e.status == http.StatusServiceUnavailable:
		s.log.WarnContext(ctx, "storage unavailable", attrs...)
	default:
		s.log.ErrorContext(ctx, "request failed", attrs...)
	}
	return e
}

// WriteError writes the error response of err, mapped as every error of
// the API is (status, JSON body {id, name, message, details?}, headers such as
// Retry-After; the cause of a 5xx logged, never shown). It is for a
// handler in front of the API that answers some requests itself, such as
// a gateway whose upstream failed (upstream.ErrBadGateway,
// upstream.ErrTimeout).
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeError(w, r, err)
}

// writeError writes the response of err outside Huma (middleware, unknown
// paths, readiness).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.fail(r.Context(), err)
	for k, v := range e.headers {
		w.Header()[k] = v
	}
	writeJSON(w, e.status, e)
}

// statusNames are the error names of the API, by status.
var statusNames = map[int]string{
	http.StatusBadRequest:            nameBadData,
	http.StatusUnauthorized:          nameAuthentication,
	http.StatusForbidden:             nameNoAccess,
	http.StatusNotFound:              nameNotFound,
	http.StatusMethodNotAllowed:      nameMethodNotAllowed,
	http.StatusRequestTimeout:        nameRequestTimeout,
	http.StatusConflict:              nameConflict,
	http.StatusRequestEntityTooLarge: nameContentTooLarge,
	http.StatusUnsupportedMediaType:  nameContentType,
	http.StatusInternalServerError:   nameInternal,
	http.StatusServiceUnavailable:    nameServiceUnavailable,
}

// WriteStatus writes the error response of status with message, in the
// body of every error of the API ({id, name, message}, the name of the
// status), through the one mapping of errors to responses (and its log
// line for a 5xx). It is for handlers served beside the API, such as the
// metrics (cmd/flagadmin wires it as their metrics.ErrorWriter). A status
// without a name of its own is answered 500.
func (s *Server) WriteStatus(w http.ResponseWriter, r *http.Request, status int, message string) {
	name, ok := statusNames[status]
	if !ok {
		status, name, message = http.StatusInternalServerError, nameInternal, msgInternal
	}
	s.writeError(w, r, newAPIError(status, name, message))
}

// writeJSON writes v as a JSON response, encoded like Huma encodes bodies.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// maxErrorBody bounds the JSON of an error body, newline included, under
// 4 KiB.
const maxErrorBody = 4000

// Bounds of the texts of an error body, in characters, before its encoded
// size is measured.
const (
	maxMessageChars = 600
	maxPathChars    = 120
)

// bound makes the body fit maxErrorBody: messages and paths are cut to
// their bounds; then the details that do not fit are dropped (a last one
// says how many), then messages are cut further, until the encoding fits.
// Messages quote at most 100 characters of input, so this only acts on
// errors naming many offending parameters or values.
func (e *apiError) bound() {
	e.Message = cutChars(e.Message, maxMessageChars)
	for i := range e.Details {
		e.Details[i].Message = cutChars(e.Details[i].Message, maxMessageChars)
		e.Details[i].Path = cutChars(e.Details[i].Path, maxPathChars)
	}
	if encodedSize(e) <= maxErrorBody {
		return
	}
	if len(e.Details) > 1 {
		details := e.Details
		e.Details = nil
		budget := maxErrorBody - encodedSize(e) - len(`,"details":[]`) - 80 // 80: the count of dropped ones
		kept := 0
		for _, d := range details {
			b, _ := json.Marshal(d)
			if budget -= len(b) + 1; budget < 0 && kept > 0 {
				break
			}
			kept++
		}
		e.Details = details[:kept]
		if dropped := len(details) - kept; dropped > 0 {
			e.Details = append(e.Details, errorDetail{Message: fmt.Sprintf("%d more problems are not shown", dropped)})
		}
	}
	for range 32 { // each round halves a text; a few rounds always suffice
		if encodedSize(e) <= maxErrorBody {
			return
		}
		if len(e.Details) > 0 && utf8.RuneCountInString(e.Details[0].Message) > 80 {
			e.Details[0].Message = cutChars(e.Details[0].Message, utf8.RuneCountInString(e.Details[0].Message)/2)
			continue
		}
		e.Message = cutChars(e.Message, utf8.RuneCountInString(e.Message)/2)
	}
}

// encodedSize is the size of e as writeJSON writes it.
func encodedSize(e *apiError) int {
	b, _ := json.Marshal(e)
	return len(b) + 1
}

// cutChars keeps the first n characters of s, marking a cut with "…".
func cutChars(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + "…"
		}
		count++
	}
	return s
}
