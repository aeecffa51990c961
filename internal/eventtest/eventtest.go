// Package eventtest holds every copy of the Event's fields to the one
// declaration, flagadmin.EventFields: Full builds an event whose every
// field holds a value of its own, and Diff names the declared fields two
// events disagree on. A test of a copy (an encoder and its decoder, a row
// mapping of a store, a copy kept in memory) passes Full through it and
// checks with Diff that every field came back: a field the copy forgets,
// or a field added to flagadmin.Event without a declaration, fails it.
package eventtest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// CreatedAt is Full's createdAt: UTC, whole milliseconds (as stores keep it).
var CreatedAt = time.Date(2025, 3, 4, 5, 6, 7, 890_000_000, time.UTC)

// Full returns an event with every field of flagadmin.Event set, each to a
// value no other field holds, none zero or null, all of them valid for a
// store and a seed file: a known event type, data and preData JSON
// objects, tags of 2 to 50 characters (without a color key, with a color,
// with a null color). It fails tb when a field of Event is not declared
// by flagadmin.EventFields (Declared), or is of a type it cannot fill.
// Its Salt is nil: the salt is the log's, never shown with the event
// (hidden), and a store draws one.
func Full(tb testing.TB) flagadmin.Event {
	tb.Helper()
	Declared(tb)
	var e flagadmin.Event
	v := reflect.ValueOf(&e).Elem()
	for i := range v.NumField() {
		if hidden(v.Type().Field(i)) {
			continue
		}
		if err := fill(v.Field(i), v.Type().Field(i).Name, int64(i)); err != nil {
			tb.Fatal(err)
		}
	}
	return e
}

// fill sets f, the Event field called name, to a value of its own (n is
// the field's index).
func fill(f reflect.Value, name string, n int64) error {
	s := "v-" + name
	switch f.Interface().(type) {
	case int64:
		f.SetInt(1000 + n)
	case time.Time:
		f.Set(reflect.ValueOf(CreatedAt))
	case string:
		if name == "Type" {
			s = flagadmin.EventFeatureCompleted // a seed file holds known types only
		}
		f.SetString(s)
	case *int64:
		id := 2000 + n
		f.Set(reflect.ValueOf(&id))
	case *string:
		f.Set(reflect.ValueOf(&s))
	case json.RawMessage:
		f.Set(reflect.ValueOf(json.RawMessage(`{"field":"` + s + `","n":` + fmt.Sprint(n) + `}`)))
	case []flagadmin.Tag:
		// A tag without a color key, one with a color, one with a null color.
		f.Set(reflect.ValueOf([]flagadmin.Tag{{Type: "simple", Value: s}, {Type: "t-" + name, Value: "second", Color: flagadmin.ColorOf("#34A853")},
			{Type: "team", Value: "third", Color: flagadmin.NullColor}}))
	default:
		return fmt.Errorf("eventtest: flagadmin.Event.%s is a %s: teach Full to fill it", name, f.Type())
	}
	return nil
}

// Declared fails tb unless each field of flagadmin.Event is declared by
// exactly one of flagadmin.EventFields and each declared field reads
// exactly one field of Event: setting a field of Event must change the
// Value of one declared field, and each declared field must change with
// one field of Event. A field never shown (hidden, as Salt) is not
// declared.
func Declared(tb testing.TB) {
	tb.Helper()
	fields := flagadmin.EventFields()
	var zero flagadmin.Event
	readers := make([]int, len(fields))
	typ := reflect.TypeFor[flagadmin.Event]()
	for i := range typ.NumField() {
		if hidden(typ.Field(i)) {
			continue
		}
		var e flagadmin.Event
		if err := fill(reflect.ValueOf(&e).Elem().Field(i), typ.Field(i).Name, int64(i)); err != nil {
			tb.Fatal(err)
		}
		var changed []string
		for j, f := range fields {
			if !reflect.DeepEqual(f.Value(&e), f.Value(&zero)) {
				changed = append(changed, f.Name)
				readers[j]++
			}
		}
		if len(changed) != 1 {
			tb.Errorf("flagadmin.Event.%s is read by the declared fields %q, want exactly one: declare it in flagadmin.EventFields", typ.Field(i).Name, changed)
		}
	}
	for j, f := range fields {
		if readers[j] != 1 {
			tb.Errorf("the declared field %s reads %d fields of flagadmin.Event, want 1", f.Name, readers[j])
		}
	}
}

// hidden reports whether f is a field of flagadmin.Event never shown with
// the event (json:"-", as Salt), so not a declared field.
func hidden(f reflect.StructField) bool { return f.Tag.Get("json") == "-" }

// Diff returns the names of the declared fields whose values differ
// between want and got, with both values, one line each; nil when none
// does. Times are compared as instants; data and preData as JSON values.
// Fields named in except are not compared.
func Diff(want, got flagadmin.Event, except ...string) []string {
	var out []string
next:
	for _, f := range flagadmin.EventFields() {
		for _, x := range except {
			if f.Name == x {
				continue next
			}
		}
		w, g := f.Value(&want), f.Value(&got)
		if !Equal(f.Kind, w, g) {
			out = append(out, fmt.Sprintf("%s: got %s, want %s", f.Name, show(g), show(w)))
		}
	}
	return out
}

// Equal reports whether two values of a declared field of kind k are the
// same: instants for FieldTime, JSON values for FieldJSONOrNull, nil and
// empty tags alike, else deep equality.
func Equal(k flagadmin.EventFieldKind, a, b any) bool {
	switch k {
	case flagadmin.FieldTime:
		return a.(time.Time).Equal(b.(time.Time))
	case flagadmin.FieldJSONOrNull:
		ra, rb := a.(json.RawMessage), b.(json.RawMessage)
		if len(ra) == 0 || len(rb) == 0 { // null
			return len(ra) == 0 && len(rb) == 0
		}
		var va, vb any
		return json.Unmarshal(ra, &va) == nil && json.Unmarshal(rb, &vb) == nil && reflect.DeepEqual(va, vb)
	case flagadmin.FieldTags:
		ta, tb := a.([]flagadmin.Tag), b.([]flagadmin.Tag)
		if len(ta) == 0 && len(tb) == 0 {
			return true
		}
		return reflect.DeepEqual(ta, tb)
	}
	return reflect.DeepEqual(a, b)
}

// show formats a field's value for a message.
func show(v any) string {
	switch v := v.(type) {
	case *string:
		if v != nil {
			return fmt.Sprintf("%q", *v)
		}
		return "null"
	case *int64:
		if v != nil {
			return fmt.Sprint(*v)
		}
		return "null"
	case json.RawMessage:
		if v == nil {
			return "null"
		}
		return string(v)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%#v", v)
}

// IDs returns the ids of events, in order.
func IDs(events []flagadmin.Event) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}
