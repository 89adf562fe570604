package console

import (
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/monitor/store"
)

// pageSamples are views of every page with data in every list and on both
// sides of the templates' main branches, and a text each must show.
func pageSamples() []struct {
	page page
	want []string
} {
	svc := catalog.Service{Interface: "org.example.Greeter", Version: "1.0.0", Group: "g", Providers: 2, Consumers: 1,
		Applications: []string{"greeter-app"}, Registration: "interface"}
	inst := catalog.Instance{Application: "greeter-app", ID: "10.0.0.1:20880", Address: "10.0.0.1:20880", Revision: "rev-1234abcd",
		Metadata: map[string]string{"dubbo.metadata.revision": "rev-1234abcd"}, Registered: 1700000000000, Raw: "raw-instance-data"}
	rule := RuleView{Kind: "condition", Key: "org.example.Greeter:1.0.0:g", Scope: "service", Enabled: true,
		Path: "/dubbo/config/dubbo/org.example.Greeter:1.0.0:g.condition-router", Content: "conditions: []"}
	off := rule
	off.Enabled, off.Key = false, "greeter-app"
	rule.Warnings = []string{"x is not a field Dubbo reads"}
	method := MethodView{Name: "sayHello", ParameterTypes: []string{"java.lang.String"}, ReturnType: "java.lang.String",
		Signature: "java.lang.String sayHello(java.lang.String)", Version: "1.0.0", Group: "g", Typed: true}
	p50, p99 := 1.25, 4.2
	ver, grp := "1.0.0", "g"
	traffic := ServiceTraffic{Window: Window{Range: "1h", From: 1700000000 - 3599, To: 1700000000, Step: 60}, Side: "provider",
		Version: &ver, Group: &grp, Calls: 4321, Failures: 12,
		Buckets: []store.Bucket{{Time: 1700000040, Calls: 2, Success: 1, Failure: 1, ElapsedMs: 4, MaxElapsedMs: 3,
			Percentiles: store.Percentiles{P50Ms: &p50, P90Ms: &p99, P99Ms: &p99, HistogramCalls: 2}}},
		Methods: []store.SummaryRow{
			{Method: "sayHello", Calls: 4000, Failure: 12, ErrorRate: 0.003, AvgMs: 1.5, MaxElapsedMs: 33, MaxConcurrent: 7,
				Percentiles: store.Percentiles{P50Ms: &p50, P99Ms: &p99, HistogramCalls: 3000}},
			{Method: "legacy", Calls: 321, AvgMs: 20, MaxElapsedMs: 80},
		},
		Providers: []Share{{SummaryRow: store.SummaryRow{Address: "10.0.0.1:20880", Application: "greeter-app", Calls: 3000,
			Percentiles: store.Percentiles{P99Ms: &p99}}, Share: 0.75}},
		Consumers: []Share{{SummaryRow: store.SummaryRow{Consumer: "10.0.0.9", Application: "web-app", Calls: 1000}, Share: 0.25}}}
	view := ServiceView{Interface: "org.example.Greeter", Rows: []catalog.Service{svc},
		Providers: []ProviderView{
			{Address: "10.0.0.1:20880", URL: "dubbo://10.0.0.1:20880/org.example.Greeter", Weight: 250, Enabled: true,
				Application: "greeter-app", Version: "1.0.0", Group: "g", Params: map[string]string{"timeout": "3000"}},
			{Address: "10.0.0.2:20880", Enabled: false, Withdrawn: true, Version: "1.0.0", Group: "g"},
			{Address: "10.0.0.1:20880", Enabled: true, Version: "1.0.0", Group: "g", Staleness: catalog.Staleness{Stale: true,
				StaleReason: "a newer session registered 10.0.0.1:20880", ExpiresBy: time.Date(2026, 12, 1, 16, 4, 5, 0, time.Local)}},
		},
		Consumers: []catalog.Consumer{{Address: "10.0.0.9", URL: "consumer://10.0.0.9/org.example.Greeter", Application: "web-app"}},
		Instances: []catalog.Instance{inst}, Apps: []string{"greeter-app"},
		Routers: []string{"route://0.0.0.0/org.example.Greeter"}, Overrides: []string{"override://0.0.0.0/org.example.Greeter"},
		Methods: []MethodView{method}, Rules: []RuleView{rule, off}, Traffic: traffic}
	noStats := view
	noStats.Traffic = ServiceTraffic{Window: Window{Range: "custom", From: 1700000000, To: 1700003600, Step: 60}, Side: "consumer", Error: errNoStats.msg}
	pager := func(v ServiceView) servicePage {
		p := servicePage{Service: v, Ranges: Ranges, NewRuleKey: newRuleKey(v), ProviderApps: providerApps(v)}
		if v.Traffic.Error == "" {
			p.Charts = charts(v.Traffic)
		}
		return p
	}
	failing := ServiceRow{Service: catalog.Service{Interface: "org.example.Failing", Version: "2.0.0"},
		Traffic: &store.SummaryRow{Interface: "org.example.Failing", Version: "2.0.0", Side: "consumer", Calls: 10, Failure: 5, ErrorRate: 0.5, CallsPerSecond: 0.03}}
	busy := ServiceRow{Service: svc, Traffic: &store.SummaryRow{Interface: svc.Interface, Version: "1.0.0", Group: "g", Side: "provider", Calls: 3750, CallsPerSecond: 12.5,
		Percentiles: store.Percentiles{P99Ms: &p99}}}
	deps := func(d Dependencies) dependenciesPage {
		return dependenciesPage{Dependencies: d, Map: depMap(d), MapLimit: mapLimit, Ranges: Ranges}
	}
	var manyEdges []Edge
	for i := range mapLimit + 1 {
		manyEdges = append(manyEdges, Edge{Caller: "web-app", Interface: fmt.Sprintf("org.example.S%d", i), Providers: []string{}})
	}
	counts := catalog.Counts{Services: 11, Applications: 12, Providers: 13, Consumers: 14, Instances: 15}
	health := catalog.Health{Servers: []string{"127.0.0.1:2181"}, Connected: true, Since: time.Now(), Server: "127.0.0.1:2181", Nodes: 17}
	app := catalog.Application{Name: "greeter-app", Instances: []catalog.Instance{inst}, Services: []string{"org.example.Greeter"},
		References: []string{"org.example.Stock"}}
	return []struct {
		page page
		want []string
	}{
		{overviewPage{Overview{Counts: counts, Rules: 16, Registry: health, Traffic: &Traffic{CallsPerSecond: 2.5, ErrorRate: 0.25, Calls: 150, Failures: 3},
			Busiest: []ServiceRow{failing, busy}}},
			[]string{`id="count-rules">16<`, `id="calls-per-second">2.50<`, "25.00%", "3 of 150 calls", "connected", "127.0.0.1:2181",
				`<tr data-interface="org.example.Failing" class="bad">`, `href="/services/org.example.Failing?group=&amp;version=2.0.0"`,
				`<td class="n error-rate">50.00%</td>`, `<td class="n p99" title="no histogram`, `<td class="n calls-per-second">12.50</td>`,
				`<td class="n p99" >4.20</td>`}},
		{overviewPage{Overview{Counts: counts, Registry: health, Traffic: &Traffic{Error: "store is gone"}}},
			[]string{"Statistics: store is gone", "No calls reported in the last 5 minutes"}},
		{overviewPage{Overview{Counts: counts}}, []string{"No statistics", "disconnected"}},
		{servicesPage{Query: "greet", Sort: "p99", Stats: true, ServiceList: ServiceList{Services: []ServiceRow{busy, failing, {Service: svc}}}},
			[]string{`value="greet"`, `href="/services/org.example.Greeter?group=g&amp;version=1.0.0"`, "greeter-app",
				`<td class="n error-rate bad">50.00%</td>`, `<td class="n calls-per-second">12.50</td>`, `<td class="n p99" >4.20</td>`,
				`<td class="n calls-per-second muted">0</td>`, `href="/services?q=greet&amp;sort=calls"`, `href="/services?q=greet&amp;sort=p99" class="on"`}},
		{servicesPage{Query: "nothing", Sort: "name", ServiceList: ServiceList{StatsError: "store is gone"}},
			[]string{"No service matches “nothing”", "Statistics: store is gone"}},
		{pager(view), []string{"<h1>org.example.Greeter</h1>", "version 1.0.0, group g", `id="calls-total">4321<`, "12 failed",
			"<svg", "10.0.0.1:20880", `value="250"`, "disabled (withdrawn)",
			"stale: its session is gone, removed by 16:04:05", "a newer session registered 10.0.0.1:20880", "timeout", "rev-1234abcd", "web-app",
			"java.lang.String sayHello(java.lang.String)", "org.example.Greeter:1.0.0:g", "route://", "override://",
			"key=org.example.Greeter%3a1.0.0%3ag",
			`<tr data-method="sayHello" class="bad"><td>sayHello</td><td class="n calls">4000</td><td class="n">12</td><td class="n">99.70%</td>`,
			`<td class="n p50">1.25<span class="muted" title="of the 3000 calls whose nodes send a histogram">*</span></td><td class="n p99">4.20</td>`,
			`<td class="n">33</td><td class="n">7</td>`, `<td class="n p50" title="no histogram`,
			`<td class="n share">75.00%</td>`, `<td class="n share">25.00%</td>`, `href="/services?q=10.0.0.9"`,
			`href="?group=g&amp;range=15m&amp;side=provider&amp;version=1.0.0"`, `href="?group=g&amp;range=1h&amp;side=consumer&amp;version=1.0.0"`,
			`<a href="?group=g&amp;range=1h&amp;side=provider&amp;version=1.0.0" class="on">1.0.0 · g</a>`, `<a href="?range=1h&amp;side=provider" >every version</a>`,
			"<title>Success rate</title>", "<title>Concurrency</title>", "<title>Latency</title>",
			`<a class="button" href="/forms/weight?key=org.example.Greeter%3A1.0.0%3Ag" data-form="weight">Weight</a>`,
			`<a class="button" href="/forms/tag?key=greeter-app" data-form="tag">Tag routing of greeter-app</a>`}},
		{pager(noStats), []string{"no statistics: the console runs without the monitor", `<button class="on">Show</button>`,
			`href="?range=15m&amp;side=consumer"`, `<a href="?from=1700000000&amp;group=g&amp;side=consumer&amp;to=1700003600&amp;version=1.0.0" >1.0.0 · g</a>`,
			`<a href="?from=1700000000&amp;side=consumer&amp;to=1700003600" class="on">every version</a>`}},
		{testPage{Interface: "org.example.Greeter", Methods: []MethodView{method}, Args: `["x"]`, Done: true,
			Result: "result-text", Types: "java.lang.String", AnsweredBy: "10.0.0.1:20880", Elapsed: "1.2ms", Timeout: "1500", Tag: "gray",
			Attachments: "k=v", Provider: "10.0.0.2:20880", Providers: []string{"10.0.0.1:20880", "10.0.0.2:20880"},
			Classes: []classView{{Name: "org.example.Order", Props: []propView{{Name: "id", Type: "long"}}}}},
			[]string{"Test org.example.Greeter", "result-text", `answered by <b id="answered-by">10.0.0.1:20880</b>`, `in <b id="elapsed">1.2ms</b>`,
				`[&#34;x&#34;]`, `name="timeout" id="timeout" value="1500"`, `name="tag" id="tag" value="gray"`, `>k=v</textarea>`,
				`<option value="10.0.0.2:20880" selected>`, "<caption><code>org.example.Order</code></caption><tr><th>id</th><td><code>long</code>"}},
		{testPage{Interface: "org.example.Greeter", Methods: []MethodView{method}, Done: true,
			Error: &errorDetail{Kind: "exception", Message: "boom"}, Class: "java.lang.IllegalStateException", Proto: "greet.GreetRequest"},
			[]string{"<b>exception</b> <code>java.lang.IllegalStateException</code>: boom", "a JSON array of one greet.GreetRequest"}},
		{testPage{Interface: "org.example.Nope"}, []string{"No methods are known"}},
		{instancesPage{Stats: true, InstanceList: InstanceList{Instances: []InstanceRow{
			{Side: "provider", Address: "10.0.0.1:20880", Applications: []string{"greeter-app"}, Services: []string{"org.example.Greeter"}, Registered: true,
				Traffic: &store.SummaryRow{Calls: 600, Failure: 6, ErrorRate: 0.01, CallsPerSecond: 2, Last: 1700000000, Percentiles: store.Percentiles{P99Ms: &p99}}},
			{Side: "consumer", Address: "10.0.0.9", Applications: []string{}, Services: []string{}},
		}}}, []string{`<td class="n errors bad">6 (1.00%)</td>`, `href="/services?q=10.0.0.1%3a20880"`,
			`<a href="/applications/greeter-app">`, `<a href="/services/org.example.Greeter">`, `<td class="n calls-per-second">2.00</td>`,
			`<td class="n p99" >4.20</td>`, "reports only", "none in 5 minutes"}},
		{instancesPage{Query: "nomatch", InstanceList: InstanceList{StatsError: "store is gone"}},
			[]string{"Statistics: store is gone", "No provider or consumer matches “nomatch”", `value="nomatch"`}},
		{instancesPage{InstanceList: InstanceList{Instances: make([]InstanceRow, maxRows+1)}}, []string{"The first 1000 of 1001"}},
		{deps(Dependencies{Window: Window{Range: "1h"}, Edges: []Edge{
			{Caller: "web-app", Interface: "org.example.Greeter", Version: "1.0.0", Providers: []string{"greeter-app"}, Registered: true,
				Traffic: &store.SummaryRow{Calls: 100, Failure: 1, CallsPerSecond: 2.5, ErrorRate: 0.01, Percentiles: store.Percentiles{P99Ms: &p99}}},
			{Caller: "", Interface: "org.example.Stock", Providers: []string{}},
		}}), []string{`<g class="edge bad" data-from="web-app" data-to="org.example.Greeter" data-label="2.50/s · 1.00%">`,
			`<g class="edge idle" data-from="(no application)" data-to="org.example.Stock"`,
			`<g class="edge provides" data-from="org.example.Greeter" data-to="greeter-app"`,
			`<td class="n error-rate bad">1.00%</td>`, `<td class="n calls-per-second">2.50</td>`,
			`<td class="n p99" >4.20</td>`, "consumer node", "reports only", `href="?application=web-app&amp;range=1h"`,
			`<a href="?range=24h" >24h</a>`, `<a href="?range=1h" class="on">1h</a>`}},
		{deps(Dependencies{Window: Window{Range: "custom", From: 1700000000, To: 1700003600}, Application: "web-app", Edges: manyEdges}),
			[]string{"61 services: more than the map draws (60)", `<b>web-app</b> · <a href="?from=1700000000&amp;to=1700003600">every application</a>`,
				`name="application" value="web-app"`}},
		{deps(Dependencies{Window: Window{Range: "15m"}, Edges: make([]Edge, maxRows+1)}), []string{"The first 1000 of 1001"}},
		{deps(Dependencies{Window: Window{Range: "15m"}, Application: "nobody", StatsError: "store is gone"}),
			[]string{"No application calls a service with nobody", "Statistics: store is gone"}},
		{applicationsPage{Apps: []catalog.Application{app}}, []string{"/applications/greeter-app", "rev-1234abcd", "/services/org.example.Greeter", "/services/org.example.Stock"}},
		{applicationsPage{}, []string{"No application is registered."}},
		{applicationPage{App: app, Rules: []RuleView{rule, off}}, []string{"<h1>greeter-app</h1>", "raw-instance-data", "dubbo.metadata.revision", "(disabled)",
			`href="/forms/tag?key=greeter-app" data-form="tag">Tag routing</a>`,
			`Calls: <a href="/services/org.example.Stock">`}},
		{rulesPage{Rules: []RuleView{rule, off}, Kinds: []string{"condition", "tag"}, Forms: formSpecs}, []string{rule.Path, "enabled", "disabled",
			`<a href="/forms/mock">Mock</a>`,
			`data-kind="condition" data-key="org.example.Greeter:1.0.0:g"`, `<option value="tag" >tag</option>`, `title="x is not a field Dubbo reads">1 not applied<`}},
		{rulesPage{Filter: RuleFilter{Kind: "tag", Service: "Greet", Application: "shop"}, Kinds: []string{"condition", "tag"}},
			[]string{`<option value="tag" selected>tag</option>`, `name="service" value="Greet"`, `name="application" value="shop"`, "No rule matches the filter."}},
		{rulePage{New: true, Kind: "tag", Key: "greeter-app", Doc: "tags: []", Kinds: []string{"condition", "tag", "override"}},
			[]string{"<h1>New rule</h1>", `<option value="tag" selected>`, "tags: []"}},
		{rulePage{Kind: "condition", Key: "org.example.Greeter:1.0.0:g", Doc: "conditions: []", Enabled: true,
			Path: rulePath("condition", "org.example.Greeter:1.0.0:g"), Forms: formsOf("condition", "org.example.Greeter:1.0.0:g")},
			[]string{"<h1>condition rule org.example.Greeter:1.0.0:g</h1>", ".condition-router", `value="disable"`,
				`<a href="/forms/access?key=org.example.Greeter%3A1.0.0%3Ag">Access control</a>`}},
		{rulePage{Kind: "tag", Key: "greeter-app", Path: rulePath("tag", "greeter-app"), Missing: true, Restored: "7", History: []changeView{
			{Change: store.Change{ID: 9, Time: 1700000000000, Who: "alice (console.token)", Client: "10.0.0.5", Action: "delete"}, Version: "tags: [old]", Deleted: true},
			{Change: store.Change{ID: 7, Time: 1700000000000, Who: "console.token", Client: "10.0.0.6", Action: "form tag"}, Version: "tags: [cur]", Current: true},
		}}, []string{`id="rule-missing"`, "The version of change #7 is restored.", `<tr data-change="9"><td>9</td>`, "alice (console.token)",
			"deleted; the version before", "<pre>tags: [old]</pre>", `<input type="hidden" name="change" value="9">`, "the stored version"}},
		{rulePage{Kind: "tag", Key: "greeter-app", Path: rulePath("tag", "greeter-app"), HistoryError: "no history: the console runs without"},
			[]string{"no history: the console runs without"}},
		{rulePage{Kind: "affinity", Key: "greeter-app", Doc: "affinityAware: {key: region}", Enabled: true, Path: rulePath("affinity", "greeter-app"),
			Warnings: []string{"owner is not a field Dubbo reads"}},
			[]string{`<code id="rule-path">/dubbo/config/dubbo/greeter-app.affinity-router</code>`, "<li>owner is not a field Dubbo reads</li>"}},
		{rulePage{Kind: "override", Key: "greeter-app", Doc: "configs: []", Error: "no configs", Path: rulePath("override", "greeter-app")},
			[]string{"<h1>Rule not saved</h1>", `id="rule-error">no configs<`, ".configurators", `value="enable"`}},
		{formPage{Spec: spec("weight"), Keys: []string{"org.example.Greeter:1.0.0:g"}}, []string{"<h1>Weight</h1>", `id="key-form"`, `<option value="org.example.Greeter:1.0.0:g">`}},
		{form("weight", func(p *formPage) {
			p.Weights = []weightRow{{Weight: "10", Addresses: "10.0.0.1:20880"}, {}}
			p.Saved, p.Warnings = true, []string{"owner is not a field Dubbo reads"}
		}), []string{`<h1>Weight · org.example.Greeter:1.0.0:g</h1>`, `name="w.0.weight" value="10"`, `name="w.0.addresses" value="10.0.0.1:20880"`,
			`name="w.1.weight" value=""`, `id="form-saved"`, "<li>owner is not a field Dubbo reads</li>", "Providers: 10.0.0.1:20880, 10.0.0.2:20880",
			`<a href="/forms/mock?key=org.example.Greeter%3A1.0.0%3Ag">Mock</a>`, `name="revision" value="abc123"`, `configs: []`}},
		{form("balancing", func(p *formPage) { p.Balancing = []balancingRow{{Method: "sayHello", Strategy: "roundrobin"}, {}} }),
			[]string{`name="b.0.method" value="sayHello"`, `<option value="roundrobin" selected>roundrobin</option>`, `<option value="sayHello">`}},
		{form("timeout", func(p *formPage) { p.Timeouts = []timeoutRow{{Method: "sayHello", Timeout: "3000", Retries: "0"}} }),
			[]string{`name="t.0.timeout" value="3000"`, `name="t.0.retries" value="0"`}},
		{form("mock", func(p *formPage) {
			p.Mocks = []mockRow{{Method: "sayHello", Mode: "force", Action: "throw", Value: "x.Oops"}}
		}),
			[]string{`<option value="force" selected>`, `<option value="throw" selected>`, `name="m.0.value" value="x.Oops"`}},
		{form("access", func(p *formPage) {
			p.Access = accessRow{Blacklist: "10.0.0.9", AppWhitelist: "shop"}
			p.Error = "bad list"
		}),
			[]string{`name="a.blacklist" value="10.0.0.9"`, `name="a.app_whitelist" value="shop"`, `<p id="sync-error" class="error" >bad list</p>`}},
		{form("tag", func(p *formPage) {
			p.Key = "greeter-app"
			p.Tags = tagsView{Enabled: true, Force: true, Tags: []tagRow{{Name: "gray", Addresses: []string{"10.0.0.2:20880", "10.9.9.9:1"}}, {}}}
		}), []string{`name="tag.0.name" value="gray"`, `<input type="checkbox" name="tag.0.pick" value="10.0.0.2:20880" checked>`,
			`<input type="checkbox" name="tag.0.pick" value="10.0.0.1:20880" >`, `name="tag.0.addresses" value="10.9.9.9:1"`,
			`name="force" value="true" checked`}},
		{form("condition", func(p *formPage) {
			p.Conds = condsView{Version: "v3.1", Enabled: true, Priority: "3", Conditions: []condRow{{
				When: []clauseRow{{Key: "method", Op: "=", Values: "sayHello"}},
				To:   []destRow{{Match: []clauseRow{{Key: "port", Op: "!=", Values: "1"}}, Weight: "20"}}}}}
			p.withSpares()
		}), []string{`<option value="v3.1" selected>`, `name="c.0.w.0.key" value="method"`, `name="c.0.w.0.values" value="sayHello"`,
			`name="c.0.t.0.0.key" value="port"`, `<option value="!=" selected>!=</option>`, `name="c.0.t.0.weight" value="20"`,
			`name="c.0.t.1.0.key" value=""`, `name="c.1.w.0.key" value=""`, `name="priority" value="3"`}},
		{registryPage{catalog.Node{Path: "/dubbo/org.example.Greeter", Data: "node-data", Truncated: true, URL: "dubbo://10.0.0.1:20880/x",
			Version: 3, Modified: time.Now(), Children: []catalog.Child{{Name: "providers"}, {Name: "c", URL: "dubbo://child"}}}},
			[]string{"Registry /dubbo/org.example.Greeter", "node-data", "first 64 KiB", "Children (2)", "dubbo://child", "/registry?path=%2Fdubbo"}},
		{loginPage{Next: "/rules", Error: "Wrong token."}, []string{`value="/rules"`, "Wrong token.", "Changes need the console"}},
		{loginPage{Open: true, ReadToken: true}, []string{"needs a token to read as well as to change", "<code>console.read-token</code> to read only", `name="user"`}},
		{errorPage{Status: http.StatusNotFound, Message: "service x is not in the registry"}, []string{"<h1>404</h1>", "service x is not in the registry", "Not Found"}},
	}
}

