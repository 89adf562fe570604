// Command greeter-caller is an example consumer-side plugin: it serves
// nothing, and from the moment the node has connected it calls
// org.example.Greeter 1.0.0 sayHello a few times a second through the
// node's consumer (registry, routers, load balancer, cluster), logging its
// first answer, then each one at debug level only (the node's terminal
// stays quiet), and the first failure of a run as a warning, to the node's
// log. List it in consumer.plugins.
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
	// A run of failures is logged as it starts, then once a minute.
	logEvery = 240
)

// callLoop calls sayHello every interval until the node stops the plugin.
// A failed call is logged and the loop goes on: the node may be between
// providers.
func callLoop(ctx context.Context, c *sdk.Caller) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	failing := 0 // failed calls in a row
	for n := 1; ; n++ {
		failing = sayHello(ctx, c, n, failing)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// sayHello makes call n and logs it: at debug level, but the first
// answer and the first after failures at info; the first failure of a run
// of them, then one a minute, as a warning. It returns the failed calls
// in a row.
func sayHello(ctx context.Context, c *sdk.Caller, n, failing int) int {
	inv := &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
		ParamTypes: []string{"java.lang.String"}, Args: []any{name}}
	start := time.Now()
	res, err := c.Invoke(ctx, inv)
	took := time.Since(start).Round(time.Microsecond).String()
	if ctx.Err() != nil {
		return failing
	}
	if err == nil && res.Exception != nil {
		err = fmt.Errorf("%s: %s", res.Exception.Class, res.Exception.Message)
	}
	if err != nil {
		if failing%logEvery == 0 {
			slog.Warn("sayHello failed", "call", n, "failed_in_a_row", failing+1, "took", took, "err", err)
		}
		return failing + 1
	}
	if failing > 0 {
		slog.Info("sayHello answered again", "call", n, "after_failures", failing)
	}
	level := slog.LevelDebug
	if n == 1 {
		level = slog.LevelInfo
	}
	// Provider is the host:port the node's consumer picked.
	slog.Log(ctx, level, "sayHello", "call", n, "reply", res.Value, "provider", res.Provider, "took", took)
	return 0
}

func main() {
	if err := sdk.Run(callLoop); err != nil {
		fmt.Fprintln(os.Stderr, "greeter-caller:", err)
		os.Exit(1)
	}
}
