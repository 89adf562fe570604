// Package catalog keeps a live copy of what a Dubbo registry on ZooKeeper
// holds, for the console: interface-level services with their providers,
// consumers, routers and configurators (/dubbo/<interface>/<category>),
// applications with their instances (/services/<app>/<id>), the interface →
// application mapping (/dubbo/mapping) and the config-center rule
// documents (/dubbo/config/dubbo/<key>).
//
// A Catalog owns one ZooKeeper session and one goroutine. Every folder and
// document it knows of carries a watch; each watch event goes to that
// goroutine, which reads the node again (re-arming the watch) and updates
// the copy under a lock. Pages and the API read the copy, never ZooKeeper,
// so a page over 5,000 providers costs no round trip. When the session is
// re-established the whole tree is read again, since an expired session
// loses its watches. Tree and Data read ZooKeeper directly for the
// registry browser.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Categories of an interface folder that the catalog follows.
var categories = []string{"providers", "consumers", "routers", "configurators"}

// paths are the folders the catalog follows, as the registry's URL lays
// them out (zookeeper.Layout).
type paths struct {
	root, services, mapping, config string
}

func pathsOf(l zookeeper.Layout) paths {
	return paths{root: l.Root, services: l.Services, mapping: l.Mapping,
		config: strings.TrimSuffix(l.Config, "/") + "/" + zookeeper.DefaultConfigGroup}
}

