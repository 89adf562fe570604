// Package provider is the provider role: it serves in-process services and
// handler plugins' services over the dubbo protocol and over Triple
// (tri://, gRPC-compatible), and publishes them in the registry the way
// Apache Dubbo 3 does, so Java, dubbo-go, gRPC clients and our own
// consumers find and call them.
//
// Start opens one server per configured protocol ([protocol] and
// [protocols.<name>]: protocols.go, servers.go) and the registry session;
// Export adds a [Service] (and Unexport removes it) while the provider
// runs, because handler plugins come and go. A service is served on every
// protocol that can carry it (a protobuf service on tri only) unless its
// [[provider.services]] table names its protocols. For every exported
// service the provider
//
//   - registers its provider URL on each protocol (dubbo://, tri://) under
//     /dubbo/<interface>/providers (register mode interface or all);
//   - registers the application instance under /services/<app>, with
//     every protocol's port in dubbo.endpoints, the interface →
//     application mapping and the service definition (register mode
//     instance or all), and serves Dubbo's MetadataService, on every
//     protocol, so a Dubbo 3 consumer in application-first mode can read
//     the MetadataInfo;
//   - follows the override rules meant for it (/dubbo/<interface>/configurators,
//     <app>.configurators, <interface>:<version>:<group>.configurators) and
//     re-publishes its URLs when they change them (configurators.go).
//
// A service's settings ([[provider.services]], a plugin's sdk.Settings:
// weight, dubbo.tag, timeout, ...) go into its URLs as Java's ServiceConfig
// writes them (service.go, settings.go); the provider itself enforces
// token, executes (executes.go), delay (Export) and onconnect/ondisconnect
// (events.go), and resizes its pool when a rule sets threads.
//
// dubbo:// requests are routed like Java's DubboProtocol (handler.go): by
// path, version and group attachments, with the token check, $echo and
// generic $invoke handled here before the service's Invoker runs. Triple
// calls are routed by :path and the tri-service-version and
// tri-service-group headers (triple.go) to a protobuf service's rpc
// (triple_proto.go), to a Java-interface service in Dubbo's wrapper mode
// (triple_wrapper.go), or to gRPC's health and reflection services
// (triple_grpc.go); every protocol's calls share the business pool,
// executes and the statistics. Shutdown is Dubbo's graceful shutdown:
// unregister everything first, then tell consumers the servers are going
// (read-only event, GOAWAY) and let in-flight calls finish, then close.
package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/dispatch"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/transport"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Register modes (Dubbo 3's register-mode).
const (
	RegisterInterface = "interface"
	RegisterInstance  = "instance"
	RegisterAll       = "all"
)

// Defaults that are not Dubbo's transport defaults (those live in transport
// and dispatch).
// registryConnectWait bounds how long Start waits for the registry's
// first session (Curator's default connection timeout in Java Dubbo).
const registryConnectWait = 30 * time.Second

const (
	DefaultShutdownTimeout = 10 * time.Second
	DefaultApplication     = "dubbo-app"
)

// Config is the provider role's configuration. The zero value is valid and
// means Dubbo's defaults.
type Config struct {
	// Application is the Dubbo application name. Default "dubbo-app".
	// In dubbo.toml it comes from [application] name.
	Application string `koanf:"-"`
	// Registry is the registry URL (zookeeper://host:port[,host:port]).
	// Default "": no registry; consumers must use direct URLs. In
	// dubbo.toml it comes from [registry] address.
	Registry string `koanf:"-"`
	// RegisterMode is interface, instance or all. Default all (Dubbo 3):
	// both the /dubbo/<interface>/providers URLs and the /services/<app>
	// instance with its mapping and metadata.
	RegisterMode string `koanf:"register-mode"`
	// Protocol is the main protocol's server and the business pool; in
	// dubbo.toml the [protocol] section.
	Protocol ProtocolConfig `koanf:"-"`
	// Protocols are more protocols to serve; in dubbo.toml the
	// [protocols.dubbo] and [protocols.tri] tables.
	Protocols Protocols `koanf:"-"`
	// Token makes callers present a token: "true" or "default" means a
	// random UUID per service (published in the provider URL), any other
	// value is used as is. Default "": no token.
	Token string `koanf:"token"`
	// Weight is the load-balancing weight written in every provider URL
	// whose service sets none; 0 gives them no calls while others have
	// weight. Default: not written, so consumers use Dubbo's 100.
	Weight *int `koanf:"weight"`
	// Services are settings of exported services, matched by interface
	// (and version and group when given); the most specific table wins,
	// and its values win over the service's own (a plugin's). In
	// dubbo.toml [[provider.services]].
	Services []ServiceConfig `koanf:"services"`
	// ShutdownTimeout bounds how long Shutdown waits for in-flight calls.
	// Default 10s (Dubbo's shutdown.timeout).
	ShutdownTimeout time.Duration `koanf:"shutdown-timeout"`
}

// Validate reports the first setting that is wrong, naming its key as
// dubbo.toml spells it (protocol.dispatcher, provider.services[0].weight),
// with the values it may take.
func (c Config) Validate() error {
	switch c.RegisterMode {
	case "", RegisterInterface, RegisterInstance, RegisterAll:
	default:
		return fmt.Errorf("provider.register-mode: %q: use interface, instance or all", c.RegisterMode)
	}
	if c.Weight != nil && *c.Weight < 0 {
		return fmt.Errorf("provider.weight: %d is negative", *c.Weight)
	}
	if err := c.validateProtocols(); err != nil {
		return err
	}
	seen := map[string]int{}
	for i := range c.Services {
		s := &c.Services[i]
		key := fmt.Sprintf("provider.services[%d]", i)
		if err := s.validate(key, c.served()); err != nil {
			return err
		}
		id := url.ServiceKey(s.Interface, s.Version, s.Group)
		if j, dup := seen[id]; dup {
			return fmt.Errorf("%s.interface: %s (version %q, group %q) has settings in provider.services[%d] already", key, s.Interface, s.Version, s.Group, j)
		}
		seen[id] = i
	}
	return nil
}

func (c Config) withDefaults() (Config, error) {
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("provider: %w", err)
	}
	if c.Application == "" {
		c.Application = DefaultApplication
	}
	if c.RegisterMode == "" {
		c.RegisterMode = RegisterAll
	}
	if c.Protocol.Port == 0 {
		c.Protocol.Port = defaultPort(c.Protocol.name())
	}
	if c.Protocol.Heartbeat <= 0 {
		c.Protocol.Heartbeat = transport.DefaultHeartbeat
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	return c, nil
}

// Registry is what the provider needs from an interface-level registry.
type Registry interface {
	Register(ctx context.Context, u *url.URL) error
	Unregister(ctx context.Context, u *url.URL) error
}

// Options are the parts of a provider that do not come from the config file.
type Options struct {
	// Registry, if set, is used instead of connecting to Config.Registry;
	// the provider does not close it. If it also implements
	// registry.InstanceRegistry, instances are registered too.
	Registry Registry
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// NoStatistics turns call counting off (Stats returns nil), as for a
	// monitor's own MonitorService, whose calls Dubbo does not count.
	NoStatistics bool
	// RegistryStats, if set, counts the provider's registrations (Dubbo
	// 3's dubbo_registry_register_requests_* metrics).
	RegistryStats *stats.RegistryStats
	// Ready, if set, is the node's readiness (its QoS ready probe), which
	// the Triple port's health service reports for the whole server ("").
	// Default: ready from Start until Shutdown.
	Ready func() bool
}

// Provider is a running provider. Its methods are safe for concurrent use.
type Provider struct {
	cfg        Config
	log        *slog.Logger
	servers    []*server // the protocols served, [protocol]'s first
	dubbo      *server   // the dubbo one, nil when none
	pool       *dispatch.Pool
	poolBase   int // the pool's size as configured, when no rule sets threads
	disp       *dispatch.Dispatcher
	rec        *stats.Recorder // nil: no statistics
	peers      peerIPs
	regStats   *stats.RegistryStats // nil: not counted
	reg        Registry
	instReg    registry.InstanceRegistry // nil: no application-level registration
	ownsReg    func() error              // closes a registry we created
	metadata   *metadataService
	conf       *configurators // nil: the registry offers no override rules
	health     *health        // what the Triple port's grpc.health.v1 reports
	reflection reflectionServers
	routes     atomic.Pointer[tripleRoutes]

	// regMu serialises registry work (export, unexport, shutdown) so that
	// the instance node always reflects the last exported set.
	regMu sync.Mutex
	// offline holds the service keys the QoS offline command withdrew;
	// regMu guards it.
	offline map[string]bool
	// delayed are the exports waiting for their delay, by service key;
	// regMu guards it.
	delayed map[string]*delayedExport

	mu        sync.RWMutex
	exporters map[string]*exporter // by service key
	async     atomic.Int32         // exporters whose invoker is an AsyncInvoker
	shutdown  bool
}

// Start opens the servers of the configured protocols and, when a
// registry is configured, the registry session. Services are added with
// Export. A start that fails undoes the steps it had taken.
func Start(ctx context.Context, cfg Config, opts Options) (_ *Provider, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	p := &Provider{cfg: cfg, log: opts.Logger, exporters: make(map[string]*exporter), offline: map[string]bool{}, delayed: map[string]*delayedExport{}, regStats: opts.RegistryStats}
	if p.log == nil {
		p.log = slog.Default()
	}
	var undo unwind
	defer func() {
		if err != nil {
			undo.run()
		}
	}()

	for _, pc := range cfg.served() {
		s, err := p.listen(pc)
		if err != nil {
			return nil, err
		}
		p.servers = append(p.servers, s)
		undo.add(func() { s.ln.Close() })
	}
	p.dubbo = p.serverOf(ProtocolDubbo)
	if !opts.NoStatistics {
		p.rec = stats.NewRecorder(stats.Config{Side: stats.Provider, Application: cfg.Application, Host: p.main().host, Port: p.main().port})
	}
	if err := p.startPool(); err != nil {
		return nil, err
	}
	undo.add(func() { p.closePool() })
	p.metadata = newMetadataService(p)
	p.health = newHealth(opts.Ready)
	p.reflection = p.newReflection()
	p.routes.Store(&tripleRoutes{})
	p.mu.Lock()
	p.reroute()
	p.mu.Unlock()
	for _, s := range p.servers {
		if err := p.startServer(s); err != nil {
			return nil, err
		}
		undo.add(s.close)
	}
	if err := p.connectRegistry(ctx, opts); err != nil {
		return nil, err
	}
	if p.ownsReg != nil {
		undo.add(func() { p.ownsReg() })
	}
	p.log = p.log.With("provider", p.Addr(), "application", cfg.Application)
	if p.reg != nil {
		if err := p.startConfigurators(ctx); err != nil {
			return nil, err
		}
	}
	p.log.Info("provider started", "protocols", p.Endpoints(), "registry", url.Redact(cfg.Registry), "register_mode", cfg.RegisterMode)
	return p, nil
}

// unwind is the undo list of a start: each step that succeeds adds how to
// undo it, and a start that fails runs them, last first.
type unwind []func()

func (u *unwind) add(f func()) { *u = append(*u, f) }

func (u unwind) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// startPool makes the business pool and the dispatcher in front of it.
func (p *Provider) startPool() error {
	pc := p.cfg.Protocol
	pool, err := dispatch.NewPool(dispatch.PoolConfig{
		Type: pc.ThreadPool, Threads: pc.Threads, Queues: pc.Queues,
		Name: "DubboServerHandler-" + p.Addr(), Where: "dubbo://" + p.Addr(),
	})
	if err != nil {
		return fmt.Errorf("provider %s: %w", p.cfg.Application, err)
	}
	disp, err := dispatch.NewDispatcher(pc.Dispatcher, pool)
	if err != nil {
		pool.Close()
		return fmt.Errorf("provider %s: %w", p.cfg.Application, err)
	}
	p.pool, p.poolBase, p.disp = pool, pool.Stats().Max, disp
	return nil
}

// connectRegistry opens the configured registry unless opts gives one.
func (p *Provider) connectRegistry(ctx context.Context, opts Options) error {
	p.reg = opts.Registry
	if p.reg == nil && p.cfg.Registry != "" {
		// Bounded, so a provider pointed at a dead registry fails its start
		// with a message instead of hanging.
		zr, err := zookeeper.Open(ctx, p.cfg.Registry, registryConnectWait, zookeeper.Options{Logger: p.log})
		if err != nil {
			return fmt.Errorf("provider %s: %w", p.cfg.Application, err)
		}
		p.reg, p.ownsReg = zr, zr.Close
	}
	if ir, ok := p.reg.(registry.InstanceRegistry); ok && p.cfg.RegisterMode != RegisterInterface {
		p.instReg = ir
	}
	return nil
}

// register registers u, counting the attempt.
func (p *Provider) register(ctx context.Context, u *url.URL) error {
	err := p.reg.Register(ctx, u)
	if p.regStats != nil {
		p.regStats.Registered(err)
	}
	return err
}

// Addr is the registered host:port of the main protocol's server
// ([protocol]), the address consumers dial and the instance's id: the
// bound one unless protocol.registry-host and registry-port (or Dubbo's
// DUBBO_IP_TO_REGISTRY and DUBBO_PORT_TO_REGISTRY) say otherwise.
// Endpoints lists every protocol's.
func (p *Provider) Addr() string { return p.main().addr() }

// Port is the main protocol's registered port.
func (p *Provider) Port() int { return p.main().port }

// BindAddr is the address the main protocol's server listens on.
func (p *Provider) BindAddr() net.Addr { return p.main().bound }

// Stats returns the provider's call statistics (per service, method and
// consumer IP, for the monitor and Prometheus); nil with
// Options.NoStatistics.
func (p *Provider) Stats() *stats.Recorder { return p.rec }

// Server returns the dubbo server, for its connection statistics; nil
// when the provider does not serve dubbo.
func (p *Provider) Server() *transport.Server {
	if s := p.serverOf(ProtocolDubbo); s != nil {
		return s.dubbo
	}
	return nil
}

// PoolStats are the business pool's, which every protocol's calls use.
func (p *Provider) PoolStats() dispatch.PoolStats { return p.pool.Stats() }

// URLs lists the provider URLs of the exported services as published,
// sorted: with the override rules applied, and without the services a rule
// disabled.
func (p *Provider) URLs() []*url.URL {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]*url.URL, 0, len(p.exporters))
	for _, e := range p.exporters {
		out = append(out, e.publishedURLs()...)
	}
	sortURLs(out)
	return out
}

