package flagadmin

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// The operations in this file list accounts and tokens and revoke tokens,
// for a deployer's tools (the flagadmin command). Each needs the ADMIN
// permission (use System from the embedding program).

// TokenIDLength is the length of a token's ID (APIToken.ID).
const TokenIDLength = 12

// ID names the token without revealing its secret: the first
// TokenIDLength hex digits of its hash. Listings show it and
// RevokeAPIToken accepts it.
func (t APIToken) ID() string {
	if len(t.SecretHash) < TokenIDLength {
		return t.SecretHash
	}
	return t.SecretHash[:TokenIDLength]
}

// ListUsers returns every user and service account, id ascending.
func (s *Service) ListUsers(ctx context.Context, p Principal) ([]User, error) {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return nil, err
	}
	return s.store.Users(ctx)
}

// ListAPITokens returns every token, oldest first. Tokens carry no
// secret: the store keeps only hashes.
func (s *Service) ListAPITokens(ctx context.Context, p Principal) ([]APIToken, error) {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return nil, err
	}
	return s.store.Tokens(ctx)
}

// RevokeAPIToken deletes a token, named by its ID (APIToken.ID; a longer
// prefix of its hash, in any case, works too) or by its full secret, and
// records api-token-deleted, or pat-deleted for a personal or service
// account token, with the token (never its secret) as preData, in the
// same transaction. The token stops working at once. An unknown token is
// ErrNotFound; a ref that is neither an ID nor a secret, or an ID prefix
// shared by several tokens, is ErrValidation.
func (s *Service) RevokeAPIToken(ctx context.Context, p Principal, ref string) (APIToken, error) {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return APIToken{}, err
	}
	if err := CheckText("token", ref); err != nil {
		return APIToken{}, err
	}
	hash, err := s.tokenHash(ctx, ref)
	if err != nil {
		return APIToken{}, err
	}
	by, byID := p.Actor()
	var revoked APIToken
	err = s.store.DeleteToken(ctx, hash, func(t APIToken) (Event, error) {
		revoked = t
		e := Event{CreatedAt: s.now(), CreatedBy: by, CreatedByUserID: byID}
		pre := map[string]any{"tokenName": t.Name, "type": t.Type}
		switch t.Type {
		case TokenUser:
			e.Type, pre = EventPATDeleted, map[string]any{"description": t.Name, "userId": t.UserID}
		case TokenClient, TokenFrontend:
			e.Type, pre["project"], pre["environment"] = EventAPITokenDeleted, t.Project, t.Environment
			if t.Project != "*" {
				e.Project = &t.Project
			}
			if t.Environment != "*" {
				e.Environment = &t.Environment
			}
		default:
			e.Type = EventAPITokenDeleted
		}
		if t.ExpiresAt != nil {
			pre["expiresAt"] = t.ExpiresAt.UTC().Format(time.RFC3339)
		}
		raw, err := json.Marshal(pre)
		e.PreData = raw
		return e, err
	})
	if isKind(err, ErrNotFound) {
		return APIToken{}, notFound("Token %s does not exist.", QuoteInput(ref))
	}
	return revoked, err
}

// tokenHash returns the hash of the token ref names: a secret's hash, or
// the one hash that starts with an ID.
func (s *Service) tokenHash(ctx context.Context, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if _, ok := TokenShape(ref); ok {
		return HashSecret(ref), nil
	}
	id := strings.ToLower(ref)
	if len(id) < TokenIDLength || len(id) > 64 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", invalid("token", "must be a token id (the %d hex digits flagadmin token list shows) or a token's secret", TokenIDLength)
	}
	tokens, err := s.store.Tokens(ctx)
	if err != nil {
		return "", err
	}
	var found []string
	for _, t := range tokens {
		if strings.HasPrefix(t.SecretHash, id) {
			found = append(found, t.SecretHash)
		}
	}
	switch len(found) {
	case 0:
		return "", notFound("Token %s does not exist.", QuoteInput(ref))
	case 1:
		return found[0], nil
	}
	return "", invalid("token", "the id %s names %d tokens; give more of it", QuoteInput(ref), len(found))
}
