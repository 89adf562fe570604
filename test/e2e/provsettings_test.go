package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/url"
)

// Provider-side settings seen where a user sees them: in the registry, in
// the traffic split of a real consumer, in refused calls.

// runRegistry starts `dubbo run --role=registry` and waits for ruok.
func runRegistry(t *testing.T, dir, cfg string, p ports) *node {
	t.Helper()
	registry := startNode(t, "registry", dir, "run", "--role=registry", "-c", cfg)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.registry))
	if _, ok := waitFor(10*time.Second, func() bool {
		got, err := fourLetter(addr, "ruok")
		return err == nil && got == "imok" || registry.exited()
	}); !ok || registry.exited() {
		t.Fatal("the registry did not answer ruok within 10s")
	}
	return registry
}

// runProvider starts `dubbo run --role=provider` with more environment
// and flags, and waits for its ready line.
func runProvider(t *testing.T, name, dir, cfg string, env []string, flags ...string) *node {
	t.Helper()
	n := startNodeEnv(t, name, dir, env, append([]string{"run", "--role=provider", "-c", cfg}, flags...)...)
	if _, ok := waitFor(20*time.Second, func() bool {
		return strings.Contains(n.stdout.String(), "ready") || n.exited()
	}); !ok || n.exited() {
		t.Fatalf("%s did not say ready within 20s", name)
	}
	return n
}

// registryClient connects to the test's registry.
func registryClient(t *testing.T, p ports) *zk.Conn {
	t.Helper()
	zc, _, err := zk.Connect([]string{fmt.Sprintf("127.0.0.1:%d", p.registry)}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	return zc
}

// greeterProviders lists the provider URLs of org.example.Greeter in the
// registry.
func greeterProviders(t *testing.T, zc *zk.Conn) []*url.URL {
	t.Helper()
	children, _, err := zc.Children("/dubbo/org.example.Greeter/providers")
	if err != nil && err != zk.ErrNoNode {
		t.Fatal(err)
	}
	var out []*url.URL
	for _, c := range children {
		u, err := url.Decode(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// waitGreeterProviders waits until the registry lists n Greeter providers.
func waitGreeterProviders(t *testing.T, zc *zk.Conn, n int) []*url.URL {
	t.Helper()
	var us []*url.URL
	if _, ok := waitFor(15*time.Second, func() bool {
		us = greeterProviders(t, zc)
		return len(us) == n
	}); !ok {
		t.Fatalf("the registry lists %d Greeter providers, want %d: %v", len(us), n, us)
	}
	return us
}

// benchJSON runs `dubbo bench` through the registry with flags and the
// call, and decodes its summary.
func benchJSON(t *testing.T, dir string, p ports, flags []string, call ...string) benchSummary {
	t.Helper()
	args := append([]string{"bench", "--registry", p.registryURL(), "--version", "1.0.0"}, flags...)
	r := dubbo(t, dir, append(args, call...)...)
	var s benchSummary
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &s); err != nil {
		t.Fatalf("dubbo bench exited %d and printed %q, not its summary (%v); stderr: %s", r.code, r.stdout, err, r.stderr)
	}
	return s
}

// servicesSet is --set provider.services with one Greeter table.
func servicesSet(table string) string {
	return `--set=provider.services=[{interface = "org.example.Greeter", ` + table + `}]`
}

// A provider's weight decides its share of a real consumer's calls, and a
// provider still warming up (Dubbo's warmup, from the timestamp it
// registered) gets a small share: dubbo bench through the registry
// against provider processes with their [[provider.services]] settings.
func TestProviderWeightAndWarmup(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 3)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}, extra: "\n[monitor]\nenabled = false\n"})
	runRegistry(t, dir, cfg, p)
	zc := registryClient(t, p)

	port := func(i int) string { return "--set=protocol.port=" + strconv.Itoa(p.provider+i) }
	heavy := runProvider(t, "provider weight 300", dir, cfg, nil, port(0), servicesSet(`weight = 300, warmup = 1`))
	runProvider(t, "provider weight 100", dir, cfg, nil, port(1), servicesSet(`weight = 100, warmup = 1`))
	for _, u := range waitGreeterProviders(t, zc, 2) {
		if w := u.Param("weight"); u.Port() == p.provider && w != "300" || u.Port() == p.provider+1 && w != "100" || u.Param("warmup") != "1" {
			t.Errorf("registered %s", u)
		}
	}
	const calls = 4000
	s := benchJSON(t, dir, p, []string{"-n", strconv.Itoa(calls), "-c", "4"}, "org.example.Greeter", "sayHello", `"world"`)
	share := float64(s.ByProvider[p.providerAddr(0)]) / float64(calls)
	t.Logf("weight 300 against 100: %.3f of %d calls (by provider %v)", share, calls, s.ByProvider)
	if s.Errors != 0 || share < 0.70 || share > 0.80 {
		t.Errorf("the provider of weight 300 served %.3f of the calls (%v, %d errors), want 0.75", share, s.ByProvider, s.Errors)
	}

	// A provider just started with the default warmup (10 minutes) has a
	// weight of about 100 × uptime / 10 min, so it gets about 1 call in
	// 100 beside an equal one that is warm (warmup = 1 ms).
	heavy.stop(t)
	runProvider(t, "provider warming up", dir, cfg, nil, port(2), servicesSet(`weight = 100`))
	waitGreeterProviders(t, zc, 2)
	s = benchJSON(t, dir, p, []string{"-n", strconv.Itoa(calls), "-c", "4"}, "org.example.Greeter", "sayHello", `"world"`)
	share = float64(s.ByProvider[p.providerAddr(2)]) / float64(calls)
	t.Logf("warming up against warm, same weight: %.3f of %d calls (by provider %v)", share, calls, s.ByProvider)
	if s.Errors != 0 || share > 0.05 {
		t.Errorf("the provider warming up served %.3f of the calls (%v, %d errors), want about 0.01", share, s.ByProvider, s.Errors)
	}
}

