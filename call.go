package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dubbo-lab/dubbo/monitor"
	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/loadbalance"
	"github.com/dubbo-lab/dubbo/node/cluster/router"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
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
	fl.StringVar(&f.direct, "url", "", "call one provider directly, e.g. dubbo://127.0.0.1:20880, bypassing the registry")
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

// reference is the reference the call goes through: the config file's
// reference to iface (with --version and --group, when given, among its
// keys; the one reference to iface otherwise), or a new one, with the
// call settings given as flags laid over it and over the settings of
// method. Its errors are usage errors.
func (f *callFlags) reference(fl *pflag.FlagSet, refs []consumer.ReferenceConfig, iface, method string) (consumer.ReferenceConfig, error) {
	var matches []consumer.ReferenceConfig
	for _, r := range refs {
		if r.Interface == iface && (!fl.Changed("version") || r.Version == f.version) && (!fl.Changed("group") || r.Group == f.group) {
			matches = append(matches, r)
		}
	}
	rc := consumer.ReferenceConfig{Interface: iface, Version: f.version, Group: f.group}
	switch {
	case len(matches) == 1:
		rc = matches[0]
		rc.Methods = slices.Clone(rc.Methods)
	case len(matches) > 1:
		exact := slices.IndexFunc(matches, func(r consumer.ReferenceConfig) bool { return r.Version == f.version && r.Group == f.group })
		if exact < 0 {
			keys := make([]string, len(matches))
			for i, r := range matches {
				keys[i] = url.ServiceKey(r.Interface, r.Version, r.Group)
			}
			return rc, usage(fmt.Errorf("the config has %d references to %s (%s); say which with --version and --group", len(matches), iface, strings.Join(keys, ", ")))
		}
		rc = matches[exact]
		rc.Methods = slices.Clone(rc.Methods)
	}
	check := false // a call reports no_provider itself
	rc.Check = &check

	switch {
	case fl.Changed("url"):
		if err := checkDirectURL(f.direct); err != nil {
			return rc, usage(fmt.Errorf("--url: %w", err))
		}
		rc.URL = f.direct
	case fl.Changed("registry"):
		rc.URL = ""
	}
	// A flag overrides the setting of the method too, as the file's method
	// settings override its reference's.
	overMethod := func(set func(m *consumer.MethodConfig)) {
		for i := range rc.Methods {
			if rc.Methods[i].Name == method {
				set(&rc.Methods[i])
			}
		}
	}
	if fl.Changed("timeout") {
		if f.timeout < time.Millisecond {
			return rc, usage(fmt.Errorf("--timeout %v: must be at least 1ms", f.timeout))
		}
		rc.Timeout = f.timeout
		overMethod(func(m *consumer.MethodConfig) { m.Timeout = 0 })
	}
	if fl.Changed("retries") {
		if f.retries < 0 {
			return rc, usage(fmt.Errorf("--retries %d: must be 0 or more", f.retries))
		}
		retries := f.retries
		rc.Retries = &retries
		overMethod(func(m *consumer.MethodConfig) { m.Retries = nil })
	}
	if fl.Changed("loadbalance") {
		if _, err := loadbalance.New(f.loadbalance, nil); err != nil {
			return rc, usage(fmt.Errorf("--loadbalance: %w", err))
		}
		rc.LoadBalance = f.loadbalance
		overMethod(func(m *consumer.MethodConfig) { m.LoadBalance = "" })
	}
	if fl.Changed("cluster") {
		if !slices.Contains(cluster.Names(), f.cluster) {
			return rc, usage(fmt.Errorf("--cluster %q: unknown; use one of %s", f.cluster, strings.Join(cluster.Names(), ", ")))
		}
		rc.Cluster = f.cluster
	}
	if fl.Changed("connections") {
		if f.connections < 1 {
			return rc, usage(fmt.Errorf("--connections %d: must be 1 or more", f.connections))
		}
		rc.Connections = f.connections
	}
	return rc, nil
}

// checkDirectURL refuses what a reference's direct url cannot be.
func checkDirectURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Protocol() != "dubbo" || u.Port() == 0 {
		return fmt.Errorf("%q: want dubbo://host:port", s)
	}
	return nil
}

// callAttachments are the attachments every call carries: --attachment,
// then --tag, then --timeout when given (Dubbo's per-call timeout, which
// wins over every configured one). Its errors are usage errors.
func (f *callFlags) callAttachments(fl *pflag.FlagSet) (map[string]string, error) {
	out := make(map[string]string, len(f.attachments)+2)
	for _, a := range f.attachments {
		k, v, ok := strings.Cut(a, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			return nil, usage(fmt.Errorf("--attachment %q: want key=value", a))
		}
		out[k] = v
	}
	if fl.Changed("tag") {
		out[router.KeyTag] = f.tag
	}
	if fl.Changed("timeout") {
		out[cluster.KeyTimeout] = strconv.FormatInt(f.timeout.Milliseconds(), 10)
	}
	return out, nil
}