// ErrShutdown is returned by Export after Shutdown or Close.
var ErrShutdown = errors.New("provider is shutting down")

// Export starts serving svc and publishes it in the registry. Exporting a
// service key that is already exported replaces it in place (a plugin
// swapped for one with other methods or settings): its new URLs are
// registered before the old ones are removed, so consumers never see it
// without a provider.
// A registry that cannot be reached is reported but the service is served;
// the registry retries the registration when it comes back. A service
// whose settings say delay is exported that long later, as Java's
// ServiceConfig delays its export: until then it is neither served nor
// registered, and Export returns at once.
func (p *Provider) Export(ctx context.Context, svc Service) error {
	e, err := p.newExporter(svc)
	if err != nil {
		return err
	}
	p.regMu.Lock()
	defer p.regMu.Unlock()
	p.mu.RLock()
	down := p.shutdown
	p.mu.RUnlock()
	if down {
		return fmt.Errorf("export %s: %w", e.key, ErrShutdown)
	}
	p.cancelDelayed(e.key)
	if e.delay > 0 {
		p.delayed[e.key] = &delayedExport{e: e, at: time.Now().Add(e.delay),
			timer: time.AfterFunc(e.delay, func() { p.exportDelayed(e) })}
		p.log.Info("service export delayed", "service", e.key, "delay", e.delay)
		return nil
	}
	return p.export(ctx, e)
}

