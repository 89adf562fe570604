package dubbogo_test

import (
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dubbogo.RemoveBuilds()
	os.Exit(code)
}

const providersDir = "/dubbo/org.example.Greeter/providers"

// wantTypes is how dubbo-go decodes each hessian result: Java int is int32,
// a map comes back keyed by interface{}.
var wantTypes = map[string]string{
	"sayHello": "string",
	"add":      "int32",
	"echoMap":  "map[interface {}]interface {}",
	"sleep":    "string",
}

func checkAllCalls(t *testing.T, results []dubbogo.CallResult) {
	t.Helper()
	byMethod := map[string]dubbogo.CallResult{}
	for _, r := range results {
		t.Logf("%s -> result=%v type=%s error=%q", r.Method, r.Result, r.Type, r.Error)
		byMethod[r.Method] = r
	}
	if len(results) != 5 {
		t.Fatalf("got %d results, want 5", len(results))
	}
	for method, typ := range wantTypes {
		r := byMethod[method]
		if r.Error != "" || r.Type != typ {
			t.Errorf("%s: type %q error %q, want type %q and no error", method, r.Type, r.Error, typ)
		}
	}
	if r := byMethod["sayHello"]; r.Result != "Hello, world" {
		t.Errorf("sayHello(world) = %v", r.Result)
	}
	if r := byMethod["add"]; r.Result != float64(5) { // JSON number
		t.Errorf("add(2,3) = %v", r.Result)
	}
	if m, _ := byMethod["echoMap"].Result.(map[string]any); m["k"] != "v" || m["n"] != "1" || len(m) != 2 {
		t.Errorf("echoMap = %v", byMethod["echoMap"].Result)
	}
	if r := byMethod["fail"]; !strings.Contains(r.Error, "boom") {
		t.Errorf("fail(boom) error = %q, want it to contain boom", r.Error)
	}
	if r := byMethod["sleep"]; r.Result != "slept" {
		t.Errorf("sleep(10) = %v", r.Result)
	}
	for _, r := range results {
		if !r.OK {
			t.Errorf("%s: not ok", r.Method)
		}
	}
}

func children(t *testing.T, conn *zk.Conn, path string) []string {
	t.Helper()
	names, _, err := conn.Children(path)
	if err != nil {
		t.Fatalf("children of %s: %v", path, err)
	}
	decoded := make([]string, len(names))
	for i, n := range names {
		u, err := url.QueryUnescape(n)
		if err != nil {
			t.Fatalf("node %q is not URL-encoded: %v", n, err)
		}
		decoded[i] = u
	}
	return decoded
}

