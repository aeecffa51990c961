package flagadmin_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestAsBindsThePrincipal checks that a bound Service answers every
// operation as the Service method called with the bound principal: the
// same results for reads, and the principal's permissions for writes.
func TestAsBindsThePrincipal(t *testing.T) {
	ctx := context.Background()
	svc, _ := exampleService(t)
	eve, err := svc.Authenticate(ctx, "user:eve-secret") // root Editor
	if err != nil {
		t.Fatal(err)
	}
	admin := flagadmin.AdminToken("admin")

	var asEve flagadmin.Admin = svc.As(eve)
	gotPage, err := asEve.SearchEvents(ctx, flagadmin.EventSearchParams{})
	if err != nil {
		t.Fatal(err)
	}
	wantPage, err := svc.SearchEvents(ctx, eve, flagadmin.EventSearchParams{})
	if err != nil {
		t.Fatal(err)
	}
	if gotPage.Total != wantPage.Total || !reflect.DeepEqual(gotPage.Events, wantPage.Events) {
		t.Errorf("As(eve).SearchEvents = %+v, want %+v", gotPage, wantPage)
	}
	limit := 1
	gotDep, err := asEve.DeprecatedSearchEvents(ctx, flagadmin.DeprecatedSearchRequest{Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	if gotDep.Total != wantPage.Total || len(gotDep.Events) != 1 {
		t.Errorf("As(eve).DeprecatedSearchEvents: got %d events of %d, want 1 of %d", len(gotDep.Events), gotDep.Total, wantPage.Total)
	}
	gotProjects, err := asEve.ListProjects(ctx, flagadmin.ProjectListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantProjects, err := svc.ListProjects(ctx, eve, flagadmin.ProjectListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotProjects, wantProjects) {
		t.Errorf("As(eve).ListProjects = %+v, want %+v", gotProjects, wantProjects)
	}

	// Eve, a root Editor, may complete on the open project but not delete
	// a service account; the admin token may.
	if err := asEve.CompleteLifecycle(ctx, "default", "new-checkout", flagadmin.CompleteRequest{Status: flagadmin.StatusKept}); err != nil {
		t.Errorf("As(eve).CompleteLifecycle: %v", err)
	}
	if err := asEve.DeleteServiceAccount(ctx, "10"); !errors.Is(err, flagadmin.ErrNoAccess) {
		t.Errorf("As(eve).DeleteServiceAccount(10) = %v, want ErrNoAccess", err)
	}
	if err := svc.As(admin).DeleteServiceAccount(ctx, "10"); err != nil {
		t.Errorf("As(admin).DeleteServiceAccount(10) = %v, want nil", err)
	}
	if err := svc.As(admin).DeleteServiceAccount(ctx, "10"); !errors.Is(err, flagadmin.ErrNotFound) {
		t.Errorf("second As(admin).DeleteServiceAccount(10) = %v, want ErrNotFound", err)
	}
}
