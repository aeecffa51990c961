package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// SearchEvents returns one page of the query-string event search (GET
// /api/admin/search/events) with the count of all matches. Empty
// parameters are not sent; the server validates the rest (a bad one is a
// *flagadmin.ValidationError naming it). Events walks every page.
func (c *Client) SearchEvents(ctx context.Context, params flagadmin.EventSearchParams) (flagadmin.EventPage, error) {
	page, _, err := c.searchPage(ctx, c.endpoint(searchPath, searchQuery(params)))
	return page, err
}

// searchPath is the path of the query-string event search.
const searchPath = "/api/admin/search/events"

// searchQuery returns the query string of params: every parameter the
// domain declares (flagadmin.FilterParams) that is not empty.
func searchQuery(p flagadmin.EventSearchParams) url.Values {
	q := url.Values{}
	for _, f := range flagadmin.FilterParams() {
		if v := f.Value(&p); v != "" {
			q.Set(f.Name, v)
		}
	}
	return q
}

// searchPage fetches the search page at u and returns it with the URL of
// its Link rel="next", if the server sent one.
func (c *Client) searchPage(ctx context.Context, u *url.URL) (flagadmin.EventPage, *url.URL, error) {
	resp, body, err := c.do(ctx, request{method: http.MethodGet, url: u, accept: "application/json", retry: retrySafe})
	if err != nil {
		return flagadmin.EventPage{}, nil, err
	}
	if err := requireJSON(resp, "search events"); err != nil {
		return flagadmin.EventPage{}, nil, err
	}
	var wire struct {
		Events *[]json.RawMessage `json:"events"`
		Total  *int               `json:"total"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return flagadmin.EventPage{}, nil, fmt.Errorf("client: search events: decode the response: %w", err)
	}
	if wire.Events == nil || wire.Total == nil || *wire.Total < 0 {
		return flagadmin.EventPage{}, nil, fmt.Errorf("client: search events: the response lacks an events array or a total")
	}
	events, err := decodeEvents(*wire.Events, "search events")
	if err != nil {
		return flagadmin.EventPage{}, nil, err
	}
	next, err := c.nextLink(resp, u)
	if err != nil {
		return flagadmin.EventPage{}, nil, err
	}
	return flagadmin.EventPage{Events: events, Total: *wire.Total}, next, nil
}

// DeprecatedSearchEvents runs the body-based event search (POST
// /api/admin/events/search). Total is totalEvents, or -1 when the server
// leaves it out (the field is optional). The request is a read with no
// effect, so it is retried like a GET. Unleash removed this operation in
// 7.0: it answers flagadmin.ErrNotFound.
func (c *Client) DeprecatedSearchEvents(ctx context.Context, req flagadmin.DeprecatedSearchRequest) (flagadmin.EventPage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	resp, b, err := c.do(ctx, request{method: http.MethodPost, url: c.endpoint("/api/admin/events/search", nil), body: body, accept: "application/json", retry: retrySafe})
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	if err := requireJSON(resp, "deprecated search events"); err != nil {
		return flagadmin.EventPage{}, err
	}
	var wire struct {
		Version     *int               `json:"version"`
		Events      *[]json.RawMessage `json:"events"`
		TotalEvents *int               `json:"totalEvents"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		return flagadmin.EventPage{}, fmt.Errorf("client: deprecated search events: decode the response: %w", err)
	}
	if wire.Version == nil || *wire.Version < 1 || wire.Events == nil {
		return flagadmin.EventPage{}, fmt.Errorf("client: deprecated search events: the response lacks a version of 1 or more or an events array")
	}
	events, err := decodeEvents(*wire.Events, "deprecated search events")
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	total := -1
	if wire.TotalEvents != nil {
		total = *wire.TotalEvents
	}
	return flagadmin.EventPage{Events: events, Total: total}, nil
}

// presentType is a struct with a *json.RawMessage for each declared
// event field (flagadmin.EventFields), under its name: decoded from an
// event, a nil field is one absent or null.
var presentType = func() reflect.Type {
	var fields []reflect.StructField
	for i, f := range flagadmin.EventFields() {
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: reflect.TypeFor[*json.RawMessage](),
			Tag: reflect.StructTag(`json:"` + f.Name + `"`)})
	}
	return reflect.StructOf(fields)
}()

// eventFields are the declared fields of an event, which decodeEvent reads.
var eventFields = flagadmin.EventFields()

// decodeEvents decodes each element with decodeEvent.
func decodeEvents(raw []json.RawMessage, what string) ([]flagadmin.Event, error) {
	out := make([]flagadmin.Event, len(raw))
	for i, r := range raw {
		ev, err := decodeEvent(r)
		if err != nil {
			return nil, fmt.Errorf("client: %s: events[%d]: %w", what, i, err)
		}
		out[i] = ev
	}
	return out, nil
}

// decodeEvent decodes one Event: its fields that cannot be null (id, 1
// or more, createdAt, type, not empty, and createdBy) are required; a
// null data or preData is nil. Extra fields (Unleash's label and summary)
// are ignored.
func decodeEvent(raw []byte) (flagadmin.Event, error) {
	var e flagadmin.Event
	if err := json.Unmarshal(raw, &e); err != nil {
		return flagadmin.Event{}, err
	}
	present := reflect.New(presentType)
	if err := json.Unmarshal(raw, present.Interface()); err != nil {
		return flagadmin.Event{}, err
	}
	for i, f := range eventFields {
		missing := present.Elem().Field(i).IsNil()
		switch f.Kind {
		case flagadmin.FieldInt:
			if missing || *f.Int(&e) < 1 {
				return flagadmin.Event{}, fmt.Errorf("no %s of 1 or more", f.Name)
			}
		case flagadmin.FieldTime:
			if missing {
				return flagadmin.Event{}, fmt.Errorf("event %d has no %s", e.ID, f.Name)
			}
			*f.Time(&e) = f.Time(&e).UTC()
		case flagadmin.FieldText:
			if missing || f.Name == "type" && *f.Text(&e) == "" {
				return flagadmin.Event{}, fmt.Errorf("event %d has no %s", e.ID, f.Name)
			}
		case flagadmin.FieldJSONOrNull:
			*f.JSON(&e) = nullToNil(*f.JSON(&e))
		}
	}
	return e, nil
}

// nullToNil returns nil for an absent or null raw value.
func nullToNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	return raw
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
