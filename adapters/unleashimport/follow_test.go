package unleashimport_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
	"github.com/flagadmin/flagadmin/internal/testclock"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// fixtureEvents is the number of events of the fixture (ids 1 to 2297).
const fixtureEvents = 2297

// Secrets of the fixture.
const (
	fixtureAdminSecret = "*:*.unleash-insecure-admin-api-token"
	bobPAT             = "user:cd8afd4ef3ef16915ff1709343f09fb60c065dd93a370ebf0f183376" // Bob (3), Editor, Member of the private project payments
	davePAT            = "user:07e25bf05094b42ae85d1cae30bc623973f3f88a779511765b1b14f3" // Dave (5), Viewer
)

// fastFollow are options that make a test's follower quick.
func fastFollow(log *slog.Logger) unleashimport.FollowOptions {
	return unleashimport.FollowOptions{
		Logger: log, PollInterval: 20 * time.Millisecond, StateInterval: 300 * time.Millisecond, MinStateInterval: 50 * time.Millisecond,
		LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond, SyncEvery: 100 * time.Millisecond, ReadTimeout: 2 * time.Second,
		RetryMin: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond,
		BatchSize: 500, // a burst is read in several batches, each read while the one before is applied
	}
}

// running is a follower running in the background of a test.
type running struct {
	*unleashimport.Follower
	log    *syncbuffer.Buffer
	cancel context.CancelFunc
	done   chan error
}

// startFollower runs a follower of url into store until the test ends.
func startFollower(t *testing.T, url string, store unleashimport.FollowStore, opts unleashimport.FollowOptions) *running {
	t.Helper()
	buf := &syncbuffer.Buffer{}
	if opts.Logger == nil {
		opts = fastFollow(slog.New(slog.NewTextHandler(buf, nil)))
	}
	f := unleashimport.NewFollower(url, store, opts)
	if _, err := f.Check(context.Background()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Follower: f, log: buf, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- f.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// stop ends the follower and waits for it.
func (r *running) stop() {
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		panic("the follower did not stop within 10 s")
	}
	r.done <- nil // stop may be called again
}

// waitFor waits until cond holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// storeIDs are the ids of the store's events above after, ascending.
func storeIDs(t *testing.T, s flagadmin.Store, after int64) []int64 {
	t.Helper()
	var ids []int64
	if err := s.ExportEvents(context.Background(), flagadmin.EventQuery{}, after, func(e flagadmin.Event) error {
		ids = append(ids, e.ID)
		return nil
	}); err != nil {
		t.Fatalf("ExportEvents: %v", err)
	}
	return ids
}

// caughtUp waits until the follower's position is at least id.
func caughtUp(t *testing.T, r *running, id int64) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("position %d", id), func() bool {
		st := r.Status()
		return st.State == follow.Following && st.Position >= id
	})
}

// unleash is a connection to the source that writes as Unleash does.
type unleash struct {
	t    *testing.T
	conn *pgx.Conn
}

func connect(t *testing.T, url string) *unleash {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return &unleash{t: t, conn: conn}
}

// insertEventSQL is how Unleash's event store writes an event: the id is
// the column's default, drawn in the statement.
const insertEventSQL = `INSERT INTO events (type, created_by, created_by_user_id, data, tags, project, feature_name, environment)
	VALUES ($1, 'admin', -42, $2::json, '[]'::json, $3, $4, NULL) RETURNING id`

// event writes an event of type typ (in tx when not nil) and returns its id.
func (u *unleash) event(tx pgx.Tx, typ string, project, feature *string, data string) int64 {
	u.t.Helper()
	q := pgx.Tx(tx)
	var id int64
	var err error
	if q != nil {
		err = q.QueryRow(context.Background(), insertEventSQL, typ, data, project, feature).Scan(&id)
	} else {
		err = u.conn.QueryRow(context.Background(), insertEventSQL, typ, data, project, feature).Scan(&id)
	}
	if err != nil {
		u.t.Fatalf("insert event: %v", err)
	}
	return id
}

// begin starts a transaction.
func (u *unleash) begin() pgx.Tx {
	u.t.Helper()
	tx, err := u.conn.Begin(context.Background())
	if err != nil {
		u.t.Fatal(err)
	}
	return tx
}

// change runs stmts and records an event of type typ in one transaction,
// as Unleash records a change; it returns the event's id.
func (u *unleash) change(typ string, project, feature *string, stmts ...string) int64 {
	u.t.Helper()
	tx := u.begin()
	for _, s := range stmts {
		if _, err := tx.Exec(context.Background(), s); err != nil {
			u.t.Fatalf("%s: %v", s, err)
		}
	}
	id := u.event(tx, typ, project, feature, `{}`)
	if err := tx.Commit(context.Background()); err != nil {
		u.t.Fatal(err)
	}
	return id
}

func ptr[T any](v T) *T { return &v }

func TestFollowImportsThenFollows(t *testing.T) { forEachTarget(t, testFollowImportsThenFollows) }

