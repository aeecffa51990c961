package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

// following reports a store that follows an Unleash database, so is a
// read-only copy of it.
type following struct{}

func (following) ReadOnly(context.Context) (string, bool, error) {
	return "postgres://db.internal:5432/unleash", true, nil
}

// reporter is a follower's status that a test changes: following once
// ready, else the state it is given (importing by default).
type reporter struct {
	ready   atomic.Bool
	loading atomic.Pointer[follow.Status]
}

func (r *reporter) Status() follow.Status {
	synced := time.Date(2025, 3, 1, 11, 59, 58, 0, time.UTC)
	if st := r.loading.Load(); st != nil && !r.ready.Load() {
		return *st
	}
	return follow.Status{Source: "postgres://db.internal:5432/unleash", State: follow.Following,
		Ready: r.ready.Load(), Applying: true, Position: 42, LagSeconds: 2, SyncedAt: &synced}
}

// followEnv serves the test world as a server that follows Unleash: its
// service refuses writes, and rep reports on the follower.
func followEnv(t *testing.T, rep *reporter) *testEnv { return followEnvOn(t, rep, nil) }

// followEnvOn is followEnv with the served store wrapped by wrap (when not
// nil).
func followEnvOn(t *testing.T, rep *reporter, wrap func(flagadmin.Store) flagadmin.Store) *testEnv {
	t.Helper()
	e := newEnv(t, Config{}, nil)
	served := e.served
	if wrap != nil {
		served = wrap(served)
	}
	svc := flagadmin.NewService(served, flagadmin.WithClock(func() time.Time { return testNow }), flagadmin.WithReadOnly(following{}))
	e.svc, e.server = svc, New(svc, Config{Logger: e.server.log, Follow: rep})
	e.handler = storecache.Scope(e.server.Handler())
	return e
}

func TestFollowingServerRefusesWrites(t *testing.T) {
	rep := &reporter{}
	rep.ready.Store(true)
	e := followEnv(t, rep)
	complete := "/api/admin/projects/default/features/new-checkout/lifecycle/complete"
	for _, c := range []struct {
		name    string
		r       request
		status  int
		errName string
	}{
		{"lifecycle complete", request{method: "POST", path: complete, token: adminToken, body: `{"status":"kept"}`}, 409, nameReadOnly},
		{"service account delete", request{method: "DELETE", path: "/api/admin/service-account/10", token: adminToken}, 409, nameReadOnly},
		{"without a token: 401 first", request{method: "POST", path: complete, body: `{"status":"kept"}`}, 401, nameAuthentication},
		{"without the permission: 403 first", request{method: "DELETE", path: "/api/admin/service-account/10", token: vicToken}, 403, nameNoAccess},
		{"a bad body: 400 first", request{method: "POST", path: complete, token: adminToken, body: `{"status":"maybe"}`}, 400, nameBadData},
		{"an unknown project: 404 first", request{method: "POST", path: "/api/admin/projects/nope/features/x/lifecycle/complete", token: adminToken, body: `{"status":"kept"}`}, 404, nameNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := wantError(t, e.do(t, c.r), c.status, c.errName)
			if c.status == 409 {
				want := "This flagadmin keeps a read-only copy of the Unleash database postgres://db.internal:5432/unleash (it follows it): make the change in Unleash."
				if body.Message != want {
					t.Errorf("message: got %q, want %q", body.Message, want)
				}
			}
		})
	}
	if w := e.do(t, request{method: "GET", path: "/api/admin/search/events", token: adminToken}); w.Code != http.StatusOK {
		t.Errorf("search on a following server: %d %s", w.Code, w.Body)
	}
	f, err := e.store.Feature(context.Background(), "new-checkout")
	if err != nil || f.Lifecycle.Stage == flagadmin.StageCompleted {
		t.Errorf("the refused completion changed the feature: %+v %v", f, err)
	}
}

