package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Application-level discovery, as Dubbo 3's APPLICATION_FIRST migration
// step does it (PROTOCOLS.md C.5). Next to the interface-level
// subscription, a reference
//
//  1. watches /dubbo/mapping/<interface> for the provider applications;
//  2. watches /services/<app> for each application's instances;
//  3. gets each instance revision's MetadataInfo, once per (app, revision):
//     from the instance's MetadataService (storage type "local") or from
//     the registry (storage type "remote");
//  4. turns the ServiceInfo of the referenced service into provider URLs at
//     the instance's dubbo endpoint, and merges them with the
//     interface-level providers (see Reference.setProviders).
//
// Watch callbacks run on the registry loop, which must not wait for the
// network, so each reference has one goroutine (appDiscovery.run) that arms
// the instance watches and fetches metadata. An instance that leaves is
// dropped from the directory in the callback itself.
//
// What the reference found this way goes to the registry's cache file too
// (registry.CategoryApplicationProviders), as the interface-level lists
// do: a consumer started while the registry is unreachable calls the
// cached providers of each application until the registry lists that
// application's instances again and their metadata is resolved.

// Migration steps (Dubbo's dubbo.application.service-discovery.migration).
const (
	MigrationForceInterface   = "FORCE_INTERFACE"
	MigrationApplicationFirst = "APPLICATION_FIRST"
	MigrationForceApplication = "FORCE_APPLICATION"
)

func migrationStep(s string) (string, error) {
	switch strings.ToUpper(s) {
	case "", MigrationApplicationFirst:
		return MigrationApplicationFirst, nil
	case MigrationForceInterface:
		return MigrationForceInterface, nil
	case MigrationForceApplication:
		return MigrationForceApplication, nil
	}
	return "", fmt.Errorf("migration %q: use FORCE_INTERFACE, APPLICATION_FIRST or FORCE_APPLICATION", s)
}

// Dubbo's MetadataService, which providers serve for application-level
// discovery under group = application name.
const (
	metadataServiceInterface = "org.apache.dubbo.metadata.MetadataService"
	metadataServiceVersion   = "1.0.0"
)

// Timing of metadata fetches.
const (
	metadataTimeout  = 3 * time.Second // connect plus one getMetadataInfo call
	metadataRetryMin = time.Second
	metadataRetryMax = 30 * time.Second
)

// infoCache keeps the MetadataInfo of every (app, revision) the consumer
// fetched, shared by its references; concurrent requests for one key make
// one fetch. Failures are not kept, so the next request tries again.
type infoCache struct {
	mu      sync.Mutex
	entries map[string]*infoEntry
}

type infoEntry struct {
	done chan struct{}
	info *metadata.Info
	err  error
}

func newInfoCache() *infoCache { return &infoCache{entries: make(map[string]*infoEntry)} }

