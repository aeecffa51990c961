package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// The benchmark in front of the real Unleash (flagadmin-bench unleash-ui,
// scripts/bench-unleash-ui.sh): unleash-server 8.2.0 (testdata/unleash)
// on an Unleash database the script built, flagadmin serve following that
// database into memory with --upstream at that Unleash, and, for the
// proxy's ceiling, a bare httputil.ReverseProxy in front of the same
// Unleash (a child of this binary, serve-proxy). Every phase alternates
// its targets request by request or phase by phase, so that the noise of
// a shared machine falls on all of them alike.
//
//   - search: the request of Unleash's event log page, GET
//     /api/admin/search/events?offset=&limit=25&from=IS:&to=IS:, with the
//     admin's session cookie as the browser sends it, over several date
//     ranges ending on --today and pages; --loads loads each way, direct and through
//     flagadmin alternating: median and p90, and the ratio;
//   - read-your-writes: --completions lifecycle completions of the flags
//     of the project default in turn (the open-source Unleash lets a
//     session change no other project's) sent through flagadmin, each followed at once by searches
//     through flagadmin until one shows its event: the time from sending
//     the completion to that answer;
//   - a flag's events: GET /api/admin/search/events?feature=IS:<flag>, as
//     a flag's page asks, each request another flag (a shuffle of every
//     flag of the database, walked once across the whole phase, so that
//     none repeats within as many requests as there are flags and
//     flagadmin's result cache, on as by default, answers none), on
//     --concurrency connections, --rounds rounds of --duration per target
//     (direct, flagadmin in turn) after a warm-up round: requests/s,
//     p50/p99 and the ratio, after checking that both answer the same events and totals for a sample of
//     flags;
//   - latency: --requests sequential GET /api/admin/ui-config each way
//     (direct, flagadmin, bare proxy in turn): percentiles, the added p50;
//   - throughput: the web UI's main script (from index.html) fetched on
//     --concurrency connections, --rounds rounds of --duration per target:
//     requests/s, the ratios, and the CPU each process used per request;
//     once uncompressed (the proxy's worst case: the most bytes per
//     request) and once with Accept-Encoding: gzip, as a browser asks
//     (Unleash then compresses the script at each request).

// proxyCommand is the hidden command of the bare reverse proxy.
const proxyCommand = "serve-proxy"

// unleashUIOptions are the flags of flagadmin-bench unleash-ui.
type unleashUIOptions struct {
	Flagadmin, Unleash, DB string
	User, Password         string
	Loads, Completions     int
	Requests               int
	Duration               time.Duration
	Rounds, Concurrency    int
	Asset                  string
	FlagadminLog           string
	// Target is the store flagadmin follows Unleash into: memory, or
	// sqlite (a new file in a temporary directory, or SQLiteFile).
	Target, SQLiteFile string
	// Today is the day the event log page is opened: the end of its date
	// ranges.
	Today time.Time
	// Phases are the phases to run (uiPhases), all when empty.
	Phases []string
}

// uiPhases are the phases of unleash-ui, in the order they run.
var uiPhases = []string{"eventlog", "read-your-writes", "feature", "latency", "throughput"}

func unleashUICommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flagadmin-bench unleash-ui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o unleashUIOptions
	fs.StringVar(&o.Flagadmin, "flagadmin", "", "the flagadmin binary to run (required)")
	fs.StringVar(&o.Unleash, "unleash", "", "the directory of Unleash's start.mjs with node_modules installed, testdata/unleash (required)")
	fs.StringVar(&o.DB, "db", "", "URL of the Unleash 8.2.0 PostgreSQL database (required; scripts/bench-unleash-ui.sh builds it)")
	fs.StringVar(&o.User, "user", "admin", "the Unleash user to sign in as")
	fs.StringVar(&o.Password, "password", "unleash4all", "its password")
	fs.IntVar(&o.Loads, "loads", 20, "loads of the event log's search, each way")
	fs.IntVar(&o.Completions, "completions", 60, "lifecycle completions of the read-your-writes phase")
	fs.IntVar(&o.Requests, "requests", 1000, "sequential requests of the latency phase, each way")
	fs.DurationVar(&o.Duration, "duration", 5*time.Second, "length of each throughput phase")
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds of throughput phases (direct, flagadmin, bare proxy in each)")
	fs.IntVar(&o.Concurrency, "concurrency", 8, "connections of the throughput phases")
	fs.StringVar(&o.Asset, "asset", "", "path of the static asset of the throughput phases; default the script index.html loads")
	fs.StringVar(&o.FlagadminLog, "flagadmin-log", "", "file for flagadmin's log (default: a temporary file, removed)")
	fs.StringVar(&o.Target, "target", "memory", "the store flagadmin follows Unleash into: memory, or sqlite (a new file in a temporary directory)")
	o.Today = time.Now().UTC()
	fs.Func("today", "the day (YYYY-MM-DD) the event log page is opened, where its date ranges end (default the current day; scripts/bench-unleash-ui.sh gives the generated world's last day, so that the page's last year holds the newest half of the log, as on a live Unleash)",
		func(v string) (err error) {
			if o.Today, err = time.Parse(time.DateOnly, v); err != nil {
				return errors.New("want a day as YYYY-MM-DD")
			}
			return nil
		})
	fs.StringVar(&o.SQLiteFile, "sqlite-file", "", "with --target sqlite: the SQLite file of the copy, kept after the run; one that follows --db already is resumed, not imported again")
	fs.Func("phases", "comma-separated phases to run, of "+strings.Join(uiPhases, ", ")+" (default all)", func(v string) error {
		for _, p := range strings.Split(v, ",") {
			if !slices.Contains(uiPhases, p) {
				return fmt.Errorf("no phase %q: want some of %s", p, strings.Join(uiPhases, ", "))
			}
			o.Phases = append(o.Phases, p)
		}
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flagadmin-bench unleash-ui --flagadmin PATH --unleash DIR --db URL [flags]\n\n"+
			"Measures flagadmin serve --follow --upstream in front of the real Unleash against Unleash directly.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.Target != "memory" && o.Target != "sqlite" {
		fmt.Fprintf(stderr, "flagadmin-bench unleash-ui: --target must be memory or sqlite, not %q\n", o.Target)
		return 2
	}
	if o.Flagadmin == "" || o.Unleash == "" || o.DB == "" || fs.NArg() > 0 || o.Loads < 1 || o.Completions < 1 || o.Requests < 1 || o.Rounds < 1 || o.Concurrency < 1 {
		fs.Usage()
		return 2
	}
	if err := benchUnleashUI(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "flagadmin-bench unleash-ui:", err)
		return 1
	}
	return 0
}

