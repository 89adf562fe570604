package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Override rules on the provider side (PROTOCOLS.md C.4), as Dubbo's
// RegistryProtocol applies them with its OverrideListener,
// ProviderConfigurationListener and ServiceConfigurationListener. Three
// sources, applied in this order to the URL a service was exported with:
//
//  1. the old override:// URLs under /dubbo/<interface>/configurators (a
//     registry subscription per service, with the provider URL and
//     category=configurators, so the registry matches version and group);
//  2. the config-center document <application>.configurators;
//  3. the config-center document <interface>:<version>:<group>.configurators.
//
// Only rules that match the provider apply: side=provider or no side, an
// address of 0.0.0.0, the provider's host or host:port, and its application
// and service. When the result differs from the URL in the registry, the
// old URL is unregistered and the new one registered, so consumers see the
// new weight, timeout, retries or loadbalance; the instance's MetadataInfo
// is recomputed from the new URLs too. Removing a rule restores the
// original URL. A rule that does not parse is logged and the previous rules
// of that source stay in force.
//
// disabled=true withdraws the service: its URL is unregistered and it
// leaves the MetadataInfo, but it is still served, so calls in flight and
// direct calls work, until the rule goes away. Java re-registers the URL
// with disabled=true instead and relies on consumers skipping it; Java
// consumers and ours do, dubbo-go consumers and application-level
// discovery do not, so withdrawing is what stops every consumer.
//
// The provider enforces executes and threads itself: a rule's executes
// is the new limit, and a rule's threads resizes the provider's pool while
// it runs, as Java's re-export resets its server (updateThreadpool); when
// the rule goes, the pool is back at its configured size. The other
// parameters take effect through the consumers that read the new URL:
// like Java's, the provider's deadline is the consumer's timeout
// attachment.
//
// Watch and subscription callbacks run on the registry's loop: they only
// record the rules and wake the provider's one configurator goroutine,
// which does the registry work.

// Subscriber is what the provider needs to follow the configurators
// category of the registry; the ZooKeeper registry implements it.
type Subscriber interface {
	Subscribe(ctx context.Context, u *url.URL, l registry.Listener) error
	Unsubscribe(ctx context.Context, u *url.URL) error
}

// configurators holds the override rules of one provider and runs its
// configurator goroutine.
type configurators struct {
	sub    Subscriber            // nil: no registry configurators
	config registry.ConfigCenter // nil: no config-center rules

	signal chan struct{} // capacity 1: "some rule changed"
	cancel context.CancelFunc
	done   chan struct{}
	stop   sync.Once

	mu       sync.Mutex
	app      configurator.Rules
	services map[string]*serviceRules // by service key
	appWatch func()
}

// serviceRules are the rules and watches of one exported service.
type serviceRules struct {
	registry, service configurator.Rules
	subURL            *url.URL // nil: not subscribed
	cancelWatch       func()
}

