package flagadmin_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// testNow is the fixed "current time" of the tests that need a clock.
var testNow = time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)

// fixedClock returns a clock option that always answers at.
func fixedClock(at time.Time) flagadmin.Option {
	return flagadmin.WithClock(func() time.Time { return at })
}

// newService returns a service over an empty in-memory store, with the clock
// fixed at testNow unless opts set another.
func newService(t *testing.T, opts ...flagadmin.Option) (*flagadmin.Service, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	return flagadmin.NewService(store, append([]flagadmin.Option{fixedClock(testNow)}, opts...)...), store
}

// exampleService returns a service over a store loaded with
// testdata/seed-example.json (the example of the seed file format).
func exampleService(t *testing.T, opts ...flagadmin.Option) (*flagadmin.Service, *memstore.Store) {
	t.Helper()
	svc, store := newService(t, opts...)
	f, err := os.Open("testdata/seed-example.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := svc.LoadSeed(context.Background(), f); err != nil {
		t.Fatalf("LoadSeed(seed-example.json): %v", err)
	}
	return svc, store
}

// wantValidation asserts that err is of kind ErrValidation, is a
// *ValidationError, and names every one of paths. It returns the error.
func wantValidation(t *testing.T, err error, paths ...string) *flagadmin.ValidationError {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want a validation error naming %q", paths)
	}
	if !errors.Is(err, flagadmin.ErrValidation) {
		t.Fatalf("errors.Is(%v, ErrValidation) = false, want true", err)
	}
	var ve *flagadmin.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %T (%v), want a *flagadmin.ValidationError", err, err)
	}
	if len(ve.Fields) == 0 {
		t.Fatalf("validation error %q has no fields", err)
	}
	for _, p := range paths {
		if !slices.ContainsFunc(ve.Fields, func(f flagadmin.FieldError) bool { return f.Path == p }) {
			t.Errorf("validation error %q does not name %q (paths %q)", err, p, fieldPaths(ve))
		}
	}
	for _, f := range ve.Fields {
		if f.Message == "" {
			t.Errorf("field %q has an empty message", f.Path)
		}
	}
	return ve
}

// fieldPaths lists the paths a validation error names.
func fieldPaths(ve *flagadmin.ValidationError) []string {
	out := make([]string, len(ve.Fields))
	for i, f := range ve.Fields {
		out[i] = f.Path
	}
	return out
}

// wantKind asserts that err matches kind with errors.Is.
func wantKind(t *testing.T, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("got error %v, want kind %v", err, kind)
	}
}

// allEvents returns every event in store, newest first.
func allEvents(t *testing.T, store flagadmin.Store) []flagadmin.Event {
	t.Helper()
	page, err := store.SearchEvents(context.Background(), flagadmin.EventQuery{Limit: 1 << 20})
	if err != nil {
		t.Fatalf("SearchEvents: %v", err)
	}
	return page.Events
}

func ptr[T any](v T) *T { return &v }

// repeat returns n copies of s joined by sep.
func repeat(s, sep string, n int) string {
	return strings.TrimSuffix(strings.Repeat(s+sep, n), sep)
}
