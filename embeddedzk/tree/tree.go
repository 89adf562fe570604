// Package tree is the embedded ZooKeeper server's data tree: znodes with
// data, ACLs and Stat, the system nodes, and the table of sessions that own
// ephemerals.
//
// Writes go through Execute, which validates a client request against the
// current tree (paths, versions, ACLs, create modes), applies it and returns
// the Txn to log, the response record and the watch triggers it caused.
// Apply replays a logged Txn deterministically, so snapshot + log rebuild
// the same tree. The Tree is not safe for concurrent use: the server
// serialises writes and excludes them while reading.
package tree

import (
	"math"
	"sort"
	"strings"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

// Owner values that mark containers and TTL nodes in ephemeralOwner.
const (
	containerOwner = math.MinInt64 // 0x8000000000000000
	ttlMask        = -0x100000000000000
	maxTTL         = 1<<40 - 1
)

func isContainerOwner(o int64) bool { return o == containerOwner }
func isTTLOwner(o int64) bool       { return o != containerOwner && o&ttlMask == ttlMask }
func isEphemeralOwner(o int64) bool { return o > 0 }

// node is one znode. Data and ACL slices are never modified in place (a
// write replaces them), so snapshots may share them.
type node struct {
	data     []byte // nil is "null data"
	acl      []wire.ACL
	czxid    int64
	mzxid    int64
	pzxid    int64
	ctime    int64
	mtime    int64
	owner    int64 // raw ephemeralOwner: session, container or TTL marker
	version  int32
	cversion int32 // child creates; see stat for what clients see
	aversion int32
	children map[string]struct{}
}

// SessionInfo is what a session needs to survive a restart.
type SessionInfo struct {
	Timeout int32
	Passwd  []byte
}

// Trigger is one watch event a change caused.
type Trigger struct {
	Path string
	Type wire.EventType
}

// Tree holds every znode by full path.
type Tree struct {
	nodes      map[string]*node
	sessions   map[int64]SessionInfo
	ephemerals map[int64]map[string]struct{}
	containers map[string]struct{}
	ttls       map[string]struct{}
	acls       map[string][]wire.ACL // interned ACL lists
	lastZxid   int64
	dataSize   int64
}

var openACL = []wire.ACL{{Perms: wire.PermAll, ID: wire.WorldAnyone}}

// New returns a tree holding only the root and the system nodes.
func New() *Tree {
	t := &Tree{
		nodes:      make(map[string]*node),
		sessions:   make(map[int64]SessionInfo),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		acls:       make(map[string][]wire.ACL),
	}
	t.nodes["/"] = &node{data: []byte{}, acl: t.intern(openACL)}
	t.addSystem("/zookeeper", openACL)
	t.addSystem("/zookeeper/quota", openACL)
	t.addSystem("/zookeeper/config", []wire.ACL{{Perms: wire.PermRead, ID: wire.WorldAnyone}})
	return t
}

func (t *Tree) addSystem(p string, acl []wire.ACL) {
	parent, name, _ := parentOf(p)
	t.nodes[p] = &node{data: []byte{}, acl: t.intern(acl)}
	pn := t.nodes[parent]
	if pn.children == nil {
		pn.children = make(map[string]struct{})
	}
	pn.children[name] = struct{}{}
}

// intern returns a shared copy of acl so equal lists cost memory once.
func (t *Tree) intern(acl []wire.ACL) []wire.ACL {
	var b strings.Builder
	for _, a := range acl {
		b.WriteByte(byte(a.Perms))
		b.WriteString(a.ID.Scheme)
		b.WriteByte(0)
		b.WriteString(a.ID.ID)
		b.WriteByte(0)
	}
	k := b.String()
	if have, ok := t.acls[k]; ok {
		return have
	}
	c := append([]wire.ACL(nil), acl...)
	t.acls[k] = c
	return c
}

// lookup finds a node; "" is the root too, as in ZooKeeper's DataTree.
func (t *Tree) lookup(p string) *node {
	if p == "" {
		p = "/"
	}
	return t.nodes[p]
}

func (n *node) stat() wire.Stat {
	owner := n.owner
	if !isEphemeralOwner(owner) {
		owner = 0 // clients see 0 for containers and TTL nodes
	}
	// Like ZooKeeper's DataNode.copyStat: the stored cversion counts child
	// creates (it names sequential children); clients see 2×creates −
	// children, so a delete moves it too (and a fresh root shows -1).
	return wire.Stat{
		Czxid: n.czxid, Mzxid: n.mzxid, Ctime: n.ctime, Mtime: n.mtime,
		Version: n.version, Cversion: 2*n.cversion - int32(len(n.children)), Aversion: n.aversion,
		EphemeralOwner: owner, DataLength: int32(len(n.data)),
		NumChildren: int32(len(n.children)), Pzxid: n.pzxid,
	}
}

// LastZxid is the zxid of the last applied transaction.
func (t *Tree) LastZxid() int64 { return t.lastZxid }

// NodeCount is the number of znodes, root and system nodes included.
func (t *Tree) NodeCount() int { return len(t.nodes) }

// DataSize approximates the bytes of paths and data, like ZooKeeper's
// approximateDataSize.
func (t *Tree) DataSize() int64 { return t.dataSize }

// Stat returns a node's Stat.
func (t *Tree) Stat(p string) (wire.Stat, bool) {
	n := t.lookup(p)
	if n == nil {
		return wire.Stat{}, false
	}
	return n.stat(), true
}

// Exists answers exists: NoNode or the Stat. Like Apache ZooKeeper 3.8 it
// needs no permission.
func (t *Tree) Exists(p string, c Caller) (wire.Stat, wire.ErrCode) {
	if strings.IndexByte(p, 0) >= 0 {
		return wire.Stat{}, wire.ErrBadArguments
	}
	n := t.lookup(p)
	if n == nil {
		return wire.Stat{}, wire.ErrNoNode
	}
	return n.stat(), wire.ErrOk
}

// GetData answers getData.
func (t *Tree) GetData(p string, c Caller) ([]byte, wire.Stat, wire.ErrCode) {
	n := t.lookup(p)
	if n == nil {
		return nil, wire.Stat{}, wire.ErrNoNode
	}
	if !allowed(n.acl, wire.PermRead, c) {
		return nil, wire.Stat{}, wire.ErrNoAuth
	}
	return n.data, n.stat(), wire.ErrOk
}

// Children answers getChildren/getChildren2 with names in sorted order.
func (t *Tree) Children(p string, c Caller) ([]string, wire.Stat, wire.ErrCode) {
	n := t.lookup(p)
	if n == nil {
		return nil, wire.Stat{}, wire.ErrNoNode
	}
	if !allowed(n.acl, wire.PermRead, c) {
		return nil, wire.Stat{}, wire.ErrNoAuth
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, n.stat(), wire.ErrOk
}

// GetACL answers getACL; without ADMIN, digest hashes are masked.
func (t *Tree) GetACL(p string, c Caller) ([]wire.ACL, wire.Stat, wire.ErrCode) {
	n := t.lookup(p)
	if n == nil {
		return nil, wire.Stat{}, wire.ErrNoNode
	}
	if !allowed(n.acl, wire.PermRead|wire.PermAdmin, c) {
		return nil, wire.Stat{}, wire.ErrNoAuth
	}
	if !allowed(n.acl, wire.PermAdmin, c) {
		return maskDigests(n.acl), n.stat(), wire.ErrOk
	}
	return append([]wire.ACL(nil), n.acl...), n.stat(), wire.ErrOk
}

// AllChildrenNumber counts every descendant of p (not p itself).
func (t *Tree) AllChildrenNumber(p string, c Caller) (int32, wire.ErrCode) {
	n := t.lookup(p)
	if n == nil {
		return 0, wire.ErrNoNode
	}
	if !allowed(n.acl, wire.PermRead, c) {
		return 0, wire.ErrNoAuth
	}
	if p == "/" {
		return int32(len(t.nodes) - 1), wire.ErrOk
	}
	var count func(string, *node) int32
	count = func(path string, n *node) int32 {
		var total int32
		for name := range n.children {
			cp := path + "/" + name
			total += 1 + count(cp, t.nodes[cp])
		}
		return total
	}
	return count(p, n), wire.ErrOk
}

// Ephemerals lists the session's ephemeral paths that start with prefix
// ("" or "/" means all), sorted.
func (t *Tree) Ephemerals(session int64, prefix string) []string {
	out := []string{}
	for p := range t.ephemerals[session] {
		if prefix == "" || prefix == "/" || strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// EphemeralCount is the number of ephemeral nodes of all sessions.
func (t *Tree) EphemeralCount() int {
	n := 0
	for _, m := range t.ephemerals {
		n += len(m)
	}
	return n
}

// Sessions returns the session table, keyed by id.
func (t *Tree) Sessions() map[int64]SessionInfo {
	out := make(map[int64]SessionInfo, len(t.sessions))
	for id, s := range t.sessions {
		out[id] = s
	}
	return out
}

// HasSession reports whether a session is open.
func (t *Tree) HasSession(id int64) bool {
	_, ok := t.sessions[id]
	return ok
}

// Reapable lists, sorted, containers that have had children and are empty,
// and TTL nodes without children unmodified for longer than their TTL.
func (t *Tree) Reapable(now int64) []string {
	var out []string
	for p := range t.containers {
		n := t.nodes[p]
		if n != nil && n.cversion > 0 && len(n.children) == 0 {
			out = append(out, p)
		}
	}
	for p := range t.ttls {
		n := t.nodes[p]
		if n != nil && len(n.children) == 0 && now-n.mtime > n.owner&^ttlMask {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
