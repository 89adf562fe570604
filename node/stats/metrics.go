package stats

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// MetricsConfig describes the process whose metrics a Metrics exports.
type MetricsConfig struct {
	// IP and Hostname are the ip and hostname labels of every metric.
	IP, Hostname string
	// QuantileWindow is how far back the p95 and p99 response times look:
	// they cover the calls of the last one to two windows (since start at
	// first). Default 60s.
	QuantileWindow time.Duration
}

// Metrics is a prometheus.Collector of one process's Dubbo metrics, with
// Dubbo 3's names and labels: requests and response times per method of
// every Recorder added (replicas of one application in one process are
// summed), thread pools and registry operations. Everything is read at
// scrape time; nothing runs per call.
type Metrics struct {
	cfg MetricsConfig
	rpc [3]rpcDescs // by Side
	tp  poolDescs
	reg registryDescs

	mu         sync.Mutex
	recorders  []*Recorder
	pools      []Pool
	registries []registrySource
	windows    map[methodKey]*window // p95/p99 windows, by method
}

// Pool is a thread pool whose state Metrics exports at scrape time.
type Pool struct {
	Application string
	// Name is the thread_pool_name label, e.g. DubboServerHandler-10.0.0.5:20880.
	Name  string
	Stats func() PoolStats
}

// PoolStats is a thread pool's state.
type PoolStats struct {
	Core, Max, Largest, Active, Threads, Queued int
	Rejected                                    int64
}

// RegistryStats counts one node's registry operations. Safe for
// concurrent use; the zero value is ready.
type RegistryStats struct {
	regOK, regFailed, subOK, subFailed, notify, notifyLast atomic.Int64
}

// Registered counts a Register call that ended with err.
func (r *RegistryStats) Registered(err error) { okOrFailed(err, &r.regOK, &r.regFailed) }

// Subscribed counts a Subscribe call that ended with err.
func (r *RegistryStats) Subscribed(err error) { okOrFailed(err, &r.subOK, &r.subFailed) }

// Notified counts a notification carrying urls URLs.
func (r *RegistryStats) Notified(urls int) {
	r.notify.Add(1)
	r.notifyLast.Store(int64(urls))
}

func okOrFailed(err error, ok, failed *atomic.Int64) {
	if err == nil {
		ok.Add(1)
	} else {
		failed.Add(1)
	}
}

type registrySource struct {
	app   string
	stats *RegistryStats
}

var (
	methodLabels = []string{"application_name", "interface", "method", "group", "version", "ip", "hostname"}
	poolLabels   = []string{"application_name", "thread_pool_name", "ip", "hostname"}
	appLabels    = []string{"application_name", "ip", "hostname"}
)

type rpcDescs struct {
	total, succeed, failed, processing *prometheus.Desc
	byOutcome                          [numOutcomes]*prometheus.Desc
	rtSum, rtLast, rtMin, rtMax, rtAvg *prometheus.Desc
	rtP95, rtP99, rtHistogram          *prometheus.Desc
}

type poolDescs struct{ core, largest, max, active, threads, queue, rejected *prometheus.Desc }

type registryDescs struct {
	register, registerOK, registerFailed    *prometheus.Desc
	subscribe, subscribeOK, subscribeFailed *prometheus.Desc
	notify, notifyLast                      *prometheus.Desc
}

// NewMetrics returns a Metrics with nothing added yet.
func NewMetrics(cfg MetricsConfig) *Metrics {
	if cfg.QuantileWindow <= 0 {
		cfg.QuantileWindow = time.Minute
	}
	m := &Metrics{cfg: cfg, windows: map[methodKey]*window{}}
	for _, side := range []Side{Provider, Consumer} {
		s := side.String()
		d := func(name, help string) *prometheus.Desc {
			return prometheus.NewDesc("dubbo_"+s+"_"+name, help, methodLabels, nil)
		}
		m.rpc[side] = rpcDescs{
			total:       d("requests_total", "Total Requests"),
			succeed:     d("requests_succeed_total", "Total Succeed Requests"),
			failed:      d("requests_failed_total", "Total Failed Requests"),
			processing:  d("requests_processing", "Processing Requests"),
			rtSum:       d("rt_milliseconds_sum", "Sum Response Time"),
			rtLast:      d("rt_milliseconds_last", "Last Response Time"),
			rtMin:       d("rt_milliseconds_min", "Min Response Time"),
			rtMax:       d("rt_milliseconds_max", "Max Response Time"),
			rtAvg:       d("rt_milliseconds_avg", "Average Response Time"),
			rtP95:       d("rt_milliseconds_p95", "Response Time P95"),
			rtP99:       d("rt_milliseconds_p99", "Response Time P99"),
			rtHistogram: d("rt_milliseconds_histogram", "Response Time Histogram"),
		}
		by := &m.rpc[side].byOutcome
		by[BusinessFailed] = d("requests_business_failed_total", "Total Failed Business Requests")
		by[Timeout] = d("requests_timeout_total", "Total Timeout Failed Requests")
		by[Limit] = d("requests_limit_total", "Total Limit Failed Requests")
		by[UnknownFailed] = d("requests_unknown_failed_total", "Total Unknown Failed Requests")
		by[Network] = d("requests_failed_network_total", "Total network Failed Requests")
		by[ServiceUnavailable] = d("requests_failed_service_unavailable_total", "Total Service Unavailable Failed Requests")
		by[Codec] = d("requests_failed_codec_total", "Total Codec Failed Requests")
	}
	p := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("dubbo_thread_pool_"+name, help, poolLabels, nil)
	}
	m.tp = poolDescs{
		core:     p("core_size", "Thread Pool Core Size"),
		largest:  p("largest_size", "Thread Pool Largest Size"),
		max:      p("max_size", "Thread Pool Max Size"),
		active:   p("active_size", "Thread Pool Active Size"),
		threads:  p("thread_count", "Thread Pool Thread Count"),
		queue:    p("queue_size", "Thread Pool Queue Size"),
		rejected: p("reject_thread_count", "Thread Pool Reject Thread Count"),
	}
	r := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("dubbo_registry_"+name, help, appLabels, nil)
	}
	m.reg = registryDescs{
		register:        r("register_requests_total", "Total Register Requests"),
		registerOK:      r("register_requests_succeed_total", "Succeed Register Requests"),
		registerFailed:  r("register_requests_failed_total", "Failed Register Requests"),
		subscribe:       r("subscribe_num_total", "Total Subscribe Num"),
		subscribeOK:     r("subscribe_num_succeed_total", "Succeed Subscribe Num"),
		subscribeFailed: r("subscribe_num_failed_total", "Failed Subscribe Num"),
		notify:          r("notify_requests_total", "Total Notify Requests"),
		notifyLast:      r("notify_num_last", "Last Notify Nums"),
	}
	return m
}

