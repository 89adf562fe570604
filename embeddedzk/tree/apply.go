package tree

import (
	"fmt"
	"sort"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

// Outcome is the result of Execute.
type Outcome struct {
	// Txn is the change to log, nil when nothing changed (the request failed).
	Txn *Txn
	// Err is the reply error; a failed multi has Err 0 and errors in Resp.
	Err wire.ErrCode
	// Resp is the response record to send when Err is 0 (may be nil).
	Resp wire.Record
	// Triggers are the watch events the change caused, in order.
	Triggers []Trigger
}

// Execute validates a write request against the tree and, when valid,
// applies it as transaction zxid at time now (ms). Supported ops: create,
// create2, createContainer, createTTL, delete, setData, setACL and multi.
func (t *Tree) Execute(op wire.OpCode, req wire.Record, c Caller, zxid, now int64) Outcome {
	base := Txn{Zxid: zxid, Time: now, Session: c.Session}
	if op == wire.OpMulti {
		mr, ok := req.(*wire.MultiRequest)
		if !ok {
			return Outcome{Err: wire.ErrMarshallingError}
		}
		return t.execMulti(mr, c, base)
	}
	sub, resp, code := t.prepare(op, req, c, now)
	if code != wire.ErrOk {
		return Outcome{Err: code}
	}
	sub.Zxid, sub.Time, sub.Session = base.Zxid, base.Time, base.Session
	trig, _ := t.apply(&sub, zxid, now)
	t.lastZxid = zxid
	out := Outcome{Txn: &sub, Triggers: trig}
	if resp != nil {
		out.Resp = resp(t)
	}
	return out
}

// respFn builds the response after the change is applied (it needs the new Stat).
type respFn func(t *Tree) wire.Record

func (t *Tree) execMulti(mr *wire.MultiRequest, c Caller, base Txn) Outcome {
	var (
		subs  []Txn
		resps []wire.Record
		undos []func()
		trig  []Trigger
	)
	fail := func(k int, code wire.ErrCode) Outcome {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
		res := &wire.MultiResponse{}
		for i := range mr.Ops {
			e := wire.ErrRuntimeInconsistency
			switch {
			case i < k:
				e = wire.ErrOk
			case i == k:
				e = code
			}
			res.Results = append(res.Results, wire.MultiResult{Type: wire.OpError, Err: e})
		}
		return Outcome{Resp: res}
	}
	for k, op := range mr.Ops {
		sub, resp, code := t.prepare(op.Type, op.Req, c, base.Time)
		if code != wire.ErrOk {
			return fail(k, code)
		}
		tr, undo := t.apply(&sub, base.Zxid, base.Time)
		subs = append(subs, sub)
		var r wire.Record
		if resp != nil {
			r = resp(t) // the state right after this op, as ZooKeeper reports it
		}
		resps = append(resps, r)
		undos = append(undos, undo)
		trig = append(trig, tr...)
	}
	res := &wire.MultiResponse{}
	for i, op := range mr.Ops {
		r := wire.MultiResult{Type: op.Type}
		switch op.Type {
		case wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
			r.Type = wire.OpCreate2
		}
		r.Resp = resps[i]
		res.Results = append(res.Results, r)
	}
	txn := base
	txn.Type = wire.OpMulti
	txn.Ops = subs
	t.lastZxid = base.Zxid
	return Outcome{Txn: &txn, Resp: res, Triggers: trig}
}

// CreateSession logs a new session.
func (t *Tree) CreateSession(id int64, timeout int32, passwd []byte, zxid, now int64) *Txn {
	x := &Txn{Zxid: zxid, Time: now, Session: id, Type: wire.OpCreateSession, Timeout: timeout, Passwd: passwd}
	t.apply(x, zxid, now)
	t.lastZxid = zxid
	return x
}

// CloseSession removes a session and its ephemeral nodes.
func (t *Tree) CloseSession(id int64, zxid, now int64) (*Txn, []Trigger) {
	x := &Txn{Zxid: zxid, Time: now, Session: id, Type: wire.OpCloseSession}
	trig, _ := t.apply(x, zxid, now)
	t.lastZxid = zxid
	return x, trig
}

// Reap deletes a container or TTL node found by Reapable, bypassing ACLs.
// It returns nil when the node no longer qualifies.
func (t *Tree) Reap(p string, zxid, now int64) (*Txn, []Trigger) {
	n := t.nodes[p]
	if n == nil || len(n.children) > 0 {
		return nil, nil
	}
	x := &Txn{Zxid: zxid, Time: now, Type: wire.OpDelete, Path: p}
	trig, _ := t.apply(x, zxid, now)
	t.lastZxid = zxid
	return x, trig
}

// Apply replays a logged transaction. It trusts the record: validation
// happened when it was executed.
func (t *Tree) Apply(x *Txn) ([]Trigger, error) {
	if x.Zxid <= t.lastZxid {
		return nil, fmt.Errorf("apply txn %#x: not after last zxid %#x", x.Zxid, t.lastZxid)
	}
	if err := t.checkReplayable(x); err != nil {
		return nil, fmt.Errorf("apply txn %#x: %w", x.Zxid, err)
	}
	var trig []Trigger
	if x.Type == wire.OpMulti {
		for i := range x.Ops {
			tr, _ := t.apply(&x.Ops[i], x.Zxid, x.Time)
			trig = append(trig, tr...)
		}
	} else {
		trig, _ = t.apply(x, x.Zxid, x.Time)
	}
	t.lastZxid = x.Zxid
	return trig, nil
}

// checkReplayable rejects records whose preconditions do not hold, so a
// corrupt log cannot crash the server. Multi sub-ops are checked by apply's
// own guards.
func (t *Tree) checkReplayable(x *Txn) error {
	switch x.Type {
	case wire.OpCreate:
		parent, _, ok := parentOf(x.Path)
		if !ok || t.nodes[parent] == nil || t.nodes[x.Path] != nil {
			return fmt.Errorf("create %s: parent missing or node exists", x.Path)
		}
	case wire.OpDelete, wire.OpSetData, wire.OpSetACL:
		if t.nodes[x.Path] == nil || x.Path == "/" {
			return fmt.Errorf("%s %s: no node", x.Type, x.Path)
		}
	}
	return nil
}

// prepare validates one write op and returns the resolved sub-transaction
// and a function building its response record after apply.
// target finds the node a conditional request names and checks, in
// ZooKeeper's order, that the path is valid, the node exists, the caller
// has perm on it, and its version (as read by version) is the expected one
// (-1 = any).
func (t *Tree) target(path string, perm, expected int32, version func(*node) int32, c Caller) (*node, wire.ErrCode) {
	if !ValidatePath(path) {
		return nil, wire.ErrBadArguments
	}
	n := t.nodes[path]
	switch {
	case n == nil:
		return nil, wire.ErrNoNode
	case !allowed(n.acl, perm, c):
		return nil, wire.ErrNoAuth
	case expected != -1 && expected != version(n):
		return nil, wire.ErrBadVersion
	}
	return n, wire.ErrOk
}

func dataVersion(n *node) int32 { return n.version }
func aclVersion(n *node) int32  { return n.aversion }

func (t *Tree) prepare(op wire.OpCode, req wire.Record, c Caller, now int64) (Txn, respFn, wire.ErrCode) {
	switch op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		r, ok := req.(*wire.CreateRequest)
		if !ok {
			return Txn{}, nil, wire.ErrMarshallingError
		}
		return t.prepareCreate(op, r.Path, r.Data, r.ACL, r.Flags, -1, c)
	case wire.OpCreateTTL:
		r, ok := req.(*wire.CreateTTLRequest)
		if !ok {
			return Txn{}, nil, wire.ErrMarshallingError
		}
		return t.prepareCreate(op, r.Path, r.Data, r.ACL, r.Flags, r.TTL, c)
	case wire.OpDelete:
		r, ok := req.(*wire.PathVersionRequest)
		if !ok {
			return Txn{}, nil, wire.ErrMarshallingError
		}
		return t.prepareDelete(r.Path, r.Version, c)
	case wire.OpCheck:
		r, ok := req.(*wire.PathVersionRequest)
		if !ok {
			return Txn{}, nil, wire.ErrMarshallingError
		}
		if _, code := t.target(r.Path, wire.PermRead, r.Version, dataVersion, c); code != wire.ErrOk {
			return Txn{}, nil, code
		}
		return Txn{Type: wire.OpCheck, Path: r.Path}, nil, wire.ErrOk
	case wire.OpSetData:
		r, ok := req.(*wire.SetDataRequest)
		if !ok {
			return Txn{}, nil, wire.ErrMarshallingError
		}
		n, code := t.target(r.Path, wire.PermWrite, r.Version, dataVersion, c)
		if code != wire.ErrOk {
			return Txn{}, nil, code
		}
		p := r.Path
		return Txn{Type: wire.OpSetData, Path: p, Data: r.Data, Version: n.version + 1},
			func(t *Tree) wire.Record { return &wire.StatResponse{Stat: t.nodes[p].stat()} }, wire.ErrOk
	case wire.OpSetACL:
		r, ok := req.(*wire.SetACLRequest)
		if !ok {
			return Txn{}, nil, wire.ErrMarshallingError
		}
		if !ValidatePath(r.Path) {
			return Txn{}, nil, wire.ErrBadArguments
		}
		acl, ok := fixACL(r.ACL, c)
		if !ok {
			return Txn{}, nil, wire.ErrInvalidACL
		}
		n, code := t.target(r.Path, wire.PermAdmin, r.Version, aclVersion, c)
		if code != wire.ErrOk {
			return Txn{}, nil, code
		}
		p := r.Path
		return Txn{Type: wire.OpSetACL, Path: p, ACL: acl, Version: n.aversion + 1},
			func(t *Tree) wire.Record { return &wire.StatResponse{Stat: t.nodes[p].stat()} }, wire.ErrOk
	}
	return Txn{}, nil, wire.ErrUnimplemented
}

