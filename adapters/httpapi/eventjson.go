package httpapi

import (
	"net/http"
	"reflect"
	"strconv"
	"sync"

	"github.com/danielgtaylor/huma/v2"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// The two event searches write their bodies with the hand-written encoder
// of eventencode.go, not through Huma's reflection: a page of events is
// most of the server's output, and encoding/json re-encoded and
// re-compacted every event. The bytes are those Huma wrote before:
// encoding/json with HTML escaping off, ending in a newline.

// maxPooledBuffer bounds the buffers kept for reuse; a larger one (a page
// of 1,000 events with big payloads) is left to the garbage collector.
const maxPooledBuffer = 1 << 20

var bufferPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 64<<10)
	return &b
}}

func getBuffer() *[]byte { return bufferPool.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		return
	}
	*b = (*b)[:0]
	bufferPool.Put(b)
}

// appendSearchEventsBody appends the body of GET /api/admin/search/events,
// {"events":[...],"total":N} (eventSearchResponseSchema), and a newline.
func appendSearchEventsBody(b []byte, page flagadmin.EventPage) []byte {
	b = append(b, `{"events":`...)
	b = appendEvents(b, page.Events)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(page.Total), 10)
	return append(b, "}\n"...)
}

// appendDeprecatedSearchBody appends the body of POST
// /api/admin/events/search, {"version":1,"events":[...],"totalEvents":N}
// (eventsSchema), and a newline.
func appendDeprecatedSearchBody(b []byte, page flagadmin.EventPage) []byte {
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, flagadmin.DeprecatedSearchVersion, 10)
	b = append(b, `,"events":`...)
	b = appendEvents(b, page.Events)
	b = append(b, `,"totalEvents":`...)
	b = strconv.AppendInt(b, int64(page.Total), 10)
	return append(b, "}\n"...)
}

// encodedBody encodes page with appendBody into a pooled buffer and returns
// the Huma body that writes it with status 200.
func (s *Server) encodedBody(page flagadmin.EventPage, appendBody func([]byte, flagadmin.EventPage) []byte) func(huma.Context) {
	buf := getBuffer()
	*buf = appendBody(*buf, page)
	return func(ctx huma.Context) {
		defer putBuffer(buf)
		// The same content negotiation as Huma's: this API has only JSON
		// formats and falls back to the default, so Negotiate gives one of
		// them ("application/json", or "json" when asked for).
		ct, err := s.api.Negotiate(ctx.Header("Accept"))
		if err != nil {
			ct = "application/json"
		}
		ctx.SetHeader("Content-Type", ct)
		ctx.SetStatus(http.StatusOK)
		// A failed write means the client went away; the access log shows
		// the bytes written.
		_, _ = ctx.BodyWriter().Write(*buf)
	}
}

// documentJSONBody documents the 200 response of op as JSON of type T, the
// schema Huma derives for a Body field of type T. An operation whose Body is
// a function gets no response schema from Huma.
func documentJSONBody[T any](s *Server, op *huma.Operation) {
	registry := s.api.OpenAPI().Components.Schemas
	schema := registry.Schema(reflect.TypeFor[T](), true, "")
	op.Responses["200"].Content = map[string]*huma.MediaType{"application/json": {Schema: schema}}
}
