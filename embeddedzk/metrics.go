package embeddedzk

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the server's figures with the names Apache ZooKeeper's
// Prometheus metrics provider gives them (the gauges ZooKeeperServer
// registers: znode_count, watch_count, num_alive_connections, ...), read
// at scrape time: what mntr reports, for deployments that scrape their
// registry with the dashboards they use for ZooKeeper.
func (s *Server) Collector() prometheus.Collector { return zkCollector{s} }

type zkCollector struct{ s *Server }

// zkGauges are the exported figures, in mntr's order.
var zkGauges = []struct {
	name, help string
	read       func(z zkReading) float64
}{
	{"avg_latency", "Average request latency (ms)", func(z zkReading) float64 { return z.avgLatency }},
	{"max_latency", "Maximum request latency (ms)", func(z zkReading) float64 { return float64(z.maxLatency) }},
	{"min_latency", "Minimum request latency (ms)", func(z zkReading) float64 { return float64(z.minLatency) }},
	{"packets_received", "Packets received", func(z zkReading) float64 { return float64(z.received) }},
	{"packets_sent", "Packets sent", func(z zkReading) float64 { return float64(z.sent) }},
	{"num_alive_connections", "Client connections with a session", func(z zkReading) float64 { return float64(z.alive) }},
	{"outstanding_requests", "Requests whose reply is not written yet (waiting for the log, or for the client to read)", func(z zkReading) float64 { return float64(z.outstanding) }},
	{"znode_count", "Znodes in the tree", func(z zkReading) float64 { return float64(z.nodes) }},
	{"watch_count", "Watches set", func(z zkReading) float64 { return float64(z.watches) }},
	{"ephemerals_count", "Ephemeral znodes", func(z zkReading) float64 { return float64(z.ephemerals) }},
	{"approximate_data_size", "Bytes of data and paths in the tree", func(z zkReading) float64 { return float64(z.dataSize) }},
	{"global_sessions", "Sessions", func(z zkReading) float64 { return float64(z.sessions) }},
	{"uptime", "Milliseconds since the server started", func(z zkReading) float64 { return float64(z.uptime.Milliseconds()) }},
}

// zkReading is one reading of the figures, as writeMntr takes them.
type zkReading struct {
	avgLatency                        float64
	maxLatency, minLatency            int64
	received, sent, outstanding       int64
	alive, nodes, watches, ephemerals int
	sessions                          int
	dataSize                          int64
	uptime                            time.Duration
}

func (s *Server) reading() zkReading {
	lat := s.stats.latency()
	_, _, watches := s.watches.Counts()
	s.mu.RLock()
	nodes, eph, size := s.tree.NodeCount(), s.tree.EphemeralCount(), s.tree.DataSize()
	s.mu.RUnlock()
	return zkReading{
		avgLatency: lat.avg(), maxLatency: lat.max, minLatency: lat.min,
		received: s.stats.received.Load(), sent: s.stats.sent.Load(), outstanding: s.stats.outstanding.Load(),
		alive: len(s.sessionConns()), nodes: nodes, watches: watches, ephemerals: eph,
		sessions: s.sessions.Len(), dataSize: int64(size), uptime: time.Since(s.started),
	}
}

func zkDesc(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }

func (c zkCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range zkGauges {
		ch <- zkDesc(g.name, g.help)
	}
}

func (c zkCollector) Collect(ch chan<- prometheus.Metric) {
	z := c.s.reading()
	for _, g := range zkGauges {
		ch <- prometheus.MustNewConstMetric(zkDesc(g.name, g.help), prometheus.GaugeValue, g.read(z))
	}
}
