// Package watch keeps the server's watch tables: which connection watches
// which path, and how (one-shot data or child watch, persistent,
// persistent-recursive). Trigger applies ZooKeeper's firing rules to one
// change and returns who to notify; the server queues the events.
//
// Watches belong to connections, not sessions, so the key is an opaque
// Watcher value (the server uses its connection pointer).
package watch

import (
	"sort"
	"strings"
	"sync"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

// Watcher identifies the connection that owns a watch.
type Watcher any

// Kinds of watch a connection can hold on one path; they combine.
const (
	Data       uint8 = 1 << iota // one-shot, set by getData and exists
	Child                        // one-shot, set by getChildren
	Persistent                   // addWatch mode 0: data and child events of the path
	Recursive                    // addWatch mode 1: data events of the path and descendants
)

// Manager holds all watches. It is safe for concurrent use.
type Manager struct {
	mu        sync.Mutex
	byPath    map[string]map[Watcher]uint8
	byWatcher map[Watcher]map[string]struct{}
	recursive int // number of recursive registrations, to skip the ancestor walk
}

// New returns an empty Manager.
func New() *Manager {
	return &Manager{
		byPath:    make(map[string]map[Watcher]uint8),
		byWatcher: make(map[Watcher]map[string]struct{}),
	}
}

// Add registers kinds on path for w.
func (m *Manager) Add(path string, w Watcher, kinds uint8) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.add(path, w, kinds)
}

func (m *Manager) add(path string, w Watcher, kinds uint8) {
	ws := m.byPath[path]
	if ws == nil {
		ws = make(map[Watcher]uint8)
		m.byPath[path] = ws
	}
	old := ws[w]
	if kinds&Recursive != 0 && old&Recursive == 0 {
		m.recursive++
	}
	ws[w] = old | kinds
	ps := m.byWatcher[w]
	if ps == nil {
		ps = make(map[string]struct{})
		m.byWatcher[w] = ps
	}
	ps[path] = struct{}{}
}

// clear removes kinds from w's entry on path; the caller holds mu.
func (m *Manager) clear(path string, w Watcher, kinds uint8) {
	ws := m.byPath[path]
	old, ok := ws[w]
	if !ok {
		return
	}
	if kinds&Recursive != 0 && old&Recursive != 0 {
		m.recursive--
	}
	if left := old &^ kinds; left != 0 {
		ws[w] = left
		return
	}
	delete(ws, w)
	if len(ws) == 0 {
		delete(m.byPath, path)
	}
	if ps := m.byWatcher[w]; ps != nil {
		delete(ps, path)
		if len(ps) == 0 {
			delete(m.byWatcher, w)
		}
	}
}

// Trigger fires the watches one change event affects and returns each
// watcher to notify once. One-shot watches that fire
// are removed.
func (m *Manager) Trigger(path string, ev wire.EventType) []Watcher {
	m.mu.Lock()
	defer m.mu.Unlock()
	var fire uint8 // one-shot kinds this event consumes
	switch ev {
	case wire.EventNodeCreated, wire.EventNodeDataChanged:
		fire = Data
	case wire.EventNodeDeleted:
		fire = Data | Child
	case wire.EventNodeChildrenChanged:
		fire = Child
	}
	var out []Watcher
	seen := map[Watcher]bool{}
	for w, kinds := range m.byPath[path] {
		hit := kinds&fire != 0 || kinds&Persistent != 0 ||
			(kinds&Recursive != 0 && ev != wire.EventNodeChildrenChanged)
		if !hit {
			continue
		}
		if kinds&fire != 0 {
			m.clear(path, w, kinds&fire)
		}
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	if m.recursive > 0 && ev != wire.EventNodeChildrenChanged {
		for p := parent(path); p != ""; p = parent(p) {
			for w, kinds := range m.byPath[p] {
				if kinds&Recursive != 0 && !seen[w] {
					seen[w] = true
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// parent returns the parent of p, "" for the root.
func parent(p string) string {
	if p == "/" || p == "" {
		return ""
	}
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// matchKinds maps a WatcherType to the kinds it selects.
func matchKinds(t wire.WatcherType) uint8 {
	switch t {
	case wire.WatcherChildren:
		return Child | Persistent
	case wire.WatcherData:
		return Data | Persistent | Recursive
	case wire.WatcherAny:
		return Data | Child | Persistent | Recursive
	case wire.WatcherPersistent:
		return Persistent
	case wire.WatcherPersistentRecursive:
		return Recursive
	}
	return 0
}

// Has answers checkWatches: does w hold a watch of type t on path?
func (m *Manager) Has(path string, w Watcher, t wire.WatcherType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byPath[path][w]&matchKinds(t) != 0
}

// Remove answers removeWatches: it drops w's watches of type t on path and
// reports whether there were any.
func (m *Manager) Remove(path string, w Watcher, t wire.WatcherType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := matchKinds(t)
	if m.byPath[path][w]&k == 0 {
		return false
	}
	m.clear(path, w, k)
	return true
}

// RemoveWatcher drops every watch of w (its connection closed).
func (m *Manager) RemoveWatcher(w Watcher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := range m.byWatcher[w] {
		m.clear(p, w, Data|Child|Persistent|Recursive)
	}
	delete(m.byWatcher, w)
}

// Counts returns the number of watching connections, watched paths and
// watches (a path × connection pair counts once), as `wchs` reports them.
func (m *Manager) Counts() (watchers, paths, total int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ws := range m.byPath {
		total += len(ws)
	}
	return len(m.byWatcher), len(m.byPath), total
}

// PathsOf lists the paths w watches, sorted (for `wchc`).
func (m *Manager) PathsOf(w Watcher) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.byWatcher[w]))
	for p := range m.byWatcher[w] {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Paths lists every watched path, sorted (for `wchp`).
func (m *Manager) Paths() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.byPath))
	for p := range m.byPath {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// NodeState is what setWatches needs to know about a path.
type NodeState struct {
	Exists bool
	Mzxid  int64
	Pzxid  int64
}

// Event is a notification to send at once while re-arming watches.
type Event struct {
	Path string
	Type wire.EventType
}

// Rearm applies setWatches/setWatches2 for w: each path either gets its
// watch back or, if it changed since relZxid, an immediate event.
func (m *Manager) Rearm(w Watcher, sw *wire.SetWatches, state func(path string) NodeState) []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	var events []Event
	for _, p := range sw.DataWatches {
		s := state(p)
		switch {
		case !s.Exists:
			events = append(events, Event{p, wire.EventNodeDeleted})
		case s.Mzxid > sw.RelativeZxid:
			events = append(events, Event{p, wire.EventNodeDataChanged})
		default:
			m.add(p, w, Data)
		}
	}
	for _, p := range sw.ExistWatches {
		if state(p).Exists {
			events = append(events, Event{p, wire.EventNodeCreated})
		} else {
			m.add(p, w, Data)
		}
	}
	for _, p := range sw.ChildWatches {
		s := state(p)
		switch {
		case !s.Exists:
			events = append(events, Event{p, wire.EventNodeDeleted})
		case s.Pzxid > sw.RelativeZxid:
			events = append(events, Event{p, wire.EventNodeChildrenChanged})
		default:
			m.add(p, w, Child)
		}
	}
	for _, p := range sw.PersistentWatches {
		m.add(p, w, Persistent)
	}
	for _, p := range sw.PersistentRecursive {
		m.add(p, w, Recursive)
	}
	return events
}