// Options configure a Catalog.
type Options struct {
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Catalog is the live copy. Its methods are safe for concurrent use.
type Catalog struct {
	sess *zookeeper.Session
	conn *zk.Conn // sess.Conn()
	p    paths
	log  *slog.Logger

	cancel context.CancelFunc
	done   chan struct{}

	// Only the loop touches these: the children of each followed folder
	// that were read (so their watches are armed and an event of the
	// folder reads only what is new), and the decoded nodes of each
	// category folder (so a re-read decodes only new names).
	known   map[string]map[string]bool
	decoded map[string]map[string]*url.URL

	mu    sync.RWMutex
	state state
	memo  struct {
		sync.Mutex
		services []Service // Services of state version
		version  uint64
	}
	// connected is true while the session is usable; since is when that
	// last changed; loaded is true once a full read finished.
	connected bool
	since     time.Time
	loaded    chan struct{}
	loadOnce  sync.Once
}

// state is the copy. Only the loop writes it, under mu.
type state struct {
	ifaces  map[string]*ifaceNode              // by interface name
	apps    map[string]map[string]*appInstance // by app, then instance id
	mapping map[string][]string                // interface -> applications
	rules   map[string]string                  // config key -> document
	version uint64                             // bumped on every change
}

type ifaceNode struct {
	cats map[string][]*url.URL // category -> decoded URLs, sorted
	// stale are the provider nodes left by sessions that are gone.
	stale map[*url.URL]Staleness
}

type appInstance struct {
	inst *metadata.Instance // nil when the node's data did not parse
	raw  string
}

// New connects to the registry at registryURL (zookeeper://host:port,...,
// with user:password@ for digest auth; see zookeeper.ParseAddress) and
// starts following it. It does not wait for the session; see WaitLoaded.
func New(registryURL string, opts Options) (*Catalog, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	log := opts.Logger.With("component", "console-catalog")
	sess, err := zookeeper.Dial(registryURL, zookeeper.SessionOptions{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c := &Catalog{
		sess: sess, conn: sess.Conn(), p: pathsOf(sess.Layout()), log: log,
		done: make(chan struct{}), loaded: make(chan struct{}), since: time.Now(),
		known: map[string]map[string]bool{}, decoded: map[string]map[string]*url.URL{},
		state: state{ifaces: map[string]*ifaceNode{}, apps: map[string]map[string]*appInstance{},
			mapping: map[string][]string{}, rules: map[string]string{}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.loop(ctx)
	return c, nil
}

// Close stops following and closes the session.
func (c *Catalog) Close() {
	c.cancel()
	<-c.done
	c.sess.Close()
}

// WaitLoaded waits until the first full read of the registry is done.
func (c *Catalog) WaitLoaded(ctx context.Context) error {
	select {
	case <-c.loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("catalog: registry %s not read yet: %w", strings.Join(c.sess.Servers(), ","), ctx.Err())
	}
}

// Health is the state of the catalog's registry session.
type Health struct {
	Servers   []string  `json:"servers"`
	Connected bool      `json:"connected"`
	Since     time.Time `json:"since"` // when Connected last changed
	Server    string    `json:"server"`
	Nodes     int       `json:"nodes"` // provider, consumer, instance and rule nodes followed
}

// Health reports the session state.
func (c *Catalog) Health() Health {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.state.rules)
	for _, in := range c.state.ifaces {
		for _, us := range in.cats {
			n += len(us)
		}
	}
	for _, insts := range c.state.apps {
		n += len(insts)
	}
	return Health{Servers: c.sess.Servers(), Connected: c.connected, Since: c.since, Server: c.conn.Server(), Nodes: n}
}

// Version changes whenever the copy changes.
func (c *Catalog) Version() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.state.version
}

func (c *Catalog) loop(ctx context.Context) {
	defer close(c.done)
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	dirty := false // a read failed: read everything again once the session allows
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.sess.Queue().Ready():
		case <-retry.C:
		}
		seen := map[string]bool{}
		for _, t := range c.sess.Queue().TakeAll() {
			ev := t.Event
			if ev.Type == zk.EventSession {
				switch ev.State {
				case zk.StateHasSession:
					c.setConnected(true)
					dirty = true
				case zk.StateDisconnected, zk.StateExpired:
					c.setConnected(false)
				}
				continue
			}
			if ev.Path == "" || seen[ev.Path] {
				continue
			}
			seen[ev.Path] = true
			if err := c.reread(ev.Path); err != nil {
				dirty = true
			}
		}
		if dirty && c.conn.State() == zk.StateHasSession {
			if err := c.readAll(); err != nil {
				c.log.Warn("registry not fully read; trying again", "err", err)
				retry.Reset(time.Second)
				continue
			}
			dirty = false
			c.loadOnce.Do(func() { close(c.loaded) })
		}
	}
}

func (c *Catalog) setConnected(v bool) {
	c.mu.Lock()
	if c.connected != v {
		c.connected, c.since = v, time.Now()
	}
	c.mu.Unlock()
}

// readAll reads every followed folder and document, arming their watches
// (after a new session, whose watches are all gone).
func (c *Catalog) readAll() error {
	clear(c.known)
	var errs []error
	for _, p := range []string{c.p.root, c.p.services, c.p.mapping, c.p.config} {
		if err := c.reread(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reread reads path again according to what it is: a folder reads its
// children that are new and forgets those that went (each child it knows
// has its own watch), a document or category folder reads itself.
func (c *Catalog) reread(p string) error {
	switch {
	case p == c.p.root:
		return c.readRoot()
	case p == c.p.services:
		_, err := c.readFolder(p, true, c.readApp, c.forgetApp)
		return err
	case p == c.p.mapping:
		_, err := c.readFolder(p, true, c.readMapping, c.forgetMapping)
		return err
	case p == c.p.config:
		_, err := c.readFolder(p, true, c.readRule, c.forgetRule)
		return err
	case strings.HasPrefix(p, c.p.config+"/"):
		return c.readRule(strings.TrimPrefix(p, c.p.config+"/"))
	case strings.HasPrefix(p, c.p.mapping+"/"):
		return c.readMapping(strings.TrimPrefix(p, c.p.mapping+"/"))
	case strings.HasPrefix(p, c.p.services+"/"):
		app, id, inst := strings.Cut(strings.TrimPrefix(p, c.p.services+"/"), "/")
		if inst {
			return c.readInstance(app, id)
		}
		return c.readApp(app)
	case strings.HasPrefix(p, c.p.root+"/"):
		enc, cat, isCat := strings.Cut(strings.TrimPrefix(p, c.p.root+"/"), "/")
		if isCat {
			return c.readCategory(enc, cat)
		}
		return c.readInterface(enc)
	}
	return nil
}

// children reads the children of p with a watch. A missing p has none; it
// is watched for creation only when watchMissing (the roots: a missing
// child of a followed folder is seen through its parent's watch).
func (c *Catalog) children(p string, watchMissing bool) ([]string, bool, error) {
	kids, _, _, err := c.conn.ChildrenW(p)
	if errors.Is(err, zk.ErrNoNode) {
		if !watchMissing {
			return nil, false, nil
		}
		ok, _, _, err := c.conn.ExistsW(p)
		if err == nil && ok {
			return c.children(p, watchMissing) // created between the two calls
		}
		return nil, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("children of %s: %w", p, err)
	}
	return kids, true, nil
}

// data reads p with a watch; ok is false when it does not exist (its
// parent's watch tells when it comes back).
func (c *Catalog) data(p string) ([]byte, bool, error) {
	b, _, _, err := c.conn.GetW(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", p, err)
	}
	return b, true, nil
}

// readFolder reads the children of folder p: each one it has not read
// yet is read with read, those that went away are dropped with forget.
// ok is false when p does not exist.
func (c *Catalog) readFolder(p string, watchMissing bool, read func(name string) error, forget func(name string)) (ok bool, err error) {
	kids, ok, err := c.children(p, watchMissing)
	if err != nil {
		return false, err
	}
	known := c.known[p]
	now := make(map[string]bool, len(kids))
	var errs []error
	for _, k := range kids {
		now[k] = true
		if known[k] {
			continue
		}
		if err := read(k); err != nil {
			errs = append(errs, err)
			delete(now, k) // read again next time
		}
	}
	for k := range known {
		if !now[k] {
			forget(k)
		}
	}
	c.known[p] = now
	return ok, errors.Join(errs...)
}

// forgetFolder drops what the loop knows of the folder p and below it.
func (c *Catalog) forgetFolder(p string) {
	for k := range c.known {
		if k == p || strings.HasPrefix(k, p+"/") {
			delete(c.known, k)
		}
	}
	for k := range c.decoded {
		if k == p || strings.HasPrefix(k, p+"/") {
			delete(c.decoded, k)
		}
	}
}

// notServices are the children of the root that are not interfaces.
var notServices = []string{"config", "mapping", "metadata"}

func (c *Catalog) readRoot() error {
	_, err := c.readFolder(c.p.root, true, func(enc string) error {
		if slices.Contains(notServices, enc) {
			return nil
		}
		return c.readInterface(enc)
	}, func(enc string) {
		c.forgetFolder(c.p.root + "/" + enc)
		if iface, err := neturl.QueryUnescape(enc); err == nil {
			c.update(func(s *state) { delete(s.ifaces, iface) })
		}
	})
	return err
}

func (c *Catalog) readInterface(enc string) error {
	iface, err := neturl.QueryUnescape(enc)
	if err != nil {
		return nil
	}
	p := c.p.root + "/" + enc
	ok, err := c.readFolder(p, false, func(cat string) error {
		return c.readCategory(enc, cat)
	}, func(cat string) {
		c.forgetFolder(p + "/" + cat)
		c.update(func(s *state) {
			if n := s.ifaces[iface]; n != nil {
				delete(n.cats, cat)
			}
		})
	})
	if err == nil && !ok { // gone; the root's watch tells when it is back
		c.forgetFolder(p)
		delete(c.known[c.p.root], enc)
		c.update(func(s *state) { delete(s.ifaces, iface) })
	}
	return err
}

func (c *Catalog) readCategory(enc, cat string) error {
	if !slices.Contains(categories, cat) {
		return nil
	}
	iface, err := neturl.QueryUnescape(enc)
	if err != nil {
		return nil
	}
	p := c.p.root + "/" + enc + "/" + cat
	kids, ok, err := c.children(p, false)
	if err != nil {
		return err
	}
	if !ok { // gone; the interface's watch tells when it is back
		c.forgetFolder(p)
		delete(c.known[c.p.root+"/"+enc], cat)
		c.update(func(s *state) {
			if n := s.ifaces[iface]; n != nil {
				delete(n.cats, cat)
			}
		})
		return nil
	}
	// A category changes one node at a time: decode only new names.
	old := c.decoded[p]
	now := make(map[string]*url.URL, len(kids))
	urls := make([]*url.URL, 0, len(kids))
	for _, k := range kids {
		u, known := old[k]
		if !known {
			if u, err = url.Decode(k); err != nil {
				u = nil
			}
		}
		now[k] = u
		if u != nil {
			urls = append(urls, u)
		}
	}
	c.decoded[p] = now
	registry.SortURLs(urls)
	var stale map[*url.URL]Staleness
	if cat == registry.CategoryProviders {
		if stale, err = c.staleNodes(p, kids, now); err != nil {
			return err
		}
	}
	c.update(func(s *state) {
		n := s.ifaces[iface]
		if n == nil {
			n = &ifaceNode{cats: map[string][]*url.URL{}}
			s.ifaces[iface] = n
		}
		n.cats[cat] = urls
		if cat == registry.CategoryProviders {
			n.stale = stale
		}
	})
	return nil
}

func (c *Catalog) forgetApp(app string) {
	c.forgetFolder(c.p.services + "/" + app)
	c.update(func(s *state) { delete(s.apps, app) })
}

func (c *Catalog) readApp(app string) error {
	p := c.p.services + "/" + app
	ok, err := c.readFolder(p, false, func(id string) error {
		return c.readInstance(app, id)
	}, func(id string) {
		c.update(func(s *state) {
			if insts := s.apps[app]; insts != nil {
				delete(insts, id)
			}
		})
	})
	switch {
	case err == nil && !ok: // gone; the services root's watch tells when it is back
		delete(c.known[c.p.services], app)
		c.forgetApp(app)
	case ok:
		c.update(func(s *state) {
			if s.apps[app] == nil {
				s.apps[app] = map[string]*appInstance{} // an application without instances
			}
		})
	}
	return err
}

func (c *Catalog) readInstance(app, id string) error {
	b, ok, err := c.data(c.p.services + "/" + app + "/" + id)
	if err != nil {
		return err
	}
	if !ok {
		delete(c.known[c.p.services+"/"+app], id) // its parent's watch tells when it is back
	}
	c.update(func(s *state) {
		insts := s.apps[app]
		if !ok {
			if insts != nil {
				delete(insts, id)
			}
			return
		}
		if insts == nil {
			insts = map[string]*appInstance{}
			s.apps[app] = insts
		}
		in, err := metadata.ParseInstance(b)
		if err != nil {
			in = nil
		}
		insts[id] = &appInstance{inst: in, raw: string(b)}
	})
	return nil
}

func (c *Catalog) readMapping(enc string) error {
	iface, err := neturl.QueryUnescape(enc)
	if err != nil {
		return nil
	}
	b, ok, err := c.data(c.p.mapping + "/" + enc)
	if err != nil {
		return err
	}
	if !ok {
		delete(c.known[c.p.mapping], enc)
	}
	var apps []string
	for _, a := range strings.Split(string(b), ",") {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(apps, a) {
			apps = append(apps, a)
		}
	}
	slices.Sort(apps)
	c.update(func(s *state) {
		if !ok {
			delete(s.mapping, iface)
			return
		}
		s.mapping[iface] = apps
	})
	return nil
}

func (c *Catalog) forgetMapping(enc string) {
	if iface, err := neturl.QueryUnescape(enc); err == nil {
		c.update(func(s *state) { delete(s.mapping, iface) })
	}
}

func (c *Catalog) readRule(key string) error {
	b, ok, err := c.data(c.p.config + "/" + key)
	if err != nil {
		return err
	}
	if !ok {
		delete(c.known[c.p.config], key)
	}
	c.update(func(s *state) {
		if !ok {
			delete(s.rules, key)
			return
		}
		s.rules[key] = string(b)
	})
	return nil
}

func (c *Catalog) forgetRule(key string) {
	c.update(func(s *state) { delete(s.rules, key) })
}

func (c *Catalog) update(f func(s *state)) {
	c.mu.Lock()
	f(&c.state)
	c.state.version++
	c.mu.Unlock()
}
