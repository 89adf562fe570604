package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/dubbo-lab/dubbo/node/loadgen"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

func newBenchCommand(g *globalFlags) *cobra.Command {
	var (
		f           callFlags
		concurrency int
		calls       int64
		duration    time.Duration
	)
	cmd := &cobra.Command{
		Use:     "bench [--registry URL | --url dubbo://HOST:PORT] [-c N] [-n CALLS | -d DURATION] INTERFACE METHOD [ARG-JSON ...]",
		Short:   "Load-test one method of any Dubbo service; prints one JSON summary line",
		Example: `  dubbo bench -c 32 -d 10s --version 1.0.0 org.example.Greeter sayHello '"world"'`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if calls == 0 && duration == 0 {
				calls = 1000
			}
			ctx := cmd.Context()
			c, err := newCaller(ctx, g, cmd, &f, args[0], args[1], args[2:])
			if err != nil {
				return err
			}
			defer c.close() // after the summary: the last statistics go to the monitor
			opts := loadgen.Options{Concurrency: concurrency, Calls: calls, Duration: duration}
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
			return printJSON(cmd.OutOrStdout(), summary)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.IntVarP(&concurrency, "concurrency", "c", 1, "concurrent callers")
	fl.Int64VarP(&calls, "calls", "n", 0, "number of calls (default 1000 when -d is not given)")
	fl.DurationVarP(&duration, "duration", "d", 0, "run for this long instead of a number of calls")
	return cmd
}

// isTerminal reports whether f is a character device (a terminal), where a
// live progress line makes sense.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