// executes: a provider runs at most that many calls of a method at once
// and refuses more with Java's ExecuteLimitFilter error, which dubbo call
// prints; within the limit nothing is refused.
func TestProviderExecutes(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}, extra: "\n[monitor]\nenabled = false\n\n" +
		"[[provider.services]]\ninterface = \"org.example.Greeter\"\nexecutes = 2\n"})
	runRegistry(t, dir, cfg, p)
	runProvider(t, "provider", dir, cfg, nil)
	us := waitGreeterProviders(t, registryClient(t, p), 1)
	if us[0].Param("executes") != "2" {
		t.Errorf("registered %s, want executes=2", us[0])
	}

	within := benchJSON(t, dir, p, []string{"-c", "2", "-d", "1s", "--timeout", "5s"}, "org.example.Greeter", "sleep", "50")
	if within.Errors != 0 || within.Calls == 0 {
		t.Errorf("2 callers within executes = 2: %d calls, %d errors %v", within.Calls, within.Errors, within.ErrorsByKind)
	}

	// Six callers keep the limit busy while dubbo call asks once more.
	var over benchSummary
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := runDubbo(dir, "bench", "--registry", p.registryURL(), "--version", "1.0.0", "-c", "6", "-d", "4s",
			"--timeout", "5s", "org.example.Greeter", "sleep", "100")
		if err == nil {
			err = json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &over)
		}
		if err != nil {
			t.Errorf("dubbo bench -c 6: %v (%s)", err, r.stderr)
		}
	}()
	var refusal result
	if _, ok := waitFor(10*time.Second, func() bool {
		refusal = call(t, dir, p, "org.example.Greeter", "sleep", "1")
		return refusal.code != 0
	}); !ok {
		t.Errorf("dubbo call was never refused while six callers used a limit of two: %+v", refusal)
	}
	wg.Wait()
	want := `org.apache.dubbo.rpc.RpcException: Failed to invoke method sleep in provider dubbo://` + p.providerAddr(0) + `/org.example.Greeter?`
	if !strings.Contains(refusal.stderr, want) || !strings.Contains(refusal.stderr, `cause: The service using threads greater than <dubbo:service executes="2" /> limited.`) {
		t.Errorf("dubbo call printed %q\nwant Java's ExecuteLimitFilter message %q...", refusal.stderr, want)
	}
	t.Logf("6 callers, executes = 2: %d calls, %d errors %v", over.Calls, over.Errors, over.ErrorsByKind)
	if over.ErrorsByKind["provider"] == 0 {
		t.Errorf("6 callers over executes = 2: errors %v, want provider errors", over.ErrorsByKind)
	}
}

