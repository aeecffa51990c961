package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/eventfeed"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Hidden commands: the bench binary runs itself as the server under test
// and as the ceiling server, so their memory and CPU are their own.
const (
	childCommand   = "serve-child"
	ceilingCommand = "serve-ceiling"
	readyPrefix    = "listening "
)

// server is a running HTTP server the load is sent to.
type server struct {
	// BaseURL is http://127.0.0.1:port.
	BaseURL string
	// PID is the server's process: a child, or this process when in-process.
	PID int
	// Mode is "child" or "in-process".
	Mode string
	// stop shuts the server down and, for a child, waits for it to exit.
	stop func() error
}

// Stop shuts the server down; calls after the first return its result.
func (s *server) Stop() error { return s.stop() }

// PeakRSS returns the server process's peak resident set size (VmHWM) in bytes.
func (s *server) PeakRSS() (int64, error) { return peakRSS(s.PID) }

// peakRSS reads VmHWM of a process from /proc (Linux only).
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("unexpected VmHWM line %q", strings.TrimSpace(line))
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc/" + strconv.Itoa(pid) + "/status")
}

// apiHandler returns the flagadmin HTTP handler over store, with the access
// log formatted and thrown away when accessLog is set (the cost a deployed
// server pays for its log, without the terminal), else not produced at all.
// It serves store as flagadmin serve does, through a storecache.Store with
// serve's default token cache and a result cache of resultCacheSize bytes
// (--result-cache-size; 0 turns it off) that also keeps the encoded
// project lists, each request in its own scope, so the bench measures what
// deployers run.
//
// Like flagadmin serve it has the live stream, fed by one reader of store
// (from now until EndStreams, which listen registers for the shutdown).
func apiHandler(store flagadmin.Store, accessLog bool, resultCacheSize int64) http.Handler {
	cfg := httpapi.Config{Logger: slog.New(slog.DiscardHandler)}
	var stopFeed context.CancelFunc = func() {}
	if src, ok := store.(eventfeed.Source); ok {
		feed := eventfeed.New(src, eventfeed.Options{})
		var ctx context.Context
		ctx, stopFeed = context.WithCancel(context.Background())
		go feed.Run(ctx)
		cfg.Feed = feed
	}
	if accessLog {
		cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	if vs, ok := store.(flagadmin.VersionedStore); ok {
		cs := storecache.New(vs, storecache.Options{ResultCacheSize: resultCacheSize, TokenTTL: storecache.DefaultTokenTTL})
		if bodies := cs.Bodies(); bodies != nil { // never a nil *Bodies in the interface
			cfg.BodyCache = bodies
		}
		store = cs
	}
	svc := flagadmin.NewService(store)
	api := httpapi.New(svc, cfg)
	return &streamingHandler{Handler: storecache.Scope(api.Handler()), end: func() { api.EndStreams(); stopFeed() }}
}

// streamingHandler is a handler whose live streams end with EndStreams.
type streamingHandler struct {
	http.Handler
	end func()
}

// EndStreams ends the live streams and stops their feed.
func (h *streamingHandler) EndStreams() { h.end() }

// ceilingHandler answers every request with body, as JSON: the fastest a
// net/http server on this machine can answer with a real page of events.
func ceilingHandler(body []byte) http.Handler {
	length := strconv.Itoa(len(body))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", length)
		w.Write(body)
	})
}

