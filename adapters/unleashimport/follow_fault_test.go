package unleashimport_test

import (
	"context"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
	"github.com/flagadmin/flagadmin/internal/faultproxy"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// viaProxy returns a proxy in front of the database of rawURL and the URL
// that reaches the database through it.
func viaProxy(t *testing.T, rawURL string) (*faultproxy.Proxy, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	via := *u
	via.Host = proxy.Addr()
	return proxy, via.String()
}

// TestFollowSourceFaults puts the source behind a proxy that cuts it
// (stopped, unreachable) or stalls it (frozen): serving goes on from the
// copy, the log has one line when the outage starts and one when it ends
// (not one per attempt), and following resumes by itself, missing nothing
// written meanwhile.
func TestFollowSourceFaults(t *testing.T) {
	for _, mode := range []struct {
		name string
		mode faultproxy.Mode
	}{{"stopped", faultproxy.Cut}, {"frozen", faultproxy.Stall}} {
		t.Run(mode.name, func(t *testing.T) {
			src := unleashfixture.Restore(t)
			proxy, via := viaProxy(t, src)
			store := memstore.New()
			buf := &syncbuffer.Buffer{}
			opts := fastFollow(slog.New(slog.NewTextHandler(buf, nil)))
			opts.ReadTimeout = 500 * time.Millisecond
			r := startFollower(t, via, store, opts)
			caughtUp(t, r, fixtureEvents)
			// The outage's lines are those logged from here on: on a
			// loaded machine the first import may already have paused
			// once on the short ReadTimeout, before the outage.
			before := len(buf.String())
			proxy.Set(mode.mode)
			u := connect(t, src) // Unleash goes on writing meanwhile
			var want []int64
			for range 3 {
				want = append(want, u.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`))
			}
			waitFor(t, 5*time.Second, "paused", func() bool { return r.Status().State == follow.Paused })
			errsAtPause := r.Status().Errors
			waitFor(t, 5*time.Second, "several failed attempts", func() bool { return r.Status().Errors >= errsAtPause+3 })
			// Serving goes on from the copy.
			page, err := flagadmin.NewService(store).SearchEvents(context.Background(), flagadmin.System, flagadmin.EventSearchParams{Limit: "1"})
			if err != nil || page.Total != fixtureEvents {
				t.Errorf("search during the outage: total %d, %v; want %d", page.Total, err, fixtureEvents)
			}
			if st := r.Status(); !strings.Contains(st.Reason, "Unleash database") || st.Position != fixtureEvents {
				t.Errorf("status during the outage: %+v", st)
			}
			proxy.Set(faultproxy.Pass)
			caughtUp(t, r, want[2])
			if got := storeIDs(t, store, fixtureEvents); !slices.Equal(got, want) {
				t.Errorf("events after the outage: got %v, want %v", got, want)
			}
			log := buf.String()[before:]
			if n := strings.Count(log, "following paused"); n != 1 {
				t.Errorf("got %d 'following paused' lines, want 1 for the outage:\n%s", n, log)
			}
			if n := strings.Count(log, "following resumed"); n != 1 {
				t.Errorf("got %d 'following resumed' lines, want 1:\n%s", n, log)
			}
			t.Logf("log of the outage:\n%s", grepLines(log, "following"))
		})
	}
}

// TestFollowStartsWithTheSourceUnreachable: a store that follows resumes
// serving at once even when the source cannot be reached at start, and
// follows once it can.
func TestFollowStartsWithTheSourceUnreachable(t *testing.T) {
	src := unleashfixture.Restore(t)
	proxy, via := viaProxy(t, src)
	store := memstore.New()
	first := startFollower(t, via, store, unleashimport.FollowOptions{})
	caughtUp(t, first, fixtureEvents)
	first.stop()
	proxy.Set(faultproxy.Cut)
	r := startFollower(t, via, store, unleashimport.FollowOptions{})
	waitFor(t, 5*time.Second, "paused", func() bool { return r.Status().State == follow.Paused })
	if st := r.Status(); !st.Ready || st.Position != fixtureEvents {
		t.Errorf("status while the source is unreachable: %+v", st)
	}
	id := connect(t, src).event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`)
	proxy.Set(faultproxy.Pass)
	caughtUp(t, r, id)
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