// startConfigurators arms the application's rule watch and starts the
// goroutine; a registry that offers neither subscriptions nor a config
// center leaves p.conf nil.
func (p *Provider) startConfigurators(ctx context.Context) error {
	sub, _ := p.reg.(Subscriber)
	cc, _ := p.reg.(registry.ConfigCenter)
	if sub == nil && cc == nil {
		return nil
	}
	c := &configurators{sub: sub, config: cc, signal: make(chan struct{}, 1),
		done: make(chan struct{}), services: make(map[string]*serviceRules)}
	if cc != nil {
		key := p.cfg.Application + ".configurators"
		cancel, err := cc.Watch(ctx, key, p.onRule(c, key, func(rs configurator.Rules) { c.app = rs }))
		if err != nil {
			return fmt.Errorf("provider %s: watch %s: %w", p.cfg.Application, key, err)
		}
		c.appWatch = cancel
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	p.conf = c
	go p.runConfigurators(runCtx)
	return nil
}

func (c *configurators) poke() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// onRule handles one .configurators document: set receives the parsed
// rules (nil when the document was deleted) under c.mu.
func (p *Provider) onRule(c *configurators, key string, set func(configurator.Rules)) registry.ConfigFunc {
	return func(content string, deleted bool) {
		var rules configurator.Rules
		if !deleted && content != "" {
			var err error
			if rules, err = configurator.Parse([]byte(content)); err != nil {
				p.log.Warn("ignoring invalid override rule; the previous one stays in force", "key", key, "err", err)
				return
			}
		}
		c.mu.Lock()
		set(rules)
		c.mu.Unlock()
		c.poke()
	}
}

// watchService subscribes to the rules of an exported service, unless a
// previous export of the same key already did. The first notifications
// arrive before it returns, so Export registers the configured URL at once.
func (p *Provider) watchService(ctx context.Context, e *exporter) error {
	c := p.conf
	if c == nil {
		return nil
	}
	c.mu.Lock()
	_, ok := c.services[e.key]
	sr := &serviceRules{}
	if !ok {
		c.services[e.key] = sr
	}
	c.mu.Unlock()
	if ok {
		return nil
	}
	var errs []error
	if c.sub != nil {
		u := e.url()
		params := u.Params()
		params[url.KeyCategory] = registry.CategoryConfigurators
		params["check"] = "false"
		su := url.New("provider", u.Host(), u.Port(), u.Path(), params)
		err := c.sub.Subscribe(ctx, su, registry.ListenerFunc(func(n registry.Notification) {
			rules, err := configurator.ParseURLs(n.URLs)
			if err != nil {
				p.log.Warn("ignoring configurators update with an invalid override; the previous ones stay in force",
					"service", e.key, "err", err)
				return
			}
			c.mu.Lock()
			sr.registry = forProviders(rules)
			c.mu.Unlock()
			c.poke()
		}))
		// A subscription made while the registry is unreachable stays and is
		// served when it answers, so it must be undone like any other.
		c.mu.Lock()
		sr.subURL = su
		c.mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("subscribe to the configurators of %s: %w", e.key, err))
		}
	}
	if c.config != nil {
		key := url.ColonSeparatedKey(e.svc.Interface, e.svc.Version, e.svc.Group) + ".configurators"
		cancel, err := c.config.Watch(ctx, key, p.onRule(c, key, func(rs configurator.Rules) { sr.service = rs }))
		if err != nil {
			errs = append(errs, fmt.Errorf("watch %s: %w", key, err))
		} else {
			c.mu.Lock()
			sr.cancelWatch = cancel
			c.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// forProviders drops the old-form overrides that name a host without a
// port and no side: as Java's AbstractConfigurator reads them, those target
// the consumers on that host, and only 0.0.0.0 or host:port reach providers.
func forProviders(rules configurator.Rules) configurator.Rules {
	return slices.DeleteFunc(slices.Clone(rules), func(o *configurator.Override) bool {
		if o.Side != "" {
			return false
		}
		for _, a := range o.Addresses {
			if _, _, err := net.SplitHostPort(a); err != nil && a != "0.0.0.0" {
				return true
			}
		}
		return false
	})
}

// unwatchService stops following the rules of an unexported service.
func (p *Provider) unwatchService(ctx context.Context, key string) error {
	c := p.conf
	if c == nil {
		return nil
	}
	c.mu.Lock()
	sr := c.services[key]
	delete(c.services, key)
	c.mu.Unlock()
	if sr == nil {
		return nil
	}
	return c.release(ctx, sr)
}

func (c *configurators) release(ctx context.Context, sr *serviceRules) error {
	c.mu.Lock()
	cancel, su := sr.cancelWatch, sr.subURL
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if su != nil {
		return c.sub.Unsubscribe(ctx, su)
	}
	return nil
}

// stopConfigurators stops the goroutine, then every watch and
// subscription. It must not be called with regMu held: the goroutine may be
// waiting for it.
func (p *Provider) stopConfigurators(ctx context.Context) error {
	c := p.conf
	if c == nil {
		return nil
	}
	var err error
	c.stop.Do(func() {
		c.cancel()
		<-c.done
		c.mu.Lock()
		all := maps.Clone(c.services)
		clear(c.services)
		appWatch := c.appWatch
		c.appWatch = nil
		c.mu.Unlock()
		if appWatch != nil {
			appWatch()
		}
		var errs []error
		for _, sr := range all {
			errs = append(errs, c.release(ctx, sr))
		}
		err = errors.Join(errs...)
	})
	return err
}

// runConfigurators re-publishes the services whenever a rule changes.
func (p *Provider) runConfigurators(ctx context.Context) {
	defer close(p.conf.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.conf.signal:
		}
		p.reconfigure(ctx)
	}
}

// configuredURL is the URL of e on ep after the rules, nil when a rule
// disables it or the service was taken offline. regMu is held.
func (p *Provider) configuredURL(e *exporter, ep *endpoint) *url.URL {
	if p.offline[e.key] {
		return nil
	}
	u := ep.url
	if c := p.conf; c != nil {
		c.mu.Lock()
		var sr serviceRules
		if s := c.services[e.key]; s != nil {
			sr = *s
		}
		for _, rs := range []configurator.Rules{sr.registry, c.app, sr.service} {
			u = rs.Configure(u, nil) // no consumer: only provider-side rules match
		}
		c.mu.Unlock()
	}
	if configurator.Disabled(u) {
		return nil
	}
	return u
}

// reconfigureTimeout bounds the registry work of one change.
const reconfigureTimeout = 10 * time.Second

// reconfigure brings every service's published URL in line with the rules.
func (p *Provider) reconfigure(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, reconfigureTimeout)
	defer cancel()
	p.regMu.Lock()
	defer p.regMu.Unlock()
	if err := p.reconcile(ctx); err != nil {
		// The registry retries registrations on reconnection.
		p.log.Warn("cannot bring the registry in line with the override rules", "err", err)
	}
}

