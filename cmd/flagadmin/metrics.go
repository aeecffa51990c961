package main

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"go.uber.org/fx"

	"github.com/flagadmin/flagadmin/adapters/eventfeed"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/metrics"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// metricsPath is where the Prometheus metrics are served.
const metricsPath = "/metrics"

// metricsModule provides the *metrics.Metrics of the server and, with
// --metrics-addr, the listener that serves them apart from the API.
var metricsModule = fx.Module("metrics",
	fx.Provide(newMetrics, newMetricsListener),
	fx.Invoke(func(*MetricsListener) {}),
)

// newMetrics returns the server's metrics; the figures of the store's
// connection pools and of the caches are added as the store is built
// (instrumentStore, newServedStore).
func newMetrics() *metrics.Metrics { return metrics.New() }

// poolStater is a store with connection pools (bunstore.Store).
type poolStater interface {
	PoolStats() map[string]sql.DBStats
}

// instrumentStore wraps store to count its errors and the events it
// records, and registers its pool figures when it has pools.
func instrumentStore(m *metrics.Metrics, store flagadmin.Store) flagadmin.Store {
	if p, ok := store.(poolStater); ok {
		m.Pools(p.PoolStats)
	}
	vs, ok := store.(flagadmin.VersionedStore)
	if !ok {
		return store
	}
	return m.Store(vs)
}

// registerCacheStats exports the hit and miss counts of the caches of cs.
func registerCacheStats(m *metrics.Metrics, cs *storecache.Store) {
	for _, c := range []struct {
		cache        string
		hits, misses func(storecache.Stats) uint64
	}{
		{"result", func(s storecache.Stats) uint64 { return s.ResultHits }, func(s storecache.Stats) uint64 { return s.ResultMisses }},
		{"token", func(s storecache.Stats) uint64 { return s.TokenHits }, func(s storecache.Stats) uint64 { return s.TokenMisses }},
	} {
		labels := map[string]string{"cache": c.cache}
		m.CounterFunc("cache_hits_total", "Reads answered from a cache (result: searches, project lists; token: authentications).", labels,
			func() float64 { return float64(c.hits(cs.Stats())) })
		m.CounterFunc("cache_misses_total", "Reads a cache passed to the database.", labels,
			func() float64 { return float64(c.misses(cs.Stats())) })
	}
}

// registerStreamStats exports the figures of the live streams' feed.
func registerStreamStats(m *metrics.Metrics, feed *eventfeed.Feed) {
	m.GaugeFunc("streams_open", "Live event streams following the feed now.", nil,
		func() float64 { return float64(feed.Stats().OpenStreams) })
	m.CounterFunc("stream_events_sent_total", "Events handed to live streams (replayed or live).", nil,
		func() float64 { return float64(feed.Stats().EventsSent) })
	m.CounterFunc("streams_dropped_total", "Live streams ended because they fell behind.", nil,
		func() float64 { return float64(feed.Stats().Dropped) })
}

// serverHandler is the handler of the main listener: the API, counted and
// timed by route, and /metrics unless it has a listener of its own.
func serverHandler(cfg Config, api *httpapi.Server, m *metrics.Metrics) http.Handler {
	counted := m.Instrument(storecache.Scope(api.Handler()), api.Route) // one reading of the store version per request
	if cfg.MetricsAddr != "" {
		return counted
	}
	scrape := m.Handler(api.WriteStatus)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == metricsPath {
			scrape.ServeHTTP(w, r)
			return
		}
		counted.ServeHTTP(w, r)
	})
}

// MetricsListener serves /metrics on --metrics-addr from the app's start
// to its stop; without it, it does nothing.
type MetricsListener struct {
	mu   sync.Mutex
	addr net.Addr
}

// Addr returns the address it listens on, nil before start or without --metrics-addr.
func (l *MetricsListener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addr
}

// newMetricsListener serves /metrics alone on cfg.MetricsAddr (any other
// path is a JSON 404, written like the API's errors), listening at start so that a busy port fails
// start-up, and stopping with the app.
func newMetricsListener(lc fx.Lifecycle, cfg Config, m *metrics.Metrics, api *httpapi.Server, log *slog.Logger) *MetricsListener {
	l := &MetricsListener{}
	if cfg.MetricsAddr == "" {
		return l
	}
	mux := http.NewServeMux()
	scrape := m.Handler(api.WriteStatus)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != metricsPath {
			api.WriteStatus(w, r, http.StatusNotFound, "This listener serves only "+metricsPath+".")
			return
		}
		scrape.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, IdleTimeout: idleTimeout,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", cfg.MetricsAddr)
			if err != nil {
				return cliErrorf("cannot listen on %s (--metrics-addr): %v", cfg.MetricsAddr, listenReason(err))
			}
			l.mu.Lock()
			l.addr = ln.Addr()
			l.mu.Unlock()
			log.Info("serving metrics", "addr", "http://"+ln.Addr().String()+metricsPath)
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("metrics server stopped", "err", err)
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error { return srv.Shutdown(ctx) },
	})
	return l
}
