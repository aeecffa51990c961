package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/flagadmin/flagadmin/adapters/eventfeed"
	"github.com/flagadmin/flagadmin/adapters/gateway"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/metrics"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Timeouts of the server.
const (
	// startTimeout bounds start-up: opening the store, loading a seed, listening.
	startTimeout = 2 * time.Minute
	// stopTimeout bounds the graceful stop: in-flight requests get this long to finish.
	stopTimeout = 30 * time.Second
	// openTimeout bounds opening the database, and the migrations serve
	// runs at start-up (those of flagadmin migrate are not bounded).
	openTimeout = time.Minute

	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 2 * time.Minute
)

// console is where the logs and the shown-once secrets go (stderr).
type console struct{ io.Writer }

// serveOptions wires the server: configuration, logger, store, service,
// API handler and HTTP server. fx's own log is quiet unless the log level
// is debug.
func serveOptions(cfg Config, stderr io.Writer) fx.Option {
	return fx.Options(
		fx.Module("config", fx.Supply(cfg, console{stderr})),
		loggerModule,
		metricsModule,
		storeModule,
		serviceModule,
		followModule,
		httpModule,
		gatewayModule,
		webhooksModule,
		logModule,
		fx.WithLogger(newFxLogger),
	)
}

// loggerModule provides the *slog.Logger of the configuration.
var loggerModule = fx.Module("logger", fx.Provide(newLogger))

// storeModule provides the flagadmin.Store the database URL names, closed on stop.
var storeModule = fx.Module("store", fx.Provide(newStore))

// serviceModule provides the flagadmin.Service over the store behind the
// configured caches, the verifiable log's operations over it, and the
// start-up work on its store (seed or demo
// world, admin tokens) that the server runs before serving.
var serviceModule = fx.Module("service", fx.Provide(newServedStore, newService, newLogService, newBootstrap))

// httpModule provides the httpapi handler, the *http.Server and the
// *Listener that serves it from start to stop.
var httpModule = fx.Module("http",
	fx.Provide(newFeed, newAPIServer, newHTTPServer, newListener),
	fx.Invoke(func(*Listener) {}),
)

// newLogger returns the logger the configuration asks for, on stderr.
func newLogger(cfg Config, out console) *slog.Logger {
	return buildLogger(cfg, out)
}

func buildLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// newFxLogger keeps fx's own events out of the log unless the level is debug.
func newFxLogger(cfg Config, log *slog.Logger) fxevent.Logger {
	if cfg.LogLevel > slog.LevelDebug {
		return fxevent.NopLogger
	}
	l := &fxevent.SlogLogger{Logger: log.With("component", "fx")}
	l.UseLogLevel(slog.LevelDebug)
	return l
}

// newStore opens the store of cfg.DB, with the storage deadline of
// cfg.DBTimeout on each operation, and closes it when the app stops: after
// the HTTP server's stop hook, which waits for the requests in flight (fx
// runs stop hooks in the reverse order of their constructors, and the
// server depends on the store).
func newStore(lc fx.Lifecycle, cfg Config, log *slog.Logger) (flagadmin.Store, error) {
	store, closeStore, err := openServedStore(context.Background(), cfg, log, openTimeout)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(closeStore))
	return store, nil
}

// servedStore is the store the Service uses: the opened store behind the
// configured token and result caches, with the cache of encoded answers
// the API keeps in the result cache (nil when it is off).
type servedStore struct {
	flagadmin.Store
	bodies httpapi.BodyCache
	// opened is the store as opened, under the caches.
	opened flagadmin.Store
}

// newServedStore returns store behind a storecache.Store with the
// configured token and result caches, the result cache also keeping the
// API's encoded project lists; or store itself when it cannot be cached
// (not a flagadmin.VersionedStore; every store openStore opens is one) or
// both caches are off.
func newServedStore(opened flagadmin.Store, cfg Config, m *metrics.Metrics) servedStore {
	store := instrumentStore(m, opened)
	vs, ok := store.(flagadmin.VersionedStore)
	if !ok || cfg.TokenCacheTTL <= 0 && cfg.ResultCacheSize <= 0 {
		return servedStore{Store: store, opened: opened}
	}
	cs := storecache.New(vs, storecache.Options{ResultCacheSize: cfg.ResultCacheSize, TokenTTL: cfg.TokenCacheTTL})
	registerCacheStats(m, cs)
	served := servedStore{Store: cs, opened: opened}
	if bodies := cs.Bodies(); bodies != nil { // never a nil *Bodies in the interface
		served.bodies = bodies
	}
	return served
}

// newService returns the Service over the served store: loading seeds
// into the opened store in bulk, and refusing writes while the opened
// store follows an Unleash database (flagadmin.ErrReadOnly).
func newService(store servedStore) *flagadmin.Service {
	var opts []flagadmin.Option
	if r, ok := store.opened.(flagadmin.ReadOnlyReporter); ok {
		opts = append(opts, flagadmin.WithReadOnly(r))
	}
	if l, ok := store.opened.(flagadmin.Loader); ok { // a seed's bulk load, under the caches
		opts = append(opts, flagadmin.WithLoader(l))
	}
	return flagadmin.NewService(store.Store, opts...)
}

// newLogService returns the verifiable log's operations over svc: the log
// of the opened store when it keeps one, else none (its routes answer
// 404).
func newLogService(svc *flagadmin.Service, log *logParts) *vlog.Service {
	return vlog.NewService(svc, log.config())
}

