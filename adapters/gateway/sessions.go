package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/upstream"
)

// Unleash's browser sessions.
//
// The web UI of Unleash authenticates with its session cookie, not an
// Authorization header. A request flagadmin serves itself with such a
// cookie is authenticated as the user Unleash takes the session for, with
// that user's root role (from Unleash) and project roles (from the copy),
// so it sees what the user's own tokens see (private projects, events
// without a project).
//
// Whom a session belongs to is asked of the upstream: GET
// /api/admin/user with the cookie answers the user and its permissions
// (6 to 9 ms on Unleash 8), and the answer is kept at most SessionTTL
// (5 s). The other way, reading Unleash's session table from the followed
// copy, was not taken: a session's validity is Unleash's own logic
// (express-session's signed cookie, which needs Unleash's secret to
// verify; expiry and its renewal; logout; password changes ending other
// sessions; an SSO provider's rules in Unleash Enterprise), which the
// copy would have to re-implement and keep in step with every Unleash
// release, and the table would reach the copy up to 5 s after a logout
// anyway. Asking the upstream gives exactly Unleash's decision, costs one
// small request per session per 5 s, and needs nothing of the follower.
// While the upstream cannot be reached, a session whose answer is kept
// keeps working (at most SessionTTL after it was asked); another gets
// 502, or 504 after DefaultSessionTimeout when the upstream hangs (not
// 401, which would sign the browser out): the answer flagadmin serves from
// its copy does not wait for the upstream's own timeout.

// DefaultSessionCookie is the name of Unleash's session cookie.
const DefaultSessionCookie = "unleash-session"

// SessionTTL is the longest a session's answer is kept: a session Unleash
// ends stops authenticating here within it.
const SessionTTL = 5 * time.Second

// DefaultSessionTimeout bounds one question about a session, its answer's
// body included: Unleash answers it in milliseconds (well under a second
// even on a loaded machine), and a request served from the copy should
// not wait for an upstream that hangs as long as a forwarded one does.
const DefaultSessionTimeout = 2 * time.Second

// Bounds of the session check.
const (
	// defaultSessionCacheSize bounds the sessions remembered at once.
	defaultSessionCacheSize = 10_000
	// maxUserAnswer bounds the upstream's answer about a session (a user
	// with roles in many projects has a long permission list).
	maxUserAnswer = 32 << 20
	// userPath is where Unleash tells whom a session belongs to.
	userPath = "api/admin/user"
)

// Unleash's ids of its predefined root roles.
const (
	unleashRoleAdmin  = 1
	unleashRoleEditor = 2
)

// SessionsConfig configures Sessions.
type SessionsConfig struct {
	// Upstream is the base URL of the upstream Unleash (as Config.Upstream).
	Upstream *url.URL
	// Transport carries the questions; nil means NewTransport(Timeout).
	Transport http.RoundTripper
	// Timeout bounds one question; 0 means DefaultSessionTimeout.
	Timeout time.Duration
	// Cookie is the name of the session cookie; "" means DefaultSessionCookie.
	Cookie string
	// TTL is how long an answer is kept, at most SessionTTL; 0 means SessionTTL.
	TTL time.Duration
	// Logger receives the causes of failed questions; nil discards them.
	Logger *slog.Logger
}

// Sessions authenticates Unleash's browser sessions by asking the
// upstream (see the comment above). It implements the admin API's
// session port (httpapi.SessionAuthenticator).
type Sessions struct {
	userURL *url.URL
	client  *http.Client
	cookie  string
	log     *slog.Logger
	cache   *expirable.LRU[[sha256.Size]byte, sessionAnswer]
	flight  singleflight.Group
}

// sessionAnswer is what the upstream said of one session: its principal,
// or that it refused it.
type sessionAnswer struct {
	principal flagadmin.Principal
	refused   bool
}

