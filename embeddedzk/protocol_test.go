package embeddedzk

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
	"github.com/go-zookeeper/zk"
)

func TestUnknownOpKeepsConnection(t *testing.T) {
	s := testServer(t, nil)
	rc := newRawClient(t, s, 5000)
	for _, op := range []wire.OpCode{55, wire.OpCheck, wire.OpNotification, wire.OpSASL} {
		h, _ := rc.call(op, nil)
		if h.Err != wire.ErrUnimplemented {
			t.Fatalf("op %d: err %v, want unimplemented", op, h.Err)
		}
	}
	if h, _ := rc.call(wire.OpReconfig, &wire.ReconfigRequest{CurConfigID: -1}); h.Err != wire.ErrReconfigDisabled {
		t.Fatalf("reconfig: %v", h.Err)
	}
	// The connection still works.
	if h, _ := rc.call(wire.OpExists, &wire.PathWatchRequest{Path: "/zookeeper"}); h.Err != 0 {
		t.Fatalf("exists after unknown op: %v", h.Err)
	}
}

func TestMalformedRequestClosesOnlyThatConnection(t *testing.T) {
	s := testServer(t, nil)
	good := newRawClient(t, s, 5000)
	bad := newRawClient(t, s, 5000)
	writeFrame(t, bad.nc, wire.AppendFrame(nil, &wire.RequestHeader{Xid: 1, Type: wire.OpGetData}, &wire.IntResponse{N: 0x7fffffff}))
	b := readFrame(t, bad.nc)
	var h wire.ReplyHeader
	wire.Unmarshal(b, &h)
	if h.Err != wire.ErrMarshallingError || !bad.closed(2*time.Second) {
		t.Fatalf("malformed: err %v", h.Err)
	}
	if h, _ := good.call(wire.OpPing, nil); h.Err != 0 {
		t.Fatal("other connection broken")
	}
}

