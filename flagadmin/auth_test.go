package flagadmin_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestTokenShape(t *testing.T) {
	tests := []struct {
		secret string
		want   flagadmin.TokenType // empty: not a token shape
	}{
		{"*:*.abc", flagadmin.TokenAdmin},
		{"*:*.a.b", flagadmin.TokenAdmin},
		{"user:abc", flagadmin.TokenUser},
		{"user:eve-secret", flagadmin.TokenUser},
		{"default:development.abc", flagadmin.TokenClient},
		{"*:development.abc", flagadmin.TokenClient},
		{"default:*.abc", flagadmin.TokenClient},
		{"p:e.s.t", flagadmin.TokenClient},

		{"", ""},
		{"abc", ""},
		{"*:*.", ""},
		{"*:*", ""},
		{"user:", ""},
		{"default:development.", ""},
		{"default:development", ""},
		{"default.abc", ""},
		{":development.abc", ""},
		{"default:.abc", ""},
		{".abc", ""},
	}
	for _, tt := range tests {
		t.Run(tt.secret, func(t *testing.T) {
			got, ok := flagadmin.TokenShape(tt.secret)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("TokenShape(%q) = %q, %v; want %q, %v", tt.secret, got, ok, tt.want, tt.want != "")
			}
		})
	}
}

func TestHashSecret(t *testing.T) {
	// SHA-256 of "abc" (FIPS 180-2, appendix B.1).
	if got, want := flagadmin.HashSecret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("HashSecret(abc) = %s, want %s", got, want)
	}
	a, b := flagadmin.HashSecret("*:*.admin-secret"), flagadmin.HashSecret("*:*.admin-secreT")
	if a == b {
		t.Error("different secrets have the same hash")
	}
	if a != flagadmin.HashSecret("*:*.admin-secret") {
		t.Error("HashSecret is not deterministic")
	}
	if len(a) != 64 {
		t.Errorf("hash %q has %d characters, want 64 hex digits", a, len(a))
	}
}

func TestAuthenticate(t *testing.T) {
	svc, _ := exampleService(t)
	ctx := context.Background()
	tests := []struct {
		header   string
		kind     flagadmin.PrincipalKind // 0: ErrAuthenticationRequired
		name     string
		userID   int64
		userMail string
	}{
		{header: "*:*.admin-secret", kind: flagadmin.PrincipalAdminToken, name: "admin"},
		{header: "Bearer *:*.admin-secret", kind: flagadmin.PrincipalAdminToken, name: "admin"},
		{header: "bearer *:*.admin-secret", kind: flagadmin.PrincipalAdminToken, name: "admin"},
		{header: "BEARER\t*:*.admin-secret", kind: flagadmin.PrincipalAdminToken, name: "admin"},
		{header: "  BeArEr \t  *:*.admin-secret \t", kind: flagadmin.PrincipalAdminToken, name: "admin"},
		{header: " *:*.admin-secret ", kind: flagadmin.PrincipalAdminToken, name: "admin"},
		{header: "user:eve-secret", kind: flagadmin.PrincipalUser, userID: 2, userMail: "eve@example.com"},
		{header: "Bearer user:eve-secret", kind: flagadmin.PrincipalUser, userID: 2, userMail: "eve@example.com"},
		{header: "user:ci-secret", kind: flagadmin.PrincipalUser, userID: 10},
		{header: "default:development.client-secret", kind: flagadmin.PrincipalClientToken, name: "sdk"},
		{header: "default:development.frontend-secret", kind: flagadmin.PrincipalClientToken, name: "web"},

		{header: ""},
		{header: "   "},
		{header: "Bearer"},
		{header: "Bearer "},
		{header: "Bearer\t"},
		{header: "Bearer Bearer *:*.admin-secret"},
		{header: "Bearer*:*.admin-secret"},
		{header: "Basic *:*.admin-secret"},
		{header: "*:*.ADMIN-SECRET"},
		{header: "*:*.admin-secret-2"},
		{header: "*:*.unknown"},
		{header: "user:unknown"},
		{header: "default:production.client-secret"},
		{header: "admin-secret"},
		{header: "*:*."},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.header), func(t *testing.T) {
			p, err := svc.Authenticate(ctx, tt.header)
			if tt.kind == 0 {
				wantKind(t, err, flagadmin.ErrAuthenticationRequired)
				if p != (flagadmin.Principal{}) {
					t.Errorf("got principal %+v with the error, want the zero Principal", p)
				}
				return
			}
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if p.Kind != tt.kind {
				t.Fatalf("kind = %v, want %v", p.Kind, tt.kind)
			}
			if tt.kind == flagadmin.PrincipalUser {
				if p.User == nil || p.User.ID != tt.userID {
					t.Fatalf("user = %+v, want id %d", p.User, tt.userID)
				}
				if tt.userMail != "" && p.User.Email != tt.userMail {
					t.Errorf("email = %q, want %q", p.User.Email, tt.userMail)
				}
				return
			}
			if p.Name != tt.name || p.User != nil {
				t.Errorf("principal = %+v, want name %q without user", p, tt.name)
			}
		})
	}
}

