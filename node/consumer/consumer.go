// Package consumer is the consumer role: it calls Dubbo services, ours or
// Java's or dubbo-go's, found in the registry or at a direct URL.
//
// A [Reference] is one referenced service. Through the registry it is a
// subscription to the service's providers, routers and configurators plus
// the config-center rules (<interface>:<version>:<group>.condition-router
// and .affinity-router, <app>.condition-router, the provider application's
// tag-router, affinity-router and script-router, which is not applied but
// logged, and the .configurators documents), feeding a dynamic directory
// of provider invokers; each call then goes through the routers, the load balancer and
// the cluster strategy (package cluster). Alongside, as Dubbo 3's
// APPLICATION_FIRST migration step, it follows the provider applications
// named in /dubbo/mapping/<interface>, their instances under /services and
// each instance's MetadataInfo, so that providers registered only at
// application level (dubbo-go's default) are found too (discovery.go).
// With a direct url the directory is that one provider.
//
// Providers are called over their URL's protocol (protocols.go): dubbo://
// through transport.Client, tri:// (Triple) through node/triple/client; a
// reference may be limited to one protocol (ReferenceConfig.Protocol).
// Provider invokers share one client per provider address and protocol
// across references, and a client whose connection closes leaves the
// candidate list at once, before the registry notices. Streams of
// protobuf methods (Stream) go to one provider, picked as a call's first
// attempt is; ProtoService gives a service's protobuf descriptor, asked of
// a tri:// provider with gRPC server reflection and kept by the reference
// (schema.go), for calls given in JSON (package jsoncall).
//
// [Consumer] holds the references: those of the config are created by
// Start and those asked for with Reference stay until Close; calls to other
// services through Invoke and Generic (the generic client API that the HTTP
// gateway and plugins use) make on-demand references (ondemand.go), which
// anyone can name, so they are bounded: a service no provider offers costs
// registry reads but no reference and no registry write, an on-demand
// reference is released when idle, and there are at most
// Config.OnDemand.Max of them. Generic sends Dubbo's $invoke with Java type
// names, which it reads from the service definition in the registry's
// metadata report when the caller has none.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/url"
)

// DefaultApplication is the application name when none is configured.
const DefaultApplication = "dubbo-app"

// Config is the consumer role's configuration. Settings left zero take the
// provider's value, else Dubbo's default.
type Config struct {
	// Application is the Dubbo application name. Default "dubbo-app".
	// In dubbo.toml it comes from [application] name.
	Application string `koanf:"-"`
	// Registry is the registry URL (zookeeper://host:port[,host:port]).
	// Default "": none; every reference needs a url. In dubbo.toml it
	// comes from [registry] address.
	Registry string `koanf:"-"`
	// CacheFile keeps the last provider lists, so the consumer starts while
	// the registry is down. Default "": no file.
	CacheFile string `koanf:"cache-file"`
	// Migration is Dubbo's service-discovery migration step:
	// APPLICATION_FIRST uses the interface-level providers and the
	// instances of the provider applications together (/services/<app>,
	// found through /dubbo/mapping/<interface>), so providers that register
	// only their instance, like dubbo-go's by default, are found;
	// FORCE_INTERFACE uses only /dubbo/<interface>/providers;
	// FORCE_APPLICATION only the instances. Default APPLICATION_FIRST
	// (Dubbo 3's default).
	Migration string `koanf:"migration"`
	// Defaults apply to every reference that does not set the value.
	Defaults Settings `koanf:"defaults"`
	// References are created by Start.
	References []ReferenceConfig `koanf:"references"`
	// OnDemand bounds the references that calls to other services make.
	OnDemand OnDemandConfig `koanf:"on-demand"`
}

// OnDemandConfig bounds the references that Invoke makes for services
// outside References (calls through the HTTP gateway and from plugins).
type OnDemandConfig struct {
	// Max is how many may exist at once; to make room for another, the
	// least recently used one without calls in flight is released.
	// Default 64.
	Max int `koanf:"max"`
	// Idle is how long one may go unused before it is released
	// (unsubscribed, unregistered, its connections closed). Default 5m.
	Idle time.Duration `koanf:"idle"`
}

