package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

const exportTestToken = "*:*.export-test-secret"

// exportFailAbove fails every export once it reaches an event with an id
// above `above` (0: never), as a database that keeps failing would. The
// test sets above while the server may still be finishing a response, so
// it is atomic.
type exportFailAbove struct {
	flagadmin.Store
	above atomic.Int64
}

func (f *exportFailAbove) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	return f.Store.ExportEvents(ctx, q, afterID, func(e flagadmin.Event) error {
		if above := f.above.Load(); above > 0 && e.ID > above {
			return errors.Join(flagadmin.ErrUnavailable, errors.New("database down"))
		}
		return fn(e)
	})
}

// exportServer serves n events (with CSV-hostile text) over memstore.
func exportServer(t *testing.T, n int) (*httptest.Server, *exportFailAbove) {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	svc := flagadmin.NewService(store)
	seed := fmt.Sprintf(`{"projects":[{"id":"default","name":"Default","mode":"open","createdAt":"2025-01-01T00:00:00Z"}],
		"apiTokens":[{"secret":%q,"type":"admin","name":"admin"}]}`, exportTestToken)
	if err := svc.LoadSeed(ctx, strings.NewReader(seed)); err != nil {
		t.Fatal(err)
	}
	b := &flagadmin.Batch{}
	project := "default"
	for i := range n {
		b.Events = append(b.Events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: "=bot,\"x\"\nline",
			CreatedAt: time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i%7) * time.Second), Project: &project,
			Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"text":"a\nb, \"c\"","pad":"%s"}`, i, strings.Repeat("y", 100)))})
	}
	if err := store.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	faulty := &exportFailAbove{Store: store}
	srv := httptest.NewServer(httpapi.New(flagadmin.NewService(faulty), httpapi.Config{}).Handler())
	t.Cleanup(srv.Close)
	return srv, faulty
}

// records splits an export into its records (CSV: the header first).
func records(t *testing.T, format string, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	var rec []byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		rec = append(rec, line...)
		if format == "csv" && bytes.Count(rec, []byte(`"`))%2 == 1 {
			continue
		}
		out = append(out, rec)
		rec = nil
	}
	if rec != nil {
		t.Fatalf("the export ends with a partial record %q", rec)
	}
	return out
}

