package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// backend is a real in-process provider of Greeter whose sayHello and add
// record who called them with what, and can fail (a service error, which
// a consumer may retry), throw a business exception or be slow.
type backend struct {
	p       *provider.Provider
	addr    string
	calls   atomic.Int64
	failing atomic.Bool  // answer with a service error
	throw   atomic.Bool  // answer with a business exception
	slow    atomic.Int64 // nanoseconds the next call sleeps, once

	mu   sync.Mutex
	seen map[string]int // "method:first argument" -> calls
}

func startBackend(t *testing.T, zkAddr string) *backend {
	t.Helper()
	cfg := provider.Config{Application: "greeter-app"}
	cfg.Protocol.Host, cfg.Protocol.Port = "127.0.0.1", -1
	if zkAddr != "" {
		cfg.Registry = "zookeeper://" + zkAddr
	}
	p, err := provider.Start(testCtx(t), cfg, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	b := &backend{p: p, addr: p.Addr(), seen: map[string]int{}}
	svc := providertest.Greeter(nil)
	greet := svc.Invoker
	svc.Invoker = rpc.InvokerFunc(func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		b.calls.Add(1)
		b.mu.Lock()
		b.seen[fmt.Sprint(inv.Method, ":", inv.Args[0])]++
		b.mu.Unlock()
		if d := b.slow.Swap(0); d > 0 {
			time.Sleep(time.Duration(d))
		}
		switch {
		case b.failing.Load():
			return nil, errors.New("backend failing on purpose")
		case b.throw.Load():
			return &rpc.Result{Exception: &rpc.Exception{Class: "java.lang.IllegalStateException", Message: "refused by " + b.addr}}, nil
		}
		return greet.Invoke(ctx, inv)
	})
	if err := p.Export(testCtx(t), svc); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *backend) saw(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seen[key]
}

// directURL lists the backends as one reference's url, Java's way.
func directURL(bs ...*backend) string {
	var us []string
	for _, b := range bs {
		us = append(us, "dubbo://"+b.addr)
	}
	return strings.Join(us, ";")
}

