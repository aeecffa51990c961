package flagadmin

import (
	"reflect"
	"testing"
	"time"
)

// TestEventQueryKeyHasEveryField sets each field of EventQuery in turn:
// each must change the result cache's key, and differently from every
// other field. A field added to EventQuery and not to appendEventQueryKey
// fails here (and one of a kind this test cannot set fails too, so that
// it is taught to).
func TestEventQueryKeyHasEveryField(t *testing.T) {
	typ := reflect.TypeFor[EventQuery]()
	day := time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)
	keys := map[string]string{string(appendEventQueryKey(nil, &EventQuery{})): "the zero query"}
	for i := range typ.NumField() {
		f := typ.Field(i)
		var q EventQuery
		v := reflect.ValueOf(&q).Elem().Field(i)
		switch {
		case f.Type == reflect.TypeFor[[]string]():
			v.Set(reflect.ValueOf([]string{"x"}))
		case f.Type == reflect.TypeFor[[]int64]():
			v.Set(reflect.ValueOf([]int64{1}))
		case f.Type == reflect.TypeFor[*time.Time]():
			v.Set(reflect.ValueOf(&day))
		case f.Type == reflect.TypeFor[*EventPosition]():
			v.Set(reflect.ValueOf(&EventPosition{CreatedAt: day, ID: 1}))
		case f.Type.Kind() == reflect.String:
			v.SetString("x")
		case f.Type.Kind() == reflect.Bool:
			v.SetBool(true)
		case f.Type.Kind() == reflect.Int:
			v.SetInt(1)
		default:
			t.Fatalf("EventQuery.%s is a %s: teach this test (and appendEventQueryKey) about it", f.Name, f.Type)
		}
		key := string(appendEventQueryKey(nil, &q))
		if other, dup := keys[key]; dup {
			t.Errorf("setting EventQuery.%s gives the key of %s: is it part of appendEventQueryKey?", f.Name, other)
		}
		keys[key] = "EventQuery." + f.Name
	}
}

// TestEventQueryKeyDelimits: values that run together differently give
// different keys.
func TestEventQueryKeyDelimits(t *testing.T) {
	d1 := time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)
	d2 := d1.Add(time.Nanosecond)
	pairs := [][2]EventQuery{
		{{Features: []string{"a,b"}}, {Features: []string{"a", "b"}}},
		{{Features: []string{"ab"}}, {Features: []string{"a", "b"}}},
		{{Features: []string{"a"}, Projects: []string{"b"}}, {Features: []string{"a", "b"}}},
		{{Text: "a", Features: nil}, {Features: []string{"a"}}},
		{{IDs: []int64{1, 2}}, {IDs: []int64{12}}},
		{{From: &d1}, {From: &d2}},
		{{From: &d1}, {Before: &d1}},
		{{HiddenProjects: []string{"p"}}, {HiddenProjects: []string{"p"}, RequireProject: true}},
		{{Limit: 50, Offset: 0}, {Limit: 0, Offset: 50}},
		{{TextScope: TextPayload}, {TextScope: TextPayloadTypeCreator}},
	}
	for _, p := range pairs {
		if a, b := appendEventQueryKey(nil, &p[0]), appendEventQueryKey(nil, &p[1]); string(a) == string(b) {
			t.Errorf("%+v and %+v have the same key", p[0], p[1])
		}
	}
	// Equal queries have equal keys, whatever the time zone of their dates.
	local := d1.In(time.FixedZone("X", 3600))
	if a, b := appendEventQueryKey(nil, &EventQuery{From: &d1}), appendEventQueryKey(nil, &EventQuery{From: &local}); string(a) != string(b) {
		t.Error("one instant in two time zones gives two keys")
	}
}

// TestEncodedEventsFollowTheSlice: a page's memoized JSON is used only
// while Events is the slice it was encoded from.
func TestEncodedEventsFollowTheSlice(t *testing.T) {
	events := []Event{{ID: 2, Type: "a"}, {ID: 1, Type: "b"}}
	page := EventPage{Events: events, Total: 2, encoded: encodeEvents(events)}
	page.encoded.json = []byte(`"memo"`) // to see which bytes are written
	cases := []struct {
		name     string
		events   []Event
		wantMemo bool
	}{
		{"the same slice", events, true},
		{"a shorter one", events[:1], false},
		{"a copy", append([]Event(nil), events...), false},
		{"none", nil, false},
		{"empty", []Event{}, false},
	}
	for _, c := range cases {
		p := page
		p.Events = c.events
		got, err := p.AppendEventsJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if memo := string(got) == `"memo"`; memo != c.wantMemo {
			t.Errorf("%s: wrote %s, want the memoized bytes: %v", c.name, got, c.wantMemo)
		}
	}
	if encodeEvents(nil) != nil || encodeEvents([]Event{}) != nil {
		t.Error("empty events are encoded")
	}
	if encodeEvents([]Event{{Data: []byte(`{"broken":`)}}) != nil {
		t.Error("events that cannot be encoded are encoded")
	}
}
