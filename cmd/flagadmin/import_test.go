package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// TestImportUnleash runs flagadmin import unleash on the fixture: into a
// SQLite file (then refused a second time), into a seed file that flagadmin
// seed loads, and as a dry run.
func TestImportUnleash(t *testing.T) {
	src := unleashfixture.ReadOnly(t)
	db := dbtest.SQLite(t)
	code, stdout, stderr := runCLI(t, nil, "import", "unleash", "--from", src, "--db", db)
	if code != 0 {
		t.Fatalf("import: exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"imported Unleash schema at migration 397", "events  2297      2297", "not importable:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout has no %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"read users: 13 rows", "events: 2297 in", "\nbuild index events_created ...\n", "\nbuild index events_created: ",
		"\nbuild the full-text index events_tokens ...\n", "\nbuild the full-text index events_tokens: ", "\nmerge the full-text index events_tokens ...\n",
		"\ncommit ...\ncommit: "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr has no %q:\n%s", want, stderr)
		}
	}
	code, _, stderr = runCLI(t, nil, "import", "unleash", "--from", src, "--db", db)
	if code != 1 || !strings.HasPrefix(stderr, "flagadmin: import refused: "+db+" is not empty: it holds 10 users, 1 group,") ||
		!strings.Contains(stderr, "give a new --db") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("second import: exit %d, stderr %q", code, stderr)
	}

	// Into a database "flagadmin serve" started on: it generated an admin
	// token. The refusal says so, and how to proceed.
	served := dbtest.SQLite(t)
	store, err := bunstore.Open(context.Background(), served)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := flagadmin.NewService(store).EnsureAdminToken(context.Background()); err != nil { // as serve's first start
		t.Fatal(err)
	}
	store.Close()
	code, _, stderr = runCLI(t, nil, "import", "unleash", "--from", src, "--db", served)
	want := "flagadmin: import refused: " + served + ` is not empty: it holds 1 token, 1 event (such as "flagadmin serve" leaves at its first start: ` +
		`the admin token it generates); an import goes into an empty database: give a new --db (for SQLite, a file that does not exist yet), ` +
		"import, then start flagadmin serve on it (Unleash's tokens work there)\n"
	if code != 1 || stderr != want {
		t.Errorf("import after serve: exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}

	seedFile := filepath.Join(t.TempDir(), "unleash-seed.json")
	if code, _, stderr := runCLI(t, nil, "import", "unleash", "--from", src, "--to-seed", seedFile); code != 0 {
		t.Fatalf("--to-seed: exit %d, %s", code, stderr)
	}
	if fi, err := os.Stat(seedFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("seed file: %v, mode %v; want 0600 (it holds secrets)", err, fi.Mode())
	}
	seeded := dbtest.SQLite(t)
	if code, stdout, stderr := runCLI(t, nil, "seed", "--db", seeded, seedFile); code != 0 {
		t.Fatalf("flagadmin seed of the imported seed: exit %d, %s %s", code, stdout, stderr)
	}
	store, err = bunstore.Open(context.Background(), seeded)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p, err := flagadmin.NewService(store).Authenticate(context.Background(), "user:cd8afd4ef3ef16915ff1709343f09fb60c065dd93a370ebf0f183376")
	if err != nil || p.User == nil || p.User.Email != "bob.editor@example.com" {
		t.Errorf("Bob's PAT after the seed round trip: %+v, %v", p, err)
	}

	empty := dbtest.SQLite(t)
	if code, stdout, _ := runCLI(t, nil, "import", "unleash", "--from", src, "--dry-run", "--db", empty); code != 0 || !strings.Contains(stdout, "into nowhere (dry run)") {
		t.Errorf("--dry-run: exit %d, %s", code, stdout)
	}
}

// TestImportUnleashRefused: a source that cannot be imported is one line on
// stderr, exit 1, and the target database is left as it was.
func TestImportUnleashRefused(t *testing.T) {
	old := unleashfixture.Restore(t)
	conn, err := pgx.Connect(context.Background(), old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `DELETE FROM migrations WHERE name > '/20230101'`); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"unreachable", []string{"--from", "postgres://nobody@127.0.0.1:1/unleash?sslmode=disable"}, "the Unleash database cannot be reached at postgres://nobody@127.0.0.1:1/unleash: "},
		{"not unleash", []string{"--from", dbtest.Postgres(t)}, "not an Unleash database: "},
		{"too old", []string{"--from", old}, "unsupported Unleash version: the schema of "},
		{"no source", nil, "--from is required"},
		{"into itself", []string{"--from", old, "--db", old}, "--db is the Unleash database itself"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db := "sqlite:" + filepath.Join(dir, "target.db")
			args := append([]string{"import", "unleash", "--db", db}, c.args...)
			code, stdout, stderr := runCLI(t, nil, args...)
			if code != 1 || !strings.HasPrefix(stderr, "flagadmin: ") || !strings.Contains(stderr, c.says) || strings.Count(stderr, "\n") != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and one line saying %q", code, stdout, stderr, c.says)
			}
			if _, err := os.Stat(filepath.Join(dir, "target.db")); !os.IsNotExist(err) {
				t.Errorf("the target database was created: %v", err)
			}
		})
	}
}