// An over-limit packet closes the connection; go-zookeeper reconnects to the
// same session and its ephemeral survives.
func TestOversizePacketClosesConnection(t *testing.T) {
	s := testServer(t, func(c *Config) { c.MaxPacketSize = 4096 })
	c, ev := dial(t, s, 5*time.Second)
	other, _ := dial(t, s, 5*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create("/mine", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	id := c.SessionID()
	if _, err := c.Create("/big", make([]byte, 8192), 0, acl); err == nil {
		t.Fatal("oversize create succeeded")
	}
	waitState(t, ev, zk.StateHasSession)
	if c.SessionID() != id {
		t.Fatalf("session changed from %#x to %#x", id, c.SessionID())
	}
	if ok, _, err := c.Exists("/mine"); err != nil || !ok {
		t.Fatalf("ephemeral after reconnect: %v %v", ok, err)
	}
	if ok, _, err := other.Exists("/big"); err != nil || ok {
		t.Fatalf("other connection: %v %v", ok, err)
	}
}

func TestHandshakeVariants(t *testing.T) {
	s := testServer(t, nil)
	rc := newRawClient(t, s, 1000)
	if rc.resp.HasReadOnly || rc.resp.TimeOut != 1000 || len(rc.resp.Passwd) != 16 {
		t.Fatalf("go-style handshake: %+v", rc.resp)
	}
	tests := []struct {
		name    string
		req     wire.ConnectRequest
		expired bool
	}{
		{"java style echoes readOnly", wire.ConnectRequest{TimeOut: 100000, Passwd: make([]byte, 16), HasReadOnly: true}, false},
		{"resume with password", wire.ConnectRequest{TimeOut: 1000, SessionID: rc.resp.SessionID, Passwd: rc.resp.Passwd, HasReadOnly: true}, false},
		{"wrong password", wire.ConnectRequest{TimeOut: 1000, SessionID: rc.resp.SessionID, Passwd: make([]byte, 16)}, true},
		{"unknown session", wire.ConnectRequest{TimeOut: 1000, SessionID: 12345, Passwd: make([]byte, 16)}, true},
		{"newer zxid than ours", wire.ConnectRequest{TimeOut: 1000, LastZxidSeen: 1 << 40, Passwd: make([]byte, 16)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			writeFrame(t, nc, wire.AppendFrame(nil, &tt.req))
			b := readFrame(t, nc)
			var resp wire.ConnectResponse
			if err := wire.Unmarshal(b, &resp); err != nil {
				t.Fatal(err)
			}
			if resp.HasReadOnly != tt.req.HasReadOnly {
				t.Fatalf("readOnly byte present %v, request had it %v", resp.HasReadOnly, tt.req.HasReadOnly)
			}
			if tt.expired {
				if resp.TimeOut != 0 || resp.SessionID != 0 || !bytes.Equal(resp.Passwd, make([]byte, 16)) {
					t.Fatalf("want expired answer, got %+v", resp)
				}
				rc := &rawClient{t: t, nc: nc}
				if !rc.closed(2 * time.Second) {
					t.Fatal("connection left open after expired answer")
				}
				return
			}
			if resp.TimeOut == 0 || resp.SessionID == 0 {
				t.Fatalf("got %+v", resp)
			}
			if tt.req.SessionID != 0 && resp.SessionID != tt.req.SessionID {
				t.Fatalf("resumed %#x as %#x", tt.req.SessionID, resp.SessionID)
			}
			if tt.req.TimeOut == 100000 && resp.TimeOut != 10000 {
				t.Fatalf("timeout not clamped: %d", resp.TimeOut)
			}
		})
	}
	// The wrong-password attempt left the real session alive.
	if !s.sessions.Alive(rc.resp.SessionID) {
		t.Fatal("wrong password killed the session")
	}
}

func TestHandshakeTimeoutAndGarbage(t *testing.T) {
	s := testServer(t, func(c *Config) { c.handshakeTimeout = 200 * time.Millisecond })
	silent, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	garbage, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer garbage.Close()
	garbage.Write([]byte{0xff, 0xff, 0xff, 0x00, 1, 2, 3})
	for name, nc := range map[string]net.Conn{"silent": silent, "garbage": garbage} {
		rc := &rawClient{t: t, nc: nc}
		if !rc.closed(3 * time.Second) {
			t.Fatalf("%s connection not closed", name)
		}
	}
}

func TestPerIPLimit(t *testing.T) {
	s := testServer(t, func(c *Config) { c.MaxClientCnxns = 2 })
	newRawClient(t, s, 5000)
	newRawClient(t, s, 5000)
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rc := &rawClient{t: t, nc: nc}
	if !rc.closed(2 * time.Second) {
		t.Fatal("third connection from one address accepted")
	}
}

func TestAuthACLAndWhoAmI(t *testing.T) {
	s := testServer(t, nil)
	owner, _ := dial(t, s, 5*time.Second)
	if err := owner.AddAuth("digest", []byte("user:password")); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Create("/secret", []byte("s"), 0, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	acl, _, err := owner.GetACL("/secret")
	if err != nil || len(acl) != 1 || acl[0].ID != "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY=" {
		t.Fatalf("acl %v %v", acl, err)
	}
	stranger, _ := dial(t, s, 5*time.Second)
	if _, _, err := stranger.Get("/secret"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("stranger read: %v", err)
	}
	rc := newRawClient(t, s, 5000)
	rc.call(wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("user:password")})
	h, body := rc.call(wire.OpWhoAmI, nil)
	var who wire.WhoAmIResponse
	if err := wire.Unmarshal(body, &who); err != nil || h.Err != 0 {
		t.Fatal(err, h.Err)
	}
	if fmt.Sprint(who.Clients) != "[{ip 127.0.0.1} {digest user}]" {
		t.Fatalf("whoAmI %v", who.Clients)
	}
	h, _ = rc.call(wire.OpAuth, &wire.AuthPacket{Scheme: "kerberos", Auth: []byte("x")})
	if h.Err != wire.ErrAuthFailed || !rc.closed(2*time.Second) {
		t.Fatalf("unknown scheme: %v", h.Err)
	}
}

func TestAddWatchAndRemoveWatches(t *testing.T) {
	s := testServer(t, nil)
	rc := newRawClient(t, s, 5000)
	writer, _ := dial(t, s, 5*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	h, body := rc.call(wire.OpAddWatch, &wire.AddWatchRequest{Path: "/r", Mode: wire.AddWatchPersistentRecursive})
	if h.Err != 0 || !bytes.Equal(body, []byte{0, 0, 0, 0}) {
		t.Fatalf("addWatch reply %v %x", h.Err, body)
	}
	writer.Create("/r", nil, 0, acl)
	writer.Create("/r/a", nil, 0, acl)
	writer.Set("/r/a", []byte("x"), -1)
	writer.Delete("/r/a", -1)
	rc.call(wire.OpPing, nil) // events are queued before this reply
	var got []string
	for _, e := range rc.events {
		got = append(got, fmt.Sprintf("%v %s", e.Type, e.Path))
	}
	want := "[NodeCreated /r NodeCreated /r/a NodeDataChanged /r/a NodeDeleted /r/a]"
	if fmt.Sprint(got) != want {
		t.Fatalf("recursive events %v, want %v", got, want)
	}
	if h, _ := rc.call(wire.OpCheckWatches, &wire.WatchesRequest{Path: "/r", Type: wire.WatcherPersistentRecursive}); h.Err != 0 {
		t.Fatalf("checkWatches: %v", h.Err)
	}
	if h, _ := rc.call(wire.OpRemoveWatches, &wire.WatchesRequest{Path: "/r", Type: wire.WatcherAny}); h.Err != 0 {
		t.Fatalf("removeWatches: %v", h.Err)
	}
	if h, _ := rc.call(wire.OpRemoveWatches, &wire.WatchesRequest{Path: "/r", Type: wire.WatcherAny}); h.Err != wire.ErrNoWatcher {
		t.Fatalf("second removeWatches: %v", h.Err)
	}
	// getEphemerals and getAllChildrenNumber.
	rc.call(wire.OpCreate, &wire.CreateRequest{Path: "/r/e", ACL: []wire.ACL{{Perms: 31, ID: wire.WorldAnyone}}, Flags: wire.FlagEphemeral})
	_, body = rc.call(wire.OpGetEphemerals, &wire.PathRequest{Path: "/"})
	var eph wire.StringsResponse
	wire.Unmarshal(body, &eph)
	if fmt.Sprint(eph.Strings) != "[/r/e]" {
		t.Fatalf("ephemerals %v", eph.Strings)
	}
	_, body = rc.call(wire.OpGetAllChildrenNumber, &wire.PathRequest{Path: "/r"})
	var n wire.IntResponse
	wire.Unmarshal(body, &n)
	if n.N != 1 {
		t.Fatalf("all children %d", n.N)
	}
	// closeSession: reply, ephemerals gone, connection closed.
	h, _ = rc.call(wire.OpCloseSession, nil)
	if h.Err != 0 || !rc.closed(2*time.Second) {
		t.Fatalf("closeSession: %v", h.Err)
	}
	if ok, _, _ := writer.Exists("/r/e"); ok {
		t.Fatal("ephemeral survived closeSession")
	}
}

// After a dropped connection go-zookeeper re-arms its watches with
// setWatches; a change made while it was away fires at once.
func TestSetWatchesAfterReconnect(t *testing.T) {
	s := testServer(t, nil)
	c, ev := dial(t, s, 5*time.Second)
	writer, _ := dial(t, s, 5*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	writer.Create("/sw", []byte("a"), 0, acl)
	_, _, data, err := c.GetW("/sw")
	if err != nil {
		t.Fatal(err)
	}
	for _, cc := range s.sessionConns() {
		if cc.sessionID.Load() == c.SessionID() {
			cc.close()
		}
	}
	writer.Set("/sw", []byte("b"), -1)
	waitState(t, ev, zk.StateHasSession)
	if e := waitEvent(t, data); e.Type != zk.EventNodeDataChanged || e.Path != "/sw" {
		t.Fatalf("got %+v", e)
	}
}

func TestReapers(t *testing.T) {
	s := testServer(t, nil)
	c, _ := dial(t, s, 5*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.CreateContainer("/ctr", nil, zk.FlagContainer, acl); err != nil {
		t.Fatal(err)
	}
	c.Create("/ctr/x", nil, 0, acl)
	if _, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, acl, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	_, _, gone, _ := c.ExistsW("/ttl")
	time.Sleep(150 * time.Millisecond)
	if ok, _, _ := c.Exists("/ctr"); !ok {
		t.Fatal("container with a child was reaped")
	}
	c.Delete("/ctr/x", -1)
	if e := waitEvent(t, gone); e.Type != zk.EventNodeDeleted {
		t.Fatalf("ttl: %+v", e)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		ok, _, _ := c.Exists("/ctr")
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("empty container not reaped")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