func (c *infoCache) get(ctx context.Context, app, revision string, fetch func(context.Context) (*metadata.Info, error)) (*metadata.Info, error) {
	key := app + "/" + revision
	c.mu.Lock()
	e := c.entries[key]
	if e == nil {
		e = &infoEntry{done: make(chan struct{})}
		c.entries[key] = e
		c.mu.Unlock()
		e.info, e.err = fetch(ctx)
		if e.err != nil {
			c.mu.Lock()
			delete(c.entries, key)
			c.mu.Unlock()
		}
		close(e.done)
		return e.info, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		return e.info, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fetchFailures says a failed metadata fetch once per instance and
// revision at warn, and its repeats at debug: every reference of the
// instance's services tries, and tries again with backoff. A provider that
// answers a newer revision than its instance node names is usually about
// to announce it (it exports its services one by one at start), so that
// failure is news only once it has lasted revisionGrace: then the node is
// one a restarted provider's dead session left (kill -9, then start),
// naming the new provider's address until that session expires.
type fetchFailures struct {
	mu     sync.Mutex
	warned map[string]string    // instance (app/id) -> the revision warned about
	ahead  map[string]time.Time // instance (app/id) + revision -> first "newer revision" answer
}

// revisionGrace is how long a provider may answer a newer revision than
// its instance node before that is worth a warning.
const revisionGrace = 3 * time.Second

func newFetchFailures() *fetchFailures {
	return &fetchFailures{warned: make(map[string]string), ahead: make(map[string]time.Time)}
}

// level is the level to log a failed fetch of in's revision at.
func (f *fetchFailures) level(in *metadata.Instance, err error, now time.Time) slog.Level {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, rev := in.Name+"/"+in.ID, in.Revision()
	if errors.Is(err, errRevisionAhead) {
		first, ok := f.ahead[key+"@"+rev]
		if !ok {
			f.ahead[key+"@"+rev] = now
		}
		if !ok || now.Sub(first) < revisionGrace {
			return slog.LevelDebug
		}
	}
	if w, ok := f.warned[key]; ok && w == rev {
		return slog.LevelDebug
	}
	f.warned[key] = rev
	return slog.LevelWarn
}

// resolved forgets in's failures: a later one is news again.
func (f *fetchFailures) resolved(in *metadata.Instance) {
	f.mu.Lock()
	key := in.Name + "/" + in.ID
	delete(f.warned, key)
	for k := range f.ahead {
		if strings.HasPrefix(k, key+"@") {
			delete(f.ahead, k)
		}
	}
	f.mu.Unlock()
}

// errRevisionAhead is wrapped by a fetch whose provider answered another
// revision than its instance node names.
var errRevisionAhead = errors.New("the provider at that address serves another revision")

// discoveryCache keeps what application-level discovery found in the
// registry's cache file; the ZooKeeper registry implements it.
type discoveryCache interface {
	// CachedURLs returns the cached list while the registry cannot be
	// reached; ok is false when it answers or nothing is cached.
	CachedURLs(key, category string) (urls []*url.URL, ok bool)
	CacheURLs(key, category string, urls []*url.URL) error
}

// resolved is what one instance contributes to a reference.
type resolved struct {
	revision string
	urls     []*url.URL
}

// appDiscovery is the application-level half of one reference.
type appDiscovery struct {
	r    *Reference
	disc registry.ServiceDiscovery
	log  *slog.Logger

	// The work (arming instance watches, fetching metadata) runs on a
	// goroutine started when something changes and gone once it is done,
	// not one per reference for its whole life: a consumer of 500
	// services had 500 goroutines waiting.
	ctx    context.Context // ends when the reference closes
	cancel context.CancelFunc
	runMu  sync.Mutex
	wg     sync.WaitGroup
	// running: a goroutine works; again: something changed since it
	// started; closed: start none.
	running, again, closed bool
	retry                  *time.Timer // a failed round tried again
	delay                  time.Duration

	cache discoveryCache // nil: no cache file

	mu            sync.Mutex
	apps          map[string]bool                 // mapped apps; true once watched
	instances     map[string][]*metadata.Instance // by app, as last notified
	resolved      map[string]resolved             // by app + "/" + instance id
	cached        map[string][]*url.URL           // by app: from the cache file, until its instances are resolved
	watchCancels  []func()
	mappingCancel func()
}

// startAppDiscovery watches the mapping of the reference's interface and
// starts the goroutine that follows its applications.
func (r *Reference) startAppDiscovery(ctx context.Context) error {
	d := &appDiscovery{
		r:         r,
		disc:      r.c.disc,
		log:       r.log,
		delay:     metadataRetryMin,
		apps:      make(map[string]bool),
		instances: make(map[string][]*metadata.Instance),
		resolved:  make(map[string]resolved),
		cached:    make(map[string][]*url.URL),
	}
	d.cache, _ = r.c.reg.(discoveryCache)
	if d.cache != nil {
		if urls, ok := d.cache.CachedURLs(r.key, registry.CategoryApplicationProviders); ok && len(urls) > 0 {
			d.log.Warn("registry unreachable, using cached application-level providers", "urls", len(urls))
			for _, u := range urls {
				app := u.Param("application")
				d.cached[app] = append(d.cached[app], u)
			}
			d.mu.Lock()
			d.publish()
			d.mu.Unlock()
		}
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	cancel, err := d.disc.WatchMapping(ctx, r.rc.Interface, d.onMapping)
	if err != nil {
		d.close()
		return fmt.Errorf("reference %s: %w", r.key, err)
	}
	d.mu.Lock()
	d.mappingCancel = cancel
	d.mu.Unlock()
	r.apps = d
	return nil
}

// poke has the work done: by a new goroutine, or by the one running.
func (d *appDiscovery) poke() {
	d.runMu.Lock()
	defer d.runMu.Unlock()
	switch {
	case d.closed:
	case d.running:
		d.again = true
	default:
		d.running = true
		d.wg.Add(1)
		go d.run()
	}
}

// onMapping runs on the registry loop. Applications are only added: a
// mapping is append-only in Dubbo, and an application that is gone has no
// instances left to offer anyway.
func (d *appDiscovery) onMapping(apps []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	added := false
	for _, app := range apps {
		if _, ok := d.apps[app]; !ok {
			d.apps[app] = false
			added = true
		}
	}
	// The registry answers: cached applications it no longer maps are gone.
	n := len(d.cached)
	maps.DeleteFunc(d.cached, func(app string, _ []*url.URL) bool { return !slices.Contains(apps, app) })
	if len(d.cached) != n {
		d.publish()
	}
	if added {
		d.poke()
	}
}

// onInstances runs on the registry loop with the full instance list of app.
// Instances that left are dropped from the directory at once; new
// revisions are left to run.
func (d *appDiscovery) onInstances(app string, list []*metadata.Instance) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.instances[app] = list
	d.publish()
	d.poke()
}

// run arms the instance watches of new applications and resolves instance
// revisions until nothing changed since it began, and has a failed round
// tried again after a backoff.
func (d *appDiscovery) run() {
	defer d.wg.Done()
	for {
		ok := d.watchApps(d.ctx)
		ok = d.resolve(d.ctx) && ok
		d.runMu.Lock()
		if d.retry != nil {
			d.retry.Stop()
			d.retry = nil
		}
		switch {
		case d.closed:
		case ok:
			d.delay = metadataRetryMin
		default:
			d.retry = time.AfterFunc(d.delay, d.poke)
			d.delay = min(2*d.delay, metadataRetryMax)
		}
		if d.again && !d.closed {
			d.again = false
			d.runMu.Unlock()
			continue
		}
		d.running = false
		d.runMu.Unlock()
		return
	}
}

// watchApps arms the instance watch of every application not watched yet.
func (d *appDiscovery) watchApps(ctx context.Context) bool {
	d.mu.Lock()
	var todo []string
	for app, watched := range d.apps {
		if !watched {
			todo = append(todo, app)
		}
	}
	d.mu.Unlock()
	slices.Sort(todo)
	ok := true
	for _, app := range todo {
		cancel, err := d.disc.WatchInstances(ctx, app, d.onInstances)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("cannot watch the instances of a provider application; will retry", "app", app, "err", err)
			}
			ok = false
			continue
		}
		d.mu.Lock()
		d.apps[app] = true
		d.watchCancels = append(d.watchCancels, cancel)
		d.mu.Unlock()
	}
	return ok
}