// Defaults of OnDemandConfig.
const (
	DefaultOnDemandMax  = 64
	DefaultOnDemandIdle = 5 * time.Minute
)

// Settings are the call settings of a reference or of one method.
type Settings struct {
	// Timeout of one attempt. Default: the provider's, else 1s.
	Timeout time.Duration `koanf:"timeout"`
	// Retries are the extra attempts of failover (and failback's
	// background retries). Default: the provider's, else 2 (failback: 3).
	// A pointer so that 0 can be set.
	Retries *int `koanf:"retries"`
	// LoadBalance is one of loadbalance.Names(): random, roundrobin,
	// leastactive, shortestresponse, consistenthash, p2c. Default: the
	// provider's, else random.
	LoadBalance string `koanf:"loadbalance"`
	// Cluster is one of cluster.Names(): failover, failfast, failsafe,
	// failback, forking, broadcast, available. Default failover.
	// Reference-wide only.
	Cluster string `koanf:"cluster"`
	// Connections per provider address. Default 1. Reference-wide only;
	// the first reference to reach an address decides.
	Connections int `koanf:"connections"`
	// Check makes Start fail when the reference has no provider. Default
	// true (Dubbo's check). Reference-wide only.
	Check *bool `koanf:"check"`
	// Heartbeat of the connections. Default 60s. Reference-wide only.
	Heartbeat time.Duration `koanf:"heartbeat"`
	// Parameters are more parameters of the consumer URL, any Dubbo
	// defines, written into it as Java writes a reference's parameters
	// (forks, hash.arguments, hash.nodes, failbacktasks, sticky, router,
	// broadcast.fail.percent, ...); the ones the runtime implements take
	// effect. A key set by a field above too takes the field's value. In
	// consumer.defaults they apply to every reference that does not set
	// the key. "mock" (and "<method>.mock") answers calls without the
	// provider, as Dubbo's mock: "force:return <value>" every call,
	// "fail:return <value>" the calls that failed with an error that is
	// not a business exception, "throw [<exception class>]" fails them
	// (package node/cluster/mock); mock=true and class names are refused,
	// there are no Java mock classes here. Default none.
	Parameters map[string]string `koanf:"parameters"`
}

// ReferenceConfig is one referenced service.
type ReferenceConfig struct {
	// Interface is the Java interface name. Required.
	Interface string `koanf:"interface"`
	// Version and Group select the providers. Default none.
	Version string `koanf:"version"`
	Group   string `koanf:"group"`
	// Protocol limits the reference to providers of this protocol, dubbo
	// or tri, as Dubbo's reference protocol does. Default "": providers of
	// either.
	Protocol string `koanf:"protocol"`
	// URL bypasses the registry: one direct dubbo://host:port or
	// tri://host:port, or several separated by ";" as in Java
	// ("dubbo://a:20880;tri://b:50051"), which are then all the
	// reference's providers, balanced and failed over like registered
	// ones. Default "".
	URL      string `koanf:"url"`
	Settings `koanf:",squash"`
	// Methods override the settings per method.
	Methods []MethodConfig `koanf:"methods"`
}

// MethodConfig overrides the settings of one method.
type MethodConfig struct {
	Name string `koanf:"name"`
	// Timeout, Retries and LoadBalance as in Settings; Default: the
	// reference's.
	Timeout     time.Duration `koanf:"timeout"`
	Retries     *int          `koanf:"retries"`
	LoadBalance string        `koanf:"loadbalance"`
	// Parameters are more parameters of this method, written into the
	// consumer URL as "<name>.<key>", as Java writes a method's
	// parameters: forks, hash.arguments, hash.nodes, sticky, mock ... of
	// this method only. Default none.
	Parameters map[string]string `koanf:"parameters"`
}

// Registry is what a consumer needs from an interface-level registry.
type Registry interface {
	Register(ctx context.Context, u *url.URL) error
	Unregister(ctx context.Context, u *url.URL) error
	Subscribe(ctx context.Context, consumer *url.URL, l registry.Listener) error
	Unsubscribe(ctx context.Context, consumer *url.URL) error
}

