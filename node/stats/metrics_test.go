package stats_test

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
)

// scrape serves m the way a QoS port would and parses the answer with
// Prometheus's own text parser.
func scrape(t *testing.T, m prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %s: %s", resp.Status, body)
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	return mfs
}

// value is the value of the series of family name whose labels include want.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	mf := mfs[name]
	if mf == nil {
		t.Fatalf("no metric %s", name)
	}
	var found []*dto.Metric
	for _, m := range mf.Metric {
		ok := true
		for k, v := range want {
			has := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					has = true
				}
			}
			ok = ok && has
		}
		if ok {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series match", name, want, len(found))
	}
	m := found[0]
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	t.Fatalf("%s: unexpected type", name)
	return 0
}

func call(c *stats.Counter, d time.Duration, err error) {
	s := c.Begin()
	time.Sleep(d)
	c.End(s, stats.OutcomeOf(err), 100, 20)
}

// Two provider replicas of one application in one process and a consumer:
// the replicas' series are summed (peers too), each method and side has
// its own series, with Dubbo 3's names and labels.
func TestMetrics(t *testing.T) {
	m := stats.NewMetrics(stats.MetricsConfig{IP: "10.0.0.5", Hostname: "box"})
	p1 := stats.NewRecorder(stats.Config{Side: stats.Provider, Application: "demo", Host: "10.0.0.5", Port: 20880})
	p2 := stats.NewRecorder(stats.Config{Side: stats.Provider, Application: "demo", Host: "10.0.0.5", Port: 20881})
	co := stats.NewRecorder(stats.Config{Side: stats.Consumer, Application: "demo", Host: "10.0.0.5"})
	for _, r := range []*stats.Recorder{p1, p2, co} {
		m.AddRecorder(r)
	}
	hello := stats.Key{Interface: "org.example.Greeter", Version: "1.0.0", Method: "sayHello"}
	peer := func(k stats.Key, p string) stats.Key { k.Peer = p; return k }
	call(p1.Counter(peer(hello, "10.0.0.7")), 2*time.Millisecond, nil)
	call(p1.Counter(peer(hello, "10.0.0.8")), 0, nil)
	call(p2.Counter(peer(hello, "10.0.0.7")), 20*time.Millisecond, nil)
	call(p2.Counter(peer(hello, "10.0.0.7")), 0, errors.New("plugin crashed"))
	running := p2.Counter(peer(hello, "10.0.0.7")).Begin()
	fail := stats.Key{Interface: "org.example.Greeter", Version: "1.0.0", Method: "fail", Peer: "10.0.0.5:20880"}
	call(co.Counter(fail), 0, fmt.Errorf("call: %w", &rpc.Exception{Class: "java.lang.RuntimeException", Message: "boom"}))

	mfs := scrape(t, m)
	labels := map[string]string{"application_name": "demo", "interface": "org.example.Greeter", "method": "sayHello",
		"group": "", "version": "1.0.0", "ip": "10.0.0.5", "hostname": "box"}
	for name, want := range map[string]float64{
		"dubbo_provider_requests_total":                 5, // 4 ended, 1 running
		"dubbo_provider_requests_succeed_total":         3,
		"dubbo_provider_requests_failed_total":          1,
		"dubbo_provider_requests_unknown_failed_total":  1,
		"dubbo_provider_requests_business_failed_total": 0,
		"dubbo_provider_requests_timeout_total":         0,
		"dubbo_provider_requests_processing":            1,
		"dubbo_provider_rt_milliseconds_histogram":      4,
	} {
		if got := value(t, mfs, name, labels); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	maxRT := value(t, mfs, "dubbo_provider_rt_milliseconds_max", labels)
	minRT := value(t, mfs, "dubbo_provider_rt_milliseconds_min", labels)
	sum := value(t, mfs, "dubbo_provider_rt_milliseconds_sum", labels)
	avg := value(t, mfs, "dubbo_provider_rt_milliseconds_avg", labels)
	last := value(t, mfs, "dubbo_provider_rt_milliseconds_last", labels)
	p99 := value(t, mfs, "dubbo_provider_rt_milliseconds_p99", labels)
	if maxRT < 20 || maxRT > 1000 || minRT > 2 || sum < 22 || math.Abs(avg-sum/4) > 1e-9 || last > maxRT {
		t.Errorf("rt max %v min %v sum %v avg %v last %v", maxRT, minRT, sum, avg, last)
	}
	if p99 < 15 || p99 > maxRT*1.25 { // the 20 ms call, within its bucket
		t.Errorf("p99 %v ms, max %v ms", p99, maxRT)
	}
	consumer := map[string]string{"method": "fail", "application_name": "demo"}
	if got := value(t, mfs, "dubbo_consumer_requests_business_failed_total", consumer); got != 1 {
		t.Errorf("consumer business failures %v", got)
	}
	if got := value(t, mfs, "dubbo_consumer_requests_failed_total", consumer); got != 1 {
		t.Errorf("consumer failures %v", got)
	}
	if len(mfs["dubbo_provider_requests_total"].Metric) != 1 {
		t.Errorf("replicas and peers not summed into one series: %v", mfs["dubbo_provider_requests_total"].Metric)
	}
	p2.Counter(peer(hello, "10.0.0.7")).End(running, stats.Success, 0, 0)

	// A node that stops leaves the metrics.
	m.RemoveRecorder(co)
	if _, ok := scrape(t, m)["dubbo_consumer_requests_total"]; ok {
		t.Error("removed recorder still exported")
	}
}

func TestPoolAndRegistryMetrics(t *testing.T) {
	m := stats.NewMetrics(stats.MetricsConfig{IP: "10.0.0.5", Hostname: "box"})
	m.AddPool(stats.Pool{Application: "demo", Name: "DubboServerHandler-10.0.0.5:20880", Stats: func() stats.PoolStats {
		return stats.PoolStats{Core: 200, Max: 200, Largest: 17, Active: 3, Threads: 12, Queued: 0, Rejected: 4}
	}})
	var a, b stats.RegistryStats
	m.AddRegistry("demo", &a)
	m.AddRegistry("demo", &b)
	a.Registered(nil)
	b.Registered(nil)
	b.Registered(errors.New("zk down"))
	a.Subscribed(nil)
	a.Notified(3)
	a.Notified(2)
	mfs := scrape(t, m)
	pool := map[string]string{"application_name": "demo", "thread_pool_name": "DubboServerHandler-10.0.0.5:20880", "ip": "10.0.0.5", "hostname": "box"}
	for name, want := range map[string]float64{
		"dubbo_thread_pool_core_size": 200, "dubbo_thread_pool_max_size": 200, "dubbo_thread_pool_largest_size": 17,
		"dubbo_thread_pool_active_size": 3, "dubbo_thread_pool_thread_count": 12, "dubbo_thread_pool_queue_size": 0,
		"dubbo_thread_pool_reject_thread_count": 4,
	} {
		if got := value(t, mfs, name, pool); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	app := map[string]string{"application_name": "demo", "ip": "10.0.0.5", "hostname": "box"}
	for name, want := range map[string]float64{
		"dubbo_registry_register_requests_total": 3, "dubbo_registry_register_requests_succeed_total": 2,
		"dubbo_registry_register_requests_failed_total": 1, "dubbo_registry_subscribe_num_total": 1,
		"dubbo_registry_subscribe_num_succeed_total": 1, "dubbo_registry_subscribe_num_failed_total": 0,
		"dubbo_registry_notify_requests_total": 2, "dubbo_registry_notify_num_last": 2,
	} {
		if got := value(t, mfs, name, app); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
