package provider_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/transport"
	"github.com/dubbo-lab/dubbo/node/url"
)

// An override rule with threads resizes a running provider's pool, as
// Java's does: calls beyond the new size are refused as pool exhausted,
// and when the rule goes the pool is back at protocol.threads.
func TestOverrideResizesThreads(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := provider.Start(ctx, provider.Config{Application: "pool-app", Registry: "zookeeper://" + zkAddr,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1, Threads: 3}}, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	b := newBlockingService()
	export(t, p, b.service(nil))
	c := dial(t, p.Addr())
	waitConnectEvent(t, p, c, "org.example.Blocking", "1.0.0")
	admin, err := zookeeper.New(url.MustParse("zookeeper://"+zkAddr), zookeeper.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })

	// holdAll starts n hold() calls, waits until they all run, and returns
	// a func that releases them and waits for their answers.
	release := b.release
	holdAll := func(t *testing.T, n int) func() {
		t.Helper()
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Invoke(ctx, blockingCall("hold")); err != nil {
					t.Errorf("hold: %v", err)
				}
			}()
		}
		b.waitEntered(t, n)
		return func() {
			for range n {
				release <- struct{}{}
			}
			wg.Wait()
		}
	}
	// refused says whether a call is refused while n calls hold threads.
	refused := func(t *testing.T, n int) bool {
		t.Helper()
		done := holdAll(t, n)
		defer done()
		_, err := c.Invoke(ctx, blockingCall("quick"))
		if err != nil && !errors.Is(err, rpc.ErrPoolExhausted) {
			t.Fatalf("quick: %v", err)
		}
		return err != nil
	}
	waitUntil := func(t *testing.T, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("not %s within 5s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	if refused(t, 2) {
		t.Fatal("a third call refused on a pool of 3")
	}
	if err := admin.PublishConfig(ctx, "pool-app.configurators", `configVersion: v3.0
scope: application
key: pool-app
enabled: true
configs:
  - side: provider
    parameters:
      threads: 1
`); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "resized to 1 thread", func() bool { return p.Server().Stats().Pool.Max == 1 })
	if !refused(t, 1) {
		t.Fatal("a second call served on a pool resized to 1")
	}
	if err := admin.DeleteConfig(ctx, "pool-app.configurators"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "back at 3 threads", func() bool { return p.Server().Stats().Pool.Max == 3 })
	if refused(t, 2) {
		t.Fatal("a third call refused after the rule went")
	}
}

// asyncService completes its calls only when the test says so, as a
// plugin's calls complete in another process.
type asyncService struct {
	mu      sync.Mutex
	pending []func(*rpc.Result, error)
	started chan struct{}
}

func (a *asyncService) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	return &rpc.Result{Value: "sync"}, nil
}

func (a *asyncService) InvokeAsync(_ context.Context, _ *rpc.Invocation, done func(*rpc.Result, error)) {
	a.mu.Lock()
	a.pending = append(a.pending, done)
	a.mu.Unlock()
	a.started <- struct{}{}
}

func (a *asyncService) completeAll() {
	a.mu.Lock()
	pending := a.pending
	a.pending = nil
	a.mu.Unlock()
	for _, done := range pending {
		done(&rpc.Result{Value: "async"}, nil)
	}
}

// A plugin's calls (an AsyncInvoker: started on the reader, completed by
// the plugin) count against the pool's threads like any call: before, they
// bypassed the pool, and threads (and its override) did not bound them.
func TestAsyncCallsCountAgainstThreads(t *testing.T) {
	a := &asyncService{started: make(chan struct{}, 16)}
	p := startBare(t, provider.Config{Protocol: provider.ProtocolConfig{Threads: 2}})
	export(t, p, provider.Service{Interface: "org.example.Async", Version: "1.0.0", Invoker: a,
		Methods: []provider.Method{{Name: "call", ReturnType: "java.lang.String"}}})
	c := dial(t, p.Addr())
	ctx := context.Background()
	call := func() (*rpc.Result, error) {
		inv := &rpc.Invocation{Service: "org.example.Async", Version: "1.0.0", Method: "call"}
		inv.SetAttachment("timeout", "10000")
		return c.Invoke(ctx, inv)
	}
	waitConnectEvent(t, p, c, "org.example.Async", "1.0.0")
	results := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := call()
			results <- err
		}()
	}
	waitEntered(t, a.started, 2)
	if _, err := call(); !errors.Is(err, rpc.ErrPoolExhausted) {
		t.Fatalf("a third call while two plugin calls hold both threads: %v, want pool exhausted", err)
	}
	a.completeAll()
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		_, err := call()
		results <- err
	}()
	waitEntered(t, a.started, 1)
	a.completeAll()
	if err := <-results; err != nil {
		t.Fatalf("after the threads were freed: %v", err)
	}
	if st := p.Server().Stats().Pool; st.Active != 0 {
		t.Errorf("%d threads still held after every call was answered", st.Active)
	}
}

// waitConnectEvent returns once the connect event of c's connection has
// run: it runs on the pool, as Java's "all" dispatcher runs it, and holds
// one of its threads meanwhile, which a test counting threads must not
// see. An echo of service's answer says the event was submitted.
func waitConnectEvent(t *testing.T, p *provider.Provider, c *transport.Client, service, version string) {
	t.Helper()
	echo := &rpc.Invocation{Service: service, Version: version, Method: "$echo",
		ParamTypes: []string{"java.lang.Object"}, Args: []any{"ping"}}
	if _, err := c.Invoke(context.Background(), echo); err != nil {
		t.Fatal(err)
	}
	waitPoolIdle(t, p)
}

// waitPoolIdle returns once every task p's pool accepted has run.
func waitPoolIdle(t *testing.T, p *provider.Provider) {
	t.Helper()
	idle := func() bool { st := p.Server().Stats().Pool; return st.Active == 0 && st.Completed == st.Tasks }
	for deadline := time.Now().Add(5 * time.Second); !idle(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool still runs a task after 5s: %+v", p.Server().Stats().Pool)
		}
	}
}
