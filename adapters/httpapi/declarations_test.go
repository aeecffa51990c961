package httpapi

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// The transport's copies of the domain's declarations (flagadmin.EventFields,
// flagadmin.FilterParams), held to them.

// TestCSVRecordCarriesEveryColumn: the CSV columns are the declared event
// fields but groupType and groupId, and the hand-written record
// of an event with every field set (eventtest.Full) holds each column's
// value in its place.
func TestCSVRecordCarriesEveryColumn(t *testing.T) {
	for _, name := range csvOmitted {
		if _, ok := flagadmin.EventFieldNamed(name); !ok {
			t.Errorf("csvOmitted names %s, which is not a declared event field", name)
		}
	}
	e := eventtest.Full(t)
	rec, err := appendCSVRecord(nil, e, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	r := csv.NewReader(bytes.NewReader(rec))
	r.LazyQuotes = true
	cells, err := r.Read()
	if err != nil {
		t.Fatalf("read %q: %v", rec, err)
	}
	if len(cells) != len(csvColumns) {
		t.Fatalf("the record has %d cells, the header %d columns: %q", len(cells), len(csvColumns), rec)
	}
	for i, name := range csvColumns {
		f, _ := flagadmin.EventFieldNamed(name)
		if want := csvCell(t, f.Kind, f.Value(&e)); cells[i] != want {
			t.Errorf("column %s: got %q, want %q", name, cells[i], want)
		}
	}
}

// csvCell is what a CSV cell holds for a field's value of kind k (the
// values of eventtest.Full need no formula guard).
func csvCell(t *testing.T, k flagadmin.EventFieldKind, v any) string {
	t.Helper()
	switch k {
	case flagadmin.FieldInt:
		return strconv.FormatInt(v.(int64), 10)
	case flagadmin.FieldTime:
		return v.(time.Time).UTC().Format(flagadmin.TimeLayout)
	case flagadmin.FieldText:
		return v.(string)
	case flagadmin.FieldIntOrNull:
		if n := v.(*int64); n != nil {
			return strconv.FormatInt(*n, 10)
		}
	case flagadmin.FieldTextOrNull:
		if s := v.(*string); s != nil {
			return *s
		}
	case flagadmin.FieldJSONOrNull:
		return string(v.(json.RawMessage))
	case flagadmin.FieldTags:
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	default:
		t.Fatalf("no CSV cell for a field of kind %d: teach appendCSVRecord and this test", k)
	}
	return ""
}

// TestEventSchemaDocumentsEveryField: eventSchema, the OpenAPI schema of
// an event, has the declared fields in their order, nullable exactly when
// their kind is, required unless their key is left out when absent.
func TestEventSchemaDocumentsEveryField(t *testing.T) {
	typ := eventSchemaType
	fields := flagadmin.EventFields()
	var got, want []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		got = append(got, name)
	}
	for _, f := range fields {
		want = append(want, f.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("eventSchema fields:\ngot  %q\nwant %q", got, want)
	}
	s := newEnv(t, Config{}, nil).server
	schema := s.api.OpenAPI().Components.Schemas.Map()["eventSchema"]
	if schema == nil {
		t.Fatal("the OpenAPI document has no eventSchema")
	}
	for _, f := range fields {
		p := schema.Properties[f.Name]
		if p == nil {
			t.Errorf("eventSchema has no property %s", f.Name)
			continue
		}
		nullable := f.Kind == flagadmin.FieldIntOrNull || f.Kind == flagadmin.FieldTextOrNull || f.Kind == flagadmin.FieldJSONOrNull
		if p.Nullable != nullable {
			t.Errorf("eventSchema.%s: nullable %v, want %v", f.Name, p.Nullable, nullable)
		}
		// A field left out when absent is not required; the others always are there.
		if required, want := slices.Contains(schema.Required, f.Name), f.Kind != flagadmin.FieldTextOrAbsent; required != want {
			t.Errorf("eventSchema.%s: required %v, want %v", f.Name, required, want)
		}
	}
}

// TestOperationsTakeTheDeclaredParameters: the search, the export and the
// stream declare, as query parameters, those flagadmin.FilterParams
// declares for them; the export and the stream also the paging
// parameters (to refuse them by name), and their own ones.
func TestOperationsTakeTheDeclaredParameters(t *testing.T) {
	for _, c := range []struct {
		name  string
		input reflect.Type
		use   flagadmin.ParamUse
		own   []string
	}{
		{"search", reflect.TypeFor[searchEventsInput](), flagadmin.UseSearch, nil},
		{"export", reflect.TypeFor[exportEventsInput](), flagadmin.UseExport, []string{"format", "afterId"}},
		{"stream", reflect.TypeFor[streamEventsInput](), flagadmin.UseStream, []string{"afterId"}},
	} {
		want := slices.Clone(c.own)
		for _, f := range flagadmin.FilterParams() {
			if f.Uses.Has(c.use) || f.Kind == flagadmin.FilterPaging {
				want = append(want, f.Name)
			}
		}
		got := queryParams(c.input)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: query parameters\ngot  %q\nwant %q", c.name, got, want)
		}
	}
}