func benchUnleashUI(ctx context.Context, o unleashUIOptions, stdout, stderr io.Writer) error {
	fmt.Fprintf(stdout, "load before: %s\n", loadAverage())
	un, err := startUnleash(ctx, o.Unleash, o.DB)
	if err != nil {
		return err
	}
	defer un.stop()
	dir, err := os.MkdirTemp("", "flagadmin-unleash-ui")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	logFile := o.FlagadminLog
	if logFile == "" {
		logFile = filepath.Join(dir, "flagadmin.log")
	}
	store := "memory:"
	if o.Target == "sqlite" {
		file := o.SQLiteFile
		if file == "" {
			file = filepath.Join(dir, "copy.db")
		}
		store = "sqlite:" + file
	}
	start := time.Now()
	fa, err := startFlagadminArgs(ctx, o.Flagadmin, logFile, 20*time.Minute,
		"serve", "--db", store, "--follow", o.DB, "--upstream", un.base)
	if err != nil {
		return err
	}
	defer fa.stop()
	fmt.Fprintf(stdout, "Unleash %s (pid %d); flagadmin %s (pid %d), serve --db %s --follow --upstream: ready (the copy imported or resumed) after %s\n",
		un.base, un.pid, fa.base, fa.pid, o.Target+":", time.Since(start).Round(100*time.Millisecond))
	bare, err := startChild(ctx, []string{proxyCommand, "--upstream", un.base}, stderr)
	if err != nil {
		return err
	}
	defer bare.Stop()
	fmt.Fprintf(stdout, "bare httputil.ReverseProxy %s (pid %d)\n", bare.BaseURL, bare.PID)

	client := newBenchClient(o.Concurrency)
	cookie, err := signIn(ctx, client, fa.base, o.User, o.Password)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "signed in as %s through flagadmin (POST /auth/simple/login): session cookie %s\n\n", o.User, cookie.Name)

	// A phase that fails is reported and the next one runs: the run fails
	// at the end.
	var failed []string
	phase := func(name string, run func() error) {
		if len(o.Phases) > 0 && !slices.Contains(o.Phases, name) {
			return
		}
		if err := run(); err != nil {
			fmt.Fprintf(stdout, "%s: FAILED: %v\n\n", name, err)
			failed = append(failed, name)
		}
	}
	targets := []target{{"direct", un.base, un.pid}, {"via flagadmin", fa.base, fa.pid}, {"bare proxy", bare.BaseURL, bare.PID}}
	phase("eventlog", func() error { return benchEventLog(ctx, client, un.base, fa.base, cookie, o.Loads, o.Today, stdout) })
	phase("read-your-writes", func() error { return benchReadYourWrites(ctx, client, fa.base, o.DB, cookie, o.Completions, stdout) })
	phase("feature", func() error { return benchFeature(ctx, targets[:2], cookie, o, stdout) })
	phase("latency", func() error { return benchSmall(ctx, client, targets, cookie, o.Requests, stdout) })
	phase("throughput", func() error {
		asset := o.Asset
		if asset == "" {
			var err error
			if asset, err = mainScript(ctx, client, un.base); err != nil {
				return err
			}
		}
		for _, encoding := range []string{"", "gzip"} {
			if err := benchAsset(ctx, targets, un.pid, asset, encoding, o, stdout); err != nil {
				return fmt.Errorf("%s: %w", cmp.Or(encoding, "uncompressed"), err)
			}
		}
		return nil
	})
	rss, err := peakRSS(fa.pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "flagadmin peak RSS over the whole run: %.0f MiB\n", float64(rss)/(1<<20))
	fmt.Fprintf(stdout, "load after: %s\n", loadAverage())
	if len(failed) > 0 {
		return fmt.Errorf("failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// target is one way to Unleash: directly, through flagadmin, through the
// bare proxy.
type target struct {
	name string
	base string
	pid  int
}

// unleashProcess is a running unleash-server.
type unleashProcess struct {
	base string
	pid  int
	stop func()
}

// startUnleash runs node start.mjs (dir's) on db on a free port of
// 127.0.0.1 and waits until it answers /health. Its output is shown when
// it fails to start.
func startUnleash(ctx context.Context, dir, db string) (*unleashProcess, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	out := &syncbuffer.Buffer{}
	cmd := exec.Command("node", "start.mjs", db, strconv.Itoa(port))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start Unleash (node start.mjs in %s): %w", dir, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p := &unleashProcess{base: fmt.Sprintf("http://127.0.0.1:%d", port), pid: cmd.Process.Pid, stop: func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}}
	if err := waitFor(ctx, p.base+"/health", 3*time.Minute, exited); err != nil {
		p.stop()
		return nil, fmt.Errorf("Unleash: %w\n%s", err, out)
	}
	return p, nil
}

// startFlagadminArgs runs bin with args and --addr on a free port of
// 127.0.0.1, its log into logFile, and waits until it answers /ready
// (following: until the copy is imported), at most timeout.
func startFlagadminArgs(ctx context.Context, bin, logFile string, timeout time.Duration, args ...string) (*flagadminProcess, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append(args, "--addr", addr)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	log.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p := &flagadminProcess{base: "http://" + addr, pid: cmd.Process.Pid, stop: func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}}
	if err := waitFor(ctx, p.base+"/ready", timeout, exited); err != nil {
		p.stop()
		tail, _ := os.ReadFile(logFile)
		return nil, fmt.Errorf("flagadmin: %w\n%s", err, tail[max(0, len(tail)-4096):])
	}
	return p, nil
}

// waitFor polls url until it answers 200, the process exits, or timeout.
func waitFor(ctx context.Context, url string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("the process exited at start")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %s", url, timeout)
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// signIn signs in at base as the web UI does (POST /auth/simple/login)
// and returns the session cookie.
func signIn(ctx context.Context, c *http.Client, base, user, password string) (*http.Cookie, error) {
	body, _ := json.Marshal(map[string]string{"username": user, "password": password})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/auth/simple/login", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sign in as %s: %d %s", user, resp.StatusCode, data)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "unleash-session" {
			return &http.Cookie{Name: ck.Name, Value: ck.Value}, nil
		}
	}
	return nil, fmt.Errorf("sign in as %s: no unleash-session cookie in the answer", user)
}