func TestAuthenticateServiceAccount(t *testing.T) {
	svc, _ := exampleService(t)
	p, err := svc.Authenticate(context.Background(), "user:ci-secret")
	if err != nil {
		t.Fatal(err)
	}
	if !p.User.IsService || p.User.RootRole != flagadmin.RoleEditor || p.User.Username != "ci-bot" {
		t.Errorf("user = %+v, want the Editor service account ci-bot", *p.User)
	}
}

func TestAuthenticateExpiry(t *testing.T) {
	expiry := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // of user:ci-secret in the example
	tests := []struct {
		now     time.Time
		expired bool
	}{
		{testNow, false},
		{expiry.Add(-time.Millisecond), false},
		{expiry, true},
		{expiry.Add(time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.now.Format(time.RFC3339Nano), func(t *testing.T) {
			svc, _ := exampleService(t, fixedClock(tt.now))
			_, err := svc.Authenticate(context.Background(), "user:ci-secret")
			if tt.expired {
				wantKind(t, err, flagadmin.ErrAuthenticationRequired)
			} else if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			// Tokens without expiresAt never expire.
			if _, err := svc.Authenticate(context.Background(), "user:eve-secret"); err != nil {
				t.Errorf("token without expiry: %v", err)
			}
		})
	}
}

func TestAuthenticateDeletedAccount(t *testing.T) {
	svc, _ := exampleService(t)
	ctx := context.Background()
	if _, err := svc.Authenticate(ctx, "user:ci-secret"); err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteServiceAccount(ctx, flagadmin.AdminToken("admin"), "10"); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Authenticate(ctx, "user:ci-secret")
	wantKind(t, err, flagadmin.ErrAuthenticationRequired)
}

// lookupStore is a store whose LookupToken answers from a function.
type lookupStore struct {
	flagadmin.Store
	lookup func(hash string) (flagadmin.APIToken, *flagadmin.User, error)
}

func (s lookupStore) LookupToken(_ context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	return s.lookup(hash)
}

func TestAuthenticateTokenOfMissingAccount(t *testing.T) {
	// A store that still has the token but no longer the account.
	store := lookupStore{Store: memstore.New(), lookup: func(hash string) (flagadmin.APIToken, *flagadmin.User, error) {
		return flagadmin.APIToken{SecretHash: hash, Type: flagadmin.TokenUser, UserID: ptr[int64](5), Name: "pat"}, nil, nil
	}}
	svc := flagadmin.NewService(store, fixedClock(testNow))
	_, err := svc.Authenticate(context.Background(), "user:orphan")
	wantKind(t, err, flagadmin.ErrAuthenticationRequired)
}

func TestAuthenticateTokenOfAnotherHash(t *testing.T) {
	// A store that answers a token whose hash is not the secret's (a
	// lookup that matched loosely): the secret is not that token's.
	store := lookupStore{Store: memstore.New(), lookup: func(hash string) (flagadmin.APIToken, *flagadmin.User, error) {
		return flagadmin.APIToken{SecretHash: flagadmin.HashSecret("*:*.another-secret"), Type: flagadmin.TokenAdmin, Name: "admin"}, nil, nil
	}}
	svc := flagadmin.NewService(store, fixedClock(testNow))
	p, err := svc.Authenticate(context.Background(), "*:*.admin-secret")
	wantKind(t, err, flagadmin.ErrAuthenticationRequired)
	if err == nil || err.Error() != "The API token is not valid." {
		t.Errorf("got principal %+v, error %v, want the error The API token is not valid.", p, err)
	}
}

func TestAuthenticateStoreFailure(t *testing.T) {
	store := lookupStore{Store: memstore.New(), lookup: func(string) (flagadmin.APIToken, *flagadmin.User, error) {
		return flagadmin.APIToken{}, nil, fmt.Errorf("dial: %w", flagadmin.ErrUnavailable)
	}}
	svc := flagadmin.NewService(store)
	_, err := svc.Authenticate(context.Background(), "*:*.admin-secret")
	wantKind(t, err, flagadmin.ErrUnavailable)
	if errors.Is(err, flagadmin.ErrAuthenticationRequired) {
		t.Errorf("a storage failure is reported as %v, want only ErrUnavailable", err)
	}
}

func TestAuthenticateShapeTypeMismatch(t *testing.T) {
	svc, store := exampleService(t)
	ctx := context.Background()
	// Tokens written directly to the store, whose type does not fit the
	// shape of their secret. A seed or CreateAPIToken refuses them.
	mismatched := []struct {
		secret string
		typ    flagadmin.TokenType
		userID *int64
	}{
		{"*:*.admin-shaped-client", flagadmin.TokenClient, nil},
		{"*:*.admin-shaped-frontend", flagadmin.TokenFrontend, nil},
		{"*:*.admin-shaped-user", flagadmin.TokenUser, ptr[int64](1)},
		{"user:user-shaped-admin", flagadmin.TokenAdmin, nil},
		{"user:user-shaped-client", flagadmin.TokenClient, nil},
		{"default:production.client-shaped-admin", flagadmin.TokenAdmin, nil},
		{"default:production.client-shaped-user", flagadmin.TokenUser, ptr[int64](1)},
	}
	b := &flagadmin.Batch{}
	for _, m := range mismatched {
		b.Tokens = append(b.Tokens, flagadmin.APIToken{SecretHash: flagadmin.HashSecret(m.secret), Name: "odd", Type: m.typ, UserID: m.userID, CreatedAt: testNow})
	}
	if err := store.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	for _, m := range mismatched {
		_, err := svc.Authenticate(ctx, m.secret)
		if !errors.Is(err, flagadmin.ErrAuthenticationRequired) {
			t.Errorf("%s token %q: got %v, want ErrAuthenticationRequired", m.typ, m.secret, err)
		}
	}
}

func TestClientTokensAreRefusedByAdminOperations(t *testing.T) {
	svc, _ := exampleService(t)
	ctx := context.Background()
	for _, secret := range []string{"default:development.client-secret", "default:development.frontend-secret"} {
		p, err := svc.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		ops := map[string]error{}
		_, ops["SearchEvents"] = svc.SearchEvents(ctx, p, flagadmin.EventSearchParams{})
		_, ops["DeprecatedSearchEvents"] = svc.DeprecatedSearchEvents(ctx, p, flagadmin.DeprecatedSearchRequest{})
		_, ops["ListProjects"] = svc.ListProjects(ctx, p, flagadmin.ProjectListOptions{})
		ops["CompleteLifecycle"] = svc.CompleteLifecycle(ctx, p, "default", "new-checkout", flagadmin.CompleteRequest{Status: "kept"})
		ops["DeleteServiceAccount"] = svc.DeleteServiceAccount(ctx, p, "10")
		for op, err := range ops {
			if !errors.Is(err, flagadmin.ErrNoAccess) {
				t.Errorf("%s with %s: got %v, want ErrNoAccess", op, secret, err)
			}
		}
	}
}

func TestPrincipalActor(t *testing.T) {
	tests := []struct {
		name   string
		p      flagadmin.Principal
		wantBy string
		wantID int64
	}{
		{"admin token", flagadmin.AdminToken("deploy-bot"), "deploy-bot", -42},
		{"admin token without name", flagadmin.AdminToken(""), "admin", -42},
		{"user with email", flagadmin.AsUser(flagadmin.User{ID: 1, Name: "Ada", Username: "ada", Email: "ada@example.com"}), "ada@example.com", 1},
		{"user with username", flagadmin.AsUser(flagadmin.User{ID: 2, Name: "Eve", Username: "eve"}), "eve", 2},
		{"user with a name only", flagadmin.AsUser(flagadmin.User{ID: 3, Name: "Vic"}), "Vic", 3},
		{"service account", flagadmin.AsUser(flagadmin.User{ID: 10, Name: "CI bot", Username: "ci-bot", IsService: true}), "ci-bot", 10},
		{"system", flagadmin.System, "system", -1337},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			by, id := tt.p.Actor()
			if by != tt.wantBy || id == nil || *id != tt.wantID {
				t.Errorf("Actor() = %q, %v; want %q, %d", by, id, tt.wantBy, tt.wantID)
			}
		})
	}
	if flagadmin.AdminTokenUserID != -42 || flagadmin.SystemUserID != -1337 {
		t.Errorf("actor ids = %d, %d; want -42, -1337", flagadmin.AdminTokenUserID, flagadmin.SystemUserID)
	}
}

