package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMisspeltNamesRefusedAtStart: a load balancer, cluster or router name
// that does not exist, or a malformed parameter, stops `dubbo up` before
// anything starts, with the file, the line, the key and the known names.
// Before, a misspelt load balancer was accepted and every call failed.
func TestMisspeltNamesRefusedAtStart(t *testing.T) {
	p := freePorts(t, 1)
	head := fmt.Sprintf("[registry.server]\nlisten = \"127.0.0.1:%d\"\n\n", p.registry) // lines 1-3
	ref := "[[consumer.references]]\ninterface = \"org.example.Greeter\"\nversion = \"1.0.0\"\n"
	for _, tt := range []struct {
		name, body string
		want       []string
	}{
		{"consumer.defaults.loadbalance", "[consumer.defaults]\nloadbalance = \"roundrobbin\"\n",
			[]string{"dubbo.toml:5: key consumer.defaults.loadbalance: unknown load balancer \"roundrobbin\" (did you mean roundrobin?); known: consistenthash, leastactive, p2c, random, roundrobin, shortestresponse"}},
		{"a reference's loadbalance", ref + "loadbalance = \"fastest\"\n",
			[]string{"dubbo.toml:7: key consumer.references[0].loadbalance: unknown load balancer \"fastest\""}},
		{"a method's loadbalance", ref + "[[consumer.references.methods]]\nname = \"sayHello\"\nloadbalance = \"leastactiv\"\n",
			[]string{"dubbo.toml:9: key consumer.references[0].methods[0].loadbalance: unknown load balancer \"leastactiv\" (did you mean leastactive?)"}},
		{"a reference's cluster", ref + "cluster = \"failfats\"\n",
			[]string{"dubbo.toml:7: key consumer.references[0].cluster: unknown cluster \"failfats\" (did you mean failfast?); known: available, broadcast, failback, failfast, failover, failsafe, forking"}},
		{"a router in parameters", ref + "parameters = { router = \"-tga\" }\n",
			[]string{"dubbo.toml:7: key consumer.references[0].parameters.router: unknown router \"tga\""}},
		{"forks in parameters", ref + "parameters = { forks = \"two\" }\n",
			[]string{"dubbo.toml:7: key consumer.references[0].parameters.forks: \"two\" is not a whole number"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := head + tt.body
			if err := os.WriteFile(filepath.Join(dir, "dubbo.toml"), []byte(file), 0o644); err != nil {
				t.Fatal(err)
			}
			r := dubbo(t, dir, "up", "-c", "dubbo.toml")
			for _, w := range tt.want {
				if r.code == 0 || !strings.Contains(r.stderr, w) {
					t.Errorf("dubbo up with\n%s\nexited %d, stderr %q; want non-zero and %q", file, r.code, r.stderr, w)
				}
			}
			if r.took > 5*time.Second {
				t.Errorf("dubbo up took %v to refuse its config", r.took)
			}
			if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.registry)), time.Second); err == nil {
				c.Close()
				t.Errorf("something listens on the registry port after dubbo up refused its config")
			}
		})
	}
}

// TestSeveralDirectURLs: a reference whose url names two providers
// ("dubbo://a;dubbo://b", as in Java) sends calls to both; the monitor's
// statistics of the consumer (what the console shows) count each
// provider's share. Before, such a url was refused.
func TestSeveralDirectURLs(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 2)
	cfg := writeConfig(t, dir, p, setup{
		replicas:        2,
		providerPlugins: []string{"greeter"},
		gateway:         true,
		extra: fmt.Sprintf("\n[monitor]\ninterval = \"1s\"\n\n[[consumer.references]]\ninterface = \"org.example.Greeter\"\n"+
			"version = \"1.0.0\"\nloadbalance = \"roundrobin\"\nurl = \"dubbo://%s;dubbo://%s\"\n", p.providerAddr(0), p.providerAddr(1)),
	})
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitGateway(t, up, p)
	client := &http.Client{Timeout: 5 * time.Second}
	sayHello := func() {
		t.Helper()
		status, body, err := invoke(client, p, "org.example.Greeter", "sayHello", `["direct"]`)
		if err != nil || status != 200 {
			t.Fatalf("sayHello through the gateway: %d %s %v", status, body, err)
		}
	}
	a, b := p.providerAddr(0), p.providerAddr(1)
	served := func() map[string]counted {
		rows, err := stats(p, "consumer", "sayHello")
		if err != nil {
			return nil
		}
		return byAddress(rows)
	}
	// Both replicas' plugins up: each has answered a call (the monitor
	// gets the consumer's counts every second).
	var got map[string]counted
	if _, ok := waitFor(30*time.Second, func() bool {
		sayHello()
		got = served()
		return got[a].success > 0 && got[b].success > 0
	}); !ok {
		t.Fatalf("the consumer's sayHello by provider: %v; want calls answered by %s and %s", got, a, b)
	}
	time.Sleep(1500 * time.Millisecond) // the warm-up's last interval reaches the monitor
	before := served()
	const calls = 40
	for range calls {
		sayHello()
	}
	if _, ok := waitFor(20*time.Second, func() bool {
		got = served()
		return got[a].success+got[b].success >= before[a].success+before[b].success+calls
	}); !ok {
		t.Fatalf("the monitor counted %v, %v before; want %d more", got, before, calls)
	}
	// Round robin over the two urls: 20 each, unless an attempt failed
	// over to the other.
	for _, addr := range []string{a, b} {
		if n := got[addr].success - before[addr].success; n < calls/2-5 {
			t.Errorf("%s answered %d of %d calls; want about half (%v)", addr, n, calls, got)
		}
	}
	t.Logf("sayHello by provider: %v", got)
}