// get sends GET base+path with the cookie and returns status, body and
// the time to the end of the body.
func get(ctx context.Context, c *http.Client, url string, cookie *http.Cookie) (int, []byte, http.Header, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, nil, 0, err
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, body, resp.Header, time.Since(start), err
}

// eventLogQueries are the searches of --loads loads of the event log page:
// a user on the page over the last year (the page's default range),
// paging on, then narrowing the range, then looking at an older year.
func eventLogQueries(n int, today time.Time) []string {
	day := func(t time.Time) string { return "IS:" + t.Format(time.DateOnly) }
	ranges := [][2]time.Time{
		{today.AddDate(-1, 0, 0), today},
		{today.AddDate(0, -6, 0), today},
		{today.AddDate(-2, 0, 0), today.AddDate(-1, 0, 0)},
		{today.AddDate(0, -9, 0), today.AddDate(0, -3, 0)},
	}
	var qs []string
	for i := range n {
		r := ranges[(i/5)%len(ranges)]
		offset := 25 * (i % 5)
		qs = append(qs, fmt.Sprintf("/api/admin/search/events?offset=%d&limit=25&from=%s&to=%s", offset, url.QueryEscape(day(r[0])), url.QueryEscape(day(r[1]))))
	}
	return qs
}

// searchAnswer is what the bench reads of an event search's answer.
type searchAnswer struct {
	Events []struct {
		ID   int64           `json:"id"`
		Data json.RawMessage `json:"data"`
	} `json:"events"`
	Total int64 `json:"total"`
}

func benchEventLog(ctx context.Context, c *http.Client, direct, via string, cookie *http.Cookie, loads int, today time.Time, stdout io.Writer) error {
	queries := eventLogQueries(loads, today)
	// One load each way first, not counted: Unleash's first search warms its
	// caches and connections, flagadmin's its session check.
	for _, base := range []string{direct, via} {
		if status, body, _, _, err := get(ctx, c, base+queries[0], cookie); err != nil || status != http.StatusOK {
			return fmt.Errorf("GET %s%s: %d %v %s", base, queries[0], status, err, body)
		}
	}
	var dLat, fLat []time.Duration
	mismatches := 0
	for _, q := range queries {
		var totals [2]int64
		var ids [2]string
		for i, base := range []string{direct, via} {
			status, body, hdr, d, err := get(ctx, c, base+q, cookie)
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("GET %s%s: %d %v %s", base, q, status, err, body)
			}
			if i == 1 && hdr.Get("X-Flagadmin-Source") != "local" {
				return fmt.Errorf("GET %s%s: not answered by flagadmin itself", base, q)
			}
			var a searchAnswer
			if err := json.Unmarshal(body, &a); err != nil {
				return fmt.Errorf("GET %s%s: %v", base, q, err)
			}
			totals[i] = a.Total
			for _, e := range a.Events {
				ids[i] += strconv.FormatInt(e.ID, 10) + ","
			}
			if i == 0 {
				dLat = append(dLat, d)
			} else {
				fLat = append(fLat, d)
			}
		}
		if totals[0] != totals[1] || ids[0] != ids[1] {
			mismatches++
		}
	}
	dp, fp := percentiles(dLat), percentiles(fLat)
	fmt.Fprintf(stdout, "event log page: GET /api/admin/search/events?offset=&limit=25&from=IS:&to=IS:, %d loads each way (4 date ranges, 5 pages each), alternating, session cookie\n", loads)
	fmt.Fprintf(stdout, "  e.g. %s\n", queries[0])
	fmt.Fprintf(stdout, "  %-15s %10s %10s\n", "", "median", "p90")
	fmt.Fprintf(stdout, "  %-15s %10v %10v\n", "Unleash", dp[0], dp[1])
	fmt.Fprintf(stdout, "  %-15s %10v %10v\n", "via flagadmin", fp[0], fp[1])
	fmt.Fprintf(stdout, "  flagadmin is %.0fx faster (median), %.0fx (p90); pages differing from Unleash's: %d of %d\n",
		float64(dp[0])/float64(fp[0]), float64(dp[1])/float64(fp[1]), mismatches, loads)

	// The page's own first request, as the page sends it when it opens
	// and every 15 s while open, and every user opening it the same day:
	// one request repeated, which flagadmin's result cache answers while
	// no event arrives (the varied loads above are the cache-off path).
	dLat, fLat = nil, nil
	for range loads {
		for i, base := range []string{direct, via} {
			status, body, _, d, err := get(ctx, c, base+queries[0], cookie)
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("GET %s%s: %d %v %s", base, queries[0], status, err, body)
			}
			if i == 0 {
				dLat = append(dLat, d)
			} else {
				fLat = append(fLat, d)
			}
		}
	}
	dp, fp = percentiles(dLat), percentiles(fLat)
	fmt.Fprintf(stdout, "  the page's first request repeated (opening the page, its 15 s poll), %d loads each way:\n", loads)
	fmt.Fprintf(stdout, "  %-15s %10v %10v\n", "Unleash", dp[0], dp[1])
	fmt.Fprintf(stdout, "  %-15s %10v %10v\n", "via flagadmin", fp[0], fp[1])
	fmt.Fprintf(stdout, "  flagadmin is %.0fx faster (median), %.0fx (p90)\n\n", float64(dp[0])/float64(fp[0]), float64(dp[1])/float64(fp[1]))
	return nil
}

