package flagadmin_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// TestEventFieldsDeclareEveryField: each field of Event is declared once
// by EventFields, with a plain name (MarshalJSON writes it unescaped).
func TestEventFieldsDeclareEveryField(t *testing.T) {
	eventtest.Declared(t)
	seen := map[string]bool{}
	for _, f := range flagadmin.EventFields() {
		if seen[f.Name] {
			t.Errorf("field %s is declared twice", f.Name)
		}
		seen[f.Name] = true
		for _, r := range f.Name {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
				t.Errorf("field name %q is not plain letters", f.Name)
			}
		}
		if got, ok := flagadmin.EventFieldNamed(f.Name); !ok || got.Name != f.Name {
			t.Errorf("EventFieldNamed(%q) = %v, %v", f.Name, got.Name, ok)
		}
	}
}

// TestEventJSONCarriesEveryField: MarshalJSON writes every declared field
// under its name, in the declared order, and the Event's own JSON tags
// (how a seed file's events are read) read each of them back.
func TestEventJSONCarriesEveryField(t *testing.T) {
	e := eventtest.Full(t)
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		t.Fatalf("MarshalJSON: got %s, want an object", b)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for _, f := range flagadmin.EventFields() {
		want = append(want, f.Name)
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("MarshalJSON keys:\ngot  %q\nwant %q", names, want)
	}
	var back flagadmin.Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := eventtest.Diff(e, back); d != nil {
		t.Errorf("MarshalJSON then json.Unmarshal lost fields:\n%s", strings.Join(d, "\n"))
	}
}