func TestEventsExport(t *testing.T) {
	const n = 2500
	srv, faulty := exportServer(t, n)
	env := map[string]string{envToken: exportTestToken}
	dir := t.TempDir()
	for _, format := range []string{"ndjson", "csv"} {
		t.Run(format, func(t *testing.T) {
			// The whole export, to a file, is the server's export byte for byte.
			full := filepath.Join(dir, "full."+format)
			code, stdout, stderr := runCLI(t, env, "events", "export", "--url", srv.URL, "--format", format, "--out", full, "--progress", "0")
			if code != 0 || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			if !regexp.MustCompile(`^exported 2500 events in \S+ \(\d+ events/s\) to .*full\.` + format + `; last id 2500\n$`).MatchString(stderr) {
				t.Errorf("stderr: %q", stderr)
			}
			data, err := os.ReadFile(full)
			if err != nil {
				t.Fatal(err)
			}
			wantRecords := n
			if format == "csv" {
				wantRecords++
			}
			recs := records(t, format, data)
			if len(recs) != wantRecords {
				t.Fatalf("got %d records, want %d", len(recs), wantRecords)
			}
			// To stdout, the same bytes.
			code, stdout, _ = runCLI(t, env, "events", "export", "--url", srv.URL, "--token", exportTestToken, "--format", format, "--progress", "0")
			if code != 0 || stdout != string(data) {
				t.Errorf("to stdout: exit %d, %d bytes; want the file's %d", code, len(stdout), len(data))
			}

			// Resuming with --after-id appends exactly the rest.
			for _, cut := range []int{1, 1234, n - 1} {
				part := filepath.Join(dir, fmt.Sprintf("part-%d.%s", cut, format))
				head := recs[:cut]
				if format == "csv" {
					head = recs[:cut+1]
				}
				if err := os.WriteFile(part, bytes.Join(head, nil), 0o644); err != nil {
					t.Fatal(err)
				}
				code, _, stderr := runCLI(t, env, "events", "export", "--url", srv.URL, "--format", format, "--out", part, "--after-id", strconv.Itoa(cut), "--progress", "0")
				if code != 0 {
					t.Fatalf("resume after %d: exit %d, %s", cut, code, stderr)
				}
				got, _ := os.ReadFile(part)
				if !bytes.Equal(got, data) {
					t.Errorf("resume after %d: the file differs from the whole export (%d bytes, want %d)", cut, len(got), len(data))
				}
			}

			// A server that keeps failing mid-export: the command stops with
			// whole records and says where to resume; resuming completes it.
			faulty.above.Store(1700)
			broken := filepath.Join(dir, "broken."+format)
			code, _, stderr = runCLI(t, env, "events", "export", "--url", srv.URL, "--format", format, "--out", broken, "--progress", "0")
			faulty.above.Store(0)
			m := regexp.MustCompile(`resume with --after-id (\d+)\n$`).FindStringSubmatch(stderr)
			if code != 1 || m == nil || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("broken export: exit %d, stderr %q; want 1 and one line naming the id to resume after", code, stderr)
			}
			got, _ := os.ReadFile(broken)
			last, _ := strconv.Atoi(m[1])
			if last < 1000 || last > 1700 || !bytes.Equal(got, bytes.Join(recs[:len(recs)-n+last], nil)) {
				t.Fatalf("broken export: last id %d, %d bytes; want whole records up to it", last, len(got))
			}
			code, _, stderr = runCLI(t, env, "events", "export", "--url", srv.URL, "--format", format, "--out", broken, "--after-id", m[1], "--progress", "0")
			got, _ = os.ReadFile(broken)
			if code != 0 || !bytes.Equal(got, data) {
				t.Errorf("resumed export: exit %d (%s), %d bytes, want the whole export's %d", code, stderr, len(got), len(data))
			}
		})
	}
}

func TestEventsExportBadFlags(t *testing.T) {
	env := map[string]string{envToken: exportTestToken}
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"events"}, env, "needs a subcommand: export"},
		{[]string{"events", "import"}, env, `unknown subcommand "import"`},
		{[]string{"events", "export", "--format", "xml"}, env, "--format must be ndjson or csv"},
		{[]string{"events", "export", "--after-id", "-3"}, env, "--after-id must be 0 or more"},
		{[]string{"events", "export", "--after-id", "x"}, env, "invalid value"},
		{[]string{"events", "export", "--nope"}, env, "unknown flag --nope"},
		{[]string{"events", "export"}, nil, "needs a token: --token or " + envToken},
		{[]string{"events", "export", "extra"}, env, "takes no arguments"},
		{[]string{"events", "export", "--url", "http://127.0.0.1:1"}, env, "flagadmin events export:"},
	} {
		code, stdout, stderr := runCLI(t, c.env, c.args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 1 and one line with %q", c.args, code, stdout, stderr, c.want)
		}
	}
	code, stdout, _ := runCLI(t, nil, "events", "export", "-h")
	for _, want := range []string{"Usage: flagadmin events export", "--format FORMAT", "--out FILE", "--after-id ID", "--url URL", "--token TOKEN", "--project IDS", envToken, envURL} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("help: exit %d; does not mention %q", code, want)
		}
	}
}

