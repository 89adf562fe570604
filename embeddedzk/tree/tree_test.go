package tree

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

var anyone = Caller{Session: 1}

// harness executes requests with increasing zxids and times.
type harness struct {
	t    *testing.T
	tr   *Tree
	zxid int64
	now  int64
	log  []*Txn
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, tr: New(), now: 1000}
	h.session(1)
	h.session(2)
	return h
}

func (h *harness) session(id int64) {
	h.zxid++
	h.log = append(h.log, h.tr.CreateSession(id, 4000, bytes.Repeat([]byte{byte(id)}, 16), h.zxid, h.now))
}

func (h *harness) exec(op wire.OpCode, req wire.Record, c Caller) Outcome {
	h.now += 10
	o := h.tr.Execute(op, req, c, h.zxid+1, h.now)
	if o.Txn != nil {
		h.zxid++
		h.log = append(h.log, o.Txn)
	}
	return o
}

func (h *harness) create(p string, data []byte, flags int32) Outcome {
	return h.exec(wire.OpCreate2, &wire.CreateRequest{Path: p, Data: data, ACL: openACL, Flags: flags}, anyone)
}

func (h *harness) mustCreate(p string, flags int32) string {
	o := h.create(p, []byte("x"), flags)
	if o.Err != wire.ErrOk {
		h.t.Fatalf("create %s: %v", p, o.Err)
	}
	return o.Resp.(*wire.Create2Response).Path
}

func TestStatAfterCreateSetDelete(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("/a", 0)
	createZxid := h.zxid
	st, _ := h.tr.Stat("/a")
	want := wire.Stat{Czxid: createZxid, Mzxid: createZxid, Pzxid: createZxid, Ctime: h.now, Mtime: h.now, DataLength: 1}
	if st != want {
		t.Fatalf("after create: %+v, want %+v", st, want)
	}
	root, _ := h.tr.Stat("/")
	// One create since start, two children (zookeeper, a): 2×1 − 2.
	if root.Cversion != 0 || root.Pzxid != createZxid || root.NumChildren != 2 {
		t.Fatalf("root after create: %+v", root)
	}

	o := h.exec(wire.OpSetData, &wire.SetDataRequest{Path: "/a", Data: []byte("hello"), Version: 0}, anyone)
	if o.Err != 0 {
		t.Fatal(o.Err)
	}
	st = o.Resp.(*wire.StatResponse).Stat
	if st.Version != 1 || st.Mzxid != h.zxid || st.Czxid != createZxid || st.DataLength != 5 || st.Mtime != h.now {
		t.Fatalf("after setData: %+v", st)
	}
	if o := h.exec(wire.OpSetData, &wire.SetDataRequest{Path: "/a", Version: 0}, anyone); o.Err != wire.ErrBadVersion {
		t.Fatalf("stale version: %v", o.Err)
	}

	h.mustCreate("/a/b", 0)
	h.mustCreate("/a/c", 0)
	if o := h.exec(wire.OpDelete, &wire.PathVersionRequest{Path: "/a", Version: -1}, anyone); o.Err != wire.ErrNotEmpty {
		t.Fatalf("delete non-empty: %v", o.Err)
	}
	o = h.exec(wire.OpDelete, &wire.PathVersionRequest{Path: "/a/b", Version: -1}, anyone)
	if o.Err != 0 {
		t.Fatal(o.Err)
	}
	st, _ = h.tr.Stat("/a")
	// A delete moves pzxid and, as Apache reports it, cversion: 2×2 creates − 1 child.
	if st.Cversion != 3 || st.Pzxid != h.zxid || st.NumChildren != 1 {
		t.Fatalf("after child delete: %+v", st)
	}
	want2 := []Trigger{{"/a/b", wire.EventNodeDeleted}, {"/a", wire.EventNodeChildrenChanged}}
	if !reflect.DeepEqual(o.Triggers, want2) {
		t.Fatalf("triggers %v", o.Triggers)
	}
}

