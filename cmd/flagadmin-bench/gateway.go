package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The gateway benchmark (flagadmin-bench gateway): what flagadmin serve
// --upstream costs in front of a server, measured against that server
// directly. The upstream is a static server (a child of this binary,
// serve-static) standing in for Unleash: a small JSON answer, a UI asset,
// an upload sink and a download source. flagadmin is the real binary,
// started with --upstream on an in-memory store.
//
//   - latency: sequential requests for the small answer, direct and
//     through flagadmin interleaved, one keep-alive connection each: the
//     percentiles and the added p50;
//   - throughput: the asset fetched by --concurrency connections for
//     --duration, direct then through flagadmin: requests/s and the ratio;
//   - large bodies: 100 MB up and 100 MB down through flagadmin, with
//     flagadmin's peak resident memory (VmHWM) afterwards.

// staticCommand is the hidden command of the static upstream.
const staticCommand = "serve-static"

// Paths of the static upstream.
const (
	smallPath    = "/api/client/features"
	assetPath    = "/static/app.js"
	uploadPath   = "/upload"
	downloadPath = "/download"
)

// gatewayOptions are the flags of flagadmin-bench gateway.
type gatewayOptions struct {
	Flagadmin   string
	Follow      string
	Requests    int
	Duration    time.Duration
	Concurrency int
	AssetSize   int
	BodySize    int64
}

func gatewayCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flagadmin-bench gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o gatewayOptions
	fs.StringVar(&o.Flagadmin, "flagadmin", "", "the flagadmin binary to run (required; scripts/bench-gateway.sh builds it)")
	fs.StringVar(&o.Follow, "follow", "", "URL of an Unleash PostgreSQL database for flagadmin to follow (required: --upstream needs --follow)")
	fs.IntVar(&o.Requests, "requests", 5000, "sequential requests of the latency phase, each way")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "length of each throughput phase")
	fs.IntVar(&o.Concurrency, "concurrency", 16, "connections of the throughput phases")
	fs.IntVar(&o.AssetSize, "asset-size", 256<<10, "size of the static asset, in bytes")
	fs.Int64Var(&o.BodySize, "body-size", 100<<20, "size of the large bodies, in bytes")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flagadmin-bench gateway --flagadmin PATH --follow URL [flags]\n\nMeasures flagadmin serve --upstream against the upstream directly.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.Flagadmin == "" || o.Follow == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	if err := benchGateway(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "flagadmin-bench gateway:", err)
		return 1
	}
	return 0
}

func benchGateway(ctx context.Context, o gatewayOptions, stdout, stderr io.Writer) error {
	fmt.Fprintf(stdout, "load before: %s\n", loadAverage())
	up, err := startChild(ctx, []string{staticCommand, "--asset-size", strconv.Itoa(o.AssetSize)}, stderr)
	if err != nil {
		return err
	}
	defer up.Stop()
	fa, err := startFlagadmin(ctx, o.Flagadmin, up.BaseURL, o.Follow)
	if err != nil {
		return err
	}
	defer fa.stop()
	fmt.Fprintf(stdout, "upstream %s (pid %d), flagadmin %s (pid %d) with --upstream\n\n", up.BaseURL, up.PID, fa.base, fa.pid)

	direct, proxied := newBenchClient(o.Concurrency), newBenchClient(o.Concurrency)
	// Warm both paths up.
	for range 200 {
		if _, err := fetchOK(direct, up.BaseURL+smallPath); err != nil {
			return err
		}
		if _, err := fetchOK(proxied, fa.base+smallPath); err != nil {
			return err
		}
	}

	// Latency.
	var dLat, pLat []time.Duration
	for range o.Requests {
		for _, c := range []struct {
			client *http.Client
			url    string
			into   *[]time.Duration
		}{{direct, up.BaseURL + smallPath, &dLat}, {proxied, fa.base + smallPath, &pLat}} {
			start := time.Now()
			if _, err := fetchOK(c.client, c.url); err != nil {
				return err
			}
			*c.into = append(*c.into, time.Since(start))
		}
	}
	dp, pp := percentiles(dLat), percentiles(pLat)
	fmt.Fprintf(stdout, "latency, %d sequential GET %s each way (p50 / p90 / p99):\n", o.Requests, smallPath)
	fmt.Fprintf(stdout, "  direct         %8v %8v %8v\n", dp[0], dp[1], dp[2])
	fmt.Fprintf(stdout, "  via flagadmin  %8v %8v %8v\n", pp[0], pp[1], pp[2])
	fmt.Fprintf(stdout, "  added p50      %8v\n\n", pp[0]-dp[0])

	// Throughput.
	fmt.Fprintf(stdout, "throughput, GET %s (%d bytes), %d connections, %v each:\n", assetPath, o.AssetSize, o.Concurrency, o.Duration)
	dRate, err := throughput(ctx, direct, up.BaseURL+assetPath, o.Concurrency, o.Duration)
	if err != nil {
		return err
	}
	cpuBefore, err := cpuTime(fa.pid)
	if err != nil {
		return err
	}
	pStart := time.Now()
	pRate, err := throughput(ctx, proxied, fa.base+assetPath, o.Concurrency, o.Duration)
	if err != nil {
		return err
	}
	pElapsed := time.Since(pStart)
	cpuAfter, err := cpuTime(fa.pid)
	if err != nil {
		return err
	}
	mb := float64(o.AssetSize) / 1e6
	cpu := cpuAfter - cpuBefore
	perRequest := cpu / time.Duration(pRate*pElapsed.Seconds())
	fmt.Fprintf(stdout, "  direct         %8.0f req/s %8.0f MB/s\n", dRate, dRate*mb)
	fmt.Fprintf(stdout, "  via flagadmin  %8.0f req/s %8.0f MB/s  (%.0f%% of direct)\n", pRate, pRate*mb, 100*pRate/dRate)
	fmt.Fprintf(stdout, "  flagadmin CPU  %v per request (%.2f cores busy at that rate)\n\n", perRequest.Round(time.Microsecond), cpu.Seconds()/pElapsed.Seconds())

	// Large bodies.
	fmt.Fprintf(stdout, "large bodies through flagadmin (%d MB each way):\n", o.BodySize>>20)
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fa.base+uploadPath, io.NopCloser(io.LimitReader(zeros{}, o.BodySize)))
	req.ContentLength = -1
	resp, err := proxied.Do(req)
	if err != nil {
		return err
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(got)) != strconv.FormatInt(o.BodySize, 10) {
		return fmt.Errorf("upload: the upstream got %q bytes, want %d", got, o.BodySize)
	}
	up1 := time.Since(start)
	start = time.Now()
	resp, err = proxied.Get(fa.base + downloadPath + "?size=" + strconv.FormatInt(o.BodySize, 10))
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != o.BodySize {
		return fmt.Errorf("download: got %d bytes (%v), want %d", n, err, o.BodySize)
	}
	down := time.Since(start)
	rss, err := peakRSS(fa.pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  upload (chunked)  %6.2fs  %6.0f MB/s\n", up1.Seconds(), float64(o.BodySize)/1e6/up1.Seconds())
	fmt.Fprintf(stdout, "  download          %6.2fs  %6.0f MB/s\n", down.Seconds(), float64(o.BodySize)/1e6/down.Seconds())
	fmt.Fprintf(stdout, "  flagadmin peak RSS over the whole run: %.1f MiB\n\n", float64(rss)/(1<<20))
	fmt.Fprintf(stdout, "load after: %s\n", loadAverage())
	return nil
}

