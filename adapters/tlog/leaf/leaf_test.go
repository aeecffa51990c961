package leaf_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/transparency-dev/merkle/rfc6962"

	logleaf "github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// The leaf (v1) is rebuilt here from its definition with a separate RFC
// 8785 implementation (gowebpki/jcs) and RFC 6962's leaf hash.

// workedSalt and workedEvent are the worked example of docs/verifiable-log.md.
var workedSalt, _ = hex.DecodeString("000102030405060708090a0b0c0d0e0f")

func workedEvent() flagadmin.Event {
	uid := int64(3)
	return flagadmin.Event{ID: 2298, CreatedAt: time.Date(2026, 11, 23, 21, 49, 34, 314e6, time.UTC), Type: "feature-completed",
		CreatedBy: "admin", CreatedByUserID: &uid, Project: ptr("default"), FeatureName: ptr("new-onboarding-flow"),
		Data: json.RawMessage(`{"status":"kept","statusValue":"guided","kept":true}`),
		Tags: []flagadmin.Tag{{Type: "area", Value: "web", Color: flagadmin.ColorOf("#FFFFFF")}, {Type: "team", Value: "growth"}},
		Salt: workedSalt}
}

// leafByDefinition computes the leaf of e from the format's definition.
func leafByDefinition(t *testing.T, e flagadmin.Event) [32]byte {
	t.Helper()
	api, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(api, &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "id")
	noID, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	content, err := jcs.Transform(noID)
	if err != nil {
		t.Fatal(err)
	}
	commit := sha256.Sum256(append(append([]byte{}, e.Salt...), content...))
	r, err := json.Marshal(map[string]any{"id": e.ID, "createdAt": e.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"), "project": e.Project, "type": e.Type})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := jcs.Transform(r)
	if err != nil {
		t.Fatal(err)
	}
	input := append(append(append([]byte("flagadmin-leaf-v1\n"), rc...), '\n'), commit[:]...)
	var out [32]byte
	copy(out[:], rfc6962.DefaultHasher.HashLeaf(input))
	return out
}

// TestLeafWorkedExample pins the worked example of the docs: its content,
// commitment and leaf hash, and that the definition gives the same.
func TestLeafWorkedExample(t *testing.T) {
	e := workedEvent()
	content, err := logleaf.EventContent(e)
	if err != nil {
		t.Fatal(err)
	}
	const wantContent = `{"createdAt":"2026-11-23T21:49:34.314Z","createdBy":"admin","createdByUserId":3,"data":{"kept":true,"status":"kept","statusValue":"guided"},"environment":null,"featureName":"new-onboarding-flow","preData":null,"project":"default","tags":[{"color":"#FFFFFF","type":"area","value":"web"},{"type":"team","value":"growth"}],"type":"feature-completed"}`
	if string(content) != wantContent {
		t.Errorf("content:\n got %s\nwant %s", content, wantContent)
	}
	commit, err := logleaf.ContentCommitment(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := logleaf.LeafHash(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := leafByDefinition(t, e); got != want {
		t.Errorf("LeafHash %x, by the definition %x", got, want)
	}
	const wantCommit, wantLeaf = "9bec3b4c2f213b959b40fa70085229e8a74b6a699b12fe1cc8e690cd38473c3d", "37a54bc6388cba81c2568bb64a21386e2ee53544f7efd1989d946fb800a0a713"
	if hex.EncodeToString(commit[:]) != wantCommit || hex.EncodeToString(got[:]) != wantLeaf {
		t.Errorf("commit %x leaf %x, want %s and %s as the docs show", commit, got, wantCommit, wantLeaf)
	}
}

// TestLeafHash: the leaf is the definition's for events with every field
// set and with none; it depends on every field the API shows, on the
// salt, and not on how the stored JSON is spelled.
func TestLeafHash(t *testing.T) {
	uid := int64(-42)
	full := flagadmin.Event{
		ID: 1<<53 - 1, CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 678e6, time.UTC), Type: "feature-created",
		CreatedBy: "ädä <ada@example.com>\n", CreatedByUserID: &uid, Environment: ptr("production"),
		Project: ptr("default"), FeatureName: ptr("new-checkout"),
		Data:      json.RawMessage(`{"z":1.50,"a":"\u00e9","n":{"b":[1e2,true],"a":null}}`),
		PreData:   json.RawMessage(`{"k":"v"}`),
		Tags:      []flagadmin.Tag{{Type: "simple", Value: "zz", Color: flagadmin.ColorOf("#FFFFFF")}, {Type: "simple", Value: "aa"}, {Type: "team", Value: "core", Color: flagadmin.NullColor}},
		GroupType: ptr("transaction"), GroupID: ptr("01M8564MBTV5HMX3GH6SHGBVKG"), Salt: logleaf.NewSalt(),
	}
	empty := flagadmin.Event{ID: 1, Type: "user-created", CreatedBy: "x", Salt: logleaf.NewSalt()}
	for _, e := range []flagadmin.Event{full, empty} {
		got, err := logleaf.LeafHash(e)
		if err != nil {
			t.Fatal(err)
		}
		if want := leafByDefinition(t, e); got != want {
			t.Errorf("event %d: LeafHash %x, by the definition %x", e.ID, got, want)
		}
	}
	base, _ := logleaf.LeafHash(full)
	respelled := full
	respelled.Data = json.RawMessage(`{ "n":{"a":null,"b":[100,true]}, "a" : "\u00e9", "z":1.5 }`)
	if h, _ := logleaf.LeafHash(respelled); h != base {
		t.Errorf("the same data written otherwise: %x, want %x", h, base)
	}
	for name, change := range map[string]func(*flagadmin.Event){
		"id":          func(e *flagadmin.Event) { e.ID++ },
		"createdAt":   func(e *flagadmin.Event) { e.CreatedAt = e.CreatedAt.Add(time.Millisecond) },
		"type":        func(e *flagadmin.Event) { e.Type = "feature-updated" },
		"createdBy":   func(e *flagadmin.Event) { e.CreatedBy = "eve" },
		"userId":      func(e *flagadmin.Event) { n := int64(1); e.CreatedByUserID = &n },
		"environment": func(e *flagadmin.Event) { e.Environment = nil },
		"project":     func(e *flagadmin.Event) { e.Project = ptr("other") },
		"feature":     func(e *flagadmin.Event) { e.FeatureName = ptr("x") },
		"data":        func(e *flagadmin.Event) { e.Data = json.RawMessage(`{}`) },
		"preData":     func(e *flagadmin.Event) { e.PreData = nil },
		"tag color": func(e *flagadmin.Event) {
			e.Tags = append([]flagadmin.Tag{}, e.Tags...)
			e.Tags[0].Color = flagadmin.NullColor
		},
		"tag order": func(e *flagadmin.Event) { e.Tags = []flagadmin.Tag{e.Tags[1], e.Tags[0], e.Tags[2]} },
		"groupType": func(e *flagadmin.Event) { e.GroupType = nil },
		"groupId":   func(e *flagadmin.Event) { e.GroupID = ptr("01M8564MBTV5HMX3GH6SHGBVKH") },
		"salt":      func(e *flagadmin.Event) { e.Salt = logleaf.NewSalt() },
	} {
		e := full
		change(&e)
		if h, err := logleaf.LeafHash(e); err != nil || h == base {
			t.Errorf("%s changed: leaf %x (err %v), want another than %x", name, h, err, base)
		}
	}
	broken := full
	broken.PreData = json.RawMessage(`{"a":`)
	if _, err := logleaf.LeafHash(broken); !errors.Is(err, flagadmin.ErrValidation) {
		t.Errorf("preData that is not JSON: got %v, want ErrValidation", err)
	}
	unsalted := full
	unsalted.Salt = nil
	if _, err := logleaf.LeafHash(unsalted); !errors.Is(err, flagadmin.ErrValidation) {
		t.Errorf("no salt: got %v, want ErrValidation", err)
	}
}

// TestLeafOf: a leaf's hash is recomputed from its tombstone (id,
// createdAt, project, type, content commitment) alone, and LeafMatches
// tells the event it commits to from any other.
func TestLeafOf(t *testing.T) {
	e := workedEvent()
	hash, _ := logleaf.LeafHash(e)
	commit, _ := logleaf.ContentCommitment(e)
	leaf := vlog.Leaf{EventID: e.ID, Hash: hash, CreatedAt: e.CreatedAt, Project: e.Project, Type: e.Type, Content: commit}
	if got := logleaf.LeafOf(leaf); got != hash {
		t.Errorf("LeafOf the tombstone: %x, want %x", got, hash)
	}
	if ok, err := logleaf.LeafMatches(leaf, e); !ok || err != nil {
		t.Errorf("LeafMatches of its event: %v %v", ok, err)
	}
	for name, change := range map[string]func(*vlog.Leaf){
		"older":   func(l *vlog.Leaf) { l.CreatedAt = l.CreatedAt.AddDate(-1, 0, 0) },
		"project": func(l *vlog.Leaf) { l.Project = nil },
		"type":    func(l *vlog.Leaf) { l.Type = "feature-created" },
		"id":      func(l *vlog.Leaf) { l.EventID-- },
		"content": func(l *vlog.Leaf) { l.Content[0] ^= 1 },
	} {
		l := leaf
		change(&l)
		if logleaf.LeafOf(l) == hash {
			t.Errorf("tombstone with another %s: the same hash", name)
		}
		if ok, _ := logleaf.LeafMatches(l, e); ok {
			t.Errorf("tombstone with another %s: matches the event", name)
		}
	}
	other := e
	other.CreatedBy = "eve"
	if ok, _ := logleaf.LeafMatches(leaf, other); ok {
		t.Error("LeafMatches of a changed event: true")
	}
}

// TestLeafHashRefusesDataThatIsNotJSON: a leaf of data that is not JSON
// cannot be computed; the error says so.
func TestLeafHashRefusesDataThatIsNotJSON(t *testing.T) {
	e := flagadmin.Event{ID: 1, CreatedAt: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC), Type: "feature-created",
		Data: json.RawMessage(`{`), Salt: logleaf.NewSalt()}
	if _, err := logleaf.LeafHash(e); !errors.Is(err, flagadmin.ErrValidation) {
		t.Errorf("LeafHash of data that is not JSON: got %v, want ErrValidation", err)
	}
}

// TestEventContentIsTheLibrarys: the content is what the RFC 8785 library
// makes of the event's JSON without its id (SeedEventJSON), for events
// whose strings need every escape, with and without groups, tag colors,
// data and preData.
func TestEventContentIsTheLibrarys(t *testing.T) {
	uid := int64(-9007199254740992)
	odd := "q\"\\/\b\f\n\r\t\u0001\u001f\u007f\u2028\u2029é😀<&>"
	events := []flagadmin.Event{
		{CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC), Type: odd, CreatedBy: odd, CreatedByUserID: &uid,
			Environment: ptr(odd), Project: ptr(odd), FeatureName: ptr(odd), GroupType: ptr(odd), GroupID: ptr(odd),
			Data:    json.RawMessage(`{"z":[1e2,0.1,-5,1e21,1e-7,"` + "\\u0001\\ud83d\\ude00" + `"],"a":{"é":null,"e":true}}`),
			PreData: json.RawMessage(`[]`),
			Tags:    []flagadmin.Tag{{Type: odd, Value: odd, Color: flagadmin.ColorOf(odd)}, {Type: "t", Value: "v", Color: flagadmin.NullColor}, {Type: "a", Value: "b"}}},
		{Type: "x", CreatedBy: ""},
		{Type: "y", CreatedBy: "z", GroupID: ptr("only the id"), Tags: []flagadmin.Tag{}},
	}
	for i, e := range events {
		seed, err := flagadmin.SeedEventJSON(e)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jcs.Transform(seed)
		if err != nil {
			t.Fatal(err)
		}
		got, err := logleaf.EventContent(e)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("event %d:\n got %s\nwant %s", i, got, want)
		}
	}
}
func ptr[T any](v T) *T { return &v }
