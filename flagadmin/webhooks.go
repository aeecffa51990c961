package flagadmin

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"time"
)

// Webhooks (docs/streams-and-webhooks.md): sinks configured at start-up,
// each receiving the events its filter matches, in id order, at least once. This file
// holds what the rule needs from the domain: the sink's definition and its
// validation, and the port of the delivery state a store keeps. The
// delivery itself (HTTP, signatures, retries) is an adapter
// (adapters/webhooks).

// WebhookSink is one configured receiver of events.
type WebhookSink struct {
	// Name identifies the sink: its delivery state is stored under it, so
	// renaming a sink starts it afresh.
	Name string
	// URL receives a POST per event: http or https.
	URL string
	// Secret keys the HMAC-SHA256 signature of every request.
	Secret string
	// Filter selects the events, as the query-string filters of the event
	// search; Limit, Offset and After must be empty.
	Filter EventSearchParams
}

// WebhookFilterParams are the filter parameters a sink's filter may hold,
// as written in the query string of the event search: those FilterParams
// declares for UseWebhook.
var WebhookFilterParams = filterParamNames(UseWebhook)

// SetFilterParam sets the filter parameter named param (one of
// WebhookFilterParams) of p to value; false when param is not one.
func SetFilterParam(p *EventSearchParams, param, value string) bool {
	f, ok := FilterParamNamed(param)
	if !ok || !f.Uses.Has(UseWebhook) {
		return false
	}
	f.Set(p, value)
	return true
}

// Query returns the events the sink receives: its filter, with the
// visibility of an admin (every project, project-less events too), as an
// EventQuery for Store.ExportEvents. A *ValidationError names the filter's
// offending parameters as "filter.<param>".
func (s WebhookSink) Query() (EventQuery, error) {
	f := s.Filter
	if pagingGiven(&f) {
		return EventQuery{}, invalid("filter", "limit, offset and after are not filters")
	}
	q, err := ParseEventSearch(f)
	if ve, ok := err.(*ValidationError); ok {
		return EventQuery{}, prefixed("filter", ve)
	}
	if err != nil {
		return EventQuery{}, err
	}
	q.Limit, q.Offset = 0, 0
	return q, nil
}

// Validate checks one sink: a name, an http or https URL with a host, a
// secret, and a valid filter. The *ValidationError names the field.
func (s WebhookSink) Validate() error {
	if s.Name == "" {
		return invalid("name", "is required")
	}
	u, err := url.Parse(s.URL)
	switch {
	case s.URL == "":
		return invalid("url", "is required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return invalid("url", "must be an http or https URL with a host, got %s", QuoteInput(s.URL))
	}
	if s.Secret == "" {
		return invalid("secret", "is required")
	}
	_, err = s.Query()
	return err
}

// SinkConfigError is a sink of a webhook configuration that is not valid:
// it names the sink (by name, or by its position when it has none) and the
// field.
type SinkConfigError struct {
	// Index is the sink's position in the list, from 0.
	Index int
	// Name is the sink's name, "" when it has none.
	Name string
	// Err says what is wrong with which field (a *ValidationError).
	Err error
}

func (e *SinkConfigError) Error() string {
	if e.Name == "" {
		return "sink " + strconv.Itoa(e.Index+1) + ": " + e.Err.Error()
	}
	return "sink " + QuoteInput(e.Name) + ": " + e.Err.Error()
}

func (e *SinkConfigError) Unwrap() error { return e.Err }

// ValidateWebhookSinks checks every sink (Validate) and that their names
// are unique; the first problem is a *SinkConfigError.
func ValidateWebhookSinks(sinks []WebhookSink) error {
	seen := map[string]bool{}
	for i, s := range sinks {
		if err := s.Validate(); err != nil {
			return &SinkConfigError{Index: i, Name: s.Name, Err: err}
		}
		if seen[s.Name] {
			return &SinkConfigError{Index: i, Name: s.Name, Err: invalid("name", "is the name of an earlier sink: names must be unique")}
		}
		seen[s.Name] = true
	}
	return nil
}

// ErrLeaseLost is returned by the fenced writes of a SinkStore when the
// holder does not hold the sink's lease (any more): another server may be
// delivering for the sink, so this one must stop.
var ErrLeaseLost = errors.New("webhook sink lease not held")

// SinkState is the delivery state of a sink, as stored.
type SinkState struct {
	// Name is the sink's name.
	Name string
	// Position is the id of the last event delivered (at first, the newest
	// event when the sink was first seen): delivery resumes after it.
	Position int64
	// Delivered counts the events delivered since the sink was first seen.
	Delivered int64
	// Attempts counts the failed attempts at the event after Position
	// (0 once it is delivered).
	Attempts int
	// LastError describes the last failed attempt, "" when none since the
	// last delivery.
	LastError string
	// LastErrorAt is when the last failed attempt ended (zero when none).
	LastErrorAt time.Time
	// Lease is the sink's lease: its holder is the server that delivers.
	Lease Lease
	// CreatedAt is when the sink was first seen.
	CreatedAt time.Time
}

// SinkStore keeps the delivery state of webhook sinks:
// where each sink is, and which server delivers for it. Implementations:
// adapters/memstore and adapters/bunstore; internal/storetest.RunSinks is
// their contract suite. One server delivers for a sink at a time, the
// holder of its Lease, and the writes below are fenced by it.
type SinkStore interface {
	// RegisterSink returns the sink's state, creating it when the name is
	// new, at Position = the newest event id stored at that moment (0 for
	// none) and CreatedAt = now. A known sink is returned unchanged.
	RegisterSink(ctx context.Context, name string, now time.Time) (SinkState, error)

	// AcquireSinkLease gives holder the sink's lease until until when it
	// is free for holder at now (Lease.Acquire: taken, or renewed by its
	// holder). It returns the state after the call and whether holder now
	// holds the lease.
	// ErrNotFound when the sink is not registered.
	AcquireSinkLease(ctx context.Context, name, holder string, now, until time.Time) (SinkState, bool, error)

	// ReleaseSinkLease ends holder's lease (Lease.Release), so that
	// another server may take over at once. Nothing happens when holder
	// does not hold it.
	ReleaseSinkLease(ctx context.Context, name, holder string) error

	// AdvanceSink moves the sink's position to position (greater than the
	// current one), adds delivered to its delivered count, and clears
	// its attempts and last error; only while holder holds the lease at
	// now (Lease.HeldBy: fencing): otherwise nothing changes and the error is
	// ErrLeaseLost. Once it returns, the advance survives a crash of the
	// caller; a store may let a crash of the database itself undo its
	// latest advances (bunstore on PostgreSQL does, for their speed): the
	// position then moves back, so events are sent again, never skipped.
	AdvanceSink(ctx context.Context, name, holder string, now time.Time, position, delivered int64) error

	// RecordSinkFailure records a failed attempt at the event after the
	// position: attempts and the error's description, at now. Fenced like
	// AdvanceSink.
	RecordSinkFailure(ctx context.Context, name, holder string, now time.Time, attempts int, lastError string) error

	// SinkStates returns the state of every registered sink, by name.
	SinkStates(ctx context.Context) ([]SinkState, error)
}
