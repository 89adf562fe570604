package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dubbo-lab/dubbo/config"
	"github.com/dubbo-lab/dubbo/monitor"
	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/loadbalance"
	"github.com/dubbo-lab/dubbo/node/cluster/router"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/jsoncall"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// callFlags are shared by `dubbo call` and `dubbo bench`. The call
// settings among them override the config file's only when given.
type callFlags struct {
	registry    string
	direct      string
	version     string
	group       string
	timeout     time.Duration
	types       string
	retries     int
	loadbalance string
	cluster     string
	connections int
	attachments []string
	tag         string
}

// exitCodesHelp is the exit codes section of call's and bench's help.
const exitCodesHelp = `

Exit codes: 0 success; 1 a call failed (bench: any call failed; the summary
is printed all the same); 2 a usage or config error (a bad flag, argument or
config file), before any call.`

func (f *callFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.registry, "registry", "", "registry URL (default: registry.address of the config)")
	fl.StringVar(&f.direct, "url", "", "call one provider directly, e.g. dubbo://127.0.0.1:20880 or tri://127.0.0.1:50051, bypassing the registry")
	fl.StringVar(&f.version, "version", "", "service version (default: the config's reference to the interface, if it has one)")
	fl.StringVar(&f.group, "group", "", "service group (default: as --version)")
	fl.DurationVar(&f.timeout, "timeout", 0, "timeout of one attempt, as Dubbo's timeout attachment (default: the config's method, reference or consumer.defaults timeout, else the provider's, else 1s)")
	fl.StringVar(&f.types, "types", "", "Java parameter types, e.g. java.lang.String,int (default: from the registry's metadata)")
	fl.IntVar(&f.retries, "retries", 0, "failover retries after a failed attempt (default: the config's, else the provider's, else 2)")
	fl.StringVar(&f.loadbalance, "loadbalance", "", "load balancer: "+strings.Join(loadbalance.Names(), ", ")+" (default: the config's, else the provider's, else random)")
	fl.StringVar(&f.cluster, "cluster", "", "cluster strategy: "+strings.Join(cluster.Names(), ", ")+" (default: the config's, else failover)")
	fl.IntVar(&f.connections, "connections", 0, "connections per provider (default: the config's, else 1)")
	fl.StringArrayVar(&f.attachments, "attachment", nil, "send an attachment with every call, key=value (repeatable), e.g. dubbo.force.tag=true")
	fl.StringVar(&f.tag, "tag", "", "request tag (Dubbo's dubbo.tag attachment): call the providers of this tag, else untagged ones")
}

// settings are the call settings given as flags, checked. Its errors are
// usage errors.
func (f *callFlags) settings(fl *pflag.FlagSet) (jsoncall.Settings, error) {
	var s jsoncall.Settings
	if fl.Changed("version") {
		s.Version = &f.version
	}
	if fl.Changed("group") {
		s.Group = &f.group
	}
	if fl.Changed("url") {
		if _, err := consumer.CheckDirectURL(f.direct); err != nil {
			return s, usage(fmt.Errorf("--url: %w", err))
		}
		s.URL = &f.direct
	}
	s.Registry = fl.Changed("registry")
	if fl.Changed("timeout") {
		if f.timeout < time.Millisecond {
			return s, usage(fmt.Errorf("--timeout %v: must be at least 1ms", f.timeout))
		}
		s.Timeout = &f.timeout
	}
	if fl.Changed("retries") {
		if f.retries < 0 {
			return s, usage(fmt.Errorf("--retries %d: must be 0 or more", f.retries))
		}
		s.Retries = &f.retries
	}
	if fl.Changed("loadbalance") {
		if _, err := loadbalance.New(f.loadbalance, nil); err != nil {
			return s, usage(fmt.Errorf("--loadbalance: %w", err))
		}
		s.LoadBalance = &f.loadbalance
	}
	if fl.Changed("cluster") {
		if !slices.Contains(cluster.Names(), f.cluster) {
			return s, usage(fmt.Errorf("--cluster %q: unknown; use one of %s", f.cluster, strings.Join(cluster.Names(), ", ")))
		}
		s.Cluster = &f.cluster
	}
	if fl.Changed("connections") {
		if f.connections < 1 {
			return s, usage(fmt.Errorf("--connections %d: must be 1 or more", f.connections))
		}
		s.Connections = &f.connections
	}
	return s, nil
}

