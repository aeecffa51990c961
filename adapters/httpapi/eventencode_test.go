package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// The reflection encoding Event.MarshalJSON used before the hand-written
// encoder (with groupType and groupId left out when absent, as Unleash
// leaves them out): the oracle the tests compare it with, byte for byte.

type oracleTime time.Time

func (t oracleTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(flagadmin.TimeLayout) + `"`), nil
}

type oracleEvent struct {
	ID              int64           `json:"id"`
	CreatedAt       oracleTime      `json:"createdAt"`
	Type            string          `json:"type"`
	CreatedBy       string          `json:"createdBy"`
	CreatedByUserID *int64          `json:"createdByUserId"`
	Environment     *string         `json:"environment"`
	Project         *string         `json:"project"`
	FeatureName     *string         `json:"featureName"`
	Data            json.RawMessage `json:"data"`
	PreData         json.RawMessage `json:"preData"`
	Tags            []flagadmin.Tag `json:"tags"`
	GroupType       *string         `json:"groupType,omitempty"`
	GroupID         *string         `json:"groupId,omitempty"`
}

// oracleMarshal is json.Marshal without HTML escaping.
func oracleMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func toOracle(e flagadmin.Event) oracleEvent {
	tags := e.Tags
	if tags == nil {
		tags = []flagadmin.Tag{}
	}
	return oracleEvent{
		ID: e.ID, CreatedAt: oracleTime(e.CreatedAt), Type: e.Type, CreatedBy: e.CreatedBy,
		CreatedByUserID: e.CreatedByUserID, Environment: e.Environment, Project: e.Project,
		FeatureName: e.FeatureName, Data: e.Data, PreData: e.PreData, Tags: tags,
		GroupType: e.GroupType, GroupID: e.GroupID,
	}
}

// oldMarshalEvent is the former Event.MarshalJSON.
func oldMarshalEvent(e flagadmin.Event) ([]byte, error) { return oracleMarshal(toOracle(e)) }

// stored returns e as the Service stores it (normalizeEvent): data and
// preData nil, or compact JSON objects; ok is false when the Service
// refuses them.
func stored(e flagadmin.Event) (_ flagadmin.Event, ok bool) {
	for _, raw := range []*json.RawMessage{&e.Data, &e.PreData} {
		trimmed := bytes.TrimSpace(*raw)
		if *raw == nil || len(trimmed) == 0 || string(trimmed) == "null" {
			*raw = nil
			continue
		}
		var buf bytes.Buffer
		if trimmed[0] != '{' || json.Compact(&buf, trimmed) != nil {
			return e, false
		}
		*raw = buf.Bytes()
	}
	return e, true
}

// wantSameJSON checks every way of encoding e, as the Service stores it,
// against the oracle: the edge encoder, Event.MarshalJSON, and
// encoding/json over a slice of events. An event the Service refuses to
// store is only checked to fail Event.MarshalJSON as the oracle fails.
func wantSameJSON(t *testing.T, e flagadmin.Event) {
	t.Helper()
	e, ok := stored(e)
	want, wantErr := oldMarshalEvent(e)
	got, gotErr := e.MarshalJSON()
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("MarshalJSON(%#v): got error %v, want error %v", e, gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("MarshalJSON(%#v):\ngot  %s\nwant %s", e, got, want)
	}
	if !ok {
		return
	}
	if wantErr != nil {
		t.Fatalf("oracle of a storable event: %v", wantErr)
	}
	if app := appendEvent([]byte("prefix"), &e); string(app) != "prefix"+string(want) {
		t.Fatalf("appendEvent:\ngot  %s\nwant prefix%s", app, want)
	}
	// Through an outer encoder, which compacts MarshalJSON's output again
	// (and fails when raw JSON nested 10,000 deep is nested once more).
	outer, outerErr := oracleMarshal([]flagadmin.Event{e})
	wantOuter, wantOuterErr := oracleMarshal([]oldEvent{oldEvent(e)})
	if (outerErr != nil) != (wantOuterErr != nil) || !bytes.Equal(outer, wantOuter) {
		t.Fatalf("json of []Event: got %.200s (error %v), want %.200s (error %v)", outer, outerErr, wantOuter, wantOuterErr)
	}
}

