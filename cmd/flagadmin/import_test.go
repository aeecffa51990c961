package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	src := unleashfixture.Restore(t)
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
	for _, want := range []string{"read users: 13 rows", "events: 2297 in"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr has no %q:\n%s", want, stderr)
		}
	}
	code, _, stderr = runCLI(t, nil, "import", "unleash", "--from", src, "--db", db)
	if code != 1 || !strings.HasPrefix(stderr, "flagadmin: import refused: the target store is not empty: it holds 10 users") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("second import: exit %d, stderr %q", code, stderr)
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
	store, err := bunstore.Open(context.Background(), seeded)
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
