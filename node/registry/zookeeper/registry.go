// Package zookeeper is the Dubbo registry on ZooKeeper, laid out exactly as
// Apache Dubbo 3 lays it out (PROTOCOLS.md C.2–C.5), so stock Java Dubbo and
// dubbo-go nodes find our providers and we find theirs.
//
// One [Registry] owns one ZooKeeper [Session] and one event loop goroutine.
// Every watch notification and session change goes to that loop, which
// re-reads the watched node, re-arms the watch and notifies listeners; so
// listeners are called one at a time, in order. Roles get a Registry from
// a configured address with [Open]; [Dial] gives a Session alone (the
// connection, its digest credentials, its event queue) to a reader that
// follows the registry's nodes itself, the console's catalog. Three groups of features
// share the session:
//
//   - interface level (registry.Registry): Register / Unregister URL leaves
//     under /dubbo/<interface>/<category>, Subscribe to the providers,
//     routers and configurators folders;
//   - config center: Watch / Get / Publish / Delete of rule documents under
//     /dubbo/config/dubbo/<key>;
//   - application level (Dubbo 3): RegisterInstance under /services/<app>,
//     the interface → application mapping, the metadata report, and
//     WatchInstances for consumers.
//
// Failures follow the registry package contract: while ZooKeeper is
// unreachable the last lists stay in force and nothing is notified; on
// reconnection unfinished work is retried; when the session expires every
// ephemeral node is re-created and every watch re-armed. Each ephemeral node
// we own has an exists watch: deleted by someone else while the session
// lives, it is created again at once. A cache file keeps the last lists so
// a consumer can start while ZooKeeper is down.
//
// Listeners and watch functions run on the loop: they must return quickly
// and must not call Subscribe, Unsubscribe, Watch or WatchInstances (those
// wait for the loop). A ctx is checked before each ZooKeeper request; a
// request already sent ends with its reply or with the connection (after
// one pass over the hosts when none answers).
package zookeeper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Registry is a ZooKeeper-backed Dubbo registry. Its methods are safe for
// concurrent use. Create it with New and stop it with Close.
type Registry struct {
	sess  *Session
	set   settings
	conn  *zk.Conn      // sess.Conn()
	wait  time.Duration // Options.ConnectTimeout
	log   *slog.Logger
	cache *registry.FileCache

	cancel context.CancelFunc
	done   chan struct{} // closed when the loop has exited

	connectedOnce sync.Once
	connected     chan struct{} // closed at the first session
	born          time.Time

	// owned are the nodes this registry created and must keep: URL leaves
	// and instance nodes, by path. Written by callers and by the loop.
	mu    sync.Mutex
	owned map[string]*ownedNode

	// Only the loop goroutine touches the fields below.
	session  int64 // id of the last session we saw established
	folders  map[string]*folder
	subs     []*subscription
	configs  map[string]*configWatch
	watchers map[string]*instanceWatch // by /services/<app> path
	nextID   int
}

// ownedNode is one node to keep in ZooKeeper.
type ownedNode struct {
	path      string
	data      []byte
	ephemeral bool
	container bool // parents are created as containers (Curator x-discovery)
	pending   bool // last attempt failed; retry on (re)connection
	// ownDelete: we deleted the node at this path ourselves (replacing an
	// instance, taking over a leftover leaf); its deletion event is not news.
	ownDelete bool
}

// child is a decoded child of a folder and its URL printed (nil: the node
// name did not decode).
type child struct {
	u       *url.URL
	printed string
}

// folder is one watched category folder: /dubbo/<iface>/<category>.
type folder struct {
	path, iface, category string
	subs                  []*subscription // those that want this folder
	urls                  []*url.URL      // decoded children, sorted
	// children are the decoded children by node name, so a re-read
	// decodes and prints only the nodes that are new.
	children map[string]child
	loaded   bool // urls came from ZooKeeper at least once
	dirty    bool // the last read failed: re-read on reconnection
}

