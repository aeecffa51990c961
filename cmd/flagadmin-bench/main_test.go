package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/adapters/storecache"
)

// TestMain lets the test binary play the server child: the tool re-executes
// its own binary (here, this test binary) with a hidden command.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == childCommand || os.Args[1] == ceilingCommand) {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// tinyOptions runs the tiny world briefly: enough requests of each kind
// to see answers (those still running when a window closes count, as
// late), not to measure anything.
func tinyOptions(db string) options {
	return options{DB: db, Events: tiny.Events, Projects: tiny.Projects, Features: tiny.Features, Seed: 7,
		Connections: 2, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, Kinds: "all", Ceiling: true,
		ResultCacheSize: storecache.DefaultResultCacheSize} // as the flag's default
}

// checkAnswered fails unless every kind of the run was answered, and only
// with 2xx.
func checkAnswered(t *testing.T, r *results, kinds int) {
	t.Helper()
	if len(r.Kinds) != kinds {
		t.Fatalf("got %d kinds, want %d", len(r.Kinds), kinds)
	}
	for _, k := range r.Kinds {
		// The tests' windows are short (a few hundred ms): on a busy
		// machine a kind's answers may all come after its window (Late),
		// which is still an answer.
		if k.Requests+k.Late == 0 || k.Errors != 0 {
			t.Errorf("%s: %d requests (%d late), %d errors (%s)", k.Kind, k.Requests, k.Late, k.Errors, k.FirstError)
		}
		for status, n := range k.Statuses {
			if status < 200 || status > 299 {
				t.Errorf("%s: %d answers with status %d", k.Kind, n, status)
			}
		}
		if k.Kind != "lifecycle/complete" && k.Requests > 0 && k.BytesPerRequest == 0 {
			t.Errorf("%s: empty answers", k.Kind)
		}
	}
}

// The whole tool on the in-memory store: the world is built, the server
// runs in-process, the ceiling and every kind are driven, every answer is
// 2xx, and the table and the JSON results are written.
func TestBenchMemorySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("drives every kind of request for a quarter of a second each (about 8 s); skipped with -short")
	}
	o := tinyOptions(memoryDB)
	o.JSON = filepath.Join(t.TempDir(), "results.json")
	var stdout, stderr bytes.Buffer
	r, err := bench(context.Background(), o, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	checkAnswered(t, r, 32)
	if r.Ceiling == nil || r.Ceiling.Requests == 0 || r.Ceiling.Errors != 0 {
		t.Errorf("ceiling: %+v", r.Ceiling)
	}
	if r.Server.Mode != "in-process" || r.Server.PeakRSSBytes <= 0 {
		t.Errorf("server: %+v, want in-process with a peak RSS", r.Server)
	}
	if r.World.Reused || r.World.EventsInDatabase != tiny.Events {
		t.Errorf("world: %+v, want %d events, freshly built", r.World, tiny.Events)
	}
	for _, want := range []string{"search/query", "p99 ms", "of ceiling", "targets:", "varied/offset", "peak RSS"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "events 2,000 / 2,000") {
		t.Errorf("no load progress on stderr:\n%s", stderr.String())
	}
	saved, err := readResults(o.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Kinds) != 32 || saved.Machine.NumCPU == 0 || saved.Database.System != "memory" || saved.Ceiling == nil {
		t.Errorf("JSON results incomplete: %d kinds, machine %+v, database %+v", len(saved.Kinds), saved.Machine, saved.Database)
	}
}

