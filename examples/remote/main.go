// Remote shows one program written against flagadmin.Admin, the five
// operations of the admin API with the caller bound, run either embedded
// (an in-memory store and a Service bound to an admin token) or against a
// server through the typed client: one flag, one line of difference.
//
//	go run ./examples/remote                     # embedded, an in-memory world
//	go run ./examples/remote -server http://127.0.0.1:4243 -token '*:*.secret'
//
// For the second, start a server with go run ./examples/server; it prints
// its admin token on first start. An Unleash server works too (its
// deprecated search and service-account route answer not found).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func main() {
	server := flag.String("server", "", "base URL of a flagadmin or Unleash server; empty runs embedded")
	token := flag.String("token", os.Getenv("FLAGADMIN_TOKEN"), "API token for -server (default $FLAGADMIN_TOKEN)")
	flag.Parse()
	ctx := context.Background()
	admin, err := connect(ctx, *server, *token)
	if err != nil {
		log.Fatal(err)
	}
	if err := report(ctx, admin, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// connect returns the remote client when server is set, else an embedded
// Service over an in-memory world, bound to its admin token.
func connect(ctx context.Context, server, token string) (flagadmin.Admin, error) {
	if server != "" {
		c, err := client.New(server, token) // remote
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	svc, secret, err := embeddedWorld(ctx)
	if err != nil {
		return nil, err
	}
	p, err := svc.AuthenticateAdmin(ctx, secret)
	if err != nil {
		return nil, err
	}
	return svc.As(p), nil // embedded
}

// report uses the five operations, whoever implements them.
func report(ctx context.Context, admin flagadmin.Admin, w io.Writer) error {
	projects, err := admin.ListProjects(ctx, flagadmin.ProjectListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d projects:\n", len(projects))
	for _, p := range projects {
		fmt.Fprintf(w, "  %-10s mode=%-9s features=%d health=%d\n", p.ID, p.Mode, p.FeatureCount, p.Health)
	}

	page, err := admin.SearchEvents(ctx, flagadmin.EventSearchParams{Type: "IS:feature-created", Limit: "5"})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "feature-created events: %d, newest:\n", page.Total)
	for _, e := range page.Events {
		fmt.Fprintf(w, "  #%d %s by %s\n", e.ID, deref(e.FeatureName), e.CreatedBy)
	}

	// Errors are the domain's kinds, embedded or remote.
	_, err = admin.SearchEvents(ctx, flagadmin.EventSearchParams{Limit: "5000"})
	var ve *flagadmin.ValidationError
	if errors.As(err, &ve) {
		fmt.Fprintf(w, "limit 5000 refused: %s: %s\n", ve.Fields[0].Path, ve.Fields[0].Message)
	} else if err != nil {
		return err
	}

	err = admin.CompleteLifecycle(ctx, "web", "new-checkout", flagadmin.CompleteRequest{Status: flagadmin.StatusKept})
	switch {
	case errors.Is(err, flagadmin.ErrNotFound):
		fmt.Fprintln(w, "web/new-checkout does not exist here")
	case err != nil:
		return err
	default:
		fmt.Fprintln(w, "web/new-checkout completed: kept")
	}

	dep, err := admin.DeprecatedSearchEvents(ctx, flagadmin.DeprecatedSearchRequest{Query: ptr("checkout")})
	switch {
	case errors.Is(err, flagadmin.ErrNotFound): // Unleash removed it in 7.0
		fmt.Fprintln(w, "the deprecated search is not served")
	case err != nil:
		return err
	default:
		fmt.Fprintf(w, "events about checkout (deprecated search): %d\n", dep.Total)
	}

	err = admin.DeleteServiceAccount(ctx, "999999")
	fmt.Fprintf(w, "delete service account 999999: not found = %v\n", errors.Is(err, flagadmin.ErrNotFound))
	return nil
}

// embeddedWorld returns a Service over an in-memory store holding a small
// world, and the secret of its admin token.
func embeddedWorld(ctx context.Context) (*flagadmin.Service, string, error) {
	svc := flagadmin.NewService(memstore.New())
	if err := svc.LoadSeed(ctx, strings.NewReader(worldSeed)); err != nil {
		return nil, "", err
	}
	secret, _, err := svc.EnsureAdminToken(ctx)
	return svc, secret, err
}

// worldSeed is the embedded world (a seed file: docs/testing.md, "Seed files").
const worldSeed = `{
  "users": [{"id": 1, "name": "Ada", "email": "ada@example.com", "rootRole": "Admin"}],
  "serviceAccounts": [{"id": 10, "name": "CI bot", "username": "ci-bot", "rootRole": "Editor"}],
  "projects": [
    {"id": "web", "name": "Web shop", "mode": "open", "createdAt": "2025-01-01T00:00:00Z",
     "members": [{"userId": 1, "role": "Owner"}]},
    {"id": "payroll", "name": "Payroll", "mode": "private", "createdAt": "2025-01-01T00:00:00Z"}
  ],
  "features": [
    {"name": "new-checkout", "project": "web", "createdAt": "2025-01-02T00:00:00Z",
     "tags": [{"type": "simple", "value": "checkout"}]},
    {"name": "bonus-v2", "project": "payroll", "type": "experiment", "createdAt": "2025-01-03T00:00:00Z"}
  ],
  "events": [
    {"type": "feature-created", "createdBy": "ada@example.com", "createdByUserId": 1, "createdAt": "2025-01-02T00:00:00Z",
     "project": "web", "featureName": "new-checkout", "data": {"name": "new-checkout"},
     "tags": [{"type": "simple", "value": "checkout"}]},
    {"type": "feature-created", "createdBy": "ada@example.com", "createdByUserId": 1, "createdAt": "2025-01-03T00:00:00Z",
     "project": "payroll", "featureName": "bonus-v2", "data": {"name": "bonus-v2"}}
  ]
}`

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
