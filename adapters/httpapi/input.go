package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// register registers an operation with checkInput as its last middleware,
// after any of its own (the lifecycle authorizes first: 403 before 400).
func register[I, O any](s *Server, op huma.Operation, handler func(context.Context, *I) (*O, error)) {
	op.Middlewares = append(op.Middlewares, s.checkInput)
	huma.Register(s.api, op, handler)
}

// checkInput holds the input rules every operation shares (docs/api.md,
// "Input validation"), checked before Huma reads the parameters and the body:
//
//   - the query string decodes, and each parameter the operation declares
//     is given at most once and, unless its schema allows "", with a
//     value (unknown parameters stay ignored);
//   - the body is read whole here: a body cut short or badly framed is a
//     400, one that stops arriving a 408, one over the limit a 413; a
//     non-empty body must be JSON (415) that checkJSONBody accepts.
//
// Huma then decodes the bytes read here, as application/json.
func (s *Server) checkInput(ctx huma.Context, next func(huma.Context)) {
	r, w := humago.Unwrap(ctx)
	op := ctx.Operation()
	if details := checkQuery(r.URL.RawQuery, op.Parameters); len(details) > 0 {
		s.writeError(w, r, badData(details))
		return
	}
	if op.RequestBody != nil {
		if err := s.readJSONBody(ctx, r, op); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	next(ctx)
}

// checkQuery checks a raw query string against the declared query
// parameters: malformed escapes anywhere, repeated or empty declared ones.
func checkQuery(rawQuery string, params []*huma.Param) []errorDetail {
	if rawQuery == "" {
		return nil
	}
	declared := map[string]*huma.Param{}
	for _, p := range params {
		if p.In == "query" {
			declared[p.Name] = p
		}
	}
	var details []errorDetail
	seen := map[string]int{}
	for pair := range strings.SplitSeq(rawQuery, "&") {
		if pair == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, keyErr := url.QueryUnescape(rawKey)
		_, valueErr := url.QueryUnescape(rawValue)
		name := key
		if keyErr != nil {
			name = rawKey
		}
		switch {
		case keyErr != nil || valueErr != nil:
			details = append(details, errorDetail{Path: cut(name), Message: "is not a valid query parameter: a % must start a %XX escape of two hex digits"})
			continue
		case strings.Contains(pair, ";"):
			details = append(details, errorDetail{Path: cut(name), Message: "is not a valid query parameter: ; is not a separator (write it %3B)"})
			continue
		}
		p := declared[key]
		if p == nil {
			continue // unknown parameters are ignored
		}
		seen[key]++
		if seen[key] == 2 {
			details = append(details, errorDetail{Path: key, Message: "is given more than once; give it once"})
		}
		if rawValue == "" && !allowsEmpty(p) {
			details = append(details, errorDetail{Path: key, Message: "needs a value: leave the parameter out instead of giving it empty"})
		}
	}
	return details
}

// allowsEmpty reports whether a parameter may be given with an empty
// value: a string the schema does not require to be non-empty (the free
// text query, where empty means no filter).
func allowsEmpty(p *huma.Param) bool {
	return p.Schema != nil && p.Schema.Type == huma.TypeString && (p.Schema.MinLength == nil || *p.Schema.MinLength == 0)
}

// cut keeps at most flagadmin.MaxQuotedInput characters of a caller's
// text used as a detail path, marking a cut with "…".
func cut(s string) string {
	n := 0
	for i := range s {
		if n == flagadmin.MaxQuotedInput {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// Errors of reading a body, mapped by toAPIError.
var (
	// errBodyFraming: the body is cut short (fewer bytes than Content-Length
	// before the client closed its side) or its chunked framing is broken.
	errBodyFraming = errors.New("the request body is cut short or badly framed")
	// errBodyTimeout: the body stopped arriving before the read deadline.
	errBodyTimeout = errors.New("the request body did not arrive in time")
)

// readJSONBody reads the body of op within its read deadline (Huma's
// BodyReadTimeout) and checks it, then hands the bytes to Huma as
// application/json.
func (s *Server) readJSONBody(ctx huma.Context, r *http.Request, op *huma.Operation) error {
	if op.BodyReadTimeout > 0 {
		_ = ctx.SetReadDeadline(time.Now().Add(op.BodyReadTimeout))
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			return mbe
		case errors.As(err, &ne) && ne.Timeout():
			return errBodyTimeout
		}
		return errBodyFraming
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if len(body) == 0 {
		if op.RequestBody.Required {
			return badData([]errorDetail{{Path: pathBody, Message: "is required: a JSON object"}})
		}
		return nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSONMediaType(ct) {
		return newAPIError(http.StatusUnsupportedMediaType, nameContentType, msgContentType)
	}
	r.Header.Set("Content-Type", "application/json")
	var schema *huma.Schema
	if mt := op.RequestBody.Content["application/json"]; mt != nil {
		schema = mt.Schema
	}
	if details := checkJSONBody(body, schema, s.api.OpenAPI().Components.Schemas); len(details) > 0 {
		return badData(details)
	}
	return nil
}

// isJSONMediaType reports whether a Content-Type names JSON:
// application/json or a +json type, with any parameters.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