// On a SQLite file the server runs as a child process; a second run reuses
// the world its marker names, --rebuild loads it again, and a database
// holding something else is refused.
func TestBenchSQLiteChildAndReuse(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a SQLite world and runs server processes (a few seconds); skipped with -short")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "world.db")
	o := tinyOptions("sqlite:" + path)
	o.Kinds = "search/none,search/query,projects,lifecycle/complete"
	var stdout, stderr bytes.Buffer

	first, err := bench(ctx, o, &stdout, &stderr)
	if err != nil {
		t.Fatalf("first run: %v\n%s", err, stderr.String())
	}
	checkAnswered(t, first, 4)
	if first.World.Reused || first.Server.Mode != "child" || first.Server.PeakRSSBytes <= 0 {
		t.Errorf("first run: world %+v, server %+v; want a fresh load and a child with a peak RSS", first.World, first.Server)
	}
	if first.Ceiling == nil || first.Ceiling.Errors != 0 || first.Ceiling.Requests == 0 {
		t.Errorf("ceiling: %+v", first.Ceiling)
	}

	// The first run wrote its lifecycle events into a copy of the world,
	// dropped afterwards; the world is as loaded.
	if first.Database.RunCopy == "" {
		t.Error("the first run did not use a copy of the world")
	}
	if _, err := os.Stat(strings.TrimSuffix(path, ".db") + "-run.db"); !os.IsNotExist(err) {
		t.Errorf("the run's copy of the world is still there (%v)", err)
	}
	// The ceiling was checked on the first run; the next ones go without.
	o.Ceiling = false
	second, err := bench(ctx, o, &stdout, &stderr)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, stderr.String())
	}
	checkAnswered(t, second, 4)
	if !second.World.Reused || second.World.EventsInDatabase != tiny.Events || second.World.SchemaHash != first.World.SchemaHash {
		t.Errorf("second run: world %+v; want the first run's world reused, unchanged", second.World)
	}

	// --in-place runs on the world itself: its lifecycle events stay, and
	// the next run still reuses the world.
	o.InPlace, o.Kinds = true, "lifecycle/complete"
	if _, err := bench(ctx, o, &stdout, &stderr); err != nil {
		t.Fatalf("run in place: %v\n%s", err, stderr.String())
	}
	o.InPlace, o.Kinds = false, "projects"
	afterInPlace, err := bench(ctx, o, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run after one in place: %v\n%s", err, stderr.String())
	}
	if !afterInPlace.World.Reused || afterInPlace.World.EventsInDatabase <= tiny.Events {
		t.Errorf("run after one in place: world %+v; want it reused, with the lifecycle events of the run in place", afterInPlace.World)
	}

	// A world loaded under an older schema is migrated in place, as a
	// deployer's upgrade would, and reused when it then matches a fresh one.
	db, err := sql.Open(sqliteshim.ShimName, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE " + markerTable + " SET schema_hash = 'older'"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	stderr.Reset()
	afterMigration, err := bench(ctx, o, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run after a schema change: %v\n%s", err, stderr.String())
	}
	if !afterMigration.World.Reused || afterMigration.World.SchemaHash != first.World.SchemaHash {
		t.Errorf("run after a schema change: world %+v; want the world migrated and reused", afterMigration.World)
	}
	if !strings.Contains(stderr.String(), "migrating the world in place") {
		t.Errorf("no word of the migration on stderr:\n%s", stderr.String())
	}

	// One whose migrated schema still differs from a fresh database's is
	// loaded again.
	db, err = sql.Open(sqliteshim.ShimName, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"UPDATE " + markerTable + " SET schema_hash = 'older'", "CREATE TABLE stray (x INTEGER)"} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	stderr.Reset()
	afterSchemaChange, err := bench(ctx, o, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run after a schema change: %v\n%s", err, stderr.String())
	}
	if afterSchemaChange.World.Reused || afterSchemaChange.World.EventsInDatabase != tiny.Events || afterSchemaChange.World.SchemaHash == "" {
		t.Errorf("run after a schema change: world %+v; want a fresh load of %d events", afterSchemaChange.World, tiny.Events)
	}
	if !strings.Contains(stderr.String(), "differs from a fresh database's: rebuilding") {
		t.Errorf("no word of the rebuild on stderr:\n%s", stderr.String())
	}

	o.Rebuild = true
	third, err := bench(ctx, o, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run with --rebuild: %v\n%s", err, stderr.String())
	}
	if third.World.Reused || third.World.EventsInDatabase != tiny.Events {
		t.Errorf("run with --rebuild: world %+v; want a fresh load of %d events", third.World, tiny.Events)
	}

	other := filepath.Join(t.TempDir(), "other.db")
	db, err = sql.Open(sqliteshim.ShimName, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE precious (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	o = tinyOptions("sqlite:" + other)
	if _, err := bench(ctx, o, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "--rebuild") {
		t.Errorf("a database holding other tables: got %v, want a refusal that mentions --rebuild", err)
	}
}

func TestParseOptions(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseOptions(nil, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.Events != 1_000_000 || o.Projects != 200 || o.Features != 20_000 || o.Connections != 16 ||
		o.Duration != 30*time.Second || !o.Ceiling || !strings.HasPrefix(o.DB, "sqlite:") {
		t.Errorf("defaults: %+v", o)
	}
	o, err = parseOptions([]string{"--db", "memory:", "--events", "10", "--url", "http://h:1/", "--kinds", "projects"}, &stderr)
	if err != nil || o.URL != "http://h:1" || o.Events != 10 || o.Kinds != "projects" {
		t.Errorf("got %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"--connections", "0"}, {"--duration", "0s"}, {"--events", "0"}, {"--url", "h:1"}, {"extra"}} {
		if _, err := parseOptions(bad, &stderr); err == nil {
			t.Errorf("parseOptions(%v): want an error", bad)
		}
	}
}

// --help describes the tool and lists every flag but the hidden one.
func TestHelpListsFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	help := stderr.String()
	for _, f := range []string{"--db", "--events", "--projects", "--features", "--seed", "--rebuild", "--build-only", "--url",
		"--token", "--connections", "--duration", "--warmup", "--kinds", "--ceiling", "--in-process", "--in-place", "--access-log", "--json",
		"ceiling", "compare", "peak RSS"} {
		if !strings.Contains(help, f) {
			t.Errorf("--help does not mention %s", f)
		}
	}
	if strings.Contains(help, "cpuprofile") {
		t.Error("--help lists the hidden --cpuprofile")
	}
}

// TestBenchStreamKind runs the stream kind in memory: every write of the
// window reaches every stream once.
func TestBenchStreamKind(t *testing.T) {
	o := tinyOptions(memoryDB)
	o.Kinds, o.Duration, o.Warmup, o.Ceiling = "stream/", time.Second, 200*time.Millisecond, false
	o.Streams, o.StreamRate = 20, 50
	var stdout, stderr bytes.Buffer
	r, err := bench(context.Background(), o, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	if len(r.Kinds) != 1 {
		t.Fatalf("got %d kinds, want the stream kind", len(r.Kinds))
	}
	k := r.Kinds[0]
	if k.Kind != "stream/fanout" || k.Errors != 0 || k.Requests < 20*20 || k.Requests%20 != 0 || k.Connections != 20 {
		t.Errorf("got %+v, want every window write (about 50) delivered to each of 20 streams, no errors", k)
	}
	if !strings.Contains(stdout.String(), "stream/fanout p99 commit-to-delivery") {
		t.Errorf("the report lacks the stream's target:\n%s", stdout.String())
	}
}
