package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
)

// statRow is a row of GET /api/v1/stats.
type statRow struct {
	Time        int64  `json:"time"`
	Side        string `json:"side"`
	Application string `json:"application"`
	Node        string `json:"node"`
	Method      string `json:"method"`
	Address     string `json:"address"`
	Consumer    string `json:"consumer"`
	Success     int64  `json:"success"`
	Failure     int64  `json:"failure"`
	Input       int64  `json:"input"`
	Output      int64  `json:"output"`
}

// stats reads the monitor's rows of Greeter's method on side.
func stats(p ports, side, method string) ([]statRow, error) {
	resp, err := http.Get(p.consoleURL("/api/v1/stats?interface=org.example.Greeter&side=" + side + "&method=" + method))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v1/stats: %d %s", resp.StatusCode, b)
	}
	var rows []statRow
	return rows, json.Unmarshal(b, &rows)
}

// counted is what one side counted of sayHello towards one provider.
type counted struct{ success, failure int64 }

func (c counted) attempts() int64 { return c.success + c.failure }

// byAddress sums rows per provider address.
func byAddress(rows []statRow) map[string]counted {
	out := map[string]counted{}
	for _, r := range rows {
		c := out[r.Address]
		c.success += r.Success
		c.failure += r.Failure
		out[r.Address] = c
	}
	return out
}

func sum(m map[string]counted) (c counted) {
	for _, v := range m {
		c.success += v.success
		c.failure += v.failure
	}
	return c
}

// counts reads what each side counted of sayHello, by provider address.
func counts(p ports) (prov, cons map[string]counted, err error) {
	pr, err := stats(p, "provider", "sayHello")
	if err != nil {
		return nil, nil, err
	}
	cr, err := stats(p, "consumer", "sayHello")
	if err != nil {
		return nil, nil, err
	}
	return byAddress(pr), byAddress(cr), nil
}

// waitConsumers waits until the consumers' rows hold the made sayHello
// calls, all successful, and checks one interval on that no more came (a
// call counted twice). The statistics count attempts, as Dubbo's do: an
// attempt that timed out on the loaded machine is a failure besides the
// success of its retry elsewhere.
func waitConsumers(t *testing.T, p ports, made int64, within time.Duration) map[string]counted {
	t.Helper()
	var cons map[string]counted
	var err error
	waitFor(within, func() bool {
		_, cons, err = counts(p)
		return err == nil && sum(cons).success >= made
	})
	time.Sleep(1500 * time.Millisecond)
	if err == nil {
		_, cons, err = counts(p)
	}
	if err != nil || sum(cons).success != made {
		t.Fatalf("the consumers' rows count %d successful sayHello calls (%v, err %v); %d were made", sum(cons).success, cons, err, made)
	}
	return cons
}

