package plugins_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// TestConsumerPlugin runs a plugin that serves nothing and only calls: its
// start hook calls the node's fake Echo service in a loop from the moment
// the plugin is accepted, and its context ends when the node closes it.
func TestConsumerPlugin(t *testing.T) {
	var calls atomic.Int64
	cfg := startConfig(t, "consumer")
	var waitLog func(...string) string
	cfg.Logger, waitLog = captureLogger(t)
	cfg.Host = rpc.InvokerFunc(func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		if inv.Service != "org.example.Echo" || inv.Version != "1.0.0" || inv.Method != "echo" || len(inv.Args) != 1 {
			return nil, &rpc.CallError{Kind: rpc.ErrServiceNotFound, Service: inv.Service, Method: inv.Method, Detail: "unexpected call"}
		}
		calls.Add(1)
		return &rpc.Result{Value: inv.Args[0]}, nil
	})
	p := startGreeter(t, cfg)
	if s := p.Services(); len(s) != 0 {
		t.Errorf("a consumer plugin described %+v", s)
	}
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 200 {
		if time.Now().After(deadline) {
			t.Fatalf("the start hook made %d calls in 10s", calls.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Err(); err != nil {
		t.Fatalf("the plugin exited: %v", err)
	}
	_, err := p.Invoke(context.Background(), greeterCall("sayHello", nil, "x"))
	if !errors.Is(err, rpc.ErrServiceNotFound) || !strings.Contains(err.Error(), "it serves nothing") {
		t.Errorf("calling a consumer plugin: %v", err)
	}

	p.Close()
	n := calls.Load()
	t.Logf("%d calls from the start hook", n)
	waitLog("consumer stopped", "context canceled")
	time.Sleep(50 * time.Millisecond)
	if m := calls.Load(); m != n {
		t.Errorf("%d calls after Close", m-n)
	}
}

// TestStartHookFails: a start hook's error ends the plugin, which says why.
func TestStartHookFails(t *testing.T) {
	cfg := startConfig(t, "startfail")
	var waitLog func(...string) string
	cfg.Logger, waitLog = captureLogger(t)
	p := startGreeter(t, cfg)
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the plugin is still up after its start hook failed")
	}
	// The plugin exits with status 1; the node may see its calls stream
	// break first and kill it, which is as good: it is gone either way.
	if err := p.Err(); err == nil || !(strings.Contains(err.Error(), "exit status 1") || strings.Contains(err.Error(), "signal: killed")) {
		t.Errorf("Err = %v", err)
	}
	waitLog("start hook failed", "cannot reach the bank")
}
