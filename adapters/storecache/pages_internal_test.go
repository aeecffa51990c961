package storecache

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// compactPage copies a page exactly (nil and empty as they were), shares
// nothing with it, caps its slices, and counts at least the arrays it
// made.
func TestCompactPage(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(n int64) *int64 { return &n }
	full := flagadmin.Event{
		ID: 7, CreatedAt: time.UnixMilli(1700000000123).UTC(), Type: "feature-tagged", CreatedBy: "ada@example.com",
		CreatedByUserID: num(1), Environment: str("production"), Project: str("shop"), FeatureName: str("checkout"),
		Data: json.RawMessage(`{"value":"red","type":"simple"}`), PreData: json.RawMessage(`{"enabled":false}`),
		Tags: []flagadmin.Tag{{Value: "red", Type: "simple"}, {Value: "blue", Type: "color"}}, GroupType: str("transaction"), GroupID: str("3"),
	}
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
			if len(e.Data) > 0 && &g.Data[0] == &e.Data[0] || g.Project != nil && g.Project == e.Project ||
				g.GroupID != nil && g.GroupID == e.GroupID || len(g.Tags) > 0 && &g.Tags[0] == &e.Tags[0] ||
				g.Type != "" && unsafe.StringData(g.Type) == unsafe.StringData(e.Type) {
				t.Errorf("event %d shares memory with the page it was copied from", g.ID)
			}
		}
	}
}