// call is the call of method on iface with the JSON arguments as the flags
// give it: --types, --timeout, and the attachments: --attachment, then
// --tag. Its errors are usage errors.
func (f *callFlags) call(fl *pflag.FlagSet, iface, method string, rawArgs []string) (jsoncall.Call, error) {
	c := jsoncall.Call{Interface: iface, Method: method, Args: make([]json.RawMessage, len(rawArgs)),
		Attachments: make(map[string]string, len(f.attachments)+1)}
	for i, a := range rawArgs {
		if !json.Valid([]byte(a)) {
			return c, usage(fmt.Errorf("argument %d %q is not JSON (strings need quotes: '\"world\"')", i+1, a))
		}
		c.Args[i] = json.RawMessage(a)
	}
	if f.types != "" {
		types, err := generic.ParseTypes(f.types)
		if err != nil {
			return c, usage(fmt.Errorf("--types: %w", err))
		}
		c.Types = types
	}
	if fl.Changed("timeout") {
		c.Timeout = f.timeout
	}
	for _, a := range f.attachments {
		k, v, ok := strings.Cut(a, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			return c, usage(fmt.Errorf("--attachment %q: want key=value", a))
		}
		c.Attachments[k] = v
	}
	if fl.Changed("tag") {
		c.Attachments[router.KeyTag] = f.tag
	}
	return c, nil
}

// consumerConfig is the consumer of a call through rc: the config file's
// consumer settings with no reference of their own, and --registry. Its
// errors are usage errors.
func (f *callFlags) consumerConfig(fl *pflag.FlagSet, cfg *config.File, rc consumer.ReferenceConfig) (consumer.Config, error) {
	cc := cfg.Consumer.Config
	cc.Application = cfg.Application.Name + "-cli"
	cc.References = nil // only the one this call needs
	if fl.Changed("registry") {
		cc.Registry = f.registry
	}
	if rc.URL != "" {
		cc.Registry = ""
	}
	if cc.Registry == "" && rc.URL == "" {
		return cc, usage(errors.New("no registry and no --url: give --registry zookeeper://HOST:PORT or --url dubbo://HOST:PORT (or tri://HOST:PORT)"))
	}
	if cc.Registry != "" {
		if _, err := zookeeper.ParseAddress(cc.Registry); err != nil {
			return cc, usage(fmt.Errorf("%w (want zookeeper://HOST:PORT[,HOST:PORT])", err))
		}
	}
	return cc, nil
}

// caller is a ready-to-use consumer for one service and method, whose
// calls are counted and reported to the monitor like any consumer's.
type caller struct {
	cons *consumer.Consumer
	rep  *report.Reporter // nil: not reported
	log  *slog.Logger
	prep *jsoncall.Prepared
}

// close sends the last statistics (a monitor that is not there is not
// waited for) and closes the consumer.
func (c *caller) close() {
	ctx, cancel := context.WithTimeout(context.Background(), report.CloseTimeout)
	defer cancel()
	if err := c.rep.Close(ctx); errors.Is(err, report.ErrNoMonitor) {
		c.log.Debug("statistics not sent", "err", err)
	} else if err != nil {
		c.log.Warn("statistics not sent", "err", err)
	}
	c.cons.Close()
}

// newCaller connects a consumer with the config file's consumer settings
// (consumer.defaults, the reference to iface and its methods, migration,
// cache file) and the flags over them, and prepares the call of method
// with the JSON arguments: of a protobuf service when its tri:// providers
// describe it, else of a Java interface with the arguments' Java types
// resolved (package jsoncall). Mistakes of the command line, the config or
// the arguments are usage errors; failing to reach the registry is not.
func newCaller(ctx context.Context, g *globalFlags, cmd *cobra.Command, f *callFlags, iface, method string, rawArgs []string) (*caller, error) {
	cfg, logger, err := g.load(cmd)
	if err != nil {
		return nil, err
	}
	fl := cmd.Flags()
	settings, err := f.settings(fl)
	if err != nil {
		return nil, err
	}
	call, err := f.call(fl, iface, method, rawArgs)
	if err != nil {
		return nil, err
	}
	rc, err := jsoncall.Reference(cfg.Consumer.References, iface, method, settings)
	if err != nil {
		return nil, usage(fmt.Errorf("%w; say which with --version and --group", err))
	}
	call.Version, call.Group = rc.Version, rc.Group
	cc, err := f.consumerConfig(fl, cfg, rc)
	if err != nil {
		return nil, err
	}
	c, ref, err := connect(ctx, cc, cfg.Monitor, rc, logger)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.close()
		}
	}()
	// Connections open in the background; give the first one (and the tag
	// rule of the providers) --timeout, else a second, to come, as a Java
	// consumer connects before its first call.
	wait := time.Second
	if call.Timeout > 0 {
		wait = call.Timeout
	}
	ref.WaitAvailable(ctx, wait)

	var metadata jsoncall.TypeResolver
	if rc.URL == "" { // a provider called directly has no metadata to read
		metadata = c.cons
	}
	c.prep, err = jsoncall.Prepare(ctx, jsoncall.Resolvers{Services: c.cons, Types: metadata}, call, logger)
	if errors.Is(err, rpc.ErrBadRequest) {
		return nil, usage(err) // the arguments as given do not fit
	}
	if err != nil {
		return nil, err
	}
	ok = true
	if c.rep != nil {
		c.rep.Start()
	}
	return c, nil
}

