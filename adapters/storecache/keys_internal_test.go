package storecache

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestEventQueryKeyHasEveryField sets each field of flagadmin.EventQuery in turn:
// each must change the result cache's key, and differently from every
// other field. A field added to flagadmin.EventQuery and not to appendEventQueryKey
// fails here (and one of a kind this test cannot set fails too, so that
// it is taught to).
func TestEventQueryKeyHasEveryField(t *testing.T) {
	typ := reflect.TypeFor[flagadmin.EventQuery]()
	day := time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)
	keys := map[string]string{string(appendEventQueryKey(nil, &flagadmin.EventQuery{})): "the zero query"}
	for i := range typ.NumField() {
		f := typ.Field(i)
		var q flagadmin.EventQuery
		v := reflect.ValueOf(&q).Elem().Field(i)
		switch {
		case f.Type == reflect.TypeFor[[]string]():
			v.Set(reflect.ValueOf([]string{"x"}))
		case f.Type == reflect.TypeFor[[]int64]():
			v.Set(reflect.ValueOf([]int64{1}))
		case f.Type == reflect.TypeFor[*time.Time]():
			v.Set(reflect.ValueOf(&day))
		case f.Type == reflect.TypeFor[*flagadmin.EventPosition]():
			v.Set(reflect.ValueOf(&flagadmin.EventPosition{CreatedAt: day, ID: 1}))
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
	pairs := [][2]flagadmin.EventQuery{
		{{Features: []string{"a,b"}}, {Features: []string{"a", "b"}}},
		{{Features: []string{"ab"}}, {Features: []string{"a", "b"}}},
		{{Features: []string{"a"}, Projects: []string{"b"}}, {Features: []string{"a", "b"}}},
		{{Text: "a", Features: nil}, {Features: []string{"a"}}},
		{{IDs: []int64{1, 2}}, {IDs: []int64{12}}},
		{{From: &d1}, {From: &d2}},
		{{From: &d1}, {Before: &d1}},
		{{HiddenProjects: []string{"p"}}, {HiddenProjects: []string{"p"}, RequireProject: true}},
		{{Limit: 50, Offset: 0}, {Limit: 0, Offset: 50}},
		{{TextScope: flagadmin.TextPayload}, {TextScope: flagadmin.TextPayloadTypeCreator}},
	}
	for _, p := range pairs {
		if a, b := appendEventQueryKey(nil, &p[0]), appendEventQueryKey(nil, &p[1]); string(a) == string(b) {
			t.Errorf("%+v and %+v have the same key", p[0], p[1])
		}
	}
	// Equal queries have equal keys, whatever the time zone of their dates.
	local := d1.In(time.FixedZone("X", 3600))
	if a, b := appendEventQueryKey(nil, &flagadmin.EventQuery{From: &d1}), appendEventQueryKey(nil, &flagadmin.EventQuery{From: &local}); string(a) != string(b) {
		t.Error("one instant in two time zones gives two keys")
	}
}

// TestStatsKeyHasEveryField: ProjectStatsQuery has the fields
// appendStatsKey and projectStats.holdsFor take into account; one added
// fails here until they are taught about it.
func TestStatsKeyHasEveryField(t *testing.T) {
	var names []string
	for f := range reflect.TypeFor[flagadmin.ProjectStatsQuery]().Fields() {
		names = append(names, f.Name)
	}
	if got := fmt.Sprint(names); got != "[Archived FavoritesOf PotentiallyStaleBefore]" {
		t.Errorf("ProjectStatsQuery has the fields %s: teach appendStatsKey about them", got)
	}
	one, two := int64(1), int64(2)
	cut := map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: time.Unix(0, 0)}
	later := map[flagadmin.FeatureType]time.Time{flagadmin.TypeRelease: time.Unix(1, 0)}
	keys := map[string]string{}
	for name, q := range map[string]flagadmin.ProjectStatsQuery{
		"zero": {}, "archived": {Archived: true}, "favorites of 1": {FavoritesOf: &one},
		"favorites of 2": {FavoritesOf: &two}, "a cut-off": {PotentiallyStaleBefore: cut},
	} {
		key := string(appendStatsKey(nil, &q))
		if other, dup := keys[key]; dup {
			t.Errorf("%s and %s have the same key", name, other)
		}
		keys[key] = name
	}
	// The times of the cut-offs are not part of the key (holdsFor decides).
	a, b := flagadmin.ProjectStatsQuery{PotentiallyStaleBefore: cut}, flagadmin.ProjectStatsQuery{PotentiallyStaleBefore: later}
	if string(appendStatsKey(nil, &a)) != string(appendStatsKey(nil, &b)) {
		t.Error("two cut-off times of one type give two keys")
	}
}
