package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// The live stream (GET /api/admin/events/stream) is Server-Sent Events:
// the headers go out at once, then one SSE event per log event (id, event type, the
// Event JSON of the search's pages on one data line), a keep-alive
// comment when nothing else was sent for a while, and, when the server
// ends the stream, a last event "end" whose data says why. Its events come
// from the Config.Feed (one reader of the store per process).
//
// Besides the client going away, a stream ends when its token no longer
// authenticates (checked every Config.StreamTokenCheck against the
// storage, not the token cache), when the feed drops it for reading too
// slowly, and on EndStreams (server shutdown). Clients reconnect with
// Last-Event-ID (browsers do it by themselves).

// Defaults of the stream's Config fields.
const (
	// DefaultMaxStreams is the number of streams a Server holds at most
	// when Config.MaxStreams is 0.
	DefaultMaxStreams = 1000
	// DefaultStreamKeepAlive is the keep-alive interval when
	// Config.StreamKeepAlive is 0.
	DefaultStreamKeepAlive = 15 * time.Second
	// DefaultStreamTokenCheck is the token re-check interval when
	// Config.StreamTokenCheck is 0.
	DefaultStreamTokenCheck = 5 * time.Second
)

const (
	// streamStallTimeout ends a stream whose client has taken no bytes for
	// this long (each write moves the deadline on).
	streamStallTimeout = 30 * time.Second
	// streamRetryMillis is the reconnection delay the stream suggests to
	// EventSource clients (the SSE retry field).
	streamRetryMillis = 1000
)

// Reasons a stream ends, given in the data of its "end" event.
var (
	errStreamShutdown = errors.New("the server is shutting down; reconnect with Last-Event-ID")
	errStreamAuth     = errors.New("the API token no longer authenticates")
)

// streamEventsInput are the parameters of GET /api/admin/events/stream.
type streamEventsInput struct {
	LogFilters
	AfterID     string `query:"afterId" minLength:"1" doc:"Replay first every matching event whose id is greater than this non-negative integer, then follow." example:"1000"`
	LastEventID string `header:"Last-Event-ID" doc:"As afterId (browsers send it when they reconnect); it wins over afterId."`
	Limit       string `query:"limit" minLength:"1" doc:"Not allowed (400): a stream has no pages."`
	Offset      string `query:"offset" minLength:"1" doc:"Not allowed (400): a stream has no pages."`
	After       string `query:"after" minLength:"1" doc:"Not allowed (400): cursors are for the search's pages; resume a stream with afterId or Last-Event-ID."`
}

// streamParams are the parameters as the domain takes them.
func (in *streamEventsInput) streamParams() flagadmin.EventStreamParams {
	return flagadmin.EventStreamParams{EventSearchParams: in.params(in.Limit, in.Offset, in.After), AfterID: in.AfterID, LastEventID: in.LastEventID}
}

type streamEventsOutput struct {
	Body func(huma.Context)
}

func (s *Server) registerStream() {
	op := s.operation("streamEvents", http.MethodGet, "/api/admin/events/stream", tagEvents,
		"Stream events (Server-Sent Events)",
		"Follows the event log live: every event matching the filters that the caller may see (the same "+
			"filters, validation and visibility as the export), in id order, each once, with no gap. With "+
			"Last-Event-ID or afterId it first replays the matching events with a greater id; without, it "+
			"starts with the events recorded after it opened. Each event is `id: <id>`, `event: <type>`, "+
			"`data: <Event JSON>` and a blank line; a `: keep-alive` comment comes at least every 15 s. The "+
			"token is re-checked every 5 s: the stream ends when it no longer authenticates. When the server "+
			"ends a stream (shutdown, a client too slow to keep up, the token) it sends a last event `end` "+
			"whose data is {\"reason\": \"...\"}; reconnect with Last-Event-ID. The stream begins with a "+
			"`retry:` field and an `id:` of its start position (no data). Beyond the server's limit of "+
			"open streams: 503 with Retry-After.",
		"The stream.",
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusInternalServerError, http.StatusServiceUnavailable)
	op.SkipValidateParams = true // the domain validates, naming each parameter
	registry := s.api.OpenAPI().Components.Schemas
	op.Responses["200"].Content = map[string]*huma.MediaType{
		// The data line of each event is one Event JSON.
		"text/event-stream": {Schema: registry.Schema(reflect.TypeFor[flagadmin.Event](), true, "")},
	}
	register(s, op, s.streamEvents) // checkInput: each parameter once, with a value
}

func (s *Server) streamEvents(ctx context.Context, in *streamEventsInput) (*streamEventsOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.svc.StreamEvents(ctx, p, in.streamParams())
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	if _, err := st.Start(ctx, s.feed); err != nil { // the storage is reachable: or 503 now
		return nil, s.fail(ctx, err)
	}
	if s.streamsCtx.Err() != nil {
		return nil, streamsUnavailable("The server is shutting down.")
	}
	if n := s.streams.Add(1); n > int64(s.maxStreams) {
		s.streams.Add(-1)
		return nil, streamsUnavailable("The server holds its maximum of " + strconv.Itoa(s.maxStreams) + " open streams. Try again later.")
	}
	return &streamEventsOutput{Body: func(hctx huma.Context) {
		defer s.streams.Add(-1)
		r, w := humago.Unwrap(hctx)
		s.serveStream(w, r, st)
	}}, nil
}

// streamsUnavailable is the 503 of a stream the server cannot open.
func streamsUnavailable(msg string) *apiError {
	e := newAPIError(http.StatusServiceUnavailable, nameServiceUnavailable, msg)
	e.headers = http.Header{"Retry-After": {retryAfterSeconds}}
	return e
}

