package flagadmin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestSearchTexts(t *testing.T) {
	tests := []struct {
		name        string
		event       flagadmin.Event
		wantPayload string
		wantMeta    string
	}{
		{
			name: "data compacted and lower-cased",
			event: flagadmin.Event{Type: "feature-created", CreatedBy: "Ada@Example.com",
				Data: json.RawMessage("{ \"Name\" : \"New-Checkout\",\n  \"n\": [1, 2] }")},
			wantPayload: `{"name":"new-checkout","n":[1,2]}`,
			wantMeta:    "feature-created\nada@example.com",
		},
		{
			name: "data, preData and tags in that order",
			event: flagadmin.Event{Type: "feature-completed", CreatedBy: "admin",
				Data: json.RawMessage(`{"status":"kept"}`), PreData: json.RawMessage(`{"Stage": "Live"}`),
				Tags: []flagadmin.Tag{{Type: "simple", Value: "Checkout"}}},
			wantPayload: `{"status":"kept"}` + "\n" + `{"stage":"live"}` + "\n" + `[{"value":"checkout","type":"simple"}]`,
			wantMeta:    "feature-completed\nadmin",
		},
		{
			name:        "empty tags excluded",
			event:       flagadmin.Event{Type: "feature-created", CreatedBy: "x", Data: json.RawMessage(`{"a":1}`), Tags: []flagadmin.Tag{}},
			wantPayload: `{"a":1}`,
			wantMeta:    "feature-created\nx",
		},
		{
			name:        "null data excluded",
			event:       flagadmin.Event{Type: "user-created", CreatedBy: "x", Data: json.RawMessage("null"), PreData: json.RawMessage(`{"id":1}`)},
			wantPayload: `{"id":1}`,
			wantMeta:    "user-created\nx",
		},
		{
			name:        "tags alone",
			event:       flagadmin.Event{Type: "feature-tagged", CreatedBy: "x", Tags: []flagadmin.Tag{{Type: "simple", Value: "a1"}, {Type: "team", Value: "B2"}}},
			wantPayload: `[{"value":"a1","type":"simple"},{"value":"b2","type":"team"}]`,
			wantMeta:    "feature-tagged\nx",
		},
		{
			name:        "nothing to match",
			event:       flagadmin.Event{Type: "project-created", CreatedBy: "SYSTEM"},
			wantPayload: "",
			wantMeta:    "project-created\nsystem",
		},
		{
			name:        "HTML characters as written",
			event:       flagadmin.Event{Type: "feature-tagged", CreatedBy: "x", Tags: []flagadmin.Tag{{Type: "team", Value: "R&D <core>"}}},
			wantPayload: `[{"value":"r&d <core>","type":"team"}]`,
			wantMeta:    "feature-tagged\nx",
		},
		{
			name:        "escaped characters as written",
			event:       flagadmin.Event{Type: "feature-updated", CreatedBy: "x", Data: json.RawMessage(`{"v":"a\u0026b \u00C9t\u00e9 \ud83d\ude00 \\u0026 \"q\" \u0022 \n \u000a"}`)},
			wantPayload: `{"v":"a&b été 😀 \\u0026 \"q\" \u0022 \n \u000a"}`,
			wantMeta:    "feature-updated\nx",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload, meta := flagadmin.SearchTexts(tt.event)
			if payload != tt.wantPayload {
				t.Errorf("payload = %q, want %q", payload, tt.wantPayload)
			}
			if meta != tt.wantMeta {
				t.Errorf("meta = %q, want %q", meta, tt.wantMeta)
			}
		})
	}
}

// matches runs q.Matches on e with the texts SearchTexts returns for it.
func matches(q flagadmin.EventQuery, e flagadmin.Event) bool {
	payload, meta := flagadmin.SearchTexts(e)
	return q.Matches(e, payload, meta)
}

// matchesAt is when fullEvent was created.
var matchesAt = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

