package eventjson_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/eventjson"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// The encoder writes the bytes of Event.MarshalJSON, which writes the
// declared fields (flagadmin.EventFields): an event with every field set
// (eventtest.Full) catches a field the hand-written encoder forgets.
// (adapters/httpapi tests it at length against encoding/json; this is the
// package's own check.)
func TestAppendEventIsMarshalJSON(t *testing.T) {
	by := int64(-42)
	env, project, feature := "production", "web<&>", "new\u2028nav\x01"
	events := []flagadmin.Event{
		{ID: 1, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 678_900_000, time.UTC), Type: flagadmin.EventFeatureCreated, CreatedBy: "ada \"admin\""},
		{ID: 2, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Type: flagadmin.EventFeatureCompleted, CreatedBy: "ci",
			CreatedByUserID: &by, Environment: &env, Project: &project, FeatureName: &feature,
			Data: json.RawMessage(`{"html":"<b>"}`), PreData: json.RawMessage(`[1,2]`), Tags: []flagadmin.Tag{{Type: "simple", Value: "é"}}},
	}
	events = append(events, eventtest.Full(t))
	for _, e := range events {
		want, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got := eventjson.AppendEvent([]byte("x"), &e); string(got) != "x"+string(want) {
			t.Errorf("AppendEvent:\ngot  %s\nwant x%s", got, want)
		}
	}
}

// TestAppendEventKeepsOneLine: data holding line breaks (only a database
// changed by hand holds them) is written compact, as MarshalJSON writes
// it, so an event stays one line of NDJSON.
func TestAppendEventKeepsOneLine(t *testing.T) {
	e := flagadmin.Event{ID: 7, Type: "feature-created", CreatedBy: "admin",
		Data: json.RawMessage("{\n  \"name\": \"a\\nb\",\r\n  \"n\": [1, 2]\n}"), PreData: json.RawMessage("[\n]")}
	got := eventjson.AppendEvent(nil, &e)
	if bytes.ContainsAny(got, "\r\n") {
		t.Fatalf("AppendEvent wrote a line break: %s", got)
	}
	want, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("AppendEvent:\n%s\nMarshalJSON:\n%s", got, want)
	}
}