// AddRecorder exports rec's counters from now on.
func (m *Metrics) AddRecorder(rec *Recorder) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.recorders, rec) {
		m.recorders = append(m.recorders, rec)
	}
}

// RemoveRecorder stops exporting rec (a node that stopped).
func (m *Metrics) RemoveRecorder(rec *Recorder) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recorders = slices.DeleteFunc(m.recorders, func(r *Recorder) bool { return r == rec })
}

// AddPool exports a thread pool.
func (m *Metrics) AddPool(p Pool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pools = append(m.pools, p)
}

// AddRegistry exports the registry operations of a node of application
// app; the nodes of one application in this process are summed.
func (m *Metrics) AddRegistry(app string, rs *RegistryStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.registries = append(m.registries, registrySource{app, rs})
}

// Describe sends every metric's descriptor.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, side := range []Side{Provider, Consumer} {
		d := m.rpc[side]
		for _, x := range []*prometheus.Desc{d.total, d.succeed, d.failed, d.processing, d.rtSum, d.rtLast,
			d.rtMin, d.rtMax, d.rtAvg, d.rtP95, d.rtP99, d.rtHistogram} {
			ch <- x
		}
		for _, x := range d.byOutcome {
			if x != nil {
				ch <- x
			}
		}
	}
	for _, x := range []*prometheus.Desc{m.tp.core, m.tp.largest, m.tp.max, m.tp.active, m.tp.threads, m.tp.queue, m.tp.rejected,
		m.reg.register, m.reg.registerOK, m.reg.registerFailed, m.reg.subscribe, m.reg.subscribeOK,
		m.reg.subscribeFailed, m.reg.notify, m.reg.notifyLast} {
		ch <- x
	}
}

// methodKey is one series of the per-method metrics: peers and replicas
// are summed into it.
type methodKey struct {
	side                               Side
	app, iface, group, version, method string
}

type methodAgg struct {
	t            totals
	active       int64
	minRT, maxRT int64 // ns; minRT 0 = none
	lastRT       int64
	lastAt       int64
	hist         histogram.Counts
}

// window holds two readings of a method's histogram, so the quantiles
// cover one to two QuantileWindows of calls.
type window struct {
	base, next *histogram.Counts // base nil = since start
	nextAt     time.Time
}

// Collect sends the current value of every metric.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	aggs := map[methodKey]*methodAgg{}
	var buf histogram.Counts
	for _, rec := range m.recorders {
		cfg := rec.Config()
		for _, c := range rec.counters() {
			k := methodKey{cfg.Side, cfg.Application, c.key.Interface, c.key.Group, c.key.Version, c.key.Method}
			a := aggs[k]
			if a == nil {
				a = &methodAgg{}
				aggs[k] = a
			}
			a.add(c, &buf)
		}
	}
	for k, a := range aggs {
		m.collectMethod(ch, k, a, now)
	}
	for k := range m.windows {
		if aggs[k] == nil {
			delete(m.windows, k)
		}
	}
	for _, p := range m.pools {
		s := p.Stats()
		lv := []string{p.Application, p.Name, m.cfg.IP, m.cfg.Hostname}
		for _, g := range []struct {
			d *prometheus.Desc
			v float64
		}{{m.tp.core, float64(s.Core)}, {m.tp.largest, float64(s.Largest)}, {m.tp.max, float64(s.Max)},
			{m.tp.active, float64(s.Active)}, {m.tp.threads, float64(s.Threads)}, {m.tp.queue, float64(s.Queued)},
			{m.tp.rejected, float64(s.Rejected)}} {
			ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, g.v, lv...)
		}
	}
	m.collectRegistries(ch)
}

