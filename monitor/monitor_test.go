package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	hessian "github.com/apache/dubbo-go-hessian2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/dubbo-lab/dubbo/console"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/monitor"
	"github.com/dubbo-lab/dubbo/monitor/store"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/transport"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// running is a monitor role and the HTTP API a user reads it through.
type running struct {
	*monitor.Monitor
	http string // http://host:port of GET /api/v1/stats and GET /metrics
}

// startMonitor runs the monitor role on free loopback ports, without a
// registry, as roles does: the console (with no registry: its statistics
// API and /metrics only) serves the monitor's store and metrics.
func startMonitor(t *testing.T) running {
	t.Helper()
	return startMonitorWith(t, monitor.Options{})
}

func startMonitorWith(t *testing.T, o monitor.Options) running {
	t.Helper()
	if o.Config.DB == "" {
		o.Config.DB = filepath.Join(t.TempDir(), "monitor.db")
	}
	o.Config.Port = -1
	o.Protocol = provider.ProtocolConfig{Host: "127.0.0.1"}
	o.Logger = quiet()
	m, err := monitor.Start(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collector())
	c, err := console.New(testCtx(t), console.Options{Listen: "127.0.0.1:0", Stats: m.Store(), Metrics: reg, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
	return running{m, "http://" + c.Addr()}
}

// dial connects a dubbo client to the monitor's MonitorService.
func dial(t *testing.T, m running) *transport.Client {
	t.Helper()
	client, err := transport.Dial(testCtx(t), m.Addr(), transport.ClientConfig{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// stats GETs /api/v1/stats?query and decodes the rows.
func getStats(t *testing.T, m running, query string) []store.Row {
	t.Helper()
	code, body := get(t, m.http+"/api/v1/stats?"+query)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/stats?%s: %d %s", query, code, body)
	}
	var rows []store.Row
	if err := json.Unmarshal([]byte(body), &rows); err != nil {
		t.Fatalf("GET /api/v1/stats?%s: %v in %s", query, err, body)
	}
	return rows
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func calls(rows []store.Row) (n int64) {
	for _, r := range rows {
		n += r.Success + r.Failure
	}
	return n
}

func count(rec *stats.Recorder, k stats.Key, n int, o stats.Outcome) {
	c := rec.Counter(k)
	for range n {
		c.End(c.Begin(), o, 100, 40)
	}
}

var hello = stats.Key{Interface: "org.example.Greeter", Version: "1.0.0", Method: "sayHello"}

// Statistics travel from a node's recorders through a Reporter to the
// monitor's MonitorService over dubbo, into the store, and back out of
// GET /api/v1/stats with Dubbo's figures, each side as it counted.
func TestReportAndReadBack(t *testing.T) {
	m := startMonitor(t)
	prov := stats.NewRecorder(stats.Config{Side: stats.Provider, Application: "greeter-app", Host: "127.0.0.1", Port: 20880})
	cons := stats.NewRecorder(stats.Config{Side: stats.Consumer, Application: "web-app", Host: "127.0.0.9"})
	rep, err := monitor.NewReporter(monitor.Config{Address: "dubbo://" + m.Addr(), Interval: time.Second},
		monitor.ReporterOptions{Logger: quiet(), Node: "node-a"}, prov, cons)
	if err != nil {
		t.Fatal(err)
	}
	rep.Start()
	k := hello
	k.Peer = "127.0.0.9"
	count(prov, k, 7, stats.Success)
	count(prov, k, 2, stats.BusinessFailed)
	k.Peer = "127.0.0.1:20880"
	count(cons, k, 9, stats.Success)
	ctx := testCtx(t)
	if err := rep.Close(ctx); err != nil { // sends the partial interval
		t.Fatal(err)
	}

	all := getStats(t, m, "interface=org.example.Greeter")
	if len(all) != 2 || calls(all) != 18 {
		t.Fatalf("rows %+v: want one per side, 18 calls", all)
	}
	p := getStats(t, m, "interface=org.example.Greeter&side=provider&method=sayHello&address=127.0.0.1:20880")
	if len(p) != 1 {
		t.Fatalf("provider rows %+v", p)
	}
	if r := p[0]; r.Success != 7 || r.Failure != 2 || r.Input != 900 || r.Output != 360 || r.Application != "greeter-app" ||
		r.Node != "node-a" || r.Consumer != "127.0.0.9" || r.Version != "1.0.0" || r.Interval < 1 {
		t.Errorf("provider row %+v", r)
	}
	c := getStats(t, m, "interface=org.example.Greeter&side=consumer")
	if len(c) != 1 || c[0].Success != 9 || c[0].Address != "127.0.0.1:20880" || c[0].Consumer != "127.0.0.9" {
		t.Errorf("consumer rows %+v", c)
	}
	now := time.Now().Unix()
	if r := getStats(t, m, "interface=org.example.Greeter&from="+itoa(now+5)); len(r) != 0 {
		t.Errorf("rows after now: %+v", r)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A report sent again (its answer was lost) is stored once.
func TestResentReportIsCountedOnce(t *testing.T) {
	m := startMonitor(t)
	ctx := testCtx(t)
	client := dial(t, m)
	rec := stats.NewRecorder(stats.Config{Side: stats.Provider, Application: "greeter-app", Host: "127.0.0.1", Port: 20880})
	k := hello
	k.Peer = "127.0.0.9"
	count(rec, k, 5, stats.Success)
	samples := rec.Collect(time.Now())
	for i := range samples {
		samples[i].Node = "node-b"
	}
	sender := &report.InvokerSender{Invoker: client}
	for range 3 {
		if err := sender.Send(ctx, &report.Report{Node: "node-b", Samples: samples}); err != nil {
			t.Fatal(err)
		}
	}
	if rows := getStats(t, m, "interface=org.example.Greeter"); calls(rows) != 5 || len(rows) != 1 {
		t.Fatalf("after three sends of one report: %+v", rows)
	}
	if st := m.Store().Stats(); st.Duplicates != 2 {
		t.Errorf("store counted %d duplicates, want 2", st.Duplicates)
	}
}

// A Java node's sample (Dubbo 3's URL object, no node, no interval) is
// stored as its application and address, over a minute; a sample that
// cannot be read is refused with an exception naming the problem, and the
// monitor serves on.
func TestJavaSamplesAndBadOnes(t *testing.T) {
	m := startMonitor(t)
	ctx := testCtx(t)
	client := dial(t, m)
	collect := func(arg any) (*rpc.Result, error) {
		return client.Invoke(ctx, &rpc.Invocation{Service: monitor.ServiceInterface, Method: "collect",
			ParamTypes: []string{report.URLClass}, Args: []any{arg}})
	}
	ts := time.Now().UnixMilli()
	java := map[string]any{
		hessian.ClassKey: report.URLClass,
		"urlAddress":     map[string]any{"protocol": "count", "host": "10.0.0.5", "port": int32(0), "path": "org.example.Greeter/add"},
		"urlParam": map[string]any{"EXTRA_PARAMS": map[any]any{
			"application": "java-app", "interface": "org.example.Greeter", "method": "add", "provider": "10.0.0.1:20880",
			"success": "4", "failure": "1", "elapsed": "50", "timestamp": itoa(ts),
		}},
	}
	if res, err := collect(java); err != nil || res.Exception != nil {
		t.Fatalf("java sample: %v %v", res, err)
	}
	rows := getStats(t, m, "interface=org.example.Greeter&side=consumer")
	if len(rows) != 1 || rows[0].Success != 4 || rows[0].Failure != 1 || rows[0].Interval != 60 ||
		rows[0].Node != "java-app@10.0.0.5" || rows[0].Consumer != "10.0.0.5" || rows[0].Address != "10.0.0.1:20880" {
		t.Errorf("java rows %+v", rows)
	}

	for _, bad := range []any{"not a url", "count://h/I/m?timestamp=1", map[string]any{"protocol": "count", "port": "x"}} {
		res, err := collect(bad)
		var ex *rpc.Exception
		switch {
		case err != nil:
			t.Errorf("%v: %v, want an exception", bad, err)
		case res.Exception == nil:
			t.Errorf("%v accepted", bad)
		case !errors.As(res.Exception, &ex) || ex.Class != "java.lang.IllegalArgumentException" || !strings.Contains(ex.Message, "statistics refused"):
			t.Errorf("%v: %v", bad, res.Exception)
		}
	}
	if res, err := collect(java); err != nil || res.Exception != nil { // still serving, still once
		t.Fatalf("after bad samples: %v %v", res, err)
	}
	if rows := getStats(t, m, "interface=org.example.Greeter"); calls(rows) != 5 {
		t.Errorf("rows %+v", rows)
	}
	metrics := scrape(t, m)
	if v := metrics["dubbo_monitor_samples_refused_total"]; v != 3 {
		t.Errorf("refused samples metric %v, want 3", v)
	}
	if v := metrics["dubbo_monitor_rows_stored_total"]; v != 1 {
		t.Errorf("rows stored metric %v, want 1", v)
	}
	if v := metrics["dubbo_monitor_rows_duplicate_total"]; v != 1 {
		t.Errorf("duplicate rows metric %v, want 1", v)
	}
}

// scrape reads GET /metrics with Prometheus's parser: name -> value of
// the unlabelled series.
func scrape(t *testing.T, m running) map[string]float64 {
	t.Helper()
	resp, err := http.Get(m.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			switch {
			case mt.GetCounter() != nil:
				out[name] = mt.GetCounter().GetValue()
			case mt.GetGauge() != nil:
				out[name] = mt.GetGauge().GetValue()
			}
		}
	}
	return out
}

// A node stopping while its monitor (monitor.address) is down tries it
// until its deadline, as a monitor may be restarting, then leaves what it
// could not send in the spool; the monitor, started with that spool,
// stores it. Without a spool the loss is Close's error.
func TestMonitorDownAtCloseSpools(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	spool := filepath.Join(t.TempDir(), "spool")
	for _, dir := range []string{"", spool} {
		rec := stats.NewRecorder(stats.Config{Side: stats.Consumer, Application: "a", Host: "127.0.0.1"})
		rep, err := monitor.NewReporter(monitor.Config{Address: "dubbo://" + addr, Spool: dir}, monitor.ReporterOptions{Logger: quiet(), Node: "gone-node"}, rec)
		if err != nil {
			t.Fatal(err)
		}
		rep.Start()
		count(rec, hello, 3, stats.Success)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		start := time.Now()
		err = rep.Close(ctx)
		cancel()
		if took := time.Since(start); took < 400*time.Millisecond || took > 5*time.Second {
			t.Errorf("spool %q: Close took %v; want it to try until its 500ms deadline", dir, took)
		}
		if (dir == "") != (err != nil) || errors.Is(err, report.ErrNoMonitor) {
			t.Errorf("spool %q: Close = %v; want an error (not ErrNoMonitor) without a spool, none with one", dir, err)
		}
	}
	m := startMonitorWith(t, monitor.Options{Spool: spool})
	deadline := time.Now().Add(10 * time.Second)
	for rows := getStats(t, m, "interface=org.example.Greeter"); calls(rows) != 3; rows = getStats(t, m, "interface=org.example.Greeter") {
		if time.Now().After(deadline) {
			t.Fatalf("the monitor did not store the spooled report: %+v", rows)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if left, _, _ := (&report.Spool{Dir: spool}).Read(); len(left) != 0 {
		t.Errorf("%d reports left in the spool once stored", len(left))
	}
}

func TestReporterOff(t *testing.T) {
	off := false
	rep, err := monitor.NewReporter(monitor.Config{Enabled: &off}, monitor.ReporterOptions{})
	if rep != nil || err != nil {
		t.Fatalf("NewReporter with enabled = false: %v, %v", rep, err)
	}
	if err := rep.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  monitor.Config
		want string
	}{
		{monitor.Config{}, ""},
		{monitor.Config{Interval: time.Second, Address: "dubbo://127.0.0.1:7070", Buffer: 10}, ""},
		{monitor.Config{Interval: 500 * time.Millisecond}, "monitor.interval"},
		{monitor.Config{Buffer: -1}, "monitor.buffer"},
		{monitor.Config{Address: "127.0.0.1:7070"}, "monitor.address"},
		{monitor.Config{Address: "zookeeper://127.0.0.1:2181"}, "monitor.address"},
		{monitor.Config{Server: monitor.ServerConfig{Port: 70000}}, "monitor.server.port"},
		{monitor.Config{Server: monitor.ServerConfig{RawRetention: time.Minute}}, "monitor.server.raw-retention"},
		{monitor.Config{Server: monitor.ServerConfig{RollupRetention: time.Hour}}, "monitor.server.rollup-retention"},
		{monitor.Config{Server: monitor.ServerConfig{RawRetention: 2 * time.Hour, RollupRetention: 3 * time.Hour}}, ""},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// clock is a controlled Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// The monitor runs its store's retention in the background: with a
// controlled clock, minute rows reported over dubbo are folded into hourly
// rows once a day old, the calls summing the same, and hourly rows go
// after the rollup retention.
func TestRetentionThroughTheMonitor(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	clk := &clock{t: t0.Add(3 * time.Hour)}
	m := startMonitorWith(t, monitor.Options{
		Config:      monitor.ServerConfig{RawRetention: 24 * time.Hour, RollupRetention: 48 * time.Hour},
		Now:         clk.Now,
		RetainEvery: 10 * time.Millisecond,
	})
	ctx := testCtx(t)
	client := dial(t, m)

	// Two hours of minute intervals of one provider: 7 calls each.
	var samples []stats.Sample
	for i := range 120 {
		samples = append(samples, stats.Sample{Side: stats.Provider, Application: "greeter-app", Host: "127.0.0.1", Port: 20880,
			Interface: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", Peer: "127.0.0.9",
			Success: 7, Elapsed: 14, MaxElapsed: 3, Timestamp: t0.Add(time.Duration(i+1) * time.Minute), Interval: time.Minute, Node: "node-r"})
	}
	if err := (&report.InvokerSender{Invoker: client}).Send(ctx, &report.Report{Node: "node-r", Samples: samples}); err != nil {
		t.Fatal(err)
	}
	rows := getStats(t, m, "interface=org.example.Greeter")
	if len(rows) != 120 || calls(rows) != 840 {
		t.Fatalf("%d rows, %d calls; want 120 minute rows, 840 calls", len(rows), calls(rows))
	}

	clk.Set(t0.Add(26*time.Hour + time.Minute)) // both hours are now over a day old
	var hourly []store.Row
	deadline := time.Now().Add(10 * time.Second)
	for {
		hourly = getStats(t, m, "interface=org.example.Greeter")
		if len(hourly) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(hourly) != 2 || calls(hourly) != 840 || hourly[0].Interval != 3600 || hourly[0].Success != 420 ||
		hourly[0].Time != t0.Add(time.Hour).Unix() || hourly[1].ElapsedMs != 840 {
		t.Fatalf("after a day: %+v; want two hourly rows of 420 calls", hourly)
	}

	clk.Set(t0.Add(51 * time.Hour)) // past the 48h rollup retention
	deadline = time.Now().Add(10 * time.Second)
	for len(getStats(t, m, "interface=org.example.Greeter")) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("hourly rows still there past the rollup retention")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A known latency mix through a real provider and consumer (the example
// service's sleep: 90 calls of 1 ms, 10 of 50 ms) reads back from
// GET /api/v1/traffic with p50 and p99 within a bucket's width (25%) of
// the latencies the caller measured, on the consumer side, and the
// provider's below them; after the hour is folded into hourly rows the
// same percentiles come back, from the summary and from the series.
func TestPercentilesOfAKnownLatencyMix(t *testing.T) {
	clk := &clock{t: time.Now()}
	m := startMonitorWith(t, monitor.Options{Now: clk.Now, RetainEvery: 10 * time.Millisecond})
	ctx := testCtx(t)
	p, err := provider.Start(ctx, provider.Config{Application: "greeter-app", Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}},
		provider.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
		t.Fatal(err)
	}
	cons, err := consumer.New(ctx, consumer.Config{Application: "web-app"}, consumer.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cons.Close() })
	ref, err := cons.Reference(ctx, consumer.ReferenceConfig{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		URL: "dubbo://" + p.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	ref.WaitAvailable(ctx, 5*time.Second)
	rep, err := monitor.NewReporter(monitor.Config{Address: "dubbo://" + m.Addr(), Interval: time.Hour},
		monitor.ReporterOptions{Logger: quiet(), Node: "mix"}, p.Stats(), cons.Stats())
	if err != nil {
		t.Fatal(err)
	}
	rep.Start()
	from := time.Now().Unix()

	// Ten callers, each with nine short calls and one long one.
	took := make([]time.Duration, 0, 100)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for i := range 10 {
				ms := int32(1)
				if i == 4 {
					ms = 50
				}
				began := time.Now()
				res, err := ref.Invoke(ctx, &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion,
					Method: "sleep", ParamTypes: []string{"int"}, Args: []any{ms}})
				d := time.Since(began)
				if err != nil || res.Exception != nil {
					t.Errorf("sleep(%d): %v %v", ms, res, err)
					return
				}
				mu.Lock()
				took = append(took, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := rep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(took)
	trueP50, trueP99 := took[49], took[98]

	summary := func(side string) store.SummaryRow {
		t.Helper()
		code, body := get(t, fmt.Sprintf("%s/api/v1/traffic?by=method&interface=%s&side=%s&from=%d&to=%d", m.http,
			providertest.GreeterInterface, side, from-3600, from+3600))
		var s store.Summary
		if err := json.Unmarshal([]byte(body), &s); code != http.StatusOK || err != nil || len(s.Rows) != 1 {
			t.Fatalf("GET /api/v1/traffic (%s): %d %s", side, code, body)
		}
		return s.Rows[0]
	}
	near := func(what string, got *float64, want time.Duration) {
		t.Helper()
		w := float64(want) / float64(time.Millisecond)
		if got == nil || *got < w*0.75 || *got > w*1.25 {
			t.Errorf("%s = %v ms, want within 25%% of %.3f ms", what, deref(got), w)
		}
	}
	c, pr := summary("consumer"), summary("provider")
	if c.Calls != 100 || pr.Calls != 100 || c.HistogramCalls != 100 || pr.HistogramCalls != 100 {
		t.Fatalf("calls: consumer %+v, provider %+v", c, pr)
	}
	near("consumer p50", c.P50Ms, trueP50)
	near("consumer p99", c.P99Ms, trueP99)
	if *pr.P50Ms < 0.75 || *pr.P50Ms > *c.P50Ms*1.25 || *pr.P99Ms < 50*0.75 || *pr.P99Ms > *c.P99Ms*1.25 {
		t.Errorf("provider p50 %v ms, p99 %v ms: want from the sleeps (1 ms, 50 ms) up to the consumer's (%v, %v)", *pr.P50Ms, *pr.P99Ms, *c.P50Ms, *c.P99Ms)
	}
	t.Logf("measured p50 %v p99 %v; consumer p50 %.3f p99 %.3f ms; provider p50 %.3f p99 %.3f ms",
		trueP50, trueP99, *c.P50Ms, *c.P99Ms, *pr.P50Ms, *pr.P99Ms)

	// A day later the hour is folded: the same percentiles, from hourly
	// rows.
	clk.Set(time.Now().Add(26 * time.Hour))
	deadline := time.Now().Add(10 * time.Second)
	for rows := getStats(t, m, "interface=org.example.Greeter"); len(rows) != 2 || rows[0].Interval != 3600; rows = getStats(t, m, "interface=org.example.Greeter") {
		if time.Now().After(deadline) {
			t.Fatalf("not folded into hourly rows: %+v", rows)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c2 := summary("consumer"); *c2.P50Ms != *c.P50Ms || *c2.P99Ms != *c.P99Ms || c2.HistogramCalls != 100 {
		t.Errorf("after the rollup: consumer p50 %v p99 %v, before %v %v", deref(c2.P50Ms), deref(c2.P99Ms), *c.P50Ms, *c.P99Ms)
	}
	code, body := get(t, fmt.Sprintf("%s/api/v1/series?interface=%s&side=provider&from=%d&to=%d&step=3600", m.http,
		providertest.GreeterInterface, from, from))
	var bs []store.Bucket
	if err := json.Unmarshal([]byte(body), &bs); code != http.StatusOK || err != nil || len(bs) != 1 || bs[0].P99Ms == nil || *bs[0].P99Ms != *pr.P99Ms {
		t.Errorf("series after the rollup: %d %s, want p99 %v", code, body, *pr.P99Ms)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// A Java Dubbo 2.7 node's report (its URL object with a parameters map, no
// node, interval or histogram) is stored and shows its calls, average and
// maximum, its percentiles null: the summary marks what it cannot know.
func TestJavaReportShowsAvgAndMax(t *testing.T) {
	m := startMonitor(t)
	ctx := testCtx(t)
	client := dial(t, m)
	ts := time.Now().UnixMilli()
	java27 := map[string]any{
		hessian.ClassKey: report.URLClass, "protocol": "count", "host": "10.0.0.6", "port": int32(20880), "path": "org.example.Greeter/add",
		"parameters": map[any]any{"application": "java-provider", "interface": "org.example.Greeter", "method": "add", "version": "1.0.0",
			"consumer": "10.0.0.9", "success": "10", "failure": "2", "elapsed": "36", "max.elapsed": "9", "concurrent": "1",
			"max.concurrent": "2", "input": "1200", "output": "400", "max.input": "100", "max.output": "40", "timestamp": itoa(ts), "dubbo": "2.0.2"},
	}
	res, err := client.Invoke(ctx, &rpc.Invocation{Service: monitor.ServiceInterface, Method: "collect",
		ParamTypes: []string{report.URLClass}, Args: []any{java27}})
	if err != nil || res.Exception != nil {
		t.Fatalf("java 2.7 sample: %v %v", res, err)
	}
	rows := getStats(t, m, "interface=org.example.Greeter&version=1.0.0")
	if len(rows) != 1 || rows[0].Success != 10 || rows[0].Failure != 2 || rows[0].ElapsedMs != 36 || rows[0].MaxElapsedMs != 9 ||
		rows[0].Address != "10.0.0.6:20880" || rows[0].Side != "provider" || rows[0].P99Ms != nil {
		t.Fatalf("java 2.7 rows %+v", rows)
	}
	sec := ts / 1000
	code, body := get(t, fmt.Sprintf("%s/api/v1/traffic?by=service&from=%d&to=%d", m.http, sec-60, sec+60))
	var s store.Summary
	if err := json.Unmarshal([]byte(body), &s); code != http.StatusOK || err != nil || len(s.Rows) != 1 {
		t.Fatalf("GET /api/v1/traffic: %d %s", code, body)
	}
	if r := s.Rows[0]; r.Calls != 12 || r.AvgMs != 3 || r.MaxElapsedMs != 9 || r.MaxConcurrent != 2 || r.ErrorRate != 2.0/12 ||
		r.Application != "java-provider" || r.P50Ms != nil || r.P99Ms != nil || r.HistogramCalls != 0 ||
		!strings.Contains(body, `"p99_ms":null`) {
		t.Errorf("java 2.7 summary %s", body)
	}
}