func testFollowImportsThenFollows(t *testing.T, target followTarget) {
	url := unleashfixture.Restore(t)
	store := target.open(t)
	r := startFollower(t, url, store, unleashimport.FollowOptions{})
	caughtUp(t, r, fixtureEvents)
	st := r.Status()
	if !st.Ready || st.Holes != 0 || st.LagEvents != 0 || !st.Applying || st.SyncedAt == nil {
		t.Errorf("status after the import: %+v", st)
	}
	if ids := storeIDs(t, store, 0); len(ids) != fixtureEvents || ids[0] != 1 || ids[len(ids)-1] != fixtureEvents {
		t.Fatalf("imported events: %d, from %d to %d; want 1 to %d", len(ids), ids[0], ids[len(ids)-1], fixtureEvents)
	}
	fs, err := store.FollowState(context.Background())
	if err != nil || !fs.Following() || fs.Source.Database == "" || fs.Source.SystemID == "" || strings.Contains(fs.Source.URL, "@") {
		t.Errorf("follow state: %+v, %v; want the source's identity and a URL without credentials", fs, err)
	}
	users, _ := store.Users(context.Background())
	if len(users) != 10 {
		t.Errorf("users: got %d, want the import's 10", len(users))
	}
	if !strings.Contains(r.log.String(), "following: imported; now following") {
		t.Errorf("log: no import line in\n%s", r.log.String())
	}

	// Following: events written in Unleash arrive with their ids and fields.
	u := connect(t, url)
	id := u.event(nil, "feature-created", ptr("default"), ptr("followed-flag"), `{"name":"followed-flag"}`)
	id2 := u.event(nil, "release-plan-template-created", nil, nil, `{"x":1}`)
	caughtUp(t, r, id2)
	page, err := store.SearchEvents(context.Background(), flagadmin.EventQuery{Limit: 10, IDs: []int64{id, id2}})
	if err != nil || page.Total != 2 {
		t.Fatalf("followed events: %+v, %v", page, err)
	}
	if e := page.Events[1]; e.ID != id || e.Type != "feature-created" || *e.FeatureName != "followed-flag" || string(e.Data) != `{"name":"followed-flag"}` || *e.CreatedByUserID != -42 {
		t.Errorf("followed event: %+v", e)
	}
}

func TestFollowResumesFromThePosition(t *testing.T) {
	forEachTarget(t, testFollowResumesFromThePosition)
}

