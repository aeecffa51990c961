package flagadmin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// nonIJSON are data texts outside I-JSON, or numbers the API would show
// with a precision no double holds, with their normal form: what the
// event stores and shows, and its leaf commits to.
var nonIJSON = []struct {
	name, in, want string
}{
	{"an integer beyond 2^53", `{"n":9007199254740993}`, `{"n":9007199254740992}`},
	{"a 20-digit integer", `{"n":12345678901234567891}`, `{"n":12345678901234567000}`},
	{"a 20-digit integer plus one", `{"n":99999999999999999999}`, `{"n":100000000000000000000}`},
	{"a 30-digit integer", `{"n":-123456789012345678901234567890}`, `{"n":-1.2345678901234568e+29}`},
	{"a fraction beyond double precision", `{"n":0.30000000000000000001}`, `{"n":0.3}`},
	{"a number below the smallest double", `{"n":[1e-400,-1e-400]}`, `{"n":[0,0]}`},
	{"a negative zero", `{"n":-0.0}`, `{"n":0}`},
	{"a name given twice: the last one wins", `{"a":1,"b":2,"a":3}`, `{"b":2,"a":3}`},
	{"a name given twice in a nested object", `{"x":{"k":"first","k":"second"},"y":[{"k":1,"k":2}]}`, `{"x":{"k":"second"},"y":[{"k":2}]}`},
	{"an unpaired high surrogate", `{"s":"a\uD800b"}`, "{\"s\":\"a\uFFFDb\"}"},
	{"an unpaired low surrogate", `{"s":"\udc00"}`, "{\"s\":\"\uFFFD\"}"},
	{"a reversed pair", `{"s":"\ude00\ud83d"}`, "{\"s\":\"\uFFFD\uFFFD\"}"},
	{"a byte that is not UTF-8", "{\"s\":\"a\xffb\\n\"}", "{\"s\":\"a\uFFFDb\\n\"}"},
	{"names that become one", `{"\ud800":1,"\udc00":2}`, "{\"\uFFFD\":2}"},
}

// ijsonKept are texts in the normal form already: they stay as they are.
var ijsonKept = []string{
	`{"n":[1,1.0,1e0,100,1E2,0.1,1e+21,1e21,5e-324,-9007199254740992,1.7976931348623157e308,0]}`,
	`{"s":"\ud83d\ude00 😀 \u00e9 \/ \" \\ \u2028","":null,"t":true,"f":false,"a":[],"o":{}}`,
	`{"deep":[[[[{"a":[{}]}]]]]}`,
}

// TestNormalizeEvent checks each rule of the normal form on data and
// preData, that the normal form is kept as it is, and that the content a
// leaf commits to is then what a strict RFC 8785 implementation writes.
func TestNormalizeEvent(t *testing.T) {
	for _, c := range nonIJSON {
		t.Run(c.name, func(t *testing.T) {
			for _, mode := range []flagadmin.OutOfRange{flagadmin.RefuseOutOfRange, flagadmin.OutOfRangeAsString} {
				e := normalEventOf(c.in)
				e.PreData = json.RawMessage(c.in)
				changes, err := flagadmin.NormalizeEvent(&e, mode)
				if err != nil {
					t.Fatalf("NormalizeEvent: %v", err)
				}
				if string(e.Data) != c.want || string(e.PreData) != c.want {
					t.Errorf("data %s, preData %s; want %s", e.Data, e.PreData, c.want)
				}
				if len(changes) < 2 || len(changes)%2 != 0 || !strings.HasPrefix(changes[0], "data: ") ||
					!strings.HasPrefix(changes[len(changes)/2], "preData: ") {
					t.Errorf("changes: %q, want the same for data and preData", changes)
				}
				checkStrictContent(t, e)
			}
			// The event as given is not in the form: the log does not
			// commit to a value other than the one the API shows.
			if _, err := leaf.LeafHash(normalEventOf(c.in)); err == nil {
				t.Errorf("LeafHash of %s: got no error, want it refused as not in the normal form", c.in)
			}
		})
	}
	for _, in := range ijsonKept {
		e := normalEventOf(in)
		changes, err := flagadmin.NormalizeEvent(&e, flagadmin.RefuseOutOfRange)
		if err != nil || len(changes) != 0 || string(e.Data) != in {
			t.Errorf("NormalizeEvent(%s): data %s, changes %q, %v; want it kept", in, e.Data, changes, err)
		}
		checkStrictContent(t, e)
	}
}