// newFeed returns the feed of the live streams: one reader of the opened
// store's event log (not through the caches), run from start to stop.
// Stop hooks run in reverse order: the HTTP server stops first (ending
// its streams), then the feed, then the store closes. On a server that
// follows Unleash, the feed starts once the store holds the copy, after
// the imported history (streams opened before wait for it).
func newFeed(lc fx.Lifecycle, store flagadmin.Store, follower *unleashimport.Follower, log *slog.Logger, m *metrics.Metrics) (*eventfeed.Feed, error) {
	src, ok := store.(eventfeed.Source)
	if !ok {
		return nil, fmt.Errorf("the store %T cannot feed live streams", store)
	}
	feed := eventfeed.New(src, eventfeed.Options{Logger: log})
	registerStreamStats(m, feed)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				defer close(done)
				for follower != nil && !follower.Status().Ready {
					select {
					case <-ctx.Done():
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
				feed.Run(ctx)
			}()
			return nil
		},
		OnStop: func(stop context.Context) error {
			cancel()
			select {
			case <-done:
				return nil
			case <-stop.Done():
				return stop.Err()
			}
		},
	})
	return feed, nil
}

// newAPIServer returns the HTTP transport of the service and of the
// verifiable log's operations (logSvc), with the storage
// deadline of cfg.DBTimeout on every request, the body cache of the
// served store, the live stream on feed, the follow state of follower
// (nil when the server follows nothing) and, in front of Unleash,
// Unleash's browser sessions.
func newAPIServer(svc *flagadmin.Service, logSvc *vlog.Service, store servedStore, feed *eventfeed.Feed, follower *unleashimport.Follower, sessions *gateway.Sessions,
	edition *gateway.Edition, logs *logParts, cfg Config, log *slog.Logger) *httpapi.Server {
	c := httpapi.Config{Logger: log, Version: versionString(), StorageTimeout: cfg.DBTimeout, BodyCache: store.bodies,
		Log: logSvc, Feed: feed, MaxStreams: cfg.MaxStreams, Follow: followReporter(follower), Sessions: sessionPort(sessions), LogSigner: logs.signing()}
	if edition != nil {
		c.ProjectListOnly = edition.ProjectListOnly
	}
	return httpapi.New(svc, c)
}

// newHTTPServer returns the net/http server of the front door (the API,
// or the gateway in front of Unleash), with timeouts. Its header limit is
// above the API's own (httpapi.DefaultMaxHeaderBytes), so the API answers
// oversized headers with a JSON 400 before Go's server would answer a
// plain-text 431; "OPTIONS *" reaches the API too (a JSON 404).
func newHTTPServer(cfg Config, api *httpapi.Server, door *frontDoor, log *slog.Logger) *http.Server {
	srv := &http.Server{
		Addr:                         cfg.Addr,
		Handler:                      door.handler,
		ReadHeaderTimeout:            readHeaderTimeout,
		ReadTimeout:                  readTimeout,
		WriteTimeout:                 writeTimeout,
		IdleTimeout:                  idleTimeout,
		MaxHeaderBytes:               httpapi.ServerMaxHeaderBytes,
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Shutdown waits for handlers; live streams end only when told.
	srv.RegisterOnShutdown(api.EndStreams)
	return srv
}

// Listener serves the HTTP server from the app's start to its stop.
type Listener struct {
	mu   sync.Mutex
	addr net.Addr
}

// Addr returns the address the server listens on, nil before start.
func (l *Listener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addr
}

// beforeServe is a step of start-up that runs once the store is prepared
// and before the server serves; modules provide them in the value group
// "beforeServe".
type beforeServe func(context.Context) error

// serveSteps are the beforeServe steps of every module.
type serveSteps struct {
	fx.In
	Steps []beforeServe `group:"beforeServe"`
}

// newListener registers the hooks that serve srv. On start: listen on its
// address first, so a busy port fails start-up before the store is touched;
// then prepare the store (seed, demo world, admin tokens); then run the
// beforeServe steps; then serve in a goroutine. On stop: shut down
// gracefully, letting in-flight requests finish.
func newListener(lc fx.Lifecycle, srv *http.Server, boot *bootstrap, steps serveSteps, log *slog.Logger, sd fx.Shutdowner) *Listener {
	l := &Listener{}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			ln, err := net.Listen("tcp", srv.Addr)
			if err != nil {
				return cliErrorf("cannot listen on %s: %v", srv.Addr, listenReason(err))
			}
			if err := boot.run(ctx); err != nil {
				ln.Close()
				return err
			}
			for _, step := range steps.Steps {
				if err := step(ctx); err != nil {
					ln.Close()
					return err
				}
			}
			l.mu.Lock()
			l.addr = ln.Addr()
			l.mu.Unlock()
			log.Info("listening", "addr", "http://"+ln.Addr().String(), "version", versionString())
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("server stopped", "err", err)
					if err := sd.Shutdown(fx.ExitCode(1)); err != nil {
						log.Error("shutdown", "err", err)
					}
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			log.Info("shutting down; waiting for in-flight requests")
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close()
				return fmt.Errorf("graceful shutdown: %w", err)
			}
			log.Info("stopped")
			return nil
		},
	})
	return l
}

// listenReason strips "listen tcp ADDR:" from a listen error.
func listenReason(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}
