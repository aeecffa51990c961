// Command flagadmin-bench is the end-to-end load tool of flagadmin: it
// loads a deterministic world (internal/worldgen) into a database, runs the
// server on it, drives a fixed mix of admin API requests over real HTTP,
// and prints per kind of request its throughput and latency percentiles,
// next to the ceiling of a bare net/http handler on the same machine and
// the server's peak memory. Run it with --help for the flags.
//
// The server runs as a child process (this binary, re-executed with a
// hidden serve-child command) so that its CPU and memory are its own; the
// bare ceiling handler runs the same way. Each kind of request is sent
// alone, in its own phase, on every connection.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command of args and returns the exit code: 0 when the
// benchmark ran (whatever it measured), 1 when it could not, 2 for bad usage.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		var serve func(context.Context, []string, io.Reader, io.Writer, io.Writer) error
		switch args[0] {
		case childCommand:
			serve = serveChild
		case ceilingCommand:
			serve = serveCeiling
		case staticCommand:
			serve = serveStatic
		case proxyCommand:
			serve = serveProxy
		case "compare":
			return compareCommand(args[1:], stdout, stderr)
		case "gateway":
			return gatewayCommand(ctx, args[1:], stdout, stderr)
		case "unleash-ui":
			return unleashUICommand(ctx, args[1:], stdout, stderr)
		}
		if serve != nil {
			if err := serve(ctx, args[1:], stdin, stdout, stderr); err != nil {
				fmt.Fprintf(stderr, "flagadmin-bench %s: %v\n", args[0], err)
				return 1
			}
			return 0
		}
	}
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "flagadmin-bench:", err)
		return 2
	}
	if _, err := bench(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "flagadmin-bench:", err)
		return 1
	}
	return 0
}

// options are the flags of a benchmark run.
type options struct {
	DB, WorldFrom              string
	Events, Projects, Features int
	Seed                       uint64
	Rebuild, BuildOnly         bool
	URL, Token                 string
	Connections                int
	Duration, Warmup           time.Duration
	Kinds                      string
	Ceiling                    bool
	InProcess                  bool
	InPlace                    bool
	AccessLog                  bool
	// ResultCacheSize is the server's result cache, in bytes (0: off).
	ResultCacheSize int64
	// DBMaxConns bounds the server's connections to PostgreSQL or MySQL.
	DBMaxConns int
	// Streams and StreamRate drive the stream kind.
	Streams, StreamRate int
	JSON                string
	// CPUProfile (hidden flag) makes the server write a CPU profile of the
	// whole run to this file.
	CPUProfile string
}

