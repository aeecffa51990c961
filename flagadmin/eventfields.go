package flagadmin

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"time"
	"unsafe"
)

// The fields of an Event are declared once, by the Event struct: at
// init, EventFields reads each field's name from its json tag and its
// kind from its Go type (a *string tagged omitempty is FieldTextOrAbsent),
// as encoding/json reads struct tags once per type. The encoder of the
// Event JSON (AppendEventJSON, MarshalJSON) is generated from that table
// (eventjson_gen.go, by internal/eventgen), and the normal form
// (NormalizeEvent) and every adapter's copy of the fields (the CSV export,
// the OpenAPI schema, the client's decoder, the stores' rows and page
// readers, the caches) walk that table, so a field added to Event reaches
// them all. A test fills every declared field with a value of its own
// (internal/eventtest) and checks that each copy carries each of them.

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
	// offset is the field's offset in Event, of the Go type of Kind.
	offset uintptr
}

// Value returns the field in e, of the Go type its Kind names: int64,
// time.Time, string, *int64, *string, json.RawMessage or []Tag.
func (f EventField) Value(e *Event) any {
	switch f.Kind {
	case FieldInt:
		return *f.Int(e)
	case FieldTime:
		return *f.Time(e)
	case FieldText:
		return *f.Text(e)
	case FieldIntOrNull:
		return *f.IntOrNull(e)
	case FieldTextOrNull, FieldTextOrAbsent:
		return *f.TextOrNull(e)
	case FieldJSONOrNull:
		return *f.JSON(e)
	default:
		return *f.Tags(e)
	}
}

// at returns the address of the field in e, after checking that its kind
// is one of want (the Go type the caller converts the address to).
func (f EventField) at(e *Event, want ...EventFieldKind) unsafe.Pointer {
	for _, k := range want {
		if f.Kind == k {
			return unsafe.Add(unsafe.Pointer(e), f.offset)
		}
	}
	panic("flagadmin: the event field " + f.Name + " is not of the kind asked for")
}

// The addresses of a field in an event, one method by Go type: each
// panics on a field of another kind.

// Int returns the address of a FieldInt field in e.
func (f EventField) Int(e *Event) *int64 { return (*int64)(f.at(e, FieldInt)) }

// Time returns the address of a FieldTime field in e.
func (f EventField) Time(e *Event) *time.Time { return (*time.Time)(f.at(e, FieldTime)) }

// Text returns the address of a FieldText field in e.
func (f EventField) Text(e *Event) *string { return (*string)(f.at(e, FieldText)) }

// IntOrNull returns the address of a FieldIntOrNull field in e.
func (f EventField) IntOrNull(e *Event) **int64 { return (**int64)(f.at(e, FieldIntOrNull)) }

// TextOrNull returns the address of a FieldTextOrNull or
// FieldTextOrAbsent field in e.
func (f EventField) TextOrNull(e *Event) **string {
	return (**string)(f.at(e, FieldTextOrNull, FieldTextOrAbsent))
}

// JSON returns the address of a FieldJSONOrNull field in e.
func (f EventField) JSON(e *Event) *json.RawMessage {
	return (*json.RawMessage)(f.at(e, FieldJSONOrNull))
}

// Tags returns the address of a FieldTags field in e.
func (f EventField) Tags(e *Event) *[]Tag { return (*[]Tag)(f.at(e, FieldTags)) }

// eventFields is the table of Event's fields (declareEventFields), in the
// order of the struct, which is the order of the Event JSON.
var eventFields = declareEventFields()

// kindOf is the kind of each Go type an Event field may have; a *string
// tagged omitempty is FieldTextOrAbsent.
var kindOf = map[reflect.Type]EventFieldKind{
	reflect.TypeFor[int64]():           FieldInt,
	reflect.TypeFor[time.Time]():       FieldTime,
	reflect.TypeFor[string]():          FieldText,
	reflect.TypeFor[*int64]():          FieldIntOrNull,
	reflect.TypeFor[*string]():         FieldTextOrNull,
	reflect.TypeFor[json.RawMessage](): FieldJSONOrNull,
	reflect.TypeFor[[]Tag]():           FieldTags,
}

// declareEventFields reads the fields of Event: every field but those
// tagged json:"-" (Salt, never shown), named by its json tag, of the kind
// of its Go type. It panics on a field of another type or without a
// plain name (letters only: the encoder writes names unescaped).
func declareEventFields() []EventField {
	t := reflect.TypeFor[Event]()
	var out []EventField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		kind, ok := kindOf[sf.Type]
		if !ok || name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			panic("flagadmin: Event." + sf.Name + " has no plain json name or a type without an event field kind")
		}
		if kind == FieldTextOrNull && opts == "omitempty" {
			kind = FieldTextOrAbsent
		}
		out = append(out, EventField{Name: name, Kind: kind, offset: sf.Offset})
	}
	return out
}

// EventFields returns the fields of an Event in the order of the Event
// JSON. The slice is the caller's.
func EventFields() []EventField {
	out := make([]EventField, len(eventFields))
	copy(out, eventFields)
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

// MarshalJSON writes the event's JSON (AppendEventJSON) after checking
// and compacting data and preData with encoding/json (an error when one
// is not JSON): the bytes encoding/json writes for the declared fields
// in their order, with HTML escaping off.
func (e Event) MarshalJSON() ([]byte, error) { return marshalEventJSON(&e, false) }

// SeedEventJSON returns e as an event of a seed file (the seed file
// format): the Event JSON without its id, which the store assigns.
func SeedEventJSON(e Event) ([]byte, error) { return marshalEventJSON(&e, true) }

// marshalEventJSON writes e with its JSON fields compacted, without id
// when noID.
func marshalEventJSON(e *Event, noID bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	c := *e // e is the caller's copy already; c keeps it as it is anyway
	size := 512
	for _, f := range eventFields {
		if f.Kind != FieldJSONOrNull || *f.JSON(&c) == nil {
			continue
		}
		buf.Reset()
		if err := enc.Encode(*f.JSON(&c)); err != nil {
			return nil, err
		}
		compact := bytes.Clone(buf.Bytes()[:buf.Len()-1]) // without the newline Encode adds
		*f.JSON(&c) = compact
		size += len(compact)
	}
	return appendEventJSON(make([]byte, 0, size), &c, noID), nil
}
