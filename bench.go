package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/dubbo-lab/dubbo/loadgen"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

func newBenchCommand(g *globalFlags) *cobra.Command {
	var (
		f           callFlags
		concurrency int
		calls       int64
		duration    time.Duration
		rps         float64
	)
	cmd := &cobra.Command{
		Use:   "bench [--registry URL | --url dubbo://HOST:PORT | --url tri://HOST:PORT] [-c N] [-n CALLS | -d DURATION] [--rps N] INTERFACE METHOD [ARG-JSON ...]",
		Short: "Load-test one method of any Dubbo service; prints one JSON summary line",
		Long: `Load-test one method of any Dubbo service; prints one JSON summary line:
{"calls","errors","qps","p50_us","p90_us","p99_us","p999_us","min_us","mean_us","max_us","errors_by_kind","by_provider"}

The calls go through a consumer with the config file's consumer settings, as
dubbo call's do, and the flags over them; a protobuf service's unary method
takes its request message as JSON, as with dubbo call. By default -c
callers call in a loop, each as soon as its last call returned. With --rps the calls are due
at a fixed rate and the -c callers take them in turn; a call's latency then
runs from the time it was due, so a call that waited for a free caller
(the service slower than the rate) counts that wait. Give enough callers:
at least the rate times the expected latency.` + exitCodesHelp,
		Example: `  dubbo bench -c 32 -d 10s --version 1.0.0 org.example.Greeter sayHello '"world"'
  dubbo bench --set consumer.defaults.loadbalance=roundrobin -n 1000 --version 1.0.0 org.example.Greeter sayHello '"world"'
  dubbo bench --rps 2000 -c 64 -d 30s --version 1.0.0 org.example.Greeter sayHello '"world"'
  dubbo bench -c 32 -d 10s greet.GreetService Greet '{"name":"x"}'`,
		Args: usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case concurrency < 1:
				return usage(fmt.Errorf("-c %d: want 1 or more callers", concurrency))
			case calls < 0 || duration < 0:
				return usage(errors.New("-n and -d must not be negative"))
			case rps < 0:
				return usage(fmt.Errorf("--rps %v: want a positive rate", rps))
			}
			if calls == 0 && duration == 0 {
				calls = 1000
			}
			ctx := cmd.Context()
			c, err := newCaller(ctx, g, cmd, &f, args[0], args[1], args[2:])
			if err != nil {
				return err
			}
			defer c.close() // after the summary: the last statistics go to the monitor
			if c.prep.Streaming() {
				return usage(fmt.Errorf("%s.%s is a %s method; bench calls unary methods", args[0], args[1], c.prep.Proto.Kind()))
			}
			opts := loadgen.Options{Concurrency: concurrency, Calls: calls, Duration: duration, Rate: rps}
			if isTerminal(os.Stderr) {
				opts.Progress = cmd.ErrOrStderr()
			}
			// --timeout bounds each attempt, not the call: a timed-out
			// attempt is retried on another provider, as in Java Dubbo.
			summary := loadgen.Run(ctx, opts, func(ctx context.Context) (string, error) {
				res, err := c.call(ctx)
				if res != nil {
					return res.Provider, err
				}
				var ce *rpc.CallError
				if errors.As(err, &ce) {
					return ce.Address, err
				}
				return "", err
			})
			if err := printJSON(cmd.OutOrStdout(), summary); err != nil {
				return err
			}
			if rps > 0 && summary.QPS < 0.9*rps {
				c.log.Warn("the calls did not keep up with --rps: they waited for one of the -c callers, and their latency counts that wait; give more callers if the service can take more",
					"rps", rps, "qps", summary.QPS, "callers", concurrency)
			}
			if summary.Errors > 0 {
				return fmt.Errorf("%d of %d calls failed: %v", summary.Errors, summary.Calls, summary.ErrorsByKind)
			}
			return nil
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.IntVarP(&concurrency, "concurrency", "c", 1, "concurrent callers: the most calls in flight")
	fl.Int64VarP(&calls, "calls", "n", 0, "number of calls (default 1000 when -d is not given)")
	fl.DurationVarP(&duration, "duration", "d", 0, "run for this long instead of a number of calls")
	fl.Float64Var(&rps, "rps", 0, "start this many calls per second (open loop; latency counted from when each call was due) instead of calling again as soon as a call returns")
	return cmd
}

// isTerminal reports whether f is a character device (a terminal), where a
// live progress line makes sense.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
