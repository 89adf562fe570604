package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// greeterProcess is one Greeter provider run as a process of its own
// (`dubbo run --role=provider`), with its own QoS port, whose /metrics
// count the calls it served.
type greeterProcess struct {
	addr  string
	ports ports
	node  *node
}

// startGreeterProvider starts a Greeter provider registering in the
// registry of env.
func startGreeterProvider(t *testing.T, name string, env ports) greeterProcess {
	return startGreeterProviderWith(t, name, env, "")
}

// startGreeterProviderWith starts one with extra TOML in its config.
func startGreeterProviderWith(t *testing.T, name string, env ports, extra string) greeterProcess {
	t.Helper()
	dir := t.TempDir()
	gp := freePorts(t, 1)
	gp.registry = env.registry
	cfg := writeConfig(t, dir, gp, setup{providerPlugins: []string{"greeter"}, qos: true, extra: extra})
	n := startNode(t, name, dir, "run", "--role=provider", "-c", cfg)
	return greeterProcess{addr: gp.providerAddr(0), ports: gp, node: n}
}

// served is how many sayHello calls the provider answered so far.
func (g greeterProcess) served(t *testing.T) int {
	t.Helper()
	v, _ := metricSum(scrapeMetrics(t, g.ports.qosURL("/metrics")), "dubbo_provider_requests_total", map[string]string{"method": "sayHello"})
	return int(v)
}

// expectServed runs do, which makes n sayHello calls in all, and checks
// that want served them all and the others none, reading the providers'
// own counts.
func expectServed(t *testing.T, what string, n int, want greeterProcess, all []greeterProcess, do func()) {
	t.Helper()
	before := make([]int, len(all))
	for i, g := range all {
		before[i] = g.served(t)
	}
	do()
	delta := make([]int, len(all))
	waitFor(5*time.Second, func() bool {
		sum := 0
		for i, g := range all {
			delta[i] = g.served(t) - before[i]
			sum += delta[i]
		}
		return sum >= n
	})
	for i, g := range all {
		wantN := 0
		if g.addr == want.addr {
			wantN = n
		}
		if delta[i] != wantN {
			t.Errorf("%s: %s served %d calls, want %d (served by each: %v)", what, g.addr, delta[i], wantN, delta)
		}
	}
}

// putRule writes a rule through the console's API, as an operator would.
func putRule(t *testing.T, p ports, path, yaml string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, p.consoleURL(path), strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT %s: %s", path, resp.Status)
	}
}

func deleteRule(t *testing.T, p ports, path string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, p.consoleURL(path), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("DELETE %s: %s", path, resp.Status)
	}
}

