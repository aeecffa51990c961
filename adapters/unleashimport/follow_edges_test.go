package unleashimport_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// logged returns fast options whose log goes to a buffer, and the buffer.
func logged(holder string) (unleashimport.FollowOptions, *syncbuffer.Buffer) {
	buf := &syncbuffer.Buffer{}
	opts := fastFollow(slog.New(slog.NewTextHandler(buf, nil)))
	opts.Holder = holder
	return opts, buf
}

// TestFollowAnUnleashWithNoEvents: a new Unleash, or one whose events were
// cleaned up, is imported ("events=0") and followed: an event written
// afterwards arrives.
func TestFollowAnUnleashWithNoEvents(t *testing.T) { forEachTarget(t, testFollowAnUnleashWithNoEvents) }

func testFollowAnUnleashWithNoEvents(t *testing.T, target followTarget) {
	src := unleashfixture.Restore(t)
	u := connect(t, src)
	if _, err := u.conn.Exec(context.Background(), `DELETE FROM events`); err != nil {
		t.Fatal(err)
	}
	store := target.open(t)
	opts, log := logged("")
	r := startFollower(t, src, store, opts)
	waitFor(t, 30*time.Second, "imported", func() bool { return r.Status().Ready })
	if !strings.Contains(log.String(), "events=0") {
		t.Errorf("the import's line does not say events=0:\n%s", grepLines(log.String(), "imported"))
	}
	id := u.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`)
	caughtUp(t, r, id)
	if got := storeIDs(t, store, 0); !slices.Equal(got, []int64{id}) {
		t.Errorf("events: got %v, want [%d]", got, id)
	}
	if st := r.Status(); st.Holes != id-1 {
		t.Errorf("holes: got %d, want %d (the deleted ids, never to come)", st.Holes, id-1)
	}
}

// TestFollowKeepsEventsAsFirstSeen: events deleted in the source, or
// changed there, after the copy took them stay in the copy as first seen,
// and following goes on, also after a restart that finds the newest
// copied events deleted.
func TestFollowKeepsEventsAsFirstSeen(t *testing.T) {
	ctx := context.Background()
	src := unleashfixture.Restore(t)
	u := connect(t, src)
	store := memstore.New()
	opts, log := logged("")
	r := startFollower(t, src, store, opts)
	first := u.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{"n":1}`)
	caughtUp(t, r, first)
	copied := func() map[int64]flagadmin.Event {
		out := map[int64]flagadmin.Event{}
		err := store.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error {
			out[e.ID] = e
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := copied()
	for _, stmt := range []string{
		`DELETE FROM events WHERE id IN (5, 6)`,
		`UPDATE events SET created_at = created_at - interval '10 years', data = '{"rewritten":true}' WHERE id IN (100, 2297)`,
	} {
		if _, err := u.conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	second := u.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{"n":2}`)
	caughtUp(t, r, second)
	// The newest copied events deleted, then a restart: the source handed
	// out ids up to the copy's position all the same (not an older backup).
	if _, err := u.conn.Exec(ctx, `DELETE FROM events WHERE id IN ($1, $2)`, first, second); err != nil {
		t.Fatal(err)
	}
	r.stop()
	opts, log2 := logged("")
	r = startFollower(t, src, store, opts)
	caughtUp(t, r, second) // connected to the source, nothing newer in it
	third := u.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{"n":3}`)
	caughtUp(t, r, third)
	after := copied()
	for id, e := range before {
		got, ok := after[id]
		if !ok || !got.CreatedAt.Equal(e.CreatedAt) || string(got.Data) != string(e.Data) {
			t.Errorf("event %d: got %+v (kept: %v), want it as first seen: %+v", id, got, ok, e)
		}
	}
	if _, ok := after[second]; !ok {
		t.Errorf("event %d, copied then deleted in the source, is not in the copy", second)
	}
	if len(after) != len(before)+2 {
		t.Errorf("the copy holds %d events, want %d", len(after), len(before)+2)
	}
	for _, l := range []string{log.String(), log2.String()} {
		if strings.Contains(l, "following stopped") {
			t.Errorf("following stopped:\n%s", grepLines(l, "stopped"))
		}
	}
}

// TestFollowStandbyLogsOnce: a server that starts while another applies
// logs once that it is standby (not at every renewal), and once that it
// applies when it takes over.
func TestFollowStandbyLogsOnce(t *testing.T) {
	src := unleashfixture.Restore(t)
	store := memstore.New()
	optsA, _ := logged("server-a")
	a := startFollower(t, src, store, optsA)
	caughtUp(t, a, fixtureEvents)
	optsB, logB := logged("server-b")
	b := startFollower(t, src, store, optsB)
	waitFor(t, 5*time.Second, "b on standby", func() bool { return b.Status().State == follow.Standby })
	id := connect(t, src).event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`)
	// b reads the position the holder records at its renewals: several
	// renewals later.
	waitFor(t, 10*time.Second, "b sees the new position", func() bool { return b.Status().Position >= id })
	const standbyLine = "following: another server applies the source's changes; this one serves the copy"
	// The lease's goroutine logs it, apart from the status.
	waitFor(t, 10*time.Second, "b's standby line", func() bool { return strings.Contains(logB.String(), standbyLine) })
	if n := strings.Count(logB.String(), standbyLine); n != 1 {
		t.Errorf("b logged %q %d times, want once:\n%s", standbyLine, n, logB)
	}
	if !strings.Contains(logB.String(), "applied_by=server-a") {
		t.Errorf("b's standby line does not name the server that applies:\n%s", logB)
	}
	a.stop() // releases the lease
	waitFor(t, 10*time.Second, "b applies", func() bool { return b.Status().Applying })
	if n := strings.Count(logB.String(), "following: this server applies"); n != 1 {
		t.Errorf("b logged that it applies %d times, want once:\n%s", n, logB)
	}
}

// oneWriter is a store with one writer, as SQLite is: while the first
// copy's transaction runs, the lease cannot be renewed (the attempt fails
// after waiting for the writer). Its copy goes on until the lease, had it
// not been kept, would have ended. The first renewal after the copy
// waits until the follower writes (or 300 ms): a follower that wrote
// before the renewal would write under the lease the copy let run out.
type oneWriter struct {
	followStore
	ttl     time.Duration
	copying atomic.Bool
	copied  atomic.Bool
	late    atomic.Bool   // the first renewal after the copy was held back
	wrote   chan struct{} // a write after the copy
	mu      sync.Mutex
	refused int // renewals that failed while the copy ran
}

func (s *oneWriter) AcquireFollowLease(ctx context.Context, holder string, now, until time.Time) (follow.State, bool, error) {
	if s.copying.Load() {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		return follow.State{}, false, errors.New("database is locked")
	}
	if s.copied.Load() && !s.late.Swap(true) {
		select {
		case <-s.wrote:
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return s.followStore.AcquireFollowLease(ctx, holder, now, until)
}

func (s *oneWriter) ApplyFollow(ctx context.Context, holder string, now time.Time, b *follow.Batch) error {
	if s.copied.Load() {
		select {
		case s.wrote <- struct{}{}:
		default:
		}
	}
	return s.followStore.ApplyFollow(ctx, holder, now, b)
}

func (s *oneWriter) LoadFollow(ctx context.Context, holder string, now time.Time, st follow.State, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	s.copying.Store(true)
	defer s.copied.Store(true)
	defer s.copying.Store(false)
	start := time.Now()
	return s.followStore.LoadFollow(ctx, holder, now, st, b, func(emit func([]flagadmin.Event) error) error {
		// A long copy: past the lease's end, with renewals refused.
		for {
			s.mu.Lock()
			refused := s.refused
			s.mu.Unlock()
			if refused >= 3 && time.Since(start) > 2*s.ttl {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		return events(emit)
	})
}

// TestFollowKeepsTheLeaseWhileCopying: a first copy longer than the lease,
// on a store where the lease cannot be renewed beside it, keeps the lease
// (no "lease ended" in the log) and follows on once the lease is renewed,
// even when that renewal is slow; its progress is in the log and in the
// status.
func TestFollowKeepsTheLeaseWhileCopying(t *testing.T) {
	src := unleashfixture.Restore(t)
	opts, log := logged("")
	store := &oneWriter{followStore: memstore.New(), ttl: opts.LeaseTTL, wrote: make(chan struct{}, 1)}
	r := startFollower(t, src, store, opts)
	var sawCopying, lost atomic.Bool
	waitFor(t, 30*time.Second, "imported", func() bool {
		st := r.Status()
		if st.State == follow.Importing && st.CopyTotal == fixtureEvents {
			sawCopying.Store(true)
		}
		if store.copying.Load() && !st.Applying && !lost.Swap(true) {
			t.Errorf("the lease ended during the copy: %+v", st)
		}
		return st.Ready
	})
	id := connect(t, src).event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`)
	caughtUp(t, r, id)
	for _, bad := range []string{"lease ended", "cannot be renewed", "lease was lost"} {
		if strings.Contains(log.String(), bad) {
			t.Errorf("the log says %q:\n%s", bad, grepLines(log.String(), "lease"))
		}
	}
	if n := strings.Count(log.String(), "this server applies"); n != 1 {
		t.Errorf("%d lines 'this server applies', want 1 (the lease kept):\n%s", n, log)
	}
	for _, want := range []string{"following: importing", "progress=\"read users:", "progress=\"events: 2297 in "} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log has no %q:\n%s", want, grepLines(log.String(), "importing"))
		}
	}
	if !sawCopying.Load() {
		t.Errorf("the status never showed the events the copy copies")
	}
}

