package console_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/monitor/store"
	"github.com/dubbo-lab/dubbo/node/stats/histogram"
	dubbourl "github.com/dubbo-lab/dubbo/node/url"
)

// The traffic pages' tests store what nodes would have reported, at
// known minutes, so that every figure is known.

// calls is one report: a node's calls of one method towards one peer in
// the minute ending at Time, each taking took.
type calls struct {
	time              int64
	side, app, iface  string
	version, group    string
	method            string
	address, consumer string
	ok, failed        int64
	took              time.Duration
	noHistogram       bool // a Java node's report
	maxConcurrent     int64
}

func (c calls) row() store.Row {
	n := c.ok + c.failed
	r := store.Row{Time: c.time, Interval: 60, Side: c.side, Application: c.app, Node: c.address + "/" + c.consumer + "/" + c.side,
		Interface: c.iface, Version: c.version, Group: c.group, Method: c.method, Address: c.address, Consumer: c.consumer,
		Success: c.ok, Failure: c.failed, ElapsedMs: n * c.took.Milliseconds(), MaxElapsedMs: c.took.Milliseconds(), MaxConcurrent: c.maxConcurrent}
	if !c.noHistogram {
		var h histogram.Counts
		h[histogram.Of(c.took)] = n
		r.Histogram = h.Sparse()
	}
	return r
}

// stored inserts the reports into the system's store.
func stored(t *testing.T, e *env, cs ...calls) {
	t.Helper()
	rows := make([]store.Row, len(cs))
	for i, c := range cs {
		rows[i] = c.row()
	}
	if _, err := e.store.Insert(testCtx(t), rows); err != nil {
		t.Fatal(err)
	}
}

// lastMinute is the end of the last complete minute. Tests store their
// reports in the four minutes up to it: the last five complete minutes
// still hold them if the minute turns before the page is read.
func lastMinute() int64 { return time.Now().Unix() / 60 * 60 }

