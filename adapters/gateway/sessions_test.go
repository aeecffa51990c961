package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/upstream"
)

// fakeUnleash answers GET /api/admin/user as Unleash 8 does, for the
// sessions it knows; others get 401 as from Unleash.
type fakeUnleash struct {
	*httptest.Server
	calls   atomic.Int32
	mu      sync.Mutex
	answers map[string]string // session cookie value -> meSchema body
	block   chan struct{}     // when not nil, answers wait for it
}

func newFakeUnleash(t *testing.T) *fakeUnleash {
	t.Helper()
	u := &fakeUnleash{answers: map[string]string{
		"admin-session": `{"user":{"id":1,"name":"Ada","email":"ada@example.com","rootRole":1,"accountType":"User","isAPI":false},
			"permissions":[{"permission":"ADMIN"}],"feedback":[],"splash":{}}`,
		"editor-session": `{"user":{"id":2,"name":"Eve","email":"eve@example.com","username":"eve","rootRole":2},
			"permissions":[{"permission":"CREATE_PROJECT"},{"permission":"UPDATE_FEATURE","project":"default"}],"feedback":[],"splash":{}}`,
		"viewer-session": `{"user":{"id":3,"name":"Vic","rootRole":3},"permissions":[],"feedback":[],"splash":{}}`,
		"custom-role":    `{"user":{"id":4,"name":"Cus","rootRole":7},"permissions":[{"permission":"ADMIN","project":"p"}],"feedback":[],"splash":{}}`,
		"broken":         `{"user":{"name":"no id"}}`,
	}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		block := u.block
		u.mu.Unlock()
		u.calls.Add(1)
		if block != nil {
			<-block
		}
		if r.Method != http.MethodGet || r.URL.Path != "/api/admin/user" {
			http.NotFound(w, r)
			return
		}
		c, err := r.Cookie(DefaultSessionCookie)
		u.mu.Lock()
		body, ok := u.answers[cookieValue(c, err)]
		u.mu.Unlock()
		switch {
		case cookieValue(c, err) == "redirect":
			http.Redirect(w, r, "/login", http.StatusFound)
		case cookieValue(c, err) == "crash":
			w.WriteHeader(http.StatusInternalServerError)
		case !ok:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"name":"AuthenticationRequired","message":"You must log in to use Unleash."}`)
		default:
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprint(w, body)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func cookieValue(c *http.Cookie, err error) string {
	if err != nil {
		return ""
	}
	return c.Value
}

// logout forgets a session, as Unleash does at sign-out.
func (u *fakeUnleash) logout(session string) {
	u.mu.Lock()
	delete(u.answers, session)
	u.mu.Unlock()
}

func newTestSessions(t *testing.T, upstreamURL string, ttl time.Duration) *Sessions {
	t.Helper()
	u, _ := url.Parse(upstreamURL)
	s, err := NewSessions(SessionsConfig{Upstream: u, TTL: ttl, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sessionRequest(cookie string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/admin/search/events", nil)
	if cookie != "" {
		r.AddCookie(&http.Cookie{Name: DefaultSessionCookie, Value: cookie})
	}
	return r
}

// TestSessionPrincipals: a session is the user Unleash says, with the
// root role its answer gives (ADMIN permission or root role 1: Admin; 2:
// Editor; else Viewer); a request without the cookie has no session.
func TestSessionPrincipals(t *testing.T) {
	up := newFakeUnleash(t)
	s := newTestSessions(t, up.URL, SessionTTL)
	for _, tc := range []struct {
		cookie string
		want   flagadmin.User
	}{
		{"admin-session", flagadmin.User{ID: 1, Name: "Ada", Email: "ada@example.com", RootRole: flagadmin.RoleAdmin}},
		{"editor-session", flagadmin.User{ID: 2, Name: "Eve", Email: "eve@example.com", Username: "eve", RootRole: flagadmin.RoleEditor}},
		{"viewer-session", flagadmin.User{ID: 3, Name: "Vic", RootRole: flagadmin.RoleViewer}},
		{"custom-role", flagadmin.User{ID: 4, Name: "Cus", RootRole: flagadmin.RoleViewer}}, // ADMIN in one project is not root admin
	} {
		p, ok, err := s.AuthenticateSession(context.Background(), sessionRequest(tc.cookie))
		if err != nil || !ok || p.Kind != flagadmin.PrincipalUser || p.User == nil || *p.User != tc.want {
			t.Errorf("%s: %+v %v %v; want user %+v", tc.cookie, p.User, ok, err, tc.want)
		}
	}
	if _, ok, err := s.AuthenticateSession(context.Background(), sessionRequest("")); ok || err != nil {
		t.Errorf("no cookie: ok %v, %v; want no session", ok, err)
	}
}

// TestSessionRefused: a session Unleash refuses (401, a redirect to sign
// in) is ErrAuthenticationRequired; an Unleash that fails or cannot be
// reached is ErrBadGateway, never a 401.
func TestSessionRefused(t *testing.T) {
	up := newFakeUnleash(t)
	s := newTestSessions(t, up.URL, SessionTTL)
	for _, cookie := range []string{"signed-out", "redirect"} {
		_, ok, err := s.AuthenticateSession(context.Background(), sessionRequest(cookie))
		if !ok || !errors.Is(err, flagadmin.ErrAuthenticationRequired) {
			t.Errorf("%s: ok %v, %v; want ErrAuthenticationRequired", cookie, ok, err)
		}
	}
	for _, cookie := range []string{"crash", "broken"} {
		if _, _, err := s.AuthenticateSession(context.Background(), sessionRequest(cookie)); !errors.Is(err, upstream.ErrBadGateway) {
			t.Errorf("%s: %v; want ErrBadGateway", cookie, err)
		}
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String()
	ln.Close()
	down := newTestSessions(t, closed, SessionTTL)
	if _, _, err := down.AuthenticateSession(context.Background(), sessionRequest("admin-session")); !errors.Is(err, upstream.ErrBadGateway) {
		t.Errorf("Unleash down: %v; want ErrBadGateway", err)
	}
}

// TestSessionCachedAtMostTTL: answers, refusals too, are kept for the
// TTL, then asked again, so a sign-out in Unleash ends the session at
// flagadmin within the TTL; concurrent requests of one session ask once.
func TestSessionCachedAtMostTTL(t *testing.T) {
	up := newFakeUnleash(t)
	const ttl = 300 * time.Millisecond
	s := newTestSessions(t, up.URL, ttl)
	ctx := context.Background()
	if _, _, err := s.AuthenticateSession(ctx, sessionRequest("viewer-session")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AuthenticateSession(ctx, sessionRequest("viewer-session")); err != nil || up.calls.Load() != 1 {
		t.Fatalf("second request within the TTL: %v, %d calls to Unleash; want 1", err, up.calls.Load())
	}
	up.logout("viewer-session")
	signedOut := time.Now()
	for {
		_, _, err := s.AuthenticateSession(ctx, sessionRequest("viewer-session"))
		if errors.Is(err, flagadmin.ErrAuthenticationRequired) {
			break
		}
		if time.Since(signedOut) > ttl+time.Second {
			t.Fatalf("the signed-out session was still accepted %v later (TTL %v)", time.Since(signedOut), ttl)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if elapsed := time.Since(signedOut); elapsed > ttl+200*time.Millisecond {
		t.Errorf("the sign-out took effect after %v, want within the TTL %v", elapsed, ttl)
	}

	block := make(chan struct{})
	up.mu.Lock()
	up.block = block
	up.mu.Unlock()
	before := up.calls.Load()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _, _, _ = s.AuthenticateSession(ctx, sessionRequest("admin-session")) })
	}
	for up.calls.Load() == before {
		time.Sleep(time.Millisecond)
	}
	close(block)
	wg.Wait()
	if n := up.calls.Load() - before; n != 1 {
		t.Errorf("8 concurrent requests of one session asked Unleash %d times, want 1", n)
	}

	if _, err := NewSessions(SessionsConfig{Upstream: &url.URL{Scheme: "http", Host: "x"}, TTL: 6 * time.Second}); err == nil {
		t.Errorf("a TTL over %v was accepted", SessionTTL)
	}
}

// TestSessionAnswerCutOff: an upstream that sends the headers of its
// answer and then stalls is a gateway timeout (504) once the check's bound
// has passed, not a "body that is not a user" (502).
func TestSessionAnswerCutOff(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, `{"user":{"id":1,`)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(release) })
	u, _ := url.Parse(up.URL)
	s, err := NewSessions(SessionsConfig{Upstream: u, TTL: SessionTTL, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.AuthenticateSession(context.Background(), sessionRequest("slow-session"))
	if !errors.Is(err, upstream.ErrTimeout) {
		t.Errorf("a session answer cut off by the bound: %v; want %v", err, upstream.ErrTimeout)
	}
}
