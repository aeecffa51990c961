package testingexample_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// newService returns a Service over a fresh in-memory store holding the
// world of testdata/seed.json.
func newService(t testing.TB) *flagadmin.Service {
	t.Helper()
	f, err := os.Open("testdata/seed.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	svc := flagadmin.NewService(memstore.New())
	if err := svc.LoadSeed(context.Background(), f); err != nil {
		t.Fatalf("load seed: %v", err) // names the wrong entry, such as events[2].type
	}
	return svc
}

// TestSearchVisibility asserts on search results for principals of the seed:
// the admin token sees every event; the Viewer Vic, authenticated with his
// personal token, sees neither the private project's events nor the
// project-less ones.
func TestSearchVisibility(t *testing.T) {
	ctx := context.Background()
	svc := newService(t)
	vic, err := svc.Authenticate(ctx, "user:vic-token")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		who     flagadmin.Principal
		params  flagadmin.EventSearchParams
		wantIDs []int64 // newest first
	}{
		{"admin sees all", flagadmin.AdminToken("test"), flagadmin.EventSearchParams{}, []int64{2, 4, 3, 1}},
		{"viewer sees open projects only", vic, flagadmin.EventSearchParams{}, []int64{2, 1}},
		{"free text in data and tags", flagadmin.AdminToken("test"), flagadmin.EventSearchParams{Query: "CHECKOUT"}, []int64{2, 4, 1}},
		{"filter by type and day", flagadmin.AdminToken("test"), flagadmin.EventSearchParams{Type: "IS:feature-created", From: "IS:2025-01-03"}, []int64{3}},
		{"paging", flagadmin.AdminToken("test"), flagadmin.EventSearchParams{Limit: "2", Offset: "1"}, []int64{4, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := svc.SearchEvents(ctx, tt.who, tt.params)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, e := range page.Events {
				got = append(got, e.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantIDs) {
				t.Errorf("got ids %v, want %v", got, tt.wantIDs)
			}
		})
	}
}

// TestBadFilterIsValidationError shows how to assert on an error kind and
// the parameter it names.
func TestBadFilterIsValidationError(t *testing.T) {
	_, err := newService(t).SearchEvents(context.Background(), flagadmin.AdminToken("test"), flagadmin.EventSearchParams{Type: "feature-created"})
	var v *flagadmin.ValidationError
	if !errors.Is(err, flagadmin.ErrValidation) || !errors.As(err, &v) || v.Fields[0].Path != "type" {
		t.Fatalf("got %v, want a validation error naming type", err)
	}
}

// Example loads the seed file and searches the events of one feature.
func Example() {
	ctx := context.Background()
	f, err := os.Open("testdata/seed.json")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	svc := flagadmin.NewService(memstore.New())
	if err := svc.LoadSeed(ctx, f); err != nil {
		panic(err)
	}
	page, err := svc.SearchEvents(ctx, flagadmin.System, flagadmin.EventSearchParams{Feature: "IS:new-checkout"})
	if err != nil {
		panic(err)
	}
	fmt.Println("total:", page.Total)
	for _, e := range page.Events {
		fmt.Println(e.ID, e.Type, e.CreatedBy, e.CreatedAt.Format("2006-01-02"))
	}
	// Output:
	// total: 2
	// 2 feature-environment-enabled eve@example.com 2025-01-05
	// 1 feature-created ada@example.com 2025-01-02
}
