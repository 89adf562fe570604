package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/console"
	"github.com/dubbo-lab/dubbo/monitor/store"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats/histogram"
	dubbourl "github.com/dubbo-lab/dubbo/node/url"
)

const greeter = "org.example.Greeter"

// rulesAt reads config-center documents as another tool (Admin, a Java
// node) would.
func rulesAt(t *testing.T, e *env) *zookeeper.Registry {
	t.Helper()
	r, err := zookeeper.New(dubbourl.MustParse(e.Registry), zookeeper.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.WaitConnected(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return r
}

func getJSON(t *testing.T, e *env, path string, v any) {
	t.Helper()
	if !findJSON(t, e, path, v) {
		t.Fatalf("GET %s: 404", path)
	}
}

// findJSON is getJSON for what may not be there yet: false on a 404.
func findJSON(t *testing.T, e *env, path string, v any) bool {
	t.Helper()
	st, body, _ := do(t, "GET", e.ConsoleURL+path, "", "")
	if st == 404 {
		return false
	}
	if st != 200 {
		t.Fatalf("GET %s: %d %s", path, st, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	return true
}

func TestAPIRegistryViews(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})

	// GET /api/v1/services: the fields docs/console.md's API table promises, exactly these values.
	var svcs []map[string]any
	getJSON(t, e, "/api/v1/services", &svcs)
	if len(svcs) != 1 {
		t.Fatalf("services: %v", svcs)
	}
	s := svcs[0]
	if s["interface"] != greeter || s["version"] != "1.0.0" || s["group"] != "" || s["providers"] != 2.0 || s["consumers"] != 1.0 {
		t.Fatalf("service row %v", s)
	}
	getJSON(t, e, "/api/v1/services?q=GREETER-APP", &svcs)
	if len(svcs) != 1 {
		t.Fatalf("search by application: %v", svcs)
	}
	getJSON(t, e, "/api/v1/services?q=nothing-like-this", &svcs)
	if len(svcs) != 0 {
		t.Fatalf("search that matches nothing: %v", svcs)
	}

	// Providers: address, url, weight, enabled.
	var ps []map[string]any
	getJSON(t, e, "/api/v1/services/"+greeter+"/providers", &ps)
	if len(ps) != 2 {
		t.Fatalf("providers %v", ps)
	}
	for _, p := range ps {
		addr, _ := p["address"].(string)
		if addr != e.Providers[0] && addr != e.Providers[1] {
			t.Errorf("provider address %q not one of %v", addr, e.Providers)
		}
		if !strings.HasPrefix(p["url"].(string), "dubbo://"+addr+"/"+greeter+"?") || p["weight"] != 100.0 || p["enabled"] != true {
			t.Errorf("provider %v", p)
		}
	}
	getJSON(t, e, "/api/v1/services/"+greeter+"/providers?version=2.0.0", &ps)
	if len(ps) != 0 {
		t.Errorf("providers of a version nobody serves: %v", ps)
	}

	// The service: what its page shows, its traffic over the page's range.
	var sv struct {
		Interface string
		Services  []map[string]any
		Providers []struct{ Address string }
		Consumers []struct{ Application string }
		Methods   []struct{ Signature string }
		Rules     []map[string]any
		Traffic   struct {
			Range, Side string
			Step        int64
			Buckets     []struct{ Time, Calls int64 }
		}
	}
	getJSON(t, e, "/api/v1/services/"+greeter, &sv)
	if sv.Interface != greeter || len(sv.Services) != 1 || len(sv.Providers) != 2 || len(sv.Consumers) != 1 ||
		sv.Consumers[0].Application != "greeter-consumer" || sv.Rules == nil {
		t.Fatalf("service %+v", sv)
	}
	if !slices.ContainsFunc(sv.Methods, func(m struct{ Signature string }) bool { return m.Signature == "int add(int, int)" }) {
		t.Errorf("service methods %+v: no int add(int, int)", sv.Methods)
	}
	if tr := sv.Traffic; tr.Range != "15m" || tr.Side != "consumer" || tr.Step != 60 || len(tr.Buckets) < 15 || len(tr.Buckets) > 16 {
		t.Errorf("service traffic %+v: want the last 15 minutes of the consumer side", tr)
	}
	getJSON(t, e, "/api/v1/services/"+greeter+"?range=24h&side=provider", &sv)
	if tr := sv.Traffic; tr.Range != "24h" || tr.Side != "provider" || tr.Step != 600 || len(tr.Buckets) < 144 || len(tr.Buckets) > 145 {
		t.Errorf("service traffic over 24h %+v: want 24 h of ten-minute buckets of the provider side", tr)
	}

	var cs []map[string]any
	getJSON(t, e, "/api/v1/services/"+greeter+"/consumers", &cs)
	if len(cs) != 1 || cs[0]["application"] != "greeter-consumer" || cs[0]["address"] == "" {
		t.Fatalf("consumers %v", cs)
	}

	// Methods with their Java signatures, from the published definition.
	var ms []map[string]any
	getJSON(t, e, "/api/v1/services/"+greeter+"/methods", &ms)
	sigs := map[string]bool{}
	for _, m := range ms {
		sigs[m["signature"].(string)] = true
	}
	for _, want := range []string{"java.lang.String sayHello(java.lang.String)", "int add(int, int)",
		"java.util.Map echoMap(java.util.Map)", "void fail(java.lang.String)", "java.lang.String sleep(int)"} {
		if !sigs[want] {
			t.Errorf("method %q missing from %v", want, sigs)
		}
	}

	// Applications and their instances with the metadata revision.
	var apps []map[string]any
	getJSON(t, e, "/api/v1/applications", &apps)
	var found bool
	for _, a := range apps {
		if a["name"] != "greeter-app" {
			continue
		}
		found = true
		insts := a["instances"].([]any)
		if len(insts) != 2 {
			t.Fatalf("greeter-app instances %v", insts)
		}
		for _, in := range insts {
			m := in.(map[string]any)
			if rev, _ := m["revision"].(string); len(rev) < 8 {
				t.Errorf("instance %v has no revision", m)
			}
		}
		if fmt.Sprint(a["services"]) != "["+greeter+"]" {
			t.Errorf("greeter-app services %v", a["services"])
		}
	}
	if !found {
		t.Fatalf("no greeter-app in %v", apps)
	}
	var app map[string]any
	getJSON(t, e, "/api/v1/applications/greeter-app", &app)
	if app["name"] != "greeter-app" {
		t.Fatalf("application %v", app)
	}

	var o map[string]any
	getJSON(t, e, "/api/v1/overview", &o)
	if o["services"] != 1.0 || o["providers"] != 2.0 || o["consumers"] != 1.0 || o["registry"].(map[string]any)["connected"] != true {
		t.Fatalf("overview %v", o)
	}

	for _, bad := range []struct{ path, kind string }{
		{"/api/v1/services/org.example.Nope", "not_found"},
		{"/api/v1/services/org.example.Nope/providers", "not_found"},
		{"/api/v1/services/org.example.Nope/consumers", "not_found"},
		{"/api/v1/services/org.example.Nope/methods", "not_found"},
		{"/api/v1/applications/nope", "not_found"},
		{"/api/v1/nothing-here", "not_found"},
	} {
		st, body, _ := do(t, "GET", e.ConsoleURL+bad.path, "", "")
		var eb struct {
			Error struct{ Kind, Message string }
		}
		if st != 404 || json.Unmarshal([]byte(body), &eb) != nil || eb.Error.Kind != bad.kind || eb.Error.Message == "" {
			t.Errorf("GET %s: %d %s", bad.path, st, body)
		}
	}
}

const conditionRule = `configVersion: v3.0
scope: service
key: org.example.Greeter
enabled: true
force: true
conditions:
  - "method = sayHello => port = %s"
`

func TestAPIConditionRules(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	zkr := rulesAt(t, e)
	key := "org.example.Greeter:1.0.0:"
	path := e.ConsoleURL + "/api/v1/rules/condition/" + key
	port := e.Providers[0][strings.LastIndex(e.Providers[0], ":")+1:]

	// Good rule: stored at Dubbo's path, in Admin's shape.
	st, body, _ := do(t, "PUT", path, "application/yaml", fmt.Sprintf(conditionRule, port))
	if st != 200 {
		t.Fatalf("PUT: %d %s", st, body)
	}
	stored, ok, err := zkr.GetConfig(testCtx(t), key+".condition-router")
	if err != nil || !ok {
		t.Fatalf("not stored at /dubbo/config/dubbo/%s.condition-router: %v", key, err)
	}
	want := "conditions:\n  - method = sayHello => port = " + port + "\nenabled: true\nforce: true\nkey: org.example.Greeter\npriority: 0\nruntime: true\nscope: service\n"
	if stored != want || body != want {
		t.Fatalf("stored\n%s\nanswered\n%s\nwant\n%s", stored, body, want)
	}
	st, body, hdr := do(t, "GET", path, "", "")
	if st != 200 || body != want || !strings.HasPrefix(hdr.Get("Content-Type"), "application/yaml") {
		t.Fatalf("GET: %d %q %s", st, body, hdr.Get("Content-Type"))
	}
	// Listed, and among the service's rules.
	var rs []map[string]any
	getJSON(t, e, "/api/v1/rules?kind=condition", &rs)
	if len(rs) != 1 || rs[0]["key"] != key || rs[0]["path"] != "/dubbo/config/dubbo/"+key+".condition-router" {
		t.Fatalf("rules %v", rs)
	}
	getJSON(t, e, "/api/v1/services/"+greeter+"/rules", &rs)
	if len(rs) != 1 {
		t.Fatalf("service rules %v", rs)
	}

	// Calls follow it within a second: every sayHello goes to the port.
	start := time.Now()
	waitFor(t, "calls on one provider", func() bool {
		before := e.Served()
		for i := 0; i < 10; i++ {
			if err := e.Call(testCtx(t), "x"); err != nil {
				t.Fatal(err)
			}
		}
		after := e.Served()
		return after[e.Providers[0]]-before[e.Providers[0]] == 10
	})
	t.Logf("rule in force %v after the PUT answered", time.Since(start))

	// Disable and enable, as Admin's buttons do.
	st, body, _ = do(t, "PUT", path+"/enabled", "application/json", `{"enabled":false}`)
	if st != 200 || !strings.Contains(body, "enabled: false") {
		t.Fatalf("disable: %d %s", st, body)
	}
	stored, _, _ = zkr.GetConfig(testCtx(t), key+".condition-router")
	if !strings.Contains(stored, "enabled: false") || !strings.Contains(stored, "port = "+port) {
		t.Fatalf("disabled rule stored as\n%s", stored)
	}
	st, _, _ = do(t, "PUT", path+"/enabled", "application/json", `{"enabled":true}`)
	if st != 200 {
		t.Fatalf("enable: %d", st)
	}

	// Bad input: 4xx naming the problem, and the stored rule is unchanged.
	before, _, _ := zkr.GetConfig(testCtx(t), key+".condition-router")
	for _, c := range []struct {
		name, path, ctype, body string
		status                  int
		says                    string
	}{
		{"not YAML", path, "application/yaml", "conditions: [unclosed", 400, "YAML"},
		{"no conditions", path, "application/yaml", "scope: service\nkey: org.example.Greeter\n", 400, "no conditions"},
		{"bad condition", path, "application/yaml", "conditions:\n  - \"method = => =\"\n", 400, "invalid"},
		{"scope mismatch", path, "application/yaml", "scope: application\nconditions: [\"=> host = 1.2.3.4\"]\n", 400, "service-scoped"},
		{"other service's key", path, "application/yaml", "key: org.example.Other\nconditions: [\"=> host = 1.2.3.4\"]\n", 400, "another service"},
		{"v3.1", path, "application/yaml", "configVersion: v3.1\nconditions: []\n", 400, "v3.1"},
		{"empty", path, "application/yaml", "", 400, "empty"},
		{"not a mapping", path, "application/yaml", "- a\n- b\n", 400, "YAML"},
		{"JSON content type", path, "application/json", `{"conditions":["=> host = 1.2.3.4"]}`, 415, "application/yaml"},
		{"key with a slash", e.ConsoleURL + "/api/v1/rules/condition/a%2Fb:1.0.0:", "application/yaml", "conditions: [\"=> host = 1.2.3.4\"]\n", 400, "'/'"},
		{"bad enabled body", path + "/enabled", "application/json", `{"on":true}`, 400, "unknown field"},
		{"enabled without body", path + "/enabled", "application/json", `{}`, 400, "enabled"},
	} {
		method := "PUT"
		st, body, _ := do(t, method, c.path, c.ctype, c.body)
		if st != c.status || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s; want %d saying %q", c.name, st, body, c.status, c.says)
		}
	}
	if after, _, _ := zkr.GetConfig(testCtx(t), key+".condition-router"); after != before {
		t.Fatalf("a refused rule changed the stored one:\n%s", after)
	}
	if _, ok, _ := zkr.GetConfig(testCtx(t), "a"); ok {
		t.Fatal("a refused key was stored")
	}

	// Delete; then it is gone and calls balance again.
	st, _, _ = do(t, "DELETE", path, "", "")
	if st != 204 {
		t.Fatalf("DELETE: %d", st)
	}
	if _, ok, _ := zkr.GetConfig(testCtx(t), key+".condition-router"); ok {
		t.Fatal("deleted rule still stored")
	}
	if st, _, _ := do(t, "GET", path, "", ""); st != 404 {
		t.Fatalf("GET after DELETE: %d", st)
	}
	if st, _, _ := do(t, "DELETE", path, "", ""); st != 404 {
		t.Fatalf("DELETE of a missing rule: %d", st)
	}
	waitFor(t, "calls on both providers again", func() bool {
		before := e.Served()
		for i := 0; i < 20; i++ {
			if err := e.Call(testCtx(t), "x"); err != nil {
				t.Fatal(err)
			}
		}
		after := e.Served()
		return after[e.Providers[1]] > before[e.Providers[1]]
	})
}

// TestAPIReadsAdminRules stores rules the way Dubbo Admin writes them
// (SnakeYAML's dumpAsMap of its DTOs) and checks the console reads,
// applies and rewrites them without losing anything Admin keeps.
func TestAPIReadsAdminRules(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	zkr := rulesAt(t, e)
	ctx := testCtx(t)
	admin := map[string]string{
		"org.example.Greeter:1.0.0:.condition-router": "conditions:\n- host != 10.0.0.1 =>\nenabled: true\nforce: false\nkey: org.example.Greeter\npriority: 0\nruntime: false\nscope: service\n",
		"greeter-app.tag-router":                      "enabled: true\nforce: false\nkey: greeter-app\npriority: 0\nruntime: false\ntags:\n- addresses:\n  - " + e.Providers[0] + "\n  name: gray\n",
		"org.example.Greeter:1.0.0:.configurators":    "configs:\n- addresses:\n  - " + e.Providers[1] + "\n  enabled: true\n  parameters:\n    weight: 300\n  side: provider\n  type: weight\nenabled: true\nkey: 'org.example.Greeter:1.0.0:'\nscope: service\n",
	}
	for k, v := range admin {
		if err := zkr.PublishConfig(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the console's copy", func() bool { return len(e.console.Catalog().Rules()) == 3 })
	for _, c := range []struct{ api, key string }{
		{"/api/v1/rules/condition/org.example.Greeter:1.0.0:", "org.example.Greeter:1.0.0:.condition-router"},
		{"/api/v1/rules/tag/greeter-app", "greeter-app.tag-router"},
		{"/api/v1/rules/override/org.example.Greeter:1.0.0:", "org.example.Greeter:1.0.0:.configurators"},
	} {
		st, body, _ := do(t, "GET", e.ConsoleURL+c.api, "", "")
		if st != 200 || body != admin[c.key] {
			t.Fatalf("GET %s: %d\n%s", c.api, st, body)
		}
		// Saved back through the console: the same document (SnakeYAML
		// and yaml.v3 indent lists differently; Admin reads both).
		st, out, _ := do(t, "PUT", e.ConsoleURL+c.api, "application/yaml", body)
		if st != 200 || !sameYAML(t, out, admin[c.key]) {
			t.Errorf("PUT of Admin's own %s: %d\n%s\nwant\n%s", c.key, st, out, admin[c.key])
		}
	}
	// Admin's weight item is in force: the provider shows weight 300.
	waitFor(t, "weight 300", func() bool {
		var ps []map[string]any
		getJSON(t, e, "/api/v1/services/"+greeter+"/providers", &ps)
		for _, p := range ps {
			if p["address"] == e.Providers[1] {
				return p["weight"] == 300.0
			}
		}
		return false
	})
}

// sameYAML reports whether two documents hold the same data.
func sameYAML(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := yaml.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%v in\n%s", err, a)
	}
	if err := yaml.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%v in\n%s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

func TestAPIProviderWeightAndEnabled(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	zkr := rulesAt(t, e)
	a, b := e.Providers[0], e.Providers[1]
	base := e.ConsoleURL + "/api/v1/services/" + greeter + "/providers/"
	cfgKey := "org.example.Greeter:1.0.0:.configurators"

	st, body, _ := do(t, "PUT", base+a+"/weight", "application/json", `{"weight": 250}`)
	if st != 200 || !strings.Contains(body, `"weight":250`) {
		t.Fatalf("weight: %d %s", st, body)
	}
	doc, _, _ := zkr.GetConfig(testCtx(t), cfgKey)
	want := "configs:\n  - addresses:\n      - " + a + "\n    enabled: true\n    parameters:\n      weight: 250\n    side: provider\n    type: weight\nenabled: true\nkey: 'org.example.Greeter:1.0.0:'\nscope: service\n"
	if doc != want {
		t.Fatalf("weight stored as\n%s\nwant Admin's\n%s", doc, want)
	}

	// Disable b: Admin's dynamic-configuration item; calls stop reaching it.
	st, body, _ = do(t, "PUT", base+b+"/enabled", "application/json", `{"enabled": false}`)
	if st != 200 || !strings.Contains(body, `"enabled":false`) {
		t.Fatalf("disable: %d %s", st, body)
	}
	doc, _, _ = zkr.GetConfig(testCtx(t), cfgKey)
	if !strings.Contains(doc, "- "+b+"\n    enabled: true\n    parameters:\n      disabled: true\n    side: provider\n") {
		t.Fatalf("disable stored as\n%s", doc)
	}
	waitFor(t, "b out of service", func() bool {
		before := e.Served()
		for i := 0; i < 20; i++ {
			if err := e.Call(testCtx(t), "x"); err != nil {
				t.Fatal(err)
			}
		}
		return e.Served()[b] == before[b]
	})
	// Still listed (withdrawn), so that it can be enabled again.
	var ps []map[string]any
	getJSON(t, e, "/api/v1/services/"+greeter+"/providers", &ps)
	if len(ps) != 2 {
		t.Fatalf("providers after disable: %v", ps)
	}
	st, _, _ = do(t, "PUT", base+b+"/enabled", "application/json", `{"enabled": true}`)
	if st != 200 {
		t.Fatalf("enable: %d", st)
	}
	doc, _, _ = zkr.GetConfig(testCtx(t), cfgKey)
	if strings.Contains(doc, "disabled") || !strings.Contains(doc, "weight: 250") {
		t.Fatalf("after enable:\n%s", doc)
	}
	waitFor(t, "b serving again", func() bool {
		before := e.Served()
		for i := 0; i < 20; i++ {
			_ = e.Call(testCtx(t), "x")
		}
		return e.Served()[b] > before[b]
	})

	for _, c := range []struct {
		name, path, body string
		status           int
	}{
		{"negative weight", base + a + "/weight", `{"weight": -1}`, 400},
		{"huge weight", base + a + "/weight", `{"weight": 1000000}`, 400},
		{"weight not a number", base + a + "/weight", `{"weight": "x"}`, 400},
		{"no weight", base + a + "/weight", `{}`, 400},
		{"not JSON", base + a + "/weight", `weight=3`, 400},
		{"unknown provider", base + "10.9.9.9:1/weight", `{"weight": 3}`, 404},
		{"unknown service", e.ConsoleURL + "/api/v1/services/org.example.Nope/providers/" + a + "/enabled", `{"enabled": false}`, 404},
		{"no enabled", base + a + "/enabled", `{}`, 400},
	} {
		if st, body, _ := do(t, "PUT", c.path, "application/json", c.body); st != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, st, body, c.status)
		}
	}
}

func TestAPITagAndOverrideRules(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	zkr := rulesAt(t, e)
	tagPath := e.ConsoleURL + "/api/v1/rules/tag/greeter-app"
	st, body, _ := do(t, "PUT", tagPath, "application/yaml", "force: true\ntags:\n  - name: gray\n    addresses: [\""+e.Providers[0]+"\"]\n")
	if st != 200 {
		t.Fatalf("tag PUT: %d %s", st, body)
	}
	if doc, ok, _ := zkr.GetConfig(testCtx(t), "greeter-app.tag-router"); !ok || !strings.Contains(doc, "key: greeter-app") || !strings.Contains(doc, "name: gray") {
		t.Fatalf("tag rule stored as %q", doc)
	}
	for _, c := range []struct{ name, body, says string }{
		{"no tags", "enabled: true\n", "no tags"},
		{"tag without name", "tags:\n  - addresses: [\"1.2.3.4:1\"]\n", "no name"},
		{"other application", "key: other-app\ntags:\n  - name: a\n", "stored as"},
	} {
		if st, body, _ := do(t, "PUT", tagPath, "application/yaml", c.body); st != 400 || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s", c.name, st, body)
		}
	}
	if st, body, _ := do(t, "PUT", e.ConsoleURL+"/api/v1/rules/tag/org.example.Greeter:1.0.0:", "application/yaml", "tags:\n  - name: a\n"); st != 400 {
		t.Errorf("tag rule keyed by a service: %d %s", st, body)
	}

	ovPath := e.ConsoleURL + "/api/v1/rules/override/org.example.Greeter:1.0.0:"
	st, body, _ = do(t, "PUT", ovPath, "application/yaml", "configVersion: v3.0\nconfigs:\n  - side: consumer\n    parameters:\n      timeout: 5000\n      retries: 0\n")
	if st != 200 || !strings.Contains(body, "scope: service") || !strings.Contains(body, "key: org.example.Greeter") || !strings.Contains(body, "enabled: true") {
		t.Fatalf("override PUT: %d %s", st, body)
	}
	for _, c := range []struct{ name, body, says string }{
		{"no configs", "configVersion: v3.0\n", "no 'configs'"},
		{"no parameters", "configs:\n  - side: provider\n", "no parameters"},
		{"bad side", "configs:\n  - side: both\n    parameters: {timeout: 1}\n", "side"},
		{"bad version", "configVersion: v9\nconfigs:\n  - parameters: {timeout: 1}\n", "configVersion"},
	} {
		if st, body, _ := do(t, "PUT", ovPath, "application/yaml", c.body); st != 400 || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s", c.name, st, body)
		}
	}
	if st, _, _ := do(t, "DELETE", tagPath, "", ""); st != 204 {
		t.Errorf("tag DELETE: %d", st)
	}
	if st, _, _ := do(t, "DELETE", ovPath, "", ""); st != 204 {
		t.Errorf("override DELETE: %d", st)
	}
}

