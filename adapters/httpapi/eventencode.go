package httpapi

import (
	"strconv"
	"time"

	"github.com/flagadmin/flagadmin/adapters/eventjson"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// This file writes events and project list entries as JSON by hand,
// without reflection; the event encoder itself is package eventjson,
// shared with the webhooks. The bytes are exactly those encoding/json writes for
// them (their MarshalJSON) with HTML escaping off, as Huma's JSON format
// writes them; the tests compare the two. It is about twelve times faster
// than encoding/json on a page of events (see BenchmarkEventPageJSON),
// which is most of the server's output.
//
// Data and preData are appended as they are: the stores hold them compact
// and valid (the Service normalizes every event it writes, seed files
// included), so they are neither validated nor compacted again.

// appendEvent appends the event's JSON (eventjson.AppendEvent).
func appendEvent(b []byte, e *flagadmin.Event) []byte { return eventjson.AppendEvent(b, e) }

// appendTags appends tags as a JSON array (eventjson.AppendTags).
func appendTags(b []byte, tags []flagadmin.Tag) []byte { return eventjson.AppendTags(b, tags) }

// appendEvents appends events as a JSON array of appendEvent, the way
// encoding/json writes a []Event: null when events is nil.
func appendEvents(b []byte, events []flagadmin.Event) []byte {
	if events == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEvent(b, &events[i])
	}
	return append(b, ']')
}

// appendProjectOwner appends the owner's JSON, the bytes
// ProjectOwner.MarshalJSON returns.
func appendProjectOwner(b []byte, o *flagadmin.ProjectOwner) []byte {
	switch o.OwnerType {
	case flagadmin.OwnerUser:
		b = append(b, `{"ownerType":"user","name":`...)
		b = appendJSONString(b, o.Name)
		b = append(b, `,"email":`...)
		b = appendJSONStringPtr(b, o.Email)
		b = append(b, `,"imageUrl":`...)
		b = appendJSONStringPtr(b, o.ImageURL)
		return append(b, '}')
	case flagadmin.OwnerGroup:
		b = append(b, `{"ownerType":"group","name":`...)
		b = appendJSONString(b, o.Name)
		return append(b, '}')
	default:
		return append(b, `{"ownerType":"system"}`...)
	}
}

// appendProjectListEntry appends the entry's JSON, the bytes
// ProjectListEntry.MarshalJSON returns: the fields in the order of the
// struct with the dates last, dates in TimeLayout, owners null when nil.
func appendProjectListEntry(b []byte, p *flagadmin.ProjectListEntry) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, p.ID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, p.Name)
	b = append(b, `,"description":`...)
	b = appendJSONString(b, p.Description)
	b = append(b, `,"health":`...)
	b = strconv.AppendInt(b, int64(p.Health), 10)
	b = append(b, `,"technicalDebt":`...)
	b = strconv.AppendInt(b, int64(p.TechnicalDebt), 10)
	b = append(b, `,"featureCount":`...)
	b = strconv.AppendInt(b, int64(p.FeatureCount), 10)
	b = append(b, `,"memberCount":`...)
	b = strconv.AppendInt(b, int64(p.MemberCount), 10)
	b = append(b, `,"favorite":`...)
	b = strconv.AppendBool(b, p.Favorite)
	b = append(b, `,"mode":`...)
	b = appendJSONString(b, string(p.Mode))
	b = append(b, `,"owners":`...)
	if p.Owners == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Owners {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendProjectOwner(b, &p.Owners[i])
		}
		b = append(b, ']')
	}
	b = append(b, `,"createdAt":`...)
	b = appendJSONTime(b, p.CreatedAt)
	b = append(b, `,"lastUpdatedAt":`...)
	b = appendJSONTimePtr(b, p.LastUpdatedAt)
	b = append(b, `,"archivedAt":`...)
	b = appendJSONTimePtr(b, p.ArchivedAt)
	b = append(b, `,"lastReportedFlagUsage":`...)
	b = appendJSONTimePtr(b, p.LastReportedFlagUsage)
	if p.CleanupCount != 0 {
		b = append(b, `,"cleanupCount":`...)
		b = strconv.AppendInt(b, int64(p.CleanupCount), 10)
	}
	return append(b, '}')
}

// appendJSONTimePtr appends t in TimeLayout as a JSON string, null when nil.
func appendJSONTimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendJSONTime(b, *t)
}

// appendJSONTime appends t in flagadmin.TimeLayout (UTC) as a JSON string
// (eventjson.AppendTime).
func appendJSONTime(b []byte, t time.Time) []byte { return eventjson.AppendTime(b, t) }

func appendJSONStringPtr(b []byte, s *string) []byte { return eventjson.AppendStringPtr(b, s) }

// appendJSONString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off (eventjson.AppendString).
func appendJSONString(b []byte, s string) []byte { return eventjson.AppendString(b, s) }