// stalledPing is a store whose ping does not answer (a store whose one
// writer the import's transaction holds).
type stalledPing struct{ flagadmin.Store }

func (stalledPing) Ping(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestFollowingServerBeforeTheCopy: until the store holds the copy, GET
// /ready and every /api/ request answer 503 ServiceUnavailable saying how
// far the import is or what keeps it from running (not a 401: no token is
// known yet), at once, without asking the store.
func TestFollowingServerBeforeTheCopy(t *testing.T) {
	rep := &reporter{}
	e := followEnvOn(t, rep, func(s flagadmin.Store) flagadmin.Store { return stalledPing{s} })
	const prefix = "The copy of the Unleash database is not loaded yet: "
	for _, c := range []struct {
		name string
		st   follow.Status
		want string
	}{
		{"importing", follow.Status{State: follow.Importing, Copied: 120000, CopyTotal: 302000},
			prefix + "the import that starts following runs (120000 of 302000 events copied)."},
		{"committing", follow.Status{State: follow.Importing, Copied: 302000, CopyTotal: 302000},
			prefix + "the import that starts following runs (all 302000 events copied; building the indexes and committing)."},
		{"the source cannot be reached", follow.Status{State: follow.Paused, Reason: "the Unleash database cannot be reached: connection refused"},
			prefix + "the import that starts following cannot run: the Unleash database cannot be reached: connection refused; it is tried again by itself."},
		{"stopped", follow.Status{State: follow.Stopped, Reason: "the Unleash database at x no longer has events"},
			prefix + "following stopped: the Unleash database at x no longer has events."},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := c.st
			rep.loading.Store(&st)
			for _, r := range []request{
				{method: "GET", path: "/ready"},
				{method: "GET", path: "/api/admin/search/events", token: adminToken},
				{method: "GET", path: "/api/admin/projects", token: "*:*.not-a-token"},
			} {
				w := e.do(t, r)
				body := wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
				if body.Message != c.want || w.Header().Get("Retry-After") == "" {
					t.Errorf("%s %s: %s %v; want the message %q", r.method, r.path, w.Body, w.Header(), c.want)
				}
			}
		})
	}
	if strings.Contains(e.logs.String(), "storage unavailable") {
		t.Errorf("a copy not loaded yet is logged as a storage failure:\n%s", e.logs)
	}
}

func TestFollowingServerHealthAndReady(t *testing.T) {
	rep := &reporter{}
	e := followEnv(t, rep)
	w := e.do(t, request{method: "GET", path: "/ready"})
	wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	if w.Header().Get("Retry-After") == "" {
		t.Errorf("/ready before the import: %s %v", w.Body, w.Header())
	}
	rep.ready.Store(true)
	if w := e.do(t, request{method: "GET", path: "/ready"}); w.Code != http.StatusOK {
		t.Errorf("/ready once imported: %d %s", w.Code, w.Body)
	}
	w = e.do(t, request{method: "GET", path: "/health"})
	var health struct {
		Health, Status string
		Follow         map[string]any
	}
	if err := json.Unmarshal(w.Body.Bytes(), &health); err != nil || w.Code != 200 {
		t.Fatalf("/health: %d %s", w.Code, w.Body)
	}
	if health.Health != "GOOD" || health.Follow["state"] != "following" || health.Follow["position"] != 42.0 ||
		health.Follow["lagSeconds"] != 2.0 || health.Follow["syncedAt"] != "2025-03-01T11:59:58Z" || health.Follow["source"] != "postgres://db.internal:5432/unleash" {
		t.Errorf("/health: %s", w.Body)
	}
	// A server that follows nothing answers without the follow field.
	plain := newEnv(t, Config{}, nil)
	if w := plain.do(t, request{method: "GET", path: "/health"}); strings.TrimSpace(w.Body.String()) != `{"health":"GOOD","status":"ok"}` {
		t.Errorf("/health of a server that follows nothing: %s", w.Body)
	}
}