// Through a real Apache ZooKeeper: dgprovider registers interface-level
// nodes, dgconsumer finds it there and every call behaves; SIGTERM removes
// the provider node.
func TestProviderAndConsumerThroughApacheZooKeeper(t *testing.T) {
	dubbogo.Build(t) // skip early, before starting ZooKeeper
	srv := apachezk.Start(t, apachezk.Options{})
	registry := "zookeeper://" + srv.Addr()

	p := dubbogo.StartProvider(t, dubbogo.ProviderOptions{Registry: registry})

	conn, _, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	providers := children(t, conn, providersDir)
	if len(providers) != 1 {
		t.Fatalf("providers = %q, want one", providers)
	}
	u, err := url.Parse(providers[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("provider node: %s", providers[0])
	q := u.Query()
	if u.Scheme != "dubbo" || u.Host != p.Addr || u.Path != "/org.example.Greeter" {
		t.Errorf("provider URL %s: want dubbo://%s/org.example.Greeter", providers[0], p.Addr)
	}
	for key, want := range map[string]string{
		"interface": "org.example.Greeter", "version": "1.0.0", "side": "provider",
		"application": "dgprovider",
	} {
		if got := q.Get(key); got != want {
			t.Errorf("provider URL %s=%q, want %q", key, got, want)
		}
	}
	for _, m := range []string{"sayHello", "add", "echoMap", "fail", "sleep"} {
		if !strings.Contains(","+q.Get("methods")+",", ","+m+",") {
			t.Errorf("provider URL methods=%q lacks %s", q.Get("methods"), m)
		}
	}
	node := providersDir + "/" + url.QueryEscape(providers[0])
	_, stat, err := conn.Get(node)
	if err != nil {
		// Not every encoder escapes the same characters; find it by listing.
		names, _, _ := conn.Children(providersDir)
		node = providersDir + "/" + names[0]
		_, stat, err = conn.Get(node)
	}
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner == 0 {
		t.Errorf("provider node is persistent, want ephemeral")
	}

	if testing.Verbose() {
		logTree(t, conn, "/")
	}

	results, err := dubbogo.RunConsumer(t, dubbogo.ConsumerOptions{Registry: registry})
	if err != nil {
		t.Error(err)
	}
	checkAllCalls(t, results)

	consumers := children(t, conn, "/dubbo/org.example.Greeter/consumers")
	for _, c := range consumers {
		t.Logf("consumer node: %s", c)
	}
	if len(consumers) == 0 || !strings.HasPrefix(consumers[0], "consumer://") {
		t.Errorf("consumers = %q, want a consumer:// node", consumers)
	}

	start := time.Now()
	if !p.Stop(15 * time.Second) {
		t.Errorf("dgprovider did not exit on SIGTERM\n%s", p.Log())
	}
	if left := children(t, conn, providersDir); len(left) != 0 {
		t.Errorf("provider node still there after graceful shutdown: %q", left)
	}
	t.Logf("SIGTERM to exit, node gone: %s", time.Since(start))
}

// logTree logs every node with its kind and data size, to show what a
// dubbo-go process writes to ZooKeeper (run with -v).
func logTree(t *testing.T, conn *zk.Conn, path string) {
	t.Helper()
	data, stat, err := conn.Get(path)
	if err != nil {
		t.Logf("%s: %v", path, err)
		return
	}
	kind := "persistent"
	if stat.EphemeralOwner != 0 {
		kind = "ephemeral"
	}
	name, _ := url.QueryUnescape(path)
	t.Logf("tree: %s (%s, %d bytes data)", name, kind, len(data))
	names, _, err := conn.Children(path)
	if err != nil {
		return
	}
	for _, n := range names {
		if path == "/" && n == "zookeeper" {
			continue
		}
		logTree(t, conn, strings.TrimSuffix(path, "/")+"/"+n)
	}
}

// Without a registry: the consumer calls the provider by direct URL.
func TestProviderAndConsumerDirect(t *testing.T) {
	p := dubbogo.StartProvider(t, dubbogo.ProviderOptions{})
	results, err := dubbogo.RunConsumer(t, dubbogo.ConsumerOptions{URL: p.URL()})
	if err != nil {
		t.Error(err)
	}
	checkAllCalls(t, results)
}

// A direct URL to a closed port is an error per call, not a crash.
func TestConsumerDirectToClosedPort(t *testing.T) {
	p := dubbogo.StartProvider(t, dubbogo.ProviderOptions{})
	addr := p.URL()
	p.Stop(15 * time.Second)
	results, err := dubbogo.RunConsumer(t, dubbogo.ConsumerOptions{URL: addr, Calls: "sayHello", Timeout: time.Second})
	if err == nil {
		t.Fatalf("consumer succeeded against a closed port: %v", results)
	}
	if len(results) != 1 || results[0].Error == "" || results[0].OK {
		t.Fatalf("results = %+v, want one failed sayHello\n%v", results, err)
	}
	t.Logf("error reported: %s", results[0].Error)
}

// Each registration mode writes its own nodes: interface the provider URL
// under /dubbo/<interface>/providers, instance (dubbo-go's default) only
// the application instance /services/<app>/<host:port>, all both. One
// ZooKeeper, one provider per mode with its own application name.
func TestRegisterModes(t *testing.T) {
	dubbogo.Build(t)
	srv := apachezk.Start(t, apachezk.Options{})
	registry := "zookeeper://" + srv.Addr()
	conn, _, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	for _, tc := range []struct {
		mode                   string
		wantProvider, wantInst bool
	}{
		{dubbogo.RegisterInterface, true, false},
		{dubbogo.RegisterInstance, false, true},
		{dubbogo.RegisterAll, true, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			app := "dgprovider-" + tc.mode
			p := dubbogo.StartProvider(t, dubbogo.ProviderOptions{Registry: registry, RegisterMode: tc.mode, App: app})
			defer p.Stop(15 * time.Second)

			gotProvider := false
			if ok, _, _ := conn.Exists(providersDir); ok {
				for _, u := range children(t, conn, providersDir) {
					if strings.HasPrefix(u, "dubbo://"+p.Addr+"/") {
						gotProvider = true
						t.Logf("provider node: %s", u)
					}
				}
			}
			instance := "/services/" + app + "/" + p.Addr
			gotInst, _, err := conn.Exists(instance)
			if err != nil {
				t.Fatal(err)
			}
			if gotInst {
				data, stat, err := conn.Get(instance)
				if err != nil {
					t.Fatal(err)
				}
				if stat.EphemeralOwner == 0 {
					t.Errorf("%s is persistent, want ephemeral", instance)
				}
				if !strings.Contains(string(data), `"address":"127.0.0.1"`) {
					t.Errorf("%s data %s lacks the address", instance, data)
				}
				t.Logf("instance node %s: %s", instance, data)
			}
			if gotProvider != tc.wantProvider {
				t.Errorf("provider node under %s for %s: %v, want %v", providersDir, p.Addr, gotProvider, tc.wantProvider)
			}
			if gotInst != tc.wantInst {
				t.Errorf("instance node %s: %v, want %v", instance, gotInst, tc.wantInst)
			}
		})
	}
}

// dgbench makes exactly the calls asked for, at the concurrency asked for,
// against a dubbo-go provider, and reports their latencies.
func TestBench(t *testing.T) {
	p := dubbogo.StartProvider(t, dubbogo.ProviderOptions{})
	b := dubbogo.StartBench(t, p.URL())
	for _, c := range []struct {
		calls int64
		conc  int
	}{{1, 1}, {300, 1}, {1000, 16}} {
		r, err := b.Run(c.calls, c.conc)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d calls at c=%d: %+v", c.calls, c.conc, r)
		if r.Calls != c.calls || r.Errors != 0 || r.FirstError != "" {
			t.Errorf("%d calls at c=%d: got %d calls, %d errors (%s)", c.calls, c.conc, r.Calls, r.Errors, r.FirstError)
		}
		if r.QPS <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.MaxUs < r.P99us {
			t.Errorf("%d calls at c=%d: qps %v p50 %d p99 %d max %d", c.calls, c.conc, r.QPS, r.P50us, r.P99us, r.MaxUs)
		}
	}
}