func TestPrincipalIsRootAdmin(t *testing.T) {
	tests := []struct {
		name string
		p    flagadmin.Principal
		want bool
	}{
		{"admin token", flagadmin.AdminToken("admin"), true},
		{"system", flagadmin.System, true},
		{"root Admin user", flagadmin.AsUser(flagadmin.User{ID: 1, RootRole: flagadmin.RoleAdmin}), true},
		{"root Admin service account", flagadmin.AsUser(flagadmin.User{ID: 1, RootRole: flagadmin.RoleAdmin, IsService: true}), true},
		{"Editor", flagadmin.AsUser(flagadmin.User{ID: 2, RootRole: flagadmin.RoleEditor}), false},
		{"Viewer", flagadmin.AsUser(flagadmin.User{ID: 3, RootRole: flagadmin.RoleViewer}), false},
		{"client token", flagadmin.Principal{Kind: flagadmin.PrincipalClientToken, Name: "sdk"}, false},
		{"user principal without user", flagadmin.Principal{Kind: flagadmin.PrincipalUser}, false},
		{"zero principal", flagadmin.Principal{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.IsRootAdmin(); got != tt.want {
				t.Errorf("IsRootAdmin() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAsUserCopiesTheUser(t *testing.T) {
	u := flagadmin.User{ID: 1, Email: "a@example.com", RootRole: flagadmin.RoleViewer}
	p := flagadmin.AsUser(u)
	u.RootRole = flagadmin.RoleAdmin
	if p.IsRootAdmin() {
		t.Error("changing the user after AsUser changed the principal")
	}
}

func TestAuthenticateAdmin(t *testing.T) {
	svc, _ := exampleService(t)
	ctx := context.Background()
	tests := []struct {
		header string
		want   error // nil: accepted
	}{
		{"*:*.admin-secret", nil},
		{"Bearer user:eve-secret", nil},
		{"user:ci-secret", nil},
		{"default:development.client-secret", flagadmin.ErrNoAccess},
		{"default:development.frontend-secret", flagadmin.ErrNoAccess},
		{"", flagadmin.ErrAuthenticationRequired},
		{"*:*.wrong", flagadmin.ErrAuthenticationRequired},
		{"default:development.wrong", flagadmin.ErrAuthenticationRequired},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.header), func(t *testing.T) {
			p, err := svc.AuthenticateAdmin(ctx, tt.header)
			if tt.want == nil {
				if err != nil || (p.Kind != flagadmin.PrincipalAdminToken && p.Kind != flagadmin.PrincipalUser) {
					t.Fatalf("AuthenticateAdmin = %+v, %v; want an admin-API principal", p, err)
				}
				return
			}
			wantKind(t, err, tt.want)
			if p != (flagadmin.Principal{}) {
				t.Errorf("got principal %+v with the error", p)
			}
		})
	}
}