// TestDeprecatedSearchBodyIsDeclared: the body of the deprecated search
// has the fields flagadmin.FilterParams declares for it.
func TestDeprecatedSearchBodyIsDeclared(t *testing.T) {
	var got, want []string
	typ := reflect.TypeFor[deprecatedSearchEventsSchema]()
	for i := range typ.NumField() {
		if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "" {
			got = append(got, name)
		}
	}
	for _, f := range flagadmin.FilterParams() {
		if f.Uses.Has(flagadmin.UseDeprecatedSearch) {
			want = append(want, f.Name)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("deprecatedSearchEventsSchema fields\ngot  %q\nwant %q", got, want)
	}
}

// TestInputsReachTheDomainWhole: each declared parameter an operation
// takes reaches the domain's parameters (the handlers' conversions).
func TestInputsReachTheDomainWhole(t *testing.T) {
	var search searchEventsInput
	fillQuery(reflect.ValueOf(&search).Elem())
	var export exportEventsInput
	fillQuery(reflect.ValueOf(&export).Elem())
	var stream streamEventsInput
	fillQuery(reflect.ValueOf(&stream).Elem())
	for _, c := range []struct {
		name   string
		params flagadmin.EventSearchParams
	}{
		{"search", search.searchParams()},
		{"export", export.exportParams().EventSearchParams},
		{"stream", stream.streamParams().EventSearchParams},
	} {
		for _, f := range flagadmin.FilterParams() {
			if got := f.Value(&c.params); got != f.Name && (c.name == "search" || f.Uses.Has(flagadmin.UseExport) || f.Kind == flagadmin.FilterPaging) {
				t.Errorf("%s: parameter %s reaches the domain as %q", c.name, f.Name, got)
			}
		}
	}
	if p := export.exportParams(); p.Format != "format" || p.AfterID != "afterId" {
		t.Errorf("export: format and afterId reach the domain as %+v", p)
	}
	if p := stream.streamParams(); p.AfterID != "afterId" || p.LastEventID == "" {
		t.Errorf("stream: afterId and Last-Event-ID reach the domain as %+v", p)
	}
}

// queryParams returns the query parameter names of an input struct type,
// its embedded structs' included.
func queryParams(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, queryParams(f.Type)...)
		} else if name := f.Tag.Get("query"); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// fillQuery sets each query or header string field of an input struct to
// its parameter's name.
func fillQuery(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		switch {
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			fillQuery(v.Field(i))
		case f.Tag.Get("query") != "":
			v.Field(i).SetString(f.Tag.Get("query"))
		case f.Tag.Get("header") != "":
			v.Field(i).SetString(f.Tag.Get("header"))
		}
	}
}