func startConsumer(t *testing.T, zkAddr string, opts consumer.Options, refs ...consumer.ReferenceConfig) *consumer.Consumer {
	t.Helper()
	cfg := consumer.Config{Application: "greeter-consumer", References: refs}
	if zkAddr != "" {
		cfg.Registry = "zookeeper://" + zkAddr
	}
	opts.Logger = quietLogger()
	c, err := consumer.New(testCtx(t), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// Connections come up in the background; a test of how calls spread
	// needs every direct provider in the list, as a long-running consumer
	// has them.
	for _, ref := range refs {
		if zkAddr == "" && ref.URL != "" {
			waitProviders(t, c, ref, strings.Count(ref.URL, ";")+1)
		}
	}
	return c
}

func sayHelloTo(arg string) *rpc.Invocation {
	return call("sayHello", []string{"java.lang.String"}, arg)
}

// Several direct urls in one reference are all its providers, balanced and
// failed over, as in Java. Before, the url had to be one dubbo://host:port.
func TestSeveralDirectURLs(t *testing.T) {
	a, b := startBackend(t, ""), startBackend(t, "")
	ref := greeterRef()
	ref.URL = directURL(a, b)
	ref.LoadBalance = "roundrobin"
	c := startConsumer(t, "", consumer.Options{}, ref)
	for i := range 20 {
		if _, err := c.Invoke(testCtx(t), sayHelloTo("x")); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if a.calls.Load() != 10 || b.calls.Load() != 10 {
		t.Fatalf("round robin over two direct urls: %d/%d calls, want 10/10", a.calls.Load(), b.calls.Load())
	}
	// One of them fails: failover takes the other.
	a.failing.Store(true)
	for i := range 20 {
		if _, err := c.Invoke(testCtx(t), sayHelloTo("x")); err != nil {
			t.Fatalf("call %d with %s failing: %v", i, a.addr, err)
		}
	}
	if b.calls.Load() != 30 {
		t.Errorf("%s answered %d calls, want all 20 more", b.addr, b.calls.Load()-10)
	}
}

// failback through a consumer: a failed call is retried in the background
// on the other provider, never the one that just failed; "retries" counts
// the retries of one call and "failbacktasks" bounds the calls waiting, as
// reference parameters.
func TestFailbackThroughConsumer(t *testing.T) {
	t.Run("retried on the other provider", func(t *testing.T) {
		bad, good := startBackend(t, ""), startBackend(t, "")
		bad.failing.Store(true)
		ref := greeterRef()
		ref.URL, ref.Cluster = directURL(bad, good), "failback"
		c := startConsumer(t, "", consumer.Options{FailbackPeriod: 10 * time.Millisecond}, ref)
		const n = 30
		for i := range n {
			if _, err := c.Invoke(testCtx(t), sayHelloTo(fmt.Sprint(i))); err != nil {
				t.Fatalf("failback returned %v; want an empty result", err)
			}
		}
		waitFor(t, "every call to reach the good provider", func() bool { return good.calls.Load() == n })
		time.Sleep(100 * time.Millisecond)
		failed := bad.calls.Load()
		if failed == 0 {
			t.Fatal("no call went to the failing provider first; the test needs some")
		}
		for i := range n {
			if got := bad.saw(fmt.Sprint("sayHello:", i)) + good.saw(fmt.Sprint("sayHello:", i)); got > 2 {
				t.Errorf("call %d was attempted %d times; a retry went back to the provider that failed", i, got)
			}
		}
		if good.calls.Load() != n {
			t.Errorf("the good provider got %d calls, want %d", good.calls.Load(), n)
		}
	})
	t.Run("retries and failbacktasks", func(t *testing.T) {
		dead := startBackend(t, "")
		dead.failing.Store(true)
		ref := greeterRef()
		ref.URL, ref.Cluster = directURL(dead), "failback"
		ref.Parameters = map[string]string{"retries": "2", "failbacktasks": "3"}
		c := startConsumer(t, "", consumer.Options{FailbackPeriod: 20 * time.Millisecond}, ref)
		for i := range 5 {
			c.Invoke(testCtx(t), sayHelloTo(fmt.Sprint(i)))
		}
		// 5 first attempts, then 3 calls kept (failbacktasks) × 2 retries.
		waitFor(t, "the retries", func() bool { return dead.calls.Load() >= 11 })
		time.Sleep(150 * time.Millisecond)
		if n := dead.calls.Load(); n != 11 {
			t.Errorf("%d attempts; want 5 + 3 kept × 2 retries = 11", n)
		}
	})
}

// forking's forks, as a reference parameter and a method's: each call
// reaches that many distinct providers (all fail here, so every fork runs
// to its end and is counted).
func TestForksThroughConsumer(t *testing.T) {
	var bs []*backend
	for range 5 {
		b := startBackend(t, "")
		b.failing.Store(true)
		bs = append(bs, b)
	}
	ref := greeterRef()
	ref.URL, ref.Cluster = directURL(bs...), "forking"
	ref.Parameters = map[string]string{"forks": "3"}
	ref.Methods = []consumer.MethodConfig{{Name: "add", Parameters: map[string]string{"forks": "4"}}}
	c := startConsumer(t, "", consumer.Options{}, ref)
	const n = 10
	for i := range n {
		if _, err := c.Invoke(testCtx(t), sayHelloTo(fmt.Sprint(i))); !errors.Is(err, rpc.ErrProvider) {
			t.Fatalf("sayHello %d: %v; want every fork's provider error", i, err)
		}
		if _, err := c.Invoke(testCtx(t), call("add", []string{"int", "int"}, int32(i), int32(0))); !errors.Is(err, rpc.ErrProvider) {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	for i := range n {
		hellos, adds := 0, 0
		for _, b := range bs {
			hellos += min(1, b.saw(fmt.Sprint("sayHello:", i)))
			adds += min(1, b.saw(fmt.Sprint("add:", i)))
		}
		if hellos != 3 || adds != 4 {
			t.Errorf("call %d reached %d providers for sayHello and %d for add; want forks 3 (reference) and 4 (method)", i, hellos, adds)
		}
	}
}

// Consistent hashing through a consumer: the same argument always reaches
// the same provider, also through a generic call (what the gateway and
// dubbo call send), and hash.arguments picks which arguments count.
func TestConsistentHashThroughConsumer(t *testing.T) {
	bs := []*backend{startBackend(t, ""), startBackend(t, ""), startBackend(t, "")}
	ref := greeterRef()
	ref.URL, ref.LoadBalance = directURL(bs...), "consistenthash"
	ref.Methods = []consumer.MethodConfig{{Name: "add", Parameters: map[string]string{"hash.arguments": "1"}}}
	c := startConsumer(t, "", consumer.Options{}, ref)
	owner := func(key string) string {
		var who []string
		for _, b := range bs {
			if b.saw(key) > 0 {
				who = append(who, b.addr)
			}
		}
		return strings.Join(who, ",")
	}
	owners := map[string]bool{}
	for i := range 30 {
		arg := fmt.Sprint("user-", i)
		for range 3 {
			if _, err := c.Invoke(testCtx(t), sayHelloTo(arg)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Generic(testCtx(t), consumer.GenericCall{Interface: providertest.GreeterInterface,
				Version: providertest.GreeterVersion, Method: "sayHello", Types: []string{"java.lang.String"}, Args: []any{arg}}); err != nil {
				t.Fatal(err)
			}
		}
		who := owner("sayHello:" + arg)
		if strings.Contains(who, ",") {
			t.Fatalf("%s reached %s; want one provider for direct and generic calls", arg, who)
		}
		owners[who] = true
	}
	if len(owners) < 2 {
		t.Errorf("30 arguments all went to %v; want them spread", owners)
	}
	// add hashes its second argument only: the first varies freely.
	for i := range 20 {
		if _, err := c.Invoke(testCtx(t), call("add", []string{"int", "int"}, int32(i), int32(7))); err != nil {
			t.Fatal(err)
		}
	}
	reached := 0
	for _, b := range bs {
		for i := range 20 {
			if b.saw(fmt.Sprint("add:", i)) > 0 {
				reached++
				break
			}
		}
	}
	if reached != 1 {
		t.Errorf("add(i, 7) reached %d providers; with hash.arguments = 1 the same second argument goes to one", reached)
	}
}

// A provider that was slow once gets traffic back under shortestresponse
// and p2c: the response window (Dubbo's 30 s, 300 ms here) restarts for
// every provider. Before, its one slow answer kept it out for good.
func TestSlowOnceThenFastGetsTrafficBack(t *testing.T) {
	for _, lb := range []string{"shortestresponse", "p2c"} {
		t.Run(lb, func(t *testing.T) {
			a, b := startBackend(t, ""), startBackend(t, "")
			ref := greeterRef()
			ref.URL, ref.LoadBalance = directURL(a, b), lb
			ref.Timeout = 5 * time.Second
			c := startConsumer(t, "", consumer.Options{ResponseWindow: 300 * time.Millisecond}, ref)
			// a answers its first call in 200ms, every later one at once.
			a.slow.Store(int64(200 * time.Millisecond))
			waitFor(t, "a's slow call", func() bool {
				c.Invoke(testCtx(t), sayHelloTo("x"))
				return a.calls.Load() > 0
			})
			after := a.calls.Load()
			deadline := time.Now().Add(10 * time.Second)
			for a.calls.Load() < after+50 && time.Now().Before(deadline) {
				if _, err := c.Invoke(testCtx(t), sayHelloTo("x")); err != nil {
					t.Fatal(err)
				}
			}
			// Back in the rotation: a provider only a little slower than
			// the other still gets a call each time the window restarts
			// (as in Java, estimates are average × (active + 1)), about 33
			// in 10s; one left out would get none.
			if got := a.calls.Load() - after; got < 20 {
				t.Errorf("after its one slow answer, a got %d calls in 10s (b %d); want it back in the rotation", got, b.calls.Load())
			}
		})
	}
}

// A business exception from one provider fails a broadcast through the
// consumer, with the exception, after every provider was called.
func TestBroadcastExceptionThroughConsumer(t *testing.T) {
	bs := []*backend{startBackend(t, ""), startBackend(t, ""), startBackend(t, "")}
	bs[1].throw.Store(true)
	ref := greeterRef()
	ref.URL, ref.Cluster = directURL(bs...), "broadcast"
	c := startConsumer(t, "", consumer.Options{}, ref)
	_, err := c.Invoke(testCtx(t), sayHelloTo("x"))
	var ex *rpc.Exception
	if !errors.As(err, &ex) || ex.Message != "refused by "+bs[1].addr {
		t.Fatalf("broadcast with one exception: %v; want the call to fail with it", err)
	}
	for _, b := range bs {
		if b.calls.Load() != 1 {
			t.Errorf("%s got %d calls, want 1", b.addr, b.calls.Load())
		}
	}
}

// sticky = true as a reference parameter keeps every call on one provider.
func TestStickyThroughConsumer(t *testing.T) {
	bs := []*backend{startBackend(t, ""), startBackend(t, ""), startBackend(t, "")}
	ref := greeterRef()
	ref.URL = directURL(bs...)
	ref.Parameters = map[string]string{"sticky": "true"}
	c := startConsumer(t, "", consumer.Options{}, ref)
	for range 30 {
		if _, err := c.Invoke(testCtx(t), sayHelloTo("x")); err != nil {
			t.Fatal(err)
		}
	}
	used := 0
	for _, b := range bs {
		if b.calls.Load() > 0 {
			used++
		}
	}
	if used != 1 {
		t.Errorf("sticky: 30 calls went to %d providers, want 1", used)
	}
}

// The parameters go into the consumer URL the consumer registers, as Java
// writes them: the reference's as they are, a method's as
// "<method>.<key>", consumer.defaults' where the reference sets none, and
// a setting's own key over the same key in parameters.
func TestParametersInRegisteredConsumerURL(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	startBackend(t, zkAddr)
	ref := greeterRef()
	ref.LoadBalance = "roundrobin"
	ref.Parameters = map[string]string{"forks": "3", "hash.arguments": "0,1", "loadbalance": "random", "interface": "evil"}
	ref.Methods = []consumer.MethodConfig{{Name: "sayHello", Parameters: map[string]string{"sticky": "true", "hash.nodes": "320"}}}
	cfg := consumer.Config{Application: "greeter-consumer", Registry: "zookeeper://" + zkAddr, References: []consumer.ReferenceConfig{ref}}
	cfg.Defaults.Parameters = map[string]string{"failbacktasks": "7", "forks": "9"}
	c, err := consumer.New(testCtx(t), cfg, consumer.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	kids, _, err := zkConn(t, zkAddr).Children("/dubbo/org.example.Greeter/consumers")
	if err != nil || len(kids) != 1 {
		t.Fatalf("consumers %v %v", kids, err)
	}
	u, err := url.Decode(kids[0])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"forks": "3", "hash.arguments": "0,1", "failbacktasks": "7", "loadbalance": "roundrobin",
		"sayHello.sticky": "true", "sayHello.hash.nodes": "320", "interface": "org.example.Greeter", "side": "consumer",
	}
	for k, v := range want {
		if got := u.Param(k); got != v {
			t.Errorf("consumer URL %s = %q, want %q (%s)", k, got, v, u)
		}
	}
}

// A misspelt name or a malformed number is refused when the consumer
// starts, naming the key, before any reference exists.
func TestValidate(t *testing.T) {
	ref := func(mod func(*consumer.ReferenceConfig)) consumer.Config {
		rc := greeterRef()
		mod(&rc)
		return consumer.Config{References: []consumer.ReferenceConfig{{Interface: "org.example.Other"}, rc}}
	}
	tests := []struct {
		name string
		cfg  consumer.Config
		want []string
	}{
		{"defaults.loadbalance", consumer.Config{Defaults: consumer.Settings{LoadBalance: "roundrobbin"}},
			[]string{"consumer.defaults.loadbalance", `unknown load balancer "roundrobbin"`, "did you mean roundrobin", "p2c"}},
		{"defaults.cluster", consumer.Config{Defaults: consumer.Settings{Cluster: "failfats"}},
			[]string{"consumer.defaults.cluster", `unknown cluster "failfats"`, "forking"}},
		{"reference loadbalance", ref(func(r *consumer.ReferenceConfig) { r.LoadBalance = "fastest" }),
			[]string{"consumer.references[1].loadbalance", `"fastest"`, "shortestresponse"}},
		{"method loadbalance", ref(func(r *consumer.ReferenceConfig) {
			r.Methods = []consumer.MethodConfig{{Name: "sayHello"}, {Name: "add", LoadBalance: "leastactiv"}}
		}), []string{"consumer.references[1].methods[1].loadbalance", "did you mean leastactive"}},
		{"loadbalance in parameters", ref(func(r *consumer.ReferenceConfig) { r.Parameters = map[string]string{"loadbalance": "rr"} }),
			[]string{"consumer.references[1].parameters.loadbalance", `"rr"`}},
		{"router in parameters", ref(func(r *consumer.ReferenceConfig) { r.Parameters = map[string]string{"router": "-tga"} }),
			[]string{"consumer.references[1].parameters.router", `unknown router "tga"`, "did you mean tag"}},
		{"forks", ref(func(r *consumer.ReferenceConfig) {
			r.Methods = []consumer.MethodConfig{{Name: "sayHello", Parameters: map[string]string{"forks": "two"}}}
		}), []string{"consumer.references[1].methods[0].parameters.forks", `"two" is not a whole number`}},
		{"sticky", ref(func(r *consumer.ReferenceConfig) { r.Parameters = map[string]string{"sticky": "yes please"} }),
			[]string{"parameters.sticky", "true or false"}},
		{"hash.arguments", ref(func(r *consumer.ReferenceConfig) { r.Parameters = map[string]string{"hash.arguments": "first"} }),
			[]string{"parameters.hash.arguments", "argument positions"}},
		{"url", ref(func(r *consumer.ReferenceConfig) { r.URL = "dubbo://127.0.0.1:20880;http://127.0.0.1:80" }),
			[]string{"consumer.references[1].url", "http://127.0.0.1:80", "dubbo://host:port"}},
		{"interface", ref(func(r *consumer.ReferenceConfig) { r.Interface = "" }),
			[]string{"consumer.references[1].interface"}},
		{"migration", consumer.Config{Migration: "APPLICATION_ONLY"}, []string{"consumer.migration", "FORCE_INTERFACE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, err := consumer.New(testCtx(t), tt.cfg, consumer.Options{Logger: quietLogger()}); err == nil {
				t.Error("consumer.New accepted the config")
			}
		})
	}
	ok := ref(func(r *consumer.ReferenceConfig) {
		r.URL = "dubbo://127.0.0.1:20880; dubbo://127.0.0.1:20881"
		r.Cluster, r.LoadBalance = "failback", "p2c"
		r.Parameters = map[string]string{"router": "-tag", "sticky": "false", "hash.arguments": "0, 1", "x-anything": "goes"}
		r.Methods = []consumer.MethodConfig{{Name: "add", LoadBalance: "consistenthash", Parameters: map[string]string{"hash.nodes": "320"}}}
	})
	if err := ok.Validate(); err != nil {
		t.Errorf("a good config: %v", err)
	}
}