// searchAgain is how long read-your-writes waits before searching again
// for a write's event that its search did not show yet.
const searchAgain = 10 * time.Millisecond

func benchReadYourWrites(ctx context.Context, c *http.Client, via, db string, cookie *http.Cookie, n int, stdout io.Writer) error {
	flags, err := defaultFlags(ctx, db)
	if err != nil {
		return err
	}
	run := strconv.FormatInt(time.Now().Unix(), 36)
	var seen, answered []time.Duration
	lagged, searches, unavailable := 0, 0, 0
	for i := range n {
		f := flags[i%len(flags)]
		value := fmt.Sprintf("bench-%s-%d", run, i)
		body, _ := json.Marshal(map[string]string{"status": "kept", "statusValue": value})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost,
			via+"/api/admin/projects/default/features/"+url.PathEscape(f)+"/lifecycle/complete", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.AddCookie(cookie)
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("complete %s through flagadmin: %d %s", f, resp.StatusCode, data)
		}
		answered = append(answered, time.Since(start))
		if resp.Header.Get("X-Flagadmin-Lag") != "" {
			lagged++
		}
		search := via + "/api/admin/search/events?limit=1&type=IS:feature-completed&feature=IS:" + url.QueryEscape(f)
		for {
			searches++
			status, body, _, _, err := get(ctx, c, search, cookie)
			if err == nil && status == http.StatusServiceUnavailable { // the store did not answer in time: not shown yet
				unavailable++
				continue
			}
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("GET %s: %d %v %s", search, status, err, body)
			}
			var a searchAnswer
			if err := json.Unmarshal(body, &a); err != nil {
				return err
			}
			if len(a.Events) > 0 && bytes.Contains(a.Events[0].Data, []byte(`"`+value+`"`)) {
				break
			}
			if time.Since(start) > time.Minute {
				return fmt.Errorf("the completion of %s is not in flagadmin's search after a minute", f)
			}
			// Look again soon, as a client polling for its write would:
			// not in a busy loop, which would measure the load it makes.
			time.Sleep(searchAgain)
		}
		seen = append(seen, time.Since(start))
	}
	sp, ap := percentiles(seen), percentiles(answered)
	fmt.Fprintf(stdout, "read-your-writes: %d lifecycle completions (POST /api/admin/projects/default/features/NAME/lifecycle/complete, %d flags in turn) through flagadmin, each then searched through flagadmin (again every %s until shown)\n", n, len(flags), searchAgain)
	fmt.Fprintf(stdout, "  %-38s %9s %9s %9s %9s\n", "", "p50", "p90", "p99", "max")
	fmt.Fprintf(stdout, "  %-38s %9v %9v %9v %9v\n", "completion answered (waits for the copy)", ap[0], ap[1], ap[2], maxDuration(answered).Round(time.Microsecond))
	fmt.Fprintf(stdout, "  %-38s %9v %9v %9v %9v\n", "event in flagadmin's search", sp[0], sp[1], sp[2], maxDuration(seen).Round(time.Microsecond))
	slowest := 0
	for i, d := range seen {
		if d > seen[slowest] {
			slowest = i
		}
	}
	fmt.Fprintf(stdout, "  answers with X-Flagadmin-Lag: %d; searches sent: %d (%d more than one per completion; %d answered 503, the store busy); the slowest: completion %d of %d\n\n",
		lagged, searches, searches-n, unavailable, slowest+1, n)
	return nil
}