// oldEvent is an Event with the former MarshalJSON.
type oldEvent flagadmin.Event

func (e oldEvent) MarshalJSON() ([]byte, error) { return oldMarshalEvent(flagadmin.Event(e)) }

func TestEventJSONTable(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 6_789_000, time.UTC)
	cases := []struct {
		name string
		e    flagadmin.Event
	}{
		{"zero", flagadmin.Event{}},
		{"full", flagadmin.Event{
			ID: 42, CreatedAt: at, Type: "feature-created", CreatedBy: "ada@example.com",
			CreatedByUserID: ptr[int64](1), Environment: ptr("production"), Project: ptr("default"),
			FeatureName: ptr("new-checkout"), Data: json.RawMessage(`{"name":"new-checkout","enabled":true}`),
			PreData: json.RawMessage(`{"enabled":false}`), Tags: []flagadmin.Tag{{Value: "checkout", Type: "simple"}, {Value: "b", Type: "c"}},
			GroupType: ptr("transaction"), GroupID: ptr("01M8564MBTV5HMX3GH6SHGBVKG"),
		}},
		{"empty tags", flagadmin.Event{Tags: []flagadmin.Tag{}}},
		{"empty strings", flagadmin.Event{Environment: ptr(""), Project: ptr(""), FeatureName: ptr("")}},
		{"extreme ids", flagadmin.Event{ID: math.MinInt64, CreatedByUserID: ptr[int64](math.MaxInt64)}},
		{"negative user", flagadmin.Event{ID: 1, CreatedByUserID: ptr[int64](-1337)}},
		{"html", flagadmin.Event{Type: "<script>&amp;</script>", CreatedBy: "a&b<c>d", Tags: []flagadmin.Tag{{Value: "<>", Type: "&&"}}}},
		{"short escapes", flagadmin.Event{CreatedBy: "\"quoted\" back\\slash \b\f\n\r\t /"}},
		{"control characters", flagadmin.Event{CreatedBy: "\x00\x01\x07\x0b\x0e\x1f\x7f end"}},
		{"line separators", flagadmin.Event{CreatedBy: "a\u2028b\u2029c\u202a", Project: ptr("\u2028")}},
		{"invalid utf-8", flagadmin.Event{CreatedBy: "\xff\xfe ok \xc3 \xe2\x80 \xed\xa0\x80 \xf4\x90\x80\x80 end\xe2"}},
		{"unicode", flagadmin.Event{CreatedBy: "é 😀 \ufffd \uffff 中文"}},
		{"null data", flagadmin.Event{Data: json.RawMessage("null"), PreData: json.RawMessage(" null ")}},
		{"spaced data", flagadmin.Event{Data: json.RawMessage(" {\n\t\"a\" : [ 1 , 2.5e-3 , -0 , true , false , null , { } , [ ] ] ,\r\n \"b c\" : \" x \" } \n")}},
		{"data escapes kept", flagadmin.Event{Data: json.RawMessage(`{"a":"\u003c\u2028\/\"\\ <&> ` + "\u2028\xff" + `"}`)}},
		{"data scalar", flagadmin.Event{Data: json.RawMessage(`"text"`), PreData: json.RawMessage(`12`)}},
		{"empty data", flagadmin.Event{Data: json.RawMessage{}}},
		{"blank data", flagadmin.Event{Data: json.RawMessage("  ")}},
		{"invalid data", flagadmin.Event{Data: json.RawMessage(`{"a":}`)}},
		{"invalid preData", flagadmin.Event{PreData: json.RawMessage(`{"a":1}x`)}},
		{"two values", flagadmin.Event{Data: json.RawMessage(`{} {}`)}},
		{"control in data string", flagadmin.Event{Data: json.RawMessage("{\"a\":\"\n\"}")}},
		{"deep data", flagadmin.Event{Data: json.RawMessage(strings.Repeat("[", 10000) + strings.Repeat("]", 10000))}},
		{"too deep data", flagadmin.Event{Data: json.RawMessage(strings.Repeat("[", 10001) + strings.Repeat("]", 10001))}},
		{"zero time", flagadmin.Event{CreatedAt: time.Time{}}},
		{"year 0", flagadmin.Event{CreatedAt: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"negative year", flagadmin.Event{CreatedAt: time.Date(-44, 3, 15, 12, 0, 0, 0, time.UTC)}},
		{"year 9999", flagadmin.Event{CreatedAt: time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)}},
		{"year 999", flagadmin.Event{CreatedAt: time.Date(999, 2, 3, 4, 5, 6, 7_000_000, time.UTC)}},
		{"year 10000", flagadmin.Event{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"other zone", flagadmin.Event{CreatedAt: time.Date(2025, 6, 30, 23, 59, 59, 999_999_999, time.FixedZone("X", -5*3600))}},
		{"local", flagadmin.Event{CreatedAt: time.Unix(1_700_000_000, 123_456_789)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantSameJSON(t, c.e) })
	}
}