// resolve fetches the MetadataInfo of every instance whose revision has not
// been resolved yet and publishes after each one. An instance whose fetch
// fails keeps the URLs of its last good revision.
func (d *appDiscovery) resolve(ctx context.Context) bool {
	ok := true
	var holds []func()
	defer func() {
		for _, release := range holds {
			release()
		}
	}()
	for _, in := range d.unresolved() {
		fctx, cancel := context.WithTimeout(ctx, metadataTimeout)
		info, release, err := d.r.c.metadataInfo(fctx, in, d.r.connections(), d.r.heartbeat())
		cancel()
		if release != nil {
			holds = append(holds, release) // keep the connection until the directory has it
		}
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			d.log.Log(ctx, d.r.c.failures.level(in, err, time.Now()),
				"cannot get the metadata of a provider instance; keeping its last providers, will retry",
				"app", in.Name, "instance", in.ID, "revision", in.Revision(), "err", err)
			ok = false
			continue
		}
		d.r.c.failures.resolved(in)
		urls := d.r.instanceURLs(in, info)
		d.mu.Lock()
		d.resolved[in.Name+"/"+in.ID] = resolved{revision: in.Revision(), urls: urls}
		d.publish()
		d.mu.Unlock()
	}
	return ok
}

// unresolved lists the current instances whose revision is not resolved.
func (d *appDiscovery) unresolved() []*metadata.Instance {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*metadata.Instance
	for _, app := range slices.Sorted(maps.Keys(d.instances)) {
		for _, in := range d.instances[app] {
			if res, ok := d.resolved[app+"/"+in.ID]; !ok || res.revision != in.Revision() {
				out = append(out, in)
			}
		}
	}
	return out
}

