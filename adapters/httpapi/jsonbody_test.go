package httpapi

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
)

// TestCheckJSONBodyTypes holds each JSON value to the type its schema
// wants: objects, arrays and their items, strings, numbers and integers,
// booleans and null, and a schema that wants no type in particular.
func TestCheckJSONBodyTypes(t *testing.T) {
	lo, hi := 1.0, 10.0
	schema := &huma.Schema{Type: huma.TypeObject, AdditionalProperties: false, Properties: map[string]*huma.Schema{
		"name":  {Type: huma.TypeString},
		"limit": {Type: huma.TypeInteger, Minimum: &lo, Maximum: &hi},
		"ratio": {Type: huma.TypeNumber},
		"on":    {Type: huma.TypeBoolean},
		"tags":  {Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString}},
		"meta":  {Type: huma.TypeObject, Properties: map[string]*huma.Schema{"n": {Type: huma.TypeInteger}}},
		"any":   {},
	}}
	cases := []struct {
		name string
		body string
		want []errorDetail
	}{
		{"every field of its type", `{"name":"a","limit":2,"ratio":0.5,"on":true,"tags":["x","y"],"meta":{"n":1e2},"any":[1,{"a":"b"}]}`, nil},
		{"null for every field", `{"name":null,"limit":null,"ratio":null,"on":null,"tags":null,"meta":null,"any":null}`, nil},
		{"an array for the body", `[1]`, []errorDetail{{Path: pathBody, Message: "must be a JSON object"}}},
		{"a string for the body", `"x"`, []errorDetail{{Path: pathBody, Message: "must be a JSON object"}}},
		{"an object for an array, its fields unchecked", `{"tags":{"a":1}}`, []errorDetail{{Path: "tags", Message: "must be a JSON array"}}},
		{"an array for an object, its items unchecked", `{"meta":[1,"x"]}`, []errorDetail{{Path: "meta", Message: "must be a JSON object"}}},
		{"items of the wrong type", `{"tags":["x",1,true]}`, []errorDetail{{Path: "tags[1]", Message: "must be a string"}, {Path: "tags[2]", Message: "must be a string"}}},
		{"a number for a string", `{"name":1}`, []errorDetail{{Path: "name", Message: "must be a string"}}},
		{"a string for an integer", `{"limit":"2"}`, []errorDetail{{Path: "limit", Message: "must be an integer from 1 to 10"}}},
		{"a fraction for an integer", `{"limit":2.5}`, []errorDetail{{Path: "limit", Message: "must be an integer from 1 to 10"}}},
		{"an integral number written with a fraction", `{"limit":2.0}`, nil},
		{"an integer for a number", `{"ratio":3}`, nil},
		{"a number for a boolean", `{"on":1}`, []errorDetail{{Path: "on", Message: "must be true or false"}}},
		{"a boolean for a number", `{"ratio":false}`, []errorDetail{{Path: "ratio", Message: "must be a number"}}},
		{"a number for a nested integer's object field", `{"meta":{"n":"1"}}`, []errorDetail{{Path: "meta.n", Message: "must be an integer"}}},
		{"text that is not UTF-8", "{\"name\":\"\xff\"}", []errorDetail{{Path: "name", Message: "must be valid UTF-8 text"}}},
		{"text that is not UTF-8 where a number goes", "{\"ratio\":\"\xff\"}", []errorDetail{{Path: "ratio", Message: "must be valid UTF-8 text"}}},
		{"a field the body does not have", `{"nope":1}`, []errorDetail{{Path: "nope", Message: "is not a field of this body"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkJSONBody([]byte(c.body), schema, nil)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("checkJSONBody(%s) = %+v, want %+v", c.body, got, c.want)
			}
		})
	}
}

// TestCheckJSONBodyWithoutSchema: without a schema any JSON passes.
func TestCheckJSONBodyWithoutSchema(t *testing.T) {
	for _, body := range []string{`{"a":[1,2,{"b":null}]}`, `[true,"x",1.5]`, `"x"`, `null`} {
		if got := checkJSONBody([]byte(body), nil, nil); got != nil {
			t.Errorf("checkJSONBody(%s) = %+v, want none", body, got)
		}
	}
}

// TestCheckJSONBodyCostsItsSizeNotItsDepth: a deeply nested body (arrays
// of one item, objects of one member, 5,000 levels) is checked in memory
// proportional to its size: a path spelled for every value would cost
// its depth times its size (tens of megabytes here, for a body any
// client may send).
func TestCheckJSONBodyCostsItsSizeNotItsDepth(t *testing.T) {
	const depth = 10000
	for _, c := range []struct{ name, open, close string }{
		{"arrays", `[`, `]`},
		{"objects", `{"field":`, `}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(strings.Repeat(c.open, depth/2) + `1` + strings.Repeat(c.close, depth/2))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			details := checkJSONBody(body, &huma.Schema{Type: huma.TypeArray}, nil)
			runtime.ReadMemStats(&after)
			if c.name == "objects" && (len(details) != 1 || details[0].Path != pathBody) {
				t.Errorf("details %v, want the body named as not an array", details)
			}
			if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(64*len(body)+4<<20); got > limit {
				t.Errorf("checking a body of %d bytes nested %d deep allocated %d bytes, want at most %d", len(body), depth/2, got, limit)
			}
		})
	}
}

// TestBodyPathSpelling: the lazily spelled path reads as details name
// fields.
func TestBodyPathSpelling(t *testing.T) {
	var root *bodyPath
	for _, c := range []struct {
		path *bodyPath
		want string
	}{
		{root, ""},
		{root.field("a"), "a"},
		{root.field("a").field("b").item(2).field("c"), "a.b[2].c"},
		{root.item(0).field("a"), "[0].a"},
		{root.field("").field("x"), "x"},
	} {
		if got := c.path.String(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