// delayedExport is a service waiting for its delay.
type delayedExport struct {
	e     *exporter
	at    time.Time
	timer *time.Timer
}

// cancelDelayed forgets a delayed export of key, if any. regMu is held.
func (p *Provider) cancelDelayed(key string) bool {
	d := p.delayed[key]
	if d == nil {
		return false
	}
	d.timer.Stop()
	delete(p.delayed, key)
	return true
}

// exportDelayed exports e once its delay has passed, unless it was
// replaced, unexported or the provider stopped meanwhile.
func (p *Provider) exportDelayed(e *exporter) {
	ctx, cancel := context.WithTimeout(context.Background(), reconfigureTimeout)
	defer cancel()
	p.regMu.Lock()
	defer p.regMu.Unlock()
	if d := p.delayed[e.key]; d == nil || d.e != e {
		return
	}
	delete(p.delayed, e.key)
	if err := p.export(ctx, e); err != nil && !errors.Is(err, ErrShutdown) {
		p.log.Warn("delayed export", "service", e.key, "err", err)
	}
}

// export serves e and publishes it. regMu is held.
func (p *Provider) export(ctx context.Context, e *exporter) error {
	svc := e.svc
	var errs []error
	// The rules arrive with the watches, so the first registration already
	// carries them.
	if err := p.watchService(ctx, e); err != nil {
		errs = append(errs, err)
	}
	for _, ep := range e.eps {
		ep.published = p.configuredURL(e, ep)
		ep.setLimits(ep.published)
		p.resizePool(ep.url, ep.published)
	}
	p.mu.Lock()
	if p.shutdown {
		p.mu.Unlock()
		return fmt.Errorf("export %s: %w", e.key, ErrShutdown)
	}
	old := p.exporters[e.key]
	p.exporters[e.key] = e
	p.async.Add(asyncCount(e) - asyncCount(old))
	p.reroute()
	p.mu.Unlock()

	if p.reg != nil && p.cfg.RegisterMode != RegisterInstance {
		// The new URLs first, then the old ones go: a service replaced in
		// place (a plugin swapped for one with other methods or settings)
		// never has zero providers.
		for _, u := range e.publishedURLs() {
			if err := p.register(ctx, u); err != nil {
				errs = append(errs, fmt.Errorf("register %s: %w", e.key, err))
			}
		}
		for _, u := range old.publishedURLs() {
			if !slices.ContainsFunc(e.publishedURLs(), u.Equal) {
				if err := p.reg.Unregister(ctx, u); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if p.instReg != nil {
		if err := p.instReg.AddMapping(ctx, svc.Interface, p.cfg.Application); err != nil {
			errs = append(errs, fmt.Errorf("mapping %s: %w", svc.Interface, err))
		}
		if err := p.instReg.PublishServiceDefinition(ctx, svc.Interface, svc.Version, svc.Group, p.cfg.Application, e.definition()); err != nil {
			errs = append(errs, err)
		}
	}
	if err := p.refreshInstance(ctx); err != nil {
		errs = append(errs, err)
	}
	p.health.changed()
	p.log.Info("service exported", "service", e.key, "methods", len(svc.Methods), "protocols", e.protocols())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("export %s: %w", e.key, err)
	}
	return nil
}

// Unexport stops serving the service and removes it from the registry.
// Calls in flight finish; new ones get "not found".
func (p *Provider) Unexport(ctx context.Context, iface, version, group string) error {
	key := url.ServiceKey(iface, version, group)
	p.regMu.Lock()
	defer p.regMu.Unlock()
	delayed := p.cancelDelayed(key)
	p.mu.Lock()
	e := p.exporters[key]
	delete(p.exporters, key)
	p.async.Add(-asyncCount(e))
	p.reroute()
	p.mu.Unlock()
	if e == nil {
		if delayed {
			return nil
		}
		return fmt.Errorf("unexport %s: not exported; exported are %v", key, p.keys())
	}
	var errs []error
	if err := p.unwatchService(ctx, key); err != nil {
		errs = append(errs, err)
	}
	if p.reg != nil && p.cfg.RegisterMode != RegisterInstance {
		for _, u := range e.publishedURLs() {
			if err := p.reg.Unregister(ctx, u); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := p.refreshInstance(ctx); err != nil {
		errs = append(errs, err)
	}
	p.health.changed()
	p.log.Info("service unexported", "service", key)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("unexport %s: %w", key, err)
	}
	return nil
}

// refreshInstance recomputes the MetadataInfo and registers the instance
// with its new revision (in place when the registry can), or removes it
// when nothing is exported.
// regMu is held.
func (p *Provider) refreshInstance(ctx context.Context) error {
	urls := p.URLs()
	info := metadata.NewInfo(p.cfg.Application, urls)
	p.metadata.set(info)
	if p.instReg == nil {
		return nil
	}
	id := p.Addr()
	if len(urls) == 0 {
		return p.instReg.UnregisterInstance(ctx, p.cfg.Application, id)
	}
	eps := make([]metadata.Endpoint, len(p.servers))
	for i, s := range p.servers {
		eps[i] = metadata.Endpoint{Port: s.port, Protocol: s.cfg.Name}
	}
	in, err := metadata.NewInstance(metadata.InstanceSpec{
		App:                   p.cfg.Application,
		Host:                  p.main().host,
		Port:                  p.main().port,
		Endpoints:             eps,
		Revision:              info.Revision,
		MetadataServiceParams: p.metadataServiceParams(),
		Metadata:              map[string]string{metadata.KeyTimestamp: strconv.FormatInt(time.Now().UnixMilli(), 10)},
		TimeMillis:            time.Now().UnixMilli(),
	})
	if err != nil {
		return err
	}
	if u, ok := p.instReg.(instanceUpdater); ok {
		return u.UpdateInstance(ctx, in)
	}
	return p.instReg.RegisterInstance(ctx, in)
}

// instanceUpdater is a registry that updates a registered instance in
// place (the ZooKeeper one, as Java's does on a new metadata revision):
// the instance of a provider whose exports changed never leaves the
// registry, so application-level consumers never see it gone.
type instanceUpdater interface {
	UpdateInstance(ctx context.Context, in *metadata.Instance) error
}

// Shutdown is Dubbo's graceful shutdown (the SIGTERM path): unregister
// every URL and the instance first, so consumers stop choosing this
// provider, and report NOT_SERVING on the Triple port's health service;
// then send the read-only event (dubbo) and GOAWAY (tri) and let
// in-flight calls finish for up to ShutdownTimeout (or ctx); then close
// the servers and the registry session. It returns the first error but
// always finishes.
func (p *Provider) Shutdown(ctx context.Context) error {
	// Rules stop first: their goroutine takes regMu.
	confErr := p.stopConfigurators(ctx)
	p.regMu.Lock()
	for key := range p.delayed {
		p.cancelDelayed(key)
	}
	p.mu.Lock()
	already := p.shutdown
	p.shutdown = true
	var urls []*url.URL
	for _, e := range p.exporters {
		urls = append(urls, e.publishedURLs()...)
	}
	p.mu.Unlock()
	p.health.changed() // NOT_SERVING from here on
	if already {
		p.regMu.Unlock()
		return nil
	}
	var errs []error
	if confErr != nil {
		errs = append(errs, confErr)
	}
	if p.reg != nil && p.cfg.RegisterMode != RegisterInstance {
		for _, u := range urls {
			if err := p.reg.Unregister(ctx, u); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if p.instReg != nil && len(urls) > 0 {
		if err := p.instReg.UnregisterInstance(ctx, p.cfg.Application, p.Addr()); err != nil {
			errs = append(errs, err)
		}
	}
	p.regMu.Unlock()

	sctx, cancel := context.WithTimeout(ctx, p.cfg.ShutdownTimeout)
	defer cancel()
	if err := p.shutdownServers(sctx); err != nil {
		errs = append(errs, err)
	}
	if err := p.closePool(); err != nil {
		errs = append(errs, err)
	}
	if p.ownsReg != nil {
		errs = append(errs, p.ownsReg())
	}
	p.log.Info("provider shut down")
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("provider %s shutdown: %w", p.Addr(), err)
	}
	return nil
}

// Close stops at once: connections are closed, calls in flight are lost,
// and the registry session ends (its ephemeral nodes go with it).
func (p *Provider) Close() error {
	p.mu.Lock()
	already := p.shutdown
	p.shutdown = true
	p.mu.Unlock()
	if already {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	p.stopConfigurators(ctx) // only forgets watches; the session may be ours to close anyway
	cancel()
	p.regMu.Lock()
	for key := range p.delayed {
		p.cancelDelayed(key)
	}
	p.regMu.Unlock()
	for _, s := range p.servers {
		s.close()
	}
	p.closePool()
	if p.ownsReg != nil {
		return p.ownsReg()
	}
	return nil
}

func (p *Provider) closePool() error {
	p.disp.Close()
	p.pool.Close()
	return nil
}

func (p *Provider) keys() []string { return p.keysOn(nil) }

// keysOn lists the keys of the services served on s (nil: on any).
func (p *Provider) keysOn(s *server) []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]string, 0, len(p.exporters))
	for k, e := range p.exporters {
		if s == nil || e.endpoint(s) != nil {
			out = append(out, k)
		}
	}
	sortStrings(out)
	return out
}

var _ transport.Handler = (*Provider)(nil)

// protocolVersion is what we write in the dubbo URL parameter.
const protocolVersion = protocol.DubboVersion
