package httpapi

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func serviceAccountURL(id string) string { return "/api/admin/service-account/" + id }

func TestDeleteServiceAccount200(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	ctx := context.Background()

	// The account's token works before the delete.
	before := e.do(t, request{method: http.MethodGet, path: projectsPath, token: ciToken})
	if before.Code != http.StatusOK {
		t.Fatalf("the service account's token: got %d, want 200", before.Code)
	}

	wantEmpty200(t, e.do(t, request{method: http.MethodDelete, path: serviceAccountURL("10"), token: adminToken}))

	if _, err := e.store.User(ctx, 10); !errors.Is(err, flagadmin.ErrNotFound) {
		t.Errorf("the account still exists: %v", err)
	}
	page, err := e.svc.SearchEvents(ctx, flagadmin.AdminToken("admin"), flagadmin.EventSearchParams{Type: "IS:service-account-deleted"})
	if err != nil || page.Total != 1 {
		t.Fatalf("service-account-deleted events: got %d (%v), want 1", page.Total, err)
	}
	// Its tokens stop working at once, and a second delete is a 404.
	wantError(t, e.do(t, request{method: http.MethodGet, path: projectsPath, token: ciToken}), http.StatusUnauthorized, nameAuthentication)
	wantError(t, e.do(t, request{method: http.MethodDelete, path: serviceAccountURL("10"), token: adminToken}), http.StatusNotFound, nameNotFound)

	// A root Admin user may delete too.
	wantEmpty200(t, e.do(t, request{method: http.MethodDelete, path: serviceAccountURL("11"), token: adaToken}))
}

func TestDeleteServiceAccountErrors(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	cases := []struct {
		name, token, id string
		status          int
		errName         string
	}{
		{"no token", "", "10", http.StatusUnauthorized, nameAuthentication},
		{"unknown token", unknownToken, "10", http.StatusUnauthorized, nameAuthentication},
		{"client token", clientToken, "10", http.StatusForbidden, nameNoAccess},
		{"root Editor", eveToken, "10", http.StatusForbidden, nameNoAccess},
		{"the service account itself (Editor)", ciToken, "10", http.StatusForbidden, nameNoAccess},
		{"unknown id", adminToken, "999", http.StatusNotFound, nameNotFound},
		{"non-numeric id", adminToken, "ci-bot", http.StatusNotFound, nameNotFound},
		{"a normal user", adminToken, "2", http.StatusNotFound, nameNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do(t, request{method: http.MethodDelete, path: serviceAccountURL(c.id), token: c.token})
			wantError(t, w, c.status, c.errName)
		})
	}
	if _, err := e.store.User(context.Background(), 10); err != nil {
		t.Errorf("a refused delete removed the account: %v", err)
	}

	e = newEnv(t, Config{}, failWith(unavailableErr))
	w := e.do(t, request{method: http.MethodDelete, path: serviceAccountURL("10"), token: adminToken})
	wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	mustNotLeak(t, w)

	e = newEnv(t, Config{}, failWith(errors.New(fakeSQL)))
	w = e.do(t, request{method: http.MethodDelete, path: serviceAccountURL("10"), token: adminToken})
	wantError(t, w, http.StatusInternalServerError, nameInternal)
	mustNotLeak(t, w)
}