// subscription is one consumer's interest.
type subscription struct {
	consumer   *url.URL
	key        string // cache key: the consumer's service key
	iface      string
	categories []string
	listener   registry.Listener
	last       map[string][]*url.URL
	notified   map[string]bool
}

// New connects to the ZooKeeper ensemble named by registryURL
// (zookeeper://[user:password@]host:port[,host:port...][?group=&session=&timeout=]).
// It does not wait for the connection; see WaitConnected, and Open, which
// does both from an address.
func New(registryURL *url.URL, opts Options) (*Registry, error) {
	set, err := parseSettings(registryURL)
	if err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("registry", strings.Join(set.servers, ","))
	cache, err := registry.OpenFileCache(opts.CacheFile)
	if err != nil {
		logger.Warn("registry cache unusable, starting empty", "err", err)
	}
	sess, err := dial(registryURL, set, SessionOptions{Logger: logger, Dialer: opts.Dialer})
	if err != nil {
		return nil, err
	}
	r := &Registry{
		sess:      sess,
		set:       set,
		conn:      sess.Conn(),
		wait:      cmp.Or(opts.ConnectTimeout, DefaultConnectTimeout),
		log:       logger,
		cache:     cache,
		done:      make(chan struct{}),
		connected: make(chan struct{}),
		born:      time.Now(),
		owned:     make(map[string]*ownedNode),
		folders:   make(map[string]*folder),
		configs:   make(map[string]*configWatch),
		watchers:  make(map[string]*instanceWatch),
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.loop(ctx)
	return r, nil
}

// WaitConnected blocks until the first session is established or ctx ends.
func (r *Registry) WaitConnected(ctx context.Context) error {
	select {
	case <-r.connected:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("zookeeper %s: %w: %w", strings.Join(r.set.servers, ","), registry.ErrUnavailable, ctx.Err())
	}
}

// reachable fails with registry.ErrUnavailable once ZooKeeper has been out
// of reach for the connect timeout: requests then fail at once instead of
// each waiting for the client's next connection attempt (a second apart),
// which would make a start-up with the registry down take seconds per
// reference. What they would have done is retried on reconnection, as for
// any failure.
func (r *Registry) reachable() error {
	if d := r.sess.LostFor(); d > 0 && d >= r.wait {
		return fmt.Errorf("%w: zookeeper %s out of reach for %v", registry.ErrUnavailable, strings.Join(r.set.servers, ","), d.Round(time.Second))
	}
	return nil
}

// ready is checked before each one-shot request.
func (r *Registry) ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return r.reachable()
}

// Close stops the loop and closes the session, which removes every
// ephemeral node at once. Persistent registrations (dynamic=false) stay,
// as in Java Dubbo. The cache file gets the lists not written yet.
func (r *Registry) Close() error {
	r.cancel()
	<-r.done
	r.sess.Close()
	if err := r.cache.Flush(); err != nil {
		r.log.Warn("registry cache not written", "err", err)
	}
	return nil
}

// Register creates the URL's leaf node (PROTOCOLS.md C.2): ephemeral unless
// dynamic=false. An ephemeral leaf left by an older session is deleted and
// re-created so that it belongs to this session.
func (r *Registry) Register(ctx context.Context, u *url.URL) error {
	n := &ownedNode{path: r.urlPath(u), ephemeral: u.BoolParam("dynamic", true)}
	r.mu.Lock()
	r.owned[n.path] = n
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := r.ensureOwned(n, true); err != nil {
		return fmt.Errorf("register %s: %w", u.Redacted(), err)
	}
	return nil
}

// Unregister deletes the URL's leaf node.
func (r *Registry) Unregister(ctx context.Context, u *url.URL) error {
	if err := r.unregister(ctx, r.urlPath(u)); err != nil {
		return fmt.Errorf("unregister %s: %w", u.Redacted(), err)
	}
	return nil
}