func TestCreateErrors(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("/p", 0)
	h.mustCreate("/e", wire.FlagEphemeral)
	tests := []struct {
		name  string
		op    wire.OpCode
		path  string
		acl   []wire.ACL
		flags int32
		ttl   int64
		want  wire.ErrCode
	}{
		{"exists", wire.OpCreate, "/p", openACL, 0, -1, wire.ErrNodeExists},
		{"no parent", wire.OpCreate, "/x/y", openACL, 0, -1, wire.ErrNoNode},
		{"double slash looks up parent first", wire.OpCreate, "/p//y", openACL, 0, -1, wire.ErrNoNode},
		{"relative", wire.OpCreate, "p", openACL, 0, -1, wire.ErrBadArguments},
		{"trailing slash", wire.OpCreate, "/p/", openACL, 0, -1, wire.ErrBadArguments},
		{"dot segment", wire.OpCreate, "/p/.", openACL, 0, -1, wire.ErrBadArguments},
		{"ephemeral parent", wire.OpCreate, "/e/c", openACL, 0, -1, wire.ErrNoChildrenForEphemerals},
		{"empty acl", wire.OpCreate, "/q", nil, 0, -1, wire.ErrInvalidACL},
		{"auth acl without auth", wire.OpCreate, "/q", []wire.ACL{{Perms: 31, ID: wire.ID{Scheme: "auth"}}}, 0, -1, wire.ErrInvalidACL},
		{"bad digest id", wire.OpCreate, "/q", []wire.ACL{{Perms: 31, ID: wire.ID{Scheme: "digest", ID: "nocolon"}}}, 0, -1, wire.ErrInvalidACL},
		{"unknown scheme", wire.OpCreate, "/q", []wire.ACL{{Perms: 31, ID: wire.ID{Scheme: "foo", ID: "x"}}}, 0, -1, wire.ErrInvalidACL},
		{"bad flags", wire.OpCreate, "/q", openACL, 9, -1, wire.ErrBadArguments},
		{"ttl flag without ttl", wire.OpCreate, "/q", openACL, wire.FlagPersistentWithTTL, -1, wire.ErrBadArguments},
		{"ttl zero", wire.OpCreateTTL, "/q", openACL, wire.FlagPersistentWithTTL, 0, wire.ErrBadArguments},
		{"ttl too big", wire.OpCreateTTL, "/q", openACL, wire.FlagPersistentWithTTL, 1 << 40, wire.ErrBadArguments},
		{"ttl with persistent mode", wire.OpCreateTTL, "/q", openACL, 0, 100, wire.ErrBadArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req wire.Record = &wire.CreateRequest{Path: tt.path, Data: nil, ACL: tt.acl, Flags: tt.flags}
			if tt.op == wire.OpCreateTTL {
				req = &wire.CreateTTLRequest{Path: tt.path, ACL: tt.acl, Flags: tt.flags, TTL: tt.ttl}
			}
			if o := h.exec(tt.op, req, anyone); o.Err != tt.want || o.Txn != nil {
				t.Fatalf("got %v (txn %v), want %v", o.Err, o.Txn != nil, tt.want)
			}
		})
	}
}

