package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testCtx bounds every step of a test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// counter counts the calls each provider served.
type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) add(who string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]int)
	}
	c.m[who]++
}

func (c *counter) get(who string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[who]
}

func (c *counter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}

func startProvider(t *testing.T, zkAddr string, cfg provider.Config, calls *counter) *provider.Provider {
	t.Helper()
	cfg.Protocol.Host = "127.0.0.1"
	cfg.Protocol.Port = -1
	cfg.Application = "greeter-app"
	if zkAddr != "" {
		cfg.Registry = "zookeeper://" + zkAddr
	}
	p, err := provider.Start(testCtx(t), cfg, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var addr atomic.Value
	addr.Store(p.Addr())
	svc := providertest.Greeter(func(*rpc.Invocation) {
		if calls != nil {
			calls.add(addr.Load().(string))
		}
	})
	if err := p.Export(testCtx(t), svc); err != nil {
		t.Fatal(err)
	}
	return p
}

func newConsumer(t *testing.T, zkAddr string, refs ...consumer.ReferenceConfig) *consumer.Consumer {
	t.Helper()
	cfg := consumer.Config{Application: "greeter-consumer", References: refs}
	if zkAddr != "" {
		cfg.Registry = "zookeeper://" + zkAddr
	}
	c, err := consumer.New(testCtx(t), cfg, consumer.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return c
}

func greeterRef() consumer.ReferenceConfig {
	return consumer.ReferenceConfig{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion}
}

func call(method string, types []string, args ...any) *rpc.Invocation {
	return &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		Method: method, ParamTypes: types, Args: args}
}

// checkGreeter calls every Greeter method, $echo and $invoke through c.
func checkGreeter(t *testing.T, c *consumer.Consumer, withDefinitions bool) {
	t.Helper()
	ctx := testCtx(t)
	value := func(inv *rpc.Invocation) any {
		t.Helper()
		res, err := c.Invoke(ctx, inv)
		if err != nil {
			t.Fatalf("%s: %v", inv.Method, err)
		}
		if res.Exception != nil {
			t.Fatalf("%s: exception %v", inv.Method, res.Exception)
		}
		return res.Value
	}
	if v := value(call("sayHello", []string{"java.lang.String"}, "dubbo")); v != "Hello, dubbo" {
		t.Errorf("sayHello = %#v", v)
	}
	if v := value(call("add", []string{"int", "int"}, int32(20), int32(22))); v != int32(42) {
		t.Errorf("add = %#v (%T)", v, v)
	}
	if v := value(call("sleep", []string{"int"}, int32(10))); v != "slept" {
		t.Errorf("sleep = %#v", v)
	}
	if v, ok := value(call("echoMap", []string{"java.util.Map"}, map[string]any{"a": "b"})).(map[any]any); !ok || v["a"] != "b" || len(v) != 1 {
		t.Errorf("echoMap = %#v", v)
	}
	if v := value(call("$echo", []string{"java.lang.Object"}, "ping")); v != "ping" {
		t.Errorf("$echo = %#v", v)
	}
	res, err := c.Invoke(ctx, call("fail", []string{"java.lang.String"}, "it broke"))
	if err != nil || res.Exception == nil || res.Exception.Message != "it broke" {
		t.Errorf("fail = %v, %v", res, err)
	}
	res, err = c.Invoke(ctx, call("nosuch", nil))
	if err != nil || res.Exception == nil || !strings.Contains(res.Exception.Message, "cannot find method [nosuch] of service [org.example.Greeter:1.0.0]") {
		t.Errorf("unknown method = %v, %v", res, err)
	}

	g := consumer.GenericCall{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		Method: "add", Types: []string{"int", "int"}, Args: []any{float64(1), float64(2)}}
	if v, err := c.Generic(ctx, g); err != nil || v != int32(3) {
		t.Errorf("generic add = %#v, %v", v, err)
	}
	g.Method, g.Types, g.Args = "fail", []string{"java.lang.String"}, []any{"generic failure"}
	var ex *rpc.Exception
	if _, err := c.Generic(ctx, g); !errors.As(err, &ex) || ex.Message != "generic failure" {
		t.Errorf("generic fail = %v", err)
	}
	if withDefinitions {
		g.Method, g.Types, g.Args = "sayHello", nil, []any{"metadata"}
		if v, err := c.Generic(ctx, g); err != nil || v != "Hello, metadata" {
			t.Errorf("generic sayHello without types = %#v, %v", v, err)
		}
	}
}

func TestDirectURL(t *testing.T) {
	p := startProvider(t, "", provider.Config{}, nil)
	ref := greeterRef()
	ref.URL = "dubbo://" + p.Addr()
	c := newConsumer(t, "", ref)
	checkGreeter(t, c, false)

	// Another version at the same address is not exported there.
	other := ref
	other.Version = "9.9.9"
	r, err := c.Reference(testCtx(t), other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Invoke(testCtx(t), call("sayHello", []string{"java.lang.String"}, "x"))
	if !errors.Is(err, rpc.ErrServiceNotFound) || !strings.Contains(err.Error(), "org.example.Greeter:9.9.9") {
		t.Fatalf("unknown service: %v", err)
	}
}

func TestToken(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	p := startProvider(t, zkAddr, provider.Config{Token: "true"}, nil)

	// Through the registry the consumer learns the token from the URL.
	c := newConsumer(t, zkAddr, greeterRef())
	res, err := c.Invoke(testCtx(t), call("sayHello", []string{"java.lang.String"}, "token"))
	if err != nil || res.Value != "Hello, token" {
		t.Fatalf("with the registry's token: %v %v", res, err)
	}

	// A direct url without the token is refused.
	ref := greeterRef()
	ref.URL = "dubbo://" + p.Addr()
	d := newConsumer(t, "", ref)
	_, err = d.Invoke(testCtx(t), call("sayHello", []string{"java.lang.String"}, "token"))
	if !errors.Is(err, rpc.ErrBadRequest) || !strings.Contains(err.Error(), "Invalid token!") || !strings.Contains(err.Error(), "org.example.Greeter") {
		t.Fatalf("without token: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		p := startProvider(t, zkAddr, provider.Config{}, nil)
		c := newConsumer(t, zkAddr, greeterRef())
		checkGreeter(t, c, true)

		// The consumer registered itself like Java does.
		zc := zkConn(t, zkAddr)
		kids, _, err := zc.Children("/dubbo/org.example.Greeter/consumers")
		if err != nil || len(kids) != 1 {
			t.Fatalf("consumers %v %v", kids, err)
		}
		u, _ := url.Decode(kids[0])
		if u.Protocol() != "consumer" || u.Param("category") != "consumers" || u.Param("check") != "false" ||
			u.Param("side") != "consumer" || u.Param("application") != "greeter-consumer" {
			t.Fatalf("consumer url %s", u)
		}

		// A service nobody provides.
		_, err = c.Invoke(testCtx(t), &rpc.Invocation{Service: "org.example.Nobody", Method: "x"})
		if !errors.Is(err, rpc.ErrNoProvider) {
			t.Fatalf("unknown service: %v", err)
		}

		// The provider leaves: the consumer sees no provider.
		if err := p.Shutdown(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "provider gone", func() bool {
			_, err := c.Invoke(testCtx(t), call("sayHello", []string{"java.lang.String"}, "x"))
			return errors.Is(err, rpc.ErrNoProvider)
		})
	})
}

func zkConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sayHello(c *consumer.Consumer, ctx context.Context) error {
	res, err := c.Invoke(ctx, call("sayHello", []string{"java.lang.String"}, "lb"))
	if err == nil && res.Value != "Hello, lb" {
		err = fmt.Errorf("got %#v", res.Value)
	}
	return err
}

func TestRoundRobinAndFailover(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var calls counter
	p1 := startProvider(t, zkAddr, provider.Config{}, &calls)
	p2 := startProvider(t, zkAddr, provider.Config{}, &calls)
	ref := greeterRef()
	ref.LoadBalance = "roundrobin"
	c := newConsumer(t, zkAddr, ref)
	waitFor(t, "two providers", func() bool {
		r, _ := c.Reference(testCtx(t), ref)
		return len(r.Providers()) == 2
	})
	for i := 0; i < 20; i++ {
		if err := sayHello(c, testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if calls.get(p1.Addr()) != 10 || calls.get(p2.Addr()) != 10 {
		t.Fatalf("round robin split %v", calls.m)
	}

	// p1 closes its server abruptly: calls keep succeeding on p2.
	calls.reset()
	p1.Close()
	for i := 0; i < 200; i++ {
		if err := sayHello(c, testCtx(t)); err != nil {
			t.Fatalf("call %d after p1 closed: %v", i, err)
		}
	}
	if calls.get(p2.Addr()) != 200 {
		t.Fatalf("after close: %v", calls.m)
	}
}

func TestGracefulShutdownUnderLoad(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		var calls counter
		p1 := startProvider(t, zkAddr, provider.Config{}, &calls)
		p2 := startProvider(t, zkAddr, provider.Config{}, &calls)
		ref := greeterRef()
		c := newConsumer(t, zkAddr, ref)
		waitFor(t, "two providers", func() bool {
			r, _ := c.Reference(testCtx(t), ref)
			return len(r.Providers()) == 2
		})
		zc := zkConn(t, zkAddr)

		ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		var failed, done atomic.Int64
		var firstErr atomic.Value
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000 && ctx.Err() == nil; i++ {
					// sleep keeps calls in flight while p1 shuts down.
					res, err := c.Invoke(testCtx(t), call("sleep", []string{"int"}, int32(2)))
					if err != nil || res.Value != "slept" {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprint(res, err))
					}
					done.Add(1)
				}
			}()
		}
		waitFor(t, "load on p1", func() bool { return calls.get(p1.Addr()) > 20 })
		start := time.Now()
		if err := p1.Shutdown(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		kids, _, err := zc.Children("/dubbo/org.example.Greeter/providers")
		if err != nil || len(kids) != 1 || !strings.Contains(kids[0], strings.ReplaceAll(p2.Addr(), ":", "%3A")) {
			t.Fatalf("providers after shutdown %v %v", kids, err)
		}
		if took > 2*time.Second {
			t.Fatalf("shutdown took %v", took)
		}
		before := calls.get(p2.Addr())
		waitFor(t, "load on p2", func() bool { return calls.get(p2.Addr()) > before+50 })
		stop()
		wg.Wait()
		if failed.Load() != 0 {
			t.Fatalf("%d of %d calls failed during shutdown, first: %v", failed.Load(), done.Load(), firstErr.Load())
		}
		t.Logf("%d calls, shutdown took %v", done.Load(), took)
	})
}