// TestEventJSONWorld compares every event of a generated world, the data
// the benchmarks and load tests serve.
func TestEventJSONWorld(t *testing.T) {
	w, err := worldgen.New(worldgen.Config{Events: 5000, Projects: 20, Features: 300, Users: 50, Groups: 5, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	events := w.FirstEvents(5000)
	for i := range events {
		events[i].ID = int64(i + 1)
		wantSameJSON(t, events[i])
	}
	page := flagadmin.EventPage{Events: events[:1000], Total: 123456}
	old := make([]oldEvent, len(page.Events))
	for i, e := range page.Events {
		old[i] = oldEvent(e)
	}
	want, err := oracleMarshal(struct {
		Events []oldEvent `json:"events"`
		Total  int        `json:"total"`
	}{old, page.Total})
	if err != nil {
		t.Fatal(err)
	}
	if got := appendSearchEventsBody(nil, page); string(got) != string(want)+"\n" {
		t.Fatalf("appendSearchEventsBody differs from encoding/json:\ngot  %.300s\nwant %.300s", got, want)
	}
}

func TestEventPageJSON(t *testing.T) {
	good := flagadmin.Event{ID: 1, Type: "feature-created", Tags: []flagadmin.Tag{{Value: "v<", Type: "t&"}}, Data: json.RawMessage(`{"a":[1,"<&>"]}`)}
	cases := []struct {
		name string
		page flagadmin.EventPage
	}{
		{"nil events", flagadmin.EventPage{}},
		{"no events", flagadmin.EventPage{Events: []flagadmin.Event{}, Total: 3}},
		{"events", flagadmin.EventPage{Events: []flagadmin.Event{good, good}, Total: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := oracleMarshal(c.page)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendSearchEventsBody([]byte("x"), c.page); string(got) != "x"+string(want)+"\n" {
				t.Fatalf("got %s, want x%s", got, want)
			}
			arr := appendEvents(nil, c.page.Events)
			wantArr, _ := oracleMarshal(c.page.Events)
			if !bytes.Equal(arr, wantArr) {
				t.Fatalf("appendEvents: got %s, want %s", arr, wantArr)
			}
		})
	}
}

// FuzzEventJSON compares the hand-written encoder with the reflection one
// on arbitrary strings, times and raw JSON.
func FuzzEventJSON(f *testing.F) {
	f.Add(int64(1), int64(1735787045006), "feature-created", "ada@example.com", "production", "a<b>", `{"a":1}`, `null`, "v", "t", uint8(0))
	f.Add(int64(-1), int64(-62135596800000), "\u2028\xff\x01", "\"\\", "", "", ` { "a" : [ 1 , "x" ] } `, `{"b":"\u2029"}`, "\xc3", "\x7f", uint8(0xff))
	f.Add(int64(0), int64(math.MaxInt64/1_000_000), "", "", "", "", ``, `{`, "", "", uint8(0x3f))
	f.Fuzz(func(t *testing.T, id, ms int64, typ, by, env, feature, data, preData, tagValue, tagType string, flags uint8) {
		e := flagadmin.Event{ID: id, CreatedAt: time.UnixMilli(ms), Type: typ, CreatedBy: by}
		if flags&1 != 0 {
			e.CreatedByUserID = ptr(id ^ ms)
		}
		if flags&2 != 0 {
			e.Environment = ptr(env)
		}
		if flags&4 != 0 {
			e.Project = ptr(env + feature)
		}
		if flags&8 != 0 {
			e.FeatureName = ptr(feature)
		}
		if flags&16 != 0 {
			e.Data = json.RawMessage(data)
		}
		if flags&32 != 0 {
			e.PreData = json.RawMessage(preData)
		}
		if flags&64 != 0 {
			e.Tags = []flagadmin.Tag{}
		}
		if flags&128 != 0 {
			e.Tags = append(e.Tags, flagadmin.Tag{Value: tagValue, Type: tagType}, flagadmin.Tag{Value: tagType, Type: by})
		}
		if flags&(2|8) == 2|8 {
			e.GroupType, e.GroupID = ptr(tagType), ptr(feature+tagValue)
		}
		wantSameJSON(t, e)
	})
}

// benchPage is a realistic page: 50 events of a generated world.
func benchPage(b *testing.B) flagadmin.EventPage {
	b.Helper()
	w, err := worldgen.New(worldgen.Config{Events: 2000, Projects: 20, Features: 300, Users: 50, Groups: 5, Seed: 11})
	if err != nil {
		b.Fatal(err)
	}
	events := w.FirstEvents(2000)[1950:]
	for i := range events {
		events[i].ID = int64(1950 + i)
	}
	return flagadmin.EventPage{Events: events, Total: 1_000_000}
}

// BenchmarkEventPageJSON encodes a page of 50 events as the search
// response: "reflection" the way it was served before (encoding/json over
// the page, calling the reflection MarshalJSON of every event and
// compacting its output), "marshal" encoding/json calling the new
// MarshalJSON, "append" the hand-written encoder into a reused buffer.
func BenchmarkEventPageJSON(b *testing.B) {
	page := benchPage(b)
	old := make([]oldEvent, len(page.Events))
	for i, e := range page.Events {
		old[i] = oldEvent(e)
	}
	type oldPage struct {
		Events []oldEvent `json:"events"`
		Total  int        `json:"total"`
	}
	size := 0
	b.Run("reflection", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(oldPage{old, page.Total}); err != nil {
				b.Fatal(err)
			}
		}
		size = buf.Len()
		b.SetBytes(int64(size))
	})
	b.Run("marshal", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(page); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(buf.Len()))
	})
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendSearchEventsBody(buf[:0], page)
		}
		b.SetBytes(int64(len(buf)))
	})
}

// BenchmarkEventMarshalJSON is one event's MarshalJSON, before and after.
func BenchmarkEventMarshalJSON(b *testing.B) {
	e := benchPage(b).Events[0]
	b.Run("reflection", func(b *testing.B) {
		for b.Loop() {
			if _, err := oldMarshalEvent(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendEvent(buf[:0], &e)
		}
	})
}

// TestAppendJSONStringLikeEncodingJSON compares the string escaping with
// encoding/json's on every byte and on the runes around its special cases.
func TestAppendJSONStringLikeEncodingJSON(t *testing.T) {
	var inputs []string
	for c := 0; c < 256; c++ {
		inputs = append(inputs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	for _, r := range []rune{0x7f, 0x80, 0x7ff, 0x800, 0x2027, 0x2028, 0x2029, 0x202a, 0xd7ff, 0xe000, 0xfffd, 0xffff, 0x10000, 0x10ffff} {
		inputs = append(inputs, string(r), "x"+string(r)+"y")
	}
	inputs = append(inputs, "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x80", "\xe2\x80\xa8\xe2", "")
	for _, s := range inputs {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got)+"\n" != want.String() {
			t.Errorf("appendJSONString(%q): got %s, want %s", s, got, want.Bytes())
		}
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