func spec(name string) formSpec {
	s, _ := formSpecOf(name)
	return s
}

// form is a sample of a form's page for a service key, changed by set.
func form(name string, set func(p *formPage)) formPage {
	p := formPage{Spec: spec(name), Key: "org.example.Greeter:1.0.0:g", Scope: "service", Stored: true, Revision: "abc123", Doc: "configs: []",
		Source: "form", Path: "/dubbo/config/dubbo/org.example.Greeter:1.0.0:g.configurators", Methods: []string{"sayHello"},
		Addresses: []string{"10.0.0.1:20880", "10.0.0.2:20880"}, Strategies: []string{"random", "roundrobin"}}
	set(&p)
	return p
}

// Every page renders with data, whole and its live part, logged in and
// not, and shows what its view holds; no page is left without a sample.
func TestEveryPageRendersItsView(t *testing.T) {
	p, err := newPages(templateFS)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, s := range pageSamples() {
		name := s.page.name()
		covered[name] = true
		for _, loggedIn := range []bool{true, false} {
			v := view{Title: s.page.title(), Nav: name, D: s.page, CSRF: "csrf-token-value", Token: true, LoggedIn: loggedIn,
				Refresh: 5000, Live: "/x?partial=1"}
			whole, err := p.execute(s.page, v, false)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if _, err := p.execute(s.page, v, true); err != nil {
				t.Fatalf("%s, live part: %v", name, err)
			}
			for _, w := range append([]string{"<title>" + s.page.title() + " · dubbo console</title>"}, s.want...) {
				if !strings.Contains(string(whole), w) {
					t.Errorf("%s (logged in %v) does not show %q:\n%s", name, loggedIn, w, whole)
				}
			}
		}
	}
	for _, pg := range allPages {
		if !covered[pg.name()] {
			t.Errorf("page %s has no sample", pg.name())
		}
	}
}

