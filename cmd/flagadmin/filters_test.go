package main

import (
	"flag"
	"io"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestFilterFlagsAreTheDeclaredFilters: events export and events tail have
// one flag per filter the domain declares for the export and the stream
// (flagadmin.FilterParams), named in kebab case (createdBy: --created-by),
// each setting its parameter, and no other filter flag; filterHelp names
// declared filters only.
func TestFilterFlagsAreTheDeclaredFilters(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p := filterFlags(fs)
	want := map[string]bool{}
	for _, f := range flagadmin.FilterParams() {
		if !f.Uses.Has(flagadmin.UseExport|flagadmin.UseStream) || f.Kind == flagadmin.FilterPaging {
			continue
		}
		name := flagName(f.Name)
		want[name] = true
		if err := fs.Set(name, "IS:v-"+f.Name); err != nil {
			t.Errorf("filter %s: no flag --%s: %v", f.Name, name, err)
			continue
		}
		if got := f.Value(p); got != "IS:v-"+f.Name {
			t.Errorf("--%s sets %s to %q", name, f.Name, got)
		}
	}
	fs.VisitAll(func(fl *flag.Flag) {
		if !want[fl.Name] {
			t.Errorf("filterFlags registers --%s, not a declared filter", fl.Name)
		}
	})
	for _, name := range []string{"created-by", "group-id", "feature"} {
		if !want[name] {
			t.Errorf("no flag --%s", name)
		}
	}
	for name := range filterHelp {
		if _, ok := flagadmin.FilterParamNamed(name); !ok {
			t.Errorf("filterHelp names %s, which is no declared filter", name)
		}
	}
}

// TestNormalizeFiltersByKind: a list filter without an operator becomes
// IS_ANY_OF, a bare day IS:, whatever the filter.
func TestNormalizeFiltersByKind(t *testing.T) {
	for _, f := range flagadmin.FilterParams() {
		var p flagadmin.EventSearchParams
		f.Set(&p, "a,b")
		normalizeFilters(&p)
		want := "a,b"
		switch f.Kind {
		case flagadmin.FilterStrings, flagadmin.FilterIntegers:
			want = "IS_ANY_OF:a,b"
		case flagadmin.FilterDay:
			want = "IS:a,b"
		}
		if got := f.Value(&p); got != want {
			t.Errorf("%s: got %q, want %q", f.Name, got, want)
		}
	}
}