// fullEvent is an event whose every nullable column is set.
func fullEvent() flagadmin.Event {
	return flagadmin.Event{
		ID: 7, CreatedAt: matchesAt, Type: "feature-completed", CreatedBy: "Ada@Example.com",
		CreatedByUserID: ptr[int64](1), Environment: ptr("production"), Project: ptr("default"),
		FeatureName: ptr("new-checkout"), GroupType: ptr("transaction"), GroupID: ptr("3"),
		Data:    json.RawMessage(`{"status":"kept","statusValue":"100%_Done"}`),
		PreData: json.RawMessage(`{"stage":"live"}`),
		Tags:    []flagadmin.Tag{{Type: "simple", Value: "Checkout"}},
	}
}

func TestEventQueryMatches(t *testing.T) {
	at, full := matchesAt, fullEvent()
	bare := flagadmin.Event{ID: 8, CreatedAt: at, Type: "user-created", CreatedBy: "system"}
	tests := []struct {
		name      string
		q         flagadmin.EventQuery
		full      bool // want for full
		bareEvent bool // want for bare (every nullable column null)
	}{
		{"no filter", flagadmin.EventQuery{}, true, true},
		{"feature", flagadmin.EventQuery{Features: []string{"new-checkout"}}, true, false},
		{"feature one of", flagadmin.EventQuery{Features: []string{"x", "new-checkout"}}, true, false},
		{"feature other", flagadmin.EventQuery{Features: []string{"old-checkout"}}, false, false},
		{"feature case-sensitive", flagadmin.EventQuery{Features: []string{"New-Checkout"}}, false, false},
		{"feature empty string never matches null", flagadmin.EventQuery{Features: []string{""}}, false, false},
		{"project", flagadmin.EventQuery{Projects: []string{"default"}}, true, false},
		{"project other", flagadmin.EventQuery{Projects: []string{"Default"}}, false, false},
		{"type", flagadmin.EventQuery{Types: []string{"feature-completed"}}, true, false},
		{"types", flagadmin.EventQuery{Types: []string{"feature-completed", "user-created"}}, true, true},
		{"type other", flagadmin.EventQuery{Types: []string{"feature-created"}}, false, false},
		{"environment", flagadmin.EventQuery{Environments: []string{"production"}}, true, false},
		{"environment other", flagadmin.EventQuery{Environments: []string{"development"}}, false, false},
		{"createdBy", flagadmin.EventQuery{CreatedByUserIDs: []int64{1}}, true, false},
		{"createdBy other", flagadmin.EventQuery{CreatedByUserIDs: []int64{-42}}, false, false},
		{"id", flagadmin.EventQuery{IDs: []int64{7}}, true, false},
		{"ids", flagadmin.EventQuery{IDs: []int64{7, 8}}, true, true},
		{"groupId", flagadmin.EventQuery{GroupIDs: []string{"3"}}, true, false},
		{"groupId other", flagadmin.EventQuery{GroupIDs: []string{"4"}}, false, false},
		{"groupId is not a number", flagadmin.EventQuery{GroupIDs: []string{"03"}}, false, false},
		{"from at the instant", flagadmin.EventQuery{From: ptr(at)}, true, true},
		{"from after", flagadmin.EventQuery{From: ptr(at.Add(time.Millisecond))}, false, false},
		{"before at the instant", flagadmin.EventQuery{Before: ptr(at)}, false, false},
		{"before after", flagadmin.EventQuery{Before: ptr(at.Add(time.Millisecond))}, true, true},
		{"require project", flagadmin.EventQuery{RequireProject: true}, true, false},
		{"hidden project", flagadmin.EventQuery{HiddenProjects: []string{"secret", "default"}}, false, true},
		{"other project hidden", flagadmin.EventQuery{HiddenProjects: []string{"secret"}}, true, true},
		{"text in data", flagadmin.EventQuery{Text: "kept"}, true, false},
		{"text in preData", flagadmin.EventQuery{Text: `"stage":"live"`}, true, false},
		{"text in tags", flagadmin.EventQuery{Text: "checkout"}, true, false},
		{"text % and _ are literal", flagadmin.EventQuery{Text: "100%_done"}, true, false},
		{"text % is no wildcard", flagadmin.EventQuery{Text: "100%done"}, false, false},
		{"text _ is no wildcard", flagadmin.EventQuery{Text: "1_0"}, false, false},
		{"text not in type for the query-string search", flagadmin.EventQuery{Text: "feature-completed"}, false, false},
		{"text not in createdBy for the query-string search", flagadmin.EventQuery{Text: "ada@"}, false, false},
		{"text not in project or feature", flagadmin.EventQuery{Text: "new-checkout"}, false, false},
		{"text in type for the deprecated search", flagadmin.EventQuery{Text: "user-created", TextScope: flagadmin.TextPayloadTypeCreator}, false, true},
		{"text in createdBy for the deprecated search", flagadmin.EventQuery{Text: "ada@example", TextScope: flagadmin.TextPayloadTypeCreator}, true, false},
		{"text in data for the deprecated search", flagadmin.EventQuery{Text: "statusvalue", TextScope: flagadmin.TextPayloadTypeCreator}, true, false},
		{"text does not span type and creator", flagadmin.EventQuery{Text: "created system", TextScope: flagadmin.TextPayloadTypeCreator}, false, false},
		{"every filter must hold", flagadmin.EventQuery{Features: []string{"new-checkout"}, Projects: []string{"other"}}, false, false},
		{"all filters hold", flagadmin.EventQuery{
			Features: []string{"new-checkout"}, Projects: []string{"default"}, Types: []string{"feature-completed"},
			Environments: []string{"production"}, CreatedByUserIDs: []int64{1}, IDs: []int64{7}, GroupIDs: []string{"3"},
			From: ptr(at), Before: ptr(at.Add(time.Second)), Text: "kept", RequireProject: true, HiddenProjects: []string{"x"},
		}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matches(tt.q, full); got != tt.full {
				t.Errorf("full event: Matches = %v, want %v", got, tt.full)
			}
			if got := matches(tt.q, bare); got != tt.bareEvent {
				t.Errorf("event with null columns: Matches = %v, want %v", got, tt.bareEvent)
			}
		})
	}
}

