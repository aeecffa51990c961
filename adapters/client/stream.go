package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// streamPath is the path of the live stream.
const streamPath = "/api/admin/events/stream"

// TailFromNow, as Tail's afterID, starts with the events recorded after
// the stream opens.
const TailFromNow int64 = -1

// maxStreamLine bounds one line of the stream, that is one event's data.
const maxStreamLine = 16 << 20

// maxReconnectWait bounds the wait between two reconnections of Tail.
const maxReconnectWait = 5 * time.Second

// ReconnectPatience is how long Tail keeps trying to open the stream again
// after it broke, while the server cannot be reached or answers 5xx (a
// restart, a deployment), before it gives up.
const ReconnectPatience = 2 * time.Minute

// StreamEnd is how the server ended a stream: the reason of its last
// event "end" (a shutdown, a client too slow, a token that no longer
// authenticates). Tail reconnects after one.
type StreamEnd struct{ Reason string }

func (e *StreamEnd) Error() string { return "client: the server ended the stream: " + e.Reason }

// Tail follows the live stream of the events matching params (GET
// /api/admin/events/stream, Server-Sent Events): from the event after
// afterID (replayed first), or with TailFromNow from the events recorded
// after it opens; then each new event as it is recorded, id ascending,
// each once. Breaking out of the loop ends the stream. The filters of
// params are those of the search; its Offset and Limit must be empty.
//
// A connection that breaks, or a stream the server ends (shutdown, a
// client too slow), is opened again with Last-Event-ID set to the last
// event received, so nothing is missed and nothing repeats. The first
// opening is retried like a GET; after a break, opening is tried again for
// up to ReconnectPatience while the server cannot be reached or answers
// 5xx. Any other failure to open (a 401 once the token no longer
// authenticates, a 400) is yielded and ends the walk. onReconnect, when not nil,
// is called before each reconnection with its cause and the id it resumes
// after (the last event received, or the stream's start position).
func (c *Client) Tail(ctx context.Context, params flagadmin.EventSearchParams, afterID int64, onReconnect func(cause error, afterID int64)) iter.Seq2[flagadmin.Event, error] {
	return func(yield func(flagadmin.Event, error) bool) {
		last, known := afterID, afterID >= 0
		policy := c.retry.withDefaults()
		breaks := 0
		var brokeAt time.Time // zero until the stream broke once
		for {
			before := last
			opened, stopped, err := c.tailOnce(ctx, params, &last, &known, yield)
			if stopped {
				return
			}
			if ctx.Err() != nil || !reconnectable(opened, err, brokeAt) {
				yield(flagadmin.Event{}, err)
				return
			}
			if opened {
				brokeAt = time.Now()
			}
			if last > before {
				breaks = 0
			}
			breaks++
			if onReconnect != nil {
				onReconnect(err, last)
			}
			if err := sleep(ctx, min(policy.backoff(breaks), maxReconnectWait)); err != nil {
				yield(flagadmin.Event{}, err)
				return
			}
		}
	}
}

// reconnectable reports whether Tail opens the stream again after an
// attempt that ended with err: a stream that was open and broke (the
// connection was lost, or the server ended it), or a failure to open it
// that may pass, within ReconnectPatience of the last break (brokeAt, zero
// before the first: the first opening is retried like a GET, not here).
func reconnectable(opened bool, err error, brokeAt time.Time) bool {
	if !opened {
		return !brokeAt.IsZero() && transient(err) && time.Since(brokeAt) <= ReconnectPatience
	}
	var end *StreamEnd
	var ce *connectionError
	return errors.As(err, &end) || errors.As(err, &ce)
}

// transient reports whether a failure to open the stream may pass: the
// server cannot be reached or answers 5xx.
func transient(err error) bool {
	var ce *connectionError
	var ae *Error
	return errors.As(err, &ce) || errors.As(err, &ae) && ae.Status >= 500
}

// tailOnce opens the stream once and yields its events until it ends. It
// keeps the last id (the stream's start position counts) in last.
func (c *Client) tailOnce(ctx context.Context, params flagadmin.EventSearchParams, last *int64, known *bool, yield func(flagadmin.Event, error) bool) (opened, stopped bool, err error) {
	q := searchQuery(params)
	req := request{method: http.MethodGet, url: c.endpoint(streamPath, q), accept: "text/event-stream, application/json", retry: retrySafe}
	if *known {
		req.header = http.Header{"Last-Event-Id": {strconv.FormatInt(*last, 10)}}
	}
	resp, _, err := c.exchange(ctx, req, true)
	if err != nil {
		return false, false, err
	}
	defer resp.Body.Close()
	if err := requireMediaType(resp, "stream events", func(mt string) bool { return mt == "text/event-stream" }); err != nil {
		return false, false, err
	}
	body := &exportBody{rc: resp.Body, op: "GET " + streamPath}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxStreamLine)
	var id, event string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 { // dispatch
			ev, end, err := dispatch(id, event, data.Bytes(), last, known)
			id, event = "", ""
			data.Reset()
			switch {
			case err != nil:
				return true, false, err
			case end != nil:
				return true, false, end
			case ev != nil:
				if !yield(*ev, nil) {
					return true, true, nil
				}
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			id = string(value)
		case "event":
			event = string(value)
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(value)
		}
	}
	if err := sc.Err(); err != nil {
		return true, false, err
	}
	return true, false, &connectionError{op: "GET " + streamPath, err: errors.New("the stream ended without an end event")}
}

// dispatch turns one SSE event into an Event, a StreamEnd, or nothing (a
// position without data), checking that ids ascend.
func dispatch(id, event string, data []byte, last *int64, known *bool) (*flagadmin.Event, *StreamEnd, error) {
	if event == "end" {
		var end struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(data, &end)
		return nil, &StreamEnd{Reason: end.Reason}, nil
	}
	if id == "" {
		return nil, nil, nil
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n < 0 {
		return nil, nil, fmt.Errorf("client: stream events: bad event id %q", id)
	}
	if len(data) == 0 { // the stream's start position
		if !*known || n > *last {
			*last, *known = n, true
		}
		return nil, nil, nil
	}
	ev, err := decodeEvent(data)
	if err != nil {
		return nil, nil, fmt.Errorf("client: stream events: the event after %d: %w", *last, err)
	}
	if ev.ID != n {
		return nil, nil, fmt.Errorf("client: stream events: event id %d under id: %d", ev.ID, n)
	}
	if *known && ev.ID <= *last {
		return nil, nil, fmt.Errorf("client: stream events: event %d follows event %d: ids must ascend", ev.ID, *last)
	}
	*last, *known = ev.ID, true
	return &ev, nil, nil
}