func testFollowResumesFromThePosition(t *testing.T, target followTarget) {
	url := unleashfixture.Restore(t)
	store, reopened := target.openShared(t) // a restarted server opens the database again
	r := startFollower(t, url, store, unleashimport.FollowOptions{})
	caughtUp(t, r, fixtureEvents)
	r.stop()
	store = reopened
	u := connect(t, url)
	var want []int64
	for range 5 {
		want = append(want, u.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`))
	}
	f := unleashimport.NewFollower(url, store, fastFollow(nil))
	resume, err := f.Check(context.Background())
	if err != nil || !resume {
		t.Fatalf("Check on the following store: resume %v, %v; want resume", resume, err)
	}
	r2 := startFollower(t, url, store, unleashimport.FollowOptions{})
	caughtUp(t, r2, want[4])
	if got := storeIDs(t, store, fixtureEvents); !slices.Equal(got, want) {
		t.Errorf("events after resuming: got %v, want %v (each once)", got, want)
	}
	if strings.Contains(r2.log.String(), "importing") {
		t.Errorf("the second follower imported again:\n%s", r2.log.String())
	}
}

func TestFollowRefusesAStoreThatHoldsAnythingElse(t *testing.T) {
	forEachTarget(t, testFollowRefusesAStoreThatHoldsAnythingElse)
}

func testFollowRefusesAStoreThatHoldsAnythingElse(t *testing.T, target followTarget) {
	url := unleashfixture.ReadOnly(t)
	store := target.open(t)
	svc := flagadmin.NewService(store)
	if _, err := svc.CreateProject(context.Background(), flagadmin.System, flagadmin.Project{ID: "mine", Name: "Mine", Mode: flagadmin.ModeOpen}); err != nil {
		t.Fatal(err)
	}
	_, err := unleashimport.NewFollower(url, store, fastFollow(nil)).Check(context.Background())
	if !errors.Is(err, unleashimport.ErrFollowRefused) || !strings.Contains(err.Error(), "the store holds 1 project, 1 event and is not a copy of postgres://") {
		t.Errorf("Check on a store with data: got %v", err)
	}
	if strings.Contains(err.Error(), "postgres@") {
		t.Errorf("the message holds the source's credentials: %v", err)
	}
}

func TestFollowStopsOnAnotherDatabase(t *testing.T) {
	forEachTarget(t, testFollowStopsOnAnotherDatabase)
}

func testFollowStopsOnAnotherDatabase(t *testing.T, target followTarget) {
	url := unleashfixture.ReadOnly(t)
	other := unleashfixture.Restore(t)
	store := target.open(t)
	r := startFollower(t, url, store, unleashimport.FollowOptions{})
	caughtUp(t, r, fixtureEvents)
	r.stop()
	r2 := startFollower(t, other, store, unleashimport.FollowOptions{})
	var err error
	select {
	case err = <-r2.done:
		r2.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("following another database did not stop")
	}
	if !errors.Is(err, unleashimport.ErrFollowStopped) || !strings.Contains(err.Error(), "is another database") {
		t.Errorf("Run: got %v, want it stopped naming the other database", err)
	}
	// The state says "stopped"; the reason says why, once.
	if st := r2.Status(); st.State != follow.Stopped || !strings.Contains(st.Reason, "another database") || strings.Contains(st.Reason, "following stopped") {
		t.Errorf("status: %+v", st)
	}
}

// TestFollowInterleavings forces the orders in which Unleash's transactions
// draw and commit event ids, on separate connections holding transactions
// open, and checks that the copy gets every committed event once, in id
// order, none skipped, and no event above an id that may still commit.
func TestFollowInterleavings(t *testing.T) { forEachTarget(t, testFollowInterleavings) }

func testFollowInterleavings(t *testing.T, target followTarget) {
	url := unleashfixture.Restore(t)
	store := target.open(t)
	r := startFollower(t, url, store, unleashimport.FollowOptions{})
	caughtUp(t, r, fixtureEvents)
	a, b := connect(t, url), connect(t, url)
	ctx := context.Background()

	// waiting checks, for a while, that the follower waits on id and that
	// the copy holds nothing above it.
	waiting := func(t *testing.T, id int64) {
		t.Helper()
		waitFor(t, 5*time.Second, fmt.Sprintf("waiting for %d", id), func() bool { return r.Status().WaitingFor == id })
		for range 10 {
			time.Sleep(20 * time.Millisecond)
			if got := storeIDs(t, store, id-1); len(got) > 0 {
				t.Fatalf("the copy holds %v while id %d may still commit", got, id)
			}
		}
	}

	t.Run("A draws n, B draws n+1 and commits, then A commits", func(t *testing.T) {
		txA := a.begin()
		n := a.event(txA, "feature-updated", ptr("default"), ptr("dark-mode"), `{"by":"A"}`)
		txB := b.begin()
		m := b.event(txB, "feature-updated", ptr("default"), ptr("dark-mode"), `{"by":"B"}`)
		if m != n+1 {
			t.Fatalf("ids %d, %d: want consecutive", n, m)
		}
		if err := txB.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		waiting(t, n)
		if err := txA.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		caughtUp(t, r, m)
		if got := storeIDs(t, store, n-1); !slices.Equal(got, []int64{n, m}) {
			t.Errorf("got %v, want [%d %d]", got, n, m)
		}
	})

	t.Run("A draws n and rolls back after B committed n+1", func(t *testing.T) {
		holes := r.Status().Holes
		txA := a.begin()
		n := a.event(txA, "feature-updated", ptr("default"), ptr("dark-mode"), `{"by":"A"}`)
		m := b.event(nil, "feature-updated", ptr("default"), ptr("dark-mode"), `{"by":"B"}`)
		waiting(t, n)
		if err := txA.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		caughtUp(t, r, m)
		if got := storeIDs(t, store, n-1); !slices.Equal(got, []int64{m}) {
			t.Errorf("got %v, want [%d]", got, m)
		}
		if st := r.Status(); st.Holes != holes+1 || st.WaitingFor != 0 {
			t.Errorf("status: holes %d, waiting for %d; want %d, 0", st.Holes, st.WaitingFor, holes+1)
		}
	})

	t.Run("a long transaction holds back what commits after it", func(t *testing.T) {
		txA := a.begin()
		n := a.event(txA, "feature-updated", ptr("default"), ptr("dark-mode"), `{"by":"A"}`)
		var later []int64
		for range 50 {
			later = append(later, b.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`))
		}
		waiting(t, n)
		time.Sleep(1500 * time.Millisecond) // the copy keeps waiting as long as A is open
		if got := storeIDs(t, store, n-1); len(got) > 0 {
			t.Fatalf("the copy holds %d events above %d while A is open", len(got), n)
		}
		if err := txA.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		caughtUp(t, r, later[49])
		if got := storeIDs(t, store, n-1); !slices.Equal(got, append([]int64{n}, later...)) {
			t.Errorf("got %v, want %d then %v", got, n, later)
		}
	})

	t.Run("an id drawn before its transaction has a transaction id", func(t *testing.T) {
		// A BEFORE INSERT trigger holds A's INSERT after the default drew
		// its id and before the row is written: A has no transaction id
		// yet, so no snapshot lists it as running. Only its lock shows it.
		execSource(t, url, `CREATE FUNCTION flagadmin_test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				RAISE NOTICE 'xid:%', coalesce(pg_current_xact_id_if_assigned()::text, 'none');
				PERFORM pg_sleep(1.5);
				RETURN NEW;
			END $$`,
			`CREATE TRIGGER flagadmin_test_slow BEFORE INSERT ON events FOR EACH ROW
				WHEN (NEW.type = 'flagadmin-test-slow') EXECUTE FUNCTION flagadmin_test_slow()`)
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		notices := make(chan string, 1)
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices <- n.Message }
		slow, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer slow.Close(ctx)
		// nextval gives its transaction an id when it writes the sequence
		// to the WAL: when none of the values logged ahead is left
		// (log_cnt, 32 at a time), and first after a checkpoint. Events
		// written (and followed) until some are left let A draw its id
		// without one.
		for logged := int64(0); logged == 0; {
			caughtUp(t, r, b.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`))
			if err := b.conn.QueryRow(ctx, `SELECT log_cnt FROM events_id_seq`).Scan(&logged); err != nil {
				t.Fatal(err)
			}
		}
		var before int64
		if err := b.conn.QueryRow(ctx, `SELECT last_value FROM events_id_seq`).Scan(&before); err != nil {
			t.Fatal(err)
		}
		inserted := make(chan int64, 1)
		go func() {
			var id int64
			if err := slow.QueryRow(ctx, insertEventSQL, "flagadmin-test-slow", `{}`, nil, nil).Scan(&id); err != nil {
				t.Errorf("slow insert: %v", err)
			}
			inserted <- id
		}()
		if msg := <-notices; msg != "xid:none" {
			t.Fatalf("in the trigger: %s, want no transaction id", msg)
		}
		n := before + 1
		var xip []uint64
		if err := b.conn.QueryRow(ctx, `SELECT coalesce(array_agg(x::text::bigint), '{}') FROM pg_snapshot_xip(pg_current_snapshot()) x`).Scan(&xip); err != nil {
			t.Fatal(err)
		}
		m := b.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`)
		if m != n+1 {
			t.Fatalf("B's id %d, want %d", m, n+1)
		}
		// No running transaction id was listed while A held n: a rule that
		// waited for the snapshot's running transactions would call n a hole.
		t.Logf("running transaction ids while A held id %d without one: %v", n, xip)
		waiting(t, n)
		if got := <-inserted; got != n {
			t.Fatalf("A's id %d, want %d", got, n)
		}
		caughtUp(t, r, m)
		if got := storeIDs(t, store, n-1); !slices.Equal(got, []int64{n, m}) {
			t.Errorf("got %v, want [%d %d]: the id drawn without a transaction id is delivered, in order", got, n, m)
		}
	})

	t.Run("a burst of 10,000 events from 8 writers, some rolled back", func(t *testing.T) {
		start := r.Status().Position
		holesBefore := r.Status().Holes
		var mu sync.Mutex
		var samples [][]int64 // the copy's ids above start, sampled while it follows
		stopSampling := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				select {
				case <-stopSampling:
					return
				case <-time.After(30 * time.Millisecond):
				}
				var ids []int64
				if err := store.ExportEvents(ctx, flagadmin.EventQuery{}, start, func(e flagadmin.Event) error {
					ids = append(ids, e.ID)
					return nil
				}); err != nil {
					t.Errorf("sampling the copy: %v", err)
					return
				}
				mu.Lock()
				samples = append(samples, ids)
				mu.Unlock()
			}
		}()
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				close(stopSampling)
				<-sampled
			}
		}
		defer stop() // also when the test fails before the end
		var wg sync.WaitGroup
		var rolledBack sync.Map
		begun := time.Now()
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := pgx.Connect(ctx, url)
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close(ctx)
				for i := 0; i < 1250; {
					tx, err := conn.Begin(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					n := 1 + (i+w)%4
					var ids []int64
					for range n {
						var id int64
						if err := tx.QueryRow(ctx, insertEventSQL, "feature-strategy-update", fmt.Sprintf(`{"w":%d,"i":%d}`, w, i), "default", "dark-mode").Scan(&id); err != nil {
							t.Error(err)
							return
						}
						ids = append(ids, id)
					}
					if (i/4+w)%10 == 3 {
						_ = tx.Rollback(ctx)
						for _, id := range ids {
							rolledBack.Store(id, true)
						}
					} else if err := tx.Commit(ctx); err != nil {
						t.Error(err)
						return
					}
					i += n
				}
			}()
		}
		wg.Wait()
		wrote := time.Since(begun)
		var newest int64
		if err := b.conn.QueryRow(ctx, `SELECT max(id) FROM events`).Scan(&newest); err != nil {
			t.Fatal(err)
		}
		caughtUp(t, r, newest)
		stop()
		rows, err := b.conn.Query(ctx, `SELECT id FROM events WHERE id > $1 ORDER BY id`, start)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		got := storeIDs(t, store, start)
		if !slices.Equal(got, committed) {
			t.Fatalf("the copy has %d events above %d, the source %d: not the same ids", len(got), start, len(committed))
		}
		holes := 0
		rolledBack.Range(func(_, _ any) bool { holes++; return true })
		if st := r.Status(); st.Holes-holesBefore != int64(holes) || len(committed)+holes != int(newest-start) {
			t.Errorf("holes: got %d, want the %d rolled-back ids (%d committed of %d ids)", st.Holes-holesBefore, holes, len(committed), newest-start)
		}
		// Every sample was a prefix of the committed ids: nothing skipped,
		// nothing out of order, nothing twice, at any moment.
		for i, s := range samples {
			if len(s) > len(committed) || !slices.Equal(s, committed[:len(s)]) {
				t.Fatalf("sample %d (%d ids) is not a prefix of the committed ids", i, len(s))
			}
		}
		t.Logf("%d events committed and %d rolled back by 8 writers in %s; %d samples of the copy, each a prefix", len(committed), holes, wrote.Round(time.Millisecond), len(samples))
	})
}

