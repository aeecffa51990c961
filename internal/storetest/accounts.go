package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// tokenNames returns the names of the stored tokens, in the store's order.
func (w *world) tokenNames(t *testing.T) []string {
	t.Helper()
	tokens, err := w.store.Tokens(w.ctx)
	wantNoError(t, "Store.Tokens", err)
	names := make([]string, len(tokens))
	for i, tok := range tokens {
		names[i] = tok.Name
	}
	return names
}

func accountCases() []testCase {
	return []testCase{
		{"accounts/an account and its token are written together", func(t *testing.T, w *world) {
			w.load(accounts())
			u, secret, tok, err := w.svc.CreateUserWithToken(w.ctx, w.as(adminSecret),
				flagadmin.User{Name: "Deploy bot 2", Username: "deploy-bot-2", IsService: true, RootRole: flagadmin.RoleEditor},
				flagadmin.NewAPIToken{Name: "deploy"})
			wantNoError(t, "CreateUserWithToken", err)
			if u.ID == 0 || tok.UserID == nil || *tok.UserID != u.ID || tok.Type != flagadmin.TokenUser {
				t.Fatalf("got account %+v and token %+v: want a user token of the new account", u, tok)
			}
			p, err := w.svc.Authenticate(w.ctx, secret)
			wantNoError(t, "Authenticate(the new token)", err)
			if p.User == nil || p.User.ID != u.ID {
				t.Errorf("the new token authenticates as %+v, want account %d", p.User, u.ID)
			}
			page, err := w.svc.SearchEvents(w.ctx, w.as(adminSecret), flagadmin.EventSearchParams{Limit: "2"})
			wantNoError(t, "SearchEvents", err)
			if len(page.Events) != 2 || page.Events[0].Type != flagadmin.EventPATCreated || page.Events[1].Type != flagadmin.EventServiceAccountCreated ||
				page.Events[1].ID+1 != page.Events[0].ID {
				t.Errorf("newest events: got %+v, want service-account-created then pat-created", page.Events)
			}
		}},
		{"accounts/Users lists users and service accounts by id", func(t *testing.T, w *world) {
			w.load(accounts())
			users, err := w.svc.ListUsers(w.ctx, w.as(adminSecret))
			wantNoError(t, "ListUsers", err)
			var ids []int64
			for _, u := range users {
				ids = append(ids, u.ID)
				if u.ID == ciID && (!u.IsService || u.Username != "ci-bot" || u.RootRole != flagadmin.RoleEditor) {
					t.Errorf("the CI bot: got %+v", u)
				}
			}
			want := []int64{adaID, eveID, vicID, gusID, maxID, nedID, ciID, deployID}
			slices.Sort(want)
			if !slices.Equal(ids, want) {
				t.Errorf("user ids: got %v, want %v", ids, want)
			}
			wantKind(t, "ListUsers as an Editor", func() error { _, err := w.svc.ListUsers(w.ctx, w.as(eveSecret)); return err }(), flagadmin.ErrNoAccess)
		}},
		{"accounts/Tokens lists every token without its secret", func(t *testing.T, w *world) {
			w.load(accounts())
			tokens, err := w.svc.ListAPITokens(w.ctx, w.as(adminSecret))
			wantNoError(t, "ListAPITokens", err)
			if len(tokens) != len(accounts().APITokens) {
				t.Fatalf("got %d tokens, want %d", len(tokens), len(accounts().APITokens))
			}
			for _, tok := range tokens {
				if tok.SecretHash == "" || len(tok.ID()) != flagadmin.TokenIDLength {
					t.Errorf("token %q: hash %q, id %q", tok.Name, tok.SecretHash, tok.ID())
				}
				if tok.Name == "ci spare" && (tok.UserID == nil || *tok.UserID != ciID || tok.ExpiresAt == nil) {
					t.Errorf("token ci spare: got %+v", tok)
				}
			}
		}},
		{"accounts/revoke a personal token by id records pat-deleted", func(t *testing.T, w *world) {
			w.load(accounts())
			id := flagadmin.HashSecret(ciSecret2)[:flagadmin.TokenIDLength]
			tok, err := w.svc.RevokeAPIToken(w.ctx, w.as(adminSecret), id)
			wantNoError(t, "RevokeAPIToken", err)
			if tok.Name != "ci spare" {
				t.Errorf("revoked %q, want ci spare", tok.Name)
			}
			w.wantAuth(t, ciSecret2, false)
			w.wantAuth(t, ciSecret, true)
			if slices.Contains(w.tokenNames(t), "ci spare") {
				t.Error("the revoked token is still listed")
			}
			events := w.eventsOfType(flagadmin.EventPATDeleted)
			if len(events) != 1 {
				t.Fatalf("got %d pat-deleted events, want 1", len(events))
			}
			var pre map[string]any
			if err := json.Unmarshal(events[0].PreData, &pre); err != nil || pre["description"] != "ci spare" || pre["userId"] != float64(ciID) {
				t.Errorf("pat-deleted preData: got %s (%v)", events[0].PreData, err)
			}
			if events[0].CreatedBy != adminTokenName || events[0].CreatedByUserID == nil || *events[0].CreatedByUserID != -42 {
				t.Errorf("pat-deleted by %q/%v, want the admin token", events[0].CreatedBy, events[0].CreatedByUserID)
			}
			wantKind(t, "RevokeAPIToken again", func() error { _, err := w.svc.RevokeAPIToken(w.ctx, w.as(adminSecret), id); return err }(), flagadmin.ErrNotFound)
			if n := len(w.eventsOfType(flagadmin.EventPATDeleted)); n != 1 {
				t.Errorf("after a second revoke: %d pat-deleted events, want 1", n)
			}
		}},
		{"accounts/revoke a client token by secret records api-token-deleted", func(t *testing.T, w *world) {
			w.load(accounts())
			_, err := w.svc.RevokeAPIToken(w.ctx, w.as(adminSecret), clientSecret)
			wantNoError(t, "RevokeAPIToken", err)
			events := w.eventsOfType(flagadmin.EventAPITokenDeleted)
			if len(events) != 1 {
				t.Fatalf("got %d api-token-deleted events, want 1", len(events))
			}
			e := events[0]
			var pre map[string]any
			if err := json.Unmarshal(e.PreData, &pre); err != nil || pre["tokenName"] != "sdk" || pre["type"] != "client" || pre["environment"] != "development" {
				t.Errorf("api-token-deleted preData: got %s (%v)", e.PreData, err)
			}
			if e.Project == nil || *e.Project != "default" || e.Environment == nil || *e.Environment != "development" {
				t.Errorf("api-token-deleted project/environment: got %v/%v, want default/development", e.Project, e.Environment)
			}
			_, _, err = w.store.LookupToken(w.ctx, flagadmin.HashSecret(clientSecret))
			wantKind(t, "LookupToken of the revoked token", err, flagadmin.ErrNotFound)
		}},
		{"accounts/revoke refuses bad refs and non-admins and writes nothing", func(t *testing.T, w *world) {
			w.load(accounts())
			before := w.tokenNames(t)
			for _, tc := range []struct {
				ref  string
				kind error
			}{
				{"0123456789ab", flagadmin.ErrNotFound},
				{"user:no-such-secret", flagadmin.ErrNotFound},
				{"abc", flagadmin.ErrValidation},
				{"not hex at all!", flagadmin.ErrValidation},
				{"", flagadmin.ErrValidation},
			} {
				_, err := w.svc.RevokeAPIToken(w.ctx, w.as(adminSecret), tc.ref)
				wantKind(t, "RevokeAPIToken("+tc.ref+")", err, tc.kind)
			}
			_, err := w.svc.RevokeAPIToken(w.ctx, w.as(eveSecret), eveSecret)
			wantKind(t, "RevokeAPIToken as an Editor", err, flagadmin.ErrNoAccess)
			if got := w.tokenNames(t); !slices.Equal(got, before) {
				t.Errorf("tokens changed: got %v, want %v", got, before)
			}
			if n := len(w.eventsOfType(flagadmin.EventAPITokenDeleted)) + len(w.eventsOfType(flagadmin.EventPATDeleted)); n != 0 {
				t.Errorf("%d deletion events recorded, want 0", n)
			}
		}},
		{"accounts/DeleteToken writes nothing when the callback fails", func(t *testing.T, w *world) {
			w.load(accounts())
			boom := errors.New("boom")
			err := w.store.DeleteToken(w.ctx, flagadmin.HashSecret(eveSecret), func(flagadmin.APIToken) (flagadmin.Event, error) { return flagadmin.Event{}, boom })
			if !errors.Is(err, boom) {
				t.Errorf("DeleteToken: got %v, want the callback's error", err)
			}
			w.wantAuth(t, eveSecret, true)
			err = w.store.DeleteToken(w.ctx, flagadmin.HashSecret("user:nobody"), func(flagadmin.APIToken) (flagadmin.Event, error) {
				t.Error("the callback ran for a missing token")
				return flagadmin.Event{}, nil
			})
			wantKind(t, "DeleteToken of a missing token", err, flagadmin.ErrNotFound)
		}},
		{"accounts/concurrent revokes of one token delete it once", func(t *testing.T, w *world) {
			w.load(accounts())
			p := w.as(adminSecret)
			errs := together(4, func(int) error { _, err := w.svc.RevokeAPIToken(w.ctx, p, eveSecret); return err })
			ok := 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, flagadmin.ErrNotFound):
					t.Errorf("a concurrent revoke: %v", err)
				}
			}
			if ok != 1 || len(w.eventsOfType(flagadmin.EventPATDeleted)) != 1 {
				t.Errorf("%d revokes succeeded and %d events were recorded, want 1 and 1", ok, len(w.eventsOfType(flagadmin.EventPATDeleted)))
			}
		}},
	}
}