// registered creates registry nodes (and their parents) as Dubbo nodes
// and Admin write them, and waits until the console's copy has them.
func registered(t *testing.T, e *env, paths ...string) {
	t.Helper()
	conn, _, err := zk.Connect([]string{e.zkAddr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	acl := zk.WorldACL(zk.PermAll)
	// Read before creating: the catalog may have the nodes before this
	// function looks.
	before := e.console.Catalog().Version()
	for _, p := range paths {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		for i := range parts {
			if _, err := conn.Create("/"+strings.Join(parts[:i+1], "/"), nil, 0, acl); err != nil && err != zk.ErrNodeExists {
				t.Fatalf("create %s: %v", p, err)
			}
		}
	}
	// Every node, not only a first change: the folders' events come
	// first, and a loaded machine shows the gap.
	waitFor(t, "the console's copy of the new nodes", func() bool {
		if e.console.Catalog().Version() == before {
			return false
		}
		for _, p := range paths {
			if !inCatalog(t, e, p) {
				return false
			}
		}
		return true
	})
}

// inCatalog says whether the console's copy of the registry has the
// provider or consumer node at path (/dubbo/<interface>/<category>/<URL>);
// of another node, that it cannot tell (true).
func inCatalog(t *testing.T, e *env, path string) bool {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) != 4 || parts[0] != "dubbo" || (parts[2] != "providers" && parts[2] != "consumers") {
		return true
	}
	raw, err := url.QueryUnescape(parts[3])
	if err != nil {
		t.Fatal(err)
	}
	u := dubbourl.MustParse(raw)
	d, ok := e.console.Catalog().Service(parts[1])
	if !ok {
		return false
	}
	if parts[2] == "providers" {
		return slices.ContainsFunc(d.ProviderURLs(), func(p *dubbourl.URL) bool { return p.Address() == u.Address() })
	}
	return slices.ContainsFunc(d.Consumers, func(c catalog.Consumer) bool { return c.Address == u.Host() })
}

// providerNode is the path of a provider node of url u.
func providerNode(iface, u string) string {
	return "/dubbo/" + iface + "/providers/" + url.QueryEscape(u)
}

// The overview ranks the services by their calls of the last five
// complete minutes, the failing ones first, from the consumers' reports
// where there are some; its counts are those of the lists they link to.
func TestOverviewRanksServices(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	registered(t, e, providerNode("org.example.Failing", "dubbo://127.0.0.1:20999/org.example.Failing?application=failing-app&interface=org.example.Failing&side=provider&version=2.0.0"),
		"/dubbo/config/dubbo/dubbo.properties") // a config document that is no rule
	waitFor(t, "Failing in the console", func() bool { _, ok := e.console.Catalog().Service("org.example.Failing"); return ok })
	end := lastMinute()
	var cs []calls
	for m := int64(0); m < 4; m++ {
		at := end - 60*m
		cs = append(cs,
			calls{time: at, side: "consumer", app: "greeter-consumer", iface: greeter, version: "1.0.0", method: "sayHello",
				address: e.Providers[0], consumer: "127.0.0.1", ok: 750, took: time.Millisecond},
			calls{time: at, side: "provider", app: "greeter-app", iface: greeter, version: "1.0.0", method: "sayHello",
				address: e.Providers[0], consumer: "127.0.0.1", ok: 700, took: time.Millisecond})
	}
	cs = append(cs, calls{time: end, side: "provider", app: "failing-app", iface: "org.example.Failing", version: "2.0.0", method: "fail",
		address: "127.0.0.1:20999", consumer: "127.0.0.1", ok: 80, failed: 20, took: 50 * time.Millisecond, noHistogram: true})
	stored(t, e, cs...)

	var o struct {
		Applications, Rules int
		Traffic             struct {
			Calls, Failures int64
			CallsPerSecond  float64 `json:"calls_per_second"`
			Range           string
		}
		Busiest []struct {
			Interface string
			Traffic   struct {
				Side           string
				Calls          int64
				CallsPerSecond float64  `json:"calls_per_second"`
				ErrorRate      float64  `json:"error_rate"`
				P99            *float64 `json:"p99_ms"`
			}
		}
	}
	getJSON(t, e, "/api/v1/overview", &o)
	if tr := o.Traffic; tr.Calls != 3100 || tr.Failures != 20 || tr.CallsPerSecond != 3100.0/300 || tr.Range != "recent" {
		t.Errorf("overview traffic %+v: want Greeter's 3000 calls (the consumers'), Failing's 100, over 300 s", tr)
	}
	if len(o.Busiest) != 2 {
		t.Fatalf("busiest %+v: want Failing and Greeter", o.Busiest)
	}
	f, g := o.Busiest[0], o.Busiest[1]
	if f.Interface != "org.example.Failing" || f.Traffic.ErrorRate != 0.2 || f.Traffic.Side != "provider" || f.Traffic.P99 != nil {
		t.Errorf("first %+v: want Failing, 20%% failed, from its providers, no p99 (no histogram)", f)
	}
	if g.Interface != greeter || g.Traffic.Calls != 3000 || g.Traffic.CallsPerSecond != 10 || g.Traffic.Side != "consumer" ||
		g.Traffic.P99 == nil || *g.Traffic.P99 < 0.896 || *g.Traffic.P99 > 1.024 {
		t.Errorf("second %+v: want Greeter, 10 calls/s from its consumers, p99 in 1 ms's bucket", g)
	}

	// The counts agree with the lists they link to.
	var apps, rules []any
	getJSON(t, e, "/api/v1/applications", &apps)
	getJSON(t, e, "/api/v1/rules", &rules)
	if o.Applications != len(apps) || o.Applications != 3 || o.Rules != len(rules) || o.Rules != 0 {
		t.Errorf("overview counts %d applications and %d rules; the lists have %d and %d; want 3 (greeter-app, greeter-consumer, failing-app) and 0",
			o.Applications, o.Rules, len(apps), len(rules))
	}

	_, page, _ := do(t, "GET", e.ConsoleURL+"/", "", "")
	fi := strings.Index(page, `<tr data-interface="org.example.Failing" class="bad">`)
	gi := strings.Index(page, `<tr data-interface="`+greeter+`" >`)
	if fi < 0 || gi < fi || !strings.Contains(page[gi:], `<td class="n calls-per-second">10.00</td>`) || !strings.Contains(page[fi:], `20.00%`) {
		t.Errorf("overview page: want Failing in red above Greeter at 10.00 calls/s:\n%s", page)
	}
	if !strings.Contains(page, `href="/services/org.example.Failing?group=&amp;version=2.0.0"`) {
		t.Errorf("overview page: Failing does not link to its page")
	}

	// Late reports show by the next refresh.
	stored(t, e, calls{time: end - 60, side: "consumer", app: "greeter-consumer", iface: greeter, version: "1.0.0", method: "add",
		address: e.Providers[1], consumer: "127.0.0.1", ok: 300, took: time.Millisecond})
	waitFor(t, "the overview to count the late calls", func() bool {
		getJSON(t, e, "/api/v1/overview", &o)
		return o.Traffic.Calls == 3400
	})
}

// The services list shows each service's calls/s, error rate and p99,
// sorts by them, and finds the services a machine or a process serves or
// calls, from the registry's nodes and from the monitor's reports.
func TestServicesListSortsAndFindsByHost(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	registered(t, e,
		providerNode("org.example.Failing", "dubbo://127.0.0.1:20999/org.example.Failing?application=failing-app&interface=org.example.Failing&side=provider&version=2.0.0"),
		providerNode("org.example.Quiet", "dubbo://10.9.9.9:20880/org.example.Quiet?application=quiet-app&interface=org.example.Quiet&side=provider"),
		"/dubbo/org.example.Quiet/consumers/"+url.QueryEscape("consumer://10.8.8.8/org.example.Quiet?application=quiet-web&interface=org.example.Quiet&side=consumer"))
	waitFor(t, "Quiet's consumer in the console", func() bool {
		d, ok := e.console.Catalog().Service("org.example.Quiet")
		return ok && len(d.Consumers) == 1
	})
	end := lastMinute()
	stored(t, e,
		calls{time: end, side: "consumer", app: "greeter-consumer", iface: greeter, version: "1.0.0", method: "sayHello",
			address: e.Providers[0], consumer: "127.0.0.1", ok: 600, took: time.Millisecond},
		// A consumer the registry does not know (dubbo call, a bench).
		calls{time: end - 60, side: "consumer", app: "bench", iface: greeter, version: "1.0.0", method: "sayHello",
			address: e.Providers[1], consumer: "10.7.7.7", ok: 300, took: 2 * time.Millisecond},
		calls{time: end, side: "provider", app: "failing-app", iface: "org.example.Failing", version: "2.0.0", method: "fail",
			address: "127.0.0.1:20999", consumer: "127.0.0.1", ok: 1, failed: 1, took: 9 * time.Millisecond, noHistogram: true})

	list := func(query string) []string {
		t.Helper()
		var rows []struct {
			Interface string
			Traffic   *struct{ Calls int64 }
		}
		getJSON(t, e, "/api/v1/services"+query, &rows)
		var out []string
		for _, r := range rows {
			n := int64(0)
			if r.Traffic != nil {
				n = r.Traffic.Calls
			}
			out = append(out, fmt.Sprintf("%s %d", r.Interface, n))
		}
		return out
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"org.example.Failing 2", greeter + " 900", "org.example.Quiet 0"}},
		{"?sort=calls", []string{greeter + " 900", "org.example.Failing 2", "org.example.Quiet 0"}},
		{"?sort=errors", []string{"org.example.Failing 2", greeter + " 900", "org.example.Quiet 0"}},
		{"?sort=p99", []string{greeter + " 900", "org.example.Failing 2", "org.example.Quiet 0"}},
		{"?q=QUIET-APP", []string{"org.example.Quiet 0"}},
		{"?q=10.9.9.9", []string{"org.example.Quiet 0"}},       // a provider node's host
		{"?q=10.9.9.9:20880", []string{"org.example.Quiet 0"}}, // and the process
		{"?q=10.9.9.9:20881", nil},                                           // another process
		{"?q=10.8.8.8", []string{"org.example.Quiet 0"}},                     // a consumer node's host
		{"?q=10.7.7.7", []string{greeter + " 900"}},                          // a caller only the monitor knows
		{"?q=127.0.0.1:20999&sort=calls", []string{"org.example.Failing 2"}}, // a provider only the registry and its own reports know
		{"?q=" + e.Providers[1], []string{greeter + " 900"}},                 // a provider by its calls and its node
		{"?q=10.6.6.6", nil},
	} {
		if got := list(c.query); !slices.Equal(got, c.want) {
			t.Errorf("services%s: %q, want %q", c.query, got, c.want)
		}
	}
	if st, body, _ := do(t, "GET", e.ConsoleURL+"/api/v1/services?sort=fastest", "", ""); st != 400 || !strings.Contains(body, "p99") {
		t.Errorf("an unknown order: %d %s", st, body)
	}
	_, page, _ := do(t, "GET", e.ConsoleURL+"/services?q=10.7.7.7", "", "")
	if !strings.Contains(page, `<td class="n calls-per-second">3.00</td>`) || strings.Contains(page, "org.example.Quiet") {
		t.Errorf("services page for 10.7.7.7: want Greeter alone at 3.00 calls/s:\n%s", page)
	}
}

