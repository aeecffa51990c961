package jsverify_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/eventjson"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/jsverify"
)

// nonIJSON are data texts outside I-JSON, normalized as they are written
// (RefuseOutOfRange) or imported (OutOfRangeAsString).
var nonIJSON = []struct {
	data string
	mode flagadmin.OutOfRange
}{
	{`{"n":9007199254740993}`, flagadmin.RefuseOutOfRange},
	{`{"n":99999999999999999999,"m":-123456789012345678901234567890}`, flagadmin.RefuseOutOfRange},
	{`{"n":[0.30000000000000000001,1e-400,-0]}`, flagadmin.RefuseOutOfRange},
	{`{"n":1e400,"m":[-1E+400]}`, flagadmin.OutOfRangeAsString},
	{`{"a":1,"b":{"k":"first","k":"second"},"a":3}`, flagadmin.RefuseOutOfRange},
	{`{"s":"a\ud800b","t":"\udc00\ud83d","\ud800":1,"\udc00":2}`, flagadmin.RefuseOutOfRange},
	{"{\"s\":\"a\xffb\"}", flagadmin.RefuseOutOfRange},
}

// ordinary are data texts already in I-JSON, chosen for what canonical
// JSON must get right: member order by UTF-16 code units, escapes, and
// numbers in ECMAScript's form.
var ordinary = []string{
	`{"enabled":true,"strategies":[{"name":"flexibleRollout","parameters":{"rollout":"50","stickiness":"default"}}]}`,
	`{"€":1,"\r":2,"😀":3,"ﬃ":4,"\u0080":5,"a\/b":"c\/d","é":"e\u0301","":null}`,
	`{"s":"\"\\\b\f\n\r\t\u0001\u001f\u007f\u2028\u2029 <>&","u":"\ud83d\ude00"}`,
	`{"n":[0,1,-1,1.0,1e0,100,1E2,0.1,1e21,1e+21,1e-7,5e-324,1.7976931348623157e308,-9007199254740992,333333333.3333332]}`,
	`{"deep":[[[[[[{"a":[{}]}]]]]]],"empty":{},"list":[]}`,
}

// events returns the events to verify: ordinary ones with every field
// set or not, and the non-I-JSON inputs after normalization.
func events(t *testing.T) []flagadmin.Event {
	t.Helper()
	at := time.Date(2026, 12, 2, 6, 30, 15, 123_000_000, time.UTC)
	str := func(s string) *string { return &s }
	admin, user := int64(flagadmin.AdminTokenUserID), int64(7)
	tags := []flagadmin.Tag{{Type: "simple", Value: "checkout"}, {Type: "team", Value: "Ünïcode ☃", Color: flagadmin.ColorOf("#34A853")}}
	var out []flagadmin.Event
	for i, data := range ordinary {
		e := flagadmin.Event{ID: int64(i + 1), CreatedAt: at.Add(time.Duration(i) * time.Second), Type: flagadmin.EventFeatureUpdated,
			CreatedBy: "ada@example.com", CreatedByUserID: &user, Data: json.RawMessage(data)}
		switch i % 3 {
		case 0:
			e.Project, e.FeatureName, e.Environment, e.Tags = str("default"), str("new-checkout"), str("production"), tags
			e.PreData = json.RawMessage(`{"enabled":false}`)
		case 1:
			e.CreatedByUserID, e.CreatedBy = &admin, "admin"
			e.GroupType, e.GroupID = str("transaction"), str("01JDQ8X4Y5Z6")
		case 2:
			e.CreatedByUserID = nil
			e.Project = str("Proj \"quoted\" é")
		}
		out = append(out, e)
	}
	for i, c := range nonIJSON {
		e := flagadmin.Event{ID: int64(100 + i), CreatedAt: at, Type: "release-plan-created", CreatedBy: "unleash",
			Project: str("default"), Data: json.RawMessage(c.data), PreData: json.RawMessage(c.data)}
		if _, err := flagadmin.NormalizeEvent(&e, c.mode); err != nil {
			t.Fatalf("NormalizeEvent(%s): %v", c.data, err)
		}
		out = append(out, e)
	}
	// The largest id a store draws (2^53).
	out = append(out, flagadmin.Event{ID: 1 << 53, CreatedAt: at, Type: flagadmin.EventFeatureCreated, CreatedBy: "x"})
	for i := range out {
		out[i].Salt = leaf.NewSalt()
	}
	return out
}

func lines(t *testing.T, events []flagadmin.Event) []jsverify.Line {
	t.Helper()
	var out []jsverify.Line
	for _, e := range events {
		l, err := jsverify.LineOf(e)
		if err != nil {
			t.Fatalf("event %d: %v", e.ID, err)
		}
		out = append(out, l)
	}
	return out
}

// TestNodeAgreesOnEveryLeaf: the leaves flagadmin computes are the ones a
// verifier in JavaScript computes from the API's JSON with npm's strict
// RFC 8785 implementation, ordinary events and normalized ones alike.
func TestNodeAgreesOnEveryLeaf(t *testing.T) {
	ls := lines(t, events(t))
	out, ok := jsverify.Run(t, ls)
	if !ok {
		t.Fatalf("verify.mjs found mismatches:\n%s", out)
	}
	if want := fmt.Sprintf("%d leaves, 0 mismatches", len(ls)); !strings.Contains(out, want) {
		t.Errorf("verify.mjs said %q, want %q", out, want)
	}
}

// TestNodeFindsAWrongLeaf: the verifier is not a rubber stamp. A leaf that
// is not the event's (as if flagadmin had computed it wrong), or an event
// changed after its leaf was computed, is reported, naming the event, and
// nothing else is.
func TestNodeFindsAWrongLeaf(t *testing.T) {
	evs := events(t)
	ls := lines(t, evs)
	wrongLeaf, changed := 2, len(ordinary)+1 // an ordinary event, a normalized one
	b := []byte(ls[wrongLeaf].Leaf)
	b[10] ^= 1 // '0'..'9' and 'a'..'f' stay hex digits
	ls[wrongLeaf].Leaf = string(b)
	e := evs[changed]
	if want := `{"n":100000000000000000000,"m":-1.2345678901234568e+29}`; string(e.Data) != want {
		t.Fatalf("normalized data %s, want %s", e.Data, want)
	}
	e.Data = json.RawMessage(`{"n":100000000000000000000,"m":-1.2345678901234e+29}`)
	ls[changed].Event = eventjson.AppendEvent(nil, &e)
	out, ok := jsverify.Run(t, ls)
	if ok {
		t.Fatalf("verify.mjs accepted a wrong leaf and a changed event:\n%s", out)
	}
	for _, want := range []string{
		fmt.Sprintf("MISMATCH line %d (event %d)", wrongLeaf+1, evs[wrongLeaf].ID),
		fmt.Sprintf("MISMATCH line %d (event %d)", changed+1, evs[changed].ID),
		fmt.Sprintf("%d leaves, 2 mismatches", len(ls)),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify.mjs output: no %q in\n%s", want, out)
		}
	}
}