func (t *Tree) prepareCreate(op wire.OpCode, p string, data []byte, acl []wire.ACL, flags int32, ttl int64, c Caller) (Txn, respFn, wire.ErrCode) {
	var (
		ephemeral  = flags == wire.FlagEphemeral || flags == wire.FlagEphemeralSequential
		sequential = flags == wire.FlagPersistentSequential || flags == wire.FlagEphemeralSequential || flags == wire.FlagPersistentSequentialWithTTL
		container  = flags == wire.FlagContainer
		isTTL      = flags == wire.FlagPersistentWithTTL || flags == wire.FlagPersistentSequentialWithTTL
	)
	switch {
	case flags < wire.FlagPersistent || flags > wire.FlagPersistentSequentialWithTTL:
		return Txn{}, nil, wire.ErrBadArguments
	case isTTL && (ttl <= 0 || ttl > maxTTL):
		return Txn{}, nil, wire.ErrBadArguments
	case !isTTL && op == wire.OpCreateTTL && ttl >= 0:
		return Txn{}, nil, wire.ErrBadArguments
	case op == wire.OpCreateContainer && !container:
		return Txn{}, nil, wire.ErrBadArguments
	}
	parentPath, _, ok := parentOf(p)
	if !ok || p == "" {
		return Txn{}, nil, wire.ErrBadArguments
	}
	for i := 0; i < len(p); i++ {
		if p[i] == 0 {
			return Txn{}, nil, wire.ErrBadArguments
		}
	}
	fixed, ok := fixACL(acl, c)
	if !ok {
		return Txn{}, nil, wire.ErrInvalidACL
	}
	parent := t.lookup(parentPath)
	if parent == nil {
		return Txn{}, nil, wire.ErrNoNode
	}
	if !allowed(parent.acl, wire.PermCreate, c) {
		return Txn{}, nil, wire.ErrNoAuth
	}
	if sequential {
		p += fmt.Sprintf("%010d", parent.cversion)
	}
	if !ValidatePath(p) {
		return Txn{}, nil, wire.ErrBadArguments
	}
	if t.nodes[p] != nil {
		return Txn{}, nil, wire.ErrNodeExists
	}
	if isEphemeralOwner(parent.owner) {
		return Txn{}, nil, wire.ErrNoChildrenForEphemerals
	}
	var owner int64
	switch {
	case ephemeral:
		if _, ok := t.sessions[c.Session]; !ok {
			return Txn{}, nil, wire.ErrSessionExpired
		}
		owner = c.Session
	case container:
		owner = containerOwner
	case isTTL:
		owner = ttlMask | ttl
	}
	x := Txn{Type: wire.OpCreate, Path: p, Data: data, ACL: fixed, Owner: owner, ParentCversion: parent.cversion + 1}
	resp := func(t *Tree) wire.Record {
		if op == wire.OpCreate {
			return &wire.CreateResponse{Path: p}
		}
		return &wire.Create2Response{Path: p, Stat: t.nodes[p].stat()}
	}
	return x, resp, wire.ErrOk
}