// TestFollowCheckSource: a source that answers but can never be followed
// as configured is refused before following starts, in one line; one that
// cannot be reached is not (the follower tries again).
func TestFollowCheckSource(t *testing.T) {
	src := unleashfixture.ReadOnly(t)
	with := func(change func(*url.URL)) string {
		u, err := url.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		change(u)
		return u.String()
	}
	for _, c := range []struct {
		name, url string
		want      string // "" for no refusal
	}{
		{"Unleash", src, ""},
		{"not an Unleash database", dbtest.Postgres(t), "not an Unleash database: "},
		{"a database that does not exist", with(func(u *url.URL) { u.Path = "/no_such_database_here" }), `database "no_such_database_here" does not exist`},
		{"a role that does not exist", with(func(u *url.URL) { u.User = url.User("no_such_role_here") }), `role "no_such_role_here" does not exist`},
		{"unreachable", "postgres://postgres@127.0.0.1:1/unleash?sslmode=disable", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := unleashimport.NewFollower(c.url, memstore.New(), fastFollow(nil))
			err := f.CheckSource(context.Background())
			switch {
			case c.want == "" && err != nil:
				t.Errorf("CheckSource: %v; want nil", err)
			case c.want != "" && (!errors.Is(err, unleashimport.ErrSourceRefused) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n")):
				t.Errorf("CheckSource: %v; want one line of ErrSourceRefused with %q", err, c.want)
			}
		})
	}
}