func maxDuration(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// defaultFlags returns the flags of the project default that are not
// archived: Unleash's open-source build lets a session change flags of that
// project only.
func defaultFlags(ctx context.Context, db string) ([]string, error) {
	return flagNames(ctx, db, "WHERE project = 'default' AND archived_at IS NULL", "in the project default that is not archived")
}

// allFlags returns the name of every flag of db, archived ones too, in
// name order.
func allFlags(ctx context.Context, db string) ([]string, error) {
	return flagNames(ctx, db, "", "")
}

// flagNames returns the names of the flags of db that where (a WHERE
// clause, or "") keeps, in name order; none is an error that says which
// ("the database has no flag " + which).
func flagNames(ctx context.Context, db, where, which string) ([]string, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT name FROM features "+where+" ORDER BY name")
	if err != nil {
		return nil, err
	}
	flags, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err == nil && len(flags) == 0 {
		err = errors.New(strings.TrimSpace("the database has no flag " + which))
	}
	return flags, err
}

// featureQuery is the search of a flag's events, as a flag's event log asks.
func featureQuery(flag string) string {
	return "/api/admin/search/events?offset=0&limit=25&feature=" + url.QueryEscape("IS:"+flag)
}

// featureWarmup is how long the feature phase asks each target before it
// measures.
const featureWarmup = 3 * time.Second

// featureSample is how many flags the feature phase checks both targets
// answer alike before measuring.
const featureSample = 50

// benchFeature measures the search of a flag's events through each of
// targets (Unleash directly, then flagadmin) in turn, each request another
// flag: the shuffled flags (a fixed seed) walked by one counter across
// every phase of every target, so that a flag repeats only after every
// other has been asked, whichever target asked it. It first checks, on
// featureSample flags, that both answer the same events and total.
func benchFeature(ctx context.Context, targets []target, cookie *http.Cookie, o unleashUIOptions, stdout io.Writer) error {
	flags, err := allFlags(ctx, o.DB)
	if err != nil {
		return err
	}
	rand.New(rand.NewPCG(20261205, 1)).Shuffle(len(flags), func(i, j int) { flags[i], flags[j] = flags[j], flags[i] })
	c := newBenchClient(o.Concurrency)
	differing := 0
	for _, flag := range flags[:min(featureSample, len(flags))] {
		var answers [2]string
		for i, t := range targets {
			status, body, _, _, err := get(ctx, c, t.base+featureQuery(flag), cookie)
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("GET %s%s: %d %v %s", t.base, featureQuery(flag), status, err, body)
			}
			var a searchAnswer
			if err := json.Unmarshal(body, &a); err != nil {
				return fmt.Errorf("GET %s%s: %v", t.base, featureQuery(flag), err)
			}
			answers[i] = strconv.FormatInt(a.Total, 10) + ":"
			for _, e := range a.Events {
				answers[i] += strconv.FormatInt(e.ID, 10) + ","
			}
		}
		if answers[0] != answers[1] {
			differing++
		}
	}
	if differing > 0 {
		return fmt.Errorf("%d of %d flags' searches answered differently through flagadmin", differing, featureSample)
	}
	var next atomic.Int64
	next.Store(featureSample)
	type tally struct {
		requests int
		elapsed  time.Duration
		cpu      time.Duration
		lat      []time.Duration
	}
	tallies := make([]tally, len(targets))
	// A round of featureWarmup per target first, not counted: Unleash's
	// first searches warm its connections, and flagadmin may still be
	// busy with what it does once after it starts (the log's tree read
	// from its leaves, the follower's first reading of Unleash's world).
	for _, t := range targets {
		if _, _, err := featureLoad(ctx, c, t.base, cookie, flags, &next, o.Concurrency, featureWarmup); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	for range o.Rounds {
		for j, t := range targets {
			cpu0, err := cpuTime(t.pid)
			if err != nil {
				return err
			}
			lat, elapsed, err := featureLoad(ctx, c, t.base, cookie, flags, &next, o.Concurrency, o.Duration)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			cpu1, err := cpuTime(t.pid)
			if err != nil {
				return err
			}
			tallies[j].requests += len(lat)
			tallies[j].elapsed += elapsed
			tallies[j].cpu += cpu1 - cpu0
			tallies[j].lat = append(tallies[j].lat, lat...)
		}
	}
	fmt.Fprintf(stdout, "a flag's events: GET %s, each request another of %d flags (none repeats within %d requests), %d connections, %d rounds of %v per target (direct, flagadmin in turn) after %v each not counted; the same events and totals for %d flags both ways\n",
		featureQuery("<flag>"), len(flags), len(flags), o.Concurrency, o.Rounds, o.Duration, featureWarmup, featureSample)
	fmt.Fprintf(stdout, "  %-15s %8s %9s %9s %9s %12s\n", "", "req/s", "p50", "p90", "p99", "CPU/req")
	rates := make([]float64, len(targets))
	for j, t := range targets {
		rates[j] = float64(tallies[j].requests) / tallies[j].elapsed.Seconds()
		p := percentiles(tallies[j].lat)
		fmt.Fprintf(stdout, "  %-15s %8.0f %9v %9v %9v %12v\n", t.name, rates[j], p[0], p[1], p[2],
			(tallies[j].cpu / time.Duration(max(1, tallies[j].requests))).Round(time.Microsecond))
	}
	fmt.Fprintf(stdout, "  flagadmin answers %.1fx the requests per second of Unleash\n\n", rates[1]/rates[0])
	return nil
}

// featureLoad searches flags' events at base on conns connections for d,
// each request the flag at the next index of next (wrapping around), and
// returns each answer's latency and the time it took.
func featureLoad(ctx context.Context, c *http.Client, base string, cookie *http.Cookie, flags []string, next *atomic.Int64, conns int, d time.Duration) ([]time.Duration, time.Duration, error) {
	lats := make([][]time.Duration, conns)
	errs := make(chan error, conns)
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				flag := flags[int(next.Add(1)-1)%len(flags)]
				status, body, _, took, err := get(ctx, c, base+featureQuery(flag), cookie)
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("GET %s: %d %s", featureQuery(flag), status, body)
				}
				if err != nil {
					errs <- err
					return
				}
				lats[i] = append(lats[i], took)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return nil, 0, err
	}
	return slices.Concat(lats...), elapsed, nil
}