// TestEventQueryMatchesEscapedText checks that a query finds characters that
// encoding/json escapes (& < >), as the search's users type them.
func TestEventQueryMatchesEscapedText(t *testing.T) {
	data, err := json.Marshal(map[string]string{"statusValue": "v1 & <v2>"})
	if err != nil {
		t.Fatal(err)
	}
	e := flagadmin.Event{ID: 1, Type: "feature-completed", CreatedBy: "x", Data: data,
		Tags: []flagadmin.Tag{{Type: "team", Value: "R&D"}}}
	for _, text := range []string{"v1 & <v2>", "r&d"} {
		if !matches(flagadmin.EventQuery{Text: text}, e) {
			t.Errorf("query %q does not match %s with tags %v", text, data, e.Tags)
		}
	}
}

func TestCompareEvents(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	events := []flagadmin.Event{
		{ID: 1, CreatedAt: t0},
		{ID: 2, CreatedAt: t0.Add(time.Hour)},
		{ID: 3, CreatedAt: t0},
		{ID: 4, CreatedAt: t0.Add(-time.Hour)},
		{ID: 5, CreatedAt: t0.Add(time.Hour)},
		{ID: 6, CreatedAt: t0.Add(time.Millisecond)},
	}
	slices.SortFunc(events, flagadmin.CompareEvents)
	var got []int64
	for _, e := range events {
		got = append(got, e.ID)
	}
	if want := []int64{5, 2, 6, 3, 1, 4}; !slices.Equal(got, want) {
		t.Errorf("sorted ids = %v, want %v (createdAt desc, then id desc)", got, want)
	}
	a, b := flagadmin.Event{ID: 1, CreatedAt: t0}, flagadmin.Event{ID: 2, CreatedAt: t0}
	if flagadmin.CompareEvents(a, b) <= 0 || flagadmin.CompareEvents(b, a) >= 0 {
		t.Errorf("same createdAt: want the higher id first")
	}
	if c := flagadmin.CompareEvents(a, a); c != 0 {
		t.Errorf("CompareEvents(a, a) = %d, want 0", c)
	}
	// The same instant in another zone is the same createdAt.
	inZone := flagadmin.Event{ID: 1, CreatedAt: t0.In(time.FixedZone("X", 3600))}
	if c := flagadmin.CompareEvents(a, inZone); c != 0 {
		t.Errorf("CompareEvents across zones = %d, want 0", c)
	}
}