// TestNormalizeEventOutOfRange: a number beyond the range of a double is
// refused naming the field where the writer can say what it means, and
// kept as the string of its text on import.
func TestNormalizeEventOutOfRange(t *testing.T) {
	in := `{"a":[1,{"b~/":1e400}],"c":-1E+400}`
	e := normalEventOf(in)
	_, err := flagadmin.NormalizeEvent(&e, flagadmin.RefuseOutOfRange)
	v := wantValidation(t, err, "data")
	if msg := v.Fields[0].Message; !strings.Contains(msg, `"1e400"`) || !strings.Contains(msg, "/a/1/b~0~1") {
		t.Errorf("message %q: want the number and where it is", msg)
	}
	if string(e.Data) != in {
		t.Errorf("refused event changed: %s", e.Data)
	}
	changes, err := flagadmin.NormalizeEvent(&e, flagadmin.OutOfRangeAsString)
	if want := `{"a":[1,{"b~/":"1e400"}],"c":"-1E+400"}`; err != nil || string(e.Data) != want {
		t.Fatalf("as string: %s, %v; want %s", e.Data, err, want)
	}
	if len(changes) != 1 || !strings.Contains(changes[0], "beyond the range of a double") {
		t.Errorf("changes: %q", changes)
	}
	checkStrictContent(t, e)
}

// TestNormalizeEventFields: createdByUserId beyond 2^53 and text fields
// that are not UTF-8.
func TestNormalizeEventFields(t *testing.T) {
	e := normalEventOf(`{}`)
	e.CreatedByUserID = ptr(int64(1<<53 + 1))
	_, err := flagadmin.NormalizeEvent(&e, flagadmin.RefuseOutOfRange)
	wantValidation(t, err, "createdByUserId")
	if _, err := leaf.LeafHash(e); err == nil {
		t.Error("LeafHash with createdByUserId 2^53+1: got no error, want it refused")
	}
	for _, c := range []struct{ in, want int64 }{
		{1<<53 + 1, 1 << 53}, {-(1<<53 + 1), -(1 << 53)}, {math.MaxInt64, 9223372036854774784}, {1 << 53, 1 << 53},
	} {
		e.CreatedByUserID = ptr(c.in)
		if _, err := flagadmin.NormalizeEvent(&e, flagadmin.OutOfRangeAsString); err != nil || *e.CreatedByUserID != c.want {
			t.Errorf("createdByUserId %d: got %d, %v; want %d", c.in, *e.CreatedByUserID, err, c.want)
		}
	}
	project := "a\xffb"
	e = normalEventOf(`{}`)
	e.CreatedBy, e.Project, e.Tags = "x\xfe", &project, []flagadmin.Tag{{Type: "simple", Value: "v\xc0"}}
	if _, err := leaf.LeafHash(e); err == nil {
		t.Error("LeafHash with text that is not UTF-8: got no error, want it refused")
	}
	given := e
	if _, err := flagadmin.NormalizeEvent(&e, flagadmin.RefuseOutOfRange); err != nil {
		t.Fatal(err)
	}
	if e.CreatedBy != "x\uFFFD" || *e.Project != "a\uFFFDb" || e.Tags[0].Value != "v\uFFFD" {
		t.Errorf("got createdBy %q, project %q, tag %q", e.CreatedBy, *e.Project, e.Tags[0].Value)
	}
	if project != "a\xffb" || given.Tags[0].Value != "v\xc0" {
		t.Error("NormalizeEvent wrote through the event's pointers")
	}
	checkStrictContent(t, e)
}

