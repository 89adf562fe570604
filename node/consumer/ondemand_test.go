package consumer_test

import (
	"errors"
	"io"
	"net"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// tree lists every znode path under root.
func tree(t *testing.T, zc *zk.Conn, root string) []string {
	t.Helper()
	var out []string
	var walk func(p string)
	walk = func(p string) {
		out = append(out, p)
		kids, _, err := zc.Children(p)
		if err != nil {
			t.Fatalf("children of %s: %v", p, err)
		}
		for _, k := range kids {
			walk(path.Join(p, k))
		}
	}
	walk(root)
	slices.Sort(out)
	return out
}

// watchCount asks the server for its number of watches (mntr).
func watchCount(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("mntr")); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "zk_watch_count\t"); ok {
			return v
		}
	}
	t.Fatalf("mntr without zk_watch_count: %q", b)
	return ""
}

func newOnDemandConsumer(t *testing.T, zkAddr string, od consumer.OnDemandConfig, refs ...consumer.ReferenceConfig) *consumer.Consumer {
	t.Helper()
	c, err := consumer.New(testCtx(t), consumer.Config{Application: "ondemand-consumer", Registry: "zookeeper://" + zkAddr,
		References: refs, OnDemand: od}, consumer.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return c
}

// Calls to services nobody provides, or names that are no Java names, leave
// the registry as it was: no znode, no watch. Before, every name made a
// reference for good: 9 znodes and 6 watches each.
func TestOnDemandUnknownServiceWritesNothing(t *testing.T) {
	// The test reads the watch count with mntr.
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{FourLetterWhitelist: []string{"mntr"}})
	startProvider(t, zkAddr, provider.Config{}, nil)
	c := newOnDemandConsumer(t, zkAddr, consumer.OnDemandConfig{}, greeterRef())
	zc := zkConn(t, zkAddr)
	// One call through the configured reference first: what it sets up
	// (metadata reads, connections) is not the unknown names' doing.
	if err := sayHello(c, testCtx(t)); err != nil {
		t.Fatal(err)
	}
	before, watches := tree(t, zc, "/"), watchCount(t, zkAddr)

	unknown := []*rpc.Invocation{
		{Service: "org.example.Greeter", Version: "9.9.9", Method: "sayHello"}, // a version nobody provides
		{Service: "org.example.Greeter", Group: "nobody", Version: "1.0.0", Method: "sayHello"},
	}
	for i := range 50 {
		unknown = append(unknown, &rpc.Invocation{Service: "com.nosuch.S" + string(rune('a'+i%26)) + strings.Repeat("x", i), Method: "m"})
	}
	for _, inv := range unknown {
		_, err := c.Invoke(testCtx(t), inv)
		if !errors.Is(err, rpc.ErrNoProvider) {
			t.Fatalf("%s:%s/%s: %v, want no_provider", inv.Group, inv.Service, inv.Version, err)
		}
	}
	invalid := []*rpc.Invocation{
		{Service: "", Method: "m"},
		{Service: "com..example.S", Method: "m"},
		{Service: "com.example.1S", Method: "m"},
		{Service: "com.example.class", Method: "m"},
		{Service: "com/example/S", Method: "m"},
		{Service: "com.example.S ", Method: "m"},
		{Service: "com.example.S\n", Method: "m"},
		{Service: strings.Repeat("a.", 200) + "S", Method: "m"},
		{Service: "com.example.S", Method: "m-1"},
		{Service: "com.example.S", Version: "1.0/../x", Method: "m"},
		{Service: "com.example.S", Group: "a:b", Method: "m"},
	}
	for _, inv := range invalid {
		_, err := c.Invoke(testCtx(t), inv)
		if !errors.Is(err, rpc.ErrBadRequest) {
			t.Errorf("%q group %q version %q method %q: %v, want bad_request", inv.Service, inv.Group, inv.Version, inv.Method, err)
		}
	}
	after, watchesAfter := tree(t, zc, "/"), watchCount(t, zkAddr)
	if !slices.Equal(before, after) {
		t.Errorf("the tree changed: %d znodes before, %d after; new: %v", len(before), len(after), added(before, after))
	}
	if watches != watchesAfter {
		t.Errorf("watches: %s before, %s after", watches, watchesAfter)
	}
	// The service itself still answers.
	if err := sayHello(c, testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

func added(before, after []string) []string {
	var out []string
	for _, p := range after {
		if _, found := slices.BinarySearch(before, p); !found {
			out = append(out, p)
		}
	}
	return out
}

// greeterVersions exports Greeter under each version from one provider.
func greeterVersions(t *testing.T, zkAddr string, versions ...string) {
	t.Helper()
	p, err := provider.Start(testCtx(t), provider.Config{Application: "greeter-app", Registry: "zookeeper://" + zkAddr,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	for _, v := range versions {
		svc := providertest.Greeter(nil)
		svc.Version = v
		if err := p.Export(testCtx(t), svc); err != nil {
			t.Fatal(err)
		}
	}
}

// consumerVersions lists the versions of this consumer's nodes under
// /dubbo/org.example.Greeter/consumers.
func consumerVersions(t *testing.T, zc *zk.Conn) []string {
	t.Helper()
	kids, _, err := zc.Children("/dubbo/org.example.Greeter/consumers")
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	var out []string
	for _, k := range kids {
		if u, err := url.Decode(k); err == nil && u.Param("application") == "ondemand-consumer" {
			out = append(out, u.Param("version"))
		}
	}
	slices.Sort(out)
	return out
}

func hello(version string) *rpc.Invocation {
	inv := call("sayHello", []string{"java.lang.String"}, "v")
	inv.Version = version
	return inv
}

// On-demand references are bounded in number (the least recently used
// one is released to make room), released when idle, and never while a
// call is in flight; one asked for with Reference stays.
func TestOnDemandBoundedAndReleased(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	greeterVersions(t, zkAddr, "v1", "v2", "v3", "v4")
	zc := zkConn(t, zkAddr)
	ctx := testCtx(t)

	t.Run("bounded", func(t *testing.T) {
		c := newOnDemandConsumer(t, zkAddr, consumer.OnDemandConfig{Max: 2, Idle: time.Hour})
		for _, v := range []string{"v1", "v2", "v1", "v3"} { // v2 is the least recently used at v3
			if res, err := c.Invoke(ctx, hello(v)); err != nil || res.Value != "Hello, v" {
				t.Fatalf("%s: %v, %v", v, res, err)
			}
		}
		waitFor(t, "v2's reference to be released", func() bool {
			return slices.Equal(consumerVersions(t, zc), []string{"v1", "v3"})
		})
		c.Close()
		waitFor(t, "Close to release the rest", func() bool { return len(consumerVersions(t, zc)) == 0 })
	})

	t.Run("busy", func(t *testing.T) {
		c := newOnDemandConsumer(t, zkAddr, consumer.OnDemandConfig{Max: 1, Idle: time.Hour})
		var wg sync.WaitGroup
		wg.Add(1)
		var slowErr error
		go func() {
			defer wg.Done()
			inv := call("sleep", []string{"int"}, int32(1500))
			inv.Version = "v1"
			inv.SetAttachment("timeout", "5000")
			_, slowErr = c.Invoke(ctx, inv)
		}()
		waitFor(t, "v1's reference", func() bool { return slices.Equal(consumerVersions(t, zc), []string{"v1"}) })
		_, err := c.Invoke(ctx, hello("v2"))
		if !errors.Is(err, rpc.ErrPoolExhausted) || !strings.Contains(err.Error(), "consumer.on-demand.max") {
			t.Errorf("v2 while v1's only reference is busy: %v, want pool_exhausted naming the limit", err)
		}
		wg.Wait()
		if slowErr != nil {
			t.Fatalf("the call in flight on v1: %v", slowErr)
		}
		if _, err := c.Invoke(ctx, hello("v2")); err != nil {
			t.Fatalf("v2 once v1 is idle: %v", err)
		}
		waitFor(t, "v1 to make room for v2", func() bool { return slices.Equal(consumerVersions(t, zc), []string{"v2"}) })
	})

	t.Run("idle", func(t *testing.T) {
		c := newOnDemandConsumer(t, zkAddr, consumer.OnDemandConfig{Idle: 300 * time.Millisecond})
		for _, v := range []string{"v1", "v2", "v3"} {
			if _, err := c.Invoke(ctx, hello(v)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Reference(ctx, consumer.ReferenceConfig{Interface: providertest.GreeterInterface, Version: "v3"}); err != nil {
			t.Fatal(err)
		}
		if got := consumerVersions(t, zc); !slices.Equal(got, []string{"v1", "v2", "v3"}) {
			t.Fatalf("consumer nodes %v after the calls", got)
		}
		start := time.Now()
		waitFor(t, "the idle references to be released", func() bool {
			return slices.Equal(consumerVersions(t, zc), []string{"v3"})
		})
		t.Logf("idle references released %v after their last call (idle 300ms)", time.Since(start).Round(time.Millisecond))
		// A released reference is made again by the next call.
		if _, err := c.Invoke(ctx, hello("v1")); err != nil {
			t.Fatal(err)
		}
		if got := consumerVersions(t, zc); !slices.Equal(got, []string{"v1", "v3"}) {
			t.Errorf("consumer nodes %v, want v1 back and v3 kept", got)
		}
	})
}

// Offered reads the registry, not the consumer's reachable providers: a
// provider registered but unreachable (its process killed, its node not
// yet expired) is offered, though a call finds no provider it can use; a
// version nobody registered is not.
func TestOfferedReadsTheRegistry(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	zc := zkConn(t, zkAddr)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there
	u := url.MustParse("dubbo://" + dead + "/org.example.Greeter?application=gone&interface=org.example.Greeter&version=1.0.0&methods=sayHello&side=provider")
	for _, p := range []string{"/dubbo", "/dubbo/org.example.Greeter", "/dubbo/org.example.Greeter/providers"} {
		if _, err := zc.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := zc.Create("/dubbo/org.example.Greeter/providers/"+u.Encode(), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c := newOnDemandConsumer(t, zkAddr, consumer.OnDemandConfig{})
	ctx := testCtx(t)
	if _, err := c.Invoke(ctx, &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
		ParamTypes: []string{"java.lang.String"}, Args: []any{"x"}}); err == nil {
		t.Fatal("a call to a provider nothing listens for succeeded")
	}
	if err := c.Offered(ctx, "org.example.Greeter", "1.0.0", ""); err != nil {
		t.Errorf("Offered of the registered, unreachable provider: %v, want nil", err)
	}
	if err := c.Offered(ctx, "org.example.Greeter", "9.9.9", ""); !errors.Is(err, rpc.ErrNoProvider) {
		t.Errorf("Offered of a version nobody registered: %v, want no_provider", err)
	}
}
