package flagadmin_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestParseFilter(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want flagadmin.Filter // zero: a validation error naming the parameter
	}{
		{"IS one value", "IS:new-checkout", flagadmin.Filter{Operator: "IS", Values: []string{"new-checkout"}}},
		{"IS several values", "IS:a,b", flagadmin.Filter{Operator: "IS", Values: []string{"a", "b"}}},
		{"IS_ANY_OF", "IS_ANY_OF:a,b,c", flagadmin.Filter{Operator: "IS_ANY_OF", Values: []string{"a", "b", "c"}}},
		{"items trimmed", "IS_ANY_OF: a ,\tb\t, c ", flagadmin.Filter{Operator: "IS_ANY_OF", Values: []string{"a", "b", "c"}}},
		{"empty items dropped", "IS_ANY_OF:,a,,b,", flagadmin.Filter{Operator: "IS_ANY_OF", Values: []string{"a", "b"}}},
		{"blank items dropped", "IS:a, ,b", flagadmin.Filter{Operator: "IS", Values: []string{"a", "b"}}},
		{"colon inside the value", "IS:a:b", flagadmin.Filter{Operator: "IS", Values: []string{"a:b"}}},
		{"value case kept", "IS:New-Checkout", flagadmin.Filter{Operator: "IS", Values: []string{"New-Checkout"}}},
		{"negative number", "IS:-42", flagadmin.Filter{Operator: "IS", Values: []string{"-42"}}},
		{"exactly the maximum", "IS_ANY_OF:" + repeat("x", ",", flagadmin.MaxFilterValues), flagadmin.Filter{Operator: "IS_ANY_OF", Values: strings.Split(repeat("x", ",", flagadmin.MaxFilterValues), ",")}},

		{"lower-case operator", "is:a", flagadmin.Filter{}},
		{"mixed-case operator", "Is_Any_Of:a", flagadmin.Filter{}},
		{"unknown operator", "IS_NOT:a", flagadmin.Filter{}},
		{"no operator", "new-checkout", flagadmin.Filter{}},
		{"operator without colon", "IS", flagadmin.Filter{}},
		{"space before colon", "IS :a", flagadmin.Filter{}},
		{"leading space", " IS:a", flagadmin.Filter{}},
		{"empty", "", flagadmin.Filter{}},
		{"IS without values", "IS:", flagadmin.Filter{}},
		{"IS_ANY_OF without values", "IS_ANY_OF:", flagadmin.Filter{}},
		{"only commas and blanks", "IS_ANY_OF: , ,,", flagadmin.Filter{}},
		{"too many values", "IS_ANY_OF:" + repeat("x", ",", flagadmin.MaxFilterValues+1), flagadmin.Filter{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := flagadmin.ParseFilter("feature", tt.raw)
			if tt.want.Operator == "" {
				wantValidation(t, err, "feature")
				if !reflect.DeepEqual(got, flagadmin.Filter{}) {
					t.Errorf("got filter %+v with the error, want the zero Filter", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFilter(%q): %v", tt.raw, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseFilter(%q) = %+v, want %+v", tt.raw, got, tt.want)
			}
		})
	}
}

func TestParseFilterErrorNamesItsParameter(t *testing.T) {
	for _, param := range []string{"feature", "project", "type", "createdBy", "environment"} {
		_, err := flagadmin.ParseFilter(param, "IS:")
		ve := wantValidation(t, err, param)
		if len(ve.Fields) != 1 {
			t.Errorf("%s: got %d fields, want 1: %v", param, len(ve.Fields), err)
		}
		if !strings.HasPrefix(err.Error(), param+": ") {
			t.Errorf("%s: error text %q does not start with the parameter", param, err)
		}
	}
}