// TestAPIInvoke calls methods as `dubbo call` does: strings, ints, an
// exception, a method without arguments and one taking a POJO.
func TestAPIInvoke(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	ctx := testCtx(t)
	p, err := provider.Start(ctx, provider.Config{Application: "people-app", Registry: e.Registry,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	err = p.Export(ctx, provider.Service{Interface: "org.example.People", Version: "1.0.0",
		Methods: []provider.Method{
			{Name: "count", ReturnType: "int"},
			{Name: "describe", ParamTypes: []string{"org.example.Person"}, ReturnType: "java.lang.String"},
		},
		Invoker: rpc.InvokerFunc(func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
			switch inv.Method {
			case "count":
				return &rpc.Result{Value: int32(42)}, nil
			case "describe":
				m, ok := inv.Args[0].(map[string]any)
				if !ok {
					return &rpc.Result{Value: fmt.Sprintf("not a map: %T", inv.Args[0])}, nil
				}
				return &rpc.Result{Value: fmt.Sprintf("%v is %v", m["name"], m["age"])}, nil
			}
			return nil, fmt.Errorf("no method %s", inv.Method)
		})})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "People in the console", func() bool { _, ok := e.console.Catalog().Service("org.example.People"); return ok })

	inv := func(iface, method, query, body string) (int, string) {
		st, b, _ := do(t, "POST", e.ConsoleURL+"/api/v1/invoke/"+iface+"/"+method+query, "application/json", body)
		return st, b
	}
	for _, c := range []struct {
		name, iface, method, query, body string
		status                           int
		want                             string
	}{
		{"string", greeter, "sayHello", "?version=1.0.0", `["console"]`, 200, `{"result":"Hello, console"}`},
		{"ints", greeter, "add", "?version=1.0.0", `[2, 3]`, 200, `{"result":5}`},
		{"map", greeter, "echoMap", "?version=1.0.0", `[{"a":"b"}]`, 200, `{"result":{"a":"b"}}`},
		{"exception", greeter, "fail", "?version=1.0.0", `["boom"]`, 500, `"class":"java.lang.IllegalStateException"`},
		{"no arguments", "org.example.People", "count", "?version=1.0.0", `[]`, 200, `{"result":42}`},
		{"no body", "org.example.People", "count", "?version=1.0.0", ``, 200, `{"result":42}`},
		{"POJO", "org.example.People", "describe", "?version=1.0.0", `[{"name":"Ada","age":36}]`, 200, `{"result":"Ada is 36"}`},
		{"not JSON", greeter, "sayHello", "?version=1.0.0", `[nope`, 400, `"kind":"bad_request"`},
		{"wrong type", greeter, "add", "?version=1.0.0", `["two", 3]`, 400, `"kind":"bad_request"`},
		{"unknown method", greeter, "nope", "?version=1.0.0", `[]`, 404, `"kind":"service_not_found"`},
		{"unknown service", "org.example.Nope", "x", "", `[]`, 503, `"kind":"no_provider"`},
	} {
		st, body := inv(c.iface, c.method, c.query, c.body)
		if st != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s; want %d with %s", c.name, st, body, c.status, c.want)
		}
	}
}