// Options are the parts of a consumer that do not come from the config file.
type Options struct {
	// Registry, if set, is used instead of connecting to Config.Registry;
	// the consumer does not close it. If it implements
	// registry.ConfigCenter, MetadataReport and ServiceDiscovery those are
	// used too.
	Registry Registry
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// NoStatistics turns call counting off (Stats returns nil).
	NoStatistics bool
	// RegistryStats, if set, counts the consumer's registrations,
	// subscriptions and notifications (Dubbo 3's dubbo_registry_* metrics).
	RegistryStats *stats.RegistryStats
	// ResponseWindow, if set, replaces the 30 s after which the response
	// times that shortestresponse and p2c compare start over for every
	// provider (Dubbo's slide period); tests shorten it.
	ResponseWindow time.Duration
	// FailbackPeriod, if set, replaces the 5 s between failback's
	// background retries (Java's); tests shorten it.
	FailbackPeriod time.Duration
}

// Consumer holds the references of one application. Safe for concurrent use.
type Consumer struct {
	cfg      Config
	log      *slog.Logger
	reg      Registry                  // nil: direct urls only
	config   registry.ConfigCenter     // nil: no dynamic rules
	meta     registry.MetadataReport   // nil: generic calls need types
	disc     registry.ServiceDiscovery // nil: interface-level discovery only
	infos    *infoCache
	failures *fetchFailures // says each instance's metadata fetch failure once
	ownsReg  func() error
	clients  *clientPool
	host     string
	rec      *stats.Recorder      // nil: no statistics
	regStats *stats.RegistryStats // nil: not counted
	window   time.Duration        // cluster.Options.ResponseWindow
	failback time.Duration        // cluster.Options.FailbackPeriod

	// mu guards refs, onDemand and closed. Calls read them under RLock.
	mu       sync.RWMutex
	refs     map[string]*refSlot     // by service key: kept until Close
	onDemand map[string]*onDemandRef // by service key: see ondemand.go
	closed   bool

	stopReleasing context.CancelFunc // stops releaseIdle
	releasing     sync.WaitGroup     // releaseIdle and references being released
}

// refSlot lets concurrent first calls of one service wait for a single
// Reference to be built.
type refSlot struct {
	ready chan struct{}
	ref   *Reference
	err   error
}

// ErrClosed is returned by calls on a closed Consumer.
var ErrClosed = errors.New("consumer is closed")

// New connects to the registry (when configured). References of the config
// are created by Start.
func New(ctx context.Context, cfg Config, opts Options) (*Consumer, error) {
	if cfg.Application == "" {
		cfg.Application = DefaultApplication
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("consumer %s: %w", cfg.Application, err)
	}
	cfg.Migration, _ = migrationStep(cfg.Migration)
	if cfg.OnDemand.Max <= 0 {
		cfg.OnDemand.Max = DefaultOnDemandMax
	}
	if cfg.OnDemand.Idle <= 0 {
		cfg.OnDemand.Idle = DefaultOnDemandIdle
	}
	c := &Consumer{cfg: cfg, log: opts.Logger, refs: make(map[string]*refSlot), onDemand: make(map[string]*onDemandRef),
		host: url.LocalIP(), infos: newInfoCache(), failures: newFetchFailures(), regStats: opts.RegistryStats,
		window: opts.ResponseWindow, failback: opts.FailbackPeriod}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("consumer", cfg.Application)
	if !opts.NoStatistics {
		// A consumer is known to the monitor by its IP, port 0 (as Dubbo).
		c.rec = stats.NewRecorder(stats.Config{Side: stats.Consumer, Application: cfg.Application, Host: c.host})
	}
	c.clients = newClientPool(c.log)
	c.reg = opts.Registry
	if c.reg == nil && cfg.Registry != "" {
		// Bounded: with a cache file the consumer starts from it when the
		// registry is down; without one it says so instead of hanging.
		zr, err := zookeeper.Open(ctx, cfg.Registry, zookeeper.DefaultConnectTimeout,
			zookeeper.Options{Logger: c.log, CacheFile: cfg.CacheFile})
		if err != nil {
			return nil, fmt.Errorf("consumer %s: %w", cfg.Application, err)
		}
		c.reg, c.ownsReg = zr, zr.Close
	}
	c.config, _ = c.reg.(registry.ConfigCenter)
	c.meta, _ = c.reg.(registry.MetadataReport)
	if cfg.Migration != MigrationForceInterface {
		c.disc, _ = c.reg.(registry.ServiceDiscovery)
	}
	c.startReleasing()
	return c, nil
}