func TestParseDay(t *testing.T) {
	tests := []struct {
		raw  string
		want string // yyyy-MM-dd; empty: rejected
	}{
		{"IS:2025-03-01", "2025-03-01"},
		{"IS:2024-02-29", "2024-02-29"}, // leap year
		{"IS:2000-02-29", "2000-02-29"}, // divisible by 400
		{"IS:1999-12-31", "1999-12-31"},
		{"IS:0001-01-01", "0001-01-01"},
		{"IS:9999-12-31", "9999-12-31"},

		{"IS:2025-02-30", ""},
		{"IS:2025-02-29", ""}, // not a leap year
		{"IS:1900-02-29", ""}, // divisible by 100, not by 400
		{"IS:2025-04-31", ""},
		{"IS:2025-13-01", ""},
		{"IS:2025-00-10", ""},
		{"IS:2025-01-00", ""},
		{"IS:2025-1-01", ""},
		{"IS:2025-01-1", ""},
		{"IS:25-01-01", ""},
		{"IS:20250301", ""},
		{"IS:2025/03/01", ""},
		{"IS:2025-03-01T00:00:00Z", ""},
		{"IS:2025-03-01 ", ""},
		{"IS: 2025-03-1", ""},
		{"IS:+025-03-01", ""},
		{"IS:-025-03-01", ""},
		{"IS:2025-0a-01", ""},
		{"IS:", ""},
		{"2025-03-01", ""}, // missing IS:
		{"is:2025-03-01", ""},
		{"IS_ANY_OF:2025-03-01", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := flagadmin.ParseDay("from", tt.raw)
			if tt.want == "" {
				wantValidation(t, err, "from")
				return
			}
			if err != nil {
				t.Fatalf("ParseDay(%q): %v", tt.raw, err)
			}
			want, _ := time.Parse("2006-01-02", tt.want)
			if !got.Equal(want) || got.Location() != time.UTC {
				t.Errorf("ParseDay(%q) = %v, want %v UTC", tt.raw, got, want)
			}
		})
	}
}

func TestParseLimit(t *testing.T) {
	tests := []struct {
		raw     string
		max     int
		want    int
		wantErr bool
	}{
		{"", 1000, 50, false}, // default
		{"1", 1000, 1, false},
		{"50", 1000, 50, false},
		{"1000", 1000, 1000, false},
		{"100", 100, 100, false},
		{"0", 1000, 0, true},
		{"-1", 1000, 0, true},
		{"1001", 1000, 0, true},
		{"101", 100, 0, true},
		{"ten", 1000, 0, true},
		{"1.5", 1000, 0, true},
		{"1e3", 1000, 0, true},
		{" ", 1000, 0, true},
		{"99999999999999999999", 1000, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.raw+"/"+strconv.Itoa(tt.max), func(t *testing.T) {
			got, err := flagadmin.ParseLimit("limit", tt.raw, 50, tt.max)
			if tt.wantErr {
				wantValidation(t, err, "limit")
				return
			}
			if err != nil {
				t.Fatalf("ParseLimit(%q): %v", tt.raw, err)
			}
			if got != tt.want {
				t.Errorf("ParseLimit(%q) = %d, want %d", tt.raw, got, tt.want)
			}
		})
	}
}

func TestParseOffset(t *testing.T) {
	tests := []struct {
		raw     string
		want    int
		wantErr bool
	}{
		{"", 0, false},
		{"0", 0, false},
		{"1", 1, false},
		{"123456", 123456, false},
		{"-1", 0, true},
		{"one", 0, true},
		{"2.0", 0, true},
		{"99999999999999999999", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := flagadmin.ParseOffset("offset", tt.raw)
			if tt.wantErr {
				wantValidation(t, err, "offset")
				return
			}
			if err != nil {
				t.Fatalf("ParseOffset(%q): %v", tt.raw, err)
			}
			if got != tt.want {
				t.Errorf("ParseOffset(%q) = %d, want %d", tt.raw, got, tt.want)
			}
		})
	}
}

func TestParseArchived(t *testing.T) {
	tests := []struct {
		raw     string
		want    bool
		wantErr bool
	}{
		{"", false, false},
		{"false", false, false},
		{"true", true, false},
		{"TRUE", false, true},
		{"True", false, true},
		{"1", false, true},
		{"0", false, true},
		{"yes", false, true},
		{" true", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := flagadmin.ParseArchived(tt.raw)
			if tt.wantErr {
				wantValidation(t, err, "archived")
				return
			}
			if err != nil {
				t.Fatalf("ParseArchived(%q): %v", tt.raw, err)
			}
			if got != tt.want {
				t.Errorf("ParseArchived(%q) = %v, want %v", tt.raw, got, tt.want)
			}
		})
	}
}

func TestParseEventSearchDefaults(t *testing.T) {
	q, err := flagadmin.ParseEventSearch(flagadmin.EventSearchParams{})
	if err != nil {
		t.Fatal(err)
	}
	want := flagadmin.EventQuery{TextScope: flagadmin.TextPayload, Limit: flagadmin.SearchDefaultLimit}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("got %+v, want %+v", q, want)
	}
}

