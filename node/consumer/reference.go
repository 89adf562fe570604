package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/cluster/directory"
	"github.com/dubbo-lab/dubbo/node/cluster/loadbalance"
	"github.com/dubbo-lab/dubbo/node/cluster/mock"
	"github.com/dubbo-lab/dubbo/node/cluster/router"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Release is the Dubbo release the consumer URL announces.
const Release = "3.3.0"

// Orders of the override rules: registry configurators first, then the
// application's, then the service's, as Dubbo 3 applies them.
const (
	orderRegistryConfig = 0
	orderAppConfig      = 1
	orderServiceConfig  = 2
)

// Reference is one referenced service: an rpc.Invoker over its providers.
type Reference struct {
	c           *Consumer
	key         string // [group/]interface[:version]
	rc          ReferenceConfig
	log         *slog.Logger
	consumerURL *url.URL // registered in /dubbo/<iface>/consumers
	subURL      *url.URL // what we subscribed with
	dir         cluster.Directory
	dyn         *directory.Dynamic // nil for a direct url
	chain       router.Chain
	routers     []string // the router kinds that run (Dubbo's "router" key)
	invoker     *cluster.Invoker
	call        rpc.Invoker // invoker under the mock setting
	release     func()      // releases the direct urls' clients

	// The providers of each discovery, merged by setProviders.
	migration          string
	apps               *appDiscovery // nil: interface-level only
	provMu             sync.Mutex
	ifaceURLs, appURLs []*url.URL

	// Watches of the config center, and the goroutine that (re)arms the
	// watches of the provider application's rules (tag, affinity, script)
	// outside the registry loop.
	mu          sync.Mutex
	cancels     []func()
	provApp     string
	provCancels []func()
	closed      bool
	wg          sync.WaitGroup

	// tagRead is closed once the tag rule of the providers' application
	// has been read, or there is none to read: Java's TagStateRouter reads
	// the rule when it first sees the providers, before routing a call to
	// them. nil when no rule is watched (direct url, no config center).
	tagRead     chan struct{}
	tagReadOnce sync.Once

	schema protoSchema // the service's protobuf descriptor (schema.go)
	def    definition  // the service's Java definition (returntype.go)
}

// tagRuleRead reports whether the first calls can be routed with the tag
// rule in force (see tagRead).
func (r *Reference) tagRuleRead() bool {
	if r.tagRead == nil {
		return true
	}
	select {
	case <-r.tagRead:
		return true
	default:
		return false
	}
}

func (r *Reference) markTagRuleRead() {
	if r.tagRead != nil {
		r.tagReadOnce.Do(func() { close(r.tagRead) })
	}
}

