// Command greeter-caller is an example consumer-side plugin: it serves
// nothing, and from the moment the node has connected it calls
// org.example.Greeter 1.0.0 sayHello a few times a second through the
// node's consumer (registry, routers, load balancer, cluster), logging each
// answer to the node's log. List it in consumer.plugins.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

const (
	every = 250 * time.Millisecond // four calls a second
	name  = "world"
)

// callLoop calls sayHello every interval until the node stops the plugin.
// A failed call is logged and the loop goes on: the node may be between
// providers.
func callLoop(ctx context.Context, c *sdk.Caller) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 1; ; n++ {
		sayHello(ctx, c, n)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func sayHello(ctx context.Context, c *sdk.Caller, n int) {
	inv := &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
		ParamTypes: []string{"java.lang.String"}, Args: []any{name}}
	start := time.Now()
	res, err := c.Invoke(ctx, inv)
	took := time.Since(start).Round(time.Microsecond).String()
	switch {
	case ctx.Err() != nil:
	case err != nil:
		slog.Warn("sayHello failed", "call", n, "took", took, "err", err)
	case res.Exception != nil:
		slog.Warn("sayHello threw", "call", n, "took", took, "exception", res.Exception.Class, "message", res.Exception.Message)
	default:
		// Provider is the host:port the node's consumer picked.
		slog.Info("sayHello", "call", n, "reply", res.Value, "provider", res.Provider, "took", took)
	}
}

func main() {
	if err := sdk.Run(callLoop); err != nil {
		fmt.Fprintln(os.Stderr, "greeter-caller:", err)
		os.Exit(1)
	}
}