// reconcile publishes every service's URL as the rules and the QoS
// offline state say, and updates the instance if anything changed.
// regMu is held.
func (p *Provider) reconcile(ctx context.Context) error {
	p.mu.RLock()
	if p.shutdown {
		p.mu.RUnlock()
		return nil
	}
	exporters := make([]*exporter, 0, len(p.exporters))
	for _, e := range p.exporters {
		exporters = append(exporters, e)
	}
	p.mu.RUnlock()

	var errs []error
	changed := false
	for _, e := range exporters {
		for _, ep := range e.eps {
			want := p.configuredURL(e, ep)
			if sameURL(want, ep.published) {
				continue
			}
			changed = true
			p.log.Info("published provider URL changed",
				"service", e.key, "old", urlString(ep.published), "new", urlString(want))
			if err := p.republish(ctx, ep.published, want); err != nil {
				errs = append(errs, fmt.Errorf("re-publish %s: %w", e.key, err))
			}
			old := ep.published
			p.mu.Lock()
			ep.published = want
			p.mu.Unlock()
			ep.setLimits(want)
			p.resizePool(old, want)
		}
	}
	if changed {
		if err := p.refreshInstance(ctx); err != nil {
			errs = append(errs, fmt.Errorf("update the instance: %w", err))
		}
		p.health.changed()
	}
	return errors.Join(errs...)
}

// republish replaces old by new in the interface-level registry; either may
// be nil (not published). regMu is held.
func (p *Provider) republish(ctx context.Context, old, new *url.URL) error {
	if p.reg == nil || p.cfg.RegisterMode == RegisterInstance || sameURL(old, new) {
		return nil
	}
	var errs []error
	if old != nil {
		errs = append(errs, p.reg.Unregister(ctx, old))
	}
	if new != nil {
		errs = append(errs, p.register(ctx, new))
	}
	return errors.Join(errs...)
}

func sameURL(a, b *url.URL) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

func urlString(u *url.URL) string {
	if u == nil {
		return "(withdrawn)"
	}
	return u.String()
}

// resizePool follows a service URL that changed from old to new with the
// pool, as Java's server reset does: new's threads is the pool's size;
// when old had threads and new has none (the rule that set it went), the
// pool is back at its configured size. A withdrawn URL (nil) changes
// nothing. regMu is held.
func (p *Provider) resizePool(old, new *url.URL) {
	if new == nil {
		return
	}
	threads := new.IntParam(KeyThreads, 0)
	if threads <= 0 {
		if old == nil || old.IntParam(KeyThreads, 0) <= 0 {
			return
		}
		threads = p.poolBase
	}
	if threads == p.pool.Stats().Max {
		return
	}
	p.pool.Resize(threads)
	st := p.pool.Stats()
	p.log.Info("thread pool resized by an override rule", "threads", threads, "core", st.Core, "max", st.Max)
}
