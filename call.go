package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dubbo-lab/dubbo/monitor"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// callFlags are shared by `dubbo call` and `dubbo bench`.
type callFlags struct {
	registry string
	direct   string
	version  string
	group    string
	timeout  time.Duration
	types    string
}

func (f *callFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.registry, "registry", "", "registry URL (default: registry.address of the config)")
	fl.StringVar(&f.direct, "url", "", "call one provider directly, e.g. dubbo://127.0.0.1:20880, bypassing the registry")
	fl.StringVar(&f.version, "version", "", "service version")
	fl.StringVar(&f.group, "group", "", "service group")
	fl.DurationVar(&f.timeout, "timeout", time.Second, "timeout of one attempt; failover retries a timed-out attempt on another provider (retries, default 2)")
	fl.StringVar(&f.types, "types", "", "Java parameter types, e.g. java.lang.String,int (default: from the registry's metadata)")
}

// caller is a ready-to-use consumer for one service and method, whose
// calls are counted and reported to the monitor like any consumer's.
type caller struct {
	cons  *consumer.Consumer
	rep   *monitor.Reporter // nil: not reported
	log   *slog.Logger
	inv   *rpc.Invocation
	flags *callFlags
}

// close sends the last statistics (a monitor that is not there is not
// waited for) and closes the consumer.
func (c *caller) close() {
	ctx, cancel := context.WithTimeout(context.Background(), monitor.CloseTimeout)
	defer cancel()
	if err := c.rep.Close(ctx); errors.Is(err, monitor.ErrNoMonitor) {
		c.log.Debug("statistics not sent", "err", err)
	} else if err != nil {
		c.log.Warn("statistics not sent", "err", err)
	}
	c.cons.Close()
}

// newCaller connects a consumer and prepares the invocation of method with
// the JSON arguments, resolving their Java types.
func newCaller(ctx context.Context, g *globalFlags, cmd *cobra.Command, f *callFlags, iface, method string, rawArgs []string) (*caller, error) {
	cfg, logger, err := g.load(cmd)
	if err != nil {
		return nil, err
	}
	reg := cfg.Registry.Address
	if cmd.Flags().Changed("registry") {
		reg = f.registry
	}
	if f.direct != "" {
		reg = ""
	}
	if reg == "" && f.direct == "" {
		return nil, fmt.Errorf("no registry and no --url: give --registry zookeeper://HOST:PORT or --url dubbo://HOST:PORT")
	}
	raws := make([]json.RawMessage, len(rawArgs))
	for i, a := range rawArgs {
		if !json.Valid([]byte(a)) {
			return nil, fmt.Errorf("argument %d %q is not JSON (strings need quotes: '\"world\"')", i+1, a)
		}
		raws[i] = json.RawMessage(a)
	}
	check := false
	cons, err := consumer.New(ctx, consumer.Config{
		Application: cfg.Application.Name + "-cli",
		Registry:    reg,
		Defaults:    consumer.Settings{Timeout: f.timeout, Check: &check},
	}, consumer.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("connect to registry %s: %w", reg, err)
	}
	ok := false
	var rep *monitor.Reporter
	defer func() {
		if !ok {
			(&caller{cons: cons, rep: rep, log: logger}).close()
		}
	}()
	if reg != "" || cfg.Monitor.Address != "" {
		rep, err = monitor.NewReporter(cfg.Monitor, monitor.ReporterOptions{Consumer: cons, Logger: logger}, cons.Stats())
		if err != nil {
			return nil, err
		}
	}
	ref, err := cons.Reference(ctx, consumer.ReferenceConfig{Interface: iface, Version: f.version, Group: f.group,
		URL: f.direct, Settings: consumer.Settings{Timeout: f.timeout, Check: &check}})
	if err != nil {
		return nil, err
	}
	// Connections open in the background; give the first one the call's
	// timeout to come up, as a Java consumer connects before its first call.
	waitForProvider(ctx, ref, f.timeout)

	var types []string
	switch {
	case f.types != "":
		if types, err = generic.ParseTypes(f.types); err != nil {
			return nil, fmt.Errorf("--types: %w", err)
		}
	case f.direct == "":
		types, err = cons.ParamTypes(ctx, iface, f.version, f.group, method, len(raws))
		if err != nil {
			logger.Debug("no parameter types in metadata; inferring them from the JSON", "err", err)
			types = generic.InferTypes(raws)
		}
	default:
		types = generic.InferTypes(raws)
	}
	args, err := generic.Args(types, raws)
	if err != nil {
		return nil, err
	}
	var inv *rpc.Invocation
	if needsGeneric(types) {
		inv = generic.Invocation(iface, f.version, f.group, method, types, args)
	} else {
		inv = &rpc.Invocation{Service: iface, Version: f.version, Group: f.group, Method: method, ParamTypes: types, Args: args}
	}
	inv.SetAttachment("timeout", strconv.FormatInt(f.timeout.Milliseconds(), 10))
	ok = true
	if rep != nil {
		rep.Start()
	}
	return &caller{cons: cons, rep: rep, log: logger, inv: inv, flags: f}, nil
}

// call makes one invocation; a business exception is returned as an error.
func (c *caller) call(ctx context.Context) (*rpc.Result, error) {
	inv := *c.inv
	res, err := c.cons.Invoke(ctx, &inv)
	if err != nil {
		return nil, err
	}
	if res.Exception != nil {
		return res, res.Exception
	}
	return res, nil
}

// waitForProvider polls until ref has an available provider or d passes.
func waitForProvider(ctx context.Context, ref *consumer.Reference, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for len(ref.Providers()) == 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// needsGeneric reports whether an argument type is a POJO, which only
// generic invocation ($invoke with a "class" map) can carry without the
// class on our side.
func needsGeneric(types []string) bool {
	for _, t := range types {
		t = strings.TrimSuffix(t, "[]")
		switch {
		case !strings.Contains(t, "."), strings.HasPrefix(t, "java.lang."), strings.HasPrefix(t, "java.util."),
			strings.HasPrefix(t, "java.math."), strings.HasPrefix(t, "java.time."):
		default:
			return true
		}
	}
	return false
}

func newCallCommand(g *globalFlags) *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call [--registry URL | --url dubbo://HOST:PORT] INTERFACE METHOD [ARG-JSON ...]",
		Short: "Call one method of any Dubbo service and print the result as JSON",
		Example: `  dubbo call org.example.Greeter sayHello '"world"' --version 1.0.0
  dubbo call --url dubbo://127.0.0.1:20880 --types int,int org.example.Greeter add 2 3 --version 1.0.0`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := newCaller(ctx, g, cmd, &f, args[0], args[1], args[2:])
			if err != nil {
				return err
			}
			defer c.close()
			res, err := c.call(ctx)
			if err != nil {
				return describeCallError(err)
			}
			return printJSON(cmd.OutOrStdout(), generic.ToJSON(res.Value))
		},
	}
	f.register(cmd)
	return cmd
}

// describeCallError prefixes the error with its kind, as the gateway and
// bench report it.
func describeCallError(err error) error {
	if ex, ok := err.(*rpc.Exception); ok {
		return fmt.Errorf("exception %s: %s", ex.Class, ex.Message)
	}
	return fmt.Errorf("%s: %w", generic.ErrorKind(err), err)
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("render result as JSON: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