// copyTemplates is the console's templates, with some replaced.
func copyTemplates(t *testing.T, replace map[string]string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	err := fs.WalkDir(templateFS, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(templateFS, path)
		fsys[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range replace {
		fsys["templates/"+name+".html"] = &fstest.MapFile{Data: []byte(content)}
	}
	return fsys
}

// A template that reads a field its view lacks stops the console at
// start-up; a map key that is not there fails the page (and so the test
// that renders it with data) instead of rendering as nothing.
func TestMisspeltFieldFails(t *testing.T) {
	for _, tc := range []struct{ page, content string }{
		{"services", `{{define "content"}}{{.D.Querry}}{{end}}`},
		{"overview", `{{define "content"}}{{.D.Overview.Counts.Servics}}{{end}}`},
		{"login", `{{define "content"}}{{.Nxt}}{{end}}`},
	} {
		if _, err := newPages(copyTemplates(t, map[string]string{tc.page: tc.content})); err == nil || !strings.Contains(err.Error(), tc.page) {
			t.Errorf("%s reading %s: %v, want a start-up error naming the page", tc.page, tc.content, err)
		}
	}
	if _, err := newPages(templateFS); err != nil {
		t.Fatalf("the console's own templates: %v", err)
	}

	p, err := newPages(copyTemplates(t, map[string]string{"service": `{{define "content"}}{{range .D.Service.Providers}}{{.Params.wieght}}{{end}}{{end}}`}))
	if err != nil {
		t.Fatal(err)
	}
	pg := servicePage{Service: ServiceView{Providers: []ProviderView{{Params: map[string]string{"weight": "100"}}}}}
	if _, err := p.execute(pg, view{D: pg}, false); err == nil || !strings.Contains(err.Error(), "wieght") {
		t.Errorf("a missing map key: %v, want an error naming it", err)
	}
}
