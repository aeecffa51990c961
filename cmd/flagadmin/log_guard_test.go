package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/adapters/tlog"
	logleaf "github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// The log against someone who can write the database but holds no key:
// the server keeps the last checkpoint it signed in a state file and
// refuses to sign a log that does not extend it, and it checks every
// proof before serving it.

// restartableApp starts the server of cfg and returns its base URL, its
// stderr and a function that stops it (also called at the end of the test).
func restartableApp(t *testing.T, cfg Config) (string, *syncbuffer.Buffer, func()) {
	t.Helper()
	stderr := &syncbuffer.Buffer{}
	var l *Listener
	app := fxtest.New(t, serveOptions(cfg, stderr), fx.Populate(&l))
	app.RequireStart()
	var once sync.Once
	stop := func() { once.Do(app.RequireStop) }
	t.Cleanup(stop)
	return "http://" + l.Addr().String(), stderr, stop
}

// testLogInterval is the log upkeep's interval of the servers of tests
// that wait for a checkpoint: short, so that they wait little.
const testLogInterval = 50 * time.Millisecond

// signingConfig is the configuration of a server on dbURL signing with
// the key file signing and keeping its state in state, its log kept up
// every testLogInterval.
func signingConfig(t *testing.T, dbURL, signing, state string) Config {
	t.Helper()
	cfg := memoryConfig()
	cfg.DB = dbURL
	cfg.LogInterval = testLogInterval
	var err error
	if cfg.LogKey, cfg.LogSignerKey, err = loadLogKey(signing); err != nil {
		t.Fatal(err)
	}
	cfg.LogState = state
	return cfg
}

// waitCheckpoint waits until the server at base serves a checkpoint of size.
func waitCheckpoint(t *testing.T, base string, size int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("a checkpoint of %d events", size), func() bool {
		status, body := call(t, http.MethodGet, base+"/api/admin/log/checkpoint", demoAdmin, "")
		return status == http.StatusOK && strings.Split(string(body), "\n")[1] == fmt.Sprint(size)
	})
}