func TestSequentialNames(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("/q", 0)
	got := []string{
		h.mustCreate("/q/job-", wire.FlagPersistentSequential),
		h.mustCreate("/q/other-", wire.FlagEphemeralSequential),
		h.mustCreate("/q/", wire.FlagPersistentSequential),
	}
	want := []string{"/q/job-0000000000", "/q/other-0000000001", "/q/0000000002"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	// Deletes do not reuse numbers: cversion only grows.
	h.exec(wire.OpDelete, &wire.PathVersionRequest{Path: "/q/0000000002", Version: -1}, anyone)
	if p := h.mustCreate("/q/n", wire.FlagPersistentSequential); p != "/q/n0000000003" {
		t.Fatalf("after delete got %s", p)
	}
}

func TestEphemeralsContainersTTL(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("/e1", wire.FlagEphemeral)
	h.mustCreate("/c", wire.FlagContainer)
	o := h.exec(wire.OpCreateTTL, &wire.CreateTTLRequest{Path: "/t", ACL: openACL, Flags: wire.FlagPersistentWithTTL, TTL: 100}, anyone)
	if o.Err != 0 {
		t.Fatal(o.Err)
	}
	for p, owner := range map[string]int64{"/e1": 1, "/c": 0, "/t": 0} {
		if st, _ := h.tr.Stat(p); st.EphemeralOwner != owner {
			t.Errorf("%s ephemeralOwner %#x, want %#x", p, st.EphemeralOwner, owner)
		}
	}
	if got := h.tr.Ephemerals(1, "/"); !reflect.DeepEqual(got, []string{"/e1"}) {
		t.Fatalf("ephemerals %v", got)
	}
	// A container is reaped only after it had children and became empty; a
	// TTL node once unmodified for longer than its TTL.
	if r := h.tr.Reapable(h.now + 50); len(r) != 0 {
		t.Fatalf("reapable too early: %v", r)
	}
	h.mustCreate("/c/x", 0)
	h.exec(wire.OpDelete, &wire.PathVersionRequest{Path: "/c/x", Version: -1}, anyone)
	if r := h.tr.Reapable(h.now + 1000); !reflect.DeepEqual(r, []string{"/c", "/t"}) {
		t.Fatalf("reapable %v", r)
	}
	h.zxid++
	if x, trig := h.tr.Reap("/c", h.zxid, h.now); x == nil || len(trig) != 2 {
		t.Fatalf("reap: %v %v", x, trig)
	}
	// Closing the session removes its ephemerals.
	h.zxid++
	_, trig := h.tr.CloseSession(1, h.zxid, h.now)
	if _, ok := h.tr.Stat("/e1"); ok || len(trig) != 2 || h.tr.HasSession(1) {
		t.Fatalf("after close: trig %v", trig)
	}
	if o := h.create("/e2", nil, wire.FlagEphemeral); o.Err != wire.ErrSessionExpired {
		t.Fatalf("ephemeral for closed session: %v", o.Err)
	}
}

func TestNullAndEmptyData(t *testing.T) {
	h := newHarness(t)
	h.create("/null", nil, 0)
	h.create("/empty", []byte{}, 0)
	if d, st, _ := h.tr.GetData("/null", anyone); d != nil || st.DataLength != 0 {
		t.Fatalf("null data read back as %#v", d)
	}
	if d, _, _ := h.tr.GetData("/empty", anyone); d == nil || len(d) != 0 {
		t.Fatalf("empty data read back as %#v", d)
	}
}

func TestACL(t *testing.T) {
	h := newHarness(t)
	user := Caller{Session: 1, IDs: []wire.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: DigestID("user:password")}}}
	other := Caller{Session: 2, IDs: []wire.ID{{Scheme: "ip", ID: "127.0.0.1"}}}
	o := h.exec(wire.OpCreate, &wire.CreateRequest{Path: "/s", ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "auth"}}}}, user)
	if o.Err != 0 {
		t.Fatal(o.Err)
	}
	acl, _, _ := h.tr.GetACL("/s", user)
	if want := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "digest", ID: "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY="}}}; !reflect.DeepEqual(acl, want) {
		t.Fatalf("auth: expanded to %v", acl)
	}
	if _, _, code := h.tr.GetData("/s", other); code != wire.ErrNoAuth {
		t.Fatalf("other reads: %v", code)
	}
	if o := h.exec(wire.OpSetData, &wire.SetDataRequest{Path: "/s", Version: -1}, other); o.Err != wire.ErrNoAuth {
		t.Fatalf("other writes: %v", o.Err)
	}
	if _, _, code := h.tr.GetData("/s", user); code != 0 {
		t.Fatalf("owner reads: %v", code)
	}
	// ip ACLs match by address or CIDR.
	h.exec(wire.OpCreate, &wire.CreateRequest{Path: "/ip", ACL: []wire.ACL{{Perms: wire.PermRead, ID: wire.ID{Scheme: "ip", ID: "127.0.0.0/8"}}}}, user)
	if _, _, code := h.tr.GetData("/ip", other); code != 0 {
		t.Fatalf("ip match: %v", code)
	}
	// Without ADMIN, getACL masks digest hashes.
	h.exec(wire.OpCreate, &wire.CreateRequest{Path: "/r", ACL: []wire.ACL{
		{Perms: wire.PermRead, ID: wire.WorldAnyone}, {Perms: wire.PermAll, ID: wire.ID{Scheme: "digest", ID: "bob:hash"}}}}, user)
	acl, _, _ = h.tr.GetACL("/r", other)
	if acl[1].ID.ID != "bob:x" {
		t.Fatalf("masked acl %v", acl)
	}
	// setACL checks aversion and bumps it.
	o = h.exec(wire.OpSetACL, &wire.SetACLRequest{Path: "/ip", ACL: openACL, Version: 0}, user)
	if o.Err != wire.ErrNoAuth {
		t.Fatalf("setACL without ADMIN: %v", o.Err)
	}
	h.exec(wire.OpCreate, &wire.CreateRequest{Path: "/o", ACL: openACL}, user)
	o = h.exec(wire.OpSetACL, &wire.SetACLRequest{Path: "/o", ACL: openACL, Version: 0}, user)
	if o.Err != 0 || o.Resp.(*wire.StatResponse).Stat.Aversion != 1 {
		t.Fatalf("setACL: %v", o.Err)
	}
}

