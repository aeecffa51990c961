package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/internal/witnesstest"
)

// otherWitnessKey returns the verifier key of a witness that never saw
// anything.
func otherWitnessKey(t *testing.T, name string) string {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := torchwood.NewCosignatureSigner(name, key)
	if err != nil {
		t.Fatal(err)
	}
	return s.Verifier().String()
}

func TestConfigLogWitness(t *testing.T) {
	signing, verifier := keyFiles(t)
	one, two := otherWitnessKey(t, "witness.example/one"), otherWitnessKey(t, "witness.example/two")
	cfg, err := parseServe(t, map[string]string{envLogKey: signing, envLogWitness: "https://w1.example/a=" + one + ", http://w2.example:7380/=" + two})
	if err != nil || len(cfg.LogWitnesses) != 2 || cfg.LogWitnesses[0].URL != "https://w1.example/a" || cfg.LogWitnesses[1].URL != "http://w2.example:7380" ||
		cfg.LogWitnesses[0].Name() != "witness.example/one" || cfg.LogWitnesses[1].Name() != "witness.example/two" {
		t.Fatalf("from the environment: %+v (%v)", cfg.LogWitnesses, err)
	}
	// The flag is repeated, and wins over the variable.
	cfg, err = parseServe(t, map[string]string{envLogWitness: "https://ignored.example=" + one},
		"--log-key", signing, "--log-witness", "https://w1.example="+one, "--log-witness", "https://w2.example="+two)
	if err != nil || len(cfg.LogWitnesses) != 2 || cfg.LogWitnesses[0].URL != "https://w1.example" || cfg.LogWitnesses[1].URL != "https://w2.example" {
		t.Fatalf("--log-witness twice: %+v (%v)", cfg.LogWitnesses, err)
	}
	b, _ := os.ReadFile(verifier)
	logKey := strings.TrimSpace(string(b))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-witness", "https://w1.example=" + one}, "--log-witness: needs --log-key"},
		{[]string{"--log-key", signing, "--log-witness", "https://w1.example"}, `--log-witness: "https://w1.example" is not URL=KEY`},
		{[]string{"--log-key", signing, "--log-witness", "ftp://w1.example=" + one}, `--log-witness: "ftp://w1.example" is not an http:// or https:// URL`},
		{[]string{"--log-key", signing, "--log-witness", "https://w1.example?x=1=" + one}, "has a query or a fragment"},
		{[]string{"--log-key", signing, "--log-witness", "https://w1.example=not-a-key"}, "not a witness verifier key"},
		{[]string{"--log-key", signing, "--log-witness", "https://w1.example=PRIVATE+KEY+x+1234+abcd"}, "this is a signing key"},
		{[]string{"--log-key", signing, "--log-witness", "https://w1.example=" + one + ",https://w2.example=" + one}, "two witnesses are named witness.example/one"},
		// A witness of a log that starts empty in every process would
		// refuse it for ever after the first restart.
		{[]string{"--db", "memory:", "--log-key", signing, "--log-witness", "https://w1.example=" + one}, "--log-witness: --db memory: starts empty in every process, and a witness remembers the largest tree it cosigned"},
		{[]string{"--db", "sqlite::memory:", "--log-key", signing, "--log-witness", "https://w1.example=" + one}, "--log-witness: --db sqlite::memory: starts empty"},
	} {
		_, err := parseServe(t, nil, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v, want one line with %q", c.args, err, c.want)
		}
	}
	// Cosignatures are the server's: log verify --db has none to check.
	code, _, errOut := runCLI(t, nil, "log", "verify", "--db", "sqlite:"+filepath.Join(t.TempDir(), "x.db"), "--key", verifier, "--witness", one)
	if code != 1 || !strings.HasPrefix(errOut, "flagadmin: --witness reads the checkpoint a server serves (--url)") {
		t.Errorf("log verify --db --witness: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI(t, nil, "log", "verify", "--url", "http://127.0.0.1:1", "--key", verifier, "--witness", "nothing")
	if code == 0 || !strings.HasPrefix(errOut, "flagadmin: --witness: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("log verify --witness nothing: exit %d, %q", code, errOut)
	}
	// A plain note key of the log is read as the cosignature key of the
	// same Ed25519 key (what a witness made with note keys would give).
	if _, err := parseServe(t, nil, "--log-key", signing, "--log-witness", "https://w1.example="+logKey); err != nil {
		t.Errorf("a plain Ed25519 note key: %v", err)
	}
}

// TestServeWithAWitness: a server submits its checkpoints to a live
// litewitness and serves them cosigned; log verify --witness requires the
// cosignature. Then an older copy of the database is put back and the
// server starts again without its state file: the witness refuses the
// older tree and keeps its size, the server says so (log, metric) and
// goes on writing and signing.
func TestServeWithAWitness(t *testing.T) {
	signing, verifier := keyFiles(t)
	b, _ := os.ReadFile(verifier)
	w := witnesstest.Start(t, "witness.test/lite", "flagadmin.test/log", strings.TrimSpace(string(b)))
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "flagadmin.db")
	cfg := signingConfig(t, db, signing, filepath.Join(dir, "log.key.checkpoint"))
	cfg.Demo = true
	cfg.LogWitnesses = []tlog.Witness{{URL: w.URL, Verifier: mustWitnessKey(t, w.VerifierKey)}}
	base, stderr, stop := restartableApp(t, cfg)
	cosigned := func(size string) func() bool {
		return func() bool {
			status, body := call(t, http.MethodGet, base+"/api/admin/log/checkpoint", demoAdmin, "")
			lines := strings.Split(string(body), "\n")
			return status == http.StatusOK && len(lines) > 1 && lines[1] == size && strings.Contains(string(body), "— witness.test/lite ")
		}
	}
	waitFor(t, "the demo world's checkpoint cosigned by the witness", cosigned("44"))
	if !strings.Contains(stderr.String(), "log: submitting checkpoints to a witness") {
		t.Errorf("the server does not say it submits to the witness:\n%s", stderr)
	}
	// The older copy of the database, saved now (the server stopped, so
	// the database is one file).
	stop()
	older := filepath.Join(t.TempDir(), "older.db")
	copyFile(t, filepath.Join(dir, "flagadmin.db"), older)
	cfg.Demo = false
	base, stderr, stop = restartableApp(t, cfg)
	waitFor(t, "the checkpoint of 44 events cosigned again", cosigned("44"))

	code, stdout, errOut := runCLI(t, nil, "log", "verify", "--url", base, "--token", demoAdmin, "--key", verifier, "--witness", w.VerifierKey)
	if code != 0 || !strings.Contains(stdout, "witness: witness.test/lite cosigned the checkpoint at ") || strings.Contains(stdout, "without --trusted") {
		t.Errorf("log verify --witness: exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
	}
	other := otherWitnessKey(t, "witness.test/other")
	code, stdout, errOut = runCLI(t, nil, "log", "verify", "--url", base, "--token", demoAdmin, "--key", verifier, "--witness", w.VerifierKey, "--witness", other)
	if last := lastLine(errOut); code != 1 || !strings.HasPrefix(last, "flagadmin: the checkpoint of 44 events is not cosigned as required: it has no cosignature of the witness witness.test/other;") ||
		!strings.Contains(stdout, "PROBLEM: the checkpoint has no cosignature of the witness witness.test/other") {
		t.Errorf("log verify --witness of another witness: exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
	}
	// More events: the witness cosigns their checkpoint, from its size.
	for _, name := range []string{"dark-mode", "new-navigation"} {
		if status, body := call(t, http.MethodPost, base+"/api/admin/projects/default/features/"+name+"/lifecycle/complete", demoAdmin, `{"status":"kept"}`); status != http.StatusOK {
			t.Fatalf("complete %s: %d %s", name, status, body)
		}
	}
	waitFor(t, "the checkpoint of 46 events cosigned", cosigned("46"))
	stop()
	if got := w.Size("flagadmin.test/log"); got != 46 {
		t.Fatalf("the witness knows %d events, want 46", got)
	}

	// The rollback: the older copy put back, the state file lost.
	copyFile(t, older, filepath.Join(dir, "flagadmin.db"))
	for _, f := range []string{cfg.LogState, filepath.Join(dir, "flagadmin.db-wal"), filepath.Join(dir, "flagadmin.db-shm")} {
		os.Remove(f)
	}
	base, stderr, _ = restartableApp(t, cfg)
	waitFor(t, "the witness's refusal in the server's log", func() bool {
		return strings.Contains(stderr.String(), "a witness refuses to cosign the checkpoint")
	})
	if !strings.Contains(stderr.String(), "larger tree of this log (46 events) than this checkpoint (44 events)") {
		t.Errorf("the refusal does not say why:\n%s", stderr)
	}
	status, body := call(t, http.MethodGet, base+"/api/admin/log/checkpoint", demoAdmin, "")
	if status != http.StatusOK || strings.Contains(string(body), "witness.test/lite") {
		t.Errorf("the rolled-back checkpoint: %d %s; want it served uncosigned", status, body)
	}
	code, stdout, errOut = runCLI(t, nil, "log", "verify", "--url", base, "--token", demoAdmin, "--key", verifier, "--witness", w.VerifierKey)
	if code != 1 || !strings.Contains(errOut, "no cosignature of the witness witness.test/lite") {
		t.Errorf("log verify --witness on the rolled-back log: exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
	}
	// Writes go on, and checkpoints are signed; the witness, which sees a
	// tree that does not extend its own, refuses them too.
	if status, body := call(t, http.MethodPost, base+"/api/admin/projects/default/features/dark-mode/lifecycle/complete", demoAdmin, `{"status":"kept"}`); status != http.StatusOK {
		t.Fatalf("a write after the rollback: %d %s", status, body)
	}
	waitCheckpoint(t, base, 45)
	waitFor(t, "the witness_failing metric", func() bool {
		_, metrics := call(t, http.MethodGet, base+"/metrics", "", "")
		return strings.Contains(string(metrics), `flagadmin_log_witness_failing{witness="witness.test/lite"} 1`) &&
			strings.Contains(string(metrics), `flagadmin_log_witness_cosigned_size{witness="witness.test/lite"} -1`)
	})
	if got := w.Size("flagadmin.test/log"); got != 46 {
		t.Errorf("the witness knows %d events after the rollback, want the 46 it cosigned", got)
	}
	var health struct {
		Log struct {
			Signing   string
			Witnesses []struct {
				Name         string
				CosignedSize int64
				Problem      string
			}
		}
	}
	waitFor(t, "/health to show the witness's refusal of the checkpoint of 45 events", func() bool {
		_, body = call(t, http.MethodGet, base+"/health", "", "")
		return json.Unmarshal(body, &health) == nil && len(health.Log.Witnesses) == 1 &&
			strings.Contains(health.Log.Witnesses[0].Problem, "the witness has seen a larger tree of this log (46 events) than this checkpoint (45 events)")
	})
	if st := health.Log.Witnesses[0]; health.Log.Signing != "signing" || st.Name != "witness.test/lite" || st.CosignedSize != -1 {
		t.Errorf("/health: %s; want the server signing, and the witness with nothing cosigned", body)
	}
	if n := regexp.MustCompile("a witness refuses to cosign").FindAllStringIndex(stderr.String(), -1); len(n) != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", len(n), stderr)
	}
}

func mustWitnessKey(t *testing.T, vkey string) note.Verifier {
	t.Helper()
	v, err := tlog.ParseWitnessKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// copyFile copies the file from to the file to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lastLine is the last line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestServeKeepsItsCosignatures: the server keeps the newest cosigned
// checkpoint beside its state file, and started again serves it cosigned
// at once, while the witness is down; a file edited to hold a cosignature
// that does not verify is not served, and the log says so.
func TestServeKeepsItsCosignatures(t *testing.T) {
	signing, verifier := keyFiles(t)
	b, _ := os.ReadFile(verifier)
	w := witnesstest.Start(t, "witness.test/lite", "flagadmin.test/log", strings.TrimSpace(string(b)))
	dir := t.TempDir()
	cfg := signingConfig(t, "sqlite:"+filepath.Join(dir, "flagadmin.db"), signing, filepath.Join(dir, "log.key.checkpoint"))
	cfg.Demo = true
	cfg.LogWitnesses = []tlog.Witness{{URL: w.URL, Verifier: mustWitnessKey(t, w.VerifierKey)}}
	kept := cfg.LogState + tlog.CosignedSuffix
	base, _, stop := restartableApp(t, cfg)
	served := func(base string) string {
		status, body := call(t, http.MethodGet, base+"/api/admin/log/checkpoint", demoAdmin, "")
		if status != http.StatusOK {
			return fmt.Sprintf("%d\n%s", status, body)
		}
		return string(body)
	}
	var cosigned string
	waitFor(t, "the cosigned checkpoint of 44 events kept beside the state file", func() bool {
		cosigned = served(base)
		b, _ := os.ReadFile(kept)
		return strings.Split(cosigned, "\n")[1] == "44" && strings.Contains(cosigned, "— witness.test/lite ") && string(b) == cosigned
	})
	stop()

	// The witness is down: the server started again serves the cosigned
	// checkpoint from its first request, and log verify --witness passes.
	w.Stop()
	cfg.Demo = false
	base, stderr, stop := restartableApp(t, cfg)
	if got := served(base); got != cosigned {
		t.Errorf("the first checkpoint served after a restart:\n%s\nwant the cosigned one:\n%s", got, cosigned)
	}
	if !strings.Contains(stderr.String(), "log: serving the cosignatures kept of the current checkpoint") {
		t.Errorf("the server does not say it serves the kept cosignatures:\n%s", stderr)
	}
	code, stdout, errOut := runCLI(t, nil, "log", "verify", "--url", base, "--token", demoAdmin, "--key", verifier, "--witness", w.VerifierKey)
	if code != 0 || !strings.Contains(stdout, "witness: witness.test/lite cosigned the checkpoint at ") {
		t.Errorf("log verify --witness after a restart: exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
	}
	stop()

	// The file edited: the witness's signature changed by one bit.
	i := strings.LastIndex(cosigned, "— witness.test/lite ") + len("— witness.test/lite ")
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(cosigned[i:], "\n"))
	if err != nil {
		t.Fatal(err)
	}
	sig[len(sig)-1] ^= 1
	edited := cosigned[:i] + base64.StdEncoding.EncodeToString(sig) + "\n"
	if err := os.WriteFile(kept, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	base, stderr, _ = restartableApp(t, cfg)
	if got := served(base); strings.Contains(got, "witness.test/lite") {
		t.Errorf("an edited cosignature is served:\n%s", got)
	}
	if !strings.Contains(stderr.String(), "log: a kept cosignature is not served") || !strings.Contains(stderr.String(), "does not verify") {
		t.Errorf("the server does not say it drops the edited cosignature:\n%s", stderr)
	}
}
