// Package stats counts the calls of one node, per service, method and
// peer, for Dubbo's monitor and for Prometheus.
//
// A node has one Recorder per side. Its Counter for a Key is found without
// a lock or an allocation, and counting a call is a few atomic adds:
//
//	rec := stats.NewRecorder(stats.Config{Side: stats.Provider, Application: app, Host: ip, Port: 20880})
//
//	// provider, around the service (Dubbo times providers without the network):
//	c := rec.Counter(stats.Key{Interface: iface, Group: g, Version: v, Method: m, Peer: consumerIP})
//	start := c.Begin()
//	res, err := service.Invoke(ctx, inv)
//	c.End(start, stats.OutcomeOf(err), requestBytes, 0)
//	c.AddOutput(responseBytes) // once the answer is encoded
//
//	// consumer, around the call to one provider (with the network):
//	c := rec.Counter(stats.Key{Interface: iface, Group: g, Version: v, Method: m, Peer: providerHostPort})
//	start := c.Begin()
//	res, err := client.Invoke(ctx, inv)
//	c.End(start, stats.OutcomeOf(err), requestBytes, responseBytes)
//
// A business exception returned as a Result rather than an error is
// stats.BusinessFailed. Peer is the consumer's IP on a provider (no port,
// as Dubbo) and the provider's host:port on a consumer. The number of keys
// is bounded (Config.MaxKeys); past it, new peers are folded into Other.
//
// Recorder.Collect(now) ends an interval and returns one Sample per active
// key with Dubbo's statistics (success, failure, input, output, elapsed,
// concurrent, max.*): the differences of the counters' monotonic totals
// since the previous Collect, and the interval's maxima; and the
// interval's response-time histogram (package histogram: fixed buckets,
// the same on every node, counted by one more atomic add per call, from
// which the monitor and Metrics read percentiles). Sample.URL renders
// the count:// URL Dubbo's MonitorService.collect receives, and ParseSample
// reads one back, from our nodes or from Java ones; Sample.ID tells a
// sample sent twice. node/report sends the samples to the monitor.
//
// Metrics is a prometheus.Collector over the recorders, thread pools and
// registry clients of one process, with Dubbo 3's metric names and labels:
//
//	m := stats.NewMetrics(stats.MetricsConfig{IP: ip, Hostname: host})
//	m.AddRecorder(rec)
//	m.AddPool(stats.Pool{Application: app, Name: "DubboServerHandler-" + addr, Stats: func() stats.PoolStats {
//		s := pool.Stats()
//		return stats.PoolStats{Core: s.Core, Max: s.Max, Largest: s.Largest, Active: s.Active,
//			Threads: s.Workers, Queued: s.Queued, Rejected: s.Rejected}
//	}})
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(m)
//	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
package stats
