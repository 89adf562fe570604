// Package roles runs a node's roles in one process: the embedded registry,
// the monitor (with the console), providers whose services come from
// handler plugins, and the consumer (references, the gateway, consumer
// plugins). It starts them in a fixed order and stops them in reverse, so a
// stopping node serves its last calls, sends their statistics to a monitor
// still up, through a consumer still open, to a registry still there.
//
// The node's consumer is made on first need: by the consumer role, by a
// provider plugin's call to another service, or by the first statistics
// report; a process that needs none connects none. A provider exports a
// plugin's services while the plugin is up and unexports them while it is
// down (the supervisor restarts it). In dubbo up a new build of a plugin
// is swapped in while it serves, and only what it changed is exported
// again (Options.Swap; Options.Build also builds it on each save, with
// package watch). Each process also has its metrics, its QoS port and its
// reporter to the monitor (observe.go). What a user reads is the
// terminal's (terminal.go): where each role listens, a status block once
// ready, then each change.
package roles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbo-lab/dubbo/config"
	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/pluginsvc"
	"github.com/dubbo-lab/dubbo/monitor"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/gateway"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/qos"
	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/plugins"
	"github.com/dubbo-lab/dubbo/watch"
)

// Roles a node can run; `dubbo up` runs those its config describes.
const (
	Registry = "registry"
	Monitor  = "monitor"
	Provider = "provider"
	Consumer = "consumer"
)

// Known lists the roles in the order they start.
func Known() []string { return []string{Registry, Monitor, Provider, Consumer} }

// Up lists the roles `dubbo up` starts for cfg: the registry (unless
// registry.server.listen = "": the nodes use the one at registry.address),
// the monitor (unless monitor.enabled = false), the providers when plugins
// are configured, and a consumer when references or consumer plugins are.
func Up(cfg *config.File) []string {
	var roles []string
	if cfg.Registry.Server.Listen != "" {
		roles = append(roles, Registry)
	}
	if cfg.Monitor.IsEnabled() {
		roles = append(roles, Monitor)
	}
	if len(cfg.Provider.Plugins) > 0 {
		roles = append(roles, Provider)
	}
	if len(cfg.Consumer.References) > 0 || len(cfg.Consumer.Plugins) > 0 {
		roles = append(roles, Consumer)
	}
	return roles
}

// node is the set of running roles and how to stop them, in reverse order.
type node struct {
	log     *slog.Logger
	term    *terminal
	errc    chan error
	plugins sync.WaitGroup // the supervisors, the builders, the providers' watch
	// together: every role runs in this process (dubbo up), so a
	// reference without a provider is the user's work in progress.
	together bool

	mu    sync.Mutex // guards stops, sups, providers and mon
	stops []stopStep
	// sups are the plugin supervisors, for the ready line and readiness.
	sups []supervised

	// pluginStart bounds each plugin's launch and handshake; 0 is the
	// plugins package's default.
	pluginStart time.Duration
	// watch is how often each supervisor looks for a new binary of its
	// plugin to swap in; 0: never (Options.Swap).
	watch time.Duration
	// building are the plugins rebuilt from their sources (Options.Build).
	building []string
	version  string // for the QoS port

	// The node's consumer serves the consumer role, the calls that
	// provider plugins make to other services and the statistics' way to
	// the monitor; it is created on first need, and closed by closeConsumer.
	consOnce sync.Once
	cons     *consumer.Consumer
	consErr  error
	made     atomic.Pointer[consumer.Consumer] // cons, once made: for readers that must not make it

	// The process's observability: its metrics (every provider's and the
	// consumer's statistics, pools, the roles' own), the reporter of its
	// statistics to the monitor (nil when off, or nothing counts here),
	// its QoS port, the providers and monitor that port acts on.
	metrics   *stats.Metrics
	regStats  *stats.RegistryStats
	gatherer  *prometheus.Registry
	reporter  *report.Reporter
	qos       *qos.Server
	started   atomic.Bool
	providers []*provider.Provider // under mu
	mon       *monitor.Monitor     // under mu
}