// unregister stops keeping the node at p and deletes it; one already gone
// is fine.
func (r *Registry) unregister(ctx context.Context, p string) error {
	r.mu.Lock()
	delete(r.owned, p)
	r.mu.Unlock()
	if err := r.ready(ctx); err != nil {
		return err
	}
	if err := r.conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return classify(err)
	}
	return nil
}

// Subscribe watches the consumer's categories of its interface and notifies
// l before it returns: from ZooKeeper, or from the cache file when ZooKeeper
// cannot be reached (Stale). With neither, it returns an error wrapping
// registry.ErrUnavailable; the subscription stays and is served once
// ZooKeeper answers.
func (r *Registry) Subscribe(ctx context.Context, consumer *url.URL, l registry.Listener) error {
	iface := registry.Interface(consumer)
	if iface == "" || iface == "*" {
		return fmt.Errorf("subscribe %s: need one interface (wildcard subscriptions are not supported; use Services)", consumer.Redacted())
	}
	// Give a registry that was just created the chance to connect before
	// falling back to the cache.
	if d := r.wait - time.Since(r.born); d > 0 {
		wctx, cancel := context.WithTimeout(ctx, d)
		_ = r.WaitConnected(wctx)
		cancel()
	}
	var err error
	run := func() {
		if ctx.Err() == nil { // the caller may have given up while the loop was busy
			err = r.subscribe(consumer, l)
		}
	}
	if derr := r.do(ctx, run); derr != nil {
		return derr
	}
	return err
}

// Unsubscribe stops the subscriptions made with an equal consumer URL.
func (r *Registry) Unsubscribe(ctx context.Context, consumer *url.URL) error {
	return r.do(ctx, func() {
		kept := r.subs[:0]
		for _, s := range r.subs {
			if !s.consumer.Equal(consumer) {
				kept = append(kept, s)
				continue
			}
			// Folders nobody subscribes to any more are forgotten; their
			// watch fires once more and is then ignored.
			for _, cat := range s.categories {
				p := r.set.categoryPath(s.iface, cat)
				if f := r.folders[p]; f != nil {
					f.subs = slices.DeleteFunc(f.subs, func(x *subscription) bool { return x == s })
					if len(f.subs) == 0 {
						delete(r.folders, p)
					}
				}
			}
		}
		clear(r.subs[len(kept):])
		r.subs = kept
	})
}

func (r *Registry) urlPath(u *url.URL) string {
	return joinPath(r.set.categoryPath(registry.Interface(u), registry.Category(u)), u.Encode())
}