// listen opens a listener on a free port of 127.0.0.1 and serves h on it.
// The returned function shuts the server down gracefully.
func listen(h http.Handler) (string, func() error, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if sh, ok := h.(interface{ EndStreams() }); ok {
		srv.RegisterOnShutdown(sh.EndStreams) // Shutdown waits for handlers
	}
	go srv.Serve(ln)
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// startInProcess serves h from this process.
func startInProcess(h http.Handler) (*server, error) {
	base, stop, err := listen(h)
	if err != nil {
		return nil, err
	}
	return &server{BaseURL: base, PID: os.Getpid(), Mode: "in-process", stop: sync.OnceValue(stop)}, nil
}

// startChild runs this binary with args (a hidden command and its flags)
// and waits until the child prints the address it listens on. The child
// ends when its standard input is closed, which Stop does (and the end of
// this process does too).
func startChild(ctx context.Context, args []string, stderr io.Writer) (*server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this executable to run the server: %w", err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the server process: %w", err)
	}
	waited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
		waited <- cmd.Wait()
	}()
	stop := sync.OnceValue(func() error {
		stdin.Close()
		select {
		case err := <-waited:
			return err
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			return fmt.Errorf("the server process %d did not stop within 15s; killed", cmd.Process.Pid)
		}
	})
	select {
	case line, ok := <-lines:
		base, found := strings.CutPrefix(line, readyPrefix)
		if !ok || !found {
			stop()
			return nil, fmt.Errorf("the server process %s did not start (see its messages above)", args[0])
		}
		return &server{BaseURL: base, PID: cmd.Process.Pid, Mode: "child", stop: stop}, nil
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	case <-time.After(2 * time.Minute):
		stop()
		return nil, fmt.Errorf("the server process %s did not start within 2 minutes", args[0])
	}
}

// childArgs are the arguments of the API server child for options o.
func childArgs(o options) []string {
	args := []string{childCommand, "--db", o.DB, "--result-cache-size", strconv.FormatInt(o.ResultCacheSize, 10), "--db-max-conns", strconv.Itoa(o.DBMaxConns)}
	if o.AccessLog {
		args = append(args, "--access-log")
	}
	if o.CPUProfile != "" {
		args = append(args, "--cpuprofile", o.CPUProfile)
	}
	return args
}

// serveChild is the hidden serve-child command: with the collector's pace
// and soft memory limit of flagadmin serve, it opens the database of --db
// (already holding the world), serves the flagadmin API on a free port of
// 127.0.0.1, prints "listening URL" on stdout, and runs until its standard
// input ends (or SIGINT/SIGTERM), then shuts down, writing the CPU profile
// of --cpuprofile when asked.
func serveChild(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(childCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "", "database URL (not memory:)")
	accessLog := fs.Bool("access-log", false, "format the access log (to nowhere)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the server to this file")
	resultCache := fs.Int64("result-cache-size", storecache.DefaultResultCacheSize, "result cache size in bytes; 0 disables it")
	maxConns := fs.Int("db-max-conns", bunstore.DefaultMaxConns, "connections to PostgreSQL or MySQL at most")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *db == "" || *db == memoryDB {
		return errors.New("serve-child needs --db with a database URL other than memory:")
	}
	// The collector's pace and soft memory limit of flagadmin serve (but
	// for those GOGC or GOMEMLIMIT set).
	defer storecache.SetServerPace(*resultCache, os.Getenv)()
	store, closeStore, err := openStore(ctx, *db, bunstore.WithMaxConns(*maxConns))
	if err != nil {
		return err
	}
	defer closeStore()
	return serveUntilDone(ctx, apiHandler(store, *accessLog, *resultCache), *cpuprofile, stdin, stdout)
}

// serveCeiling is the hidden serve-ceiling command: it serves the bytes of
// the file --body to every request, like serveChild otherwise.
func serveCeiling(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(ceilingCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	bodyFile := fs.String("body", "", "file whose bytes every response carries")
	if err := fs.Parse(args); err != nil {
		return err
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	return serveUntilDone(ctx, ceilingHandler(body), "", stdin, stdout)
}

// serveUntilDone serves h and announces it on stdout, until stdin ends or
// a signal or ctx stops it.
func serveUntilDone(ctx context.Context, h http.Handler, cpuprofile string, stdin io.Reader, stdout io.Writer) error {
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	base, stop, err := listen(h)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, readyPrefix+base); err != nil {
		stop()
		return err
	}
	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		io.Copy(io.Discard, stdin)
		cancel()
	}()
	<-ctx.Done()
	return stop()
}