// authenticates reports whether secret authenticates at a service over store.
func authenticates(t *testing.T, store flagadmin.Store, secret string) bool {
	t.Helper()
	_, err := flagadmin.NewService(store).Authenticate(context.Background(), secret)
	if err != nil && !errors.Is(err, flagadmin.ErrAuthenticationRequired) {
		t.Fatalf("Authenticate: %v", err)
	}
	return err == nil
}

// TestFollowState changes Unleash's state as Unleash does (the change and
// its event in one transaction, or a change without an event) and checks
// each at the copy, timing how long it took.
func TestFollowState(t *testing.T) { forEachTarget(t, testFollowState) }

func testFollowState(t *testing.T, target followTarget) {
	url := unleashfixture.Restore(t)
	store := target.open(t)
	r := startFollower(t, url, store, unleashimport.FollowOptions{})
	caughtUp(t, r, fixtureEvents)
	u := connect(t, url)
	ctx := context.Background()
	within := 5 * time.Second
	bob := flagadmin.Principal{}
	lookup := func() {
		tok, user, err := store.LookupToken(ctx, flagadmin.HashSecret(bobPAT))
		if err != nil || user == nil {
			t.Fatalf("Bob's PAT: %v", err)
		}
		_ = tok
		bob = flagadmin.AsUser(*user)
	}
	lookup()
	svc := flagadmin.NewService(store)
	sees := func(p flagadmin.Principal, project string) bool {
		list, err := svc.ListProjects(ctx, p, flagadmin.ProjectListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(list, func(e flagadmin.ProjectListEntry) bool { return e.ID == project })
	}
	if !sees(bob, "payments") {
		t.Fatal("Bob does not see the private project payments he is a member of")
	}
	cases := []struct {
		name   string
		change func()
		done   func() bool
	}{
		{"an API token deleted", func() {
			u.change("api-token-deleted", nil, nil, `DELETE FROM api_tokens WHERE secret = '`+fixtureAdminSecret+`'`)
		}, func() bool { return !authenticates(t, store, fixtureAdminSecret) }},
		{"a personal access token expired (no event)", func() {
			execSource(t, url, `UPDATE personal_access_tokens SET expires_at = now() - interval '1 second' WHERE secret = '`+davePAT+`'`)
		}, func() bool { return !authenticates(t, store, davePAT) }},
		{"a project role removed narrows visibility", func() {
			u.change("project-user-removed", ptr("payments"), nil, `DELETE FROM role_user WHERE user_id = 3 AND project = 'payments'`)
		}, func() bool { return !sees(bob, "payments") }},
		{"a project archived", func() {
			u.change("project-archived", ptr("mobile-app"), nil, `UPDATE projects SET archived_at = now() WHERE id = 'mobile-app'`)
		}, func() bool { p, err := store.Project(ctx, "mobile-app"); return err == nil && p.ArchivedAt != nil }},
		{"a lifecycle completed", func() {
			u.change("feature-completed", ptr("default"), ptr("search-autocomplete"),
				`INSERT INTO feature_lifecycles (feature, stage, status, status_value) VALUES ('search-autocomplete', 'completed', 'kept', 'v2')`)
		}, func() bool {
			f, err := store.Feature(ctx, "search-autocomplete")
			return err == nil && f.Lifecycle == flagadmin.Lifecycle{Stage: flagadmin.StageCompleted, Status: flagadmin.StatusKept, StatusValue: "v2"}
		}},
		{"a feature moved to another project", func() {
			u.change("feature-project-change", ptr("payments"), ptr("dark-mode"), `UPDATE features SET project = 'payments' WHERE name = 'dark-mode'`)
		}, func() bool { f, err := store.Feature(ctx, "dark-mode"); return err == nil && f.Project == "payments" }},
		{"a feature made stale and tagged", func() {
			u.change("feature-stale-on", ptr("default"), ptr("checkout-v2"), `UPDATE features SET stale = true WHERE name = 'checkout-v2'`,
				`INSERT INTO tags (type, value) VALUES ('simple', 'followed')`,
				`INSERT INTO feature_tag (feature_name, tag_type, tag_value) VALUES ('checkout-v2', 'simple', 'followed')`)
		}, func() bool {
			f, err := store.Feature(ctx, "checkout-v2")
			return err == nil && f.Stale && slices.Contains(f.Tags, flagadmin.Tag{Type: "simple", Value: "followed"})
		}},
		{"a flag changed by SQL (no event)", func() {
			execSource(t, url, `UPDATE features SET stale = true WHERE name = 'search-autocomplete'`)
		}, func() bool { f, err := store.Feature(ctx, "search-autocomplete"); return err == nil && f.Stale }},
		{"an SDK reports a flag (last_seen_at_metrics, no event)", func() {
			execSource(t, url, `INSERT INTO last_seen_at_metrics (feature_name, environment, last_seen_at) VALUES ('checkout-v2', 'production', '2026-12-01T10:00:00.123Z')
				ON CONFLICT (feature_name, environment) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at`)
		}, func() bool {
			f, err := store.Feature(ctx, "checkout-v2")
			return err == nil && f.LastSeenAt != nil && f.LastSeenAt.Equal(time.Date(2026, 12, 1, 10, 0, 0, 123e6, time.UTC))
		}},
		{"a user created", func() {
			u.change("user-created", nil, nil, `INSERT INTO users (id, name, email) VALUES (50, 'Zoe', 'zoe@example.com')`,
				`INSERT INTO role_user (user_id, role_id, project) VALUES (50, 2, 'default')`)
		}, func() bool { us, err := store.User(ctx, 50); return err == nil && us.RootRole == flagadmin.RoleEditor }},
		{"a user deleted takes its PAT along", func() {
			u.change("user-deleted", nil, nil, `UPDATE users SET deleted_at = now(), email = NULL, username = NULL WHERE id = 3`,
				`DELETE FROM role_user WHERE user_id = 3`)
		}, func() bool { return !authenticates(t, store, bobPAT) }},
		{"a group's member removed", func() {
			u.change("group-user-removed", nil, nil, `DELETE FROM group_user WHERE group_id = 1 AND user_id = 6`)
		}, func() bool { g, err := store.Group(ctx, 1); return err == nil && !slices.Contains(g.Users, 6) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.change()
			took := waitFor(t, within, c.name, c.done)
			t.Logf("%s: at the copy after %s", c.name, took.Round(time.Millisecond))
		})
	}
}

func TestFollowSchemaChanges(t *testing.T) {
	t.Run("columns added are followed", func(t *testing.T) {
		url := unleashfixture.Restore(t)
		store := memstore.New()
		r := startFollower(t, url, store, unleashimport.FollowOptions{})
		caughtUp(t, r, fixtureEvents)
		execSource(t, url, `ALTER TABLE events ADD COLUMN flagadmin_test_extra text DEFAULT 'x'`,
			`ALTER TABLE features ADD COLUMN flagadmin_test_extra int DEFAULT 1`, `CREATE TABLE flagadmin_test_new (id int)`)
		id := connect(t, url).event(nil, "feature-created", ptr("default"), ptr("dark-mode"), `{}`)
		caughtUp(t, r, id)
	})
	t.Run("a column flagadmin reads dropped stops following; the copy stays", func(t *testing.T) {
		url := unleashfixture.Restore(t)
		store := memstore.New()
		r := startFollower(t, url, store, unleashimport.FollowOptions{})
		caughtUp(t, r, fixtureEvents)
		execSource(t, url, `ALTER TABLE events DROP COLUMN feature_name`)
		var err error
		select {
		case err = <-r.done:
			r.done <- nil
		case <-time.After(10 * time.Second):
			t.Fatal("following did not stop")
		}
		want := "no longer has events.feature_name, which flagadmin reads"
		if !errors.Is(err, unleashimport.ErrFollowStopped) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Run: got %v, want it to say %q", err, want)
		}
		if st := r.Status(); st.State != follow.Stopped || !strings.Contains(st.Reason, want) {
			t.Errorf("status: %+v", st)
		}
		if !strings.Contains(r.log.String(), "following stopped; serving goes on from the copy as it is") {
			t.Errorf("log:\n%s", r.log.String())
		}
		if got := len(storeIDs(t, store, 0)); got != fixtureEvents {
			t.Errorf("the copy after following stopped: %d events, want %d", got, fixtureEvents)
		}
	})
	t.Run("a table flagadmin reads dropped stops following", func(t *testing.T) {
		url := unleashfixture.Restore(t)
		store := memstore.New()
		r := startFollower(t, url, store, unleashimport.FollowOptions{})
		caughtUp(t, r, fixtureEvents)
		execSource(t, url, `DROP TABLE favorite_projects`)
		var err error
		select {
		case err = <-r.done:
			r.done <- nil
		case <-time.After(10 * time.Second):
			t.Fatal("following did not stop")
		}
		if !strings.Contains(fmt.Sprint(err), "no longer has favorite_projects") {
			t.Errorf("Run: got %v", err)
		}
	})
}