func TestParseEventSearch(t *testing.T) {
	march1 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	march2 := time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		params flagadmin.EventSearchParams
		want   func(*flagadmin.EventQuery) // applied to the default query
	}{
		{"feature", flagadmin.EventSearchParams{Feature: "IS_ANY_OF:a, b"}, func(q *flagadmin.EventQuery) { q.Features = []string{"a", "b"} }},
		{"project", flagadmin.EventSearchParams{Project: "IS:default"}, func(q *flagadmin.EventQuery) { q.Projects = []string{"default"} }},
		{"type", flagadmin.EventSearchParams{Type: "IS_ANY_OF:feature-created,feature-completed"}, func(q *flagadmin.EventQuery) {
			q.Types = []string{"feature-created", "feature-completed"}
		}},
		{"environment", flagadmin.EventSearchParams{Environment: "IS:production"}, func(q *flagadmin.EventQuery) { q.Environments = []string{"production"} }},
		{"createdBy", flagadmin.EventSearchParams{CreatedBy: "IS_ANY_OF:1,-42, 7"}, func(q *flagadmin.EventQuery) { q.CreatedByUserIDs = []int64{1, -42, 7} }},
		{"id", flagadmin.EventSearchParams{ID: "IS:12"}, func(q *flagadmin.EventQuery) { q.IDs = []int64{12} }},
		{"groupId", flagadmin.EventSearchParams{GroupID: "IS:01M8564MBTV5HMX3GH6SHGBVKG"}, func(q *flagadmin.EventQuery) { q.GroupIDs = []string{"01M8564MBTV5HMX3GH6SHGBVKG"} }},
		{"a type the contract does not list", flagadmin.EventSearchParams{Type: "IS_ANY_OF:feature-link-added,release-plan-added"}, func(q *flagadmin.EventQuery) {
			q.Types = []string{"feature-link-added", "release-plan-added"}
		}},
		{"a type of 255 characters", flagadmin.EventSearchParams{Type: "IS:" + strings.Repeat("t", 255)}, func(q *flagadmin.EventQuery) { q.Types = []string{strings.Repeat("t", 255)} }},
		{"from is the start of the day", flagadmin.EventSearchParams{From: "IS:2025-03-01"}, func(q *flagadmin.EventQuery) { q.From = &march1 }},
		{"to is before the next day", flagadmin.EventSearchParams{To: "IS:2025-03-01"}, func(q *flagadmin.EventQuery) { q.Before = &march2 }},
		{"from and to the same day", flagadmin.EventSearchParams{From: "IS:2025-03-01", To: "IS:2025-03-01"}, func(q *flagadmin.EventQuery) {
			q.From, q.Before = &march1, &march2
		}},
		{"to at the end of a month", flagadmin.EventSearchParams{To: "IS:2024-02-29"}, func(q *flagadmin.EventQuery) {
			q.Before = ptr(time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC))
		}},
		{"to at the end of a year", flagadmin.EventSearchParams{To: "IS:2024-12-31"}, func(q *flagadmin.EventQuery) {
			q.Before = ptr(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		}},
		{"query lower-cased", flagadmin.EventSearchParams{Query: "New-CHECKOUT 100%_ÄÖ"}, func(q *flagadmin.EventQuery) { q.Text = "new-checkout 100%_äö" }},
		{"query of the maximum length", flagadmin.EventSearchParams{Query: strings.Repeat("é", flagadmin.MaxQueryLength)}, func(q *flagadmin.EventQuery) {
			q.Text = strings.Repeat("é", flagadmin.MaxQueryLength)
		}},
		{"limit", flagadmin.EventSearchParams{Limit: "1000"}, func(q *flagadmin.EventQuery) { q.Limit = 1000 }},
		{"offset", flagadmin.EventSearchParams{Offset: "20"}, func(q *flagadmin.EventQuery) { q.Offset = 20 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := flagadmin.ParseEventSearch(tt.params)
			if err != nil {
				t.Fatalf("ParseEventSearch(%+v): %v", tt.params, err)
			}
			want := flagadmin.EventQuery{TextScope: flagadmin.TextPayload, Limit: flagadmin.SearchDefaultLimit}
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseEventSearchRejects(t *testing.T) {
	tests := []struct {
		name   string
		params flagadmin.EventSearchParams
		paths  []string
	}{
		{"feature without operator", flagadmin.EventSearchParams{Feature: "new-checkout"}, []string{"feature"}},
		{"project lower-case operator", flagadmin.EventSearchParams{Project: "is:default"}, []string{"project"}},
		{"environment empty list", flagadmin.EventSearchParams{Environment: "IS:"}, []string{"environment"}},
		{"a type of 256 characters", flagadmin.EventSearchParams{Type: "IS:" + strings.Repeat("t", 256)}, []string{"type"}},
		{"one long type among others", flagadmin.EventSearchParams{Type: "IS_ANY_OF:feature-created," + strings.Repeat("é", 256)}, []string{"type"}},
		{"createdBy not an integer", flagadmin.EventSearchParams{CreatedBy: "IS:ada@example.com"}, []string{"createdBy"}},
		{"createdBy out of range", flagadmin.EventSearchParams{CreatedBy: "IS:99999999999999999999"}, []string{"createdBy"}},
		{"id not an integer", flagadmin.EventSearchParams{ID: "IS:1,two"}, []string{"id"}},
		{"groupId without operator", flagadmin.EventSearchParams{GroupID: "01M8564MBTV5HMX3GH6SHGBVKG"}, []string{"groupId"}},
		{"from not a date", flagadmin.EventSearchParams{From: "IS:2025-02-30"}, []string{"from"}},
		{"to without IS", flagadmin.EventSearchParams{To: "2025-03-01"}, []string{"to"}},
		{"from after to", flagadmin.EventSearchParams{From: "IS:2025-03-02", To: "IS:2025-03-01"}, []string{"from"}},
		{"query with a newline", flagadmin.EventSearchParams{Query: "a\nb"}, []string{"query"}},
		{"query with a tab", flagadmin.EventSearchParams{Query: "a\tb"}, []string{"query"}},
		{"query with NUL", flagadmin.EventSearchParams{Query: "a\x00b"}, []string{"query"}},
		{"query with a C1 control", flagadmin.EventSearchParams{Query: "a\u0085b"}, []string{"query"}},
		{"query not UTF-8", flagadmin.EventSearchParams{Query: "a\xffb"}, []string{"query"}},
		{"query too long", flagadmin.EventSearchParams{Query: strings.Repeat("a", flagadmin.MaxQueryLength+1)}, []string{"query"}},
		{"limit zero", flagadmin.EventSearchParams{Limit: "0"}, []string{"limit"}},
		{"limit over the maximum", flagadmin.EventSearchParams{Limit: "1001"}, []string{"limit"}},
		{"offset negative", flagadmin.EventSearchParams{Offset: "-1"}, []string{"offset"}},
		{"several errors at once", flagadmin.EventSearchParams{
			Feature: "x", Project: "IS:", Type: "nope", CreatedBy: "IS:me", ID: "IS:x", GroupID: "IS:",
			From: "IS:2025-13-01", To: "IS:tomorrow", Query: "\x07", Limit: "many", Offset: "-5",
		}, []string{"feature", "project", "type", "createdBy", "id", "groupId", "from", "to", "query", "limit", "offset"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := flagadmin.ParseEventSearch(tt.params)
			ve := wantValidation(t, err, tt.paths...)
			if len(ve.Fields) != len(tt.paths) {
				t.Errorf("got %d fields %q, want %d %q", len(ve.Fields), fieldPaths(ve), len(tt.paths), tt.paths)
			}
			if !reflect.DeepEqual(got, flagadmin.EventQuery{}) {
				t.Errorf("got query %+v with the error, want the zero EventQuery", got)
			}
		})
	}
}

func TestParseDeprecatedSearch(t *testing.T) {
	tests := []struct {
		name string
		req  flagadmin.DeprecatedSearchRequest
		want func(*flagadmin.EventQuery) // applied to the default query
	}{
		{"empty body", flagadmin.DeprecatedSearchRequest{}, func(*flagadmin.EventQuery) {}},
		{"empty strings are absent", flagadmin.DeprecatedSearchRequest{Type: ptr(""), Project: ptr(""), Feature: ptr(""), Query: ptr("")}, func(*flagadmin.EventQuery) {}},
		{"type", flagadmin.DeprecatedSearchRequest{Type: ptr("feature-created")}, func(q *flagadmin.EventQuery) { q.Types = []string{"feature-created"} }},
		{"project exact", flagadmin.DeprecatedSearchRequest{Project: ptr("Default ")}, func(q *flagadmin.EventQuery) { q.Projects = []string{"Default "} }},
		{"feature exact", flagadmin.DeprecatedSearchRequest{Feature: ptr("New-Checkout")}, func(q *flagadmin.EventQuery) { q.Features = []string{"New-Checkout"} }},
		{"query lower-cased", flagadmin.DeprecatedSearchRequest{Query: ptr("Ada@Example.COM")}, func(q *flagadmin.EventQuery) { q.Text = "ada@example.com" }},
		{"limit 1", flagadmin.DeprecatedSearchRequest{Limit: ptr(1)}, func(q *flagadmin.EventQuery) { q.Limit = 1 }},
		{"limit 100", flagadmin.DeprecatedSearchRequest{Limit: ptr(100)}, func(q *flagadmin.EventQuery) { q.Limit = 100 }},
		{"offset 0", flagadmin.DeprecatedSearchRequest{Offset: ptr(0)}, func(*flagadmin.EventQuery) {}},
		{"offset", flagadmin.DeprecatedSearchRequest{Offset: ptr(250)}, func(q *flagadmin.EventQuery) { q.Offset = 250 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := flagadmin.ParseDeprecatedSearch(tt.req)
			if err != nil {
				t.Fatalf("ParseDeprecatedSearch: %v", err)
			}
			want := flagadmin.EventQuery{TextScope: flagadmin.TextPayloadTypeCreator, Limit: flagadmin.DeprecatedDefaultLimit}
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseDeprecatedSearchRejects(t *testing.T) {
	tests := []struct {
		name  string
		req   flagadmin.DeprecatedSearchRequest
		paths []string
	}{
		{"unknown type", flagadmin.DeprecatedSearchRequest{Type: ptr("feature-exploded")}, []string{"type"}},
		{"type is case-sensitive", flagadmin.DeprecatedSearchRequest{Type: ptr("FEATURE-CREATED")}, []string{"type"}},
		{"limit 0", flagadmin.DeprecatedSearchRequest{Limit: ptr(0)}, []string{"limit"}},
		{"limit 101", flagadmin.DeprecatedSearchRequest{Limit: ptr(101)}, []string{"limit"}},
		{"limit negative", flagadmin.DeprecatedSearchRequest{Limit: ptr(-3)}, []string{"limit"}},
		{"offset negative", flagadmin.DeprecatedSearchRequest{Offset: ptr(-1)}, []string{"offset"}},
		{"query with a control character", flagadmin.DeprecatedSearchRequest{Query: ptr("a\rb")}, []string{"query"}},
		{"query too long", flagadmin.DeprecatedSearchRequest{Query: ptr(strings.Repeat("q", flagadmin.MaxQueryLength+1))}, []string{"query"}},
		{"all at once", flagadmin.DeprecatedSearchRequest{Type: ptr("x"), Query: ptr("\x1b"), Limit: ptr(1000), Offset: ptr(-1)}, []string{"type", "query", "limit", "offset"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := flagadmin.ParseDeprecatedSearch(tt.req)
			ve := wantValidation(t, err, tt.paths...)
			if len(ve.Fields) != len(tt.paths) {
				t.Errorf("got %d fields %q, want %d %q", len(ve.Fields), fieldPaths(ve), len(tt.paths), tt.paths)
			}
			if !reflect.DeepEqual(got, flagadmin.EventQuery{}) {
				t.Errorf("got query %+v with the error, want the zero EventQuery", got)
			}
		})
	}
}

func TestEventTypes(t *testing.T) {
	types := flagadmin.EventTypes()
	if len(types) == 0 {
		t.Fatal("no event types")
	}
	seen := map[string]bool{}
	for _, typ := range types {
		if seen[typ] {
			t.Errorf("event type %q listed twice", typ)
		}
		seen[typ] = true
		if !flagadmin.IsKnownEventType(typ) {
			t.Errorf("IsKnownEventType(%q) = false", typ)
		}
	}
	for _, typ := range []string{"feature-created", "feature-completed", "service-account-deleted", "change-request-configuration-updated", "actions-deleted",
		"retention-changed", "log-hold-added", "log-hold-released", "events-pruned"} {
		if !seen[typ] {
			t.Errorf("EventTypes() lacks %q", typ)
		}
	}
	for _, typ := range []string{"", "Feature-Created", "feature-created ", "feature_created"} {
		if flagadmin.IsKnownEventType(typ) {
			t.Errorf("IsKnownEventType(%q) = true, want false", typ)
		}
	}
	types[0] = "mutated"
	if flagadmin.EventTypes()[0] == "mutated" {
		t.Error("EventTypes returns the package's own slice, want a copy")
	}
}
