package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// A handler that gives up at the consumer's deadline with a timeout of its
// own (as a plugin reports one: rpc.ErrTimeout, by the clock) is answered
// SERVER_TIMEOUT, which consumers read as a timeout; before, it was a
// SERVICE_ERROR, so `dubbo call ... sleep 3000` said "provider" whenever
// the provider's answer beat the consumer's own timer home.
func TestHandlerTimeoutIsServerTimeout(t *testing.T) {
	p := startProvider(t, provider.Config{})
	svc := provider.Service{Interface: "org.example.Slow", Version: "1.0.0",
		Methods: []provider.Method{{Name: "wait", ParamTypes: []string{"int"}, ReturnType: "java.lang.String"}},
		Invoker: rpc.InvokerFunc(func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
			dl, _ := ctx.Deadline()
			time.Sleep(time.Until(dl)) // the plugin's clock says time is up, ctx's timer may lag
			return nil, &rpc.CallError{Kind: rpc.ErrTimeout, Service: inv.Service, Method: inv.Method, Detail: "plugin did not answer in time"}
		})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Export(ctx, svc); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	desc, err := protocol.Descriptor([]string{"int"})
	if err != nil {
		t.Fatal(err)
	}
	// The client waits longer than the timeout it announces, to see the
	// provider's answer.
	resp, err := c.Send(ctx, &protocol.Request{TwoWay: true, Path: "org.example.Slow", Version: "1.0.0", Method: "wait",
		ParamDesc: desc, Args: []any{int32(1)},
		Attachments: map[string]any{"path": "org.example.Slow", "interface": "org.example.Slow", "version": "1.0.0", "timeout": "50"}},
		5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != protocol.StatusServerTimeout {
		t.Errorf("status %d (%s), want SERVER_TIMEOUT (%d)", resp.Status, resp.ErrorMessage, protocol.StatusServerTimeout)
	}
}