// failingStore fails every third ApplyFollow before it writes anything: a
// follower killed in the middle of a batch, as the store sees it.
type failingStore struct {
	followStore
	mu    sync.Mutex
	calls int
}

func (f *failingStore) ApplyFollow(ctx context.Context, holder string, now time.Time, b *follow.Batch) error {
	f.mu.Lock()
	f.calls++
	fail := f.calls%3 == 0
	f.mu.Unlock()
	if fail {
		return errors.New("connection reset while writing the batch")
	}
	return f.followStore.ApplyFollow(ctx, holder, now, b)
}

func TestFollowRetriesABatchThatDidNotCommit(t *testing.T) {
	forEachTarget(t, testFollowRetriesABatchThatDidNotCommit)
}

func testFollowRetriesABatchThatDidNotCommit(t *testing.T, target followTarget) {
	url := unleashfixture.Restore(t)
	store := &failingStore{followStore: target.open(t)}
	r := startFollower(t, url, store, unleashimport.FollowOptions{})
	caughtUp(t, r, fixtureEvents)
	u := connect(t, url)
	var want []int64
	for range 40 {
		want = append(want, u.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`))
		time.Sleep(3 * time.Millisecond)
	}
	caughtUp(t, r, want[len(want)-1])
	if got := storeIDs(t, store, fixtureEvents); !slices.Equal(got, want) {
		t.Errorf("events: got %v, want %v, each once", got, want)
	}
	if r.Status().Errors == 0 {
		t.Error("no failed write was counted")
	}
}

// cutStore cuts every other ApplyFollow that carries events while it runs:
// its context ends after a random delay below maxDelay, mostly within the
// batch's transaction (the follower's process killed mid-batch, as the
// database sees it: the connection goes, the transaction rolls back).
type cutStore struct {
	followStore
	maxDelay time.Duration
	mu       sync.Mutex
	calls    int
	cut      int // calls that failed
}

func (c *cutStore) ApplyFollow(ctx context.Context, holder string, now time.Time, b *follow.Batch) error {
	c.mu.Lock()
	c.calls++
	cut := len(b.Events) > 0 && c.calls%2 == 0
	c.mu.Unlock()
	if !cut {
		return c.followStore.ApplyFollow(ctx, holder, now, b)
	}
	ctx, cancel := context.WithTimeout(ctx, rand.N(c.maxDelay))
	defer cancel()
	err := c.followStore.ApplyFollow(ctx, holder, now, b)
	if err != nil {
		c.mu.Lock()
		c.cut++
		c.mu.Unlock()
	}
	return err
}

// TestFollowBatchCutMidTransaction: batches of events cut while their
// transaction runs leave nothing behind; the follower applies them again,
// and the copy ends with every event once.
func TestFollowBatchCutMidTransaction(t *testing.T) {
	forEachTarget(t, func(t *testing.T, target followTarget) {
		if target.newURL == nil {
			t.Skip("memory applies a batch under one lock, after checking its context: nothing to cut")
		}
		url := unleashfixture.Restore(t)
		store := &cutStore{followStore: target.open(t), maxDelay: 3 * time.Millisecond}
		r := startFollower(t, url, store, unleashimport.FollowOptions{})
		caughtUp(t, r, fixtureEvents)
		u := connect(t, url)
		var want []int64
		for range 40 { // in transactions of 20, so that batches are large enough to cut, over several polls
			time.Sleep(5 * time.Millisecond)
			tx := u.begin()
			for i := range 20 {
				want = append(want, u.event(tx, "feature-tagged", ptr("default"), ptr("dark-mode"), fmt.Sprintf(`{"i":%d}`, i)))
			}
			if err := tx.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		caughtUp(t, r, want[len(want)-1])
		if got := storeIDs(t, store, fixtureEvents); !slices.Equal(got, want) {
			t.Errorf("events: got %d ids, want the %d written, each once", len(got), len(want))
		}
		store.mu.Lock()
		defer store.mu.Unlock()
		if store.cut == 0 {
			t.Errorf("no batch was cut (of %d calls); the test proves nothing", store.calls)
		}
		t.Logf("%d of %d batches cut mid-transaction", store.cut, store.calls)
	})
}

// TestFollowLeaseTakeover runs two followers into one store: one applies;
// when it dies without releasing its lease, the other takes over once the
// lease ends, and nothing is lost or applied twice. The followers share a
// clock that moves only when the test moves it: the lease ends when the
// test says, not when a stall of a busy machine outlasts it.
func TestFollowLeaseTakeover(t *testing.T) { forEachTarget(t, testFollowLeaseTakeover) }

func testFollowLeaseTakeover(t *testing.T, target followTarget) {
	url := unleashfixture.Restore(t)
	plain, other := target.openShared(t)
	shared := &countedAcquires{followStore: plain}
	crashed := &noRelease{followStore: other}
	clock := testclock.New(time.Now())
	optsA, optsB := fastFollow(nil), fastFollow(nil)
	logA, logB := &syncbuffer.Buffer{}, &syncbuffer.Buffer{}
	optsA.Logger, optsB.Logger = slog.New(slog.NewTextHandler(logA, nil)), slog.New(slog.NewTextHandler(logB, nil))
	optsA.Holder, optsB.Holder = "server-a", "server-b"
	optsA.Now, optsB.Now = clock.Now, clock.Now
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server-a's log:\n%s\nserver-b's log:\n%s", logA.String(), logB.String())
		}
	})
	a := startFollower(t, url, crashed, optsA)
	caughtUp(t, a, fixtureEvents)
	b := startFollower(t, url, shared, optsB)
	waitFor(t, 5*time.Second, "b on standby", func() bool { return b.Status().State == follow.Standby })
	if st := b.Status(); st.Applying || st.Holder != "server-a" || st.Position < fixtureEvents {
		t.Errorf("standby status: %+v", st)
	}
	u := connect(t, url)
	first := u.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`)
	caughtUp(t, a, first)
	a.stop() // "crashes": its lease is not released
	second := u.event(nil, "feature-tagged", ptr("default"), ptr("dark-mode"), `{}`)
	// b asks for the lease every RenewEvery and is refused while a's
	// lasts.
	asked := shared.acquires.Load()
	waitFor(t, 10*time.Second, "three more rounds of b's", func() bool { return shared.acquires.Load() >= asked+3 })
	if st := b.Status(); st.Applying || st.Position != first {
		t.Fatalf("b took over while a's lease lasts: %+v", st)
	}
	clock.Advance(optsA.LeaseTTL + time.Millisecond) // a's lease ends
	caughtUp(t, b, second)
	if got := storeIDs(t, shared, fixtureEvents); !slices.Equal(got, []int64{first, second}) {
		t.Errorf("events: got %v, want [%d %d]", got, first, second)
	}
}

// countedAcquires is a store that counts the answers to
// AcquireFollowLease.
type countedAcquires struct {
	followStore
	acquires atomic.Int64
}

func (s *countedAcquires) AcquireFollowLease(ctx context.Context, holder string, now, until time.Time) (follow.State, bool, error) {
	defer s.acquires.Add(1)
	return s.followStore.AcquireFollowLease(ctx, holder, now, until)
}

// noRelease is a store whose lease is never released: its follower dies
// holding it.
type noRelease struct{ followStore }

func (noRelease) ReleaseFollowLease(context.Context, string) error { return nil }

// TestFollowImportSettlesItsSnapshot: ids missing in the import's snapshot
// below a committed one are settled before the import loads past them: a
// transaction that commits or rolls back while the import waits, and one
// still open when the import stops waiting (the import loads the events
// below its id; following delivers the rest once it ends).
func TestFollowImportSettlesItsSnapshot(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		end      func(pgx.Tx) error
		after    time.Duration
		imported int64 // the position the import reaches
		holes    int64
	}{
		{"commits while the import waits", func(tx pgx.Tx) error { return tx.Commit(ctx) }, 500 * time.Millisecond, fixtureEvents, 0},
		{"rolls back while the import waits", func(tx pgx.Tx) error { return tx.Rollback(ctx) }, 500 * time.Millisecond, fixtureEvents + 2, 1},
		{"still open when the import stops waiting", func(tx pgx.Tx) error { return tx.Commit(ctx) }, 2 * time.Second, fixtureEvents, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := unleashfixture.Restore(t)
			a, b := connect(t, url), connect(t, url)
			txA := a.begin()
			n := a.event(txA, "feature-updated", ptr("default"), ptr("dark-mode"), `{"by":"A"}`)
			m := b.event(nil, "feature-updated", ptr("default"), ptr("dark-mode"), `{"by":"B"}`)
			store := memstore.New()
			buf := &syncbuffer.Buffer{}
			opts := fastFollow(slog.New(slog.NewTextHandler(buf, nil)))
			opts.ImportWait = time.Second
			ended := make(chan error, 1)
			go func() { time.Sleep(c.after); ended <- c.end(txA) }()
			r := startFollower(t, url, store, opts)
			// The import's line is logged before the status says ready.
			waitFor(t, 10*time.Second, "imported", func() bool { return r.Status().Ready })
			if err := <-ended; err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), fmt.Sprintf("position=%d", c.imported)) {
				t.Errorf("the import reached another position than %d:\n%s", c.imported, grepLines(buf.String(), "imported"))
			}
			caughtUp(t, r, m)
			want := []int64{n, m}
			if c.holes == 1 {
				want = []int64{m}
			}
			if got := storeIDs(t, store, fixtureEvents); !slices.Equal(got, want) {
				t.Errorf("events: got %v, want %v", got, want)
			}
			if st := r.Status(); st.Holes != c.holes {
				t.Errorf("holes: got %d, want %d", st.Holes, c.holes)
			}
		})
	}
}
