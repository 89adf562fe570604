package consumer

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// On-demand references. Invoke makes one for a service that is neither in
// the config nor asked for with Reference: a call through the HTTP gateway
// or from a plugin. Whoever can reach the gateway names those services, and
// a reference is registry state (its consumer node, the folders it
// subscribes to, watches, metadata), so:
//
//   - the names must be Java names (CheckService);
//   - a service that no provider offers, in the interface-level folder or
//     the interface → application mapping, is answered no_provider after
//     registry reads only: no reference, no write;
//   - at most Config.OnDemand.Max exist; making room releases the least
//     recently used one that has no call in flight, and when every one is
//     busy the call fails with pool_exhausted;
//   - one unused for Config.OnDemand.Idle is released by the consumer's
//     releaseIdle goroutine.
//
// Releasing unsubscribes and unregisters in the background (c.releasing),
// never under c.mu.

// onDemandRef is one on-demand reference and its use. inflight and
// lastUsed change under c.mu's read lock (use) or without it (done);
// releasing one takes c.mu's write lock and requires inflight == 0, so no
// call can start on a reference being released.
type onDemandRef struct {
	slot     *refSlot
	inflight atomic.Int64
	lastUsed atomic.Int64 // UnixNano
}

func (od *onDemandRef) use() {
	od.inflight.Add(1)
	od.lastUsed.Store(time.Now().UnixNano())
}

func (od *onDemandRef) done() {
	od.lastUsed.Store(time.Now().UnixNano())
	od.inflight.Add(-1)
}

// ready reports whether the reference was built (successfully or not).
func (od *onDemandRef) ready() bool {
	select {
	case <-od.slot.ready:
		return true
	default:
		return false
	}
}

// providerLister reads the providers of an interface once, without a
// watch or a write; the ZooKeeper registry implements it.
type providerLister interface {
	Lookup(ctx context.Context, iface, category string) ([]*url.URL, error)
}

// mappingReader reads the applications that provide an interface
// (/dubbo/mapping/<interface>); the ZooKeeper registry implements it.
type mappingReader interface {
	Mapping(ctx context.Context, iface string) ([]string, error)
}

// onDemandReference makes the on-demand reference of key for inv. The
// reference returned with an onDemandRef is in use (see use): the caller
// calls done when its call or stream is over.
func (c *Consumer) onDemandReference(ctx context.Context, key string, inv *rpc.Invocation) (*Reference, *onDemandRef, error) {
	if err := CheckService(inv.Service, inv.Version, inv.Group, inv.Method); err != nil {
		return nil, nil, err
	}
	rc := ReferenceConfig{Interface: inv.Service, Version: inv.Version, Group: inv.Group}
	if err := c.offered(ctx, rc); err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil, fmt.Errorf("reference %s: %w", key, ErrClosed)
	}
	// Another call may have made it meanwhile.
	if slot := c.refs[key]; slot != nil {
		c.mu.Unlock()
		r, err := slot.wait(ctx, key)
		return r, nil, err
	}
	od := c.onDemand[key]
	created := od == nil
	if created {
		if len(c.onDemand) >= c.cfg.OnDemand.Max && !c.evictLocked() {
			c.mu.Unlock()
			return nil, nil, &rpc.CallError{Kind: rpc.ErrPoolExhausted, Service: inv.Service, Method: inv.Method,
				Detail: fmt.Sprintf("all %d on-demand references have calls in flight (consumer.on-demand.max); list the service in consumer.references or raise the limit", c.cfg.OnDemand.Max)}
		}
		od = &onDemandRef{slot: &refSlot{ready: make(chan struct{})}}
		c.onDemand[key] = od
	}
	od.use()
	c.mu.Unlock()

	if created {
		od.slot.ref, od.slot.err = c.newReference(ctx, key, rc)
		if od.slot.err != nil {
			c.mu.Lock()
			if c.onDemand[key] == od {
				delete(c.onDemand, key) // let a later call try again
			}
			c.mu.Unlock()
		} else {
			// Connections open in the background; give the first one the
			// time a dial takes, as Java connects when it refers.
			od.slot.ref.WaitAvailable(ctx, checkWait)
			c.log.Debug("on-demand reference made", "reference", key)
		}
		close(od.slot.ready)
	}
	r, err := od.slot.wait(ctx, key)
	if err != nil {
		od.done()
		return nil, nil, err
	}
	return r, od, nil
}