func TestEventsExportServerErrors(t *testing.T) {
	srv, _ := exportServer(t, 3)
	code, _, stderr := runCLI(t, map[string]string{envToken: "*:*.wrong"}, "events", "export", "--url", srv.URL)
	if code != 1 || !strings.Contains(stderr, "AuthenticationRequired") && !strings.Contains(strings.ToLower(stderr), "auth") {
		t.Errorf("bad token: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI(t, map[string]string{envToken: exportTestToken, envURL: srv.URL}, "events", "export", "--type", strings.Repeat("t", 256))
	if code != 1 || !strings.Contains(stderr, "type") {
		t.Errorf("bad type: exit %d, %q", code, stderr)
	}
}

// TestEventsExportFailureLeavesNoFile: an export refused by the server (a
// bad token: 401; a bad filter: 400) writes no event, leaves --out as it
// was (not created, not truncated), leaves no temporary file, and does not
// suggest resuming; a resumable failure after some events keeps them in
// --out and says where to resume.
func TestEventsExportFailureLeavesNoFile(t *testing.T) {
	srv, faulty := exportServer(t, 2500)
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.ndjson")
	if err := os.WriteFile(existing, []byte("earlier export\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		token string
		args  []string
		out   string
		want  string
	}{
		{"401, new file", "*:*.wrong", nil, filepath.Join(dir, "new.ndjson"), "401 AuthenticationRequired"},
		{"401, existing file", "*:*.wrong", nil, existing, "401 AuthenticationRequired"},
		{"401, resuming into a new file", "*:*.wrong", []string{"--after-id", "7"}, filepath.Join(dir, "new2.ndjson"), "401 AuthenticationRequired"},
		{"401, resuming into an existing file", "*:*.wrong", []string{"--after-id", "7"}, existing, "401 AuthenticationRequired"},
		{"400, existing file", exportTestToken, []string{"--type", strings.Repeat("t", 256)}, existing, "400 BadDataError"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"events", "export", "--url", srv.URL, "--token", c.token, "--out", c.out, "--progress", "0"}, c.args...)
			code, _, stderr := runCLI(t, nil, args...)
			if code != 1 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "resume") || !strings.Contains(stderr, "no event was written") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 1 and one line with %q, without a resume", code, stderr, c.want)
			}
			if c.out == existing {
				if data, err := os.ReadFile(existing); err != nil || string(data) != "earlier export\n" {
					t.Errorf("the existing file now holds %q, %v", data, err)
				}
			} else if _, err := os.Stat(c.out); !os.IsNotExist(err) {
				t.Errorf("--out was created: %v", err)
			}
		})
	}

	// An --out that cannot be written is named as it is.
	code, _, stderr := runCLI(t, nil, "events", "export", "--url", srv.URL, "--token", exportTestToken, "--out", filepath.Join(dir, "nope", "x.ndjson"))
	if want := "flagadmin events export: --out: cannot write " + filepath.Join(dir, "nope", "x.ndjson") + ": no such file or directory\n"; code != 1 || stderr != want {
		t.Errorf("--out in a missing directory: exit %d, stderr %q, want %q", code, stderr, want)
	}

	// A failure after some events (the server's storage fails for events
	// above 1700, after it sent some): they stay, as whole records, and the
	// resume is offered.
	faulty.above.Store(1700)
	partial := filepath.Join(dir, "partial.ndjson")
	code, _, stderr = runCLI(t, nil, "events", "export", "--url", srv.URL, "--token", exportTestToken, "--out", partial, "--progress", "0")
	faulty.above.Store(0)
	m := regexp.MustCompile(`; (\d+) events written to ` + regexp.QuoteMeta(partial) + `, the last id (\d+): resume with --after-id (\d+)\n$`).FindStringSubmatch(stderr)
	if code != 1 || m == nil || m[1] != m[2] || m[2] != m[3] {
		t.Fatalf("a failure after some events: exit %d, stderr %q", code, stderr)
	}
	if data, err := os.ReadFile(partial); err != nil || strconv.Itoa(len(records(t, "ndjson", data))) != m[1] {
		t.Errorf("the partial export: %d bytes, %v; want %s records", len(data), err, m[1])
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".partial") {
			t.Errorf("a temporary file is left: %s", e.Name())
		}
	}
}