// NewSessions returns Sessions for cfg.
func NewSessions(cfg SessionsConfig) (*Sessions, error) {
	if err := checkUpstream(cfg.Upstream); err != nil {
		return nil, err
	}
	timeout := positive(cfg.Timeout, DefaultSessionTimeout)
	transport := cfg.Transport
	if transport == nil {
		transport = NewTransport(timeout)
	}
	ttl := positive(cfg.TTL, SessionTTL)
	if ttl > SessionTTL {
		return nil, fmt.Errorf("gateway: a session answer may be kept at most %v, not %v", SessionTTL, ttl)
	}
	s := &Sessions{
		userURL: cfg.Upstream.JoinPath(userPath),
		client: &http.Client{Transport: transport, Timeout: timeout,
			// An answer that redirects (to a login page) is a refusal, not a place to go.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		cookie: cfg.Cookie,
		log:    cfg.Logger,
		cache:  expirable.NewLRU[[sha256.Size]byte, sessionAnswer](defaultSessionCacheSize, nil, ttl),
	}
	if s.cookie == "" {
		s.cookie = DefaultSessionCookie
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// AuthenticateSession returns the principal of r's session cookie; ok is
// false when r has none. A session the upstream refuses is an error of
// kind flagadmin.ErrAuthenticationRequired; one it could not be asked
// about, of kind upstream.ErrBadGateway or ErrGatewayTimeout.
func (s *Sessions) AuthenticateSession(ctx context.Context, r *http.Request) (flagadmin.Principal, bool, error) {
	c, err := r.Cookie(s.cookie)
	if err != nil || c.Value == "" {
		return flagadmin.Principal{}, false, nil
	}
	key := sha256.Sum256([]byte(c.Value)) // the cache keeps no session id
	a, ok := s.cache.Get(key)
	if !ok {
		v, err, _ := s.flight.Do(string(key[:]), func() (any, error) {
			a, err := s.ask(context.WithoutCancel(ctx), c.Value)
			if err == nil {
				s.cache.Add(key, a)
			}
			return a, err
		})
		if err != nil {
			return flagadmin.Principal{}, true, err
		}
		a = v.(sessionAnswer)
	}
	if a.refused {
		return flagadmin.Principal{}, true, &sessionRefused{}
	}
	return a.principal, true, nil
}

// sessionRefused is the error of a session Unleash refuses.
type sessionRefused struct{}

func (*sessionRefused) Error() string {
	return "Your Unleash session is not valid (signed out or expired); sign in again."
}
func (*sessionRefused) Unwrap() error { return flagadmin.ErrAuthenticationRequired }

// meAnswer is the part of Unleash's GET /api/admin/user answer (its
// meSchema) that says who the user is and what they may do.
type meAnswer struct {
	User *struct {
		ID       *int64 `json:"id"`
		Name     string `json:"name"`
		Username string `json:"username"`
		Email    string `json:"email"`
		RootRole int    `json:"rootRole"`
	} `json:"user"`
	Permissions []struct {
		Permission string  `json:"permission"`
		Project    *string `json:"project"`
	} `json:"permissions"`
}

// unreachable is the error of a session check that got no answer: 504
// when the upstream did not answer (or finish answering) within the
// bound, else 502.
func (s *Sessions) unreachable(ctx context.Context, err error) error {
	s.log.WarnContext(ctx, "cannot check an Unleash session", slog.String("error", err.Error()))
	if isTimeout(err) {
		return fmt.Errorf("%w: checking a session with %s: %v", upstream.ErrTimeout, s.userURL.Host, err)
	}
	return fmt.Errorf("%w: checking a session with %s: %v", upstream.ErrBadGateway, s.userURL.Host, err)
}

// isTimeout reports whether err is a network timeout or a deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

// ask asks the upstream whom the session belongs to. Bounded by the
// client's timeout, not by the request that asked first (others may wait
// for the same answer).
func (s *Sessions) ask(ctx context.Context, session string) (sessionAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.userURL.String(), nil)
	if err != nil {
		return sessionAnswer{}, err
	}
	req.Header.Set("Accept", "application/json")
	req.AddCookie(&http.Cookie{Name: s.cookie, Value: session})
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return sessionAnswer{}, s.unreachable(ctx, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		return sessionAnswer{}, fmt.Errorf("%w: %s answered %d to a session check", upstream.ErrBadGateway, s.userURL.Host, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		// 401 (no or unknown session), or a redirect to sign in.
		s.log.DebugContext(ctx, "Unleash refused a session", slog.Int("status", resp.StatusCode), slog.Duration("duration", time.Since(start)))
		return sessionAnswer{refused: true}, nil
	}
	var me meAnswer
	err = json.NewDecoder(io.LimitReader(resp.Body, maxUserAnswer)).Decode(&me)
	if isTimeout(err) { // the answer's body did not arrive within the bound
		return sessionAnswer{}, s.unreachable(ctx, err)
	}
	if err != nil || me.User == nil || me.User.ID == nil {
		return sessionAnswer{}, fmt.Errorf("%w: %s answered a session check with a body that is not a user", upstream.ErrBadGateway, s.userURL.Host)
	}
	return sessionAnswer{principal: flagadmin.AsUser(flagadmin.User{
		ID: *me.User.ID, Name: me.User.Name, Username: me.User.Username, Email: me.User.Email, RootRole: me.rootRole(),
	})}, nil
}

// rootRole maps the user's Unleash root role to flagadmin's: Admin when
// Unleash gives the user the ADMIN permission (or its root role is
// Admin), Editor for Unleash's Editor, else Viewer (custom root roles of
// Unleash Enterprise included, as the importer maps them). Which private
// projects and project-less events the user sees then depends only on
// whether the user is a root admin.
func (me meAnswer) rootRole() flagadmin.RootRole {
	for _, p := range me.Permissions {
		if p.Permission == "ADMIN" && p.Project == nil {
			return flagadmin.RoleAdmin
		}
	}
	switch me.User.RootRole {
	case unleashRoleAdmin:
		return flagadmin.RoleAdmin
	case unleashRoleEditor:
		return flagadmin.RoleEditor
	}
	return flagadmin.RoleViewer
}
