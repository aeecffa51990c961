package metrics

import (
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"
)

// poolCollector collects the figures of connection pools, by pool name.
type poolCollector struct {
	stats                                         func() map[string]sql.DBStats
	maxOpen, open, inUse, idle, waits, waitSecond *prometheus.Desc
}

// Pools registers the figures of the connection pools stats returns at
// each scrape (such as bunstore's Store.PoolStats), labelled by pool
// name: open, in use, idle and maximum connections, and the count and
// total time of waits for a connection.
func (m *Metrics) Pools(stats func() map[string]sql.DBStats) {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_db_pool_"+name, help, []string{"pool"}, nil)
	}
	m.reg.MustRegister(&poolCollector{
		stats:      stats,
		maxOpen:    d("max_open_connections", "The pool's limit of open connections (0: none)."),
		open:       d("open_connections", "Connections open, in use or idle."),
		inUse:      d("in_use_connections", "Connections in use."),
		idle:       d("idle_connections", "Idle connections."),
		waits:      d("wait_count_total", "Times a caller waited for a connection."),
		waitSecond: d("wait_duration_seconds_total", "Total time callers waited for a connection."),
	})
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.maxOpen, c.open, c.inUse, c.idle, c.waits, c.waitSecond} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for name, s := range c.stats() {
		ch <- prometheus.MustNewConstMetric(c.maxOpen, prometheus.GaugeValue, float64(s.MaxOpenConnections), name)
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.OpenConnections), name)
		ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(s.InUse), name)
		ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.Idle), name)
		ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(s.WaitCount), name)
		ch <- prometheus.MustNewConstMetric(c.waitSecond, prometheus.CounterValue, s.WaitDuration.Seconds(), name)
	}
}