// Offered answers rpc.ErrNoProvider when the registry lists no provider of
// the service, nil when it lists one (available or not: a call may still
// find none it can reach) or cannot be read. It only reads. The node's
// statistics reporter asks it to tell a monitor that is registered but
// down from none at all.
func (c *Consumer) Offered(ctx context.Context, iface, version, group string) error {
	return c.offered(ctx, ReferenceConfig{Interface: iface, Version: version, Group: group})
}

// offered answers rpc.ErrNoProvider when the registry says no provider
// offers rc's service; it only reads. At interface level that is a
// provider URL matching rc's version and group; at application level an
// application mapped to the interface that is not among the interface-level
// providers' (one registered at application level only, as dubbo-go's are
// by default, whose versions only its metadata tells). A registry that
// cannot be read, or cannot be asked, lets the reference be made, so that
// a cached provider list can serve while ZooKeeper is down.
func (c *Consumer) offered(ctx context.Context, rc ReferenceConfig) error {
	if c.reg == nil {
		return nil // newReference explains what to configure
	}
	lister, ok := c.reg.(providerLister)
	if !ok {
		return nil
	}
	var readErr error
	ifaceApps := map[string]bool{}
	if c.cfg.Migration != MigrationForceApplication {
		urls, err := lister.Lookup(ctx, rc.Interface, registry.CategoryProviders)
		if err != nil {
			readErr = err
		}
		want := c.consumerURL(rc)
		for _, u := range urls {
			if !rc.callable(u) {
				continue
			}
			if registry.MatchService(want, u) {
				return nil
			}
			ifaceApps[u.Param("application")] = true
		}
	}
	if c.cfg.Migration != MigrationForceInterface {
		if mr, ok := c.reg.(mappingReader); ok {
			apps, err := mr.Mapping(ctx, rc.Interface)
			if err != nil {
				readErr = err
			}
			for _, app := range apps {
				if !ifaceApps[app] {
					return nil
				}
			}
		}
	}
	if readErr != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("reference %s: %w", url.ServiceKey(rc.Interface, rc.Version, rc.Group), ctx.Err())
		}
		c.log.Debug("cannot ask the registry for providers; making the reference anyway", "interface", rc.Interface, "err", readErr)
		return nil
	}
	return &rpc.CallError{Kind: rpc.ErrNoProvider, Service: url.ServiceKey(rc.Interface, rc.Version, rc.Group),
		Detail: "no provider of this service is registered (no provider URL of " + rc.Interface + " with this version and group, and no application registered only at application level is mapped to it); check the interface, version and group"}
}

// evictLocked releases the least recently used on-demand reference that is
// built and has no call in flight; false when there is none. c.mu is held.
func (c *Consumer) evictLocked() bool {
	var victimKey string
	var victim *onDemandRef
	for key, od := range c.onDemand {
		if od.inflight.Load() > 0 || !od.ready() {
			continue
		}
		if victim == nil || od.lastUsed.Load() < victim.lastUsed.Load() {
			victimKey, victim = key, od
		}
	}
	if victim == nil {
		return false
	}
	c.releaseLocked(victimKey, victim, "to make room (consumer.on-demand.max)")
	return true
}

// releaseLocked removes an on-demand reference and closes it in the
// background. c.mu is held.
func (c *Consumer) releaseLocked(key string, od *onDemandRef, why string) {
	delete(c.onDemand, key)
	if od.slot.ref == nil {
		return
	}
	c.log.Debug("on-demand reference released", "reference", key, "why", why)
	c.releasing.Add(1)
	go func() {
		defer c.releasing.Done()
		od.slot.ref.close()
	}()
}

// startReleasing starts the goroutine that releases idle on-demand
// references; Close stops it.
func (c *Consumer) startReleasing() {
	ctx, cancel := context.WithCancel(context.Background())
	c.stopReleasing = cancel
	c.releasing.Add(1)
	go func() {
		defer c.releasing.Done()
		c.releaseIdle(ctx)
	}()
}

// releaseIdle releases, every half idle period, the on-demand references
// unused for the idle period: one is released between Idle and 1.5 × Idle
// after its last call ended.
func (c *Consumer) releaseIdle(ctx context.Context) {
	idle := c.cfg.OnDemand.Idle
	tick := time.NewTicker(max(idle/2, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			c.mu.Lock()
			for key, od := range c.onDemand {
				if od.inflight.Load() == 0 && od.ready() && now.Sub(time.Unix(0, od.lastUsed.Load())) >= idle {
					c.releaseLocked(key, od, fmt.Sprintf("unused for %v (consumer.on-demand.idle)", idle))
				}
			}
			c.mu.Unlock()
		}
	}
}