// execArgs runs a statement with ? placeholders ($n on PostgreSQL).
func execArgs(t *testing.T, db *sql.DB, dbURL, stmt string, args ...any) {
	t.Helper()
	if strings.HasPrefix(dbURL, "postgres") {
		for i := 1; strings.Contains(stmt, "?"); i++ {
			stmt = strings.Replace(stmt, "?", fmt.Sprintf("$%d", i), 1)
		}
	}
	if _, err := db.Exec(stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// wantRefused checks that the server at base refuses to sign, saying
// problem: in /health, its metric, its checkpoint's answer, its log (once),
// and that log verify --url fails naming it.
func wantRefused(t *testing.T, base string, stderr *syncbuffer.Buffer, verifier, problem string) {
	t.Helper()
	var health struct {
		Log struct{ Signing, Problem string }
	}
	waitFor(t, "the signer to refuse", func() bool {
		_, body := call(t, http.MethodGet, base+"/health", "", "")
		return json.Unmarshal(body, &health) == nil && health.Log.Signing == "refused"
	})
	if !strings.Contains(health.Log.Problem, problem) {
		t.Errorf("/health: problem %q, want %q", health.Log.Problem, problem)
	}
	_, metrics := call(t, http.MethodGet, base+"/metrics", "", "")
	if !strings.Contains(string(metrics), "flagadmin_log_signing_refused 1") {
		t.Errorf("metrics: no flagadmin_log_signing_refused 1")
	}
	status, body := call(t, http.MethodGet, base+"/api/admin/log/checkpoint", demoAdmin, "")
	if status != http.StatusConflict || !strings.Contains(string(body), "refuses to sign") || !strings.Contains(string(body), problem) {
		t.Errorf("checkpoint: %d %s; want 409 naming %q", status, body, problem)
	}
	code, stdout, errOut := runCLI(t, nil, "log", "verify", "--url", base, "--token", demoAdmin, "--key", verifier)
	if code != 1 || !strings.Contains(errOut, problem) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("log verify --url: exit %d, stderr %q; want 1 and one line naming %q\nstdout %s", code, errOut, problem, stdout)
	}
	// The line is logged once the round that refused ends, which /health
	// may show first.
	waitFor(t, "the refusal logged", func() bool { return strings.Contains(stderr.String(), "log: refusing to sign checkpoints") })
	if n := strings.Count(stderr.String(), "log: refusing to sign checkpoints"); n != 1 {
		t.Errorf("the server logged its refusal %d times, want once:\n%s", n, stderr)
	}
}

func TestLogSignerRefusesForgedHistory(t *testing.T) {
	signing, verifier := keyFiles(t)
	for _, engine := range sqlEngines {
		t.Run(engine.name, func(t *testing.T) {
			ctx := context.Background()
			dbURL := engine.url(t)
			store, ids := sqlLogWorld(t, dbURL, 50)
			state := filepath.Join(t.TempDir(), "log.key.checkpoint")
			base, _, stop := restartableApp(t, signingConfig(t, dbURL, signing, state))
			waitCheckpoint(t, base, 50)
			stop()
			if b, err := os.ReadFile(state); err != nil || !strings.HasPrefix(string(b), "flagadmin.test/log\n50\n") {
				t.Fatalf("state file: %q (%v), want the checkpoint of 50 events", b, err)
			}
			// The attacker rewrites event 5, its leaf and every interior
			// hash, so that the tree is consistent, and deletes the
			// checkpoints that sign the old one.
			db := dbtest.Raw(t, dbURL)
			var forged flagadmin.Event
			if err := store.ExportEvents(ctx, flagadmin.EventQuery{IDs: []int64{ids[5]}}, 0, func(e flagadmin.Event) error { forged = e; return nil }); err != nil {
				t.Fatal(err)
			}
			forged.CreatedBy = "mallory"
			leaves, err := store.LogLeaves(ctx, 5, 6)
			if err != nil || len(leaves) != 1 {
				t.Fatalf("leaf 5: %v", err)
			}
			forged.Salt = leaves[0].Salt
			leaf, err := logleaf.LeafHash(forged)
			if err != nil {
				t.Fatal(err)
			}
			content, _ := logleaf.ContentCommitment(forged)
			execArgs(t, db, dbURL, "UPDATE events SET created_by = ? WHERE id = ?", "mallory", ids[5])
			execArgs(t, db, dbURL, "UPDATE log_leaves SET hash = ?, content = ? WHERE idx = ?", leaf[:], content[:], 5)
			execSQL(t, db, "DELETE FROM log_hashes", "DELETE FROM log_checkpoints")
			if err := tlog.NewProver(store).BuildTiles(ctx); err != nil {
				t.Fatal(err)
			}

			base, stderr, _ := restartableApp(t, signingConfig(t, dbURL, signing, state))
			wantRefused(t, base, stderr, verifier, "forged history: the first 50 events no longer hash to the root of the checkpoint this server signed last")
			var n int
			if err := db.QueryRow("SELECT COUNT(*) FROM log_checkpoints").Scan(&n); err != nil || n != 0 {
				t.Errorf("checkpoints in the database: %d (%v), want none: the forged tree must not be signed", n, err)
			}
		})
	}
}

func TestLogSignerRefusesAnOlderCopyOfTheFile(t *testing.T) {
	signing, verifier := keyFiles(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "flagadmin.db")
	dbURL := "sqlite:" + file
	store, _ := sqlLogWorld(t, dbURL, 30)
	state := filepath.Join(dir, "log.key.checkpoint")
	base, _, stop := restartableApp(t, signingConfig(t, dbURL, signing, state))
	waitCheckpoint(t, base, 30)
	stop()
	backup := filepath.Join(dir, "backup.db")
	raw, err := sql.Open(sqliteshim.ShimName, file)
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, raw, fmt.Sprintf("VACUUM INTO '%s'", backup)) // the copy at 30 events
	raw.Close()
	writeAwkward(t, store, 30, 40)
	base, _, stop = restartableApp(t, signingConfig(t, dbURL, signing, state))
	waitCheckpoint(t, base, 40)
	stop()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	// The older copy put back in place of the file.
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(file + suffix)
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// On its own, the copy is a consistent log: log verify can only say
	// that it cannot tell.
	code, stdout, _ := runCLI(t, nil, "log", "verify", "--db", dbURL, "--key", verifier)
	if code != 0 || !strings.Contains(stdout, "NOTE: without --trusted, a rollback to an older copy of the database cannot be detected") {
		t.Errorf("log verify of the copy without --trusted: exit %d\n%s", code, stdout)
	}
	base, stderr, _ := restartableApp(t, signingConfig(t, dbURL, signing, state))
	wantRefused(t, base, stderr, verifier, "rollback: the log has 30 events, fewer than the 40 of the checkpoint this server signed last")
	wantVerify(t, "--trusted state", "fewer than the 40 of the trusted checkpoint", "--db", dbURL, "--key", verifier, "--trusted", state)
}