// delay: the provider registers (and serves) the service that long after
// it came up, as Java's export delay.
func TestProviderDelay(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}, extra: "\n[monitor]\nenabled = false\n\n" +
		"[[provider.services]]\ninterface = \"org.example.Greeter\"\ndelay = 3000\n"})
	runRegistry(t, dir, cfg, p)
	zc := registryClient(t, p)
	runProvider(t, "provider", dir, cfg, nil)
	ready := time.Now()
	// The plugin came up before the ready line: for a second after it the
	// service is still not registered.
	for time.Since(ready) < time.Second {
		if us := greeterProviders(t, zc); len(us) != 0 {
			t.Fatalf("registered %v after %v, before its delay of 3s", us, time.Since(ready))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := call(t, dir, p, "org.example.Greeter", "sayHello", `"early"`); r.code == 0 {
		t.Errorf("a call during the delay succeeded: %s", r.stdout)
	}
	us := waitGreeterProviders(t, zc, 1)
	t.Logf("registered %v after the provider said ready", time.Since(ready).Round(time.Millisecond))
	if us[0].Param("delay") != "3000" {
		t.Errorf("registered %s, want delay=3000", us[0])
	}
	if r := call(t, dir, p, "org.example.Greeter", "sayHello", `"late"`); r.code != 0 || strings.TrimSpace(r.stdout) != `"Hello, late"` {
		t.Errorf("a call after the delay: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// proxy forwards TCP connections from listen to target, as NAT or a
// container's port mapping does, and counts them.
type proxy struct {
	ln    net.Listener
	conns atomic.Int64
}

func startProxy(t *testing.T, listen, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	px := &proxy{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			px.conns.Add(1)
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); io.Copy(in, out); in.Close() }()
		}
	}()
	return px
}

// Dubbo's DUBBO_IP_TO_BIND, DUBBO_PORT_TO_BIND, DUBBO_IP_TO_REGISTRY and
// DUBBO_PORT_TO_REGISTRY: the provider binds one address and registers
// another, which consumers reach through a port mapping; the environment
// wins over the config, with a warning.
func TestProviderAddressEnvironment(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 3)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}, extra: "\n[monitor]\nenabled = false\n"})
	runRegistry(t, dir, cfg, p)
	// The mapping: [::1]:registered -> 127.0.0.1:bound.
	bound, configured := p.provider, p.provider+1
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatalf("IPv6 loopback: %v", err)
	}
	registered := l.Addr().(*net.TCPAddr).Port
	l.Close()
	px := startProxy(t, net.JoinHostPort("::1", strconv.Itoa(registered)), p.providerAddr(0))

	prov := runProvider(t, "provider", dir, cfg, []string{
		"DUBBO_IP_TO_BIND=127.0.0.1",
		"DUBBO_PORT_TO_BIND=" + strconv.Itoa(bound),
		"DUBBO_IP_TO_REGISTRY=::1",
		"DUBBO_DUBBO_PORT_TO_REGISTRY=" + strconv.Itoa(registered), // the protocol's prefix first, as Java reads it
		"DUBBO_PORT_TO_REGISTRY=1",
	}, "--set=protocol.port="+strconv.Itoa(configured))

	us := waitGreeterProviders(t, registryClient(t, p), 1)
	want := fmt.Sprintf("[::1]:%d", registered)
	if us[0].Address() != want {
		t.Errorf("registered %s, want the address %s", us[0], want)
	}
	if out := prov.stdout.String(); !strings.Contains(out, fmt.Sprintf("provider   dubbo://%s   bound 127.0.0.1:%d", want, bound)) {
		t.Errorf("the provider printed:\n%s", out)
	}
	if warn := fmt.Sprintf("DUBBO_PORT_TO_BIND=%d overrides protocol.port = %d", bound, configured); !strings.Contains(prov.stderr.String(), warn) {
		t.Errorf("no warning %q in the provider's log", warn)
	}
	if c, err := net.DialTimeout("tcp", p.providerAddr(1), time.Second); err == nil {
		c.Close()
		t.Errorf("something listens on the configured port %d, which DUBBO_PORT_TO_BIND replaced", configured)
	}
	r := call(t, dir, p, "org.example.Greeter", "sayHello", `"mapped"`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != `"Hello, mapped"` {
		t.Fatalf("dubbo call through the registry: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if px.conns.Load() == 0 {
		t.Error("the call did not go through the registered address")
	}
}

// An override rule's threads resizes a running provider's pool: calls
// beyond the new size are refused as pool exhausted while the rule is in
// force, and not once it is gone.
func TestProviderThreadsOverride(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}, extra: "\n[monitor]\nenabled = false\n"})
	runRegistry(t, dir, cfg, p)
	runProvider(t, "provider", dir, cfg, nil, "--set=protocol.threads=4")
	zc := registryClient(t, p)
	waitGreeterProviders(t, zc, 1)

	load := func() benchSummary {
		return benchJSON(t, dir, p, []string{"-c", "3", "-d", "1s", "--timeout", "5s"}, "org.example.Greeter", "sleep", "50")
	}
	if s := load(); s.Errors != 0 {
		t.Fatalf("3 callers on 4 threads: %d errors %v", s.Errors, s.ErrorsByKind)
	}
	rule := "/dubbo/config/dubbo/e2e.configurators"
	if _, err := zc.Create("/dubbo/config", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		t.Fatal(err)
	}
	if _, err := zc.Create("/dubbo/config/dubbo", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		t.Fatal(err)
	}
	if _, err := zc.Create(rule, []byte("configVersion: v3.0\nscope: application\nkey: e2e\nenabled: true\nconfigs:\n"+
		"  - side: provider\n    parameters:\n      threads: 1\n"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var s benchSummary
	if _, ok := waitFor(15*time.Second, func() bool { s = load(); return s.ErrorsByKind["pool_exhausted"] > 0 }); !ok {
		t.Fatalf("with threads: 1, 3 callers got no pool_exhausted: %+v", s)
	}
	t.Logf("threads: 1 by rule: %d calls, %d errors %v", s.Calls, s.Errors, s.ErrorsByKind)
	if err := zc.Delete(rule, -1); err != nil {
		t.Fatal(err)
	}
	if _, ok := waitFor(15*time.Second, func() bool { s = load(); return s.Errors == 0 }); !ok {
		t.Fatalf("the rule is gone and 3 callers on 4 threads still get errors: %+v", s)
	}
}

// A plugin's sdk.Service settings reach the registry as Dubbo URL
// parameters; a [[provider.services]] table wins over each one it sets.
func TestPluginSettingsInRegistry(t *testing.T) {
	plugin := buildTestPlugin(t, "settingsplugin")
	dir := t.TempDir()
	p := freePorts(t, 2)
	cfg := writeConfig(t, dir, p, setup{extra: "\n[monitor]\nenabled = false\n"})
	runRegistry(t, dir, cfg, p)
	zc := registryClient(t, p)
	plugins := "--set=provider.plugins=" + plugin
	runProvider(t, "provider", dir, cfg, nil, plugins)
	runProvider(t, "provider with a table", dir, cfg, nil, plugins, "--set=protocol.port="+strconv.Itoa(p.provider+1),
		servicesSet(`weight = 50, timeout = 1500, parameters = { owner = "ops" }`))
	byPort := map[int]*url.URL{}
	for _, u := range waitGreeterProviders(t, zc, 2) {
		byPort[u.Port()] = u
	}
	tests := []struct {
		port int
		want map[string]string
	}{
		{p.provider, map[string]string{"weight": "200", "dubbo.tag": "gray", "timeout": "3000", "retries": "0", "executes": "7", "owner": "plugin"}},
		{p.provider + 1, map[string]string{"weight": "50", "dubbo.tag": "gray", "timeout": "1500", "retries": "0", "executes": "7", "owner": "ops"}},
	}
	for _, tt := range tests {
		u := byPort[tt.port]
		if u == nil {
			t.Fatalf("no provider on port %d: %v", tt.port, byPort)
		}
		for k, v := range tt.want {
			if u.Param(k) != v {
				t.Errorf("port %d: %s = %q, want %q (%s)", tt.port, k, u.Param(k), v, u)
			}
		}
	}
}

// buildTestPlugin builds test/e2e/testdata/<name> into the test binaries'
// directory, once per run.
func buildTestPlugin(t *testing.T, name string) string {
	t.Helper()
	out := binary(name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	cmd := exec.Command("go", "build", "-o", out, "./"+filepath.Join("testdata", name))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, b)
	}
	return out
}