// OpenStreams returns the number of live streams the server holds now.
func (s *Server) OpenStreams() int64 { return s.streams.Load() }

// EndStreams ends every live stream with an "end" event and refuses new
// ones (503): call it when the server shuts down, since
// http.Server.Shutdown waits for handlers, and a stream's handler would
// not return by itself (register it with http.Server.RegisterOnShutdown).
func (s *Server) EndStreams() { s.endStreams() }

// sseWriter writes a stream's bytes, one writer at a time (events, and the
// keep-alives of another goroutine), each flushed to the client at once.
type sseWriter struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	blocks *sseBlocks
}

func (x *sseWriter) write(b []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	_ = x.rc.SetWriteDeadline(time.Now().Add(streamStallTimeout))
	if _, err := x.w.Write(b); err != nil {
		return err
	}
	return x.rc.Flush()
}

// events writes a batch of events, one SSE event each, then flushes:
// through the connection's own buffer, with no copy of the batch.
func (x *sseWriter) events(events []flagadmin.Event) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	_ = x.rc.SetWriteDeadline(time.Now().Add(streamStallTimeout))
	for i := range events {
		if _, err := x.w.Write(x.blocks.block(&events[i])); err != nil {
			return err
		}
	}
	return x.rc.Flush()
}

// sseBlocks keeps the SSE blocks of the latest events: every stream that
// shows an event sends the same bytes, encoded once.
type sseBlocks struct {
	mu     sync.Mutex
	blocks map[int64][]byte
	ring   []int64 // ids in the order they were added, for eviction
	next   int
}

// sseBlocksKept is how many events' blocks are kept.
const sseBlocksKept = 4096

func newSSEBlocks() *sseBlocks {
	return &sseBlocks{blocks: make(map[int64][]byte, sseBlocksKept), ring: make([]int64, 0, sseBlocksKept)}
}

// block returns the SSE block of e: id, event type, the Event JSON of the
// search's pages as data. The bytes are shared and must not be changed.
func (c *sseBlocks) block(e *flagadmin.Event) []byte {
	c.mu.Lock()
	b, ok := c.blocks[e.ID]
	c.mu.Unlock()
	if ok {
		return b
	}
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, e.ID, 10)
	b = append(b, "\nevent: "...)
	b = append(b, e.Type...)
	b = append(b, "\ndata: "...)
	b = appendEvent(b, e)
	b = append(b, "\n\n"...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.blocks[e.ID]; !ok {
		if len(c.ring) < sseBlocksKept {
			c.ring = append(c.ring, e.ID)
		} else {
			delete(c.blocks, c.ring[c.next])
			c.ring[c.next] = e.ID
			c.next = (c.next + 1) % sseBlocksKept
		}
		c.blocks[e.ID] = b
	}
	return b
}

// keepAlive writes the keep-alive comment.
func (x *sseWriter) keepAlive() error { return x.write([]byte(": keep-alive\n\n")) }

// serveStream sends the headers, then runs st until it ends.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, st *flagadmin.EventStream) {
	x := &sseWriter{w: w, rc: http.NewResponseController(w), blocks: s.sseBlocks}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies such as nginx: do not buffer
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	// The start position as an event id without data: an EventSource
	// takes it as its last event id, so a reconnection before the first
	// event resumes from there.
	start, _ := st.Start(r.Context(), s.feed) // fixed by streamEvents
	if err := x.write([]byte("retry: " + strconv.Itoa(streamRetryMillis) + "\nid: " + strconv.FormatInt(start, 10) + "\n\n")); err != nil {
		return
	}

	base, cancelBase := streamContext(r.Context())
	defer cancelBase()
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	stopOnShutdown := context.AfterFunc(s.streamsCtx, func() { cancel(errStreamShutdown) })
	defer stopOnShutdown()

	// The keep-alives and the token checks.
	var wg sync.WaitGroup
	wg.Go(func() {
		keep := time.NewTicker(s.keepAlive)
		defer keep.Stop()
		check := time.NewTicker(s.tokenCheck)
		defer check.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-keep.C:
				if err := x.keepAlive(); err != nil {
					cancel(err)
					return
				}
			case <-check.C:
				if _, err := s.authenticateRequest(flagadmin.WithCurrentReads(ctx), r); err != nil {
					if errors.Is(err, flagadmin.ErrAuthenticationRequired) || errors.Is(err, flagadmin.ErrNoAccess) {
						cancel(errStreamAuth)
						return
					}
					// The storage could not tell: check again next time.
				}
			}
		}
	})
	err := st.Run(ctx, s.feed, x.events)
	cancel(err)
	wg.Wait()

	if undeadlined(r.Context()).Err() != nil {
		return // the client went away
	}
	reason := context.Cause(ctx)
	switch {
	case errors.Is(reason, errStreamShutdown), errors.Is(reason, errStreamAuth), errors.Is(reason, flagadmin.ErrStreamEnded):
	default:
		// A storage failure or a write error: logged, not shown.
		_ = s.fail(r.Context(), reason)
		reason = errors.New("the stream failed; reconnect with Last-Event-ID")
	}
	data, _ := json.Marshal(map[string]string{"reason": reason.Error()})
	_ = x.write(append(append([]byte("event: end\ndata: "), data...), "\n\n"...))
}

// undeadlined is the request's context ctx without the storage deadline
// (storageDeadline), which a stream outlives: it ends when the client goes
// away.
func undeadlined(ctx context.Context) context.Context {
	if request, ok := ctx.Value(undeadlinedKey{}).(context.Context); ok {
		return request
	}
	return ctx
}
