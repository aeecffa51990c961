package flagadmin

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// The fields of an Event, declared once (EventFields): Event.MarshalJSON
// and SeedEventJSON are written from the declaration, and every other copy
// of the fields (the hand-written encoders, the CSV export, the OpenAPI
// schema, the client's decoder, the stores' row mappings, copies kept in
// memory) is held to it by a test that fills every declared field with a
// value of its own (internal/eventtest) and checks that the copy carries
// each of them. A field added to Event without a declaration fails those
// tests too.

// EventFieldKind is the type of an Event field on the wire.
type EventFieldKind int

// The kinds of Event fields.
const (
	// FieldInt is a JSON integer (int64).
	FieldInt EventFieldKind = iota + 1
	// FieldTime is an instant written as a JSON string in TimeLayout (time.Time).
	FieldTime
	// FieldText is a JSON string (string).
	FieldText
	// FieldIntOrNull is a JSON integer or null (*int64).
	FieldIntOrNull
	// FieldTextOrNull is a JSON string or null (*string).
	FieldTextOrNull
	// FieldJSONOrNull is a JSON object, kept compact, or null (json.RawMessage, nil for null).
	FieldJSONOrNull
	// FieldTags is a JSON array of tags, [] when there are none ([]Tag).
	FieldTags
	// FieldTextOrAbsent is a JSON string, its key left out when there is
	// none (*string, nil for absent): never null.
	FieldTextOrAbsent
)

// EventField is one field of an Event as every copy of it names it.
type EventField struct {
	// Name is the field's name on the wire: its key in the Event JSON and
	// in a seed file, its column in the CSV export. Column filters name
	// their column by it (FilterParam.Column), and a store maps it to its
	// own column.
	Name string
	// Kind is its type on the wire, and the Go type Value returns.
	Kind EventFieldKind
	// get returns the field of e, of the Go type of Kind.
	get func(e *Event) any
}

// Value returns the field in e, of the Go type its Kind names: int64,
// time.Time, string, *int64, *string, json.RawMessage or []Tag.
func (f EventField) Value(e *Event) any { return f.get(e) }

// eventFields is the declaration, in the order of Unleash's event schema,
// which is the order of the Event JSON.
var eventFields = [...]EventField{
	{"id", FieldInt, func(e *Event) any { return e.ID }},
	{"createdAt", FieldTime, func(e *Event) any { return e.CreatedAt }},
	{"type", FieldText, func(e *Event) any { return e.Type }},
	{"createdBy", FieldText, func(e *Event) any { return e.CreatedBy }},
	{"createdByUserId", FieldIntOrNull, func(e *Event) any { return e.CreatedByUserID }},
	{"environment", FieldTextOrNull, func(e *Event) any { return e.Environment }},
	{"project", FieldTextOrNull, func(e *Event) any { return e.Project }},
	{"featureName", FieldTextOrNull, func(e *Event) any { return e.FeatureName }},
	{"data", FieldJSONOrNull, func(e *Event) any { return e.Data }},
	{"preData", FieldJSONOrNull, func(e *Event) any { return e.PreData }},
	{"tags", FieldTags, func(e *Event) any { return e.Tags }},
	{"groupType", FieldTextOrAbsent, func(e *Event) any { return e.GroupType }},
	{"groupId", FieldTextOrAbsent, func(e *Event) any { return e.GroupID }},
}

// EventFields returns the fields of an Event in the order of the Event
// JSON. The slice is the caller's.
func EventFields() []EventField {
	out := make([]EventField, len(eventFields))
	copy(out, eventFields[:])
	return out
}

// EventFieldNamed returns the declared field called name.
func EventFieldNamed(name string) (EventField, bool) {
	for _, f := range eventFields {
		if f.Name == name {
			return f, true
		}
	}
	return EventField{}, false
}

// MarshalJSON writes the event with the declared fields (EventFields) in
// their order, createdAt in TimeLayout, tags as [] when empty and the
// fields of kind FieldTextOrAbsent left out when nil, with
// encoding/json (strings escaped as it escapes them with HTML escaping off;
// data and preData compacted, an error when not valid JSON).
func (e Event) MarshalJSON() ([]byte, error) { return appendEventJSON(&e, false) }

// SeedEventJSON returns e as an event of a seed file (the seed file
// format): the Event JSON without its id, which the store assigns.
func SeedEventJSON(e Event) ([]byte, error) { return appendEventJSON(&e, true) }

// appendEventJSON writes the declared fields of e, without id when noID.
func appendEventJSON(e *Event, noID bool) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(512 + len(e.Data) + len(e.PreData))
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('{')
	first := true
	for _, f := range eventFields {
		if noID && f.Name == "id" || f.Kind == FieldTextOrAbsent && f.get(e).(*string) == nil {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.WriteByte('"')
		buf.WriteString(f.Name) // plain ASCII: a test checks
		buf.WriteString(`":`)
		// Numbers, times and nulls are written directly; strings, data and
		// tags by encoding/json, which escapes and compacts them.
		v := f.get(e)
		switch v := v.(type) {
		case int64:
			buf.Write(strconv.AppendInt(buf.AvailableBuffer(), v, 10))
			continue
		case *int64:
			if v != nil {
				buf.Write(strconv.AppendInt(buf.AvailableBuffer(), *v, 10))
				continue
			}
		case time.Time:
			buf.WriteByte('"')
			buf.Write(v.UTC().AppendFormat(buf.AvailableBuffer(), TimeLayout))
			buf.WriteByte('"')
			continue
		case []Tag:
			if v == nil {
				buf.WriteString("[]")
				continue
			}
		}
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // the newline Encode adds
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