func (t *Tree) prepareDelete(p string, version int32, c Caller) (Txn, respFn, wire.ErrCode) {
	if !ValidatePath(p) || isSpecial(p) {
		return Txn{}, nil, wire.ErrBadArguments
	}
	n := t.nodes[p]
	if n == nil {
		return Txn{}, nil, wire.ErrNoNode
	}
	parentPath, _, _ := parentOf(p)
	if !allowed(t.nodes[parentPath].acl, wire.PermDelete, c) {
		return Txn{}, nil, wire.ErrNoAuth
	}
	if version != -1 && version != n.version {
		return Txn{}, nil, wire.ErrBadVersion
	}
	if len(n.children) > 0 {
		return Txn{}, nil, wire.ErrNotEmpty
	}
	return Txn{Type: wire.OpDelete, Path: p}, nil, wire.ErrOk
}

// apply performs one non-multi transaction and returns its triggers and a
// function that undoes it (used to roll back a failed multi).
func (t *Tree) apply(x *Txn, zxid, now int64) ([]Trigger, func()) {
	switch x.Type {
	case wire.OpCreate:
		return t.applyCreate(x, zxid, now)
	case wire.OpDelete:
		return t.applyDelete(x.Path, zxid)
	case wire.OpSetData:
		n := t.nodes[x.Path]
		if n == nil {
			return nil, func() {}
		}
		old := *n
		t.dataSize += int64(len(x.Data) - len(n.data))
		n.data, n.version, n.mzxid, n.mtime = x.Data, x.Version, zxid, now
		return []Trigger{{x.Path, wire.EventNodeDataChanged}}, func() {
			t.dataSize -= int64(len(x.Data) - len(old.data))
			n.data, n.version, n.mzxid, n.mtime = old.data, old.version, old.mzxid, old.mtime
		}
	case wire.OpSetACL:
		n := t.nodes[x.Path]
		if n == nil {
			return nil, func() {}
		}
		oldACL, oldVer := n.acl, n.aversion
		n.acl, n.aversion = t.intern(x.ACL), x.Version
		return nil, func() { n.acl, n.aversion = oldACL, oldVer }
	case wire.OpCreateSession:
		t.sessions[x.Session] = SessionInfo{Timeout: x.Timeout, Passwd: x.Passwd}
		return nil, func() { delete(t.sessions, x.Session) }
	case wire.OpCloseSession:
		var trig []Trigger
		paths := make([]string, 0, len(t.ephemerals[x.Session]))
		for p := range t.ephemerals[x.Session] {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			tr, _ := t.applyDelete(p, zxid)
			trig = append(trig, tr...)
		}
		delete(t.sessions, x.Session)
		delete(t.ephemerals, x.Session)
		return trig, func() {}
	}
	return nil, func() {}
}

