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
)

// following reports a store that follows an Unleash database.
type following struct{}

func (following) FollowState(context.Context) (flagadmin.FollowState, error) {
	return flagadmin.FollowState{Source: flagadmin.FollowSource{SystemID: "1", Database: "unleash", URL: "postgres://db.internal:5432/unleash"}, Position: 42}, nil
}

// reporter is a follower's status that a test changes.
type reporter struct{ ready atomic.Bool }

func (r *reporter) Status() flagadmin.FollowStatus {
	synced := time.Date(2025, 3, 1, 11, 59, 58, 0, time.UTC)
	return flagadmin.FollowStatus{Source: "postgres://db.internal:5432/unleash", State: flagadmin.FollowStateFollowing,
		Ready: r.ready.Load(), Applying: true, Position: 42, LagSeconds: 2, SyncedAt: &synced}
}

// followEnv serves the test world as a server that follows Unleash: its
// service refuses writes, and rep reports on the follower.
func followEnv(t *testing.T, rep *reporter) *testEnv {
	t.Helper()
	e := newEnv(t, Config{}, nil)
	svc := flagadmin.NewService(e.served, flagadmin.WithClock(func() time.Time { return testNow }), flagadmin.WithFollowState(following{}))
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

func TestFollowingServerHealthAndReady(t *testing.T) {
	rep := &reporter{}
	e := followEnv(t, rep)
	w := e.do(t, request{method: "GET", path: "/ready"})
	body := wantError(t, w, http.StatusServiceUnavailable, nameServiceUnavailable)
	if body.Message != msgNotImported || w.Header().Get("Retry-After") == "" {
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
	// A server that follows nothing answers as before.
	plain := newEnv(t, Config{}, nil)
	if w := plain.do(t, request{method: "GET", path: "/health"}); strings.TrimSpace(w.Body.String()) != `{"health":"GOOD","status":"ok"}` {
		t.Errorf("/health of a server that follows nothing: %s", w.Body)
	}
}
