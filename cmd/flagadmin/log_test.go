package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
	"github.com/flagadmin/flagadmin/internal/dbtest"
)

// keyFiles writes a key pair with log keygen and returns the two files.
func keyFiles(t *testing.T) (signing, verifier string) {
	t.Helper()
	signing = filepath.Join(t.TempDir(), "log.key")
	code, stdout, stderr := runCLI(t, nil, "log", "keygen", "--out", signing, "--origin", "flagadmin.test/log")
	if code != 0 {
		t.Fatalf("log keygen: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "--log-key "+signing) || !strings.Contains(stdout, signing+".pub") {
		t.Errorf("log keygen output: %q", stdout)
	}
	return signing, signing + ".pub"
}

func TestLogKeygen(t *testing.T) {
	signing, verifier := keyFiles(t)
	for _, f := range []struct {
		path string
		mode fs.FileMode
	}{{signing, 0o600}, {verifier, 0o644}} {
		info, err := os.Stat(f.path)
		if err != nil || info.Mode().Perm() != f.mode {
			t.Errorf("%s: mode %v (%v), want %v", f.path, info.Mode().Perm(), err, f.mode)
		}
	}
	b, _ := os.ReadFile(signing)
	if _, err := tlog.ParseSignerKey(string(b)); err != nil || !strings.Contains(string(b), "+flagadmin.test/log+") {
		t.Errorf("signing key %q: %v", b, err)
	}
	b, _ = os.ReadFile(verifier)
	if _, err := tlog.ParseVerifierKey(string(b)); err != nil {
		t.Errorf("verifier key %q: %v", b, err)
	}
	before, _ := os.ReadFile(signing)
	code, _, stderr := runCLI(t, nil, "log", "keygen", "--out", signing)
	if after, _ := os.ReadFile(signing); code != 1 || !strings.Contains(stderr, "exists; it is not overwritten") || string(after) != string(before) {
		t.Errorf("keygen over an existing key: exit %d, %q; want 1 and the key kept", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"log", "keygen"}, "needs --out FILE"},
		{[]string{"log", "keygen", "--out", filepath.Join(t.TempDir(), "k"), "--origin", "a b"}, "--origin: the origin \"a b\" has white space"},
		{[]string{"log", "frobnicate"}, `unknown subcommand "frobnicate" of flagadmin log`},
		{[]string{"log", "verify"}, "needs --key FILE.pub"},
		{[]string{"log", "verify", "--key", signing, "--token", "x"}, "this is the signing key, which must stay secret"},
		{[]string{"log", "verify", "--key", verifier, "--db", "memory:"}, "memory: starts empty in every process"},
		{[]string{"log", "verify", "--key", verifier, "--db", "sqlite:x.db", "--url", "http://x"}, "a server (--url, --token) or a database (--db), not both"},
		{[]string{"log", "hold", "--db", "sqlite:" + filepath.Join(t.TempDir(), "h.db")}, "needs --project P"},
	} {
		code, _, stderr := runCLI(t, nil, c.args...)
		if code != 1 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 1 and one line with %q", c.args, code, stderr, c.want)
		}
	}
	code, stdout, _ := runCLI(t, nil, "log", "-h")
	if code != 0 || !strings.Contains(stdout, "flagadmin log verify") || !strings.Contains(stdout, "legal hold") {
		t.Errorf("log -h: exit %d: %s", code, stdout)
	}
}

