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

// authenticate resolves the Authorization header of every /api/ request
// before routing and validation (decisions §1: 401, then 403, then
// 400/404/415, then the handler) and stores the principal in the request's
// context. The domain decides: Service.AuthenticateAdmin answers
// ErrAuthenticationRequired (401) or, for client and frontend tokens,
// ErrNoAccess (403).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isAPIPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		p, err := s.svc.AuthenticateAdmin(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
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