// TestTagRouting routes by request tag through every way a user has to
// send one, against two Greeter providers that are processes of their own
// (A and B), and checks which provider answered: by bench's by_provider
// and by the providers' own request counts. The request tag comes from
// `dubbo call --tag` and `--attachment dubbo.tag=...`, `dubbo bench
// --tag`, the gateway's X-Dubbo-Tag header and a plugin's sdk.WithTag
// (the tagrelay test plugin, calling through its node's consumer).
//
// A's tag comes first from an override rule that sets dubbo.tag=gray on
// its URL (a static tag as the consumers see it), then from a tag rule (<app>.tag-router, Dubbo's YAML,
// written through the console) that puts A in group "canary". A tagged
// call goes to the providers of its tag; an untagged one to B; an unknown
// tag falls back to B, and fails with no_provider under dubbo.force.tag.
// Last, a third provider C tags itself ([[provider.services]] tag =
// "blue"): blue calls reach it alone, untagged ones never.
func TestTagRouting(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	// dubbo up: the registry, the monitor with the console, a provider of
	// TagRelay, and a consumer with the gateway.
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"tagrelay"}, references: []string{"org.example.TagRelay"}, gateway: true})
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	if _, ok := waitFor(20*time.Second, func() bool { return strings.Contains(up.stdout.String(), "ready") || up.exited() }); !ok || up.exited() {
		t.Fatal("dubbo up did not get ready within 20s")
	}
	a := startGreeterProvider(t, "provider A", p)
	b := startGreeterProvider(t, "provider B", p)
	all := []greeterProcess{a, b}
	waitServing(t, dir, p, 2)

	// byProvider benches 20 sayHello calls with flags and returns who served them.
	byProvider := func(flags ...string) map[string]int64 {
		t.Helper()
		return bench(t, dir, append([]string{"--registry", p.registryURL(), "-n", "20", "-c", "2"}, flags...)...).ByProvider
	}
	only := func(what string, got map[string]int64, want greeterProcess) {
		t.Helper()
		if len(got) != 1 || got[want.addr] != 20 {
			t.Errorf("%s: served %v, want all 20 by %s", what, got, want.addr)
		}
	}
	callOK := func(args ...string) {
		t.Helper()
		if r := call(t, dir, p, args[0], args[1], args[2:]...); r.code != 0 {
			t.Fatalf("dubbo call %v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	gateway := func(tag string, n int) func() {
		return func() {
			for range n {
				st, body := post(t, p, "/invoke/org.example.Greeter/sayHello?version=1.0.0", `["gw"]`,
					map[string]string{"Content-Type": "application/json", "X-Dubbo-Tag": tag})
				if st != 200 {
					t.Fatalf("gateway with X-Dubbo-Tag %q: %d %s", tag, st, body)
				}
			}
		}
	}
	// reaches waits until the gateway's calls tagged tag reach g: the
	// running consumer of dubbo up has read the rule just written.
	reaches := func(tag string, g greeterProcess) {
		t.Helper()
		if _, ok := waitFor(10*time.Second, func() bool {
			before := g.served(t)
			gateway(tag, 1)()
			_, ok := waitFor(time.Second, func() bool { return g.served(t) > before })
			return ok
		}); !ok {
			t.Fatalf("the gateway's calls tagged %s never reached %s", tag, g.addr)
		}
	}
	relay := func(tag string, n int) func() {
		return func() {
			for range n {
				callOK("org.example.TagRelay", "relay", fmt.Sprintf("%q", tag), "false")
			}
		}
	}

	t.Run("static tag", func(t *testing.T) {
		putRule(t, p, "/api/v1/rules/override/org.example.Greeter:1.0.0:",
			fmt.Sprintf("configVersion: v3.0\nconfigs:\n  - side: provider\n    addresses: [%q]\n    parameters:\n      dubbo.tag: gray\n", a.addr))
		reaches("gray", a)
		only("bench --tag gray", byProvider("--tag", "gray"), a)
		only("bench, untagged", byProvider(), b)
		only("bench --tag blue (no such provider: untagged ones)", byProvider("--tag", "blue"), b)
		only("bench --attachment dubbo.tag=gray", byProvider("--attachment", "dubbo.tag=gray"), a)
		expectServed(t, "dubbo call --tag gray", 2, a, all, func() {
			callOK("org.example.Greeter", "sayHello", `"c"`, "--tag", "gray")
			callOK("org.example.Greeter", "sayHello", `"c"`, "--tag", "gray")
		})
		r := call(t, dir, p, "org.example.Greeter", "sayHello", `"c"`, "--tag", "blue", "--attachment", "dubbo.force.tag=true")
		if r.code != 1 || !strings.Contains(r.stderr, "no_provider") {
			t.Errorf("dubbo call --tag blue with dubbo.force.tag=true: exit %d, stderr %q; want exit 1, no_provider", r.code, r.stderr)
		}
		expectServed(t, "gateway, X-Dubbo-Tag: gray", 10, a, all, gateway("gray", 10))
		expectServed(t, "gateway, no X-Dubbo-Tag", 10, b, all, gateway("", 10))
		expectServed(t, "plugin, sdk.WithTag(gray)", 3, a, all, relay("gray", 3))
		expectServed(t, "plugin, no tag", 3, b, all, relay("", 3))
		r = call(t, dir, p, "org.example.TagRelay", "relay", `"blue"`, "true")
		if r.code != 1 || !strings.Contains(r.stderr, "no_provider") && !strings.Contains(r.stderr, "no provider") {
			t.Errorf("plugin, sdk.WithTag(blue) with dubbo.force.tag: exit %d, stderr %q; want exit 1 and no provider", r.code, r.stderr)
		}
		deleteRule(t, p, "/api/v1/rules/override/org.example.Greeter:1.0.0:")
	})

	t.Run("tag rule", func(t *testing.T) {
		putRule(t, p, "/api/v1/rules/tag/e2e", fmt.Sprintf("force: false\ntags:\n  - name: canary\n    addresses: [%q]\n", a.addr))
		// Each dubbo call and bench is a new consumer: its first call is
		// routed by the rule already.
		only("bench --tag canary", byProvider("--tag", "canary"), a)
		only("bench, untagged (A is in a group)", byProvider(), b)
		only("bench --tag blue (the providers in no group)", byProvider("--tag", "blue"), b)
		r := call(t, dir, p, "org.example.Greeter", "sayHello", `"c"`, "--tag", "blue", "--attachment", "dubbo.force.tag=true")
		if r.code != 1 || !strings.Contains(r.stderr, "no_provider") {
			t.Errorf("dubbo call --tag blue with dubbo.force.tag=true: exit %d, stderr %q; want exit 1, no_provider", r.code, r.stderr)
		}
		reaches("canary", a) // the running consumer of dubbo up follows the rule
		expectServed(t, "gateway, X-Dubbo-Tag: canary", 10, a, all, gateway("canary", 10))
		expectServed(t, "gateway, no X-Dubbo-Tag", 10, b, all, gateway("", 10))
		expectServed(t, "plugin, sdk.WithTag(canary)", 3, a, all, relay("canary", 3))
	})

	t.Run("provider's own tag", func(t *testing.T) {
		deleteRule(t, p, "/api/v1/rules/tag/e2e")
		c := startGreeterProviderWith(t, "provider C", p,
			"\n[[provider.services]]\ninterface = \"org.example.Greeter\"\nversion = \"1.0.0\"\ntag = \"blue\"\n")
		// Until C has registered, blue calls fall back to the untagged.
		if _, ok := waitFor(20*time.Second, func() bool { return byProvider("--tag", "blue")[c.addr] == 20 }); !ok {
			t.Fatalf("bench --tag blue never reached %s only", c.addr)
		}
		if got := byProvider(); got[c.addr] != 0 {
			t.Errorf("bench, untagged: served %v, want none by the tagged %s", got, c.addr)
		}
		reaches("blue", c)
		expectServed(t, "gateway, X-Dubbo-Tag: blue", 10, c, []greeterProcess{a, b, c}, gateway("blue", 10))
	})
}