func TestConfigLogSettings(t *testing.T) {
	signing, verifier := keyFiles(t)
	cfg, err := parseServe(t, map[string]string{envLogKey: signing, envRetention: "90d"})
	if err != nil || cfg.LogKey != signing || !strings.HasPrefix(cfg.LogSignerKey, "PRIVATE+KEY+") || cfg.Retention != 90*24*time.Hour {
		t.Fatalf("from the environment: got %q, %v (%v)", cfg.LogKey, cfg.Retention, err)
	}
	cfg, err = parseServe(t, nil, "--retention", "36h")
	if err != nil || cfg.Retention != 36*time.Hour || cfg.LogKey != "" {
		t.Errorf("--retention 36h: got %v (%v)", cfg.Retention, err)
	}
	for raw, want := range map[string]time.Duration{
		"0": 0, "0d": 0, "0h": 0, "0s": 0, "": 0, " 0d ": 0,
		"1h": time.Hour, "90m": 90 * time.Minute, "1d": 24 * time.Hour, "90d": 90 * 24 * time.Hour, "2160h": 2160 * time.Hour,
	} {
		if cfg, err := parseServe(t, nil, "--retention", raw); err != nil || cfg.Retention != want {
			t.Errorf("--retention %q: got %v (%v), want %v", raw, cfg.Retention, err, want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--retention", "ten days"}, `--retention: "ten days" is not a retention`},
		{[]string{"--retention", "-5h"}, "--retention"},
		{[]string{"--retention", "-1d"}, `--retention: "-1d" is not a retention`},
		{[]string{"--retention", "1ns"}, `--retention: "1ns" is shorter than the shortest retention, 1h`},
		{[]string{"--retention", "59m"}, `--retention: "59m" is shorter than the shortest retention, 1h`},
		{[]string{"--log-key", filepath.Join(t.TempDir(), "none")}, "--log-key: cannot read the signing key"},
		{[]string{"--log-key", verifier}, "not a signing key"},
	} {
		if _, err := parseServe(t, nil, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.args, err, c.want)
		}
	}
}

// waitFor polls cond every 20 ms until it holds, for at most 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const demoAdmin = "*:*.demo-admin-token"

func TestServeSignsCheckpointsAndVerifies(t *testing.T) {
	signing, verifier := keyFiles(t)
	cfg := memoryConfig()
	cfg.Demo = true
	cfg.LogKey, cfg.LogSignerKey, _ = loadLogKey(signing)
	base, stderr := startApp(t, cfg)
	var note []byte
	waitFor(t, "a checkpoint", func() bool {
		status, body := call(t, http.MethodGet, base+"/api/admin/log/checkpoint", "user:demo-vic-token", "")
		note = body
		return status == http.StatusOK
	})
	b, _ := os.ReadFile(verifier)
	v, _ := tlog.ParseVerifierKey(string(b))
	cp, err := tlog.OpenCheckpoint(note, v)
	if err != nil || cp.Size != 44 {
		t.Fatalf("checkpoint: %d events (%v), want the demo world's 44", cp.Size, err)
	}
	if !strings.Contains(stderr.String(), "log: signing checkpoints") {
		t.Errorf("the log does not say it signs:\n%s", stderr)
	}
	saved := filepath.Join(t.TempDir(), "checkpoint")
	code, stdout, errOut := runCLI(t, nil, "log", "verify", "--url", base, "--token", demoAdmin, "--key", verifier, "--save", saved)
	if code != 0 || !strings.Contains(stdout, "OK: 44 events and 44 leaves checked") || !strings.Contains(stdout, "checkpoint: flagadmin.test/log, 44 events") ||
		!strings.Contains(errOut, "checked 44 of 44 leaves") {
		t.Fatalf("log verify: exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
	}
	// A new event: a new checkpoint within 10 s, consistent with the saved one.
	status, body := call(t, http.MethodPost, base+"/api/admin/projects/default/features/dark-mode/lifecycle/complete", demoAdmin, `{"status":"kept"}`)
	if status != http.StatusOK {
		t.Fatalf("complete: %d %s", status, body)
	}
	start := time.Now()
	waitFor(t, "a checkpoint of 45 events", func() bool {
		_, body := call(t, http.MethodGet, base+"/api/admin/log/checkpoint", demoAdmin, "")
		cp, err := tlog.OpenCheckpoint(body, v)
		return err == nil && cp.Size == 45
	})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the checkpoint of the new event took %v, want at most 10 s", took)
	}
	code, stdout, errOut = runCLI(t, map[string]string{envURL: base, envToken: demoAdmin}, "log", "verify", "--key", verifier, "--trusted", saved)
	if code != 0 || !strings.Contains(stdout, "and the root of the 44 events of the trusted checkpoint") {
		t.Errorf("log verify --trusted: exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
	}
	// A token that may not read the leaves.
	code, _, errOut = runCLI(t, nil, "log", "verify", "--url", base, "--token", "user:demo-vic-token", "--key", verifier)
	if code != 1 || !strings.Contains(errOut, "needs an admin token or a root Admin's personal token") {
		t.Errorf("log verify as a viewer: exit %d, %q", code, errOut)
	}
	status, metrics := call(t, http.MethodGet, base+"/metrics", "", "")
	for _, m := range []string{"flagadmin_log_checkpoint_age_seconds ", "flagadmin_events_pruned_total 0", "flagadmin_log_checkpoints_signed_total "} {
		if status != http.StatusOK || !strings.Contains(string(metrics), m) {
			t.Errorf("metrics: no %q", m)
		}
	}
}

func TestServeRetention(t *testing.T) {
	signing, verifier := keyFiles(t)
	for _, db := range []struct {
		name string
		url  func(testing.TB) string
	}{{"memory", func(testing.TB) string { return memoryURL }}, {"SQLite", dbtest.SQLite}, {"Postgres", dbtest.Postgres}} {
		t.Run(db.name, func(t *testing.T) { serveRetention(t, db.url(t), signing, verifier) })
	}
}

// serveRetention serves the demo world on dbURL with a retention every
// demo event is older than, and checks that they are pruned and that the
// log verifies, over HTTP and (on a database) directly.
func serveRetention(t *testing.T, dbURL, signing, verifier string) {
	cfg := memoryConfig()
	cfg.DB = dbURL
	cfg.Demo = true
	cfg.LogKey, cfg.LogSignerKey, _ = loadLogKey(signing)
	cfg.Retention = time.Hour // every demo event is older
	base, stderr := startApp(t, cfg)
	waitFor(t, "the events pruned", func() bool {
		_, body := call(t, http.MethodGet, base+"/metrics", "", "")
		return strings.Contains(string(body), "flagadmin_events_pruned_total 44")
	})
	// What is left are retention's own events: the rule, recorded at
	// start, and the pruning's, which account for every event it removed.
	wantRetentionEvents(t, base, 1)
	var page struct {
		Events []struct {
			Data struct{ Count int } `json:"data"`
		} `json:"events"`
		Total int `json:"total"`
	}
	_, body := call(t, http.MethodGet, base+"/api/admin/search/events", demoAdmin, "")
	_, pruned := call(t, http.MethodGet, base+"/api/admin/search/events?type=IS:events-pruned", demoAdmin, "")
	if err := json.Unmarshal(pruned, &page); err != nil || page.Total == 0 {
		t.Fatalf("events-pruned events: %v %s", err, pruned)
	}
	n := 0
	for _, e := range page.Events {
		n += e.Data.Count
	}
	if n != 44 || !strings.Contains(string(body), fmt.Sprintf(`"total":%d`, 1+page.Total)) {
		t.Errorf("after pruning: the events-pruned events count %d events, want 44; the search finds %s", n, body)
	}
	waitFor(t, "a checkpoint", func() bool {
		status, _ := call(t, http.MethodGet, base+"/api/admin/log/checkpoint", demoAdmin, "")
		return status == http.StatusOK
	})
	code, stdout, errOut := runCLI(t, nil, "log", "verify", "--url", base, "--token", demoAdmin, "--key", verifier)
	if code != 0 || !strings.Contains(stdout, "pruned: leaves 0 to 43 (events 1 to 44), removed by retention") {
		t.Errorf("log verify after pruning: exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
	}
	// The pass is logged when it ends, after the counter of each batch.
	waitFor(t, "the pruning logged", func() bool { return strings.Contains(stderr.String(), "retention: pruned events") })
	if dbURL != memoryURL {
		code, stdout, errOut := runCLI(t, nil, "log", "verify", "--db", dbURL, "--key", verifier)
		if code != 0 || !strings.Contains(stdout, "pruned: leaves 0 to 43 (events 1 to 44), removed by retention") {
			t.Errorf("log verify --db after pruning: exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
		}
		// Another server with the same rule records nothing; one that
		// keeps events for ever records the change back.
		cfg.Demo = false
		again, _ := startApp(t, cfg)
		wantRetentionEvents(t, again, 1)
		cfg.Retention = 0
		forever, _ := startApp(t, cfg)
		wantRetentionEvents(t, forever, 2)
	}
}

// wantRetentionEvents checks that the server at base holds n
// retention-changed events, the first from for ever to one hour, the
// second back to for ever.
func wantRetentionEvents(t *testing.T, base string, n int) {
	t.Helper()
	_, body := call(t, http.MethodGet, base+"/api/admin/search/events?type=IS:retention-changed", demoAdmin, "")
	want := []string{`"total":` + fmt.Sprint(n), `"data":{"previous":null,"retention":3600}`}
	if n > 1 {
		want = append(want, `"data":{"previous":3600,"retention":null}`)
	}
	for _, w := range want {
		if !strings.Contains(string(body), w) {
			t.Errorf("retention-changed events: no %s in %s", w, body)
		}
	}
}

// tamperedStore edits the events its export reads: what a reader sees
// after the events were changed in the database by hand.
type tamperedStore struct {
	flagadmin.Store
	edit func(e flagadmin.Event) []flagadmin.Event
}

func (s tamperedStore) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	return s.Store.ExportEvents(ctx, q, afterID, func(e flagadmin.Event) error {
		for _, x := range s.edit(e) {
			if err := fn(x); err != nil {
				return err
			}
		}
		return nil
	})
}

// logKeeper is a store that keeps the verifiable log.
type logKeeper interface {
	flagadmin.Store
	vlog.Store
}

// logServer serves store, through edit, with its log signed by the key
// file signing, and returns its URL.
func logServer(t testing.TB, store logKeeper, signing string, edit func(flagadmin.Event) []flagadmin.Event) string {
	t.Helper()
	_, skey, err := loadLogKey(signing)
	if err != nil {
		t.Fatal(err)
	}
	prover := tlog.NewProver(store)
	signer, err := tlog.NewSigner(store, prover, skey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := signer.Sign(context.Background()); err != nil {
		t.Fatal(err)
	}
	if edit == nil {
		edit = func(e flagadmin.Event) []flagadmin.Event { return []flagadmin.Event{e} }
	}
	svc := flagadmin.NewService(tamperedStore{Store: store, edit: edit})
	logSvc := vlog.NewService(svc, vlog.Config{Store: store, Prover: prover, Signing: true})
	srv := httptest.NewServer(httpapi.New(svc, httpapi.Config{Log: logSvc}).Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// logWorld returns a store with an admin token and n events.
func logWorld(t *testing.T, n int, by string) *memstore.Store {
	t.Helper()
	store := memstore.New()
	ctx := context.Background()
	if err := flagadmin.NewService(store).LoadSeed(ctx, strings.NewReader(`{"apiTokens":[{"secret":"`+demoAdmin+`","type":"admin"}]}`)); err != nil {
		t.Fatal(err)
	}
	b := &flagadmin.Batch{}
	for i := range n {
		b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: by, CreatedAt: time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC),
			FeatureName: ptr(fmt.Sprintf("f%d", i)), Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
	}
	if err := store.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	return store
}

func ptr[T any](v T) *T { return &v }

func TestLogVerifyNamesTheTamperedEvent(t *testing.T) {
	signing, verifier := keyFiles(t)
	store := logWorld(t, 50, "ada")
	events := map[int64]flagadmin.Event{}
	_ = store.ExportEvents(context.Background(), flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error { events[e.ID] = e; return nil })
	same := func(e flagadmin.Event) []flagadmin.Event { return []flagadmin.Event{e} }
	for _, c := range []struct {
		name string
		edit func(flagadmin.Event) []flagadmin.Event
		want string
	}{
		{"untouched", same, ""},
		{"a field changed", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == 17 {
				e.CreatedBy = "mallory"
			}
			return same(e)
		}, "the log does not verify: event 17 (leaf 16) was changed: its content differs from what its leaf recorded when it was written (and 1 more problem, above)"},
		{"one deleted", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == 30 {
				return nil
			}
			return same(e)
		}, "the log does not verify: event 30 (leaf 29) was removed: no recorded pruning pass removed it"},
		{"one inserted", func(e flagadmin.Event) []flagadmin.Event {
			if e.ID == 50 {
				x := e
				x.ID = 51
				return []flagadmin.Event{e, x}
			}
			return same(e)
		}, "the log does not verify: event 51 was inserted: it has no leaf in the log"},
		{"two swapped", func(e flagadmin.Event) []flagadmin.Event {
			if x, ok := map[int64]int64{5: 9, 9: 5}[e.ID]; ok {
				y := events[x]
				y.ID = e.ID
				return same(y)
			}
			return same(e)
		}, "the log does not verify: event 5 (leaf 4) was reordered: it holds what was recorded as event 9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := logServer(t, store, signing, c.edit)
			code, stdout, stderr := runCLI(t, nil, "log", "verify", "--url", base, "--token", demoAdmin, "--key", verifier)
			if c.want == "" {
				if code != 0 || !strings.Contains(stdout, "OK: 50 events") {
					t.Errorf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 1 || !strings.HasPrefix(lines[len(lines)-1], "flagadmin: "+c.want) {
				t.Errorf("exit %d, last line of stderr %q; want 1 and %q", code, lines[len(lines)-1], c.want)
			}
			if !strings.Contains(stdout, "PROBLEM: ") {
				t.Errorf("stdout lists no problem: %s", stdout)
			}
		})
	}
}

// leafEditor is a log store whose leaves are edited as they are read:
// what a reader sees after the leaves' rows were changed by hand.
type leafEditor struct {
	logKeeper
	edit func(l *vlog.Leaf)
}

func (s leafEditor) LogLeaves(ctx context.Context, start, end int64) ([]vlog.Leaf, error) {
	leaves, err := s.logKeeper.LogLeaves(ctx, start, end)
	for i := range leaves {
		s.edit(&leaves[i])
	}
	return leaves, err
}

// TestLogVerifyRefusesRemovalsRetentionDidNotRecord: an event deleted and
// its leaf marked pruned, on a log that never had retention, is a
// removal, even with its tombstone made to look old, with --trusted or
// without.
func TestLogVerifyRefusesRemovalsRetentionDidNotRecord(t *testing.T) {
	signing, verifier := keyFiles(t)
	store := logWorld(t, 50, "ada")
	deleted := func(e flagadmin.Event) []flagadmin.Event {
		if e.ID == 30 {
			return nil
		}
		return []flagadmin.Event{e}
	}
	trusted := filepath.Join(t.TempDir(), "checkpoint")
	if code, _, stderr := runCLI(t, nil, "log", "verify", "--url", logServer(t, store, signing, nil), "--token", demoAdmin, "--key", verifier, "--save", trusted); code != 0 {
		t.Fatalf("the untouched log: %s", stderr)
	}
	for _, c := range []struct {
		name string
		edit func(l *vlog.Leaf)
		want string
	}{
		{"marked pruned", func(l *vlog.Leaf) {
			if l.EventID == 30 {
				l.Pruned, l.Salt = true, nil
			}
		}, "the log does not verify: event 30 (leaf 29) was removed: no recorded pruning pass removed it"},
		{"marked pruned, its tombstone made to look old", func(l *vlog.Leaf) {
			if l.EventID == 30 {
				l.Pruned, l.Salt, l.CreatedAt = true, nil, l.CreatedAt.AddDate(-1, 0, 0)
			}
		}, "the log does not verify: event 30 (leaf 29) was removed: its leaf's recorded fields do not hash to its leaf hash"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := logServer(t, leafEditor{logKeeper: store, edit: c.edit}, signing, deleted)
			for _, args := range [][]string{{}, {"--trusted", trusted}} {
				code, stdout, stderr := runCLI(t, nil, append([]string{"log", "verify", "--url", base, "--token", demoAdmin, "--key", verifier}, args...)...)
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				if code != 1 || !strings.HasPrefix(lines[len(lines)-1], "flagadmin: "+c.want) || strings.Contains(stdout, "pruned: ") {
					t.Errorf("%v: exit %d, last line of stderr %q\nstdout %s; want 1 and %q, nothing pruned", args, code, lines[len(lines)-1], stdout, c.want)
				}
			}
		})
	}
}

func TestLogVerifyCatchesAnOlderCopy(t *testing.T) {
	signing, verifier := keyFiles(t)
	saved := filepath.Join(t.TempDir(), "checkpoint")
	live := logServer(t, logWorld(t, 40, "ada"), signing, nil)
	if code, _, stderr := runCLI(t, nil, "log", "verify", "--url", live, "--token", demoAdmin, "--key", verifier, "--save", saved); code != 0 {
		t.Fatalf("verify the live log: %s", stderr)
	}
	// An older copy of the database (30 of the events), which went on with others.
	older := logWorld(t, 30, "ada")
	b := &flagadmin.Batch{}
	for i := range 15 {
		b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "eve", CreatedAt: time.Date(2026, 2, 1, 0, i, 0, 0, time.UTC)})
	}
	if err := older.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	restored := logServer(t, older, signing, func(e flagadmin.Event) []flagadmin.Event { return []flagadmin.Event{e} })
	code, stdout, stderr := runCLI(t, nil, "log", "verify", "--url", restored, "--token", demoAdmin, "--key", verifier, "--trusted", saved)
	if code != 1 || !strings.Contains(stderr, "the first 40 events no longer hash to the root of the trusted checkpoint") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	// On its own, the older copy is a consistent log.
	if code, _, stderr := runCLI(t, nil, "log", "verify", "--url", restored, "--token", demoAdmin, "--key", verifier); code != 0 {
		t.Errorf("the older copy on its own: %s", stderr)
	}
}

// wantHoldEvents checks that the database holds one log-hold-added and
// one log-hold-released event of project, by the system, in that order.
func wantHoldEvents(t *testing.T, db, project string) {
	t.Helper()
	store, err := bunstore.Open(context.Background(), db, bunstore.WithoutMigrate())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var got []string
	err = store.ExportEvents(context.Background(), flagadmin.EventQuery{Types: []string{flagadmin.EventLogHoldAdded, flagadmin.EventLogHoldReleased}}, 0,
		func(e flagadmin.Event) error {
			got = append(got, fmt.Sprintf("%s %s by %s %s", e.Type, *e.Project, e.CreatedBy, e.Data))
			return nil
		})
	want := []string{
		fmt.Sprintf(`log-hold-added %s by system {"project":%q}`, project, project),
		fmt.Sprintf(`log-hold-released %s by system {"project":%q}`, project, project),
	}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the hold's events: got %q (%v), want %q", got, err, want)
	}
}