func TestLogStateFileCreatedAndFlags(t *testing.T) {
	signing, _ := keyFiles(t)
	dbURL := dbtest.SQLite(t)
	sqlLogWorld(t, dbURL, 20)
	// The first start without a state file: the server says it creates it.
	base, stderr, stop := restartableApp(t, signingConfig(t, dbURL, signing, signing+tlog.StateSuffix))
	waitCheckpoint(t, base, 20)
	stop()
	if !strings.Contains(stderr.String(), "log: the checkpoint state file does not exist; the server creates it") {
		t.Errorf("no word of the state file created:\n%s", stderr)
	}
	if _, err := os.Stat(signing + tlog.StateSuffix); err != nil {
		t.Errorf("state file: %v", err)
	}
	// Lost: started again from the database's checkpoint, whose signature verifies.
	os.Remove(signing + tlog.StateSuffix)
	base, stderr, stop = restartableApp(t, signingConfig(t, dbURL, signing, signing+tlog.StateSuffix))
	waitFor(t, "the health", func() bool {
		_, body := call(t, http.MethodGet, base+"/health", "", "")
		return strings.Contains(string(body), `"log":{"signing":"signing"}`)
	})
	stop()
	if !strings.Contains(stderr.String(), "log: created the checkpoint state file from the database's newest checkpoint") ||
		!strings.Contains(stderr.String(), "size=20") {
		t.Errorf("no word of the state file created from the database:\n%s", stderr)
	}
	// The default: beside the key.
	cfg, err := parseServe(t, nil, "--log-key", signing)
	if err != nil || cfg.LogState != signing+tlog.StateSuffix {
		t.Errorf("default --log-state: %q (%v), want %q", cfg.LogState, err, signing+tlog.StateSuffix)
	}
	// A database in memory starts empty in every process: no state
	// survives it (the next process would refuse to sign its new log).
	for _, db := range []string{"memory:", "sqlite::memory:"} {
		if cfg, err := parseServe(t, nil, "--log-key", signing, "--db", db); err != nil || cfg.LogState != "" {
			t.Errorf("--log-state on %s: %q (%v), want none", db, cfg.LogState, err)
		}
	}
	notCheckpoint := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(notCheckpoint, []byte("junk\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-state", "x.checkpoint"}, "--log-state: needs --log-key"},
		{[]string{"--log-key", signing, "--db", "memory:", "--log-state", "x.checkpoint"}, "--log-state: --db memory: starts empty in every process"},
		{[]string{"--log-key", signing, "--db", "sqlite::memory:", "--log-state", "x.checkpoint"}, "--log-state: --db sqlite::memory: starts empty in every process"},
		{[]string{"--log-key", signing, "--log-state", t.TempDir()}, "--log-state: " + os.TempDir()},
		{[]string{"--log-key", signing, "--log-state", "/nonexistent/dir/x.checkpoint"}, "--log-state: the directory of /nonexistent/dir/x.checkpoint does not exist"},
	} {
		if _, err := parseServe(t, nil, c.args...); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v, want one line with %q", c.args, err, c.want)
		}
	}
	code, _, errOut := runCLI(t, nil, "serve", "--db", dbURL, "--addr", "127.0.0.1:0", "--log-key", signing, "--log-state", notCheckpoint)
	if code != 1 || !strings.Contains(errOut, "--log-state: the checkpoint state file "+notCheckpoint+": the checkpoint does not verify") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("serve with a state file that is no checkpoint: exit %d, %q", code, errOut)
	}
}