// consumer returns the node's consumer, connecting it on first use.
func (n *node) consumer(ctx context.Context, cfg *config.File) (*consumer.Consumer, error) {
	n.consOnce.Do(func() {
		n.cons, n.consErr = consumer.New(ctx, cfg.Consumer.Config, consumer.Options{Logger: n.log.With("role", Consumer), RegistryStats: n.regStats})
		if n.consErr == nil {
			n.count(n.cons.Stats())
			n.made.Store(n.cons)
		}
	})
	return n.cons, n.consErr
}

// closeConsumer closes the node's consumer if it was made. It runs after
// the roles that call through it, and after the last statistics went out.
func (n *node) closeConsumer(context.Context) error {
	n.consOnce.Do(func() { n.consErr = errors.New("the node is stopping") }) // none from now on
	if n.cons != nil {
		return n.cons.Close()
	}
	return nil
}

// hostInvoker answers provider plugins' calls to other services through the
// node's consumer, connected on the first such call.
func (n *node) hostInvoker(ctx context.Context, cfg *config.File) rpc.Invoker {
	return rpc.InvokerFunc(func(callCtx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		cons, err := n.consumer(ctx, cfg)
		if err != nil {
			return nil, &rpc.CallError{Kind: rpc.ErrNoProvider, Service: inv.Service, Method: inv.Method,
				Detail: "the node's consumer is not available: " + err.Error()}
		}
		return cons.Invoke(callCtx, inv)
	})
}

// supervised is one plugin supervisor and the role it serves.
type supervised struct {
	where string // "provider 1", "consumer"
	sup   *plugins.Supervisor
}

// pluginState is how one of the node's plugins is doing.
type pluginState struct {
	Where string // the role it serves: "provider 1", "consumer"
	plugins.State
}

// pluginStates says how each of the node's plugins is doing; the node is
// fully up when every one is Up.
func (n *node) pluginStates() []pluginState {
	n.mu.Lock()
	sups := n.sups
	n.mu.Unlock()
	states := make([]pluginState, len(sups))
	for i, s := range sups {
		states[i] = pluginState{Where: s.where, State: s.sup.State()}
	}
	return states
}

// supervise runs sup until ctx ends, and counts it among the node's
// plugins; done is closed when it has stopped its plugin.
func (n *node) supervise(ctx context.Context, where string, sup *plugins.Supervisor, log *slog.Logger) (done <-chan struct{}) {
	n.mu.Lock()
	n.sups = append(n.sups, supervised{where: where, sup: sup})
	n.mu.Unlock()
	stopped := make(chan struct{})
	n.plugins.Add(1)
	go func() {
		defer n.plugins.Done()
		defer close(stopped)
		if err := sup.Run(ctx); err != nil && ctx.Err() == nil {
			log.Error("plugin supervisor stopped", "plugin", sup.State().Name, "err", err)
		}
	}()
	return stopped
}

// awaitPlugins waits until every plugin's first start attempt has ended (a
// plugin that never answers is given up after its start timeout), or ctx.
func (n *node) awaitPlugins(ctx context.Context) {
	n.mu.Lock()
	sups := n.sups
	n.mu.Unlock()
	for _, s := range sups {
		select {
		case <-s.sup.Tried():
		case <-ctx.Done():
			return
		}
	}
}

// sayReady prints the status block and the ready line, and before it a
// warning for each plugin that is down, so that nobody reads "ready" as
// "serving everything"; from then on the terminal prints changes.
func (n *node) sayReady() {
	defer n.term.setReady(true)
	n.statusBlock()
	var down int
	states := n.pluginStates()
	for _, s := range states {
		if s.Up {
			continue
		}
		down++
		why := "not started yet"
		if s.Err != nil {
			why, _, _ = strings.Cut(s.Err.Error(), "\n")
		}
		n.term.line("warning: plugin %s (%s) is down: %s; retrying with backoff", s.Name, s.Where, why)
	}
	if down == 0 {
		n.term.line("ready; Ctrl-C stops everything")
		return
	}
	n.term.line("ready with %d of %d plugins down; Ctrl-C stops everything", down, len(states))
}

// configuredPlugin is a plugin binary the roles run, and the config key
// that names it.
type configuredPlugin struct{ key, path string }