const usageText = `Usage: flagadmin-bench [flags]
       flagadmin-bench compare BASE.json OTHER.json
       flagadmin-bench gateway --flagadmin PATH [flags]
       flagadmin-bench unleash-ui --flagadmin PATH --unleash DIR --db URL [flags]

Measures flagadmin end to end, over real HTTP, the way a deployer would:

 1. Loads a deterministic world (internal/worldgen: users, groups, tokens,
    projects, features with tags, and an event history with the real
    event-type mix, payloads of a few hundred bytes and two years of
    timestamps) into --db through the bulk path, showing progress on stderr.
    A database whose marker names the same world is reused (--rebuild
    forces a new load), after running the store's newer migrations on it
    in place when it was loaded under an older schema (it is loaded again
    if its schema then still differs from a fresh database's); an empty
    one is loaded; one holding anything else is
    left alone unless --rebuild. PostgreSQL and MySQL databases are created
    when missing: on PostgreSQL as a copy of --world-from when given (a
    copy of a database that holds the world, seconds instead of minutes;
    one that holds another world is loaded again as above).
 2. Starts the server on a fresh copy of that database (PostgreSQL:
    CREATE DATABASE ... TEMPLATE, SQLite: a copy of the file; dropped
    afterwards), so the run's writes never change the world and every run
    sees the same data (--in-place uses the world itself; MySQL always
    does). The server is this binary re-executed as a child process (the
    same code as cmd/flagadmin: httpapi over the Service and the store,
    with its collector pace and soft memory limit, but for those GOGC or
    GOMEMLIMIT set),
    listening on 127.0.0.1, so its memory and CPU are its own (--in-process
    keeps it in this process; memory: always does). With --url it targets
    a running server instead (holding the world of the same
    --events/--projects/--features/--seed).
 3. Measures the ceiling: a bare net/http handler (also a child process)
    answering every request with the bytes of a real unfiltered page of 50
    events, fetched from the server first.
 4. Drives each kind of request alone, one phase per kind: --connections
    keep-alive connections, each sending its next request as soon as the
    previous one is answered, for --warmup (not recorded) then --duration.
    A whole run takes about (kinds + 1) x (warmup + duration). The kinds, in
    order. First the varied workload: each request draws its parameters and
    its caller (the 3 admin tokens and 4 users of each root role, so
    visibility varies) at random, deterministically from its number, so
    caches see what users send rather than one request repeated:
      varied/none (one of the first 10 unfiltered pages), varied/feature,
      varied/project, varied/type, varied/createdBy (a random value of the
      world), varied/any-of (IS_ANY_OF of 2 to 8 random projects),
      varied/month (a random calendar month), varied/offset (a random
      offset over the whole history), varied/projects (the project list as
      a random caller), varied/mixed (a random varied read, with one request
      in 10 a lifecycle completion), varied/query (free text: a random
      feature's name 7 times in 10, a user's name 2 in 10, else the rare
      word of search/query), varied/common (free text: one of worldgen's
      common words, each in 1% to a third of the events, such as an
      environment's name).
    Then the fixed kinds, each repeating one request (filter values from
    worldgen's probes of known selectivity):
      search/none, search/feature, search/project, search/type-small,
      search/type-large, search/createdBy, search/project-any-of-5,
      search/date-range, search/query, search/offset-100000 (pages of 50
      with exact totals), deprecated/empty, deprecated/type (POST
      /api/admin/events/search), projects (GET /api/admin/projects),
      lifecycle/complete (kept and discarded in turn over all features, so
      every request writes an event), mixed/search+writes (search/none
      with one request in 10 a completion: each write makes the server's
      cached results stale, so the next pages are read again).
    Then the keyset kinds: cursor/first (the first page of 50),
    cursor/deep (the page of 50 after a cursor 90% deep into the history),
    export/ndjson and export/csv (the whole export, one connection; run
    --kinds export/ alone for the server's peak RSS to be the export's), and
    walk/cursor (adapters/client walking every event by next links).
    Only when --kinds names it, the stream kind: stream/fanout
    (--streams live streams of GET /api/admin/events/stream open while
    --stream-rate lifecycle completions/s are written; the latency of each
    delivery from the write's send, and the server's peak RSS).
 5. Prints one row per kind: requests/s, latency p50/p90/p99/max (exact,
    from every request), errors (transport errors and non-2xx answers),
    mean response size, throughput as a share of the ceiling, and the CPU
    time per request of the server, of the load generator and of the rest
    of the machine (the database); then the server's peak RSS (VmHWM) and
    the search targets with a verdict.
    --json writes all of it, with the machine and the database, to a file.

compare prints OTHER's latencies and throughput relative to BASE's, kind by
kind (two --json files); for PostgreSQL vs SQLite it checks "within 3x".

Flags:
`

// hiddenFlags are flags --help does not list.
var hiddenFlags = map[string]bool{"cpuprofile": true}

