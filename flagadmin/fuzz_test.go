package flagadmin_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// wantFuzzValidation checks the properties every rejection has: a
// *ValidationError of kind ErrValidation whose fields are all among paths.
func wantFuzzValidation(t *testing.T, err error, paths ...string) {
	t.Helper()
	var ve *flagadmin.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, flagadmin.ErrValidation) {
		t.Fatalf("got %T %v, want a *flagadmin.ValidationError", err, err)
	}
	if len(ve.Fields) == 0 {
		t.Fatalf("validation error without fields: %v", err)
	}
	for _, f := range ve.Fields {
		ok := false
		for _, p := range paths {
			ok = ok || f.Path == p
		}
		if !ok {
			t.Fatalf("field path %q is not one of %q (%v)", f.Path, paths, err)
		}
	}
}

func FuzzParseFilter(f *testing.F) {
	for _, seed := range []string{
		"IS:a", "IS_ANY_OF:a,b", "IS:", "IS_ANY_OF: , ,", "is:a", "IS", ":", "", "IS::", "IS:a,,b",
		"IS_ANY_OF:\u00a0x\u00a0,y", "IS:\xff", "IS_ANY_OF:" + repeat("v", ",", flagadmin.MaxFilterValues+1),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := flagadmin.ParseFilter("project", raw)
		if err != nil {
			wantFuzzValidation(t, err, "project")
			return
		}
		if got.Operator != flagadmin.OpIs && got.Operator != flagadmin.OpIsAnyOf {
			t.Fatalf("accepted operator %q", got.Operator)
		}
		if !strings.HasPrefix(raw, got.Operator+":") {
			t.Fatalf("accepted %q with operator %q", raw, got.Operator)
		}
		if n := len(got.Values); n < 1 || n > flagadmin.MaxFilterValues {
			t.Fatalf("accepted %d values", n)
		}
		for _, v := range got.Values {
			if v == "" || v != strings.TrimSpace(v) || strings.Contains(v, ",") {
				t.Fatalf("accepted value %q: want trimmed, non-empty, without commas", v)
			}
			if !strings.Contains(raw, v) {
				t.Fatalf("value %q is not part of %q", v, raw)
			}
		}
	})
}

func FuzzParseDay(f *testing.F) {
	for _, seed := range []string{
		"IS:2025-03-01", "IS:2024-02-29", "IS:2025-02-30", "IS:2025-02-29", "2025-03-01", "IS:", "IS:2025-3-1",
		"IS:+025-03-01", "IS:-025-03-01", "IS:2025-03-01 ", "IS:0000-01-01", "IS:9999-12-31", "IS:2025-12-32",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := flagadmin.ParseDay("to", raw)
		if err != nil {
			wantFuzzValidation(t, err, "to")
			return
		}
		if got.Location() != time.UTC {
			t.Fatalf("ParseDay(%q) in %v, want UTC", raw, got.Location())
		}
		if got != got.Truncate(24*time.Hour) || got.Hour() != 0 || got.Minute() != 0 || got.Second() != 0 || got.Nanosecond() != 0 {
			t.Fatalf("ParseDay(%q) = %v, want midnight", raw, got)
		}
		if want := "IS:" + got.Format("2006-01-02"); raw != want {
			t.Fatalf("ParseDay(%q) = %v, which formats as %q", raw, got, want)
		}
	})
}

func FuzzParseEventSearch(f *testing.F) {
	f.Add("checkout", "IS:a", "IS:default", "IS:feature-created", "IS:-42", "IS:1", "IS:2025-03-01", "IS:2025-03-02", "10", "50")
	f.Add("", "", "", "", "", "", "", "", "", "")
	f.Add("\x00", "a", "IS:", "IS:nope", "IS:x", "IS:1.5", "IS:2025-02-30", "2025-03-01", "-1", "0")
	f.Add("ÄÖÜ 100%_", "IS_ANY_OF:a, b,,", "IS_ANY_OF:x,y", "IS_ANY_OF:feature-created,feature-archived", "IS_ANY_OF:1,2", "IS:3", "IS:2025-03-02", "IS:2025-03-01", "0", "1000")
	f.Add(strings.Repeat("x", flagadmin.MaxQueryLength+1), "IS:\t", "is:a", "IS:Feature-Created", "IS:99999999999999999999", "IS:", "IS:2024-02-29", "IS:2024-02-29", "1e3", "1001")
	f.Fuzz(func(t *testing.T, query, feature, project, typ, createdBy, id, from, to, offset, limit string) {
		params := flagadmin.EventSearchParams{
			Query: query, Feature: feature, Project: project, Type: typ, CreatedBy: createdBy,
			ID: id, From: from, To: to, Offset: offset, Limit: limit,
		}
		q, err := flagadmin.ParseEventSearch(params)
		if err != nil {
			wantFuzzValidation(t, err, "query", "feature", "project", "type", "createdBy", "id", "from", "to", "offset", "limit")
			return
		}
		if q.Limit < 1 || q.Limit > flagadmin.SearchMaxLimit {
			t.Fatalf("accepted limit %d", q.Limit)
		}
		if q.Offset < 0 {
			t.Fatalf("accepted offset %d", q.Offset)
		}
		if q.Text != strings.ToLower(query) || !utf8.ValidString(q.Text) || strings.ContainsFunc(q.Text, unicode.IsControl) {
			t.Fatalf("accepted query %q as text %q", query, q.Text)
		}
		if utf8.RuneCountInString(q.Text) > flagadmin.MaxQueryLength {
			t.Fatalf("accepted a query of %d characters", utf8.RuneCountInString(q.Text))
		}
		for _, typ := range q.Types {
			if utf8.RuneCountInString(typ) > flagadmin.MaxEventTypeLength {
				t.Fatalf("accepted a type of %d characters", utf8.RuneCountInString(typ))
			}
		}
		for _, d := range []*time.Time{q.From, q.Before} {
			if d != nil && (d.Location() != time.UTC || !d.Equal(d.Truncate(24*time.Hour))) {
				t.Fatalf("accepted a day bound %v that is not midnight UTC", d)
			}
		}
		if (q.From != nil) != (from != "") || (q.Before != nil) != (to != "") {
			t.Fatalf("from %q, to %q gave From %v, Before %v", from, to, q.From, q.Before)
		}
		if q.From != nil && q.Before != nil && !q.From.Before(*q.Before) {
			t.Fatalf("accepted From %v not before Before %v", q.From, q.Before)
		}
		if q.TextScope != flagadmin.TextPayload || q.RequireProject || len(q.HiddenProjects) > 0 {
			t.Fatalf("parsing set visibility or scope: %+v", q)
		}
	})
}