func TestMulti(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("/m", 0)
	create := func(p string) wire.MultiOp {
		return wire.MultiOp{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: p, ACL: openACL}}
	}
	ok := &wire.MultiRequest{Ops: []wire.MultiOp{
		create("/m/a"),
		{Type: wire.OpCreate2, Req: &wire.CreateRequest{Path: "/m/b", ACL: openACL}},
		{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/m/a", Data: []byte("v"), Version: 0}},
		{Type: wire.OpCheck, Req: &wire.PathVersionRequest{Path: "/m/a", Version: 1}},
		{Type: wire.OpDelete, Req: &wire.PathVersionRequest{Path: "/m/b", Version: -1}},
	}}
	o := h.exec(wire.OpMulti, ok, anyone)
	if o.Err != 0 || o.Txn == nil {
		t.Fatalf("multi: %v", o.Err)
	}
	res := o.Resp.(*wire.MultiResponse).Results
	types := []wire.OpCode{res[0].Type, res[1].Type, res[2].Type, res[3].Type, res[4].Type}
	if !reflect.DeepEqual(types, []wire.OpCode{wire.OpCreate, wire.OpCreate2, wire.OpSetData, wire.OpCheck, wire.OpDelete}) {
		t.Fatalf("result types %v", types)
	}
	before, _ := h.tr.Stat("/m")
	bad := &wire.MultiRequest{Ops: []wire.MultiOp{
		create("/m/c"),
		{Type: wire.OpCheck, Req: &wire.PathVersionRequest{Path: "/m/a", Version: 7}},
		create("/m/d"),
	}}
	o = h.exec(wire.OpMulti, bad, anyone)
	if o.Err != 0 || o.Txn != nil {
		t.Fatalf("failed multi: header err %v txn %v", o.Err, o.Txn)
	}
	var codes []wire.ErrCode
	for _, r := range o.Resp.(*wire.MultiResponse).Results {
		if r.Type != wire.OpError {
			t.Fatalf("failed multi result type %v", r.Type)
		}
		codes = append(codes, r.Err)
	}
	if !reflect.DeepEqual(codes, []wire.ErrCode{0, wire.ErrBadVersion, wire.ErrRuntimeInconsistency}) {
		t.Fatalf("codes %v", codes)
	}
	after, _ := h.tr.Stat("/m")
	if _, exists := h.tr.Stat("/m/c"); exists || after != before {
		t.Fatalf("failed multi left changes: %+v vs %+v", after, before)
	}
}