func TestAPIRegistryTreeHidesSecrets(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	conn, _, err := zk.Connect([]string{e.zkAddr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	secretURL := "dubbo://127.0.0.1:20999/com.example.Secret?application=vault&token=tok-123456&password=pw-abcdef&interface=com.example.Secret"
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/dubbo/com.example.Secret", "/dubbo/com.example.Secret/providers"} {
		if _, err := conn.Create(p, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	node := "/dubbo/com.example.Secret/providers/" + url.QueryEscape(secretURL)
	if _, err := conn.Create(node, []byte(`{"registry":"zookeeper://admin:hunter2@10.0.0.1:2181","accessKey":"AKIA-1","note":"ok"}`), 0, acl); err != nil {
		t.Fatal(err)
	}
	var n map[string]any
	getJSON(t, e, "/api/v1/registry/tree?path=/dubbo/com.example.Secret/providers", &n)
	raw, _ := json.Marshal(n)
	for _, secret := range []string{"tok-123456", "pw-abcdef"} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("tree shows %s: %s", secret, raw)
		}
	}
	kids := n["children"].([]any)
	if len(kids) != 1 || !strings.Contains(kids[0].(map[string]any)["url"].(string), "dubbo://127.0.0.1:20999/com.example.Secret?") {
		t.Fatalf("children %v", kids)
	}
	// Browsing the child by the name shown (secrets hidden) finds the node.
	name := kids[0].(map[string]any)["name"].(string)
	getJSON(t, e, "/api/v1/registry/tree?path="+url.QueryEscape("/dubbo/com.example.Secret/providers/"+name), &n)
	raw, _ = json.Marshal(n)
	for _, secret := range []string{"tok-123456", "pw-abcdef", "hunter2", "AKIA-1"} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("node shows %s: %s", secret, raw)
		}
	}
	if !strings.Contains(string(raw), `\"note\": \"ok\"`) || !strings.Contains(n["url"].(string), "token=***") {
		t.Fatalf("node %s", raw)
	}
	// The page too.
	_, page, _ := do(t, "GET", e.ConsoleURL+"/registry?path="+url.QueryEscape("/dubbo/com.example.Secret/providers/"+name), "", "")
	for _, secret := range []string{"tok-123456", "pw-abcdef", "hunter2", "AKIA-1"} {
		if strings.Contains(page, secret) {
			t.Fatalf("registry page shows %s", secret)
		}
	}
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/", 200}, {"/dubbo", 200}, {"relative", 400}, {"/dubbo/", 400}, {"/a//b", 400}, {"/dubbo/../x", 400}, {"/no/such/node", 404},
	} {
		if st, body, _ := do(t, "GET", e.ConsoleURL+"/api/v1/registry/tree?path="+url.QueryEscape(c.path), "", ""); st != c.status {
			t.Errorf("tree %q: %d %s", c.path, st, body)
		}
	}
}

