package httpapi

import (
	"bytes"
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// maxETagBody bounds the answer a GET may hold to get its ETag: a larger
// one is sent as it is written, without an ETag, so that memory stays
// bounded. (A search page holds at most 1,000 events; the project list,
// megabytes at 10,000 projects, comes with its ETag from the body cache,
// see projects.go.)
const maxETagBody = 4 << 20

// etag gives every complete 200 answer to a GET or HEAD an ETag, a strong
// validator over the exact bytes of its body (etagOf), and answers a
// request whose If-None-Match names it with 304 Not Modified and no body:
// a client polling an unchanged search result or project list gets a
// header, not the page again.
//
// The tag is computed from the body rather than from the store's change
// counter: it is exact for every answer whatever it depends on (the
// caller's visibility and favorites, the passing of time in the project
// list's staleness, the query), needs no reasoning about invalidation,
// and costs a hash of bytes the server produced anyway. A 304 still does
// the read, which the result cache answers when the data is unchanged. A
// handler that has its body's tag at hand (the cached project list) sets
// the ETag header itself; the body is then neither held nor hashed.
//
// Streaming answers (the export, the live stream, and a project list
// streamed without the body cache) get no ETag: their headers leave
// before their last byte is known.
func (s *Server) etag(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		ew := &etagWriter{ResponseWriter: w, ifNoneMatch: r.Header.Values("If-None-Match")}
		// A HEAD is answered as its GET, whose body the server then drops:
		// the same ETag, even from handlers that write no body for HEAD.
		get := r.WithContext(context.WithValue(r.Context(), etagKey{}, ew))
		get.Method = http.MethodGet
		next.ServeHTTP(ew, get)
		ew.finish()
	})
}

// etagOf is the ETag of a body: its 64-bit xxHash and its length, each
// in 16 hex digits (so every tag has the same size), quoted. It is a strong validator: two bodies with the same tag are the
// same bytes (barring a hash collision, which the length narrows further;
// the hash is not cryptographic, and a collision would only delay a
// client's refresh until the next change). xxHash is used rather than
// SHA-256 because it is about eight times faster (a 42 KB search page
// hashes in 5 µs instead of 37 µs), and the same in every process, so the
// servers behind one address give one tag.
func etagOf(body []byte) string {
	b := make([]byte, 0, 35)
	b = append(b, '"')
	b = appendHex(b, xxhash.Sum64(body), 16)
	b = append(b, '-')
	b = appendHex(b, uint64(len(body)), 16)
	return string(append(b, '"'))
}

// appendHex appends v in hex, zero-padded to digits.
func appendHex(b []byte, v uint64, digits int) []byte {
	const hex = "0123456789abcdef"
	for i := digits - 1; i >= 0; i-- {
		b = append(b, hex[v>>(4*uint(i))&0xf])
	}
	return b
}

// etagBuffers recycles the buffers answers are held in.
var etagBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledETagBuffer bounds the buffers kept for reuse.
const maxPooledETagBuffer = 1 << 20

// etagKey holds the request's *etagWriter in its context.
type etagKey struct{}

// streamedAnswer tells the ETag middleware that the answer of ctx's
// request is streamed: it is passed through as it is written, without an
// ETag.
func streamedAnswer(ctx context.Context) {
	if ew, ok := ctx.Value(etagKey{}).(*etagWriter); ok {
		ew.streamed = true
		if ew.status != 0 {
			ew.passThrough()
		}
	}
}

// etagWriter holds an answer until its handler returns, then sends it
// with its ETag, or 304. It gives up holding (passes everything through)
// at the first sign that the answer is not a complete 200 body: another
// status, a streaming content type or answer (streamedAnswer), a body over
// maxETagBody. An answer whose handler set its ETag passes through too,
// or becomes a 304.
type etagWriter struct {
	http.ResponseWriter
	ifNoneMatch []string
	status      int           // the status the handler wrote; 0 before
	through     bool          // passing through: the status was sent
	streamed    bool          // streamedAnswer was called
	discard     bool          // a 304 was sent for the handler's own ETag
	buf         *bytes.Buffer // from etagBuffers while holding; nil before the first byte
}

// WriteHeader decides whether to hold the answer.
func (w *etagWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	if status >= 100 && status < 200 {
		w.ResponseWriter.WriteHeader(status) // informational: not the answer
		return
	}
	w.status = status
	h := w.Header()
	switch tag := h.Get("ETag"); {
	case status == http.StatusOK && tag != "" && noneMatch(w.ifNoneMatch, tag):
		w.notModified()
		w.through, w.discard = true, true
	case status != http.StatusOK || tag != "" || w.streamed || streamingType(h.Get("Content-Type")):
		w.passThrough()
	}
}

// Write holds b, or passes it through.
func (w *etagWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case w.discard:
		return len(b), nil
	case w.through:
		return w.ResponseWriter.Write(b)
	case w.held()+len(b) > maxETagBody:
		w.passThrough()
		return w.ResponseWriter.Write(b)
	}
	if w.buf == nil {
		w.buf = etagBuffers.Get().(*bytes.Buffer)
	}
	return w.buf.Write(b)
}

// held is the size of the body held.
func (w *etagWriter) held() int {
	if w.buf == nil {
		return 0
	}
	return w.buf.Len()
}

// release gives the buffer back.
func (w *etagWriter) release() {
	if w.buf == nil {
		return
	}
	if w.buf.Cap() <= maxPooledETagBuffer {
		w.buf.Reset()
		etagBuffers.Put(w.buf)
	}
	w.buf = nil
}

// passThrough sends the status and what is held, and stops holding.
func (w *etagWriter) passThrough() {
	if w.through {
		return
	}
	w.through = true
	w.ResponseWriter.WriteHeader(w.status)
	if w.held() > 0 {
		_, _ = w.ResponseWriter.Write(w.buf.Bytes())
	}
	w.release()
}

// notModified sends 304 with the headers set so far (the server leaves
// out those of a body).
func (w *etagWriter) notModified() {
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(http.StatusNotModified)
}

// FlushError flushes an answer passing through, reporting a failure (a
// client gone); a held one is sent whole at the end anyway.
func (w *etagWriter) FlushError() error {
	if w.through && !w.discard {
		return http.NewResponseController(w.ResponseWriter).Flush()
	}
	return nil
}

// Flush is FlushError for http.Flusher.
func (w *etagWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *etagWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish sends a held answer with its ETag, or 304 when If-None-Match
// names it.
func (w *etagWriter) finish() {
	if w.through || w.status == 0 {
		return // passed through, or nothing written: the server answers 200 empty
	}
	defer w.release()
	var body []byte
	if w.buf != nil {
		body = w.buf.Bytes()
	}
	tag := etagOf(body)
	h := w.Header()
	h.Set("ETag", tag)
	if noneMatch(w.ifNoneMatch, tag) {
		w.notModified()
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.ResponseWriter.WriteHeader(http.StatusOK)
	_, _ = w.ResponseWriter.Write(body)
}

// streamingType reports whether a Content-Type is one of a streaming
// answer: the live stream's text/event-stream, the export's NDJSON and CSV.
func streamingType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case "text/event-stream", "application/x-ndjson", "text/csv":
		return true
	}
	return false
}

// noneMatch reports whether If-None-Match values name tag, comparing
// weakly as RFC 9110 §13.1.2 says (W/"x" names "x"); "*" names any.
func noneMatch(values []string, tag string) bool {
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			item = strings.TrimSpace(item)
			if item == "*" || strings.TrimPrefix(item, "W/") == tag {
				return true
			}
		}
	}
	return false
}
