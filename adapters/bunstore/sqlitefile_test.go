package bunstore_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// TestOpenSQLiteFileProblems: a SQLite database Open cannot open because of
// the file system is an error that says what is wrong and where, and is
// still of kind ErrUnavailable.
func TestOpenSQLiteFileProblems(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ url, want string }{
		{"sqlite:" + dir + "/nope/x.db", "bunstore: sqlite:" + dir + "/nope/x.db: directory " + dir + "/nope does not exist"},
		{"sqlite://" + dir + "/nope/x.db", "bunstore: sqlite://" + dir + "/nope/x.db: directory " + dir + "/nope does not exist"},
		{"sqlite:" + file + "/x.db", "bunstore: sqlite:" + file + "/x.db: " + file + " is not a directory"},
		{"sqlite:" + dir, "bunstore: sqlite:" + dir + ": " + dir + " is a directory, not a database file"},
	} {
		_, err := bunstore.Open(context.Background(), c.url)
		if err == nil || err.Error() != c.want || !errors.Is(err, flagadmin.ErrUnavailable) {
			t.Errorf("Open(%s): %v; want %q, of kind ErrUnavailable", c.url, err, c.want)
		}
	}
}

// TestOpenSQLiteReadOnly: without write permission, a database that cannot
// be created, or a database in a directory where SQLite cannot create its
// -wal and -shm files, is an error saying so; a read-only database file in
// a writable directory opens, its reads work and its writes fail with
// ErrUnavailable, changing nothing. Run as root, the test runs its checks
// in a copy of the test binary as user nobody (65534), since root may write
// anywhere.
func TestOpenSQLiteReadOnly(t *testing.T) {
	const childEnv = "BUNSTORE_TEST_READONLY_DIR"
	ctx := context.Background()
	if dir := os.Getenv(childEnv); dir != "" {
		checkReadOnly(t, dir)
		return
	}
	dir, err := os.MkdirTemp("", "bunstore-readonly-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error { // so RemoveAll may enter them
			if err == nil && info.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(dir)
	})
	for _, sub := range []string{"ro", "rw"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		s, err := bunstore.Open(ctx, "sqlite:"+filepath.Join(dir, sub, "x.db"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := flagadmin.NewService(s).CreateAPIToken(ctx, flagadmin.System, flagadmin.NewAPIToken{Name: "first", Type: flagadmin.TokenAdmin}); err != nil {
			t.Fatal(err)
		}
		s.Close() // checkpoints the WAL and removes -wal and -shm
	}
	chmod := func(path string, mode os.FileMode) {
		t.Helper()
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	chmod(dir, 0o755)
	chmod(filepath.Join(dir, "ro", "x.db"), 0o444)
	chmod(filepath.Join(dir, "ro"), 0o555)
	chmod(filepath.Join(dir, "rw", "x.db"), 0o444)
	chmod(filepath.Join(dir, "rw"), 0o777)
	if os.Getuid() != 0 {
		checkReadOnly(t, dir)
		return
	}
	// A copy of the test binary that nobody may run: the build's own
	// directory is root's alone.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test.bin")
	copyFile(t, exe, bin, 0o755)
	cmd := exec.Command(bin, "-test.run=^TestOpenSQLiteReadOnly$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestOpenSQLiteReadOnly") {
		t.Errorf("the checks as user nobody: %v\n%s", err, out)
	}
}

// checkReadOnly runs the checks of TestOpenSQLiteReadOnly in dir, without
// write permission on dir/ro and dir/rw/x.db.
func checkReadOnly(t *testing.T, dir string) {
	ctx := context.Background()
	if f, err := os.Create(filepath.Join(dir, "ro", "probe")); err == nil {
		f.Close()
		t.Skip("this user may write where it has no permission (root, or a file system that ignores modes)")
	}
	ro, rw := filepath.Join(dir, "ro"), filepath.Join(dir, "rw")
	for _, c := range []struct{ url, want string }{
		{"sqlite:" + ro + "/new.db", "bunstore: sqlite:" + ro + "/new.db: directory " + ro + " is not writable, so the database file cannot be created there"},
		{"sqlite:" + ro + "/x.db", "bunstore: sqlite:" + ro + "/x.db: directory " + ro + " is not writable: SQLite needs to create the database's -wal and -shm files beside it"},
	} {
		_, err := bunstore.Open(ctx, c.url)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, flagadmin.ErrUnavailable) {
			t.Errorf("Open(%s): %v; want %q..., of kind ErrUnavailable", c.url, err, c.want)
		}
	}
	// A read-only database file in a writable directory: reads work,
	// writes are ErrUnavailable and change nothing.
	s, err := bunstore.Open(ctx, "sqlite:"+rw+"/x.db")
	if err != nil {
		t.Fatalf("Open of a read-only database file: %v", err)
	}
	defer s.Close()
	svc := flagadmin.NewService(s)
	if _, _, err := svc.CreateAPIToken(ctx, flagadmin.System, flagadmin.NewAPIToken{Name: "second", Type: flagadmin.TokenAdmin}); !errors.Is(err, flagadmin.ErrUnavailable) {
		t.Errorf("a write to a read-only database: %v, want ErrUnavailable", err)
	}
	tokens, err := svc.ListAPITokens(ctx, flagadmin.System)
	if err != nil || len(tokens) != 1 || tokens[0].Name != "first" {
		t.Errorf("a read of a read-only database: %v, %v; want the one token first", tokens, err)
	}
}

// copyFile copies src to dst with mode.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