// publish hands the providers of the present instances to the reference
// and forgets instances that left; d.mu is held, so publications keep
// their order. Cached providers stand in for an application whose
// instances the registry has not listed yet, and for an instance whose
// metadata is not resolved yet; an application's cached providers are
// dropped once each of its instances is resolved. A list made without
// them is written to the cache file.
func (d *appDiscovery) publish() {
	present := make(map[string]bool)
	var urls []*url.URL
	fromCache := false
	for app, list := range d.instances {
		settled := true
		for _, in := range list {
			key := app + "/" + in.ID
			present[key] = true
			if res, ok := d.resolved[key]; ok {
				urls = append(urls, res.urls...)
				continue
			}
			settled = false
			addrs := instanceAddresses(in)
			for _, u := range d.cached[app] {
				if addrs[u.Address()] {
					urls = append(urls, u)
					fromCache = true
				}
			}
		}
		if settled {
			delete(d.cached, app)
		}
	}
	for app, cached := range d.cached {
		if _, listed := d.instances[app]; !listed {
			urls = append(urls, cached...)
			fromCache = true
		}
	}
	maps.DeleteFunc(d.resolved, func(k string, _ resolved) bool { return !present[k] })
	d.r.setProviders(sourceApplication, urls)
	if d.cache != nil && !fromCache {
		sorted := slices.Clone(urls)
		registry.SortURLs(sorted)
		if err := d.cache.CacheURLs(d.r.key, registry.CategoryApplicationProviders, sorted); err != nil {
			d.log.Warn("registry cache not written", "err", err)
		}
	}
}

// instanceAddresses are the host:port of each of the instance's endpoints
// (one per protocol) and of the instance itself.
func instanceAddresses(in *metadata.Instance) map[string]bool {
	eps, _ := in.Endpoints()
	addrs := map[string]bool{net.JoinHostPort(in.Address, strconv.Itoa(in.Port)): true}
	for _, ep := range eps {
		addrs[net.JoinHostPort(in.Address, strconv.Itoa(ep.Port))] = true
	}
	return addrs
}

// close stops the work and the watches.
func (d *appDiscovery) close() {
	d.runMu.Lock()
	d.closed = true
	if d.retry != nil {
		d.retry.Stop()
	}
	d.runMu.Unlock()
	d.cancel()
	d.wg.Wait()
	d.mu.Lock()
	cancels := append(d.watchCancels, d.mappingCancel)
	d.watchCancels, d.mappingCancel = nil, nil
	d.mu.Unlock()
	for _, c := range cancels {
		if c != nil {
			c()
		}
	}
}

// instanceURLs are the providers of the reference's service that info
// lists for instance in (providerURLs), of the protocols the reference
// calls.
func (r *Reference) instanceURLs(in *metadata.Instance, info *metadata.Info) []*url.URL {
	return providerURLs(in, info, r.log, func(s *metadata.ServiceInfo, protocol string) bool {
		return s.Serves(r.rc.Interface, r.rc.Group, r.rc.Version) && callableProtocol(r.rc.Protocol, protocol)
	})
}

