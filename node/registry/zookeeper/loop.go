package zookeeper

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// do runs fn in the loop and waits for it. If ctx ends first, fn may still
// run later; callers only pass functions for which that is harmless.
func (r *Registry) do(ctx context.Context, fn func()) error {
	t := Task{Run: fn, Done: make(chan struct{})}
	r.sess.Queue().Push(t)
	select {
	case <-t.Done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.done:
		return fmt.Errorf("zookeeper registry closed")
	}
}

// loop is the registry's one goroutine: it owns folders, subscriptions and
// config watches, and calls every listener.
func (r *Registry) loop(ctx context.Context) {
	defer close(r.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.sess.Queue().Ready():
		}
		for _, t := range r.sess.Queue().TakeAll() {
			if ctx.Err() != nil {
				return
			}
			if t.Run != nil {
				t.Run()
				close(t.Done)
				continue
			}
			r.handle(t.Event)
		}
	}
}

func (r *Registry) handle(ev zk.Event) {
	switch ev.Type {
	case zk.EventSession:
		r.onSession(ev.State)
	case zk.EventNodeChildrenChanged:
		if f := r.folders[ev.Path]; f != nil {
			r.readFolder(f)
		}
		if w := r.watchers[ev.Path]; w != nil {
			r.readInstances(w)
		}
	case zk.EventNodeCreated, zk.EventNodeDataChanged, zk.EventNodeDeleted:
		if c := r.configs[ev.Path]; c != nil {
			r.readConfig(c)
		}
		if f := r.folders[ev.Path]; f != nil && ev.Type == zk.EventNodeDeleted {
			r.readFolder(f) // someone removed the folder: re-create and re-watch
		}
		r.instanceDataEvent(ev)
		r.ownedEvent(ev)
	case zk.EventNotWatching:
		// Watches lost with the session; onSession re-arms them all.
	}
}

// onSession reacts to connection state. A new session id means the old one
// expired (or never existed): every ephemeral node and watch is gone, so
// all of them are re-created. The same id again means a reconnection
// within the session: go-zookeeper has re-set the watches, so only work
// that failed while disconnected is retried.
func (r *Registry) onSession(state zk.State) {
	switch state {
	case zk.StateDisconnected:
		r.log.Info("zookeeper disconnected; keeping last lists")
	case zk.StateExpired:
		r.log.Warn("zookeeper session expired; waiting for a new session")
	case zk.StateHasSession:
		id := r.conn.SessionID()
		prev := r.session
		r.session = id
		r.connectedOnce.Do(func() { close(r.connected) })
		switch {
		case prev == id:
			r.log.Info("zookeeper reconnected", "session", fmt.Sprintf("0x%x", id))
			r.retry(false)
		case prev == 0:
			r.log.Debug("zookeeper session established", "session", fmt.Sprintf("0x%x", id))
			r.ensureConfigRoots()
			r.retry(false)
		default:
			n, m := r.retry(true)
			r.log.Warn(fmt.Sprintf("zookeeper session expired; re-registered %d urls, re-subscribed %d", n, m),
				"old_session", fmt.Sprintf("0x%x", prev), "session", fmt.Sprintf("0x%x", id))
		}
	}
}

// ensureConfigRoots creates the config-center folders a Java Dubbo 3 node
// leaves in ZooKeeper (PROTOCOLS.md C.8): the default rule group and the
// migration rule group, so admin tools find the tree they expect.
func (r *Registry) ensureConfigRoots() {
	for _, group := range []string{DefaultConfigGroup, "DUBBO_SERVICEDISCOVERY_MIGRATION"} {
		if err := r.ensurePath(joinPath(r.set.Config, group), false); err != nil {
			r.log.Debug("config-center folder not created", "group", group, "err", err)
		}
	}
}

// retry re-creates owned nodes and re-reads watched nodes: all of them
// after a session loss, otherwise only those whose last attempt failed.
// It returns how many nodes and watches it re-established.
func (r *Registry) retry(all bool) (nodes, watches int) {
	r.mu.Lock()
	var todo []*ownedNode
	for _, n := range r.owned {
		if n.pending || (all && n.ephemeral) {
			todo = append(todo, n)
		}
	}
	r.mu.Unlock()
	for _, n := range todo {
		if _, err := r.ensureOwned(n, true); err != nil {
			r.log.Warn("zookeeper: re-register failed, will retry on reconnection", "path", n.path, "err", err)
			continue
		}
		nodes++
	}
	for _, f := range r.folders {
		if all || f.dirty || !f.loaded {
			r.readFolder(f)
			watches++
		}
	}
	for _, c := range r.configs {
		if all || c.dirty {
			r.readConfig(c)
			watches++
		}
	}
	for _, w := range r.watchers {
		if all || w.dirty {
			w.dirty = true // data watches of known instances are gone too
			r.readInstances(w)
			watches++
		}
	}
	return nodes, watches
}