// pluginsOf lists the plugins the roles run, each path once.
func pluginsOf(cfg *config.File, roles []string) []configuredPlugin {
	var out []configuredPlugin
	for _, role := range roles {
		key, paths := "", []string(nil)
		switch role {
		case Provider:
			key, paths = "provider.plugins", cfg.Provider.Plugins
		case Consumer:
			key, paths = "consumer.plugins", cfg.Consumer.Plugins
		}
		for _, path := range paths {
			if !slices.ContainsFunc(out, func(p configuredPlugin) bool { return p.path == path }) {
				out = append(out, configuredPlugin{key, path})
			}
		}
	}
	return out
}

// checkPlugins refuses plugin paths that cannot be launched, naming the
// config key, before anything starts.
func checkPlugins(cfg *config.File, roles []string) error {
	for _, p := range pluginsOf(cfg, roles) {
		if err := plugins.CheckPath(p.path); err != nil {
			return fmt.Errorf("key %s: %w", p.key, err)
		}
	}
	return nil
}

// buildPlugins builds each plugin the roles run whose binary is missing
// or older than its sources, printing how it went, then rebuilds it on
// each save of its sources until ctx ends (dubbo up --watch): its
// supervisor swaps the new binary in. A plugin with no Go sources beside
// its binary is left as it is.
func (n *node) buildPlugins(ctx context.Context, cfg *config.File, roles []string) {
	for _, p := range pluginsOf(cfg, roles) {
		b := &watch.Builder{Binary: p.path, Report: n.term.built}
		if !b.HasSources(ctx) {
			continue
		}
		if b.Stale(ctx) {
			res := b.Build(ctx)
			if res.Err != nil {
				n.term.line("build      %s   failed in %v\n%s", shown(p.path), res.Took.Round(time.Millisecond), buildErrors(res))
			} else {
				n.term.line("build      %s   built in %v", shown(p.path), res.Took.Round(time.Millisecond))
			}
		}
		n.building = append(n.building, p.path)
		n.plugins.Go(func() { b.Run(ctx) })
	}
}

// inUse turns err, when a role's listener found its address taken, into
// what to do about it: the role, its address and the key to change (fix).
// Other errors are returned as they are.
func inUse(err error, role, addr, fix string) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	return fmt.Errorf("%s: %s is already in use; %s", role, addr, fix)
}

// stopStep is one thing the node stops, named for the logs.
type stopStep struct {
	what string
	stop func(context.Context) error
}

// onStop adds a stop step; what names it in the logs ("stopped", at debug
// level, and a failure's warning).
func (n *node) onStop(what string, f func(context.Context) error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stops = append(n.stops, stopStep{what, f})
}

// stop runs the stop steps last-started first; each gets what is left of
// ctx.
func (n *node) stop(ctx context.Context) {
	n.mu.Lock()
	stops := n.stops
	n.stops = nil
	n.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		if err := stops[i].stop(ctx); err != nil {
			n.log.Warn("shutdown", "what", stops[i].what, "err", err)
			continue
		}
		n.log.Debug("stopped", "what", stops[i].what)
	}
}

// Options are what the command line gives Run besides the config file.
type Options struct {
	// Out gets the lines a user reads: where each role listens, the
	// status block with warnings for plugins that are down, the ready
	// line, then each change (terminal.go).
	Out    io.Writer
	Logger *slog.Logger
	// Replicas is how many providers the provider role starts, on
	// consecutive ports; 0 is 1.
	Replicas int
	// PluginStart bounds each plugin's launch and handshake; 0 is the
	// plugins package's default.
	PluginStart time.Duration
	// Version is what the QoS port's version command says.
	Version string
	// Swap has the node watch each plugin binary and swap in a new one
	// while calls go on, as dubbo up does (plugins.SupervisorConfig.Watch).
	Swap bool
	// Build has the node build each plugin from its Go sources when they
	// changed, at start and on each save, printing the compiler's errors
	// (package watch); a new binary is swapped in (dubbo up --watch).
	Build bool
}

