package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// followDBs are the stores a server is tested following Unleash into:
// memory and each SQL database (PostgreSQL and MySQL skip without their
// server, see internal/dbtest).
var followDBs = []struct {
	name string
	url  func(testing.TB) string
}{
	{"memory", func(testing.TB) string { return memoryURL }},
	{"sqlite", dbtest.SQLite},
	{"postgres", dbtest.Postgres},
	{"mysql", dbtest.MySQL},
}

// followingSQLite returns a SQLite database that follows the Unleash
// database postgres://db.internal:5432/unleash (a loaded, empty copy).
func followingSQLite(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	db := dbtest.SQLite(t)
	store, err := bunstore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	now := time.Now()
	if _, ok, err := store.AcquireFollowLease(ctx, "t", now, now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	src := follow.Source{SystemID: "1", Database: "unleash", URL: "postgres://db.internal:5432/unleash"}
	if err := store.LoadFollow(ctx, "t", now, follow.State{Source: src, Position: 7}, &flagadmin.Batch{
		Users:  []flagadmin.User{{ID: 1, Name: "Admin", Username: "admin", RootRole: flagadmin.RoleAdmin}},
		Tokens: []flagadmin.APIToken{{SecretHash: flagadmin.HashSecret("*:*.copied"), Name: "admin", Type: flagadmin.TokenAdmin, CreatedAt: now}},
	}, func(func([]flagadmin.Event) error) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := store.ReleaseFollowLease(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestWritingCommandsRefuseAFollowingSQLStore: given a SQL database that
// follows Unleash, each writing command refuses with one line naming the
// source and writes nothing; follow status --db reads its state.
func TestWritingCommandsRefuseAFollowingSQLStore(t *testing.T) {
	db := followingSQLite(t)
	seed := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(seed, []byte(`{"projects":[{"id":"p","name":"P","mode":"open"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const want = "read-only: the store is a copy of the Unleash database postgres://db.internal:5432/unleash, kept by following it; make the change in Unleash"
	env := map[string]string{envDB: db}
	for _, args := range [][]string{
		{"user", "create", "--name", "Zoe", "--email", "zoe@example.com"},
		{"service-account", "create", "--name", "CI", "--token"},
		{"token", "create", "--name", "ops"},
		{"token", "revoke", "*:*.copied"},
		{"seed", seed},
	} {
		code, stdout, stderr := runCLI(t, env, args...)
		if code != 1 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 1 and one line saying %q", args, code, stdout, stderr, want)
		}
	}
	store, err := bunstore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	have, err := store.Contents(context.Background())
	store.Close()
	if err != nil || have["users"] != 1 || have["tokens"] != 1 || have["projects"] != 0 || have["events"] != 0 {
		t.Errorf("the copy after the refused commands: %v (%v), want it as loaded", have, err)
	}
	code, stdout, stderr := runCLI(t, nil, "follow", "status", "--db", db)
	words := strings.Join(strings.Fields(stdout), " ")
	for _, line := range []string{"source postgres://db.internal:5432/unleash", "position event id 7 (0 ids never committed in Unleash)", "applied by none"} {
		if code != 0 || !strings.Contains(words, line) {
			t.Errorf("follow status --db: exit %d %q; stdout has no %q:\n%s", code, stderr, line, stdout)
		}
	}
	t.Run("import", func(t *testing.T) {
		src := unleashfixture.Restore(t)
		code, _, stderr := runCLI(t, nil, "import", "unleash", "--from", src, "--db", db)
		if code != 1 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("import: exit %d, %q; want one line saying %q", code, stderr, want)
		}
	})
}

// health reads a server's follow state from GET /health.
func health(t *testing.T, base string) follow.Status {
	t.Helper()
	resp, err := http.Get(base + "/health")
	if err != nil {
		return follow.Status{}
	}
	defer resp.Body.Close()
	var body struct{ Follow follow.Status }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return body.Follow
}

// waitUntil polls cond every 20 ms until it holds, failing t after timeout;
// it returns how long it took.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// followServer runs the binary serving db and following src at a free
// address, and returns it with its base URL.
func followServer(t *testing.T, bin, src, db string) (*process, string) {
	t.Helper()
	addr := freeAddr(t)
	p := startBinary(t, bin, "FLAGADMIN_ADDR="+addr, "FLAGADMIN_DB="+db, "FLAGADMIN_FOLLOW="+src, "FLAGADMIN_ADMIN_TOKENS=",
		"FLAGADMIN_LOG_LEVEL=info", "FLAGADMIN_LOG_FORMAT=text")
	return p, "http://" + addr
}

// TestFollowSharedPostgresStore runs two servers following one Unleash into
// one PostgreSQL store: exactly one applies, both serve what it applied;
// when the one that applies is killed (its lease not released), the other
// takes over within 30 s, and nothing is lost or applied twice. It runs
// in parallel with the other tests that mostly wait (here, for the lease).
func TestFollowSharedPostgresStore(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	src := unleashfixture.Restore(t)
	db := dbtest.Postgres(t)
	a, baseA := followServer(t, bin, src, db)
	a.waitReady(t, baseA)
	waitUntil(t, 60*time.Second, "a follows", func() bool { st := health(t, baseA); return st.Applying && st.Position >= 2297 })
	b, baseB := followServer(t, bin, src, db)
	b.waitReady(t, baseB)
	waitUntil(t, 20*time.Second, "b on standby", func() bool { return health(t, baseB).State == follow.Standby })
	if st := health(t, baseB); st.Applying || st.Holder == "" || !st.Ready {
		t.Errorf("b's status: %+v", st)
	}
	const admin = "*:*.unleash-insecure-admin-api-token"
	conn, err := pgx.Connect(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	insert := func() int64 {
		var id int64
		if err := conn.QueryRow(context.Background(), `INSERT INTO events (type, created_by, created_by_user_id, data, project, feature_name)
			VALUES ('feature-tagged', 'admin', -42, '{}', 'default', 'dark-mode') RETURNING id`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := insert()
	for _, base := range []string{baseA, baseB} {
		took := waitHTTP(t, fmt.Sprintf("%s/api/admin/search/events?id=IS:%d", base, first), http.StatusOK, admin, `"total":1`)
		t.Logf("event %d searchable at %s after %s", first, base, took.Round(time.Millisecond))
	}

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	killed := time.Now()
	second := insert()
	waitUntil(t, 45*time.Second, "the event at b after a was killed", func() bool {
		status, body := call(t, http.MethodGet, fmt.Sprintf("%s/api/admin/search/events?id=IS:%d", baseB, second), admin, "")
		return status == http.StatusOK && strings.Contains(string(body), `"total":1`)
	})
	took := time.Since(killed)
	if took > 30*time.Second {
		t.Errorf("b took over after %s, want within 30 s", took)
	}
	// b's status says so once the batch that wrote the event is applied.
	waitUntil(t, 10*time.Second, "b following after the takeover", func() bool {
		st := health(t, baseB)
		return st.Applying && st.State == follow.Following
	})
	t.Logf("b took over %s after a was killed", took.Round(time.Millisecond))
	wantSameEvents(t, src, db)
}

// wantSameEvents checks that the store at db holds exactly the events of
// the source at src: the same ids, each once, in order.
func wantSameEvents(t *testing.T, src, db string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id FROM events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	store, err := bunstore.Open(ctx, db, bunstore.WithoutMigrate())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var got []int64
	if err := store.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error { got = append(got, e.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the copy has %d events, the source %d: not the same ids", len(got), len(want))
	}
}

// TestFollowKilledMidBatch kills a server (SIGKILL) while it catches up
// with a backlog of Unleash events, in the middle of its batches, and
// starts it again: the copy ends with every event of the source once, in
// SQLite and in PostgreSQL. Most of its time is spent waiting for the
// killed server's lease to run out, so it runs in parallel with the other
// such tests, and each store in parallel with the other (each has its own
// source and store).
func TestFollowKilledMidBatch(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, target := range followDBs[1:3] {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			src := unleashfixture.Restore(t)
			db := target.url(t)
			p, base := followServer(t, bin, src, db)
			p.waitReady(t, base)
			waitUntil(t, 60*time.Second, "imported", func() bool { return health(t, base).Position >= 2297 })
			p.stop(t)
			// A backlog, written as Unleash writes events (ids drawn by the
			// column's default), in transactions of 100.
			conn, err := pgx.Connect(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			for range 300 {
				if _, err := conn.Exec(context.Background(), `INSERT INTO events (type, created_by, created_by_user_id, data, project, feature_name)
					SELECT 'feature-tagged', 'admin', -42, json_build_object('i', i), 'default', 'dark-mode' FROM generate_series(1, 100) i`); err != nil {
					t.Fatal(err)
				}
			}
			var newest int64
			if err := conn.QueryRow(context.Background(), `SELECT max(id) FROM events`).Scan(&newest); err != nil {
				t.Fatal(err)
			}
			p, base = followServer(t, bin, src, db)
			var at int64
			waitUntil(t, 60*time.Second, "catching up", func() bool { at = health(t, base).Position; return at > 2297 })
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-p.done
			if at >= newest {
				t.Fatalf("the backlog was applied (position %d of %d) before the kill: the test proves nothing", at, newest)
			}
			t.Logf("killed at position %d of %d", at, newest)
			// The killed server's lease lasts on: the next one takes over when it ends.
			p, base = followServer(t, bin, src, db)
			took := waitUntil(t, 90*time.Second, "caught up", func() bool { return health(t, base).Position >= newest })
			t.Logf("caught up %s after the restart", took.Round(time.Millisecond))
			p.stop(t)
			wantSameEvents(t, src, db)
		})
	}
}
