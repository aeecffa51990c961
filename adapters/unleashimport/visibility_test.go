package unleashimport_test

import (
	"context"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// TestImportedMultiProjectEvents: the fixture's event 2294, the creation
// of a token for default and payments (project "default,payments"), and
// its five events of tokens for every project ("*") are hidden from a
// Viewer who may not see payments, in both searches, their totals and
// the export, and seen by a member of payments, who sees every project
// (Dave is a root Viewer outside payments, the only private project; Bob
// a member of it).
func TestImportedMultiProjectEvents(t *testing.T) {
	url := unleashfixture.ReadOnly(t)
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			st := tg.open(t)
			if _, err := unleashimport.Import(ctx, openSource(t, url), st, unleashimport.Options{}); err != nil {
				t.Fatalf("Import: %v", err)
			}
			svc := flagadmin.NewService(st)
			as := func(secret string) flagadmin.Principal {
				p, err := svc.Authenticate(ctx, secret)
				if err != nil {
					t.Fatalf("Authenticate: %v", err)
				}
				return p
			}
			admin := as("*:*.unleash-insecure-admin-api-token")
			page, err := svc.SearchEvents(ctx, admin, flagadmin.EventSearchParams{ID: "IS:2294"})
			if err != nil || len(page.Events) != 1 || page.Events[0].Project == nil || *page.Events[0].Project != "default,payments" ||
				page.Events[0].Type != flagadmin.EventAPITokenCreated {
				t.Fatalf("admin: event 2294: got %+v, %v; want the api-token-created of project default,payments", page, err)
			}
			for _, c := range []struct {
				name      string
				secret    string
				sees2294  bool
				everyProj int // events of project "*" seen
			}{
				{"Viewer outside payments", davePAT, false, 0},
				{"member of payments", bobPAT, true, 5},
			} {
				p := as(c.secret)
				page, err := svc.SearchEvents(ctx, p, flagadmin.EventSearchParams{ID: "IS:2294"})
				if err != nil || (len(page.Events) == 1) != c.sees2294 || (page.Total == 1) != c.sees2294 {
					t.Errorf("%s: search for event 2294: got %d events, total %d, %v; want seen %v", c.name, len(page.Events), page.Total, err, c.sees2294)
				}
				exp, err := svc.ExportEvents(ctx, p, flagadmin.EventExportParams{})
				if err != nil {
					t.Fatal(err)
				}
				exported, seen2294, every := 0, false, 0
				err = exp.Run(ctx, func(e flagadmin.Event) error {
					exported++
					seen2294 = seen2294 || e.ID == 2294
					if e.Project != nil && *e.Project == flagadmin.AllProjects {
						every++
					}
					if !c.sees2294 && e.Project != nil && strings.Contains(*e.Project, "payments") {
						t.Errorf("%s: the export shows event %d of project %q", c.name, e.ID, *e.Project)
					}
					return nil
				})
				if err != nil || seen2294 != c.sees2294 || every != c.everyProj {
					t.Errorf("%s: export: event 2294 seen %v, %d events of every project, %v; want %v, %d", c.name, seen2294, every, err, c.sees2294, c.everyProj)
				}
				all, err := svc.SearchEvents(ctx, p, flagadmin.EventSearchParams{Limit: "1"})
				if err != nil || all.Total != exported {
					t.Errorf("%s: search total %d, %v; want the %d events exported", c.name, all.Total, err, exported)
				}
				dep, err := svc.DeprecatedSearchEvents(ctx, p, flagadmin.DeprecatedSearchRequest{})
				if err != nil || dep.Total != exported {
					t.Errorf("%s: deprecated search total %d, %v; want the %d events exported", c.name, dep.Total, err, exported)
				}
				typed, err := svc.SearchEvents(ctx, p, flagadmin.EventSearchParams{Type: "IS:" + flagadmin.EventAPITokenCreated})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range typed.Events {
					if !c.sees2294 && e.Project != nil && (strings.Contains(*e.Project, "payments") || *e.Project == flagadmin.AllProjects) {
						t.Errorf("%s: the type search shows event %d of project %q", c.name, e.ID, *e.Project)
					}
				}
			}
		})
	}
}