// parseOptions parses the flags of a benchmark run.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	o := options{Ceiling: true}
	fs := flag.NewFlagSet("flagadmin-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defaultDB := "sqlite:" + filepath.Join(os.TempDir(), "flagadmin-bench", "world.db")
	fs.StringVar(&o.DB, "db", defaultDB, "database `URL`: postgres://user@host:port/db?sslmode=disable, mysql://user:pass@host:port/db, sqlite:PATH, or memory: (in-process, rebuilt every run: for a smoke test)")
	fs.IntVar(&o.Events, "events", worldgen.DefaultEvents, "events in the world")
	fs.IntVar(&o.Projects, "projects", worldgen.DefaultProjects, "projects in the world")
	fs.IntVar(&o.Features, "features", worldgen.DefaultFeatures, "features in the world")
	fs.Uint64Var(&o.Seed, "seed", worldgen.DefaultSeed, "world seed")
	fs.BoolVar(&o.Rebuild, "rebuild", false, "drop the database of --db (all of it) and load the world again")
	fs.StringVar(&o.WorldFrom, "world-from", "", "PostgreSQL: create a missing --db as a copy of this `database` on the same server (CREATE DATABASE ... TEMPLATE), which then counts as --db's own content")
	fs.BoolVar(&o.BuildOnly, "build-only", false, "load (or check) the world, print the admin token, and exit")
	fs.StringVar(&o.URL, "url", "", "benchmark the server at this base `URL` (http://host:port) instead of starting one; --db is not used")
	fs.StringVar(&o.Token, "token", "", "Authorization value sent with every request (default: the world's first admin token, which a server built by this tool holds)")
	fs.IntVar(&o.Connections, "connections", 16, "concurrent keep-alive connections")
	fs.DurationVar(&o.Duration, "duration", 30*time.Second, "measured time of each kind's phase")
	fs.DurationVar(&o.Warmup, "warmup", 2*time.Second, "unrecorded warm-up before each phase")
	fs.StringVar(&o.Kinds, "kinds", "all", "comma-separated kinds or name prefixes to run, such as search/,projects")
	fs.BoolVar(&o.Ceiling, "ceiling", true, "measure the bare net/http ceiling (--ceiling=false to skip)")
	fs.BoolVar(&o.InProcess, "in-process", false, "run the server in this process (its RSS then includes the load generator)")
	fs.BoolVar(&o.InPlace, "in-place", false, "run on the world's database itself instead of a fresh copy of it (the lifecycle phase then adds events to the world; MySQL always runs in place)")
	fs.BoolVar(&o.AccessLog, "access-log", false, "have the server format its access log (written nowhere), as a deployed server would")
	fs.Int64Var(&o.ResultCacheSize, "result-cache-size", storecache.DefaultResultCacheSize, "the server's result cache (flagadmin serve --result-cache-size), in `bytes`; 0 disables it")
	fs.IntVar(&o.DBMaxConns, "db-max-conns", bunstore.DefaultMaxConns, "the server's connections to PostgreSQL or MySQL at most (flagadmin serve --db-max-conns)")
	fs.IntVar(&o.Streams, "streams", 1000, "open streams of the stream/fanout kind")
	fs.IntVar(&o.StreamRate, "stream-rate", 100, "lifecycle completions written per second during the stream/fanout kind")
	fs.StringVar(&o.JSON, "json", "", "write the results to this `file` as JSON")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the server to this file")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprint(out, usageText)
		fs.VisitAll(func(f *flag.Flag) {
			if hiddenFlags[f.Name] {
				return
			}
			name, usage := flag.UnquoteUsage(f)
			line := "  --" + f.Name
			if name != "" {
				line += " " + name
			}
			fmt.Fprintln(out, line)
			fmt.Fprintf(out, "    \t%s", strings.ReplaceAll(usage, "\n", "\n    \t"))
			if f.DefValue != "" && f.DefValue != "false" {
				fmt.Fprintf(out, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(out)
		})
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	var errs []string
	if o.Connections < 1 {
		errs = append(errs, "--connections must be at least 1")
	}
	if o.Duration <= 0 {
		errs = append(errs, "--duration must be positive")
	}
	if o.Warmup < 0 {
		errs = append(errs, "--warmup must not be negative")
	}
	if o.Streams < 1 || o.StreamRate < 1 {
		errs = append(errs, "--streams and --stream-rate must be at least 1")
	}
	if o.ResultCacheSize < 0 {
		errs = append(errs, "--result-cache-size must not be negative")
	}
	if o.DBMaxConns < 1 {
		errs = append(errs, "--db-max-conns must be 1 or more")
	}
	if o.Events < 1 || o.Projects < 1 || o.Features < 1 {
		errs = append(errs, "--events, --projects and --features must be at least 1")
	}
	if o.URL != "" && !strings.HasPrefix(o.URL, "http://") && !strings.HasPrefix(o.URL, "https://") {
		errs = append(errs, "--url must start with http:// or https://")
	}
	if len(errs) > 0 {
		return o, errors.New(strings.Join(errs, "; "))
	}
	o.URL = strings.TrimRight(o.URL, "/")
	return o, nil
}

// compareCommand runs "compare BASE.json OTHER.json".
func compareCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: flagadmin-bench compare BASE.json OTHER.json")
		return 2
	}
	base, err := readResults(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "flagadmin-bench compare:", err)
		return 1
	}
	other, err := readResults(args[1])
	if err != nil {
		fmt.Fprintln(stderr, "flagadmin-bench compare:", err)
		return 1
	}
	compareResults(stdout, base, other)
	return 0
}

