package zookeeper

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/go-zookeeper/zk"
)

// task is one unit of loop work: a ZooKeeper event, or a function that a
// caller wants run in the loop (fn, then close done).
type task struct {
	ev   zk.Event
	fn   func()
	done chan struct{}
}

// taskQueue is unbounded because go-zookeeper's event callback must never
// block, and losing a watch event would lose a change for good.
type taskQueue struct {
	mu     sync.Mutex
	items  []task
	signal chan struct{} // capacity 1: "items is not empty"
}

func (q *taskQueue) init() { q.signal = make(chan struct{}, 1) }

func (q *taskQueue) push(t task) {
	q.mu.Lock()
	q.items = append(q.items, t)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *taskQueue) pushEvent(ev zk.Event) { q.push(task{ev: ev}) }

func (q *taskQueue) takeAll() []task {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// do runs fn in the loop and waits for it. If ctx ends first, fn may still
// run later; callers only pass functions for which that is harmless.
func (r *Registry) do(ctx context.Context, fn func()) error {
	t := task{fn: fn, done: make(chan struct{})}
	r.queue.push(t)
	select {
	case <-t.done:
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
		case <-r.queue.signal:
		}
		for _, t := range r.queue.takeAll() {
			if ctx.Err() != nil {
				return
			}
			if t.fn != nil {
				t.fn()
				close(t.done)
				continue
			}
			r.handle(t.ev)
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
		if err := r.ensurePath(joinPath(r.set.configRoot, group), false); err != nil {
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

// zkLogger sends go-zookeeper's log lines to slog at debug level: it logs
// every reconnection attempt, which the registry reports itself.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("go-zookeeper: " + fmt.Sprintf(format, args...))
}