// TestFollowUnreachableBeforeTheCopy: a source that cannot be reached
// before anything is copied: the status is paused and names the last
// error once, not "the import runs".
func TestFollowUnreachableBeforeTheCopy(t *testing.T) {
	opts, log := logged("")
	r := startFollower(t, "postgres://postgres@127.0.0.1:1/unleash?sslmode=disable", memstore.New(), opts)
	waitFor(t, 10*time.Second, "paused", func() bool { return r.Status().Errors >= 3 })
	st := r.Status()
	why := st.NotLoaded()
	if st.State != follow.Paused || st.Ready || !strings.Contains(why, "cannot be reached") || strings.Count(why, "cannot be reached") != 1 ||
		strings.Contains(why, "import that starts following runs") {
		t.Errorf("status: %+v; not loaded: %q", st, why)
	}
	if n := strings.Count(log.String(), "following paused"); n != 1 {
		t.Errorf("%d 'following paused' lines, want 1:\n%s", n, log)
	}
}

// TestFollowResumedCopyIsReadyAtOnce: a store that holds a copy is ready
// (served, /ready 200) as soon as Check found it, before the source is
// reached.
func TestFollowResumedCopyIsReadyAtOnce(t *testing.T) {
	src := unleashfixture.ReadOnly(t)
	store := memstore.New()
	first := startFollower(t, src, store, unleashimport.FollowOptions{})
	caughtUp(t, first, fixtureEvents)
	first.stop()
	f := unleashimport.NewFollower("postgres://postgres@127.0.0.1:1/unleash?sslmode=disable", store, fastFollow(nil))
	resume, err := f.Check(context.Background())
	if st := f.Status(); err != nil || !resume || !st.Ready || st.Position != fixtureEvents || st.NotLoaded() != "" {
		t.Errorf("after Check: resume %v, %v, status %+v; want the copy ready at position %d", resume, err, st, fixtureEvents)
	}
}

// TestFollowRunsBeforeApplyingBeforeItsFirstWriteAfterTheCopy: the hook
// runs once, before the first event followed after the copy is written:
// after the first import, and again in a follower that resumes a copy
// with events written while it was stopped. It sees the copy's newest
// event, none followed after it.
func TestFollowRunsBeforeApplyingBeforeItsFirstWriteAfterTheCopy(t *testing.T) {
	src := unleashfixture.Restore(t)
	u := connect(t, src)
	store := memstore.New()
	// run follows until the store holds last, and returns the store's
	// newest event each time the hook ran.
	run := func(last int64) []int64 {
		var mu sync.Mutex
		var seen []int64
		opts, _ := logged("")
		opts.BeforeApplying = func(context.Context) {
			ids := storeIDs(t, store, 0)
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, ids[len(ids)-1])
		}
		r := startFollower(t, src, store, opts)
		waitFor(t, 30*time.Second, "the copy", func() bool { return r.Status().Ready })
		if last == 0 {
			last = u.event(nil, "feature-updated", ptr("default"), ptr("dark-mode"), `{}`)
		}
		caughtUp(t, r, last)
		r.stop()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	if seen := run(0); !slices.Equal(seen, []int64{fixtureEvents}) {
		t.Errorf("after the import, the hook saw the newest events %v, want once the copy's %d", seen, fixtureEvents)
	}
	copied := storeIDs(t, store, 0)
	newest := copied[len(copied)-1]
	var last int64
	for range 3 {
		last = u.event(nil, "feature-updated", ptr("default"), ptr("dark-mode"), `{}`)
	}
	if seen := run(last); !slices.Equal(seen, []int64{newest}) {
		t.Errorf("resuming, the hook saw the newest events %v, want once the copy's %d", seen, newest)
	}
}