// The service page's traffic: per method (calls, failures, success rate,
// avg, p50, p99, max, concurrency), each provider's and consumer's share,
// on either side, for one version and group or all, over a preset or a
// custom window.
func TestServiceTrafficPerMethodAndShare(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	end := lastMinute()
	p0, p1 := e.Providers[0], e.Providers[1]
	prov := func(addr, consumer, method, version, group string, ok, failed int64, took time.Duration) calls {
		return calls{time: end, side: "provider", app: "greeter-app", iface: greeter, version: version, group: group, method: method,
			address: addr, consumer: consumer, ok: ok, failed: failed, took: took, maxConcurrent: ok / 100}
	}
	java := prov(p1, "10.7.7.7", "legacy", "1.0.0", "", 10, 0, 20*time.Millisecond)
	java.noHistogram = true
	stored(t, e,
		prov(p0, "127.0.0.1", "sayHello", "1.0.0", "", 300, 0, time.Millisecond),
		prov(p1, "10.7.7.7", "sayHello", "1.0.0", "", 100, 0, time.Millisecond),
		prov(p0, "127.0.0.1", "add", "1.0.0", "", 50, 50, 4*time.Millisecond),
		java,
		prov(p1, "10.7.7.7", "sayHello", "2.0.0", "gray", 1000, 0, time.Millisecond),
		calls{time: end, side: "consumer", app: "greeter-consumer", iface: greeter, version: "1.0.0", method: "sayHello",
			address: p0, consumer: "127.0.0.1", ok: 300, took: 2 * time.Millisecond})

	type row struct {
		Method, Address, Consumer string
		Calls, Failure            int64
		Share                     float64
		AvgMs                     float64  `json:"avg_ms"`
		MaxMs                     int64    `json:"max_elapsed_ms"`
		MaxConcurrent             int64    `json:"max_concurrent"`
		P50                       *float64 `json:"p50_ms"`
		P99                       *float64 `json:"p99_ms"`
	}
	var sv struct {
		Traffic struct {
			Range, Side                   string
			Version, Group                *string
			From, To, Step, Calls         int64
			Methods, Providers, Consumers []row
			Buckets                       []struct{ Calls int64 }
		}
	}
	get := func(query string) {
		t.Helper()
		getJSON(t, e, "/api/v1/services/"+greeter+query, &sv)
	}
	get("?side=provider&version=1.0.0&group=")
	tr := sv.Traffic
	if tr.Side != "provider" || tr.Range != "15m" || tr.Version == nil || *tr.Version != "1.0.0" || tr.Group == nil || *tr.Group != "" || tr.Calls != 510 {
		t.Fatalf("traffic %+v: want 15m of version 1.0.0's 510 calls on the provider side", tr)
	}
	inBucket := func(v *float64, ms float64) bool { return v != nil && *v >= ms*0.875 && *v <= ms*1.125 }
	if len(tr.Methods) != 3 {
		t.Fatalf("methods %+v: want sayHello, add and legacy", tr.Methods)
	}
	say, add, legacy := tr.Methods[0], tr.Methods[1], tr.Methods[2]
	if say.Method != "sayHello" || say.Calls != 400 || say.MaxConcurrent != 3 || !inBucket(say.P99, 1) || !inBucket(say.P50, 1) {
		t.Errorf("sayHello %+v: want 400 calls, at most 3 in flight, p50 and p99 in 1 ms's bucket", say)
	}
	if add.Method != "add" || add.Calls != 100 || add.Failure != 50 || add.AvgMs != 4 || add.MaxMs != 4 || !inBucket(add.P99, 4) {
		t.Errorf("add %+v: want 100 calls, 50 failed, 4 ms", add)
	}
	if legacy.Method != "legacy" || legacy.Calls != 10 || legacy.AvgMs != 20 || legacy.MaxMs != 20 || legacy.P50 != nil || legacy.P99 != nil {
		t.Errorf("legacy %+v: a report without histogram has avg and max, no percentiles", legacy)
	}
	shares := func(rows []row, key func(row) string) string {
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%s %d %.2f", key(r), r.Calls, r.Share))
		}
		return strings.Join(out, ", ")
	}
	if got, want := shares(tr.Providers, func(r row) string { return r.Address }), p0+" 400 0.78, "+p1+" 110 0.22"; got != want {
		t.Errorf("providers' shares %s, want %s", got, want)
	}
	if got, want := shares(tr.Consumers, func(r row) string { return r.Consumer }), "127.0.0.1 400 0.78, 10.7.7.7 110 0.22"; got != want {
		t.Errorf("consumers' shares %s, want %s", got, want)
	}

	for _, c := range []struct {
		query string
		calls int64
	}{
		{"?side=provider", 1510},                          // every version
		{"?side=provider&version=2.0.0&group=gray", 1000}, // one
		{"?side=provider&version=2.0.0", 1000},            // a version, any group
		{"", 300},                                         // the consumers' side
		{fmt.Sprintf("?side=provider&from=%d&to=%d", end-59, end), 1510},
		{fmt.Sprintf("?side=provider&from=%d&to=%d", end-3600, end-120), 0},
		{"?side=provider&range=24h", 1510},
		{"?side=provider&from=" + time.Unix(end-59, 0).Format("2006-01-02T15:04:05") + "&to=" + time.Unix(end, 0).Format("2006-01-02T15:04:05"), 1510},
	} {
		get(c.query)
		if sv.Traffic.Calls != c.calls {
			t.Errorf("%s: %d calls, want %d", c.query, sv.Traffic.Calls, c.calls)
		}
	}
	get(fmt.Sprintf("?from=%d&to=%d", end-7*86400, end))
	if tr := sv.Traffic; tr.Range != "custom" || tr.Step != 3600 || len(tr.Buckets) > 240 || tr.From != end-7*86400 {
		t.Errorf("a custom week: %s, step %d, %d buckets; want hours", tr.Range, tr.Step, len(tr.Buckets))
	}
	get(fmt.Sprintf("?from=%d&to=%d", end-2*86400, end-2*86400+7200))
	if tr := sv.Traffic; tr.Step != 3600 {
		t.Errorf("two hours two days ago (hourly rows only): step %d; want an hour", tr.Step)
	}
	for _, q := range []string{"?range=2h", "?side=both", "?from=yesterday", fmt.Sprintf("?from=%d&to=%d", end, end-60), "?to=1700000000"} {
		if st, body, _ := do(t, "GET", e.ConsoleURL+"/api/v1/services/"+greeter+q, "", ""); st != 400 || !strings.Contains(body, "bad_request") {
			t.Errorf("%s: %d %s, want 400", q, st, body)
		}
	}

	_, page, _ := do(t, "GET", e.ConsoleURL+"/services/"+greeter+"?side=provider&version=1.0.0&group=", "", "")
	for _, want := range []string{`<tr data-method="sayHello" ><td>sayHello</td><td class="n calls">400</td>`,
		`<tr data-method="add" class="bad"><td>add</td><td class="n calls">100</td><td class="n">50</td><td class="n">50.00%</td>`,
		`<td class="n share">78.43%</td>`, "<title>Success rate</title>"} {
		if !strings.Contains(page, want) {
			t.Errorf("service page does not show %s:\n%s", want, page)
		}
	}
}

