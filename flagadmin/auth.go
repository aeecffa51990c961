package flagadmin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Actor ids recorded as createdByUserId (Unleash's conventions).
const (
	AdminTokenUserID int64 = -42
	SystemUserID     int64 = -1337
)

// PrincipalKind says what authenticated a request.
type PrincipalKind int

// Principal kinds.
const (
	// PrincipalAdminToken: an admin API token; acts as a root admin.
	PrincipalAdminToken PrincipalKind = iota + 1
	// PrincipalUser: a personal access or service account token acting as User.
	PrincipalUser
	// PrincipalClientToken: a client or frontend token; valid, but not for the admin API.
	PrincipalClientToken
	// PrincipalSystem: the embedding program itself; acts as a root admin.
	PrincipalSystem
)

// Principal is the authenticated caller of an operation.
type Principal struct {
	Kind PrincipalKind
	// Name is the token's name for token principals.
	Name string
	// User is the acting account of a PrincipalUser.
	User *User
}

// System is the principal of the embedding program: a root admin recorded as
// createdBy "system", createdByUserId -1337. Use it to build a world.
var System = Principal{Kind: PrincipalSystem, Name: "system"}

// AdminToken returns the principal of an admin API token named name.
func AdminToken(name string) Principal { return Principal{Kind: PrincipalAdminToken, Name: name} }

// AsUser returns the principal of a token acting as u.
func AsUser(u User) Principal { return Principal{Kind: PrincipalUser, User: &u} }

// Actor returns what events caused by p record as createdBy and createdByUserId.
func (p Principal) Actor() (string, *int64) {
	switch p.Kind {
	case PrincipalUser:
		id := p.User.ID
		return p.User.DisplayName(), &id
	case PrincipalSystem:
		id := SystemUserID
		return p.Name, &id
	default:
		id := AdminTokenUserID
		name := p.Name
		if name == "" {
			name = "admin"
		}
		return name, &id
	}
}

// userID returns the acting user's id, or nil for token and system principals.
func (p Principal) userID() *int64 {
	if p.Kind == PrincipalUser && p.User != nil {
		id := p.User.ID
		return &id
	}
	return nil
}

// HashSecret returns the hash under which a token's secret (the full
// Authorization value) is stored: hex SHA-256.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// TokenShape returns the token type a secret's shape announces:
// "*:*.<s>" admin, "user:<s>" user, "<project>:<env>.<s>" client or
// frontend (TokenClient stands for both). ok is false for any other shape.
func TokenShape(secret string) (t TokenType, ok bool) {
	switch {
	case strings.HasPrefix(secret, "*:*.") && len(secret) > len("*:*."):
		return TokenAdmin, true
	case strings.HasPrefix(secret, "user:") && len(secret) > len("user:"):
		return TokenUser, true
	}
	scope, s, found := strings.Cut(secret, ".")
	if !found || s == "" {
		return "", false
	}
	project, env, found := strings.Cut(scope, ":")
	if !found || project == "" || env == "" {
		return "", false
	}
	return TokenClient, true
}

// authorizationSecret strips a leading "Bearer " (any case, any white space).
func authorizationSecret(header string) string {
	s := strings.TrimSpace(header)
	if len(s) > 6 && strings.EqualFold(s[:6], "bearer") && (s[6] == ' ' || s[6] == '\t') {
		s = strings.TrimSpace(s[6:])
	}
	return s
}

// Authenticate resolves an Authorization header value to a principal. A
// missing value, an unknown secret, an expired token or a token whose account
// was deleted gives ErrAuthenticationRequired. Client and frontend tokens
// authenticate as PrincipalClientToken, which every admin operation refuses
// with ErrNoAccess.
func (s *Service) Authenticate(ctx context.Context, authorization string) (Principal, error) {
	secret := authorizationSecret(authorization)
	if secret == "" {
		return Principal{}, authRequired("You must send the Authorization header with an API token.")
	}
	shape, ok := TokenShape(secret)
	if !ok {
		return Principal{}, authRequired(msgTokenInvalid)
	}
	tok, user, err := s.storedToken(ctx, secret)
	if err != nil {
		return Principal{}, err
	}
	if tok.ExpiresAt != nil && !s.now().Before(*tok.ExpiresAt) {
		return Principal{}, authRequired("The API token has expired.")
	}
	return tokenPrincipal(tok, user, shape)
}

// msgTokenInvalid is the answer to a secret that is no token's: one
// message whatever the reason, so it tells nothing of the tokens stored.
const msgTokenInvalid = "The API token is not valid."

// storedToken finds the token whose secret is secret, and its account
// when it is a user's: ErrAuthenticationRequired when no token has it.
func (s *Service) storedToken(ctx context.Context, secret string) (APIToken, *User, error) {
	hash := HashSecret(secret)
	tok, user, err := s.store.LookupToken(ctx, hash)
	if errors.Is(err, ErrNotFound) {
		return APIToken{}, nil, authRequired(msgTokenInvalid)
	}
	if err != nil {
		return APIToken{}, nil, err
	}
	if subtle.ConstantTimeCompare([]byte(tok.SecretHash), []byte(hash)) != 1 {
		return APIToken{}, nil, authRequired(msgTokenInvalid)
	}
	return tok, user, nil
}

// tokenPrincipal is who a stored token authenticates as, when its secret
// has the shape of its type: an admin token, the user account a user
// token belongs to (refused once the account is deleted), or a client or
// frontend token.
func tokenPrincipal(tok APIToken, user *User, shape TokenType) (Principal, error) {
	switch {
	case tok.Type == TokenAdmin && shape == TokenAdmin:
		return AdminToken(tok.Name), nil
	case tok.Type == TokenUser && shape == TokenUser:
		if user == nil {
			return Principal{}, authRequired("The API token's account no longer exists.")
		}
		return AsUser(*user), nil
	case (tok.Type == TokenClient || tok.Type == TokenFrontend) && shape == TokenClient:
		return Principal{Kind: PrincipalClientToken, Name: tok.Name}, nil
	}
	return Principal{}, authRequired(msgTokenInvalid)
}

// AuthenticateAdmin is Authenticate for a transport of the admin API: it
// also refuses, with ErrNoAccess, principals that can never use the admin
// API (client and frontend tokens), so a transport can answer 401 then 403
// before it validates anything else.
func (s *Service) AuthenticateAdmin(ctx context.Context, authorization string) (Principal, error) {
	p, err := s.Authenticate(ctx, authorization)
	if err != nil {
		return Principal{}, err
	}
	if err := s.authorize(ctx, p, adminAPI); err != nil {
		return Principal{}, err
	}
	return p, nil
}

// newSecret returns a fresh secret of type t, formatted as clients send it.
func newSecret(r io.Reader, t TokenType, project, env string) (string, error) {
	var b [24]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("generate token secret: %w", err)
	}
	s := hex.EncodeToString(b[:])
	switch t {
	case TokenAdmin:
		return "*:*." + s, nil
	case TokenUser:
		return "user:" + s, nil
	default:
		return project + ":" + env + "." + s, nil
	}
}

var defaultRandom io.Reader = rand.Reader