// waitProviders waits until the providers' rows hold every attempt the
// consumers counted, provider by provider, and checks one interval on
// that they hold exactly as many: each attempt is counted once on each
// side.
func waitProviders(t *testing.T, p ports, cons map[string]counted, within time.Duration) map[string]counted {
	t.Helper()
	var prov map[string]counted
	var err error
	waitFor(within, func() bool {
		prov, _, err = counts(p)
		return err == nil && sum(prov).attempts() >= sum(cons).attempts()
	})
	time.Sleep(1500 * time.Millisecond)
	if err == nil {
		prov, _, err = counts(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	for addr := range merged(prov, cons) {
		// An attempt that failed before reaching the provider (its
		// connection closed under it: the tests run 60 ms heartbeats on a
		// loaded machine) is the consumer's alone; every other attempt is
		// counted once on each side.
		pa, ca := prov[addr].attempts(), cons[addr].attempts()
		if pa > ca || ca-pa > cons[addr].failure || cons[addr].success > pa {
			t.Errorf("provider %s counted %+v, its consumers %+v: each attempt that reached it must be counted once on each side", addr, prov[addr], cons[addr])
		} else if pa != ca {
			t.Logf("provider %s: %d attempts of its consumers failed before reaching it", addr, ca-pa)
		}
	}
	return prov
}

func merged(a, b map[string]counted) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// scrapeMetrics reads a /metrics endpoint with Prometheus's own parser.
func scrapeMetrics(t *testing.T, url string) map[string][]metricSample {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var parser expfmt.TextParser
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: not Prometheus text: %v", url, err)
	}
	out := map[string][]metricSample{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			s := metricSample{labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				s.value = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				s.value = m.GetGauge().GetValue()
			case m.GetUntyped() != nil:
				s.value = m.GetUntyped().GetValue()
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

type metricSample struct {
	labels map[string]string
	value  float64
}

// metricSum adds the samples of name whose labels include want.
func metricSum(mfs map[string][]metricSample, name string, want map[string]string) (sum float64, n int) {
	for _, s := range mfs[name] {
		match := true
		for k, v := range want {
			match = match && s.labels[k] == v
		}
		if match {
			sum += s.value
			n++
		}
	}
	return sum, n
}

// qosGet sends a QoS command over HTTP and returns the status and body.
func qosGet(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// benchCalls runs dubbo bench against sayHello and fails on any error.
func benchCalls(t *testing.T, dir string, p ports, flags ...string) benchSummary {
	t.Helper()
	s := bench(t, dir, append([]string{"--registry", p.registryURL()}, flags...)...)
	if s.Errors != 0 {
		t.Fatalf("dubbo bench %v: %d of %d calls failed: %v", flags, s.Errors, s.Calls, s.ErrorsByKind)
	}
	return s
}

// TestMonitorUp runs `dubbo up` (registry, monitor, two providers, a
// consumer with its gateway) with statistics every second, a provider
// heartbeat of 60 ms, a QoS port, a second provider process and a real
// Prometheus scraping the QoS ports, and checks what a user reads:
//
//   - every sayHello made through dubbo bench and the gateway is in the
//     monitor (GET /api/v1/stats) as exactly one success on the consumers'
//     side, and each attempt once on each side, per provider;
//   - Prometheus's dubbo_provider_requests_total for sayHello equals the
//     calls made, and /metrics parses with Prometheus's own parser, with
//     Dubbo 3's metric names, the thread pools, the registry's ZooKeeper
//     figures and the monitor's own;
//   - QoS offline of a provider under load: consumers stop sending to it
//     within a second and no call fails; ready says 503 meanwhile; online
//     brings it back;
//   - a provider heartbeat of 60 ms (published in its URL) keeps the
//     gateway's connections through idle spells: no call fails.
func TestMonitorUp(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 3) // two replicas in dubbo up, one provider of its own
	cfg := writeConfig(t, dir, p, setup{
		replicas:        2,
		providerPlugins: []string{"greeter"},
		references:      []string{"org.example.Greeter"},
		gateway:         true,
		qos:             true,
		extra:           "\n[monitor]\ninterval = \"1s\"\n",
	})
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg, "--set", "protocol.heartbeat=60")

	// The third provider: a process of its own, with its own QoS port.
	dir3 := t.TempDir()
	p3 := p
	p3.provider = p.provider + 2
	p3.qos = freePorts(t, 1).qos
	// Its statistics reach the monitor only when it stops (a minute's
	// interval): a node that stops gracefully sends its last, partial
	// interval.
	cfg3 := writeConfig(t, dir3, p3, setup{providerPlugins: []string{"greeter"}, qos: true, extra: "\n[monitor]\ninterval = \"60s\"\n"})
	third := startNode(t, "provider 3", dir3, "run", "--role=provider", "-c", cfg3, "--set", "protocol.heartbeat=60")

	prom := startPrometheus(t, fmt.Sprintf("127.0.0.1:%d", p.qos), fmt.Sprintf("127.0.0.1:%d", p3.qos))

	// The environment warms up on add; sayHello is counted from nothing:
	// made counts every sayHello, all of which must succeed.
	warmUp(t, dir, p, 3)
	served3 := func() int64 {
		v, _ := metricSum(scrapeMetrics(t, p3.qosURL("/metrics")), "dubbo_provider_requests_total", map[string]string{"method": "sayHello"})
		return int64(v)
	}
	var made int64

	t.Run("heartbeat", func(t *testing.T) {
		// The gateway's consumer pings at the providers' 60 ms: its
		// connections outlive idle spells of 5 provider heartbeats.
		client := &http.Client{Timeout: 5 * time.Second}
		for i := range 8 {
			code, body, err := invoke(client, p, "org.example.Greeter", "sayHello", `["hb"]`)
			if err != nil || code != 200 {
				t.Errorf("gateway call %d after 300 ms idle: %d %s %v", i, code, body, err)
				continue
			}
			made++
			time.Sleep(300 * time.Millisecond)
		}
	})

	t.Run("offline under load", func(t *testing.T) {
		addr3 := p3.providerAddr(0)
		served := served3
		var wg sync.WaitGroup
		var load benchSummary
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := runDubbo(dir, "bench", "--registry", p.registryURL(), "-d", "7s", "-c", "4", "--version", "1.0.0",
				"org.example.Greeter", "sayHello", `"load"`)
			if err == nil && json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &load) != nil {
				t.Errorf("dubbo bench printed %q (%s)", r.stdout, r.stderr)
			}
		}()
		time.Sleep(1500 * time.Millisecond)
		before := served()
		if code, body, err := qosGet(p3.qosURL("/offline?service=org.example.*")); err != nil || code != 200 || body != "OK" {
			t.Fatalf("offline: %d %q %v", code, body, err)
		}
		if code, body, _ := qosGet(p3.qosURL("/ready")); code != 503 || !strings.Contains(body, "offline") {
			t.Errorf("ready while offline: %d %q, want 503 naming the offline service", code, body)
		}
		time.Sleep(time.Second)
		atOneSecond := served()
		time.Sleep(1500 * time.Millisecond)
		later := served()
		if before == 0 || later != atOneSecond {
			t.Errorf("provider %s served %v calls before offline, %v one second after, %v 1.5s later: consumers must stop sending within a second",
				addr3, before, atOneSecond, later)
		}
		if code, body, err := qosGet(p3.qosURL("/online")); err != nil || code != 200 || body != "OK" {
			t.Fatalf("online: %d %q %v", code, body, err)
		}
		if _, ok := waitFor(5*time.Second, func() bool { return served() > later }); !ok {
			t.Errorf("provider %s got no call within 5s of online", addr3)
		}
		if code, body, _ := qosGet(p3.qosURL("/ready")); code != 200 || body != "true" {
			t.Errorf("ready after online: %d %q", code, body)
		}
		wg.Wait()
		if load.Calls == 0 || load.Errors != 0 {
			t.Fatalf("offline and online under load: %d of %d calls failed: %v", load.Errors, load.Calls, load.ErrorsByKind)
		}
		made += load.Calls
		t.Logf("under load: %d calls, %d on %s", load.Calls, load.ByProvider[addr3], addr3)
	})

	last := benchCalls(t, dir, p, "-n", "3000", "-c", "8")
	made += last.Calls
	// Every call made is in the consumers' rows once they settle; the
	// providers served every attempt that reached them.
	cons := waitConsumers(t, p, made, 15*time.Second)
	// A failed attempt may have reached its provider (a timeout) or not
	// (a connection that closed under it): the providers count between
	// attempts-failed and attempts.
	attempts, failed := sum(cons).attempts(), sum(cons).failure

	t.Run("prometheus", func(t *testing.T) {
		var got float64
		expr := `sum(dubbo_provider_requests_total{method="sayHello",interface="org.example.Greeter"})`
		_, ok := waitFor(20*time.Second, func() bool {
			v, ok, err := prom.query(expr)
			got = v
			return err == nil && ok && int64(v) >= attempts-failed
		})
		if !ok || int64(got) > attempts {
			t.Errorf("Prometheus: %s = %v, want the %d calls made (%d attempts, %d failed)", expr, got, made, attempts, failed)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		mfs := scrapeMetrics(t, p.qosURL("/metrics"))
		hello := map[string]string{"application_name": "e2e", "interface": "org.example.Greeter", "method": "sayHello", "version": "1.0.0"}
		served, _ := metricSum(mfs, "dubbo_provider_requests_total", hello)
		if n3 := served3(); int64(served)+n3 > attempts || int64(served)+n3 < attempts-failed {
			t.Errorf("dubbo_provider_requests_total of dubbo up (%v) and provider 3 (%v) add up to %v, want the %d calls made (%d attempts, %d failed)",
				served, n3, int64(served)+n3, made, attempts, failed)
		}
		if v, _ := metricSum(mfs, "dubbo_consumer_requests_total", hello); v < 8 {
			t.Errorf("dubbo_consumer_requests_total %v: the gateway's consumer made at least 8 calls", v)
		}
		if _, n := metricSum(mfs, "dubbo_thread_pool_core_size", map[string]string{"application_name": "e2e"}); n != 2 {
			t.Errorf("%d thread pools exported, want the two replicas'", n)
		}
		app := map[string]string{"application_name": "e2e"}
		for name, least := range map[string]float64{
			"dubbo_registry_register_requests_succeed_total": 3, // two providers and the consumer's reference
			"dubbo_registry_subscribe_num_succeed_total":     1,
			"dubbo_registry_notify_requests_total":           1,
		} {
			if v, _ := metricSum(mfs, name, app); v < least {
				t.Errorf("%s = %v, want at least %v", name, v, least)
			}
		}
		for _, name := range []string{"dubbo_provider_rt_milliseconds_p99", "znode_count", "watch_count", "num_alive_connections",
			"outstanding_requests", "avg_latency", "dubbo_monitor_rows_stored_total", "dubbo_monitor_insert_seconds_total",
			"dubbo_monitor_reports_dropped_total", "go_goroutines"} {
			if len(mfs[name]) == 0 {
				t.Errorf("no %s in dubbo up's /metrics", name)
			}
		}
		if v, _ := metricSum(mfs, "znode_count", nil); v < 10 {
			t.Errorf("znode_count %v", v)
		}
		if v, _ := metricSum(mfs, "dubbo_monitor_rows_stored_total", nil); v < 3 {
			t.Errorf("dubbo_monitor_rows_stored_total %v", v)
		}
		// The monitor's HTTP server serves the same metrics.
		if got := scrapeMetrics(t, p.consoleURL("/metrics")); len(got["dubbo_provider_requests_total"]) == 0 {
			t.Error("no dubbo_provider_requests_total on the monitor's /metrics")
		}
	})

	t.Run("qos", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			code int
			want string
		}{
			{"/ready", 200, "true"}, {"/live", 200, "true"}, {"/startup", 200, "true"},
			{"/version", 200, "dubbo version"}, {"/ls", 200, "org.apache.dubbo.monitor.MonitorService"},
			{"/ls", 200, "| org.example.Greeter:1.0.0                | Y   |"},
		} {
			if code, body, err := qosGet(p.qosURL(tc.path)); err != nil || code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("GET %s: %d %q %v; want %d with %q", tc.path, code, body, err, tc.code, tc.want)
			}
		}
		// The same commands typed on a plain connection, as in Java's telnet mode.
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.qos), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "ready\r\nquit\r\n"); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(c)
		if out := string(b); !strings.Contains(out, "true") || !strings.Contains(out, "BYE!") {
			t.Errorf("telnet ready: %q", out)
		}
	})

	t.Run("counts", func(t *testing.T) {
		if code := third.stop(t); code != 0 {
			t.Errorf("provider 3 exited %d", code)
		}
		// The third provider's rows come from the partial interval it sent
		// when it stopped.
		prov := waitProviders(t, p, cons, 15*time.Second)
		if len(prov) != 3 {
			t.Errorf("calls counted on %v, want three providers", prov)
		}
		for addr, n := range last.ByProvider {
			if prov[addr].success < n {
				t.Errorf("bench sent %d calls to %s, the monitor counts %+v there", n, addr, prov[addr])
			}
		}
		t.Logf("%d calls made; counted by the providers %v, by the consumers %v", made, prov, cons)
	})

	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d after Ctrl-C", code)
	}
}

// warmUp calls add through the registry until providers have all
// served it, so that what follows is measured on an environment that is up.
func warmUp(t *testing.T, dir string, p ports, providers int) {
	t.Helper()
	var last string
	if _, ok := waitFor(20*time.Second, func() bool {
		r, err := runDubbo(dir, "bench", "--registry", p.registryURL(), "-n", "30", "-c", "3", "--version", "1.0.0",
			"org.example.Greeter", "add", "1", "2")
		last = r.stdout + r.stderr
		var s benchSummary
		return err == nil && json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &s) == nil && s.Errors == 0 && len(s.ByProvider) == providers
	}); !ok {
		t.Fatalf("%d providers did not all serve add within 20s: %s", providers, last)
	}
}
