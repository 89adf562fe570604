package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
)

// Application-level discovery (Dubbo 3, PROTOCOLS.md C.5):
//
//	/services/<app>/<host:port>        ephemeral instance JSON, parents containers
//	/dubbo/mapping/<interface>         "app1,app2": who provides the interface
//	/dubbo/metadata/<interface>/...    service definitions (metadata report)

// InstancePath is the node of one instance of app.
func (r *Registry) InstancePath(app, id string) string {
	return joinPath(r.set.Services, app, id)
}

// MappingPath is the node listing the applications that provide iface.
func (r *Registry) MappingPath(iface string) string {
	return joinPath(r.set.Mapping, iface)
}

// metadataRoot is where the metadata report lives.
const metadataRoot = "/dubbo/metadata"

// RegisterInstance creates (or replaces, so that watchers fire) the
// ephemeral instance node of in, with its parents as containers like
// Curator x-discovery. It is re-created after a session loss until
// UnregisterInstance or Close.
func (r *Registry) RegisterInstance(ctx context.Context, in *metadata.Instance) error {
	n, _, err := r.ownInstance(in)
	if err != nil {
		return fmt.Errorf("register instance %s/%s: %w", in.Name, in.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return r.replaceInstance(n)
}

// ownInstance makes in's node the one this session keeps (re-created after
// a session loss), and returns it with the one it replaces, if any.
func (r *Registry) ownInstance(in *metadata.Instance) (n, old *ownedNode, err error) {
	data, err := json.Marshal(in)
	if err != nil {
		return nil, nil, err
	}
	n = &ownedNode{path: r.InstancePath(in.Name, in.ID), data: data, ephemeral: true, container: true}
	r.mu.Lock()
	old = r.owned[n.path]
	r.owned[n.path] = n
	r.mu.Unlock()
	return n, old, nil
}

// replaceInstance deletes the instance node at n.path, if any, and creates
// n: Curator's registerService.
func (r *Registry) replaceInstance(n *ownedNode) error {
	if err := r.deleteOwned(n); err != nil {
		r.mu.Lock()
		n.pending = true
		r.mu.Unlock()
		return fmt.Errorf("register instance %s: %w", n.path, classify(err))
	}
	if _, err := r.ensureOwned(n, true); err != nil {
		return fmt.Errorf("register instance %s: %w", n.path, err)
	}
	return nil
}

// UpdateInstance writes in (a new metadata revision) into the instance
// node this session registered, in place, as Java's
// ZookeeperServiceDiscovery.doUpdate does (Curator's updateService): the
// instance never leaves the registry, so an application-level consumer
// never sees it gone; WatchInstances reads the change on its data event.
// An instance this session does not hold is registered as
// RegisterInstance does.
func (r *Registry) UpdateInstance(ctx context.Context, in *metadata.Instance) error {
	n, old, err := r.ownInstance(in)
	if err != nil {
		return fmt.Errorf("update instance %s/%s: %w", in.Name, in.ID, err)
	}
	p := n.path
	if err := ctx.Err(); err != nil {
		return err
	}
	if old == nil || old.pending {
		return r.replaceInstance(n)
	}
	if err := r.reachable(); err != nil {
		r.mu.Lock()
		n.pending = true
		r.mu.Unlock()
		return fmt.Errorf("update instance %s: %w", p, err)
	}
	stat, err := r.conn.Set(p, n.data, -1)
	switch {
	case err == nil && stat.EphemeralOwner == r.conn.SessionID():
		return nil
	case err != nil && !errors.Is(err, zk.ErrNoNode):
		r.mu.Lock()
		n.pending = true
		r.mu.Unlock()
		return fmt.Errorf("update instance %s: %w", p, classify(err))
	}
	return r.replaceInstance(n) // gone, or another session's
}

// UnregisterInstance deletes the instance node.
func (r *Registry) UnregisterInstance(ctx context.Context, app, id string) error {
	p := r.InstancePath(app, id)
	if err := r.unregister(ctx, p); err != nil {
		return fmt.Errorf("unregister instance %s: %w", p, err)
	}
	return nil
}

// casRetries bounds the mapping compare-and-set loop, as Java's
// MetadataServiceNameMapping (6 attempts).
const casRetries = 6

// AddMapping appends app to the comma-separated application list of
// iface, creating the node when missing, with a compare-and-set on the node
// version so that concurrent providers do not overwrite each other.
func (r *Registry) AddMapping(ctx context.Context, iface, app string) error {
	p := r.MappingPath(iface)
	var err error
	for attempt := 0; attempt < casRetries; attempt++ {
		if err = r.ready(ctx); err != nil {
			return err
		}
		var data []byte
		var stat *zk.Stat
		data, stat, err = r.conn.Get(p)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if err = r.ensurePath(parentOf(p), false); err != nil {
				return fmt.Errorf("mapping %s: %w", iface, err)
			}
			_, err = r.conn.Create(p, []byte(app), 0, r.set.acl())
			if err == nil {
				return nil
			}
		case err == nil:
			apps := splitApps(string(data))
			if slices.Contains(apps, app) {
				return nil
			}
			content := app
			if s := strings.TrimSpace(string(data)); s != "" {
				content = s + "," + app
			}
			_, err = r.conn.Set(p, []byte(content), stat.Version)
			if err == nil {
				return nil
			}
		}
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("mapping %s: %w", iface, classify(err))
		}
		// Someone else wrote in between: read again after a short pause.
		select {
		case <-time.After(time.Duration(10*(attempt+1)) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("mapping %s: gave up after %d concurrent updates: %w", iface, casRetries, err)
}

// Mapping returns the applications that provide iface (none: empty list).
func (r *Registry) Mapping(ctx context.Context, iface string) ([]string, error) {
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	data, _, err := r.conn.Get(r.MappingPath(iface))
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", iface, classify(err))
	}
	return splitApps(string(data)), nil
}

// WatchMapping calls fn with the applications that provide iface when
// /dubbo/mapping/<iface> exists (before it returns, if ZooKeeper answers),
// then after every change, from the registry's loop; a deleted node gives
// an empty list, a node that never existed no call. After a read error the
// watch keeps the last list and re-reads on reconnection. It returns a
// function that stops the watch.
func (r *Registry) WatchMapping(ctx context.Context, iface string, fn func(apps []string)) (cancel func(), err error) {
	cancel, err = r.watchData(ctx, r.MappingPath(iface), func(content string, deleted bool) {
		if deleted {
			fn([]string{})
			return
		}
		fn(splitApps(content))
	})
	if err != nil {
		return nil, fmt.Errorf("watch mapping %s: %w", iface, err)
	}
	return cancel, nil
}

func splitApps(s string) []string {
	out := []string{}
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// PublishServiceDefinition stores the provider-side definition of one
// service (the 2.7-style metadata report).
func (r *Registry) PublishServiceDefinition(ctx context.Context, iface, version, group, app string, def *metadata.ServiceDefinition) error {
	data, err := json.Marshal(def)
	if err != nil {
		return fmt.Errorf("service definition %s: %w", iface, err)
	}
	return r.putPersistent(ctx, metadata.ReportPath(metadataRoot, iface, version, group, "provider", app), data)
}

// PublishConsumerMetadata stores a consumer's parameters as JSON at
// /dubbo/metadata/<iface>[/<version>][/<group>]/consumer/<app>, as Java
// Dubbo's metadata report does for every reference.
func (r *Registry) PublishConsumerMetadata(ctx context.Context, iface, version, group, app string, params map[string]string) error {
	data, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("consumer metadata %s: %w", iface, err)
	}
	return r.putPersistent(ctx, metadata.ReportPath(metadataRoot, iface, version, group, "consumer", app), data)
}

// PublishAppMetadata stores info at /dubbo/metadata/<app>/<revision>, where
// Java consumers look when an instance says dubbo.metadata.storage-type
// remote.
func (r *Registry) PublishAppMetadata(ctx context.Context, info *metadata.Info) error {
	data, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("app metadata %s: %w", info.App, err)
	}
	return r.putPersistent(ctx, joinPath(metadataRoot, info.App, info.Revision), data)
}

// dubboGoMetadataRoot is where dubbo-go v3.3.0 stores application
// metadata instead: /dubbo/<app>/<revision> (PROTOCOLS.md C.5).
const dubboGoMetadataRoot = "/dubbo"

// GetAppMetadata reads what PublishAppMetadata (or Java) stored at
// /dubbo/metadata/<app>/<revision>, else what dubbo-go stored at
// /dubbo/<app>/<revision>.
func (r *Registry) GetAppMetadata(ctx context.Context, app, revision string) (*metadata.Info, error) {
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	p := joinPath(metadataRoot, app, revision)
	data, _, err := r.conn.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		p = joinPath(dubboGoMetadataRoot, app, revision)
		data, _, err = r.conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			p = joinPath(metadataRoot, app, revision) + " (nor " + p + ")"
		}
	}
	if err != nil {
		return nil, fmt.Errorf("app metadata %s: %w", p, classify(err))
	}
	var info metadata.Info
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("app metadata %s: %w", p, err)
	}
	return &info, nil
}

