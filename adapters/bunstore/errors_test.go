package bunstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// TestErrorsAreKindsWithoutDriverText checks the kinds of real database
// errors and that their messages carry no driver text or SQL.
func TestErrorsAreKindsWithoutDriverText(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		f := newFixture(t, s)
		cases := []struct {
			name string
			err  error
			kind error
		}{
			{"duplicate user id", s.Write(ctx, &flagadmin.Batch{Users: []flagadmin.User{{ID: f.account.ID, Name: "again", RootRole: flagadmin.RoleViewer}}}), flagadmin.ErrConflict},
			{"duplicate feature", s.Write(ctx, &flagadmin.Batch{Features: []flagadmin.Feature{{Name: "checkout", Project: "web", Type: flagadmin.TypeRelease, Lifecycle: flagadmin.Lifecycle{Stage: flagadmin.StageInitial}}}}), flagadmin.ErrConflict},
			{"feature of a missing project", s.Write(ctx, &flagadmin.Batch{Features: []flagadmin.Feature{{Name: "orphan", Project: "nope", Type: flagadmin.TypeRelease, Lifecycle: flagadmin.Lifecycle{Stage: flagadmin.StageInitial}}}}), flagadmin.ErrConflict},
			{"group member that is no user", s.Write(ctx, &flagadmin.Batch{Groups: []flagadmin.Group{{Name: "g", Users: []int64{999}}}}), flagadmin.ErrConflict},
			{"missing user", func() error { _, err := s.User(ctx, 999); return err }(), flagadmin.ErrNotFound},
			{"missing token", func() error { _, _, err := s.LookupToken(ctx, "nope"); return err }(), flagadmin.ErrNotFound},
		}
		for _, c := range cases {
			if !errors.Is(c.err, c.kind) {
				t.Errorf("%s: got %v, want %v", c.name, c.err, c.kind)
				continue
			}
			msg := strings.ToLower(c.err.Error())
			for _, leak := range []string{"insert", "select", "constraint", "duplicate", "foreign", "sqlstate", "error 1", "users", "features"} {
				if strings.Contains(msg, leak) {
					t.Errorf("%s: message %q contains driver text %q", c.name, c.err, leak)
				}
			}
		}
	})
}

// TestLostConnectionIsUnavailable opens a store through a TCP proxy, cuts
// the proxy, and expects ErrUnavailable without driver text.
func TestLostConnectionIsUnavailable(t *testing.T) {
	for _, e := range []struct {
		name string
		url  func(testing.TB) string
	}{{"Postgres", dbtest.Postgres}, {"MySQL", dbtest.MySQL}} {
		t.Run(e.name, func(t *testing.T) {
			u, err := url.Parse(e.url(t))
			must(t, "parse URL", err)
			p := startProxy(t, u.Host)
			u.Host = p.addr
			s := open(t, u.String())
			ctx := context.Background()
			newFixture(t, s)
			p.cut()
			_, err = s.SearchEvents(ctx, flagadmin.EventQuery{Limit: 10})
			if !errors.Is(err, flagadmin.ErrUnavailable) {
				t.Fatalf("SearchEvents after the connection is gone: got %v, want ErrUnavailable", err)
			}
			if got, want := err.Error(), "bunstore: search events: storage unavailable"; got != want {
				t.Errorf("message: got %q, want %q", got, want)
			}
			if err := s.Ping(ctx); !errors.Is(err, flagadmin.ErrUnavailable) {
				t.Errorf("Ping: got %v, want ErrUnavailable", err)
			}
		})
	}
}

// proxy forwards TCP connections to a server until cut.
type proxy struct {
	addr  string
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, "listen", err)
	p := &proxy{addr: ln.Addr().String(), ln: ln}
	t.Cleanup(p.cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

// cut closes the listener and every forwarded connection.
func (p *proxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