// Start creates the references of the config. Those with check (the
// default) must have a provider within checkWait: when some have none,
// Start returns a *CheckError naming them, after creating all of them (they
// find their providers when these come). Other failures are returned as
// they happen.
func (c *Consumer) Start(ctx context.Context) error {
	var checked []*Reference
	for _, rc := range c.cfg.References {
		r, err := c.Reference(ctx, rc)
		if err != nil {
			return err
		}
		check := c.cfg.Defaults.Check
		if rc.Check != nil {
			check = rc.Check
		}
		if check == nil || *check {
			checked = append(checked, r)
		}
	}
	missing := make([]bool, len(checked))
	var wg sync.WaitGroup
	for i, r := range checked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			missing[i] = !r.WaitAvailable(ctx, checkWait)
		}()
	}
	wg.Wait()
	var ce CheckError
	for i, r := range checked {
		if missing[i] {
			ce.Services = append(ce.Services, r.key)
		}
	}
	if len(ce.Services) > 0 {
		return &ce
	}
	return nil
}

// CheckError is Start's error when references with check = true have no
// provider. It matches rpc.ErrNoProvider.
type CheckError struct {
	// Services are the service keys without a provider, in config order.
	Services []string
}

func (e *CheckError) Error() string {
	return strings.Join(e.Services, ", ") + ": no provider available at start-up (check = true); start a provider, fix the reference, or set check = false"
}

func (e *CheckError) Unwrap() error { return rpc.ErrNoProvider }

// checkWait is how long Start's check waits for a first connection, which
// opens in the background: the dial timeout of one attempt.
const checkWait = 3 * time.Second

// WaitAvailable waits, at most d, until the reference has an available
// provider and the tag rule of the providers' application has been read,
// so that a first call is routed as every later one; it reports whether
// both happened. Providers that are listed but still connecting get up to
// checkWait in all, whatever d: a busy machine can take more than d to
// open a connection, and a first call that finds none fails at once.
func (r *Reference) WaitAvailable(ctx context.Context, d time.Duration) bool {
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		available := len(r.Providers()) > 0
		if available && r.tagRuleRead() {
			return true
		}
		waited := time.Since(start)
		if waited >= d && (available || !r.connecting() || waited >= checkWait) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// connecting reports whether the reference lists providers it has no
// connection to yet.
func (r *Reference) connecting() bool {
	if r.dyn != nil {
		return len(r.dyn.Providers()) > 0
	}
	return r.rc.URL != ""
}

// Reference returns the reference of rc's service, creating it on first
// use; it stays until Close. A reference that exists already is returned as
// is (an on-demand one is kept from then on): the first configuration of a
// service key wins.
func (c *Consumer) Reference(ctx context.Context, rc ReferenceConfig) (*Reference, error) {
	key := url.ServiceKey(rc.Interface, rc.Version, rc.Group)
	if err := rc.validate("reference " + key); err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("reference %s: %w", key, ErrClosed)
	}
	slot := c.refs[key]
	if od := c.onDemand[key]; slot == nil && od != nil {
		slot = od.slot
		c.refs[key] = slot
		delete(c.onDemand, key)
	}
	if slot != nil {
		c.mu.Unlock()
		return slot.wait(ctx, key)
	}
	slot = &refSlot{ready: make(chan struct{})}
	c.refs[key] = slot
	c.mu.Unlock()

	slot.ref, slot.err = c.newReference(ctx, key, rc)
	if slot.err != nil {
		c.mu.Lock()
		if c.refs[key] == slot {
			delete(c.refs, key) // let a later call try again
		}
		c.mu.Unlock()
	}
	close(slot.ready)
	return slot.ref, slot.err
}