func (t *Tree) applyCreate(x *Txn, zxid, now int64) ([]Trigger, func()) {
	parentPath, name, _ := parentOf(x.Path)
	parent := t.nodes[parentPath]
	if parent == nil || t.nodes[x.Path] != nil {
		return nil, func() {}
	}
	n := &node{
		data: x.Data, acl: t.intern(x.ACL), czxid: zxid, mzxid: zxid, pzxid: zxid,
		ctime: now, mtime: now, owner: x.Owner,
	}
	oldCversion, oldPzxid := parent.cversion, parent.pzxid
	t.nodes[x.Path] = n
	if parent.children == nil {
		parent.children = make(map[string]struct{})
	}
	parent.children[name] = struct{}{}
	parent.cversion = x.ParentCversion
	parent.pzxid = zxid
	t.dataSize += int64(len(x.Path) + len(x.Data))
	t.track(x.Path, x.Owner, true)
	undo := func() {
		delete(t.nodes, x.Path)
		delete(parent.children, name)
		parent.cversion, parent.pzxid = oldCversion, oldPzxid
		t.dataSize -= int64(len(x.Path) + len(x.Data))
		t.track(x.Path, x.Owner, false)
	}
	return []Trigger{{x.Path, wire.EventNodeCreated}, {parentPath, wire.EventNodeChildrenChanged}}, undo
}

func (t *Tree) applyDelete(p string, zxid int64) ([]Trigger, func()) {
	parentPath, name, _ := parentOf(p)
	parent := t.nodes[parentPath]
	n := t.nodes[p]
	if n == nil || parent == nil {
		return nil, func() {}
	}
	oldPzxid := parent.pzxid
	delete(t.nodes, p)
	delete(parent.children, name)
	if zxid > parent.pzxid {
		parent.pzxid = zxid
	}
	t.dataSize -= int64(len(p) + len(n.data))
	t.track(p, n.owner, false)
	undo := func() {
		t.nodes[p] = n
		if parent.children == nil {
			parent.children = make(map[string]struct{})
		}
		parent.children[name] = struct{}{}
		parent.pzxid = oldPzxid
		t.dataSize += int64(len(p) + len(n.data))
		t.track(p, n.owner, true)
	}
	return []Trigger{{p, wire.EventNodeDeleted}, {parentPath, wire.EventNodeChildrenChanged}}, undo
}

// track keeps the ephemeral, container and TTL indexes in step with nodes.
func (t *Tree) track(p string, owner int64, add bool) {
	switch {
	case isEphemeralOwner(owner):
		if add {
			m := t.ephemerals[owner]
			if m == nil {
				m = make(map[string]struct{})
				t.ephemerals[owner] = m
			}
			m[p] = struct{}{}
		} else if m := t.ephemerals[owner]; m != nil {
			delete(m, p)
			if len(m) == 0 {
				delete(t.ephemerals, owner)
			}
		}
	case isContainerOwner(owner):
		if add {
			t.containers[p] = struct{}{}
		} else {
			delete(t.containers, p)
		}
	case isTTLOwner(owner):
		if add {
			t.ttls[p] = struct{}{}
		} else {
			delete(t.ttls, p)
		}
	}
}