func (c *Consumer) newReference(ctx context.Context, key string, rc ReferenceConfig) (*Reference, error) {
	r := &Reference{c: c, key: key, rc: rc, log: c.log.With("reference", key), migration: c.cfg.Migration}
	r.consumerURL = c.consumerURL(rc)
	cl := rc.Cluster
	if cl == "" {
		cl = c.cfg.Defaults.Cluster
	}
	if rc.URL != "" {
		if err := r.direct(); err != nil {
			return nil, err
		}
	} else {
		if c.reg == nil {
			return nil, &rpc.CallError{Kind: rpc.ErrNoProvider, Service: key,
				Detail: "no registry is configured and the reference has no url; set [registry] address or the reference's url = \"dubbo://host:port\""}
		}
		d, err := directory.NewDynamic(directory.Options{
			Consumer: r.consumerURL,
			Connect:  r.connect,
			Release:  r.releaseInvoker,
			Logger:   r.log,
		})
		if err != nil {
			return nil, err
		}
		r.dyn, r.dir = d, d
		if r.routers, err = router.Enabled(r.consumerURL.Param(keyRouter)); err != nil {
			return nil, fmt.Errorf("reference %s: %w", key, err)
		}
		for _, name := range r.routers {
			// Routers that act without a rule (tag: the providers' static
			// tags) run from the start.
			kind, _ := router.Lookup(name)
			if rt, _ := kind.New(nil); rt != nil {
				r.chain.Set(name, kind.Order, rt)
			}
		}
		d.SetRouter(&r.chain)
		if c.config != nil {
			r.tagRead = make(chan struct{})
		}
	}
	inv, err := cluster.Join(r.dir, cluster.Options{Cluster: cl, NewBalancer: loadbalance.New, URL: r.consumerURL,
		Logger: r.log, ResponseWindow: c.window, FailbackPeriod: c.failback})
	if err != nil {
		r.close()
		return nil, fmt.Errorf("reference %s: %w", key, err)
	}
	r.invoker = inv
	r.call = mock.NewInvoker(inv, r.settingsURL, r, r.log)
	if r.dyn != nil {
		if err := r.subscribe(ctx); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

// consumerURL is the URL a Java 3.3 consumer registers (PROTOCOLS.md C.2),
// with the call settings the directory lays over every provider URL:
// consumer.defaults' then the reference's parameters, the settings of
// their own keys over them, each method's as "<method>.<key>", and the
// consumer's identity last.
func (c *Consumer) consumerURL(rc ReferenceConfig) *url.URL {
	d := c.cfg.Defaults
	params := make(map[string]string)
	for k, v := range d.Parameters {
		params[k] = v
	}
	for k, v := range rc.Parameters {
		params[k] = v
	}
	setSettings(params, "", pick(rc.Timeout, d.Timeout), pickPtr(rc.Retries, d.Retries), pick(rc.LoadBalance, d.LoadBalance))
	if cl := pick(rc.Cluster, d.Cluster); cl != "" {
		params[cluster.KeyCluster] = cl
	}
	if n := pick(rc.Connections, d.Connections); n > 0 {
		params[keyConnections] = strconv.Itoa(n)
	}
	var methods []string
	for _, m := range rc.Methods {
		if m.Name == "" {
			continue
		}
		methods = append(methods, m.Name)
		for k, v := range m.Parameters {
			params[m.Name+"."+k] = v
		}
		setSettings(params, m.Name+".", m.Timeout, m.Retries, m.LoadBalance)
	}
	if len(methods) > 0 {
		slices.Sort(methods)
		params["methods"] = strings.Join(methods, ",")
	}
	for k, v := range map[string]string{
		"application":    c.cfg.Application,
		url.KeyCategory:  registry.CategoryConsumers,
		"check":          "false",
		"dubbo":          protocol.DubboVersion,
		url.KeyInterface: rc.Interface,
		url.KeyPID:       strconv.Itoa(os.Getpid()),
		"release":        Release,
		"side":           "consumer",
		url.KeyTimestamp: strconv.FormatInt(time.Now().UnixMilli(), 10),
	} {
		params[k] = v
	}
	delete(params, url.KeyVersion)
	delete(params, url.KeyGroup)
	if rc.Version != "" {
		params[url.KeyVersion] = rc.Version
	}
	if rc.Group != "" {
		params[url.KeyGroup] = rc.Group
	}
	if rc.Protocol != "" {
		params[keyProtocol] = rc.Protocol
	}
	return url.New("consumer", c.host, 0, rc.Interface, params)
}

// Keys of the consumer URL: connections per provider, and the protocol a
// reference is limited to (as Java writes it).
const (
	keyConnections = "connections"
	keyProtocol    = "protocol"
)

func setSettings(params map[string]string, prefix string, timeout time.Duration, retries *int, lb string) {
	if timeout > 0 {
		params[prefix+cluster.KeyTimeout] = strconv.FormatInt(timeout.Milliseconds(), 10)
	}
	if retries != nil {
		params[prefix+cluster.KeyRetries] = strconv.Itoa(*retries)
	}
	if lb != "" {
		params[prefix+cluster.KeyLoadBalance] = lb
	}
}

func pick[T comparable](v, def T) T {
	var zero T
	if v != zero {
		return v
	}
	return def
}

func pickPtr[T any](v, def *T) *T {
	if v != nil {
		return v
	}
	return def
}

// connections per provider: the consumer URL's (the reference's, its
// parameters' or consumer.defaults'), 0 when none is set.
func (r *Reference) connections() int {
	return r.consumerURL.IntParam(keyConnections, 0)
}

func (r *Reference) heartbeat() time.Duration {
	return pick(r.rc.Heartbeat, r.c.cfg.Defaults.Heartbeat)
}

// keyHeartbeat is the provider URL parameter with its heartbeat in
// milliseconds.
const keyHeartbeat = "heartbeat"

// heartbeatFor is the heartbeat of the connections to the provider u: the
// reference's (or consumer.defaults') when set, else the one the provider
// publishes (Java consumers take it from the provider URL, and a provider
// closes connections silent for three of its heartbeats), else the
// transport's default.
func (r *Reference) heartbeatFor(u *url.URL) time.Duration {
	if hb := r.heartbeat(); hb > 0 {
		return hb
	}
	if ms := u.IntParam(keyHeartbeat, 0); ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return 0
}

// direct builds the static directory of a url reference: each of its
// ";"-separated urls is one provider, balanced and failed over like
// registered ones, as Java joins several direct urls in one cluster.
func (r *Reference) direct() error {
	dus, err := directURLs(r.rc.URL)
	if err != nil {
		return fmt.Errorf("reference %s: url: %w", r.key, err)
	}
	var providers []cluster.ProviderInvoker
	var pus []*url.URL
	for _, du := range dus {
		params := du.Params()
		params[url.KeyInterface] = r.rc.Interface
		delete(params, url.KeyVersion)
		delete(params, url.KeyGroup)
		if r.rc.Version != "" {
			params[url.KeyVersion] = r.rc.Version
		}
		if r.rc.Group != "" {
			params[url.KeyGroup] = r.rc.Group
		}
		pu := url.New(du.Protocol(), du.Host(), du.Port(), r.rc.Interface, params)
		if slices.ContainsFunc(pus, func(u *url.URL) bool { return u.Protocol() == pu.Protocol() && u.Address() == pu.Address() }) {
			continue // named twice: one provider
		}
		pus = append(pus, pu)
		providers = append(providers, r.c.newProviderInvoker(pu, r.acquire(pu, r.connections())))
	}
	r.release = func() {
		for _, pu := range pus {
			r.c.clients.release(pu.Protocol(), pu.Address())
		}
	}
	r.dir = directory.NewStatic(r.consumerURL, nil, providers...)
	return nil
}

// connect makes the invoker of a provider the registry announced.
func (r *Reference) connect(u *url.URL) (cluster.ProviderInvoker, error) {
	conns := r.connections()
	if conns == 0 {
		conns = u.IntParam("connections", 0)
	}
	return r.c.newProviderInvoker(u, r.acquire(u, conns)), nil
}

// acquire takes the shared client of provider u's address and protocol.
func (r *Reference) acquire(u *url.URL, connections int) client {
	return r.c.clients.acquire(u.Protocol(), u.Address(), clientOptions{connections: connections, heartbeat: r.heartbeatFor(u)})
}

func (r *Reference) releaseInvoker(p cluster.ProviderInvoker) {
	r.c.clients.release(p.URL().Protocol(), p.URL().Address())
}

// consumerMetadataReport publishes a reference's parameters where Java
// Dubbo's metadata report puts them; the ZooKeeper registry implements it.
type consumerMetadataReport interface {
	PublishConsumerMetadata(ctx context.Context, iface, version, group, app string, params map[string]string) error
}

// subscribe registers the consumer URL, subscribes to the service's
// categories and watches the config-center rules.
func (r *Reference) subscribe(ctx context.Context) error {
	reg := r.c.reg
	r.subURL = r.consumerURL.Clone()
	r.subURL.SetParam(url.KeyCategory, registry.CategoryProviders+","+registry.CategoryConfigurators+","+registry.CategoryRouters)
	err := reg.Register(ctx, r.consumerURL)
	if rs := r.c.regStats; rs != nil {
		rs.Registered(err)
	}
	if err != nil {
		// Registration only makes us visible; calls work without it, and
		// the registry retries it on reconnection.
		r.log.Warn("consumer URL not registered yet", "err", err)
	}
	if mr, ok := reg.(consumerMetadataReport); ok {
		if err := mr.PublishConsumerMetadata(ctx, r.rc.Interface, r.rc.Version, r.rc.Group, r.c.cfg.Application, r.consumerURL.Params()); err != nil {
			r.log.Debug("consumer metadata not published", "err", err)
		}
	}
	err = reg.Subscribe(ctx, r.subURL, registry.ListenerFunc(r.notify))
	if rs := r.c.regStats; rs != nil {
		rs.Subscribed(err)
	}
	if err != nil {
		return fmt.Errorf("reference %s: subscribe: %w", r.key, err)
	}
	if r.c.disc != nil {
		if err := r.startAppDiscovery(ctx); err != nil {
			return err
		}
	}
	if r.c.config == nil {
		return nil
	}
	svcKey := url.ColonSeparatedKey(r.rc.Interface, r.rc.Version, r.rc.Group)
	type watch struct {
		key string
		fn  func(content string, deleted bool)
	}
	var watches []watch
	for _, name := range r.routers {
		kind, _ := router.Lookup(name)
		switch kind.Scope {
		case router.ScopeService:
			watches = append(watches, watch{svcKey + kind.Suffix, r.routerRule(name, kind)})
		case router.ScopeConsumerApp:
			watches = append(watches, watch{r.c.cfg.Application + kind.Suffix, r.routerRule(name, kind)})
		}
		// ScopeProviderApp: armed by watchProviderApp once the providers' application is known.
	}
	watches = append(watches,
		watch{svcKey + ".configurators", r.overrideRule("service", orderServiceConfig)},
		watch{r.c.cfg.Application + ".configurators", r.overrideRule("app", orderAppConfig)})
	for _, w := range watches {
		cancel, err := r.c.config.Watch(ctx, w.key, w.fn)
		if err != nil {
			return fmt.Errorf("reference %s: watch %s: %w", r.key, w.key, err)
		}
		r.mu.Lock()
		r.cancels = append(r.cancels, cancel)
		r.mu.Unlock()
	}
	return nil
}

// notify receives the registry's full lists; it runs on the registry loop.
func (r *Reference) notify(n registry.Notification) {
	if rs := r.c.regStats; rs != nil && n.Category == registry.CategoryProviders {
		rs.Notified(len(n.URLs))
	}
	switch n.Category {
	case registry.CategoryProviders:
		var ps []*url.URL
		for _, u := range n.URLs {
			if r.rc.callable(u) {
				ps = append(ps, u)
			}
		}
		r.setProviders(sourceInterface, ps)
	case registry.CategoryRouters:
		var rs []cluster.Router
		for _, u := range n.URLs {
			if u.Protocol() == "empty" {
				continue
			}
			if kind := routerURLKind(u); kind != "condition" {
				r.log.Warn("routers: rule not applied by this runtime (only condition rules are)", "router", kind, "rule", u.String())
				continue
			}
			rule, err := router.ParseConditionURL(u)
			if err != nil {
				r.log.Warn("ignoring routers update with an invalid rule; the previous routes stay in force", "rule", u.String(), "err", err)
				return
			}
			rs = append(rs, rule)
		}
		if len(rs) == 0 {
			r.chain.Set("registry", router.OrderRegistry, nil)
		} else {
			r.chain.Set("registry", router.OrderRegistry, routers(rs))
		}
	case registry.CategoryConfigurators:
		rules, err := configurator.ParseURLs(n.URLs)
		if err != nil {
			r.log.Warn("ignoring configurators update with an invalid override; the previous ones stay in force", "err", err)
			return
		}
		r.dyn.SetConfigurator("registry", orderRegistryConfig, rules)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// routerURLKind is the router a URL of the registry's routers folder is
// for: its protocol (condition://, script://, file://), or the router
// parameter of route:// URLs.
func routerURLKind(u *url.URL) string {
	if u.Protocol() == "route" {
		return u.ParamOr("router", "condition")
	}
	return u.Protocol()
}

// routers applies several routers in turn.
type routers []cluster.Router

func (rs routers) Route(ps []cluster.ProviderInvoker, consumer *url.URL, inv *rpc.Invocation) []cluster.ProviderInvoker {
	for _, rt := range rs {
		if len(ps) == 0 {
			break
		}
		ps = rt.Route(ps, consumer, inv)
	}
	return ps
}

// routerRule handles the rule documents of one router kind: a rule
// replaces the router, a deleted one leaves the router without a rule, and
// an invalid one is logged and leaves the router as it was.
func (r *Reference) routerRule(name string, kind router.Kind) func(string, bool) {
	return func(content string, deleted bool) {
		var doc []byte
		if !deleted && content != "" {
			doc = []byte(content)
		}
		rt, err := kind.New(doc)
		if err != nil {
			r.log.Warn("ignoring invalid routing rule; the previous one stays in force", "router", name, "err", err)
			return
		}
		for _, w := range router.Warnings(rt) {
			r.log.Warn("routing rule: part of it is not applied", "router", name, "warning", w)
		}
		r.chain.Set(name, kind.Order, rt)
	}
}

// overrideRule handles one .configurators document.
func (r *Reference) overrideRule(name string, order int) func(string, bool) {
	return func(content string, deleted bool) {
		if deleted || content == "" {
			r.dyn.SetConfigurator(name, order, nil)
			return
		}
		rules, err := configurator.Parse([]byte(content))
		if err != nil {
			r.log.Warn("ignoring invalid override rule; the previous one stays in force", "rule", name, "err", err)
			return
		}
		r.dyn.SetConfigurator(name, order, rules)
	}
}

// watchProviderApp follows the rules of the router kinds scoped to the
// providers' application (<provider application>.tag-router,
// .affinity-router, .script-router). The watches are armed from a
// goroutine of the reference because notify runs on the registry loop,
// which Watch waits for.
func (r *Reference) watchProviderApp(ps []*url.URL) {
	if r.c.config == nil || len(ps) == 0 {
		return
	}
	var names []string
	for _, n := range r.routers {
		if k, _ := router.Lookup(n); k.Scope == router.ScopeProviderApp {
			names = append(names, n)
		}
	}
	// The tag rule first: the first calls wait for it (tagRead).
	slices.SortStableFunc(names, func(a, b string) int { return boolInt(b == "tag") - boolInt(a == "tag") })
	if !slices.Contains(names, "tag") {
		r.markTagRuleRead() // tag routing is off ("router" key)
	}
	if len(names) == 0 {
		return
	}
	app := ps[0].Param("application")
	if app == "" {
		r.markTagRuleRead() // no application, no rule
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if app == "" || app == r.provApp || r.closed {
		return
	}
	r.provApp = app
	old := r.provCancels
	r.provCancels = nil
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for _, stop := range old {
			stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var stops []func()
		for _, name := range names {
			kind, _ := router.Lookup(name)
			stop, err := r.c.config.Watch(ctx, app+kind.Suffix, r.routerRule(name, kind))
			if name == "tag" {
				r.markTagRuleRead() // Watch has delivered the rule, if there is one
			}
			if err != nil {
				r.log.Warn("cannot watch the routing rule of the provider application", "app", app, "router", name, "err", err)
				continue
			}
			stops = append(stops, stop)
		}
		r.mu.Lock()
		if r.closed || r.provApp != app {
			r.mu.Unlock()
			for _, stop := range stops {
				stop()
			}
			return
		}
		r.provCancels = stops
		r.mu.Unlock()
	}()
}

// Invoke calls the service; the invocation's service, version and group
// are the reference's.
func (r *Reference) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	return r.call.Invoke(ctx, r.own(inv))
}

// settingsURL is the consumer URL under the consumer-side override rules,
// where settings that need no provider (mock) are read.
func (r *Reference) settingsURL() *url.URL {
	if r.dyn != nil {
		return r.dyn.ConsumerURL()
	}
	return r.consumerURL
}

// Stream opens a stream of a protobuf method on one provider, picked by
// the routers and the load balancer as a call's first attempt is (a
// tri:// one: the reference's protocol should be tri when it has dubbo
// providers too). It is not retried: a failure to open it is returned.
// ctx bounds the whole stream (see rpc.Stream); the reference's timeouts
// do not apply.
func (r *Reference) Stream(ctx context.Context, inv *rpc.Invocation) (rpc.Stream, error) {
	inv = r.own(inv)
	p, err := r.invoker.Select(inv)
	if err != nil {
		return nil, err
	}
	// The directory hands out its view of the provider; the stream is
	// opened by the provider's own invoker.
	return providerOf(p).Stream(ctx, inv)
}

// unwrapper is a view of a provider's invoker (the directory's).
type unwrapper interface {
	Unwrap() cluster.ProviderInvoker
}

// own is inv as the reference makes it: its service, version and group,
// and the consumer's application.
func (r *Reference) own(inv *rpc.Invocation) *rpc.Invocation {
	if inv.Service != r.rc.Interface || inv.Version != r.rc.Version || inv.Group != r.rc.Group {
		cp := *inv
		cp.Service, cp.Version, cp.Group = r.rc.Interface, r.rc.Version, r.rc.Group
		inv = &cp
	}
	if r.c.cfg.Application != "" && inv.Attachments["remote.application"] == nil {
		cp := *inv
		cp.Attachments = cloneAttachments(inv.Attachments)
		cp.Attachments["remote.application"] = r.c.cfg.Application
		inv = &cp
	}
	return inv
}

func cloneAttachments(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Providers lists the enabled, available providers before routing.
func (r *Reference) Providers() []cluster.ProviderInvoker {
	if r.dyn != nil {
		ps := r.dyn.Providers()
		return slices.DeleteFunc(ps, func(p cluster.ProviderInvoker) bool { return !p.Available() })
	}
	return r.dir.List(&rpc.Invocation{Service: r.rc.Interface})
}

// ConsumerURL is the URL the reference registers.
func (r *Reference) ConsumerURL() *url.URL { return r.consumerURL.Clone() }

// close unsubscribes, unregisters and releases the connections.
func (r *Reference) close() {
	r.mu.Lock()
	r.closed = true
	cancels := append(r.cancels, r.provCancels...)
	r.cancels, r.provCancels = nil, nil
	r.mu.Unlock()
	r.wg.Wait()
	if r.apps != nil {
		r.apps.close()
	}
	for _, c := range cancels {
		if c != nil {
			c()
		}
	}
	if r.subURL != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var errs []error
		errs = append(errs, r.c.reg.Unsubscribe(ctx, r.subURL), r.c.reg.Unregister(ctx, r.consumerURL))
		cancel()
		if err := errors.Join(errs...); err != nil {
			r.log.Warn("closing reference", "err", err)
		}
	}
	if r.invoker != nil {
		r.invoker.Close()
	}
	if r.dyn != nil {
		r.dyn.Close()
	}
	if r.release != nil {
		r.release()
	}
}