// providerURLs are the providers of the services keep selects that info
// lists for instance in, at the instance's endpoint of their protocol
// (MetadataInfo keys a service with its protocol; dubbo.endpoints gives
// each protocol's port).
func providerURLs(in *metadata.Instance, info *metadata.Info, log *slog.Logger, keep func(s *metadata.ServiceInfo, protocol string) bool) []*url.URL {
	eps, err := in.Endpoints()
	if err != nil {
		log.Warn("provider instance with unreadable endpoints; using its port", "instance", in.ID, "err", err)
	}
	var out []*url.URL
	for _, key := range slices.Sorted(maps.Keys(info.Services)) {
		s := info.Services[key]
		protocol := cmp.Or(s.Protocol, ProtocolDubbo)
		if !keep(s, protocol) {
			continue
		}
		port := endpointPort(eps, protocol)
		if port == 0 {
			port = cmp.Or(s.Port, in.Port)
		}
		u := s.ProviderURL(cmp.Or(info.App, in.Name), in.Address, port)
		// MetadataInfo leaves the start time out (it would change the
		// revision); Java's InstanceAddressURL reads it from the instance,
		// and without it a fresh provider would skip its warm-up weight.
		if ts := in.Meta(metadata.KeyTimestamp); ts != "" && u.Param(url.KeyTimestamp) == "" {
			u.SetParam(url.KeyTimestamp, ts)
		}
		out = append(out, u)
	}
	return out
}

// InstanceProviders are the provider URLs of every service instance in
// serves, as application-level discovery builds them: from the
// MetadataInfo of its revision (asked of its MetadataService, or read
// from the registry for remote metadata; kept per revision), at the
// instance's endpoint of each service's protocol. The console lists
// application-level providers with it.
func (c *Consumer) InstanceProviders(ctx context.Context, in *metadata.Instance) ([]*url.URL, error) {
	info, release, err := c.metadataInfo(ctx, in, 0, 0)
	if release != nil {
		release()
	}
	if err != nil {
		return nil, fmt.Errorf("metadata of instance %s of %s: %w", in.ID, in.Name, err)
	}
	return providerURLs(in, info, c.log, func(*metadata.ServiceInfo, string) bool { return true }), nil
}

func endpointPort(eps []metadata.Endpoint, protocol string) int {
	for _, ep := range eps {
		if ep.Protocol == protocol && ep.Port > 0 {
			return ep.Port
		}
	}
	return 0
}

// metadataInfo gets the MetadataInfo of in's revision, from the cache, the
// registry or the instance's MetadataService. release, when not nil, must
// be called once the caller no longer needs the connection it opened.
func (c *Consumer) metadataInfo(ctx context.Context, in *metadata.Instance, connections int, heartbeat time.Duration) (info *metadata.Info, release func(), err error) {
	rev := in.Revision()
	if rev == "" || rev == metadata.EmptyRevision {
		return &metadata.Info{App: in.Name, Revision: rev}, nil, nil
	}
	info, err = c.infos.get(ctx, in.Name, rev, func(ctx context.Context) (*metadata.Info, error) {
		if in.Meta(metadata.KeyStorageType) == metadata.StorageRemote {
			return c.disc.GetAppMetadata(ctx, in.Name, rev)
		}
		var info *metadata.Info
		var err error
		info, release, err = c.callMetadataService(ctx, in, rev, connections, heartbeat)
		return info, err
	})
	return info, release, err
}