// Replaying the log on a fresh tree, or on a snapshot plus the log tail,
// rebuilds the same tree.
func TestReplayAndSnapshot(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("/a", 0)
	h.mustCreate("/a/s-", wire.FlagPersistentSequential)
	h.mustCreate("/e", wire.FlagEphemeral)
	h.exec(wire.OpMulti, &wire.MultiRequest{Ops: []wire.MultiOp{
		{Type: wire.OpCreate, Req: &wire.CreateRequest{Path: "/a/m", Data: []byte("m"), ACL: openACL}},
		{Type: wire.OpSetData, Req: &wire.SetDataRequest{Path: "/a", Data: []byte("new"), Version: -1}},
	}}, anyone)
	var buf bytes.Buffer
	if _, err := h.tr.Image().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	snapAt := len(h.log)
	h.exec(wire.OpDelete, &wire.PathVersionRequest{Path: "/a/m", Version: -1}, anyone)
	h.exec(wire.OpSetACL, &wire.SetACLRequest{Path: "/a", ACL: []wire.ACL{{Perms: wire.PermRead, ID: wire.WorldAnyone}}, Version: -1}, anyone)
	h.zxid++
	h.tr.CloseSession(1, h.zxid, h.now)

	replay := New()
	for _, x := range h.log {
		decoded, err := DecodeTxn(x.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := replay.Apply(decoded); err != nil {
			t.Fatal(err)
		}
	}
	x, _ := h.tr.CloseSession(1, h.zxid, h.now) // already closed: idempotent in effect
	_ = x
	fromSnap, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range h.log[snapAt:] {
		if _, err := fromSnap.Apply(x); err != nil {
			t.Fatal(err)
		}
	}
	closeTxn := &Txn{Zxid: h.zxid, Time: h.now, Session: 1, Type: wire.OpCloseSession}
	replay.Apply(closeTxn)
	fromSnap.Apply(closeTxn)
	for name, got := range map[string]*Tree{"log": replay, "snapshot": fromSnap} {
		if !sameTree(h.tr, got) {
			t.Errorf("%s replay differs from the live tree", name)
		}
	}
	if _, err := replay.Apply(&Txn{Zxid: 1, Type: wire.OpDelete, Path: "/a"}); err == nil {
		t.Fatal("replaying an old zxid must fail")
	}
}

func sameTree(a, b *Tree) bool {
	if len(a.nodes) != len(b.nodes) || a.lastZxid != b.lastZxid || !reflect.DeepEqual(a.Sessions(), b.Sessions()) {
		return false
	}
	for p, n := range a.nodes {
		m := b.nodes[p]
		if m == nil || n.stat() != m.stat() || !bytes.Equal(n.data, m.data) || (n.data == nil) != (m.data == nil) || !reflect.DeepEqual(n.acl, m.acl) {
			return false
		}
	}
	return true
}

func TestReads(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("/a", 0)
	h.mustCreate("/a/b", 0)
	h.mustCreate("/a/b/c", 0)
	h.mustCreate("/a/d", 0)
	if n, _ := h.tr.AllChildrenNumber("/a", anyone); n != 3 {
		t.Fatalf("all children of /a: %d", n)
	}
	if n, _ := h.tr.AllChildrenNumber("/", anyone); int(n) != h.tr.NodeCount()-1 {
		t.Fatalf("all children of /: %d", n)
	}
	for p, want := range map[string]int32{"/zookeeper": -2, "/zookeeper/config": 0} {
		if st, _ := New().Stat(p); st.Cversion != want {
			t.Errorf("fresh %s cversion %d, want %d", p, st.Cversion, want)
		}
	}
	if st, _ := New().Stat("/"); st.Cversion != -1 {
		t.Errorf("fresh root cversion %d, want -1", st.Cversion)
	}
	kids, _, _ := h.tr.Children("/", anyone)
	if !reflect.DeepEqual(kids, []string{"a", "zookeeper"}) {
		t.Fatalf("root children %v", kids)
	}
	if _, code := h.tr.Exists("/a\x00", anyone); code != wire.ErrBadArguments {
		t.Fatalf("exists with NUL: %v", code)
	}
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/config"} {
		if o := h.exec(wire.OpDelete, &wire.PathVersionRequest{Path: p, Version: -1}, anyone); o.Err != wire.ErrBadArguments {
			t.Fatalf("delete %s: %v", p, o.Err)
		}
	}
}