// TestSeedEventJSONCarriesEveryField: a seed file's event, as
// SeedEventJSON writes it, is read back by ParseSeed with every field but
// the id, which a seed file does not give.
func TestSeedEventJSONCarriesEveryField(t *testing.T) {
	e := eventtest.Full(t)
	line, err := flagadmin.SeedEventJSON(e)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(line, []byte(`"id"`)) {
		t.Errorf("SeedEventJSON writes an id: %s", line)
	}
	seed, err := flagadmin.ParseSeed(strings.NewReader(`{"events":[` + string(line) + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(seed.Events) != 1 {
		t.Fatalf("got %d events, want 1", len(seed.Events))
	}
	if d := eventtest.Diff(e, seed.Events[0], "id"); d != nil {
		t.Errorf("SeedEventJSON then ParseSeed lost fields:\n%s", strings.Join(d, "\n"))
	}
}

// TestFilterParamsDeclareEveryParameter: each field of EventSearchParams
// is one declared parameter (FilterParam.Value and Set reach it), and
// every parameter has a kind and at least one operation.
func TestFilterParamsDeclareEveryParameter(t *testing.T) {
	typ := reflect.TypeFor[flagadmin.EventSearchParams]()
	params := flagadmin.FilterParams()
	hits := make([]int, len(params))
	for i := range typ.NumField() {
		var p flagadmin.EventSearchParams
		reflect.ValueOf(&p).Elem().Field(i).SetString("x")
		var names []string
		for j, f := range params {
			if f.Value(&p) != "" {
				names = append(names, f.Name)
				hits[j]++
			}
		}
		if len(names) != 1 {
			t.Errorf("EventSearchParams.%s is the parameters %q, want exactly one: declare it in FilterParams", typ.Field(i).Name, names)
		}
	}
	for j, f := range params {
		if hits[j] != 1 {
			t.Errorf("parameter %s reads %d fields of EventSearchParams, want 1", f.Name, hits[j])
		}
		if f.Kind == 0 || f.Uses == 0 {
			t.Errorf("parameter %s has no kind or no operation", f.Name)
		}
		var p flagadmin.EventSearchParams
		f.Set(&p, "v")
		if got := f.Value(&p); got != "v" {
			t.Errorf("parameter %s: Set then Value gives %q", f.Name, got)
		}
	}
}

// TestColumnFiltersAreEveryListFilter: ColumnFilters yields one filter per
// list slice of EventQuery, each on a declared event column, carrying the
// slice's values; and EventQuery.Matches, the reference meaning, filters
// that column: an event matches the filter of its own value and not one
// of another value. A list filter added to EventQuery and not declared,
// or declared and not honored by Matches, fails here.
func TestColumnFiltersAreEveryListFilter(t *testing.T) {
	typ := reflect.TypeFor[flagadmin.EventQuery]()
	var lists []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if (f.Type == reflect.TypeFor[[]string]() || f.Type == reflect.TypeFor[[]int64]()) && f.Name != "HiddenProjects" {
			lists = append(lists, f.Name)
		}
	}
	e := eventtest.Full(t)
	payload, meta := flagadmin.SearchTexts(e)
	found := map[string]bool{}
	for _, name := range lists {
		var q flagadmin.EventQuery
		field := reflect.ValueOf(&q).Elem().FieldByName(name)
		if field.Type() == reflect.TypeFor[[]string]() {
			field.Set(reflect.ValueOf([]string{"x"}))
		} else {
			field.Set(reflect.ValueOf([]int64{7}))
		}
		var hit []flagadmin.ColumnFilter
		for c := range q.ColumnFilters() {
			if c.Len() > 0 {
				hit = append(hit, c)
			}
		}
		if len(hit) != 1 {
			t.Errorf("EventQuery.%s is %d column filters, want 1: declare it in FilterParams", name, len(hit))
			continue
		}
		c := hit[0]
		found[c.Param.Name] = true
		col, ok := flagadmin.EventFieldNamed(c.Param.Column)
		if !ok {
			t.Errorf("filter %s: column %q is not a declared event field", c.Param.Name, c.Param.Column)
			continue
		}
		// Filter on the column's own value, then on another one.
		own := fmt.Sprint(deref(col.Value(&e)))
		for _, tc := range []struct {
			value string
			want  bool
		}{{own, true}, {"9999", false}, {"other", false}} {
			raw := flagadmin.OpIs + ":" + tc.value
			q, err := flagadmin.ParseEventSearch(paramsWith(c.Param, raw))
			if err != nil {
				if c.Param.Kind == flagadmin.FilterIntegers && tc.value == "other" {
					continue
				}
				t.Errorf("filter %s=%s: %v", c.Param.Name, raw, err)
				continue
			}
			if got := q.Matches(e, payload, meta); got != tc.want {
				t.Errorf("filter %s=%s: Matches(event whose %s is %s) = %v, want %v", c.Param.Name, raw, col.Name, own, got, tc.want)
			}
		}
	}
	for _, f := range flagadmin.FilterParams() {
		isList := f.Kind == flagadmin.FilterStrings || f.Kind == flagadmin.FilterIntegers
		if isList != (f.Column != "") {
			t.Errorf("parameter %s of kind %d has column %q", f.Name, f.Kind, f.Column)
		}
		if isList && !found[f.Name] {
			t.Errorf("list filter %s is none of EventQuery's slices", f.Name)
		}
	}
}

// TestParseEventSearchReadsEveryParameter: each parameter of the search
// is parsed (a malformed value is a 400 naming it), and those of no other
// operation are refused by the export and the stream.
func TestParseEventSearchReadsEveryParameter(t *testing.T) {
	for _, f := range flagadmin.FilterParams() {
		p := paramsWith(f, "IS_NOT:\x01")
		_, err := flagadmin.ParseEventSearch(p)
		if f.Uses.Has(flagadmin.UseSearch) != (err != nil) {
			t.Errorf("ParseEventSearch with a malformed %s: got %v", f.Name, err)
		}
		if err != nil && !strings.Contains(err.Error(), f.Name) {
			t.Errorf("ParseEventSearch with a malformed %s: %v does not name it", f.Name, err)
		}
		_, _, _, err = flagadmin.ParseEventExport(flagadmin.EventExportParams{EventSearchParams: p})
		if err == nil || !strings.Contains(err.Error(), f.Name) {
			t.Errorf("ParseEventExport with a malformed or refused %s: got %v", f.Name, err)
		}
	}
}

// TestWebhookFilterParamsAreDeclared: the webhook filter takes the
// parameters declared for it, and SetFilterParam refuses the others.
func TestWebhookFilterParamsAreDeclared(t *testing.T) {
	var want []string
	for _, f := range flagadmin.FilterParams() {
		var p flagadmin.EventSearchParams
		ok := flagadmin.SetFilterParam(&p, f.Name, "v")
		if ok != f.Uses.Has(flagadmin.UseWebhook) {
			t.Errorf("SetFilterParam(%s) = %v", f.Name, ok)
		}
		if ok {
			want = append(want, f.Name)
			if f.Value(&p) != "v" {
				t.Errorf("SetFilterParam(%s) did not set it", f.Name)
			}
		}
	}
	if !reflect.DeepEqual(flagadmin.WebhookFilterParams, want) {
		t.Errorf("WebhookFilterParams = %q, want %q", flagadmin.WebhookFilterParams, want)
	}
}

// TestDeprecatedSearchFieldsAreDeclared: the fields of the deprecated
// search's body are the parameters declared for it.
func TestDeprecatedSearchFieldsAreDeclared(t *testing.T) {
	var want, got []string
	for _, f := range flagadmin.FilterParams() {
		if f.Uses.Has(flagadmin.UseDeprecatedSearch) {
			want = append(want, f.Name)
		}
	}
	typ := reflect.TypeFor[flagadmin.DeprecatedSearchRequest]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		got = append(got, name)
	}
	if !sameSet(got, want) {
		t.Errorf("DeprecatedSearchRequest fields %q, want the declared %q", got, want)
	}
}

// paramsWith returns parameters holding raw in f alone.
func paramsWith(f flagadmin.FilterParam, raw string) flagadmin.EventSearchParams {
	var p flagadmin.EventSearchParams
	f.Set(&p, raw)
	return p
}

// deref returns what a pointer value points to.
func deref(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		return rv.Elem().Interface()
	}
	return v
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}
