// Embedded shows flagadmin used as a library, without HTTP and without a
// database: it builds a small world in the in-memory store as the System
// principal, searches the event log, completes a feature's lifecycle, lists
// the projects as a user would see them, and prints the results.
//
//	go run ./examples/embedded
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	store := memstore.New()
	svc := flagadmin.NewService(store)
	sys := flagadmin.System // the embedding program: a root admin

	// A world: two users, a private and an open project, two features.
	ada, err := svc.CreateUser(ctx, sys, flagadmin.User{Name: "Ada", Email: "ada@example.com", RootRole: flagadmin.RoleAdmin})
	if err != nil {
		return err
	}
	eve, err := svc.CreateUser(ctx, sys, flagadmin.User{Name: "Eve", Email: "eve@example.com", RootRole: flagadmin.RoleEditor})
	if err != nil {
		return err
	}
	if _, err := svc.CreateProject(ctx, sys, flagadmin.Project{ID: "web", Name: "Web shop", Mode: flagadmin.ModeOpen,
		Members: []flagadmin.ProjectMembership{{UserID: &ada.ID, Role: flagadmin.ProjectRoleOwner}}}); err != nil {
		return err
	}
	if _, err := svc.CreateProject(ctx, sys, flagadmin.Project{ID: "payroll", Name: "Payroll", Mode: flagadmin.ModePrivate}); err != nil {
		return err
	}
	checkout := []flagadmin.Tag{{Type: "simple", Value: "checkout"}}
	if _, err := svc.CreateFeature(ctx, sys, flagadmin.Feature{Name: "new-checkout", Project: "web", Tags: checkout}); err != nil {
		return err
	}
	if _, err := svc.CreateFeature(ctx, sys, flagadmin.Feature{Name: "bonus-v2", Project: "payroll", Type: flagadmin.TypeExperiment}); err != nil {
		return err
	}
	// Events the embedding program records itself.
	web := "web"
	if _, err := svc.AppendEvent(ctx, flagadmin.Event{Type: flagadmin.EventFeatureEnvironmentEnabled, CreatedBy: eve.Email,
		CreatedByUserID: &eve.ID, Project: &web, FeatureName: ptr("new-checkout"), Environment: ptr("production"),
		Data: []byte(`{"enabled":true}`), Tags: checkout, CreatedAt: time.Now().Add(-time.Hour)}); err != nil {
		return err
	}

	// Search the event log as Eve: the private project's events are hidden from her.
	asEve := flagadmin.AsUser(eve)
	page, err := svc.SearchEvents(ctx, asEve, flagadmin.EventSearchParams{Query: "checkout"})
	if err != nil {
		return err
	}
	fmt.Printf("events about checkout visible to Eve: %d\n", page.Total)
	for _, e := range page.Events {
		fmt.Printf("  #%d %-28s by %s\n", e.ID, e.Type, e.CreatedBy)
	}

	// Complete the lifecycle of new-checkout as Eve (an Editor on an open project).
	if err := svc.CompleteLifecycle(ctx, asEve, "web", "new-checkout", flagadmin.CompleteRequest{Status: flagadmin.StatusKept, StatusValue: ptr("v2")}); err != nil {
		return err
	}
	f, err := store.Feature(ctx, "new-checkout")
	if err != nil {
		return err
	}
	fmt.Printf("new-checkout lifecycle: %s, %s %s\n", f.Lifecycle.Stage, f.Lifecycle.Status, f.Lifecycle.StatusValue)

	// Errors are kinds: a feature of the private project is not found for Eve.
	err = svc.CompleteLifecycle(ctx, asEve, "payroll", "bonus-v2", flagadmin.CompleteRequest{Status: flagadmin.StatusDiscarded})
	fmt.Printf("Eve completes bonus-v2: not found = %v (%v)\n", errors.Is(err, flagadmin.ErrNotFound), err)

	// The project list, as Eve and as the system.
	for _, who := range []struct {
		name string
		p    flagadmin.Principal
	}{{"Eve", asEve}, {"system", sys}} {
		projects, err := svc.ListProjects(ctx, who.p, flagadmin.ProjectListOptions{})
		if err != nil {
			return err
		}
		fmt.Printf("projects visible to %s:\n", who.name)
		for _, p := range projects {
			fmt.Printf("  %-8s %-9s mode=%-7s features=%d health=%d\n", p.ID, p.Name, p.Mode, p.FeatureCount, p.Health)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