// caller is a ready-to-use consumer for one service and method, whose
// calls are counted and reported to the monitor like any consumer's.
type caller struct {
	cons *consumer.Consumer
	rep  *monitor.Reporter // nil: not reported
	log  *slog.Logger
	inv  *rpc.Invocation
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

// newCaller connects a consumer with the config file's consumer settings
// (consumer.defaults, the reference to iface and its methods, migration,
// cache file) and the flags over them, and prepares the invocation of
// method with the JSON arguments, resolving their Java types. Mistakes of
// the command line or the config are usage errors; failing to reach the
// registry is not.
func newCaller(ctx context.Context, g *globalFlags, cmd *cobra.Command, f *callFlags, iface, method string, rawArgs []string) (*caller, error) {
	cfg, logger, err := g.load(cmd)
	if err != nil {
		return nil, err
	}
	fl := cmd.Flags()
	raws := make([]json.RawMessage, len(rawArgs))
	for i, a := range rawArgs {
		if !json.Valid([]byte(a)) {
			return nil, usage(fmt.Errorf("argument %d %q is not JSON (strings need quotes: '\"world\"')", i+1, a))
		}
		raws[i] = json.RawMessage(a)
	}
	rc, err := f.reference(fl, cfg.Consumer.References, iface, method)
	if err != nil {
		return nil, err
	}
	attachments, err := f.callAttachments(fl)
	if err != nil {
		return nil, err
	}
	var types []string
	if f.types != "" {
		if types, err = generic.ParseTypes(f.types); err != nil {
			return nil, usage(fmt.Errorf("--types: %w", err))
		}
	}

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
		return nil, usage(errors.New("no registry and no --url: give --registry zookeeper://HOST:PORT or --url dubbo://HOST:PORT"))
	}
	if cc.Registry != "" {
		if _, err := zookeeper.ParseAddress(cc.Registry); err != nil {
			return nil, usage(fmt.Errorf("%w (want zookeeper://HOST:PORT[,HOST:PORT])", err))
		}
	}
	cons, err := consumer.New(ctx, cc, consumer.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("connect to registry %s: %w", url.Redact(cc.Registry), err)
	}
	ok := false
	var rep *monitor.Reporter
	defer func() {
		if !ok {
			(&caller{cons: cons, rep: rep, log: logger}).close()
		}
	}()
	if cc.Registry != "" || cfg.Monitor.Address != "" {
		rep, err = monitor.NewReporter(cfg.Monitor, monitor.ReporterOptions{Consumer: cons, Logger: logger}, cons.Stats())
		if err != nil {
			return nil, usage(err)
		}
	}
	ref, err := cons.Reference(ctx, rc)
	switch {
	case errors.Is(err, cluster.ErrUnknownName):
		return nil, usage(err)
	case errors.Is(err, registry.ErrUnavailable):
		return nil, fmt.Errorf("%w; is the registry running?", err)
	case err != nil:
		return nil, err
	}
	// Connections open in the background; give the first one (and the tag
	// rule of the providers) --timeout, else a second, to come, as a Java
	// consumer connects before its first call.
	wait := time.Second
	if fl.Changed("timeout") {
		wait = f.timeout
	}
	ref.WaitAvailable(ctx, wait)

	if types == nil {
		if rc.URL == "" {
			types, err = cons.ParamTypes(ctx, rc.Interface, rc.Version, rc.Group, method, len(raws))
		}
		if rc.URL != "" || err != nil {
			logger.Debug("no parameter types in metadata; inferring them from the JSON", "err", err)
			types = generic.InferTypes(raws)
		}
	}
	args, err := generic.Args(types, raws)
	if err != nil {
		return nil, usage(err)
	}
	var inv *rpc.Invocation
	if needsGeneric(types) {
		inv = generic.Invocation(rc.Interface, rc.Version, rc.Group, method, types, args)
	} else {
		inv = &rpc.Invocation{Service: rc.Interface, Version: rc.Version, Group: rc.Group, Method: method, ParamTypes: types, Args: args}
	}
	for k, v := range attachments {
		inv.SetAttachment(k, v)
	}
	ok = true
	if rep != nil {
		rep.Start()
	}
	return &caller{cons: cons, rep: rep, log: logger, inv: inv}, nil
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
		Long: `Call one method of any Dubbo service and print the result as JSON.

The call goes through a consumer with the config file's consumer settings:
consumer.defaults, the [[consumer.references]] entry of the interface and
its methods, consumer.migration and consumer.cache-file. The call settings
given as flags override them.` + exitCodesHelp,
		Example: `  dubbo call org.example.Greeter sayHello '"world"' --version 1.0.0
  dubbo call --url dubbo://127.0.0.1:20880 --types int,int org.example.Greeter add 2 3 --version 1.0.0
  dubbo call --tag gray --attachment dubbo.force.tag=true org.example.Greeter sayHello '"gray"' --version 1.0.0`,
		Args: usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := newCaller(ctx, g, cmd, &f, args[0], args[1], args[2:])
			if err != nil {
				return err
			}
			defer c.close()
			start := time.Now()
			res, err := c.call(ctx)
			if res != nil {
				c.log.Debug("call answered", "provider", res.Provider, "elapsed", time.Since(start), "err", err)
			}
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