func TestValidatePath(t *testing.T) {
	tests := map[string]bool{
		"/": true, "/a": true, "/a/b-c.d": true, "/\u00e9": true,
		"": false, "a": false, "/a/": false, "//": false, "/a//b": false, "/.": false, "/a/..": false,
		"/a\x00": false, "/a\x01": false, "/\u0085": false, "/\U0001F600": false, "/\ufff5": false,
	}
	for p, want := range tests {
		if got := ValidatePath(p); got != want {
			t.Errorf("ValidatePath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestDigestID(t *testing.T) {
	for in, want := range map[string]string{
		"user:password": "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY=",
		"admin:admin":   "admin:x1nq8J5GOJVPY6zgzhtTtA9izLc=",
	} {
		if got := DigestID(in); got != want {
			t.Errorf("DigestID(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzDecodeTxn(f *testing.F) {
	h := newHarness(&testing.T{})
	h.mustCreate("/a", 0)
	for _, x := range h.log {
		f.Add(x.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := DecodeTxn(b)
		if err != nil {
			return
		}
		if _, err := DecodeTxn(x.Encode()); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		New().Apply(x) // must not panic on any decodable record
	})
}

// 100,000 znodes of 100 bytes must fit well inside the process budget of
// 100 MB RSS; the tree itself is held to 60 MB of heap.
func TestMemoryFor100kNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 100k nodes")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr := New()
	data := bytes.Repeat([]byte("x"), 100)
	zxid := int64(0)
	for i := 0; i < 100; i++ {
		zxid++
		tr.Execute(wire.OpCreate, &wire.CreateRequest{Path: fmt.Sprintf("/dubbo%d", i), ACL: openACL}, anyone, zxid, 1)
		for j := 0; j < 1000; j++ {
			zxid++
			p := fmt.Sprintf("/dubbo%d/provider-%d", i, j)
			o := tr.Execute(wire.OpCreate, &wire.CreateRequest{Path: p, Data: append([]byte(nil), data...), ACL: openACL}, anyone, zxid, 1)
			if o.Err != 0 {
				t.Fatal(o.Err)
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	used := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d nodes use %.1f MB of heap (%.0f bytes each)", tr.NodeCount(), float64(used)/1e6, float64(used)/float64(tr.NodeCount()))
	if used > 60<<20 {
		t.Fatalf("100k nodes use %d MB of heap", used>>20)
	}
	runtime.KeepAlive(tr)
}

// FuzzLoad feeds arbitrary bytes to the snapshot loader: it must fail
// cleanly or produce a tree that snapshots to the same bytes again.
func FuzzLoad(f *testing.F) {
	h := newHarness(&testing.T{})
	h.mustCreate("/a", 0)
	h.mustCreate("/a/b", wire.FlagEphemeral)
	var buf bytes.Buffer
	h.tr.Image().WriteTo(&buf)
	f.Add(buf.Bytes())
	var empty bytes.Buffer
	New().Image().WriteTo(&empty)
	f.Add(empty.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := Load(bytes.NewReader(b))
		if err != nil {
			return
		}
		var again bytes.Buffer
		if _, err := tr.Image().WriteTo(&again); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(&again); err != nil {
			t.Fatalf("reload: %v", err)
		}
	})
}