// A misspelt dispatcher, thread pool or serialization, or a
// [[provider.services]] table naming an unknown load balancer, stops
// `dubbo run --role=provider` before anything starts, with the file, the
// line, the key and the names that exist.
func TestProviderExtensionNamesRefused(t *testing.T) {
	p := freePorts(t, 1)
	for _, tt := range []struct {
		extra, want string
	}{
		{"\n[protocol]\ndispatcher = \"al\"\n", `key protocol.dispatcher: unknown dispatcher "al"; known: all, connection, direct, execution, message`},
		{"\n[protocol]\nthreadpool = \"fixd\"\n", `key protocol.threadpool: unknown thread pool "fixd"; known: cached, eager, fixed, limited`},
		{"\n[protocol]\nserialization = \"fastjson2\"\n", `key protocol.serialization: serialization "fastjson2" is Dubbo's but not implemented here; only hessian2 is`},
		{"\n[[provider.services]]\ninterface = \"org.example.Greeter\"\nloadbalance = \"roundrobbin\"\n",
			`key provider.services[0].loadbalance: unknown load balancer "roundrobbin"`},
	} {
		dir := t.TempDir()
		cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}})
		// The section repeats [protocol]: write it as the file's only one.
		body, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		text := string(body)
		if strings.HasPrefix(tt.extra, "\n[protocol]\n") {
			text = strings.Replace(text, "[protocol]\n", "[protocol]\n"+strings.TrimPrefix(tt.extra, "\n[protocol]\n"), 1)
		} else {
			text += tt.extra
		}
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		line := 0
		for i, l := range strings.Split(text, "\n") {
			if k, _, ok := strings.Cut(l, " = "); ok && strings.Contains(tt.want, "key protocol."+k+":") ||
				ok && k == "loadbalance" && strings.Contains(tt.want, ".loadbalance:") {
				line = i + 1
			}
		}
		r := dubbo(t, dir, "run", "--role=provider", "-c", cfg)
		want := fmt.Sprintf("%s:%d: %s", cfg, line, tt.want)
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %q\nwant %q", r.code, r.stderr, want)
		}
	}
}