// subscribe runs in the loop.
func (r *Registry) subscribe(consumer *url.URL, l registry.Listener) error {
	s := &subscription{
		consumer:   consumer.Clone(),
		key:        consumer.ServiceKey(),
		iface:      registry.Interface(consumer),
		categories: registry.SubscribedCategories(consumer),
		listener:   l,
		last:       make(map[string][]*url.URL),
		notified:   make(map[string]bool),
	}
	r.subs = append(r.subs, s)
	var failed []string
	for _, cat := range s.categories {
		p := r.set.categoryPath(s.iface, cat)
		f := r.folders[p]
		if f == nil {
			f = &folder{path: p, iface: s.iface, category: cat, children: make(map[string]child)}
			r.folders[p] = f
		}
		f.subs = append(f.subs, s)
		if !f.loaded {
			if r.conn.State() == zk.StateHasSession {
				r.readFolder(f)
			} else {
				f.dirty = true // read on (re)connection; no point waiting for errors now
			}
		}
		if f.loaded {
			r.notify(s, f.category, f.urls, false)
		} else {
			failed = append(failed, cat)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	cached, ok := r.cache.Get(s.key)
	if !ok {
		return fmt.Errorf("subscribe %s: %w: ZooKeeper %s unreachable and no cached list in %q",
			s.key, registry.ErrUnavailable, strings.Join(r.set.servers, ","), r.cache.Path())
	}
	for _, cat := range failed {
		r.log.Warn("zookeeper unreachable, using cached list", "service", s.key, "category", cat, "urls", len(cached[cat]))
		r.notify(s, cat, cached[cat], true)
	}
	return nil
}

// readFolder lists a category folder with a child watch, creating it when
// missing as Java consumers do, then notifies the subscribers whose view
// changed. On failure the previous list stays.
func (r *Registry) readFolder(f *folder) {
	children, _, _, err := r.conn.ChildrenW(f.path)
	if errors.Is(err, zk.ErrNoNode) {
		if err = r.ensurePath(f.path, false); err == nil {
			children, _, _, err = r.conn.ChildrenW(f.path)
		}
	}
	if err != nil {
		f.dirty = true
		r.log.Warn("zookeeper: cannot read folder, keeping last list", "path", f.path, "err", err)
		return
	}
	// A folder of n providers changes one node at a time: decoding only
	// the new names keeps an event's cost from growing with n.
	// Each is printed once too, for the order (registry.SortURLs's).
	kids := make(map[string]child, len(children))
	sorted := make([]child, 0, len(children))
	for _, name := range children {
		c, known := f.children[name]
		if !known {
			u, err := url.Decode(name)
			if err != nil {
				r.log.Warn("zookeeper: skipping undecodable node", "path", f.path, "node", name, "err", err)
			} else {
				c = child{u, u.String()}
			}
		}
		kids[name] = c
		if c.u != nil {
			sorted = append(sorted, c)
		}
	}
	slices.SortFunc(sorted, func(a, b child) int { return strings.Compare(a.printed, b.printed) })
	urls := make([]*url.URL, len(sorted))
	for i, c := range sorted {
		urls[i] = c.u
	}
	f.children, f.urls, f.loaded, f.dirty = kids, urls, true, false
	for _, s := range f.subs {
		r.notify(s, f.category, f.urls, false)
	}
}

// notify hands s the URLs of category that match it, unless it already has
// exactly that list.
func (r *Registry) notify(s *subscription, category string, all []*url.URL, stale bool) {
	var matched []*url.URL
	for _, u := range all {
		// The folder says the category; 2.6 admins wrote routes without one.
		if registry.MatchService(s.consumer, u) {
			matched = append(matched, u)
		}
	}
	if matched == nil {
		matched = []*url.URL{}
	}
	if s.notified[category] && registry.SameURLs(s.last[category], matched) {
		return
	}
	s.last[category], s.notified[category] = matched, true
	if !stale {
		if err := r.cache.Put(s.key, category, matched); err != nil {
			r.log.Warn("registry cache not written", "err", err)
		}
	}
	s.listener.Notify(registry.Notification{Consumer: s.consumer, Category: category, URLs: matched, Stale: stale})
}

// ensureOwned creates n (and its parents) unless it exists and is ours, and
// arms its exists watch. An existing ephemeral node of another session is
// replaced when takeOver is set (a registration: the node is a leftover of
// an older session of ours), else left to that session (see ownedEvent).
// created reports whether n was missing.
func (r *Registry) ensureOwned(n *ownedNode, takeOver bool) (created bool, err error) {
	created, err = r.createOwned(n, takeOver)
	r.mu.Lock()
	if cur := r.owned[n.path]; cur == n {
		n.pending = err != nil
	}
	r.mu.Unlock()
	return created, err
}

func (r *Registry) createOwned(n *ownedNode, takeOver bool) (created bool, err error) {
	if err := r.reachable(); err != nil {
		return false, err
	}
	parent := n.path[:strings.LastIndexByte(n.path, '/')]
	if err := r.ensurePath(parent, n.container); err != nil {
		return false, err
	}
	flags := int32(0)
	if n.ephemeral {
		flags = zk.FlagEphemeral
	}
	for attempt := 0; attempt < 3; attempt++ {
		_, err := r.conn.Create(n.path, n.data, flags, r.set.acl())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return false, classify(err)
		}
		created = created || err == nil
		if !n.ephemeral {
			if err == nil {
				return true, nil
			}
			if _, err := r.conn.Set(n.path, n.data, -1); err != nil {
				if errors.Is(err, zk.ErrNoNode) {
					continue // deleted meanwhile: create again
				}
				return false, classify(err)
			}
			return false, nil
		}
		// The exists watch tells the loop when someone else deletes the
		// node while our session lives (ownedEvent).
		ok, stat, _, err := r.conn.ExistsW(n.path)
		if err != nil {
			return false, classify(err)
		}
		if !ok {
			continue // deleted meanwhile: create again
		}
		if stat.EphemeralOwner == r.conn.SessionID() || !takeOver {
			return created, nil
		}
		// Left by an older session that has not expired yet: take it over
		// so that it disappears with us, as Java and dubbo-go do. Delete
		// and create are one transaction: with a gap between them, the
		// other session (if alive) re-creates the node it lost (see
		// ownedEvent) and each takes it from the other until we give up.
		switch err := r.replaceOwned(n, stat.Version, flags); {
		case err == nil:
			created = true // the next round arms the watch on our node
		case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
			// changed meanwhile: look again
		default:
			return false, classify(err)
		}
	}
	return false, fmt.Errorf("%s kept reappearing while being re-created", n.path)
}

// replaceOwned deletes the node at n's path, if still at version, and
// creates ours in one transaction, marking the deletion as ours for
// ownedEvent.
func (r *Registry) replaceOwned(n *ownedNode, version, flags int32) error {
	r.mu.Lock()
	n.ownDelete = true
	r.mu.Unlock()
	res, err := r.conn.Multi(
		&zk.DeleteRequest{Path: n.path, Version: version},
		&zk.CreateRequest{Path: n.path, Data: n.data, Acl: r.set.acl(), Flags: flags})
	for _, op := range res {
		if err == nil {
			err = op.Error // the failed operation, if the header does not say
		}
	}
	if err != nil {
		r.mu.Lock()
		n.ownDelete = false // nothing was deleted: no event will come
		r.mu.Unlock()
	}
	return err
}

// deleteOwned deletes whatever node is at n's path, for n to replace it,
// and marks the deletion as ours for ownedEvent. A missing node is fine.
func (r *Registry) deleteOwned(n *ownedNode) error {
	if err := r.reachable(); err != nil {
		return err
	}
	r.mu.Lock()
	n.ownDelete = true
	r.mu.Unlock()
	err := r.conn.Delete(n.path, -1)
	if err == nil {
		return nil
	}
	r.mu.Lock()
	n.ownDelete = false // nothing was deleted: no event will come
	r.mu.Unlock()
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// ownedEvent runs in the loop on an event of a watched node. An ephemeral
// node of ours that someone else deleted while our session lives (an
// operator, a buggy tool) is registered again at once; Java Dubbo would
// stay unregistered until its session ends. If another live session has
// registered the same path meanwhile (the same URL registered twice, e.g.
// by two consumers of one application in one process), the node is left
// to it and watched: taking it back would delete it under that session,
// which would take it back in turn, for ever. Any other event of such a
// node only re-arms its watch.
func (r *Registry) ownedEvent(ev zk.Event) {
	r.mu.Lock()
	n := r.owned[ev.Path]
	ours := false
	if n != nil && ev.Type == zk.EventNodeDeleted {
		ours, n.ownDelete = n.ownDelete, false
	}
	r.mu.Unlock()
	if n == nil || !n.ephemeral {
		return
	}
	if ev.Type == zk.EventNodeDataChanged {
		// Updated in place (UpdateInstance): still there, watch it again.
		if ok, _, _, err := r.conn.ExistsW(n.path); err == nil && ok {
			return
		}
	}
	r.mu.Lock()
	owned := r.owned[ev.Path] == n
	r.mu.Unlock()
	if !owned {
		return // unregistered or replaced meanwhile: not ours to re-create
	}
	created, err := r.ensureOwned(n, false)
	switch {
	case err != nil:
		r.log.Warn("zookeeper: cannot re-create our node; will retry on reconnection", "path", n.path, "event", ev.Type.String(), "err", err)
	case created && !ours:
		r.log.Warn("zookeeper: our node was deleted by someone else while our session lives; registered it again", "path", n.path)
	case !created && !ours && ev.Type == zk.EventNodeDeleted:
		r.log.Warn("zookeeper: our node was replaced by another session's registration of the same path; leaving it to that session", "path", n.path)
	}
}

// ensurePath creates every missing level of p as a persistent (or
// container) node, tolerating concurrent creators.
func (r *Registry) ensurePath(p string, container bool) error {
	if p == "" || p == "/" {
		return nil
	}
	if ok, _, err := r.conn.Exists(p); err != nil {
		return classify(err)
	} else if ok {
		return nil
	}
	for i := 1; i <= len(p); i++ {
		if i != len(p) && p[i] != '/' {
			continue
		}
		var err error
		if container {
			_, err = r.conn.CreateContainer(p[:i], nil, zk.FlagContainer, r.set.acl())
		} else {
			_, err = r.conn.Create(p[:i], nil, 0, r.set.acl())
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p[:i], classify(err))
		}
	}
	return nil
}

// classify marks connection failures with registry.ErrUnavailable.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrConnectionClosed),
		errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrSessionMoved), errors.Is(err, zk.ErrClosing):
		return fmt.Errorf("%w: %w", registry.ErrUnavailable, err)
	}
	return err
}