func benchSmall(ctx context.Context, c *http.Client, targets []target, cookie *http.Cookie, n int, stdout io.Writer) error {
	const path = "/api/admin/ui-config"
	lat := make([][]time.Duration, len(targets))
	for i := range n + 50 { // 50 to warm up
		for j, t := range targets {
			status, body, _, d, err := get(ctx, c, t.base+path, cookie)
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("GET %s%s: %d %v %s", t.base, path, status, err, body)
			}
			if i >= 50 {
				lat[j] = append(lat[j], d)
			}
		}
	}
	fmt.Fprintf(stdout, "latency: %d sequential GET %s each way (direct, flagadmin, bare proxy in turn; one keep-alive connection each)\n", n, path)
	fmt.Fprintf(stdout, "  %-15s %9s %9s %9s %12s\n", "", "p50", "p90", "p99", "added p50")
	p0 := percentiles(lat[0])
	for j, t := range targets {
		p := percentiles(lat[j])
		added := ""
		if j > 0 {
			added = (p[0] - p0[0]).String()
		}
		fmt.Fprintf(stdout, "  %-15s %9v %9v %9v %12s\n", t.name, p[0], p[1], p[2], added)
	}
	fmt.Fprintln(stdout)
	return nil
}

var scriptSrc = regexp.MustCompile(`<script[^>]+src="(/[^"]+\.js)"`)

// mainScript returns the path of the script Unleash's index.html loads.
func mainScript(ctx context.Context, c *http.Client, base string) (string, error) {
	status, body, _, _, err := get(ctx, c, base+"/", nil)
	if err != nil || status != http.StatusOK {
		return "", fmt.Errorf("GET %s/: %d %v", base, status, err)
	}
	m := scriptSrc.FindSubmatch(body)
	if m == nil {
		return "", errors.New("no script in Unleash's index.html")
	}
	return string(m[1]), nil
}