func TestAPIStats(t *testing.T) {
	e := startSystem(t, envOptions{})
	var rows []map[string]any
	waitFor(t, "statistics rows", func() bool {
		getJSON(t, e, "/api/v1/stats?interface="+greeter+"&side=provider", &rows)
		return len(rows) > 0
	})
	for _, k := range []string{"time", "side", "application", "address", "success", "failure", "input", "output", "elapsed_ms", "max_elapsed_ms", "max_concurrent"} {
		if _, ok := rows[0][k]; !ok {
			t.Fatalf("row without %q: %v", k, rows[0])
		}
	}
	if rows[0]["side"] != "provider" || rows[0]["application"] != "greeter-app" {
		t.Fatalf("row %v", rows[0])
	}
	addr := rows[0]["address"].(string)
	getJSON(t, e, "/api/v1/stats?interface="+greeter+"&address="+addr+"&from=1&to=9999999999", &rows)
	for _, r := range rows {
		if r["address"] != addr {
			t.Fatalf("address filter let %v through", r)
		}
	}
	var bs []map[string]any
	now := time.Now().Unix()
	getJSON(t, e, fmt.Sprintf("/api/v1/series?interface=%s&from=%d&to=%d&step=60", greeter, now-300, now), &bs)
	if len(bs) < 5 {
		t.Fatalf("series %v", bs)
	}
	for _, c := range []string{"", "?interface=", "?interface=x&side=both", "?interface=x&from=abc", "?interface=x&from=10&to=5"} {
		if st, body, _ := do(t, "GET", e.ConsoleURL+"/api/v1/stats"+c, "", ""); st != 400 || !strings.Contains(body, "bad_request") {
			t.Errorf("stats%s: %d %s", c, st, body)
		}
	}
	if st, _, _ := do(t, "GET", e.ConsoleURL+"/api/v1/series?interface=x", "", ""); st != 400 {
		t.Errorf("series without from/to: %d", st)
	}
	st, body, _ := do(t, "GET", e.ConsoleURL+"/metrics", "", "")
	if st != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("metrics: %d", st)
	}
}