// The instances page lists every provider and consumer process from the
// registry and from the monitor's reports, with what each reported.
func TestInstancesFromRegistryAndReports(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	d, _ := e.console.Catalog().Service(greeter)
	consumerHost := d.Consumers[0].Address
	end := lastMinute()
	stored(t, e,
		calls{time: end, side: "provider", app: "greeter-app", iface: greeter, version: "1.0.0", method: "sayHello",
			address: e.Providers[0], consumer: consumerHost, ok: 594, failed: 6, took: time.Millisecond},
		calls{time: end, side: "consumer", app: "greeter-consumer", iface: greeter, version: "1.0.0", method: "sayHello",
			address: e.Providers[0], consumer: consumerHost, ok: 600, took: time.Millisecond},
		// Processes the registry does not hold.
		calls{time: end - 60, side: "provider", app: "bench-app", iface: "org.example.Bench", method: "run",
			address: "10.5.5.5:20880", consumer: "10.7.7.7", ok: 60, took: time.Millisecond},
		calls{time: end - 60, side: "consumer", app: "bench", iface: "org.example.Bench", method: "run",
			address: "10.5.5.5:20880", consumer: "10.7.7.7", ok: 120, took: time.Millisecond, noHistogram: true})

	var l struct {
		Window    struct{ Range string }
		Instances []struct {
			Side, Address          string
			Applications, Services []string
			Registered             bool
			Traffic                *struct {
				Calls, Failure, Last int64
				CallsPerSecond       float64 `json:"calls_per_second"`
			}
		}
	}
	getJSON(t, e, "/api/v1/instances", &l)
	var got []string
	for _, in := range l.Instances {
		s := fmt.Sprintf("%s %s %v %v %v", in.Side, in.Address, in.Applications, in.Services, in.Registered)
		if in.Traffic != nil {
			s += fmt.Sprintf(" %d calls %d failed %.1f/s at %d", in.Traffic.Calls, in.Traffic.Failure, in.Traffic.CallsPerSecond, in.Traffic.Last)
		}
		got = append(got, s)
	}
	p0, p1 := e.Providers[0], e.Providers[1]
	if p1 < p0 {
		p0, p1 = p1, p0
	}
	want := []string{
		fmt.Sprintf("provider %s [greeter-app] [%s] true", p0, greeter),
		fmt.Sprintf("provider %s [greeter-app] [%s] true", p1, greeter),
		"provider 10.5.5.5:20880 [bench-app] [] false 60 calls 0 failed 0.2/s at " + fmt.Sprint(end-60),
		fmt.Sprintf("consumer %s [greeter-consumer] [%s] true 600 calls 0 failed 2.0/s at %d", consumerHost, greeter, end),
		"consumer 10.7.7.7 [bench] [] false 120 calls 0 failed 0.4/s at " + fmt.Sprint(end-60),
	}
	served := fmt.Sprintf(" 600 calls 6 failed 2.0/s at %d", end)
	if p0 == e.Providers[0] {
		want[0] += served
	} else {
		want[1] += served
	}
	slices.Sort(want[:3])
	slices.Sort(want[3:])
	if !slices.Equal(got, want) || l.Window.Range != "recent" {
		t.Errorf("instances over %s:\n%s\nwant\n%s", l.Window.Range, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	var found struct{ Instances []struct{ Address string } }
	getJSON(t, e, "/api/v1/instances?q=BENCH", &found)
	if len(found.Instances) != 2 || found.Instances[0].Address != "10.5.5.5:20880" || found.Instances[1].Address != "10.7.7.7" {
		t.Errorf("instances of bench: %+v, want its provider and its consumer", found.Instances)
	}
	_, page, _ := do(t, "GET", e.ConsoleURL+"/instances", "", "")
	for _, w := range []string{`<td class="n errors bad">6 (1.00%)</td>`,
		`<a href="/services?q=10.5.5.5%3a20880" title="what it serves and calls">10.5.5.5:20880</a>`, "reports only"} {
		if !strings.Contains(page, w) {
			t.Errorf("instances page does not show %s:\n%s", w, page)
		}
	}
}

// The dependencies page: which application calls which service of which
// application, from the consumers' reports and the registry's consumer
// nodes, as a map and a table.
func TestDependencies(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	end := lastMinute()
	p0 := e.Providers[0]
	stored(t, e,
		calls{time: end, side: "consumer", app: "greeter-consumer", iface: greeter, version: "1.0.0", method: "sayHello",
			address: p0, consumer: "127.0.0.1", ok: 600, took: time.Millisecond},
		calls{time: end, side: "provider", app: "greeter-app", iface: greeter, version: "1.0.0", method: "sayHello",
			address: p0, consumer: "127.0.0.1", ok: 660, took: time.Millisecond},
		// A caller the registry does not know, some of its calls failing.
		calls{time: end - 60, side: "consumer", app: "bench", iface: greeter, version: "1.0.0", method: "sayHello",
			address: p0, consumer: "10.7.7.7", ok: 54, failed: 6, took: time.Millisecond},
		// A service the registry does not know: its providers' reports name
		// their application.
		calls{time: end, side: "consumer", app: "web", iface: "org.example.Stock", method: "count",
			address: "10.5.5.5:20880", consumer: "10.7.7.8", ok: 30, took: time.Millisecond},
		calls{time: end, side: "provider", app: "stock-app", iface: "org.example.Stock", method: "count",
			address: "10.5.5.5:20880", consumer: "10.7.7.8", ok: 30, took: time.Millisecond})

	edges := func(query string) []string {
		t.Helper()
		var d struct {
			Window struct{ Range string }
			Edges  []struct {
				Caller, Interface string
				Providers         []string
				Registered        bool
				Traffic           *struct {
					Calls, Failure int64
					CallsPerSecond float64 `json:"calls_per_second"`
				}
			}
		}
		getJSON(t, e, "/api/v1/dependencies"+query, &d)
		var out []string
		for _, e := range d.Edges {
			s := fmt.Sprintf("%s -> %s %v registered=%v", e.Caller, e.Interface, e.Providers, e.Registered)
			if e.Traffic != nil {
				s += fmt.Sprintf(" %d calls %d failed %.2f/s", e.Traffic.Calls, e.Traffic.Failure, e.Traffic.CallsPerSecond)
			}
			out = append(out, s)
		}
		return out
	}
	window := fmt.Sprintf("?from=%d&to=%d", end-299, end)
	all := []string{
		"bench -> " + greeter + " [greeter-app] registered=false 60 calls 6 failed 0.20/s",
		"greeter-consumer -> " + greeter + " [greeter-app] registered=true 600 calls 0 failed 2.00/s",
		"web -> org.example.Stock [stock-app] registered=false 30 calls 0 failed 0.10/s",
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{window, all},
		{window + "&application=stock-app", all[2:]},
		{window + "&application=greeter-consumer", all[1:2]},
		{window + "&application=greeter-app", all[:2]},
		{fmt.Sprintf("?from=%d&to=%d", end-7200, end-3600), []string{"greeter-consumer -> " + greeter + " [greeter-app] registered=true"}},
	} {
		if got := edges(c.query); !slices.Equal(got, c.want) {
			t.Errorf("dependencies%s:\n%s\nwant\n%s", c.query, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
	if st, body, _ := do(t, "GET", e.ConsoleURL+"/api/v1/dependencies?range=1w", "", ""); st != 400 || !strings.Contains(body, "bad_request") {
		t.Errorf("an unknown range: %d %s", st, body)
	}

	_, page, _ := do(t, "GET", e.ConsoleURL+"/dependencies"+window, "", "")
	for _, w := range []string{
		`<g class="edge" data-from="greeter-consumer" data-to="` + greeter + `" data-label="2.00/s · 0.00%">`,
		`<g class="edge bad" data-from="bench" data-to="` + greeter + `" data-label="0.20/s · 10.00%">`,
		`<g class="edge provides" data-from="org.example.Stock" data-to="stock-app"`,
		`<td class="n error-rate bad">10.00%</td>`,
	} {
		if !strings.Contains(page, w) {
			t.Errorf("dependencies page does not show %s:\n%s", w, page)
		}
	}
}
