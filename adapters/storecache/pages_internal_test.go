package storecache

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// compactPage copies a page exactly (nil and empty as they were), shares
// nothing with it, caps its slices, and counts at least the arrays it
// made. Its first event has every declared field set (eventtest.Full), so
// a field compactPage forgets to copy fails here.
func TestCompactPage(t *testing.T) {
	str := func(s string) *string { return &s }
	full := eventtest.Full(t)
	bare := flagadmin.Event{ID: 6, CreatedAt: time.UnixMilli(1700000000000).UTC(), Type: "user-created", Tags: []flagadmin.Tag{}}
	empty := flagadmin.Event{ID: 5, Type: "x", Environment: str(""), Data: json.RawMessage{}}
	for _, p := range []flagadmin.EventPage{
		{Events: []flagadmin.Event{full, bare, empty}, Total: 12, Next: "cursor"},
		{Events: []flagadmin.Event{}, Total: 0},
		{Events: nil, Total: 3},
	} {
		got, size := compactPage(&p)
		if !reflect.DeepEqual(*got, p) {
			t.Errorf("got %+v, want %+v", *got, p)
		}
		if min := int64(len(p.Events)) * int64(unsafe.Sizeof(flagadmin.Event{})); size < min {
			t.Errorf("size %d, want at least %d", size, min)
		}
		if cap(got.Events) != len(got.Events) {
			t.Errorf("events: cap %d, want len %d", cap(got.Events), len(got.Events))
		}
		for i := range got.Events {
			g, e := &got.Events[i], &p.Events[i]
			if cap(g.Data) != len(g.Data) || cap(g.PreData) != len(g.PreData) || cap(g.Tags) != len(g.Tags) {
				t.Errorf("event %d: a slice's capacity is past its length", g.ID)
			}
			if d := eventtest.Diff(*e, *g); d != nil {
				t.Errorf("event %d: fields not copied: %q", e.ID, d)
			}
			for _, f := range flagadmin.EventFields() {
				if sharesMemory(f.Value(g), f.Value(e)) {
					t.Errorf("event %d: %s shares memory with the page it was copied from", g.ID, f.Name)
				}
			}
		}
	}
}

// sharesMemory reports whether two values of an event field point to the
// same memory: the same pointer, the same first element of a slice or
// byte of a string, or a tag's string shared.
func sharesMemory(a, b any) bool {
	switch a := a.(type) {
	case string:
		b := b.(string)
		return a != "" && unsafe.StringData(a) == unsafe.StringData(b)
	case *string:
		b := b.(*string)
		return a != nil && (a == b || sharesMemory(*a, *b))
	case *int64:
		return a != nil && a == b.(*int64)
	case json.RawMessage:
		b := b.(json.RawMessage)
		return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
	case []flagadmin.Tag:
		b := b.([]flagadmin.Tag)
		if len(a) > 0 && len(b) > 0 && &a[0] == &b[0] {
			return true
		}
		for i := range min(len(a), len(b)) {
			if sharesMemory(a[i].Type, b[i].Type) || sharesMemory(a[i].Value, b[i].Value) {
				return true
			}
		}
	}
	return false
}
