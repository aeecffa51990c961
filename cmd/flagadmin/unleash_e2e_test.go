package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
	"github.com/flagadmin/flagadmin/internal/unleashserver"
)

// TestFollowRealUnleash runs the real Unleash (unleash-server from npm) on
// a new PostgreSQL database and a flagadmin that follows it into memory,
// changes things through Unleash's own admin API, and checks each change at
// flagadmin within the bounds following promises: an event searchable within
// a second or two, state within 5 s, a deleted token refused within 5 s.
func TestFollowRealUnleash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Unleash; skipped with -short")
	}
	u := unleashserver.Start(t)
	cfg := memoryConfig()
	cfg.Follow, cfg.TokenCacheTTL, cfg.ResultCacheSize = u.DatabaseURL, defaultTokenCacheTTL, defaultResultCacheSize
	stderr := &syncbuffer.Buffer{}
	var l *Listener
	var store flagadmin.Store
	app := fxtest.New(t, serveOptions(cfg, stderr), fx.Populate(&l, &store))
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	base := "http://" + l.Addr().String()
	waitHTTP(t, base+"/ready", http.StatusOK)
	ctx := context.Background()
	admin := unleashserver.AdminToken

	// within waits until done holds, at most bound, and logs how long it took.
	within := func(t *testing.T, what string, bound time.Duration, done func() bool) {
		t.Helper()
		start := time.Now()
		for !done() {
			if time.Since(start) > bound {
				t.Fatalf("%s: not at flagadmin within %s\nflagadmin's log:\n%s", what, bound, stderr)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%s: at flagadmin after %s", what, time.Since(start).Round(time.Millisecond))
	}
	searchable := func(query string) func() bool {
		return func() bool {
			status, body := call(t, http.MethodGet, base+"/api/admin/search/events?"+query, admin, "")
			return status == http.StatusOK && bytes.Contains(body, []byte(`"total":1`))
		}
	}
	feature := func(name string, ok func(flagadmin.Feature) bool) func() bool {
		return func() bool {
			f, err := store.Feature(ctx, name)
			return err == nil && ok(f)
		}
	}

	u.Must(t, http.MethodPost, "/api/admin/projects/default/features", map[string]any{"name": "e2e-flag", "type": "experiment"}, nil)
	within(t, "a flag created: its event", 2*time.Second, searchable("feature=IS:e2e-flag&type=IS:feature-created"))
	within(t, "a flag created: the flag", 5*time.Second, feature("e2e-flag", func(f flagadmin.Feature) bool {
		return f.Project == "default" && f.Type == flagadmin.TypeExperiment
	}))

	u.Must(t, http.MethodPost, "/api/admin/projects/default/features/e2e-flag/lifecycle/complete", map[string]any{"status": "kept", "statusValue": "v1"}, nil)
	within(t, "a lifecycle completed: its event", 2*time.Second, searchable("feature=IS:e2e-flag&type=IS:feature-completed"))
	within(t, "a lifecycle completed: the stage", 5*time.Second, feature("e2e-flag", func(f flagadmin.Feature) bool {
		return f.Lifecycle == flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusKept, StatusValue: "v1"}
	}))

	var token struct{ Secret string }
	u.Must(t, http.MethodPost, "/api/admin/api-tokens", map[string]any{"tokenName": "e2e-backend", "type": "backend", "environment": "development", "projects": []string{"*"}}, &token)
	answers := func(status int) func() bool {
		return func() bool {
			got, _ := call(t, http.MethodGet, base+"/api/admin/projects", token.Secret, "")
			return got == status
		}
	}
	within(t, "an API token created: known (403, a backend token)", 5*time.Second, answers(http.StatusForbidden))
	u.Must(t, http.MethodDelete, "/api/admin/api-tokens/"+url.PathEscape(token.Secret), nil, nil)
	within(t, "an API token deleted: refused (401)", 5*time.Second, answers(http.StatusUnauthorized))

	u.Must(t, http.MethodDelete, "/api/admin/projects/default/features/e2e-flag", nil, nil)
	within(t, "a flag archived", 5*time.Second, feature("e2e-flag", func(f flagadmin.Feature) bool { return f.ArchivedAt != nil }))

	var user struct{ ID int64 }
	u.Must(t, http.MethodPost, "/api/admin/user-admin", map[string]any{"email": "e2e@example.com", "name": "E2E User", "rootRole": 3}, &user)
	within(t, "a user created", 5*time.Second, func() bool {
		got, err := store.User(ctx, user.ID)
		return err == nil && got.Email == "e2e@example.com" && got.RootRole == flagadmin.RoleViewer
	})

	// Unleash's open-source build has no API to create or archive a
	// project (Enterprise); as the fixture was made, SQL does it.
	conn, err := pgx.Connect(ctx, u.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{`INSERT INTO projects (id, name) VALUES ('e2e-project', 'E2E')`, `UPDATE projects SET archived_at = now() WHERE id = 'e2e-project'`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	within(t, "a project archived", 5*time.Second, func() bool {
		status, body := call(t, http.MethodGet, base+"/api/admin/projects?archived=true", admin, "")
		return status == http.StatusOK && bytes.Contains(body, []byte(`"id":"e2e-project"`))
	})

	// The whole log of Unleash, event by event, with Unleash's ids.
	var unleashIDs []int64
	rows, err := conn.Query(ctx, `SELECT id FROM events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if unleashIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		t.Fatal(err)
	}
	last := unleashIDs[len(unleashIDs)-1]
	within(t, "every event", 5*time.Second, searchable(fmt.Sprintf("id=IS:%d", last)))
	var ids []int64
	if err := store.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error { ids = append(ids, e.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != fmt.Sprint(unleashIDs) {
		t.Errorf("flagadmin's events %v, Unleash's %v", ids, unleashIDs)
	}
}

// TestFrontRealUnleashProjectList runs the real Unleash (open source) and
// a flagadmin that follows it and stands in front of it: the project list
// through flagadmin is Unleash's own, the default project only although
// the database holds another, with the fields computed from what
// flagadmin copies as Unleash answers them (when an SDK last reported a
// flag, the flags in cleanup). health, lastUpdatedAt and onboardingStatus
// differ by design (see docs/following-unleash.md).
func TestFrontRealUnleashProjectList(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Unleash; skipped with -short")
	}
	u := unleashserver.Start(t)
	ctx := t.Context()
	for _, name := range []string{"seen-flag", "done-flag"} {
		u.Must(t, http.MethodPost, "/api/admin/projects/default/features", map[string]any{"name": name}, nil)
	}
	conn, err := pgx.Connect(ctx, u.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	waitInitialStage(t, conn, "done-flag")
	u.Must(t, http.MethodPost, "/api/admin/projects/default/features/done-flag/lifecycle/complete", map[string]any{"status": "kept"}, nil)
	for _, q := range []string{
		// An SDK's report, as Unleash's last-seen job writes it; a project by SQL (open source has no API for it).
		`INSERT INTO last_seen_at_metrics (feature_name, environment, last_seen_at) VALUES ('seen-flag', 'development', now() - interval '8 days')`,
		`INSERT INTO projects (id, name) VALUES ('other', 'Other')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}

	cfg := memoryConfig()
	cfg.Follow = u.DatabaseURL
	up, err := parseUpstream(u.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.GatewayConfig = GatewayConfig{Upstream: up, UpstreamTimeout: 10 * time.Second, FollowWait: 5 * time.Second}
	stderr := &syncbuffer.Buffer{}
	var l *Listener
	app := fxtest.New(t, serveOptions(cfg, stderr), fx.Populate(&l))
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	base := "http://" + l.Addr().String()
	waitHTTP(t, base+"/ready", http.StatusOK)

	fields := []string{"id", "name", "description", "featureCount", "memberCount", "createdAt", "archivedAt", "mode", "lastReportedFlagUsage", "cleanupCount", "owners"}
	list := func(status int, body []byte) []map[string]any {
		t.Helper()
		var l struct{ Projects []map[string]any }
		if status != http.StatusOK || json.Unmarshal(body, &l) != nil {
			t.Fatalf("project list: %d %s", status, body)
		}
		for _, p := range l.Projects {
			maps.DeleteFunc(p, func(k string, _ any) bool { return !slices.Contains(fields, k) })
		}
		return l.Projects
	}
	for _, query := range []string{"", "?archived=true"} {
		// Both answers are read again until they agree: flagadmin's copy
		// follows within seconds.
		var got, want []map[string]any
		for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
			want = list(u.Call(t, http.MethodGet, "/api/admin/projects"+query, nil))
			got = list(call(t, http.MethodGet, base+"/api/admin/projects"+query, unleashserver.AdminToken, ""))
			if reflect.DeepEqual(got, want) {
				break
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("project list%s through flagadmin:\n%v\nUnleash's:\n%v\nflagadmin's log:\n%s\nUnleash's log:\n%s", query, got, want, stderr, u.Log)
			}
		}
		t.Logf("project list%s: %v", query, got)
	}
}

// waitInitialStage waits until Unleash has written flag's initial
// lifecycle stage, which it does a moment after creating the flag: a flag
// completed before that would have initial as its newest stage.
func waitInitialStage(t *testing.T, db *pgx.Conn, flag string) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		var n int
		if err := db.QueryRow(t.Context(), `SELECT count(*) FROM feature_lifecycles WHERE feature = $1 AND stage = 'initial'`, flag).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("Unleash wrote no initial stage of %s", flag)
		}
	}
}