// jsonTokens returns the token stream of JSON text, with strings and
// numbers lower-cased when lower is set.
func jsonTokens(t *testing.T, text []byte, lower bool) []any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var out []any
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("token stream of %q: %v", text, err)
		}
		switch v := tok.(type) {
		case string:
			if lower {
				tok = strings.ToLower(v)
			}
		case json.Number:
			if lower {
				tok = json.Number(strings.ToLower(string(v)))
			}
		}
		out = append(out, tok)
	}
}

// FuzzSearchTexts checks that the payload text of an event's data is JSON
// saying what the data says, lower-cased, however the data was escaped.
func FuzzSearchTexts(f *testing.F) {
	for _, seed := range []string{
		`{"a":1}`, `{"Name":"New-Checkout"}`, `{"v":"a\u0026b \u00C9 \ud83d\ude00 \\u0026 \" \u0022 \n \u000a"}`,
		`{"lone":"\ud800 \udc00 x"}`, `{"k":[true,null,1.5E3,{"x":"\u005C"}]}`, `{"İ":"ǅ"}`, `{}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		if !json.Valid([]byte(data)) || !strings.HasPrefix(strings.TrimSpace(data), "{") {
			return
		}
		payload, _ := flagadmin.SearchTexts(flagadmin.Event{Type: "feature-updated", CreatedBy: "x", Data: json.RawMessage(data)})
		if !json.Valid([]byte(payload)) {
			t.Fatalf("payload %q of %q is not JSON", payload, data)
		}
		if strings.ContainsAny(payload, "\n\r\t") {
			t.Fatalf("payload %q contains a raw control character", payload)
		}
		got, want := jsonTokens(t, []byte(payload), false), jsonTokens(t, []byte(data), true)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("payload %q of %q: tokens %q, want %q", payload, data, got, want)
		}
	})
}

func TestProjectHidden(t *testing.T) {
	hidden := []string{"payments", flagadmin.AllProjects}
	tests := []struct {
		project string
		hidden  []string
		want    bool
	}{
		{"default", hidden, false},
		{"payments", hidden, true},
		{"default,payments", hidden, true},
		{"payments,default", hidden, true},
		{"default,mobile,payments", hidden, true},
		{"default,mobile", hidden, false},
		{"default,payments-v2", hidden, false},
		{"Payments,default", hidden, false},
		{"*", hidden, true},
		{"*", nil, false},
		{"default,payments", nil, false},
		{"", hidden, false},
	}
	for _, tt := range tests {
		if got := flagadmin.ProjectHidden(tt.project, tt.hidden); got != tt.want {
			t.Errorf("ProjectHidden(%q, %q) = %v, want %v", tt.project, tt.hidden, got, tt.want)
		}
	}
}

// BenchmarkEventQueryMatches: the reference meaning runs once per event
// in the in-memory store, the webhooks and the live stream.
func BenchmarkEventQueryMatches(b *testing.B) {
	e := fullEvent()
	payload, meta := flagadmin.SearchTexts(e)
	for _, bc := range []struct {
		name string
		q    flagadmin.EventQuery
		want bool
	}{
		{"no filter", flagadmin.EventQuery{}, true},
		{"one filter", flagadmin.EventQuery{Projects: []string{"payments", "default"}}, true},
		{"every filter", flagadmin.EventQuery{
			Features: []string{"new-checkout"}, Projects: []string{"default"}, Types: []string{"feature-completed"},
			Environments: []string{"production"}, CreatedByUserIDs: []int64{1}, IDs: []int64{7}, GroupIDs: []string{"3"},
			From: ptr(matchesAt), HiddenProjects: []string{"secret"},
		}, true},
		{"miss", flagadmin.EventQuery{Types: []string{"feature-created", "feature-archived"}}, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if bc.q.Matches(e, payload, meta) != bc.want {
					b.Fatal("wrong answer")
				}
			}
		})
	}
}