// cancelOn is a stderr that cancels the command's context when what has
// been written contains trigger: the progress lines tell where the import
// is (its writes happen on the import's goroutine, before the next step).
type cancelOn struct {
	mu      sync.Mutex
	buf     strings.Builder
	trigger string
	cancel  context.CancelFunc
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.trigger) {
		w.cancel()
	}
	return len(p), nil
}

func (w *cancelOn) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestImportInterrupted: Ctrl-C (a cancelled context) at any point of an
// import, while connecting to Unleash, while migrating the target, while
// reading, while writing, while building the indexes, ends with the one
// line "import interrupted: nothing was written", and the target holds
// nothing.
func TestImportInterrupted(t *testing.T) {
	const want = "flagadmin: import interrupted: nothing was written\n"
	src := unleashfixture.Restore(t)
	check := func(t *testing.T, ctx context.Context, stderr *cancelOn, db string, args ...string) {
		t.Helper()
		var stdout strings.Builder
		code := run(ctx, append([]string{"import", "unleash", "--db", db}, args...), func(string) string { return "" }, &stdout, stderr)
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if last := lines[len(lines)-1] + "\n"; code != 1 || last != want || strings.Count(stderr.String(), "flagadmin: ") != 1 {
			t.Errorf("exit %d, stderr:\n%s\nwant exit 1, ending with %q", code, stderr, want)
		}
		if stdout.Len() > 0 {
			t.Errorf("stdout %q, want nothing", stdout.String())
		}
	}
	empty := func(t *testing.T, db string) {
		t.Helper()
		store, err := bunstore.Open(context.Background(), db, bunstore.WithoutMigrate())
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		have, err := store.Contents(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for k, n := range have {
			if n != 0 {
				t.Errorf("the target holds %d %s after the interruption", n, k)
			}
		}
	}

	t.Run("connect", func(t *testing.T) {
		// An Unleash "server" that accepts the connection and never answers.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			cancel()
			io.Copy(io.Discard, conn) // until the client hangs up
			conn.Close()
		}()
		dir := t.TempDir()
		check(t, ctx, &cancelOn{trigger: "\x00", cancel: cancel}, "sqlite:"+filepath.Join(dir, "x.db"),
			"--from", "postgres://u@"+ln.Addr().String()+"/unleash?sslmode=disable")
		if _, err := os.Stat(filepath.Join(dir, "x.db")); !os.IsNotExist(err) {
			t.Errorf("the target database was created: %v", err)
		}
	})

	t.Run("migrate", func(t *testing.T) {
		// The target's migration waits for its lock, which the test holds.
		db := dbtest.Postgres(t)
		conn, err := pgx.Connect(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var key int64
		if err := conn.QueryRow(context.Background(), "SELECT hashtext('flagadmin.migrate:' || current_schema())").Scan(&key); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(context.Background(), "SELECT pg_advisory_lock($1)", key); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for ctx.Err() == nil {
				var waiting bool
				err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
					AND objid::bigint = $1::bigint & 4294967295 AND classid::bigint = ($1::bigint >> 32) & 4294967295)`, key).Scan(&waiting)
				if err == nil && waiting {
					cancel()
					return
				}
				time.Sleep(10 * time.Millisecond) // polling the server's lock table
			}
		}()
		check(t, ctx, &cancelOn{trigger: "\x00", cancel: cancel}, db, "--from", src)
	})

	for _, point := range []struct{ name, trigger string }{
		{"read", "read users:"},
		{"write", "write users, groups, projects, flags, tokens"},
		{"index", "build index "},
	} {
		t.Run(point.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			db := dbtest.SQLite(t)
			stderr := &cancelOn{trigger: point.trigger, cancel: cancel}
			check(t, ctx, stderr, db, "--from", src)
			if !strings.Contains(stderr.String(), point.trigger) {
				t.Errorf("the import never said %q", point.trigger)
			}
			empty(t, db)
		})
	}
}

// TestImportProgressPostgres: into PostgreSQL too, the import tells each
// index it builds, and the commit.
func TestImportProgressPostgres(t *testing.T) {
	src := unleashfixture.ReadOnly(t)
	code, _, stderr := runCLI(t, nil, "import", "unleash", "--from", src, "--db", dbtest.Postgres(t))
	if code != 0 {
		t.Fatalf("import: exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"\nbuild index events_created ...\n", "\nbuild index events_created: ", "\ncommit ...\ncommit: "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr has no %q:\n%s", want, stderr)
		}
	}
}