// benchAsset measures the throughput of asset through each target, asked
// for with Accept-Encoding: encoding ("" asks for none).
func benchAsset(ctx context.Context, targets []target, unleashPID int, asset, encoding string, o unleashUIOptions, stdout io.Writer) error {
	size, err := fetchEncoded(ctx, newBenchClient(1), targets[0].base+asset, encoding)
	if err != nil {
		return err
	}
	type tally struct {
		requests float64
		elapsed  time.Duration
		cpu      time.Duration // of the target's process (Unleash itself when direct)
		upCPU    time.Duration // of Unleash while the target ran
	}
	tallies := make([]tally, len(targets))
	for range o.Rounds {
		for j, t := range targets {
			c := newBenchClient(o.Concurrency)
			if _, err := fetchEncoded(ctx, c, t.base+asset, encoding); err != nil { // a connection up
				return err
			}
			cpu0, err := cpuTime(t.pid)
			if err != nil {
				return err
			}
			up0, err := cpuTime(unleashPID)
			if err != nil {
				return err
			}
			start := time.Now()
			n, err := assetLoad(ctx, c, t.base+asset, encoding, o.Concurrency, o.Duration)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			elapsed := time.Since(start)
			cpu1, err := cpuTime(t.pid)
			if err != nil {
				return err
			}
			up1, err := cpuTime(unleashPID)
			if err != nil {
				return err
			}
			c.CloseIdleConnections()
			tallies[j].requests += float64(n)
			tallies[j].elapsed += elapsed
			tallies[j].cpu += cpu1 - cpu0
			tallies[j].upCPU += up1 - up0
		}
	}
	asked := "no compression asked"
	if encoding != "" {
		asked = "Accept-Encoding: " + encoding + ", as a browser asks: Unleash compresses it each time"
	}
	mb := float64(size) / 1e6
	fmt.Fprintf(stdout, "throughput: GET %s (the web UI's main script, %d bytes on the wire, %s), %d connections, %d rounds of %v per target (direct, flagadmin, bare proxy in turn)\n",
		asset, size, asked, o.Concurrency, o.Rounds, o.Duration)
	fmt.Fprintf(stdout, "  %-15s %8s %8s %10s %14s %16s\n", "", "req/s", "MB/s", "of direct", "proxy CPU/req", "Unleash CPU/req")
	direct := tallies[0].requests / tallies[0].elapsed.Seconds()
	for j, t := range targets {
		rate := tallies[j].requests / tallies[j].elapsed.Seconds()
		proxyCPU := "-"
		if j > 0 {
			proxyCPU = (tallies[j].cpu / time.Duration(tallies[j].requests)).Round(time.Microsecond).String()
		}
		fmt.Fprintf(stdout, "  %-15s %8.0f %8.0f %9.0f%% %14s %16v\n", t.name, rate, rate*mb, 100*rate/direct, proxyCPU,
			(tallies[j].upCPU / time.Duration(tallies[j].requests)).Round(time.Microsecond))
	}
	fa, bare := tallies[1].requests/tallies[1].elapsed.Seconds(), tallies[2].requests/tallies[2].elapsed.Seconds()
	fmt.Fprintf(stdout, "  flagadmin reaches %.0f%% of the bare proxy's rate\n\n", 100*fa/bare)
	return nil
}

// fetchEncoded GETs url asking for encoding ("" for none), reads the
// answer as it came (compressed), which must be 200 in that encoding, and
// returns its size.
func fetchEncoded(ctx context.Context, c *http.Client, url, encoding string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return 0, err
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	case resp.Header.Get("Content-Encoding") != encoding:
		return 0, fmt.Errorf("GET %s: Content-Encoding %q, want %q", url, resp.Header.Get("Content-Encoding"), encoding)
	}
	return n, nil
}

// assetLoad fetches url on conns connections for d and returns the number
// of answers.
func assetLoad(ctx context.Context, c *http.Client, url, encoding string, conns int, d time.Duration) (int64, error) {
	var done atomic.Int64
	errs := make(chan error, conns)
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				if _, err := fetchEncoded(ctx, c, url, encoding); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return done.Load(), nil
}

// serveProxy is the hidden serve-proxy command: a bare
// httputil.ReverseProxy in front of --upstream (the standard library's
// defaults, with a pool of idle connections as large as flagadmin's),
// the ceiling of a Go proxy in the unleash-ui benchmark.
func serveProxy(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(proxyCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	upstream := fs.String("upstream", "", "base URL of the upstream")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		return fmt.Errorf("--upstream %q is not a URL", *upstream)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost, transport.DisableCompression = 512, 512, true
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport: transport,
	}
	return serveUntilDone(ctx, proxy, "", stdin, stdout)
}
