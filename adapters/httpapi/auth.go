package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/flagadmin/flagadmin/flagadmin"
)

type principalKey struct{}

// isAPIPath reports whether path is under /api/, where every request must
// authenticate.
func isAPIPath(path string) bool {
	return path == "/api" || strings.HasPrefix(path, "/api/")
}

// authenticate resolves the Authorization header (or the browser session,
// see SessionAuthenticator) of every /api/ request before routing and
// validation (401, then 403, then 400/404/415, then the handler) and
// stores the principal in the request's context. The domain decides:
// Service.AuthenticateAdmin answers ErrAuthenticationRequired (401) or,
// for client and frontend tokens,
// ErrNoAccess (403).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isAPIPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if s.answerNotLoaded(w) {
			return
		}
		p, err := s.authenticateRequest(r.Context(), r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// SessionAuthenticator authenticates browser sessions: those of the
// system a server stands in front of (--upstream), such as
// gateway.Sessions for Unleash's session cookie.
type SessionAuthenticator interface {
	// AuthenticateSession returns the principal of r's session. ok is
	// false when r carries no session: the request then has no
	// credentials. A session the system refuses is an error of kind
	// flagadmin.ErrAuthenticationRequired; one that could not be checked,
	// of kind upstream.ErrBadGateway or ErrGatewayTimeout.
	AuthenticateSession(ctx context.Context, r *http.Request) (p flagadmin.Principal, ok bool, err error)
}

// authenticateRequest resolves r's credentials: its Authorization header,
// or, without one, its browser session when Config.Sessions is set.
func (s *Server) authenticateRequest(ctx context.Context, r *http.Request) (flagadmin.Principal, error) {
	authorization := r.Header.Get("Authorization")
	if s.sessions != nil && strings.TrimSpace(authorization) == "" {
		if p, ok, err := s.sessions.AuthenticateSession(ctx, r); ok || err != nil {
			return p, err
		}
	}
	return s.svc.AuthenticateAdmin(ctx, authorization)
}

// principal returns the caller the middleware authenticated. Without one
// (the API served without Handler's middleware) it fails closed with a 401.
func principal(ctx context.Context) (flagadmin.Principal, error) {
	p, ok := ctx.Value(principalKey{}).(flagadmin.Principal)
	if !ok {
		return flagadmin.Principal{}, newAPIError(http.StatusUnauthorized, nameAuthentication,
			"You must send the Authorization header with an API token.")
	}
	return p, nil
}
