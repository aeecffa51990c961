package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func authCases() []testCase {
	cases := []testCase{
		{"auth/admin token acts as the admin token with its name", func(t *testing.T, w *world) {
			w.load(accounts())
			p := w.as(adminSecret)
			wantEqual(t, "kind", p.Kind, flagadmin.PrincipalAdminToken)
			wantEqual(t, "name", p.Name, adminTokenName)
			wantEqual(t, "root admin", p.IsRootAdmin(), true)
		}},
		{"auth/personal access token acts as its user", func(t *testing.T, w *world) {
			w.load(accounts())
			p := w.as(eveSecret)
			wantEqual(t, "kind", p.Kind, flagadmin.PrincipalUser)
			if p.User == nil {
				t.Fatal("got no user, want Eve")
			}
			wantEqual(t, "user", *p.User, flagadmin.User{ID: eveID, Name: "Eve Editor", Email: "eve@example.com", RootRole: flagadmin.RoleEditor})
		}},
		{"auth/service account token acts as the service account", func(t *testing.T, w *world) {
			w.load(accounts())
			p := w.as(ciSecret)
			if p.User == nil {
				t.Fatal("got no user, want the CI bot")
			}
			wantEqual(t, "user", *p.User, flagadmin.User{ID: ciID, Name: "CI bot", Username: "ci-bot", RootRole: flagadmin.RoleEditor, IsService: true})
		}},
		{"auth/Bearer prefix in any case is stripped", func(t *testing.T, w *world) {
			w.load(accounts())
			for _, h := range []string{"Bearer " + vicSecret, "bearer " + vicSecret, "BEARER   " + vicSecret, "Bearer\t" + vicSecret, "  bEaReR " + vicSecret + " "} {
				p, err := w.svc.Authenticate(w.ctx, h)
				if err != nil {
					t.Errorf("Authenticate(%q): got error %v, want Vic", h, err)
					continue
				}
				wantEqual(t, "user of "+h, p.User.ID, vicID)
			}
			p, err := w.svc.Authenticate(w.ctx, "Bearer "+adminSecret)
			wantNoError(t, "Authenticate(Bearer admin)", err)
			wantEqual(t, "kind", p.Kind, flagadmin.PrincipalAdminToken)
		}},
		{"auth/unknown tokens are refused", func(t *testing.T, w *world) {
			w.load(accounts())
			for _, h := range []string{"user:nope", "*:*.nope", "default:development.nope", "Bearer user:nope", strings.ToUpper(eveSecret), eveSecret + "x"} {
				_, err := w.svc.Authenticate(w.ctx, h)
				wantKind(t, "Authenticate("+h+")", err, flagadmin.ErrAuthenticationRequired)
			}
		}},
		{"auth/missing or malformed headers are refused", func(t *testing.T, w *world) {
			w.load(accounts())
			for _, h := range []string{"", "   ", "Bearer ", "garbage", "user:", "*:*.", "Basic YWRtaW46YWRtaW4="} {
				_, err := w.svc.Authenticate(w.ctx, h)
				wantKind(t, "Authenticate("+h+")", err, flagadmin.ErrAuthenticationRequired)
			}
		}},
		{"auth/expired token is refused", func(t *testing.T, w *world) {
			w.load(accounts())
			_, err := w.svc.Authenticate(w.ctx, eveExpired)
			wantKind(t, "Authenticate(expired)", err, flagadmin.ErrAuthenticationRequired)
			w.wantAuth(t, eveSecret, true)
		}},
		{"auth/token expiring in the future works", func(t *testing.T, w *world) {
			w.load(accounts())
			p := w.as(ciSecret2)
			wantEqual(t, "user", p.User.ID, ciID)
		}},
		{"auth/token expiring exactly now is refused", func(t *testing.T, w *world) {
			seed := accounts()
			now := suiteNow
			later := suiteNow.Add(time.Millisecond)
			seed.APITokens = append(seed.APITokens,
				flagadmin.SeedToken{Secret: "user:expires-now", UserID: i64(vicID), ExpiresAt: &now},
				flagadmin.SeedToken{Secret: "user:expires-soon", UserID: i64(vicID), ExpiresAt: &later},
			)
			w.load(seed)
			w.wantAuth(t, "user:expires-now", false)
			w.wantAuth(t, "user:expires-soon", true)
		}},
		{"auth/stored token keeps only a hash and reads back", func(t *testing.T, w *world) {
			w.load(accounts())
			tok, user, err := w.store.LookupToken(w.ctx, flagadmin.HashSecret(ciSecret2))
			wantNoError(t, "Store.LookupToken", err)
			wantEqual(t, "secretHash", tok.SecretHash, flagadmin.HashSecret(ciSecret2))
			wantEqual(t, "type", tok.Type, flagadmin.TokenUser)
			wantEqual(t, "name", tok.Name, "ci spare")
			wantEqual(t, "userId", fmtPtr(tok.UserID), "10")
			wantTime(t, "expiresAt", tok.ExpiresAt, atp("2030-01-01T00:00:00Z"))
			if user == nil || user.ID != ciID || !user.IsService {
				t.Errorf("user: got %+v, want the CI bot service account", user)
			}
			client, user, err := w.store.LookupToken(w.ctx, flagadmin.HashSecret(clientSecret))
			wantNoError(t, "Store.LookupToken(client)", err)
			wantEqual(t, "client type", client.Type, flagadmin.TokenClient)
			wantEqual(t, "client project", client.Project, "default")
			wantEqual(t, "client environment", client.Environment, "development")
			if user != nil {
				t.Errorf("client user: got %+v, want nil", user)
			}
			_, _, err = w.store.LookupToken(w.ctx, ciSecret2)
			wantKind(t, "Store.LookupToken by the clear secret", err, flagadmin.ErrNotFound)
		}},
	}
	for _, r := range []struct{ kind, secret string }{{"client", clientSecret}, {"frontend", frontendSecret}} {
		cases = append(cases, testCase{"auth/" + r.kind + " token is refused by every operation", func(t *testing.T, w *world) {
			seed := lifecycleFixture()
			w.load(seed)
			p := w.as(r.secret)
			wantEqual(t, "kind", p.Kind, flagadmin.PrincipalClientToken)
			_, err := w.svc.SearchEvents(w.ctx, p, params{})
			wantKind(t, "SearchEvents", err, flagadmin.ErrNoAccess)
			_, err = w.svc.SearchEvents(w.ctx, p, params{Limit: "0"})
			wantKind(t, "SearchEvents with a bad limit", err, flagadmin.ErrNoAccess)
			_, err = w.svc.DeprecatedSearchEvents(w.ctx, p, deprecatedReq{})
			wantKind(t, "DeprecatedSearchEvents", err, flagadmin.ErrNoAccess)
			_, err = w.svc.ListProjects(w.ctx, p, flagadmin.ProjectListOptions{})
			wantKind(t, "ListProjects", err, flagadmin.ErrNoAccess)
			wantKind(t, "CompleteLifecycle", w.svc.CompleteLifecycle(w.ctx, p, "default", "alpha", kept()), flagadmin.ErrNoAccess)
			wantKind(t, "CompleteLifecycle of a missing feature", w.svc.CompleteLifecycle(w.ctx, p, "nope", "nope", kept()), flagadmin.ErrNoAccess)
			wantKind(t, "DeleteServiceAccount", w.svc.DeleteServiceAccount(w.ctx, p, "10"), flagadmin.ErrNoAccess)
			w.wantLifecycle(t, "alpha", initial)
			w.wantAccount(t, ciID, true)
			if n := len(w.allEvents()); n != 0 {
				t.Errorf("got %d events, want none", n)
			}
		}})
	}
	cases = append(cases, testCase{"auth/tokens created by the service authenticate", func(t *testing.T, w *world) {
		seed := accounts()
		seed.Projects = []flagadmin.Project{{ID: "default"}} // a client token's project must exist
		w.load(seed)
		ctx, sys := w.ctx, flagadmin.System
		adminS, _, err := w.svc.CreateAPIToken(ctx, sys, flagadmin.NewAPIToken{Name: "robot", Type: flagadmin.TokenAdmin})
		wantNoError(t, "CreateAPIToken(admin)", err)
		patS, _, err := w.svc.CreateAPIToken(ctx, sys, flagadmin.NewAPIToken{Name: "vic desk", Type: flagadmin.TokenUser, UserID: i64(vicID)})
		wantNoError(t, "CreateAPIToken(user)", err)
		clientS, _, err := w.svc.CreateAPIToken(ctx, sys, flagadmin.NewAPIToken{Name: "sdk2", Type: flagadmin.TokenClient, Project: "default", Environment: "production"})
		wantNoError(t, "CreateAPIToken(client)", err)
		p := w.as(adminS)
		wantEqual(t, "admin kind", p.Kind, flagadmin.PrincipalAdminToken)
		wantEqual(t, "admin name", p.Name, "robot")
		wantEqual(t, "PAT user", w.as(patS).User.ID, vicID)
		wantEqual(t, "client kind", w.as(clientS).Kind, flagadmin.PrincipalClientToken)
		events := w.allEvents()
		if len(events) != 3 {
			t.Fatalf("got %d events, want 3 (one per token)", len(events))
		}
		for i, e := range events {
			for _, s := range []string{adminS, patS, clientS} {
				if strings.Contains(string(e.Data)+string(e.PreData), s) {
					t.Errorf("event %d (%s): got data with a token secret, want none", i, e.Type)
				}
			}
		}
		n, err := w.store.CountTokens(ctx, flagadmin.TokenAdmin)
		wantNoError(t, "Store.CountTokens", err)
		wantEqual(t, "admin tokens", n, 2)
	}})
	return cases
}