// wait returns the slot's reference once it is built.
func (s *refSlot) wait(ctx context.Context, key string) (*Reference, error) {
	select {
	case <-s.ready:
		return s.ref, s.err
	case <-ctx.Done():
		return nil, fmt.Errorf("reference %s: %w", key, ctx.Err())
	}
}

// Invoke calls inv.Service (version and group from inv) through its
// reference: one of the config or asked for with Reference, else an
// on-demand one (ondemand.go). Business exceptions come back in the
// result, as from any rpc.Invoker.
func (c *Consumer) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	r, od, err := c.referenceOf(ctx, inv)
	if err != nil {
		return nil, err
	}
	if od != nil {
		defer od.done()
	}
	return r.Invoke(ctx, inv)
}

// Stream opens a stream of a protobuf method of inv.Service through its
// reference, as Invoke calls (see Reference.Stream). An on-demand
// reference stays while the stream lasts.
func (c *Consumer) Stream(ctx context.Context, inv *rpc.Invocation) (rpc.Stream, error) {
	r, od, err := c.referenceOf(ctx, inv)
	if err != nil {
		return nil, err
	}
	s, err := r.Stream(ctx, inv)
	if od == nil {
		return s, err
	}
	if err != nil {
		od.done()
		return nil, err
	}
	return watchStream(ctx, s, func(error, int64, int64) { od.done() }), nil
}

// referenceOf finds the reference of inv's service (see Invoke). With an
// on-demand one comes its onDemandRef, in use: call done once the call is
// over.
func (c *Consumer) referenceOf(ctx context.Context, inv *rpc.Invocation) (*Reference, *onDemandRef, error) {
	key := url.ServiceKey(inv.Service, inv.Version, inv.Group)
	c.mu.RLock()
	if slot := c.refs[key]; slot != nil {
		c.mu.RUnlock()
		r, err := slot.wait(ctx, key)
		return r, nil, err
	}
	if od := c.onDemand[key]; od != nil {
		od.use() // under the lock, so that it is not released meanwhile
		c.mu.RUnlock()
		r, err := od.slot.wait(ctx, key)
		if err != nil {
			od.done()
			return nil, nil, err
		}
		return r, od, nil
	}
	c.mu.RUnlock()
	return c.onDemandReference(ctx, key, inv)
}

// ServiceState is one referenced service as the QoS port shows it.
type ServiceState struct {
	Key       string // [group/]interface[:version]
	Providers int    // available providers now
}

// Services lists the references that are built (configured, asked for and
// on-demand ones), sorted by key.
func (c *Consumer) Services() []ServiceState {
	c.mu.RLock()
	slots := make(map[string]*refSlot, len(c.refs)+len(c.onDemand))
	for k, s := range c.refs {
		slots[k] = s
	}
	for k, od := range c.onDemand {
		slots[k] = od.slot
	}
	c.mu.RUnlock()
	out := make([]ServiceState, 0, len(slots))
	for k, s := range slots {
		select {
		case <-s.ready:
		default:
			continue // being built
		}
		if s.ref != nil {
			out = append(out, ServiceState{Key: k, Providers: len(s.ref.Providers())})
		}
	}
	slices.SortFunc(out, func(a, b ServiceState) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Stats returns the consumer's call statistics (per service, method and
// provider address, for the monitor and Prometheus); nil with
// Options.NoStatistics.
func (c *Consumer) Stats() *stats.Recorder { return c.rec }

// Close closes every reference (unregistering the consumer URLs), the
// connections and the registry session the consumer opened.
func (c *Consumer) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	slots := make([]*refSlot, 0, len(c.refs)+len(c.onDemand))
	for _, s := range c.refs {
		slots = append(slots, s)
	}
	for _, od := range c.onDemand {
		slots = append(slots, od.slot)
	}
	c.refs, c.onDemand = nil, nil
	c.mu.Unlock()
	c.stopReleasing()
	c.releasing.Wait()
	for _, s := range slots {
		<-s.ready
		if s.ref != nil {
			s.ref.close()
		}
	}
	c.clients.closeAll()
	if c.ownsReg != nil {
		return c.ownsReg()
	}
	return nil
}