// proofRoots are the roots of every tree size of a log, from its leaves.
func proofRoots(t *testing.T, store vlog.Store, size int64) map[int64][]byte {
	t.Helper()
	runs, err := store.LogHashes(context.Background(), []vlog.HashRange{{Level: 0, Start: 0, End: size}})
	if err != nil {
		t.Fatal(err)
	}
	rf := &compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	r := rf.NewEmptyRange(0)
	roots := map[int64][]byte{}
	for i, h := range runs[0] {
		if err := r.Append(h[:], nil); err != nil {
			t.Fatal(err)
		}
		root, err := r.GetRootHash(nil)
		if err != nil {
			t.Fatal(err)
		}
		roots[int64(i)+1] = root
	}
	return roots
}

func TestLogProofsSurviveACorruptStoredHash(t *testing.T) {
	signing, verifier := keyFiles(t)
	for _, engine := range sqlEngines {
		t.Run(engine.name, func(t *testing.T) {
			dbURL := engine.url(t)
			store, ids := sqlLogWorld(t, dbURL, 300)
			base, stderr, _ := restartableApp(t, signingConfig(t, dbURL, signing, filepath.Join(t.TempDir(), "state")))
			waitCheckpoint(t, base, 300)
			waitFor(t, "the stored hashes", func() bool { n, _ := store.LogHashCount(context.Background(), 8); return n == 1 })
			wrong := make([]byte, 32)
			rand.Read(wrong)
			execArgs(t, dbtest.Raw(t, dbURL), dbURL, "UPDATE log_hashes SET hash = ? WHERE level = 4 AND idx = 2", wrong)

			roots := proofRoots(t, store, 300)
			var failed []string
			for _, size := range []int64{300, 200, 47} {
				for i, id := range ids[:size] {
					var p struct {
						LeafHash []byte
						Hashes   [][]byte
					}
					status, body := call(t, http.MethodGet, fmt.Sprintf("%s/api/admin/log/proof?id=%d&size=%d", base, id, size), demoAdmin, "")
					if status != http.StatusOK || json.Unmarshal(body, &p) != nil {
						t.Fatalf("proof of %d in %d: %d %s", id, size, status, body)
					}
					if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(i), uint64(size), p.LeafHash, p.Hashes, roots[size]); err != nil {
						failed = append(failed, fmt.Sprintf("inclusion of leaf %d in %d", i, size))
					}
				}
			}
			for _, c := range [][2]int64{{1, 300}, {17, 300}, {40, 300}, {47, 300}, {100, 300}, {200, 300}, {33, 200}, {255, 256}} {
				var p struct{ Hashes [][]byte }
				status, body := call(t, http.MethodGet, fmt.Sprintf("%s/api/admin/log/consistency?from=%d&to=%d", base, c[0], c[1]), demoAdmin, "")
				if status != http.StatusOK || json.Unmarshal(body, &p) != nil {
					t.Fatalf("consistency %v: %d %s", c, status, body)
				}
				if err := proof.VerifyConsistency(rfc6962.DefaultHasher, uint64(c[0]), uint64(c[1]), p.Hashes, roots[c[0]], roots[c[1]]); err != nil {
					failed = append(failed, fmt.Sprintf("consistency %d to %d", c[0], c[1]))
				}
			}
			if len(failed) > 0 {
				t.Errorf("%d proofs served do not verify: %s", len(failed), strings.Join(failed, ", "))
			}
			_, metrics := call(t, http.MethodGet, base+"/metrics", "", "")
			if !strings.Contains(string(metrics), "flagadmin_log_hashes_repaired_total 1") {
				t.Errorf("metrics: no flagadmin_log_hashes_repaired_total 1")
			}
			if !strings.Contains(stderr.String(), "log: a stored hash of the tree disagrees with its leaves") || !strings.Contains(stderr.String(), "level=4 index=2") {
				t.Errorf("the server does not report the repaired hash:\n%s", stderr)
			}
			// The audit of the database names it; the one over HTTP reads no stored hash.
			wantVerify(t, "--db", "the stored hash of level 4, index 2 (leaves 32 to 47) is not the hash of its leaves",
				"--db", dbURL, "--key", verifier)
			wantVerify(t, "--url", "", "--url", base, "--token", demoAdmin, "--key", verifier)
		})
	}
}
