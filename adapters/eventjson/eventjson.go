// Package eventjson writes an event as its JSON, the Event JSON of the admin
// API's search pages, with the domain's one encoder of events
// (flagadmin.AppendEventJSON, written from the declaration of Event's
// fields): the HTTP API's pages, export and stream, and the webhook bodies
// all use it, so a receiver sees the same bytes everywhere, the bytes
// Event.MarshalJSON returns for an event whose data and preData are nil or
// compact JSON.
package eventjson

import (
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// AppendEvent appends the event's JSON (flagadmin.AppendEventJSON).
func AppendEvent(b []byte, e *flagadmin.Event) []byte { return flagadmin.AppendEventJSON(b, e) }

// AppendTags appends tags as a JSON array, [] when there are none
// (flagadmin.AppendTagsJSON).
func AppendTags(b []byte, tags []flagadmin.Tag) []byte { return flagadmin.AppendTagsJSON(b, tags) }

// AppendTime appends t in flagadmin.TimeLayout (UTC) as a JSON string
// (flagadmin.AppendJSONTime).
func AppendTime(b []byte, t time.Time) []byte { return flagadmin.AppendJSONTime(b, t) }

// AppendStringPtr appends *s as a JSON string (AppendString), null when s is nil.
func AppendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return AppendString(b, *s)
}

// AppendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off (flagadmin.AppendJSONString).
func AppendString(b []byte, s string) []byte { return flagadmin.AppendJSONString(b, s) }