func TestConsoleWithoutStats(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	c, err := console.New(testCtx(t), console.Options{Listen: "127.0.0.1:0", Registry: e.Registry, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
	for _, p := range []string{"api/v1/stats?interface=x", "api/v1/traffic?by=service"} {
		if st, body, _ := do(t, "GET", c.URL()+p, "", ""); st != 503 || !strings.Contains(body, "no_statistics") {
			t.Fatalf("%s without a store: %d %s", p, st, body)
		}
	}
	if err := c.Catalog().WaitLoaded(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if st, body, _ := do(t, "GET", c.URL()+"services/"+greeter, "", ""); st != 200 || !strings.Contains(body, "no statistics") {
		t.Fatalf("service page without a store: %d", st)
	}
	// The registry's side of the traffic pages, without numbers.
	for _, p := range []struct{ path, says string }{
		{"api/v1/overview", `"traffic":null,"busiest":[]`},
		{"api/v1/services", `"registration":"both","traffic":null`},
		{"api/v1/instances", `"registered":true,"traffic":null`},
		{"api/v1/dependencies", `{"caller":"greeter-consumer","interface":"org.example.Greeter","version":"1.0.0","group":"","providers":["greeter-app"],"registered":true,"traffic":null}`},
		{"", "No statistics"},
		{"services", "greeter-app"},
		{"instances", "greeter-consumer"},
		{"dependencies", `data-from="greeter-consumer" data-to="org.example.Greeter"`},
	} {
		if st, body, _ := do(t, "GET", c.URL()+p.path, "", ""); st != 200 || !strings.Contains(body, p.says) {
			t.Errorf("GET /%s without a store: %d, want %s in\n%s", p.path, st, p.says, body)
		}
	}
}

// Without a registry (the monitor role with registry.address = "") the
// console serves the statistics API and /metrics alone, with the same
// error shape and security headers as ever, and names what it serves at /.
func TestStatisticsAPIWithoutRegistry(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "monitor.db"), store.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now().Unix() / 60 * 60
	var h histogram.Counts // 2.0.0's calls: 9 at 1 ms, 1 at 50 ms
	h[histogram.Of(time.Millisecond)], h[histogram.Of(50*time.Millisecond)] = 9, 1
	if _, err := st.Insert(testCtx(t), []store.Row{{Time: now, Interval: 60, Side: "provider", Application: "greeter-app", Node: "n",
		Interface: greeter, Version: "1.0.0", Method: "sayHello", Address: "127.0.0.1:20880", Consumer: "127.0.0.9", Success: 7, ElapsedMs: 14, MaxElapsedMs: 5},
		{Time: now, Interval: 60, Side: "provider", Application: "greeter-app", Node: "n2", Interface: greeter, Version: "2.0.0", Group: "gray",
			Method: "sayHello", Address: "127.0.0.2:20880", Consumer: "127.0.0.9", Success: 10, ElapsedMs: 59, MaxElapsedMs: 50, Histogram: h.Sparse()},
	}); err != nil {
		t.Fatal(err)
	}
	minute := func(q string) string { return fmt.Sprintf("%s&from=%d&to=%d", q, now-59, now) }
	c, err := console.New(testCtx(t), console.Options{Listen: "127.0.0.1:0", Stats: st, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
	if c.Catalog() != nil {
		t.Error("a console without a registry has a catalog")
	}
	base := "http://" + c.Addr()
	for _, tc := range []struct {
		path, kind, says string
		code             int
	}{
		{"/api/v1/stats?interface=" + greeter + "&side=provider&version=1.0.0", "", `"success":7`, 200},
		{"/api/v1/stats?interface=" + greeter + "&version=1.0.0", "", `"p99_ms":null`, 200},
		{"/api/v1/stats?interface=" + greeter + "&group=gray", "", `"p50_ms":0.96`, 200},
		{"/api/v1/stats?interface=" + greeter + "&group=none", "", "[]", 200},
		{"/api/v1/stats?interface=nobody", "", "[]", 200},
		{fmt.Sprintf("/api/v1/series?interface=%s&version=1.0.0&from=%d&to=%d", greeter, now-60, now), "", `"calls":7`, 200},
		{fmt.Sprintf("/api/v1/series?interface=%s&from=%d&to=%d", greeter, now-60, now), "", `"calls":17`, 200},
		{fmt.Sprintf("/api/v1/series?interface=%s&group=gray&from=%d&to=%d", greeter, now-60, now), "", `"histogram_calls":10`, 200},
		{"/api/v1/traffic?by=service", "", `"version":"2.0.0","group":"gray","method":"","application":"greeter-app"`, 200},
		{minute("/api/v1/traffic?by=service&version=1.0.0"), "", `"calls":7,"success":7,"failure":0,"calls_per_second":0.11666666666666667`, 200},
		{minute("/api/v1/traffic?by=method&interface=" + greeter + "&version=1.0.0"), "", `"avg_ms":2,"max_elapsed_ms":5,"max_concurrent":0,"last":`, 200},
		{minute("/api/v1/traffic?by=method&interface=" + greeter + "&version=1.0.0"), "", `"p50_ms":null,"p90_ms":null,"p99_ms":null,"histogram_calls":0`, 200},
		{minute("/api/v1/traffic?by=provider&interface=" + greeter + "&group=gray"), "", `"address":"127.0.0.2:20880"`, 200},
		{minute("/api/v1/traffic?by=provider&interface=" + greeter + "&group=gray"), "", `"p99_ms":56.525`, 200},
		{minute("/api/v1/traffic?by=service&host=127.0.0.9&version=3"), "", `"rows":[]`, 200},
		{"/api/v1/traffic?by=everything", "bad_request", "by", 400},
		{"/api/v1/traffic?by=method", "bad_request", "needs an interface", 400},
		{"/api/v1/traffic?by=service&to=x", "bad_request", "to", 400},
		{"/metrics", "", "go_goroutines", 200},
		{"/", "", "/api/v1/stats", 200},
		{"/api/v1/stats", "bad_request", "interface is required", 400},
		{"/api/v1/stats?interface=x&side=both", "bad_request", "side", 400},
		{"/api/v1/stats?interface=x&from=yesterday", "bad_request", "from", 400},
		{"/api/v1/stats?interface=x&from=9&to=3", "bad_request", "after", 400},
		{"/api/v1/services", "not_found", "Not Found", 404},
		{"/services", "not_found", "Not Found", 404},
	} {
		code, body, hdr := do(t, "GET", base+tc.path, "", "")
		if code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("GET %s: %d %s, want %d with %q", tc.path, code, body, tc.code, tc.says)
		}
		if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || hdr.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: CSP %q, X-Content-Type-Options %q", tc.path, csp, hdr.Get("X-Content-Type-Options"))
		}
		if tc.kind == "" {
			continue
		}
		var eb struct {
			Error struct{ Kind, Message string }
		}
		if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error.Kind != tc.kind || eb.Error.Message == "" {
			t.Errorf("GET %s: %s, want {\"error\": {\"kind\": %q, \"message\": ...}}", tc.path, body, tc.kind)
		}
	}
	if code, body, _ := do(t, "POST", base+"/api/v1/stats", "application/json", "{}"); code != 405 || !strings.Contains(body, `"kind":"method_not_allowed"`) {
		t.Errorf("POST /api/v1/stats: %d %s", code, body)
	}
}