// TestServiceStoresTheNormalForm writes each input through the Service
// (AppendEvent) and a seed file: the store holds the normal form, which
// is what the API shows and the leaf commits to.
func TestServiceStoresTheNormalForm(t *testing.T) {
	ctx := context.Background()
	store := saltingStore{memstore.New()}
	svc := flagadmin.NewService(store, fixedClock(testNow))
	var seed strings.Builder
	seed.WriteString(`{"events":[`)
	var lastID int64
	for i, c := range nonIJSON {
		got, err := svc.AppendEvent(ctx, flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: json.RawMessage(c.in)})
		if err != nil {
			t.Fatalf("%s: AppendEvent: %v", c.name, err)
		}
		checkStored(t, store, got.ID, c.want)
		lastID = got.ID
		if i > 0 {
			seed.WriteString(",")
		}
		seed.WriteString(`{"type":"feature-created","createdBy":"seed","data":` + c.in + `,"preData":` + c.in + `}`)
	}
	seed.WriteString(`]}`)
	if err := svc.LoadSeed(ctx, strings.NewReader(seed.String())); err != nil {
		t.Fatalf("LoadSeed: %v", err)
	}
	var seeded []flagadmin.Event
	err := store.ExportEvents(ctx, flagadmin.EventQuery{}, lastID, func(e flagadmin.Event) error {
		seeded = append(seeded, e)
		return nil
	})
	if err != nil || len(seeded) != len(nonIJSON) {
		t.Fatalf("seeded events: %d, %v; want %d", len(seeded), err, len(nonIJSON))
	}
	for i, e := range seeded {
		checkStrictContent(t, e)
		if string(e.Data) != nonIJSON[i].want || string(e.PreData) != nonIJSON[i].want {
			t.Errorf("%s: seeded data %s, preData %s; want %s", nonIJSON[i].name, e.Data, e.PreData, nonIJSON[i].want)
		}
	}

	// Out of the range of a double, or a user id no double holds: refused,
	// naming the field.
	_, err = svc.AppendEvent(ctx, flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", Data: json.RawMessage(`{"n":1e400}`)})
	wantValidation(t, err, "data")
	_, err = svc.AppendEvent(ctx, flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "ada", CreatedByUserID: ptr(int64(9007199254740993)), Data: json.RawMessage(`{}`)})
	wantValidation(t, err, "createdByUserId")
	err = svc.LoadSeed(ctx, strings.NewReader(`{"events":[{"type":"feature-created","createdBy":"seed","preData":{"n":[1e400]}}]}`))
	wantValidation(t, err, "events[0].preData")
}

// checkStored reads the event id back from the store and checks its data
// and that a strict RFC 8785 implementation accepts its content as it is.
func checkStored(t *testing.T, store flagadmin.Store, id int64, want string) {
	t.Helper()
	page, err := store.SearchEvents(context.Background(), flagadmin.EventQuery{Limit: 1, IDs: []int64{id}})
	if err != nil || len(page.Events) != 1 {
		t.Fatalf("event %d: %+v, %v", id, page, err)
	}
	e := page.Events[0]
	if string(e.Data) != want {
		t.Errorf("stored data %s, want %s", e.Data, want)
	}
	checkStrictContent(t, e)
}

// checkStrictContent checks that e's content, what its leaf commits to,
// is accepted by a strict RFC 8785 implementation and left unchanged.
func checkStrictContent(t *testing.T, e flagadmin.Event) {
	t.Helper()
	content, err := leaf.EventContent(e)
	if err != nil {
		t.Fatalf("EventContent: %v", err)
	}
	strict, err := jcs.Transform(content)
	if err != nil || !bytes.Equal(strict, content) {
		t.Errorf("gowebpki/jcs on the content: %s, %v; want it unchanged:\n%s", strict, err, content)
	}
	if _, err := leaf.LeafHash(withSalt(e)); err != nil {
		t.Errorf("LeafHash: %v", err)
	}
}

