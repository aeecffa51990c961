package flagadmin

import (
	"context"
	"errors"
)

// The live stream of the event log (GET /api/admin/events/stream, Server-Sent
// Events): the export's filters and visibility, a resume point,
// then events as they are recorded.

// EventStreamParams are the raw parameters of a live stream: the search's
// filters and the two ways to give a resume point. Every one is optional;
// the search's Offset, Limit and After must be empty.
type EventStreamParams struct {
	EventSearchParams
	// AfterID (query parameter afterId): replay the events with a greater
	// id first. A non-negative integer.
	AfterID string
	// LastEventID (header Last-Event-ID, which browsers resend when they
	// reconnect): the same as AfterID, and it wins over it, being the
	// newer of the two on a reconnection.
	LastEventID string
}

// EventStream is a live stream ready to run: its parameters validated and
// the caller's visibility applied. Service.StreamEvents returns it.
type EventStream struct {
	// Query selects the events (filters and visibility; no paging).
	Query EventQuery
	// AfterID is the resume point when Resume is set: the stream first
	// replays the matching events with a greater id.
	AfterID int64
	// Resume is set when the caller gave a resume point; without one the
	// stream starts with the events recorded after it opened.
	Resume bool
}

// EventFeed is the port of a live stream's source: it delivers, in id
// order and once each, the events a query matches, first those recorded
// before the call (from a resume point) and then those recorded while it
// runs. adapters/eventfeed implements it with one reader of the store per
// process.
type EventFeed interface {
	// LastEventID returns the id of the newest event recorded, 0 for none:
	// where a stream without a resume point starts.
	LastEventID(ctx context.Context) (int64, error)
	// Follow calls fn with every event q matches (EventQuery.Matches)
	// with an id greater than afterID, id ascending, each once, with no
	// gap, until ctx ends (then it returns ctx's error), fn fails (its
	// error), or the feed stops delivering to this caller (an error of
	// kind ErrStreamEnded). fn gets the events in batches of those at
	// hand (so a stream can send them in one write); the slice and its
	// events are only lent for the call, and shared with other callers.
	Follow(ctx context.Context, q EventQuery, afterID int64, fn func([]Event) error) error
}

// ErrStreamEnded is the kind of the errors with which an EventFeed ends a
// stream that it stops serving: a reader too slow to keep up, a feed
// shutting down. The client should reconnect with its last event id.
var ErrStreamEnded = errors.New("stream ended")

// ParseEventStream validates the parameters of a live stream: the filters
// as ParseEventExport does (limit, offset and after refused), and the
// resume point, each of AfterID and LastEventID a non-negative integer.
// It returns the query (without paging), the resume id and whether one
// was given, or a *ValidationError naming every offending parameter.
func ParseEventStream(p EventStreamParams) (EventQuery, int64, bool, error) {
	q, _, afterID, err := ParseEventExport(EventExportParams{EventSearchParams: p.EventSearchParams, AfterID: p.AfterID})
	v := &ValidationError{}
	if ve, ok := err.(*ValidationError); ok {
		for _, f := range ve.Fields {
			if param, ok := FilterParamNamed(f.Path); ok && param.Kind == FilterPaging && !param.Uses.Has(UseStream) {
				f.Message = "is not a parameter of the stream: resume a stream with afterId or Last-Event-ID"
			}
			v.Fields = append(v.Fields, f)
		}
	} else if err != nil {
		return EventQuery{}, 0, false, err
	}
	lastID, err := parseAfterID("Last-Event-ID", p.LastEventID)
	if ve, ok := err.(*ValidationError); ok {
		v.Fields = append(v.Fields, ve.Fields...)
	}
	if len(v.Fields) > 0 {
		return EventQuery{}, 0, false, v
	}
	switch {
	case p.LastEventID != "":
		return q, lastID, true, nil
	case p.AfterID != "":
		return q, afterID, true, nil
	}
	return q, 0, false, nil
}

// StreamEvents prepares the live stream of the events matching params that
// p may see: the same permission, filters, validation and
// visibility as ExportEvents. Errors here come before anything is sent.
func (s *Service) StreamEvents(ctx context.Context, p Principal, params EventStreamParams) (*EventStream, error) {
	if err := s.authorize(ctx, p, adminAPI); err != nil {
		return nil, err
	}
	q, afterID, resume, err := ParseEventStream(params)
	if err != nil {
		return nil, err
	}
	st := &EventStream{Query: q, AfterID: afterID, Resume: resume}
	hidden, restricted, err := s.visibility(ctx, p)
	if err != nil {
		return nil, err
	}
	if restricted {
		st.Query.restrict(hidden)
	}
	return st, nil
}

// Start fixes where the stream starts on feed and returns it: the resume
// point, or without one the newest event now (the stream then holds the
// events recorded after it opened). A client that reconnects from there
// misses nothing.
func (st *EventStream) Start(ctx context.Context, feed EventFeed) (int64, error) {
	if !st.Resume {
		id, err := feed.LastEventID(ctx)
		if err != nil {
			return 0, err
		}
		st.AfterID, st.Resume = id, true
	}
	return st.AfterID, nil
}

// Run follows the stream on feed from its start (Start, which Run calls
// when it was not called), calling fn with each batch of events (see
// EventFeed.Follow).
func (st *EventStream) Run(ctx context.Context, feed EventFeed, fn func([]Event) error) error {
	after, err := st.Start(ctx, feed)
	if err != nil {
		return err
	}
	return feed.Follow(ctx, st.Query, after, fn)
}