// Run starts the roles, prints where each listens, and blocks until ctx
// ends (Ctrl-C, SIGTERM) or a role fails; then stops them all.
//
// The roles start in one order whatever roles lists, and stop in reverse:
// the QoS port, the registry, (the consumer's close), the monitor, (the
// reporter's close), the providers, the consumer role. So a stopping node
// serves its last calls, then sends their statistics to a monitor still
// up, through a consumer still open, to a registry still there.
func Run(ctx context.Context, cfg *config.File, roles []string, opts Options) error {
	replicas := max(opts.Replicas, 1)
	logger := opts.Logger
	// dubbo up runs the registry with the other roles; dubbo run one role.
	n := &node{log: logger, term: newTerminal(opts.Out), errc: make(chan error, 8), pluginStart: opts.PluginStart,
		version: opts.Version, together: len(roles) > 1}
	if opts.Swap || opts.Build {
		n.watch = watch.DefaultEvery
	}
	// Plugins and background loops live until the node stops.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		cancelRun()
		n.plugins.Wait()
	}()
	if opts.Build {
		n.buildPlugins(runCtx, cfg, roles)
	}
	if err := checkPlugins(cfg, roles); err != nil {
		return err
	}
	has := func(role string) bool { return slices.Contains(roles, role) }
	n.startObserving(cfg)
	steps := []struct {
		run  bool
		step func() error
	}{
		{has(Registry), func() error { return n.startRegistry(runCtx, cfg) }},
		{true, func() error { n.onStop("node consumer", n.closeConsumer); return nil }},
		{has(Monitor), func() error { return n.startMonitor(runCtx, cfg) }},
		{has(Provider) || has(Consumer), func() error { return n.startReporting(runCtx, cfg) }},
		{has(Provider), func() error { return n.startProviders(runCtx, cfg, replicas) }},
		{has(Consumer), func() error { return n.startConsumer(runCtx, cfg) }},
	}
	var startErr error
	for _, s := range steps {
		if s.run {
			if startErr = s.step(); startErr != nil {
				break
			}
		}
	}
	if startErr == nil {
		n.awaitPlugins(ctx)
		if ctx.Err() == nil {
			n.started.Store(true)
			n.sayReady()
			n.plugins.Go(func() { n.watchProviders(runCtx) })
		}
		select {
		case <-ctx.Done():
			logger.Info("shutting down")
		case startErr = <-n.errc:
		}
	}
	n.term.setReady(false) // what stopping changes is not news
	stopCtx, cancel := context.WithTimeout(context.Background(), cfg.Provider.ShutdownTimeout+report.CloseTimeout+5*time.Second)
	defer cancel()
	n.stop(stopCtx)
	return startErr
}

func (n *node) startRegistry(ctx context.Context, cfg *config.File) error {
	listen := cfg.Registry.Server.Listen
	if listen == "" {
		return errors.New(`registry: registry.server.listen is "" (no embedded registry); give it an address to run the registry role`)
	}
	srv, err := embeddedzk.New(cfg.Registry.Server, n.log.With("role", Registry))
	if err != nil {
		return inUse(fmt.Errorf("registry: %w", err), Registry, listen,
			fmt.Sprintf(`set registry.server.listen to a free address; or, if a ZooKeeper already runs there, use it: registry.address = "zookeeper://%s" and registry.server.listen = "" (dubbo up then starts no registry of its own)`, listen))
	}
	n.gatherer.MustRegister(srv.Collector())
	go func() {
		if err := srv.Serve(ctx); err != nil {
			n.errc <- fmt.Errorf("registry: %w", err)
		}
	}()
	n.onStop(Registry, func(context.Context) error { return srv.Close() })
	n.term.line("registry   zookeeper://%s   data %s", srv.Addr(), cfg.Registry.Server.DataDir)
	return nil
}