// CachedURLs returns the list the cache file keeps under key and category
// while ZooKeeper cannot be reached, as Subscribe falls back to it, for
// callers that keep lists of their own there (application-level
// discovery); ok is false when ZooKeeper answers or nothing is cached.
func (r *Registry) CachedURLs(key, category string) (urls []*url.URL, ok bool) {
	if r.conn.State() == zk.StateHasSession {
		return nil, false
	}
	lists, ok := r.cache.Get(key)
	if !ok {
		return nil, false
	}
	urls, ok = lists[category]
	return urls, ok
}

// CacheURLs records urls under key and category in the cache file.
func (r *Registry) CacheURLs(key, category string, urls []*url.URL) error {
	return r.cache.Put(key, category, urls)
}

// Lookup reads the URLs of one category of iface once, without watching
// (for the console and the CLI). A missing folder gives an empty list.
func (r *Registry) Lookup(ctx context.Context, iface, category string) ([]*url.URL, error) {
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	p := r.set.categoryPath(iface, category)
	children, _, err := r.conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return []*url.URL{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", p, classify(err))
	}
	urls := make([]*url.URL, 0, len(children))
	for _, name := range children {
		if u, err := url.Decode(name); err == nil {
			urls = append(urls, u)
		}
	}
	registry.SortURLs(urls)
	return urls, nil
}

// Services lists the interfaces that have a registry folder under the
// root: children of /dubbo that hold providers, consumers, routers or
// configurators (the root also holds config, mapping and metadata).
func (r *Registry) Services(ctx context.Context) ([]string, error) {
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	names, _, err := r.conn.Children(r.set.Root)
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list services under %s: %w", r.set.Root, classify(err))
	}
	out := []string{}
	for _, name := range names {
		kids, _, err := r.conn.Children(joinPath(r.set.Root, name))
		if err != nil {
			continue // vanished or not readable: not a service we can show
		}
		for _, k := range kids {
			if k == registry.CategoryProviders || k == registry.CategoryConsumers ||
				k == registry.CategoryRouters || k == registry.CategoryConfigurators {
				if iface, err := neturl.QueryUnescape(name); err == nil {
					out = append(out, iface)
				}
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