// normalEventOf is an ordinary event with data.
func normalEventOf(data string) flagadmin.Event {
	return flagadmin.Event{ID: 1, CreatedAt: testNow, Type: flagadmin.EventFeatureCreated, CreatedBy: "ada",
		Data: json.RawMessage(data), Salt: leaf.NewSalt()}
}

func withSalt(e flagadmin.Event) flagadmin.Event {
	if e.Salt == nil {
		e.Salt = leaf.NewSalt()
	}
	return e
}

// saltingStore gives every event it writes a salt: the stores draw it
// themselves (NewSalt) once they keep salts; until then this stands in.
type saltingStore struct{ flagadmin.Store }

func (s saltingStore) Write(ctx context.Context, b *flagadmin.Batch) error {
	for i := range b.Events {
		b.Events[i] = withSalt(b.Events[i])
	}
	if then := b.Then; then != nil {
		b.Then = func(b *flagadmin.Batch) ([]flagadmin.Event, error) {
			events, err := then(b)
			for i := range events {
				events[i] = withSalt(events[i])
			}
			return events, err
		}
	}
	return s.Store.Write(ctx, b)
}

// FuzzNormalizeEvent: whatever JSON data an event brings, its normal form
// is accepted by a strict RFC 8785 implementation unchanged, normalizing
// it again changes nothing, and JSON that is I-JSON with numbers as
// ECMAScript writes them is kept as it is.
func FuzzNormalizeEvent(f *testing.F) {
	for _, c := range nonIJSON {
		f.Add([]byte(c.in))
	}
	for _, in := range ijsonKept {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		e := normalEventOf(string(in))
		_, err := flagadmin.NormalizeEvent(&e, flagadmin.OutOfRangeAsString)
		if !json.Valid(in) {
			if err == nil {
				t.Fatalf("NormalizeEvent(%q): no error for text that is not JSON", in)
			}
			return
		}
		if err != nil {
			if bytes.Count(in, []byte("["))+bytes.Count(in, []byte("{")) >= 10000 {
				return // nested too deep
			}
			t.Fatalf("NormalizeEvent(%q): %v", in, err)
		}
		checkStrictContent(t, e)
		again := e
		if changes, err := flagadmin.NormalizeEvent(&again, flagadmin.RefuseOutOfRange); err != nil || len(changes) > 0 {
			t.Fatalf("normalizing %s again: %q, %v; want no change", e.Data, changes, err)
		}
		if canon, err := jcs.Transform(in); err == nil && bytes.Equal(canon, in) && !bytes.Equal(e.Data, in) {
			t.Fatalf("NormalizeEvent changed canonical I-JSON %s to %s", in, e.Data)
		}
	})
}

// TestServiceNormalizesItsOwnEvents: an event the Service builds is
// brought into the normal form too, whatever text it is built from (here
// an admin token's name that is not UTF-8, as a program embedding the
// Service may give it).
func TestServiceNormalizesItsOwnEvents(t *testing.T) {
	ctx := context.Background()
	store := saltingStore{memstore.New()}
	svc := flagadmin.NewService(store, fixedClock(testNow))
	if _, err := svc.CreateProject(ctx, flagadmin.AdminToken("ops\xff"), flagadmin.Project{ID: "web", Name: "Web"}); err != nil {
		t.Fatalf("CreateProject: %v", err)
	}
	page, err := store.SearchEvents(ctx, flagadmin.EventQuery{Limit: 10})
	if err != nil || len(page.Events) != 1 {
		t.Fatalf("events: %+v, %v", page, err)
	}
	if e := page.Events[0]; e.CreatedBy != "ops\uFFFD" {
		t.Errorf("createdBy %q, want %q", e.CreatedBy, "ops\uFFFD")
	}
	checkStrictContent(t, page.Events[0])
}