func (a *methodAgg) add(c *Counter, buf *histogram.Counts) {
	t := c.totals()
	a.t.started += t.started
	a.t.succeeded += t.succeeded
	a.t.failed += t.failed
	for i := range t.byOutcome {
		a.t.byOutcome[i] += t.byOutcome[i]
	}
	a.t.elapsed += t.elapsed
	a.active += c.active.Load()
	if v := c.minRT.Load(); v != 0 && (a.minRT == 0 || v < a.minRT) {
		a.minRT = v
	}
	a.maxRT = max(a.maxRT, c.maxRTSinceStart())
	if at, rt, ok := c.lastCall(); ok {
		if at := c.epoch.Add(at).UnixNano(); at >= a.lastAt {
			a.lastAt, a.lastRT = at, int64(rt)
		}
	}
	c.readHist(buf)
	a.hist.Add(buf)
}

func (m *Metrics) collectMethod(ch chan<- prometheus.Metric, k methodKey, a *methodAgg, now time.Time) {
	d := m.rpc[k.side]
	lv := []string{k.app, k.iface, k.method, k.group, k.version, m.cfg.IP, m.cfg.Hostname}
	counter := func(desc *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), lv...)
	}
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, lv...)
	}
	counter(d.total, a.t.started)
	counter(d.succeed, a.t.succeeded)
	counter(d.failed, a.t.failed)
	for o, desc := range d.byOutcome {
		if desc != nil {
			counter(desc, a.t.byOutcome[o])
		}
	}
	gauge(d.processing, float64(a.active))
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	gauge(d.rtSum, ms(a.t.elapsed))
	gauge(d.rtLast, ms(a.lastRT))
	gauge(d.rtMin, ms(a.minRT))
	gauge(d.rtMax, ms(a.maxRT))
	calls := a.t.succeeded + a.t.failed
	avg := 0.0
	if calls > 0 {
		avg = ms(a.t.elapsed) / float64(calls)
	}
	gauge(d.rtAvg, avg)

	w := m.windows[k]
	if w == nil {
		next := a.hist
		w = &window{next: &next, nextAt: now}
		m.windows[k] = w
	} else if now.Sub(w.nextAt) >= m.cfg.QuantileWindow {
		next := a.hist
		w.base, w.next, w.nextAt = w.next, &next, now
	}
	recent := a.hist
	if w.base != nil {
		for i := range w.base {
			recent[i] -= w.base[i]
		}
	}
	gauge(d.rtP95, recent.Quantile(0.95))
	gauge(d.rtP99, recent.Quantile(0.99))

	// The exported buckets are the powers of two of microseconds from 32 µs
	// to the last bucket's lower edge: each is the upper edge of a run of
	// our buckets, so the counts are exact.
	top, _ := histogram.Bounds(histogram.Buckets - 1)
	buckets := make(map[float64]uint64, 24)
	var cum uint64
	next := 0
	for edge := int64(32); float64(edge) <= top; edge *= 2 { // µs
		for ; next < histogram.Of(time.Duration(edge)*time.Microsecond); next++ {
			cum += uint64(a.hist[next])
		}
		buckets[float64(edge)/1000] = cum
	}
	for ; next < len(a.hist); next++ {
		cum += uint64(a.hist[next])
	}
	ch <- prometheus.MustNewConstHistogram(d.rtHistogram, cum, ms(a.t.elapsed), buckets, lv...)
}

func (m *Metrics) collectRegistries(ch chan<- prometheus.Metric) {
	type sums struct{ regOK, regFailed, subOK, subFailed, notify, notifyLast int64 }
	byApp := map[string]*sums{}
	var order []string
	for _, r := range m.registries {
		s := byApp[r.app]
		if s == nil {
			s = &sums{}
			byApp[r.app] = s
			order = append(order, r.app)
		}
		s.regOK += r.stats.regOK.Load()
		s.regFailed += r.stats.regFailed.Load()
		s.subOK += r.stats.subOK.Load()
		s.subFailed += r.stats.subFailed.Load()
		s.notify += r.stats.notify.Load()
		s.notifyLast = max(s.notifyLast, r.stats.notifyLast.Load())
	}
	for _, app := range order {
		s := byApp[app]
		lv := []string{app, m.cfg.IP, m.cfg.Hostname}
		c := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
		}
		c(m.reg.register, s.regOK+s.regFailed)
		c(m.reg.registerOK, s.regOK)
		c(m.reg.registerFailed, s.regFailed)
		c(m.reg.subscribe, s.subOK+s.subFailed)
		c(m.reg.subscribeOK, s.subOK)
		c(m.reg.subscribeFailed, s.subFailed)
		c(m.reg.notify, s.notify)
		ch <- prometheus.MustNewConstMetric(m.reg.notifyLast, prometheus.GaugeValue, float64(s.notifyLast), lv...)
	}
}

var _ prometheus.Collector = (*Metrics)(nil)