func TestLogCommandsOnADatabase(t *testing.T) {
	ctx := context.Background()
	signing, verifier := keyFiles(t)
	// A SQL database keeps the log: the commands work on it.
	db := "sqlite:" + filepath.Join(t.TempDir(), "db.sqlite")
	if code, _, stderr := runCLI(t, nil, "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: %s", stderr)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"log", "verify", "--key", verifier, "--db", db}, 1, "the database holds no checkpoint: a server signs them when started with --log-key"},
		{[]string{"log", "holds", "--db", db}, 0, "no legal holds"},
		{[]string{"log", "hold", "--project", "p", "--db", db}, 0, "the events of p in " + db + " are under legal hold"},
		{[]string{"log", "hold", "--project", "p", "--db", db}, 0, "the events of p in " + db + " are under legal hold"},
		{[]string{"log", "holds", "--db", db}, 0, "p "},
		{[]string{"log", "hold", "--project", "p", "--release", "--db", db}, 0, "released the legal hold on the events of p"},
	} {
		code, stdout, stderr := runCLI(t, nil, c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("%q: exit %d, %q %q; want %d and %q", c.args, code, stdout, stderr, c.code, c.want)
		}
	}
	// The hold and its release are in the log, once each (the second hold
	// changed nothing), by the CLI's actor.
	wantHoldEvents(t, db, "p")
	// The commands' work, on a store that keeps one.
	store := logWorld(t, 20, "ada")
	logServer(t, store, signing, nil) // signs a checkpoint
	var out, errOut strings.Builder
	c := &cli{getenv: func(string) string { return "" }, stdout: &out, stderr: &errOut}
	b, _ := os.ReadFile(verifier)
	v, _ := tlog.ParseVerifierKey(string(b))
	if err := c.verifyLog(ctx, tlog.StoreSource(store, store), tlog.VerifyOptions{Verifier: v}, "", nil); err != nil || !strings.Contains(out.String(), "OK: 20 events") {
		t.Errorf("verify the database: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := c.hold(ctx, store, "memory:", "payments", false); err != nil || !strings.Contains(out.String(), "the events of payments in memory: are under legal hold") {
		t.Errorf("hold: %v: %s", err, out.String())
	}
	out.Reset()
	if err := c.listHolds(ctx, store, &out); err != nil || !strings.Contains(out.String(), "PROJECT") || !strings.Contains(out.String(), "payments") {
		t.Errorf("holds: %v: %s", err, out.String())
	}
	out.Reset()
	if err := c.hold(ctx, store, "memory:", "payments", true); err != nil || !strings.Contains(out.String(), "released") {
		t.Errorf("release: %v: %s", err, out.String())
	}
	if err := c.hold(ctx, store, "memory:", "payments", true); err == nil || !strings.Contains(err.Error(), "has no legal hold") {
		t.Errorf("release again: got %v", err)
	}
	if err := c.hold(ctx, store, "memory:", "bad\x00id", false); err == nil || !strings.Contains(err.Error(), "--project: must not contain a NUL") {
		t.Errorf("hold a bad id: got %v", err)
	}
	for _, id := range []string{"bad project!", "a,b", strings.Repeat("p", 101)} {
		if err := c.hold(ctx, store, "memory:", id, false); err == nil || !strings.Contains(err.Error(), "cannot hold the project: --project: must be a project id: 1 to 100 letters, digits, or _ . ~ -") {
			t.Errorf("hold %q: got %v, want --project refused", id, err)
		}
	}
	out.Reset()
	if err := c.hold(ctx, store, "memory:", "not-created-yet", false); err != nil || !strings.Contains(out.String(), "under legal hold") {
		t.Errorf("hold a project that does not exist (yet): %v: %s", err, out.String())
	}
	if err := c.hold(ctx, store, "memory:", "not-created-yet", true); err != nil {
		t.Errorf("release it: %v", err)
	}
	out.Reset()
	if err := c.listHolds(ctx, store, &out); err != nil || strings.TrimSpace(out.String()) != "no legal holds" {
		t.Errorf("holds after the release: %v: %q", err, out.String())
	}
}

