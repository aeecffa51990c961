package flagadmin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// A program that embeds flagadmin loads a world from a seed file into the
// in-memory store and searches its events as the holder of a token would.
func ExampleService_SearchEvents() {
	ctx := context.Background()
	now := func() time.Time { return time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC) }
	svc := flagadmin.NewService(memstore.New(), flagadmin.WithClock(now))
	seed := `{
	  "projects": [{"id": "default", "name": "Default"}],
	  "apiTokens": [{"secret": "*:*.admin-secret", "type": "admin", "name": "admin"}],
	  "events": [
	    {"type": "feature-created", "createdBy": "ada@example.com", "createdAt": "2025-03-01T09:00:00Z",
	     "project": "default", "featureName": "new-checkout", "data": {"name": "new-checkout"}},
	    {"type": "feature-created", "createdBy": "ada@example.com", "createdAt": "2025-03-02T09:00:00Z",
	     "project": "default", "featureName": "dark-mode", "data": {"name": "dark-mode"}},
	    {"type": "feature-archived", "createdBy": "eve@example.com", "createdAt": "2025-03-03T09:00:00Z",
	     "project": "default", "featureName": "new-checkout"}
	  ]
	}`
	if err := svc.LoadSeed(ctx, strings.NewReader(seed)); err != nil {
		fmt.Println(err)
		return
	}
	caller, err := svc.Authenticate(ctx, "Bearer *:*.admin-secret")
	if err != nil {
		fmt.Println(err)
		return
	}
	page, err := svc.SearchEvents(ctx, caller, flagadmin.EventSearchParams{
		Type: "IS:feature-created",
		From: "IS:2025-03-01",
		To:   "IS:2025-03-02",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("total:", page.Total)
	for _, e := range page.Events {
		fmt.Println(e.ID, e.CreatedAt.Format(time.DateOnly), e.Type, *e.FeatureName)
	}

	_, err = svc.SearchEvents(ctx, caller, flagadmin.EventSearchParams{Limit: "5000"})
	fmt.Println(errors.Is(err, flagadmin.ErrValidation), err)
	// Output:
	// total: 2
	// 2 2025-03-02 feature-created dark-mode
	// 1 2025-03-01 feature-created new-checkout
	// true limit: must be an integer from 1 to 1000, got "5000"
}

// The embedding program builds its world with the System principal, then
// completes a feature's lifecycle on behalf of a user.
func ExampleService_CompleteLifecycle() {
	ctx := context.Background()
	now := func() time.Time { return time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC) }
	store := memstore.New()
	svc := flagadmin.NewService(store, flagadmin.WithClock(now))

	eve, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "Eve", Email: "eve@example.com", RootRole: flagadmin.RoleEditor})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := svc.CreateProject(ctx, flagadmin.System, flagadmin.Project{ID: "default", Mode: flagadmin.ModeOpen}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := svc.CreateFeature(ctx, flagadmin.System, flagadmin.Feature{Name: "new-checkout", Project: "default"}); err != nil {
		fmt.Println(err)
		return
	}

	// An Editor may change features of open projects.
	value := "v2"
	req := flagadmin.CompleteRequest{Status: flagadmin.StatusKept, StatusValue: &value}
	if err := svc.CompleteLifecycle(ctx, flagadmin.AsUser(eve), "default", "new-checkout", req); err != nil {
		fmt.Println(err)
		return
	}
	// The same outcome again changes nothing and records nothing.
	if err := svc.CompleteLifecycle(ctx, flagadmin.AsUser(eve), "default", "new-checkout", req); err != nil {
		fmt.Println(err)
		return
	}
	feature, _ := store.Feature(ctx, "new-checkout")
	fmt.Printf("%+v\n", feature.Lifecycle)

	page, _ := svc.SearchEvents(ctx, flagadmin.System, flagadmin.EventSearchParams{Type: "IS:feature-completed"})
	for _, e := range page.Events {
		fmt.Println(e.Type, e.CreatedBy, *e.CreatedByUserID, string(e.Data))
	}

	err = svc.CompleteLifecycle(ctx, flagadmin.AsUser(eve), "default", "no-such-feature", req)
	fmt.Println(errors.Is(err, flagadmin.ErrNotFound), err)
	// Output:
	// {Stage:completed Status:kept StatusValue:v2}
	// feature-completed eve@example.com 1 {"kept":true,"status":"kept","statusValue":"v2"}
	// true Feature "no-such-feature" does not exist in project "default".
}

// The project list derives health, members and owners from the current data.
func ExampleService_ListProjects() {
	ctx := context.Background()
	now := func() time.Time { return time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC) }
	svc := flagadmin.NewService(memstore.New(), flagadmin.WithClock(now))
	seed := `{
	  "users": [{"id": 1, "name": "Ada", "email": "ada@example.com", "rootRole": "Admin"}],
	  "groups": [{"id": 1, "name": "Platform", "users": [1]}],
	  "projects": [
	    {"id": "web", "name": "Web shop", "members": [{"userId": 1, "role": "Owner"}, {"groupId": 1, "role": "Owner"}]},
	    {"id": "api", "name": "API", "mode": "protected"},
	    {"id": "old", "name": "Old", "archivedAt": "2025-01-01T00:00:00Z"}
	  ],
	  "features": [
	    {"name": "checkout", "project": "web", "createdAt": "2025-03-01T00:00:00Z"},
	    {"name": "legacy-cart", "project": "web", "createdAt": "2024-01-01T00:00:00Z"},
	    {"name": "search", "project": "web", "stale": true, "createdAt": "2025-03-01T00:00:00Z"},
	    {"name": "kill", "project": "web", "type": "kill-switch", "createdAt": "2020-01-01T00:00:00Z"}
	  ]
	}`
	if err := svc.LoadSeed(ctx, strings.NewReader(seed)); err != nil {
		fmt.Println(err)
		return
	}
	projects, err := svc.ListProjects(ctx, flagadmin.System, flagadmin.ProjectListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range projects {
		var owners []string
		for _, o := range p.Owners {
			owners = append(owners, o.OwnerType+":"+o.Name)
		}
		fmt.Printf("%s (%s): %d features, health %d, %d members, owners %v\n", p.Name, p.Mode, p.FeatureCount, p.Health, p.MemberCount, owners)
	}
	// Output:
	// API (protected): 0 features, health 100, 0 members, owners [system:]
	// Web shop (open): 4 features, health 50, 1 members, owners [user:Ada group:Platform]
}

// ParseFilter reads the filter parameters of the event search.
func ExampleParseFilter() {
	f, err := flagadmin.ParseFilter("feature", "IS_ANY_OF: new-checkout, dark-mode,,")
	fmt.Printf("%s %q %v\n", f.Operator, f.Values, err)

	_, err = flagadmin.ParseFilter("project", "is:default")
	var ve *flagadmin.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(ve.Fields[0].Path, "-", ve.Fields[0].Message)
	}
	// Output:
	// IS_ANY_OF ["new-checkout" "dark-mode"] <nil>
	// project - must start with IS: or IS_ANY_OF: followed by a comma-separated list of values, got "is:default"
}