func TestConditionRule(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		var calls counter
		p1 := startProvider(t, zkAddr, provider.Config{}, &calls)
		p2 := startProvider(t, zkAddr, provider.Config{}, &calls)
		ref := greeterRef()
		ref.LoadBalance = "roundrobin"
		c := newConsumer(t, zkAddr, ref)
		waitFor(t, "two providers", func() bool {
			r, _ := c.Reference(testCtx(t), ref)
			return len(r.Providers()) == 2
		})

		admin, err := zookeeper.New(url.MustParse("zookeeper://"+zkAddr), zookeeper.Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		key := "org.example.Greeter:1.0.0:.condition-router"
		rule := fmt.Sprintf("configVersion: v3.0\nscope: service\nkey: \"org.example.Greeter:1.0.0:\"\nenabled: true\nconditions:\n  - \"arguments[0] = 102 => port = %d\"\n", p1.Port())
		if err := admin.PublishConfig(testCtx(t), key, rule); err != nil {
			t.Fatal(err)
		}
		add := func(a int32) {
			t.Helper()
			res, err := c.Invoke(testCtx(t), call("add", []string{"int", "int"}, a, int32(1)))
			if err != nil || res.Value != a+1 {
				t.Fatalf("add(%d): %v %v", a, res, err)
			}
		}
		routed := func() bool {
			calls.reset()
			for i := 0; i < 10; i++ {
				add(102)
			}
			return calls.get(p1.Addr()) == 10
		}
		waitFor(t, "the rule to apply", routed)
		calls.reset()
		for i := 0; i < 10; i++ {
			add(5)
		}
		if calls.get(p1.Addr()) != 5 || calls.get(p2.Addr()) != 5 {
			t.Fatalf("other calls should keep balancing: %v", calls.m)
		}

		// An invalid rule is ignored: the previous one stays in force.
		if err := admin.PublishConfig(testCtx(t), key, "conditions: [\"=> => =>\"]\nscope: nowhere\n"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if !routed() {
			t.Fatalf("invalid rule replaced the valid one: %v", calls.m)
		}

		// Deleting the rule restores balancing.
		if err := admin.DeleteConfig(testCtx(t), key); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the rule to go", func() bool {
			calls.reset()
			for i := 0; i < 10; i++ {
				add(102)
			}
			return calls.get(p2.Addr()) > 0
		})
	})
}

// The registry's password never shows in the error of a consumer that
// cannot read or reach its registry.
func TestRegistrySecretsHidden(t *testing.T) {
	for _, address := range zktest.SecretAddresses(t) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		c, err := consumer.New(ctx, consumer.Config{Application: "greeter-consumer", Registry: address},
			consumer.Options{Logger: quietLogger()})
		cancel()
		if err == nil {
			c.Close()
			t.Errorf("registry %s: consumer started", address)
			continue
		}
		if strings.Contains(err.Error(), zktest.Secret) {
			t.Errorf("registry %s: error shows the password: %v", address, err)
		}
	}
}