// callMetadataService calls getMetadataInfo(revision) on the instance's
// MetadataService, over the protocol and at the endpoint its
// dubbo.metadata-service.url-params name (the port there, else that
// protocol's endpoint's), through the shared client of that address: over
// tri in wrapper mode, as dubbo-go's consumers call it.
func (c *Consumer) callMetadataService(ctx context.Context, in *metadata.Instance, rev string, connections int, heartbeat time.Duration) (*metadata.Info, func(), error) {
	params, err := in.MetadataServiceParams()
	if err != nil {
		return nil, nil, err
	}
	proto := cmp.Or(params["protocol"], ProtocolDubbo)
	if !callableProtocol("", proto) {
		return nil, nil, fmt.Errorf("MetadataService of %s is served over %q; only %v are supported (configure the provider's metadata-service protocol, or remote metadata)", in.ID, proto, Protocols())
	}
	port, _ := strconv.Atoi(params["port"])
	if port == 0 {
		eps, _ := in.Endpoints()
		port = cmp.Or(endpointPort(eps, proto), in.Port)
	}
	addr := net.JoinHostPort(in.Address, strconv.Itoa(port))
	if ms, _ := strconv.Atoi(params[keyHeartbeat]); heartbeat <= 0 && ms > 0 {
		// The connection is the provider's, which the references share:
		// it pings at the provider's heartbeat too.
		heartbeat = time.Duration(ms) * time.Millisecond
	}
	client := c.clients.acquire(proto, addr, clientOptions{connections: connections, heartbeat: heartbeat})
	release := func() { c.clients.release(proto, addr) }
	if err := waitClient(ctx, client); err != nil {
		return nil, release, &rpc.CallError{Kind: rpc.ErrConnection, Service: metadataServiceInterface,
			Method: "getMetadataInfo", Address: addr, Detail: "not connected: " + err.Error()}
	}
	res, err := client.Invoke(ctx, &rpc.Invocation{
		Service:    metadataServiceInterface,
		Version:    cmp.Or(params["version"], metadataServiceVersion),
		Group:      in.Name,
		Method:     "getMetadataInfo",
		ParamTypes: []string{"java.lang.String"},
		Args:       []any{rev},
	})
	if err != nil {
		return nil, release, err
	}
	if res.Exception != nil {
		return nil, release, fmt.Errorf("getMetadataInfo(%s) at %s: %w", rev, addr, res.Exception)
	}
	info, err := metadata.InfoFromValue(res.Value)
	if err != nil {
		return nil, release, fmt.Errorf("getMetadataInfo(%s) at %s: %w", rev, addr, err)
	}
	if info.Revision != "" && info.Revision != rev {
		// Our providers answer with their newest revision; the instance node
		// will announce it soon, and the cache must not file it under rev.
		return nil, release, fmt.Errorf("getMetadataInfo(%s) at %s answered revision %s: %w (it is about to announce it, "+
			"or the instance node was left by a session that is gone, a restarted provider's, and goes when that session expires)",
			rev, addr, info.Revision, errRevisionAhead)
	}
	return info, release, nil
}

// waitClient waits until client has a connection up.
func waitClient(ctx context.Context, client client) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !client.Available() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// Sources of provider URLs for setProviders.
const (
	sourceInterface = iota
	sourceApplication
)

// setProviders records the providers one discovery found and updates the
// directory with the merge of both, as APPLICATION_FIRST does: the union,
// one provider per address, the interface-level URL winning because it
// carries every parameter. FORCE_INTERFACE and FORCE_APPLICATION use one
// source only.
func (r *Reference) setProviders(source int, ps []*url.URL) {
	r.provMu.Lock()
	defer r.provMu.Unlock()
	if source == sourceInterface {
		r.ifaceURLs = ps
	} else {
		r.appURLs = ps
	}
	var merged []*url.URL
	seen := make(map[string]bool)
	add := func(us []*url.URL) {
		for _, u := range us {
			if a := u.Address(); !seen[a] {
				seen[a] = true
				merged = append(merged, u)
			}
		}
	}
	if r.migration != MigrationForceApplication {
		add(r.ifaceURLs)
	}
	if r.migration != MigrationForceInterface {
		add(r.appURLs)
	}
	r.dyn.Update(merged)
	r.watchProviderApp(merged)
}