// bench runs a whole benchmark: world, server, ceiling, phases, report.
func bench(ctx context.Context, o options, stdout, stderr io.Writer) (*results, error) {
	wcfg := worldgen.Config{Events: o.Events, Projects: o.Projects, Features: o.Features, Seed: o.Seed}
	if err := wcfg.Validate(); err != nil {
		return nil, err
	}
	w, err := worldgen.New(wcfg)
	if err != nil {
		return nil, err
	}
	runID := strconv.FormatInt(time.Now().UnixMilli(), 36)
	kinds, err := selectKinds(buildMix(w, runID), o.Kinds)
	if err != nil {
		return nil, err
	}
	r := &results{Tool: "flagadmin-bench", StartedAt: time.Now().UTC().Truncate(time.Second), Machine: collectMachine(),
		Config: runConfig{Connections: o.Connections, DurationSeconds: o.Duration.Seconds(), WarmupSeconds: o.Warmup.Seconds(),
			Kinds: o.Kinds, AccessLog: o.AccessLog, URL: o.URL}}
	if o.URL == "" {
		r.Config.ResultCacheBytes, r.Config.DBMaxConns = &o.ResultCacheSize, o.DBMaxConns
	}
	cfg := w.Config()
	r.World = worldInfo{Fingerprint: cfg.Fingerprint(), Events: cfg.Events, Projects: cfg.Projects, Features: cfg.Features,
		Users: cfg.Users, Seed: cfg.Seed}
	token := o.Token
	if token == "" {
		token = w.AdminSecret(0)
	}

	var srv *server
	if o.URL != "" {
		r.Database = dbInfo{URL: "(the server's)", System: "remote"}
		srv = &server{BaseURL: o.URL, Mode: "remote", stop: func() error { return nil }}
	} else {
		d, err := parseDatabase(o.DB)
		if err != nil {
			return nil, err
		}
		if o.WorldFrom != "" && d.System != "postgres" {
			return nil, fmt.Errorf("--world-from copies PostgreSQL databases; --db is %s", d.System)
		}
		d.template = o.WorldFrom
		store, closeStore, info, err := prepareWorld(ctx, d, w, o.Rebuild, stderr)
		if err != nil {
			return nil, err
		}
		r.World = info
		r.Database = dbInfo{URL: bunstore.RedactURL(d.URL), System: d.System, Version: d.version(ctx)}
		if o.BuildOnly {
			closeStore()
			fmt.Fprintf(stdout, "world ready in %s\nadmin token: %s\n", bunstore.RedactURL(d.URL), w.AdminSecret(0))
			return r, nil
		}
		if !d.Persistent {
			defer closeStore()
			srv, err = startInProcess(apiHandler(store, o.AccessLog, o.ResultCacheSize))
		} else {
			if err := closeStore(); err != nil {
				return nil, err
			}
			target := d
			if !o.InPlace {
				cp, ok, err := d.runCopy(ctx)
				if err != nil {
					return nil, fmt.Errorf("copy the world for the run: %w", err)
				}
				if ok {
					target = cp
					defer cp.drop(context.WithoutCancel(ctx))
					r.Database.RunCopy = bunstore.RedactURL(cp.URL)
				}
			}
			srv, err = startServer(ctx, o, target.URL, stderr)
		}
		if err != nil {
			return nil, fmt.Errorf("start the server: %w", err)
		}
	}
	defer srv.Stop()
	r.Server = serverInfo{Mode: srv.Mode, BaseURL: srv.BaseURL}

	client := newClient(o.Connections)
	spec := loadSpec{BaseURL: srv.BaseURL, Token: token, Connections: o.Connections, Warmup: o.Warmup, Duration: o.Duration,
		ServerPID: srv.PID, InProcess: srv.Mode == "in-process", Streams: o.Streams, StreamRate: o.StreamRate}
	pagePath := searchPath(w.Probes()[0].Params) // no filter, limit 50
	page, err := fetch(ctx, client, spec, request{Method: "GET", Path: pagePath})
	if err != nil {
		return nil, fmt.Errorf("the server does not answer a search: %w", err)
	}
	phases := len(kinds)
	if o.Ceiling {
		phases++
	}
	fmt.Fprintf(stderr, "running %d phases of %s + %s warm-up on %d connections (about %s)\n", phases, o.Duration, o.Warmup,
		o.Connections, (time.Duration(phases) * (o.Duration + o.Warmup)).Round(time.Second))
	done := 0
	progressLine := func(p phaseResult) {
		done++
		fmt.Fprintf(stderr, "[%d/%d] %-26s %9.1f req/s  p50 %7.2f ms  p99 %7.2f ms  errors %d\n", done, phases, p.Kind, p.RPS, p.P50Ms, p.P99Ms, p.Errors)
	}

	if o.Ceiling {
		ceiling, err := runCeiling(ctx, client, spec, page, pagePath, srv.Mode == "in-process", stderr)
		if err != nil {
			return nil, fmt.Errorf("ceiling: %w", err)
		}
		r.Ceiling = &ceiling
		progressLine(ceiling)
	}
	for _, k := range kinds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := runKind(ctx, client, spec, k)
		client.CloseIdleConnections()
		if r.Ceiling != nil && r.Ceiling.RPS > 0 {
			p.CeilingFraction = p.RPS / r.Ceiling.RPS
		}
		if srv.PID != 0 {
			p.ServerPeakRSSBytes, _ = srv.PeakRSS()
		}
		r.Kinds = append(r.Kinds, p)
		progressLine(p)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if srv.PID != 0 {
		if rss, err := srv.PeakRSS(); err == nil {
			r.Server.PeakRSSBytes, r.Server.PeakRSSMiB = rss, float64(rss)/mib
		}
	}
	if err := srv.Stop(); err != nil {
		fmt.Fprintf(stderr, "stopping the server: %v\n", err)
	}
	r.Targets = evaluate(r)

	printHeader(stdout, r)
	fmt.Fprintln(stdout, "kinds:")
	printKinds(stdout, kinds)
	fmt.Fprintln(stdout)
	printTable(stdout, r)
	fmt.Fprintln(stdout)
	printTargets(stdout, r.Targets)
	if o.JSON != "" {
		if err := writeJSON(o.JSON, r); err != nil {
			return r, fmt.Errorf("write %s: %w", o.JSON, err)
		}
		fmt.Fprintf(stderr, "results written to %s\n", o.JSON)
	}
	return r, nil
}