// startProviders starts replicas providers on consecutive ports, each with
// its own process of every configured plugin, exporting what the plugin
// says it serves for as long as the plugin is up.
func (n *node) startProviders(ctx context.Context, cfg *config.File, replicas int) error {
	if len(cfg.Provider.Plugins) == 0 {
		return errors.New("provider: no plugins configured (provider.plugins = [\"path/to/handler\"])")
	}
	for _, w := range cfg.Warnings {
		n.log.Warn(w)
	}
	for i := 0; i < replicas; i++ {
		pc := cfg.Provider.Config
		if replicas > 1 {
			pc = pc.Replica(i)
		}
		log := n.log.With("role", Provider, "replica", i+1)
		p, err := provider.Start(ctx, pc, provider.Options{Logger: log, RegistryStats: n.regStats, Ready: n.isReady})
		if err != nil {
			err = fmt.Errorf("provider %d: %w", i+1, err)
			if le := (*provider.ListenError)(nil); errors.As(err, &le) {
				err = inUse(err, fmt.Sprintf("provider %d", i+1), le.Addr,
					fmt.Sprintf("set %s.port to a free port (replicas take the ports after it), or -1 for any free port", le.Key))
			}
			return err
		}
		n.onStop(fmt.Sprintf("provider %d", i+1), func(stopCtx context.Context) error { return p.Shutdown(stopCtx) })
		n.addProvider(p, cfg.Application.Name)
		var where []string
		for _, ep := range p.Endpoints() {
			w := ep.URL()
			if b := ep.Bound.String(); b != ep.Addr {
				w += "   bound " + b
			}
			where = append(where, w)
		}
		n.term.line("provider   %s   plugins %v", strings.Join(where, "   "), cfg.Provider.Plugins)
		for _, path := range cfg.Provider.Plugins {
			n.superviseProviderPlugin(ctx, p, fmt.Sprintf("provider %d", i+1), path, log, n.hostInvoker(ctx, cfg))
		}
	}
	return nil
}

func (n *node) superviseProviderPlugin(ctx context.Context, p *provider.Provider, where, path string, log *slog.Logger, host rpc.Invoker) {
	ex := &pluginExports{ctx: ctx, p: p, log: log, plugin: filepath.Base(path)}
	n.supervise(ctx, where, n.newSupervisor(ctx, where, path, log, host, ex), log)
}

// newSupervisor is the supervisor of the plugin at path serving the role
// where: it keeps ex (nil for a consumer plugin) in step with what the
// plugin serves, and reports its changes on the terminal.
func (n *node) newSupervisor(ctx context.Context, where, path string, log *slog.Logger, host rpc.Invoker, ex *pluginExports) *plugins.Supervisor {
	name := filepath.Base(path)
	var sup *plugins.Supervisor // set before Run, so before a callback can fire
	export := func(services []plugins.ServiceDesc) exportChanges {
		if ex == nil {
			return exportChanges{}
		}
		return ex.up(services, sup)
	}
	sup = plugins.NewSupervisor(plugins.SupervisorConfig{
		Config: plugins.Config{Path: path, Name: name, Logger: log, Host: host, StartTimeout: n.pluginStart},
		Watch:  n.watch,
		OnUp: func(p *plugins.Plugin, services []plugins.ServiceDesc) {
			export(services)
			n.term.pluginUp(name, where, p)
		},
		OnDown: func(_ *plugins.Plugin, err error) {
			if ex != nil {
				ex.down(err)
			}
			if ctx.Err() == nil {
				n.term.pluginDown(name, where, err)
			}
		},
		OnSwap: func(prev, next *plugins.Plugin, services []plugins.ServiceDesc) {
			n.term.swapped(name, where, prev, next, export(services))
		},
		OnRefused: func(prev *plugins.Plugin, err error, attempt int, _ time.Duration) {
			if attempt == 1 { // retried with backoff: said once
				n.term.refused(name, where, prev, err)
			}
		},
	})
	return sup
}

// exporter is the provider as a plugin's services see it.
type exporter interface {
	Export(ctx context.Context, svc provider.Service) error
	Unexport(ctx context.Context, iface, version, group string) error
}

// pluginExports keeps a provider's exports in step with one plugin: what
// the plugin says it serves is exported while it is up, and unexported
// (so unregistered) while it is down. When a new build takes over, only
// what changed is exported again, in place, and what it no longer serves
// is unexported; the rest stays as it is (its calls go to the supervisor,
// which follows the swap).
type pluginExports struct {
	ctx    context.Context // the node's run context: it ends when the node stops
	p      exporter
	log    *slog.Logger
	plugin string

	mu       sync.Mutex
	exported []plugins.ServiceDesc
}

// exportChanges say what an up changed in the exports, by service key.
type exportChanges struct {
	added, changed, removed []string
}