// storeWithoutLog is a store that keeps no verifiable log: it hides the
// memstore's.
type storeWithoutLog struct{ flagadmin.Store }

func TestServeOnAStoreWithoutALog(t *testing.T) {
	store := storeWithoutLog{memstore.New()}
	if parts, err := newLogParts(store, Config{}, slog.Default()); err != nil || parts != nil || parts.config().Store != nil {
		t.Errorf("without --log-key: got %v, %v; want no log and no error", parts, err)
	}
	signing, _ := keyFiles(t)
	_, key, _ := loadLogKey(signing)
	for _, cfg := range []Config{{LogSignerKey: key}, {Retention: time.Hour}} {
		if _, err := newLogParts(store, cfg, slog.Default()); err == nil || !strings.Contains(err.Error(), "keeps no verifiable log yet") {
			t.Errorf("%+v: got %v, want an error saying the database keeps no log", cfg.Retention, err)
		}
	}
}

// TestLogVerifyCountsInWords: the lines of log verify and follow status
// write one of a thing in the singular and more in the plural.
func TestLogVerifyCountsInWords(t *testing.T) {
	problems := func(n int) []tlog.Problem { return make([]tlog.Problem, n) }
	for _, tt := range []struct {
		got, want string
	}{
		{verifiedLine(&tlog.Report{Events: 1, Leaves: 1, CheckpointSize: 1, Beyond: 1}, 0, false),
			"OK: 1 event and 1 leaf checked in 0s; the tree has the signed root of the 1 event of the checkpoint; 1 event written since matches its leaf (the next checkpoint signs it)"},
		{verifiedLine(&tlog.Report{Events: 3, Leaves: 3, CheckpointSize: 1, TrustedSize: 1, Beyond: 2}, 0, false),
			"OK: 3 events and 3 leaves checked in 0s; the tree has the signed root of the 1 event of the checkpoint, and the root of the 1 event of the trusted checkpoint; 2 events written since match their leaves (the next checkpoint signs them)"},
		{verifiedLine(&tlog.Report{Events: 2, Leaves: 2, CheckpointSize: 2}, 0, false),
			"OK: 2 events and 2 leaves checked in 0s; the tree has the signed root of the 2 events of the checkpoint"},
		{failedLine(&tlog.Report{Problems: problems(2)}), "the log does not verify: " + tlog.Problem{}.String() + " (and 1 more problem, above)"},
		{failedLine(&tlog.Report{Problems: problems(2), Omitted: 1}), "the log does not verify: " + tlog.Problem{}.String() + " (and 2 more problems, above)"},
		{failedLine(&tlog.Report{Problems: problems(1)}), "the log does not verify: " + tlog.Problem{}.String()},
		{prunedLine(tlog.PrunedRange{FirstLeaf: 4, LastLeaf: 4, FirstID: 5, LastID: 5}), "pruned: leaf 4 (event 5), removed by retention; its leaf hash counts"},
		{prunedLine(tlog.PrunedRange{FirstLeaf: 0, LastLeaf: 3, FirstID: 1, LastID: 4}), "pruned: leaves 0 to 3 (events 1 to 4), removed by retention; their leaf hashes count"},
	} {
		if tt.got != tt.want {
			t.Errorf("got  %q\nwant %q", tt.got, tt.want)
		}
	}
	now := time.Now()
	synced := now.Add(-time.Minute)
	for n, want := range map[int64]string{1: " 1 event, 1m0s\n", 2: " 2 events, 1m0s\n"} {
		var out strings.Builder
		writeFollowStatus(&out, follow.Status{State: follow.Following, Ready: true, LagEvents: n, SyncedAt: &synced, LagSeconds: 60}, now)
		if !strings.Contains(out.String(), want) {
			t.Errorf("follow status with a lag of %d: %q, want %q", n, out.String(), want)
		}
	}
}