// putPersistent creates or overwrites a persistent node and its parents.
func (r *Registry) putPersistent(ctx context.Context, p string, data []byte) error {
	if err := r.ready(ctx); err != nil {
		return err
	}
	_, err := r.conn.Set(p, data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		if err = r.ensurePath(parentOf(p), false); err == nil {
			_, err = r.conn.Create(p, data, 0, r.set.acl())
			if errors.Is(err, zk.ErrNodeExists) { // lost a race with another writer
				_, err = r.conn.Set(p, data, -1)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", p, classify(err))
	}
	return nil
}

// ErrNoDefinition: no provider of the service reported its definition.
var ErrNoDefinition = errors.New("no service definition in the metadata report")

// GetServiceDefinition reads the definition of a service reported by any of
// its provider applications (the first one, in name order).
func (r *Registry) GetServiceDefinition(ctx context.Context, iface, version, group string) (*metadata.ServiceDefinition, error) {
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	dir := parentOf(metadata.ReportPath(metadataRoot, iface, version, group, "provider", "x"))
	apps, _, err := r.conn.Children(dir)
	if errors.Is(err, zk.ErrNoNode) || (err == nil && len(apps) == 0) {
		return nil, fmt.Errorf("%s (version %q, group %q): %w", iface, version, group, ErrNoDefinition)
	}
	if err != nil {
		return nil, fmt.Errorf("service definition %s: %w", dir, classify(err))
	}
	sort.Strings(apps)
	var errs []error
	for _, app := range apps {
		data, _, err := r.conn.Get(dir + "/" + app)
		if err != nil {
			errs = append(errs, classify(err))
			continue
		}
		def, err := metadata.ParseServiceDefinition(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", dir, app, err))
			continue
		}
		return def, nil
	}
	return nil, fmt.Errorf("service definition %s: %w", dir, errors.Join(errs...))
}

// InstancesFunc is registry.InstancesFunc.
type InstancesFunc = registry.InstancesFunc

// instanceWatch is one watched /services/<app>; only the loop touches it.
type instanceWatch struct {
	app, path string
	fns       map[int]InstancesFunc
	instances map[string]*metadata.Instance // by child name; nil entry = unreadable
	loaded    bool
	dirty     bool
}

// WatchInstances calls fn with the instances of app now (before it returns,
// if ZooKeeper answers) and after every change, from the registry's loop.
// It returns a function that stops the watch.
func (r *Registry) WatchInstances(ctx context.Context, app string, fn InstancesFunc) (cancel func(), err error) {
	p := joinPath(r.set.Services, app)
	var id int
	err = r.do(ctx, func() {
		r.nextID++
		id = r.nextID
		w := r.watchers[p]
		if w == nil {
			w = &instanceWatch{app: app, path: p, fns: make(map[int]InstancesFunc), instances: make(map[string]*metadata.Instance)}
			r.watchers[p] = w
		}
		w.fns[id] = fn
		if !w.loaded {
			r.readInstances(w)
		} else {
			fn(app, w.list())
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch instances of %s: %w", app, err)
	}
	return func() {
		r.sess.Queue().Push(Task{Run: func() {
			if w := r.watchers[p]; w != nil {
				delete(w.fns, id)
				if len(w.fns) == 0 {
					delete(r.watchers, p)
				}
			}
		}, Done: make(chan struct{})})
	}, nil
}

func (w *instanceWatch) list() []*metadata.Instance {
	out := make([]*metadata.Instance, 0, len(w.instances))
	for _, in := range w.instances {
		if in != nil {
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// readInstances lists the app's instances with a child watch and reads each
// new one with a data watch; existing ones are re-read on their own data
// events (instanceDataEvent). A missing app folder gets an exists watch.
func (r *Registry) readInstances(w *instanceWatch) {
	if err := r.reachable(); err != nil {
		w.dirty = true // read on reconnection
		return
	}
	children, _, _, err := r.conn.ChildrenW(w.path)
	if errors.Is(err, zk.ErrNoNode) {
		var ok bool
		ok, _, _, err = r.conn.ExistsW(w.path)
		if err == nil && ok {
			children, _, _, err = r.conn.ChildrenW(w.path)
		}
		if errors.Is(err, zk.ErrNoNode) {
			children, err = nil, nil
		}
	}
	if err != nil {
		w.dirty = true
		r.log.Warn("zookeeper: cannot list instances, keeping last list", "path", w.path, "err", err)
		return
	}
	next := make(map[string]*metadata.Instance, len(children))
	for _, name := range children {
		if in, ok := w.instances[name]; ok && w.loaded && !w.dirty {
			next[name] = in // its data watch is still armed
			continue
		}
		next[name] = r.readInstance(w.path + "/" + name)
	}
	w.instances, w.loaded, w.dirty = next, true, false
	r.notifyInstances(w)
}

func (r *Registry) readInstance(p string) *metadata.Instance {
	data, _, _, err := r.conn.GetW(p)
	if err != nil {
		if !errors.Is(err, zk.ErrNoNode) {
			r.log.Warn("zookeeper: cannot read instance", "path", p, "err", err)
		}
		return nil
	}
	in, err := metadata.ParseInstance(data)
	if err != nil {
		r.log.Warn("zookeeper: skipping undecodable instance", "path", p, "err", err)
		return nil
	}
	return in
}

func (r *Registry) notifyInstances(w *instanceWatch) {
	list := w.list()
	for _, fn := range w.fns {
		fn(w.app, list)
	}
}

// instanceDataEvent handles data and existence events of watched
// instances and of app folders that did not exist yet.
func (r *Registry) instanceDataEvent(ev zk.Event) {
	if w := r.watchers[ev.Path]; w != nil && ev.Type == zk.EventNodeCreated {
		r.readInstances(w)
		return
	}
	w := r.watchers[parentOf(ev.Path)]
	if w == nil {
		return
	}
	name := ev.Path[len(w.path)+1:]
	if _, ok := w.instances[name]; !ok {
		return
	}
	if ev.Type == zk.EventNodeDeleted {
		delete(w.instances, name) // the child watch re-reads the list too
	} else {
		w.instances[name] = r.readInstance(ev.Path)
	}
	r.notifyInstances(w)
}

// Ensure Registry satisfies the interface its users define.
var _ registry.Registry = (*Registry)(nil)
