// Package metrics exposes flagadmin's Prometheus metrics: HTTP requests by
// route template, method and status, requests in flight, storage errors by
// kind and events recorded by type (a Store wrapper), connection pool
// figures, and whatever plain Go figures a program adds with GaugeFunc,
// CounterFunc and their per-label forms.
//
// Every metric lives in the Metrics' own registry (not Prometheus' global
// default), with the Go runtime and process collectors. Label values never
// carry user input: routes are templates (unknown paths share one value),
// methods and event types come from closed lists.
package metrics

import (
	"net/http"
	"strconv"

	"github.com/felixge/httpsnoop"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// namespace prefixes every metric of this package.
const namespace = "flagadmin"

// UnmatchedRoute is the route label of requests no route serves.
const UnmatchedRoute = "unmatched"

// Metrics holds the registry and the collectors of a server.
type Metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	inFlight  prometheus.Gauge
	storeErrs *prometheus.CounterVec
	events    *prometheus.CounterVec
}

// New returns Metrics with a new registry holding the Go runtime and
// process collectors and this package's metrics.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "http", Name: "requests_total",
		Help: "HTTP requests answered, by route template, method and status.",
	}, []string{"route", "method", "status"})
	m.durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "http", Name: "request_duration_seconds",
		Help:    "Time from a request's arrival to the end of its answer, by route template, method and status.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route", "method", "status"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "http", Name: "requests_in_flight",
		Help: "HTTP requests being served.",
	})
	m.storeErrs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "storage", Name: "errors_total",
		Help: "Failed storage operations, by kind: unavailable, timeout, canceled, conflict or other.",
	}, []string{"kind"})
	for _, k := range errorKinds {
		m.storeErrs.WithLabelValues(k) // every kind shows, at 0
	}
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "events_recorded_total",
		Help: "Events recorded through this process, by type (a type outside the contract's list counts as other).",
	}, []string{"type"})
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.durations, m.inFlight, m.storeErrs, m.events,
	)
	return m
}

// Registry returns the registry, to register more collectors or gather.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Register adds a collector to the registry, such as one for a set of
// figures whose labels are only known when collected.
func (m *Metrics) Register(c prometheus.Collector) error { return m.reg.Register(c) }

// GaugeFunc registers a gauge named flagadmin_<name> whose value f
// returns at each scrape, with constant labels (nil for none): a plain Go
// figure such as open streams is one line,
//
//	m.GaugeFunc("streams_open", "Open event streams.", nil, func() float64 { return float64(hub.Open()) })
func (m *Metrics) GaugeFunc(name, help string, labels map[string]string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: name, Help: help, ConstLabels: labels,
	}, f))
}

// CounterFunc registers a counter named flagadmin_<name> (which should end
// in _total) whose value f returns at each scrape; f must never go down.
func (m *Metrics) CounterFunc(name, help string, labels map[string]string, f func() float64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: namespace, Name: name, Help: help, ConstLabels: labels,
	}, f))
}

// GaugesFunc registers gauges named flagadmin_<name>, one per value of
// label, which f returns at each scrape, such as a lag per webhook sink:
//
//	m.GaugesFunc("webhook_lag_events", "Events not yet delivered, by sink.", "sink", func() map[string]float64 { ... })
func (m *Metrics) GaugesFunc(name, help, label string, f func() map[string]float64) {
	m.reg.MustRegister(&mapCollector{desc: prometheus.NewDesc(namespace+"_"+name, help, []string{label}, nil), kind: prometheus.GaugeValue, f: f})
}

// CountersFunc is GaugesFunc for counters (values that never go down).
func (m *Metrics) CountersFunc(name, help, label string, f func() map[string]float64) {
	m.reg.MustRegister(&mapCollector{desc: prometheus.NewDesc(namespace+"_"+name, help, []string{label}, nil), kind: prometheus.CounterValue, f: f})
}

// mapCollector collects one metric per key of what f returns.
type mapCollector struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	f    func() map[string]float64
}

func (c *mapCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *mapCollector) Collect(ch chan<- prometheus.Metric) {
	for k, v := range c.f() {
		ch <- prometheus.MustNewConstMetric(c.desc, c.kind, v, k)
	}
}

// ErrorWriter writes an error response of status with message, in the
// body every error of the server has (cmd wires httpapi.Server.WriteError,
// the API's one mapping of errors to responses).
type ErrorWriter func(w http.ResponseWriter, r *http.Request, status int, message string)

// Handler serves the metrics in Prometheus' text format (or what the
// scraper negotiates) for GET and HEAD; any other method is answered 405
// by writeError. Scrapes are counted in promhttp_* metrics.
func (m *Metrics) Handler(writeError ErrorWriter) http.Handler {
	h := promhttp.InstrumentMetricHandler(m.reg, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	return ReadOnly(h, writeError)
}

// ReadOnly passes GET and HEAD requests to next and answers any other
// method with 405, by writeError, with Allow: GET, HEAD.
func ReadOnly(next http.Handler, writeError ErrorWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, r, http.StatusMethodNotAllowed, "The path "+flagadmin.QuoteInput(r.URL.Path)+" answers only GET and HEAD.")
	})
}

// Instrument counts and times the requests next serves, by the route
// template route returns for each ("" for none: UnmatchedRoute), method and
// status, and keeps the number in flight. The response writer next gets
// keeps the optional interfaces of w (Flusher, Hijacker, Unwrap).
func (m *Metrics) Instrument(next http.Handler, route func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt := route(r)
		if rt == "" {
			rt = UnmatchedRoute
		}
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		res := httpsnoop.CaptureMetrics(next, w, r)
		labels := prometheus.Labels{"route": rt, "method": methodLabel(r.Method), "status": strconv.Itoa(res.Code)}
		m.requests.With(labels).Inc()
		m.durations.With(labels).Observe(res.Duration.Seconds())
	})
}

// methodLabel returns method if it is a standard one, else "other".
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}