// startServer starts the API server over the database at dbURL: a child
// process, or in this process with --in-process.
func startServer(ctx context.Context, o options, dbURL string, stderr io.Writer) (*server, error) {
	if !o.InProcess {
		o.DB = dbURL
		return startChild(ctx, childArgs(o), stderr)
	}
	store, closeStore, err := openStore(ctx, dbURL, bunstore.WithMaxConns(o.DBMaxConns))
	if err != nil {
		return nil, err
	}
	srv, err := startInProcess(apiHandler(store, o.AccessLog, o.ResultCacheSize))
	if err != nil {
		closeStore()
		return nil, err
	}
	stop := srv.stop
	srv.stop = sync.OnceValue(func() error { return errors.Join(stop(), closeStore()) })
	return srv, nil
}

// runCeiling serves body from a bare net/http handler (a child process,
// or this process when the server runs in-process too) and drives it like
// a kind of request: GET path with the same connections and durations.
func runCeiling(ctx context.Context, client *http.Client, spec loadSpec, body []byte, path string, inProcess bool, stderr io.Writer) (phaseResult, error) {
	var srv *server
	var err error
	if inProcess {
		srv, err = startInProcess(ceilingHandler(body))
	} else {
		f, ferr := os.CreateTemp("", "flagadmin-bench-page-*.json")
		if ferr != nil {
			return phaseResult{}, ferr
		}
		defer os.Remove(f.Name())
		if _, ferr := f.Write(body); ferr != nil {
			f.Close()
			return phaseResult{}, ferr
		}
		if ferr := f.Close(); ferr != nil {
			return phaseResult{}, ferr
		}
		srv, err = startChild(ctx, []string{ceilingCommand, "--body", f.Name()}, stderr)
	}
	if err != nil {
		return phaseResult{}, err
	}
	defer srv.Stop()
	spec.BaseURL, spec.ServerPID, spec.InProcess = srv.BaseURL, srv.PID, inProcess
	k := kind{Name: "ceiling", About: fmt.Sprintf("bare net/http handler returning the %d-byte page of GET %s", len(body), path),
		Class: classCeiling, Next: fixed(request{Method: "GET", Path: path})}
	p := runPhase(ctx, client, spec, k)
	client.CloseIdleConnections()
	return p, nil
}
