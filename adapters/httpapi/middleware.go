package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// RequestIDHeader carries the request id: echoed when the client sends a
// usable one, generated otherwise, and logged with every line about the request.
const RequestIDHeader = "X-Request-Id"

// maxRequestIDLength bounds a client's request id.
const maxRequestIDLength = 128

type requestIDKey struct{}

// requestID returns the id of the request ctx belongs to, or "".
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// RequestID returns the request id of ctx, given by the API's handler or
// by RequestIDs; "" for none.
func RequestID(ctx context.Context) string { return requestID(ctx) }

// RequestIDs gives every request the id the API's handler gives its own,
// for a handler in front of the API that answers some requests elsewhere
// (a gateway forwarding them): the client's X-Request-Id when usable, else
// a new one, on the answer, in the context (RequestID, and the log line of
// an error written with Server.WriteError), and on the request itself, so
// that a server it is forwarded to gets the same id. The API's handler
// behind it takes that id as the client's.
func RequestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, id := withRequestID(w, r)
		r.Header.Set(RequestIDHeader, id)
		next.ServeHTTP(w, r)
	})
}

// withRequestID gives r its id: the client's X-Request-Id when usable,
// else a new one; the id goes on the answer and into r's context.
func withRequestID(w http.ResponseWriter, r *http.Request) (*http.Request, string) {
	id := r.Header.Get(RequestIDHeader)
	if !validRequestID(id) {
		id = newUUID()
	}
	w.Header().Set(RequestIDHeader, id)
	return r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)), id
}

// validRequestID accepts 1 to 128 letters, digits and - _ . : so a client's
// id cannot forge log lines or headers.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// responseRecorder remembers the status and size of a response.
type responseRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *responseRecorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *responseRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController (used by Huma for read deadlines)
// reach the underlying writer.
func (w *responseRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe gives every request an id (X-Request-Id) and writes one access
// log line when it ends: method, route pattern, path, status, bytes,
// duration and request id. Headers, and so the Authorization value, are
// never logged.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r, id := withRequestID(w, r)
		rec := &responseRecorder{ResponseWriter: w}
		route := s.routePattern(r)
		ctx := r.Context()
		defer func() {
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			s.log.LogAttrs(ctx, slog.LevelInfo, "request",
				slog.String("method", r.Method),
				slog.String("route", route),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", time.Since(start)),
				slog.String("request_id", id),
			)
		}()
		next.ServeHTTP(rec, r)
	})
}

// recoverPanics turns a panic into a 500 InternalError (when nothing was
// written yet) and logs it with its stack. http.ErrAbortHandler is passed on.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			err, ok := v.(error)
			if !ok {
				err = fmt.Errorf("%v", v)
			}
			s.log.ErrorContext(r.Context(), "panic while serving a request",
				slog.String("request_id", requestID(r.Context())), slog.Any("panic", err), slog.String("stack", string(debug.Stack())))
			if rec, ok := w.(*responseRecorder); ok && rec.status != 0 {
				return // the response has begun; nothing sensible can be added
			}
			s.writeError(w, r, errors.New("panic recovered"))
		}()
		next.ServeHTTP(w, r)
	})
}

// storageDeadline gives every request's context the storage deadline
// (Config.StorageTimeout), before authentication: the store calls of the
// request, the token check among them, end by then. A context that ends
// makes the store give up (ErrUnavailable) or the Service return the
// context's error; both answer 503 (toAPIError).
func (s *Server) storageDeadline(next http.Handler) http.Handler {
	if s.storageTimeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), undeadlinedKey{}, r.Context())
		ctx, cancel := context.WithTimeout(ctx, s.storageTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// undeadlinedKey holds the request's context as it was before
// storageDeadline gave it the storage deadline.
type undeadlinedKey struct{}

// streamContext returns the context of a streaming answer's storage work
// (the export): ctx's values without the request's storage deadline, which
// bounds a whole request and so would cut every export short; canceled
// when the client goes away. The store still bounds each of its
// operations (bunstore.WithTimeout: each batch of an export), so a stalled
// database still ends the stream. Call the cancel function when done.
func streamContext(ctx context.Context) (context.Context, context.CancelFunc) {
	request, ok := ctx.Value(undeadlinedKey{}).(context.Context)
	if !ok {
		return context.WithCancel(ctx)
	}
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(request, cancel)
	return out, func() { stop(); cancel() }
}

// errHeadersTooLarge: the request line and headers exceed the limit.
var errHeadersTooLarge = errors.New("the request line and headers are larger than the limit")

// limitRequest refuses a request whose request line and headers exceed the
// header limit with 400 BadDataError (below http.Server.MaxHeaderBytes, so
// this answer comes before Go's plain-text 431), refuses a body declared
// larger than the body limit with 413, and caps every other body, so
// reading past the limit fails with *http.MaxBytesError (also 413, see
// toAPIError).
func (s *Server) limitRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerBytes(r) > s.maxHeader {
			s.writeError(w, r, fmt.Errorf("%w of %d bytes", errHeadersTooLarge, s.maxHeader))
			return
		}
		if r.ContentLength > s.maxBody {
			s.writeError(w, r, &http.MaxBytesError{Limit: s.maxBody})
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

// headerBytes is about the size of r's request line and headers on the wire.
func headerBytes(r *http.Request) int64 {
	n := int64(len(r.Method) + len(r.RequestURI) + len(r.Proto) + len(r.Host) + 4)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}