// flagadminProcess is a flagadmin serve child.
type flagadminProcess struct {
	base string
	pid  int
	stop func()
}

// startFlagadmin runs bin serve in front of upstream on a free port of
// 127.0.0.1 with an in-memory store following the Unleash database follow
// and its default settings, and waits until it answers /ready (the copy
// imported).
func startFlagadmin(ctx context.Context, bin, upstream, follow string) (*flagadminProcess, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, bin, "serve", "--db", "memory:", "--addr", addr, "--upstream", upstream, "--follow", follow)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard // its log: produced, thrown away
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &flagadminProcess{base: "http://" + addr, pid: cmd.Process.Pid, stop: func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(p.base + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop()
	return nil, errors.New("flagadmin did not answer /ready within a minute")
}

// newBenchClient keeps up to conns connections alive.
func newBenchClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxIdleConns: conns, DisableCompression: true}}
}

// fetchOK GETs url and reads the answer, which must be 200.
func fetchOK(c *http.Client, url string) (int64, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return n, err
}

// throughput fetches url on conns connections for d and returns requests/s.
func throughput(ctx context.Context, c *http.Client, url string, conns int, d time.Duration) (float64, error) {
	var done atomic.Int64
	var failed atomic.Pointer[error]
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for range conns {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				if _, err := fetchOK(c, url); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return 0, *err
	}
	return float64(done.Load()) / time.Since(start).Seconds(), nil
}

// percentiles returns p50, p90 and p99 of ds.
func percentiles(ds []time.Duration) [3]time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Microsecond) }
	return [3]time.Duration{at(0.50), at(0.90), at(0.99)}
}

// cpuTime returns the CPU time (user and system) a process used so far,
// from /proc (Linux only; clock ticks of 1/100 s).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// loadAverage returns the load averages of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ") + " (1, 5, 15 min)"
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// serveStatic is the hidden serve-static command: the upstream of the
// gateway benchmark, until its standard input ends.
func serveStatic(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(staticCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	assetSize := fs.Int("asset-size", 256<<10, "size of the static asset")
	if err := fs.Parse(args); err != nil {
		return err
	}
	small := []byte(`{"version":2,"features":[{"name":"dark-mode","enabled":true,"strategies":[{"name":"default"}]}]}`)
	asset := []byte(strings.Repeat("console.log('unleash');\n", *assetSize/24+1)[:*assetSize])
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+smallPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(small)))
		w.Write(small)
	})
	mux.HandleFunc("GET "+assetPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/javascript")
		w.Header().Set("Content-Length", strconv.Itoa(len(asset)))
		w.Write(asset)
	})
	mux.HandleFunc("POST "+uploadPath, func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, n)
	})
	mux.HandleFunc("GET "+downloadPath, func(w http.ResponseWriter, r *http.Request) {
		size, err := strconv.ParseInt(r.URL.Query().Get("size"), 10, 64)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		io.Copy(w, io.LimitReader(zeros{}, size))
	})
	return serveUntilDone(ctx, mux, "", stdin, stdout)
}