// connect makes the consumer of cc, its reporter and the reference rc: a
// caller with its invocation still to be made.
func connect(ctx context.Context, cc consumer.Config, mon monitor.Config, rc consumer.ReferenceConfig, logger *slog.Logger) (*caller, *consumer.Reference, error) {
	cons, err := consumer.New(ctx, cc, consumer.Options{Logger: logger})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to registry %s: %w", url.Redact(cc.Registry), err)
	}
	c := &caller{cons: cons, log: logger}
	if cc.Registry != "" || mon.Address != "" {
		if c.rep, err = monitor.NewReporter(mon, monitor.ReporterOptions{Consumer: cons, Logger: logger}, cons.Stats()); err != nil {
			c.close()
			return nil, nil, usage(err)
		}
	}
	ref, err := cons.Reference(ctx, rc)
	switch {
	case err == nil:
		return c, ref, nil
	case errors.Is(err, cluster.ErrUnknownName):
		err = usage(err)
	case errors.Is(err, registry.ErrUnavailable):
		err = fmt.Errorf("%w; is the registry running?", err)
	}
	c.close()
	return nil, nil, err
}

// call makes one invocation; a business exception is returned as an error.
func (c *caller) call(ctx context.Context) (*rpc.Result, error) {
	return jsoncall.Invoke(ctx, c.cons, c.prep.Invocation)
}

// stream makes the call of a streaming protobuf method: its requests are
// in's JSON lines (blank ones skipped; a server stream's is its argument),
// and each response is printed to out as one JSON line as it arrives. A
// line that is not a request message is a usage error.
func (c *caller) stream(ctx context.Context, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, protocol.DefaultPayload)
	next := func() (json.RawMessage, error) {
		for sc.Scan() {
			if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
				return json.RawMessage(bytes.Clone(line)), nil
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read the requests from stdin: %w", err)
		}
		return nil, io.EOF
	}
	err := c.prep.Stream(ctx, c.cons, next, func(js json.RawMessage) error {
		_, err := fmt.Fprintln(out, string(js))
		return err
	})
	var input *jsoncall.InputError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &input):
		return usage(err)
	}
	return describeCallError(err)
}

func newCallCommand(g *globalFlags) *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call [--registry URL | --url dubbo://HOST:PORT | --url tri://HOST:PORT] INTERFACE METHOD [ARG-JSON ...]",
		Short: "Call one method of any Dubbo service and print the result as JSON",
		Long: `Call one method of any Dubbo service and print the result as JSON.

The call goes through a consumer with the config file's consumer settings:
consumer.defaults, the [[consumer.references]] entry of the interface and
its methods, consumer.migration and consumer.cache-file. The call settings
given as flags override them.

A protobuf service (served over tri://, its descriptor from the provider's
gRPC server reflection) takes one argument, the request message as
protobuf JSON, and prints the response message. A server-streaming method
prints one JSON line per message; a client- or bidi-streaming method takes
no argument and reads its requests from stdin, one JSON message per line,
until EOF (which half-closes the call). --timeout then bounds the whole
stream.` + exitCodesHelp,
		Example: `  dubbo call org.example.Greeter sayHello '"world"' --version 1.0.0
  dubbo call --url dubbo://127.0.0.1:20880 --types int,int org.example.Greeter add 2 3 --version 1.0.0
  dubbo call --tag gray --attachment dubbo.force.tag=true org.example.Greeter sayHello '"gray"' --version 1.0.0
  dubbo call greet.GreetService Greet '{"name":"x"}'
  dubbo call greet.GreetService GreetServerStream '{"name":"x","count":3}'
  printf '{"name":"a"}\n{"name":"b"}\n' | dubbo call greet.GreetService GreetStream`,
		Args: usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := newCaller(ctx, g, cmd, &f, args[0], args[1], args[2:])
			if err != nil {
				return err
			}
			defer c.close()
			if c.prep.Streaming() {
				return c.stream(ctx, cmd.InOrStdin(), cmd.OutOrStdout())
			}
			start := time.Now()
			res, err := c.call(ctx)
			if res != nil {
				c.log.Debug("call answered", "provider", res.Provider, "elapsed", time.Since(start), "err", err)
			}
			if err != nil {
				return describeCallError(err)
			}
			v, err := c.prep.Result(res)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), v)
		},
	}
	f.register(cmd)
	return cmd
}

// describeCallError prefixes the error with its kind, as the gateway and
// bench report it.
func describeCallError(err error) error {
	if ex, ok := err.(*rpc.Exception); ok {
		if ex.Class == "" { // Triple's status 17 names no class
			return fmt.Errorf("exception: %s", ex.Message)
		}
		return fmt.Errorf("exception %s: %s", ex.Class, ex.Message)
	}
	return fmt.Errorf("%s: %w", rpc.ErrorKind(err), err)
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("render result as JSON: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
