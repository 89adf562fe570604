package provider_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// asyncGreeter answers sayHello from another goroutine after a delay, as a
// plugin's link does.
type asyncGreeter struct{ delay time.Duration }

func (g *asyncGreeter) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	ch := make(chan *rpc.Result, 1)
	g.InvokeAsync(ctx, inv, func(r *rpc.Result, _ error) { ch <- r })
	return <-ch, nil
}

func (g *asyncGreeter) InvokeAsync(ctx context.Context, inv *rpc.Invocation, done func(*rpc.Result, error)) {
	time.AfterFunc(g.delay, func() {
		if inv.Args[0] == "boom" {
			done(&rpc.Result{Exception: &rpc.Exception{Class: "java.lang.IllegalStateException", Message: "boom"}}, nil)
			return
		}
		done(&rpc.Result{Value: "Hello, " + inv.Args[0].(string)}, nil)
	})
}

// Calls of an AsyncInvoker's service take no pool worker goroutine while
// they wait (they hold one of its threads, TestAsyncCallsCountAgainstThreads):
// eight calls at once all succeed and the pool starts no worker for them.
func TestAsyncInvoker(t *testing.T) {
	p := startProvider(t, provider.Config{Protocol: provider.ProtocolConfig{Threads: 8}})
	g := &asyncGreeter{delay: 100 * time.Millisecond}
	svc := provider.Service{Interface: "org.example.AsyncGreeter", Version: "1.0.0",
		Methods: []provider.Method{{Name: "sayHello", ParamTypes: []string{"java.lang.String"}, ReturnType: "java.lang.String"}},
		Invoker: g}
	if err := p.Export(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	// The connect event runs on a worker (dispatcher all) and holds one of
	// the 8 threads until it ends; the 8 calls need all of them.
	waitFor(t, "the connect event", func() (bool, string) {
		st := p.Server().Stats().Pool
		return st.Completed >= 1 && st.Active == 0, fmt.Sprintf("%+v", st)
	})
	call := func(name string) (*rpc.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return c.Invoke(ctx, &rpc.Invocation{Service: svc.Interface, Version: svc.Version, Method: "sayHello",
			ParamTypes: []string{"java.lang.String"}, Args: []any{name}})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			name := string(rune('a' + i))
			res, err := call(name)
			if err != nil || res.Value != "Hello, "+name {
				errs <- errors.Join(err, errors.New("got "+name+": "+toString(res)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// One worker ran the connection's connect event (dispatcher all).
	if st := p.Server().Stats().Pool; st.Largest > 1 {
		t.Errorf("the pool started %d workers for calls that wait on another goroutine", st.Largest)
	}

	res, err := call("boom")
	if err != nil || res.Exception == nil || res.Exception.Class != "java.lang.IllegalStateException" || res.Exception.Message != "boom" {
		t.Errorf("boom = %+v, %v; want IllegalStateException boom", res, err)
	}
	// The generic form takes a worker, and works too.
	res, err = c.Invoke(context.Background(), &rpc.Invocation{Service: svc.Interface, Version: svc.Version, Method: "$invoke",
		ParamTypes: []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"},
		Args:       []any{"sayHello", []string{"java.lang.String"}, []any{"generic"}}})
	if err != nil || res.Value != "Hello, generic" {
		t.Errorf("generic = %+v, %v", res, err)
	}
}

func toString(r *rpc.Result) string {
	if r == nil {
		return "nil"
	}
	s, _ := r.Value.(string)
	return s
}