// up makes the exports what the plugin serves now (services, whose calls
// go to pl, the plugin's supervisor): it exports what is new or changed
// and unexports what is gone. One that fails is logged and left as it was;
// the others are served.
func (e *pluginExports) up(services []plugins.ServiceDesc, pl pluginsvc.Plugin) exportChanges {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ch exportChanges
	var now []plugins.ServiceDesc
	for _, sd := range services {
		i := slices.IndexFunc(e.exported, func(x plugins.ServiceDesc) bool { return x.Key() == sd.Key() })
		if i >= 0 && e.exported[i].Same(sd) {
			now = append(now, e.exported[i])
			continue
		}
		if err := e.p.Export(e.ctx, pluginsvc.Service(sd, pl)); err != nil {
			e.log.Error("export plugin service", "plugin", e.plugin, "service", sd.Key(), "err", err)
			if i >= 0 {
				now = append(now, e.exported[i]) // still exported as it was
			}
			continue
		}
		now = append(now, sd)
		if i >= 0 {
			ch.changed = append(ch.changed, sd.Key())
		} else {
			ch.added = append(ch.added, sd.Key())
		}
	}
	for _, old := range e.exported {
		if slices.ContainsFunc(now, func(x plugins.ServiceDesc) bool { return x.Key() == old.Key() }) {
			continue
		}
		if err := e.p.Unexport(e.ctx, old.Interface, old.Version, old.Group); err != nil {
			e.log.Warn("unexport plugin service", "plugin", e.plugin, "service", old.Key(), "err", err)
		}
		ch.removed = append(ch.removed, old.Key())
	}
	e.exported = now
	return ch
}

// down unexports what up exported. When the node is stopping it does
// nothing: the provider's Shutdown unregisters everything in its order.
func (e *pluginExports) down(err error) {
	if e.ctx.Err() != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sd := range e.exported {
		if uerr := e.p.Unexport(context.WithoutCancel(e.ctx), sd.Interface, sd.Version, sd.Group); uerr != nil {
			e.log.Warn("unexport plugin service", "plugin", e.plugin, "service", sd.Key(), "err", uerr)
		}
	}
	e.exported = nil
	e.log.Warn("plugin down; its services are unregistered until it is back", "plugin", e.plugin, "err", err)
}

// startConsumer starts the consumer with its references, the HTTP/JSON
// gateway and the consumer-side plugins, whose calls go through it. A
// reference with check = true and no provider stops a consumer of its own,
// as in Dubbo; in dubbo up it is a warning, so that the environment keeps
// running while its providers change (a new handler serving something
// else, a plugin being rebuilt).
func (n *node) startConsumer(ctx context.Context, cfg *config.File) error {
	log := n.log.With("role", Consumer)
	cons, err := n.consumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	if err := cons.Start(ctx); err != nil {
		var missing *consumer.CheckError
		if !n.together || !errors.As(err, &missing) {
			return fmt.Errorf("consumer: %w", err)
		}
		log.Warn("no provider for these references yet; their calls fail with no_provider until one registers",
			"references", missing.Services)
	}
	if gcfg := cfg.Consumer.Gateway; gcfg.Listen != "" {
		gw := gateway.New(gateway.Options{Listen: gcfg.Listen, Token: gcfg.Token, Hosts: gcfg.Hosts,
			Invoker: cons, Types: cons, Logger: log})
		if err := gw.Start(); err != nil {
			return inUse(fmt.Errorf("consumer gateway: %w", err), "consumer gateway", gcfg.Listen,
				`set consumer.gateway.listen to a free address, or "" to run no gateway`)
		}
		n.onStop("gateway", gw.Shutdown)
		n.term.line("gateway    http://%s/invoke/<interface>/<method>", gw.Addr())
	}
	for _, path := range cfg.Consumer.Plugins {
		name := filepath.Base(path)
		// Consumer plugins stop before the consumer closes, so their last
		// calls still have somewhere to go.
		pctx, cancel := context.WithCancel(ctx)
		done := n.supervise(pctx, Consumer, n.newSupervisor(pctx, Consumer, path, log, cons, nil), log)
		n.onStop("consumer plugin "+name, func(stopCtx context.Context) error {
			cancel()
			select {
			case <-done:
			case <-stopCtx.Done():
			}
			return nil
		})
		n.term.line("consumer   plugin %s", name)
	}
	return nil
}
