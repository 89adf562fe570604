package embeddedzk

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// testServer starts a server on 127.0.0.1:0 with a fast tick and stops it
// when the test ends.
func testServer(t *testing.T, mod func(*Config)) *Server {
	t.Helper()
	off := false
	cfg := Config{
		Listen:            "127.0.0.1:0",
		DataDir:           t.TempDir(),
		TickTime:          50 * time.Millisecond,
		MinSessionTimeout: 200 * time.Millisecond,
		MaxSessionTimeout: 10 * time.Second,
		Fsync:             &off,
	}
	if mod != nil {
		mod(&cfg)
	}
	return startServer(t, cfg)
}

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(&testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func dial(t *testing.T, s *Server, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect([]string{s.Addr().String()}, timeout, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitState(t, ev, zk.StateHasSession)
	return c, ev
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func waitState(t *testing.T, ev <-chan zk.Event, want zk.State) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within 5s", want)
		}
	}
}

func waitEvent(t *testing.T, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event within 5s")
		return zk.Event{}
	}
}

func TestCRUDWithGoZookeeper(t *testing.T) {
	s := testServer(t, nil)
	c, _ := dial(t, s, 5*time.Second)
	acl := zk.WorldACL(zk.PermAll)

	if p, err := c.Create("/app", []byte("v1"), 0, acl); err != nil || p != "/app" {
		t.Fatalf("create: %q %v", p, err)
	}
	if _, err := c.Create("/app", nil, 0, acl); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("second create: %v", err)
	}
	data, st, err := c.Get("/app")
	if err != nil || string(data) != "v1" || st.Version != 0 || st.DataLength != 2 {
		t.Fatalf("get: %q %+v %v", data, st, err)
	}
	st, err = c.Set("/app", []byte("v2"), 0)
	if err != nil || st.Version != 1 {
		t.Fatalf("set: %+v %v", st, err)
	}
	if _, err := c.Set("/app", []byte("v3"), 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("stale set: %v", err)
	}
	seq, err := c.Create("/app/s-", nil, zk.FlagSequence, acl)
	if err != nil || seq != "/app/s-0000000000" {
		t.Fatalf("sequential: %q %v", seq, err)
	}
	if _, err := c.Create("/app/e", []byte{}, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	kids, st, err := c.Children("/app")
	sort.Strings(kids)
	if err != nil || strings.Join(kids, ",") != "e,s-0000000000" || st.NumChildren != 2 {
		t.Fatalf("children: %v %+v %v", kids, st, err)
	}
	ok, st, err := c.Exists("/app/e")
	if err != nil || !ok || st.EphemeralOwner != c.SessionID() {
		t.Fatalf("exists: %v %+v %v", ok, st, err)
	}
	if ok, _, err := c.Exists("/nope"); err != nil || ok {
		t.Fatalf("exists missing: %v %v", ok, err)
	}
	if err := c.Delete("/app", -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete non-empty: %v", err)
	}
	if d, _, err := c.Get("/app/s-0000000000"); err != nil || d != nil {
		t.Fatalf("null data: %#v %v", d, err)
	}
	if _, err := c.Sync("/app"); err != nil {
		t.Fatal(err)
	}
	kids, _, err = c.Children("/")
	sort.Strings(kids)
	if err != nil || strings.Join(kids, ",") != "app,zookeeper" {
		t.Fatalf("root: %v %v", kids, err)
	}
	if d, _, err := c.Get("/zookeeper/config"); err != nil || len(d) != 0 {
		t.Fatalf("/zookeeper/config: %q %v", d, err)
	}
	res, err := c.Multi(
		&zk.CreateRequest{Path: "/m", Data: []byte("x"), Acl: acl},
		&zk.SetDataRequest{Path: "/m", Data: []byte("y"), Version: 0},
		&zk.CheckVersionRequest{Path: "/m", Version: 1},
		&zk.DeleteRequest{Path: "/m", Version: 1},
	)
	if err != nil || len(res) != 4 || res[0].String != "/m" {
		t.Fatalf("multi: %+v %v", res, err)
	}
	_, err = c.Multi(
		&zk.CreateRequest{Path: "/m2", Acl: acl},
		&zk.CheckVersionRequest{Path: "/app", Version: 9},
	)
	if !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("failed multi: %v", err)
	}
	if ok, _, _ := c.Exists("/m2"); ok {
		t.Fatal("failed multi left /m2 behind")
	}
	if _, err := c.CreateContainer("/ctr", nil, zk.FlagContainer, acl); err != nil {
		t.Fatalf("container: %v", err)
	}
	if _, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, acl, time.Hour); err != nil {
		t.Fatalf("ttl: %v", err)
	}
}

func TestWatches(t *testing.T) {
	s := testServer(t, nil)
	c1, _ := dial(t, s, 5*time.Second)
	c2, _ := dial(t, s, 5*time.Second)
	acl := zk.WorldACL(zk.PermAll)

	_, _, created, err := c1.ExistsW("/w")
	if err != nil {
		t.Fatal(err)
	}
	c2.Create("/w", []byte("a"), 0, acl)
	if e := waitEvent(t, created); e.Type != zk.EventNodeCreated || e.Path != "/w" {
		t.Fatalf("exists watch: %+v", e)
	}
	_, _, kids, _ := c1.ChildrenW("/w")
	_, _, data, _ := c1.GetW("/w")
	c2.Create("/w/child", nil, 0, acl)
	if e := waitEvent(t, kids); e.Type != zk.EventNodeChildrenChanged || e.Path != "/w" {
		t.Fatalf("child watch: %+v", e)
	}
	c2.Set("/w", []byte("b"), -1)
	if e := waitEvent(t, data); e.Type != zk.EventNodeDataChanged {
		t.Fatalf("data watch: %+v", e)
	}
	// The event arrives before a later read sees the new state.
	_, _, data, _ = c1.GetW("/w")
	c2.Set("/w", []byte("c"), -1)
	got, _, _ := c1.Get("/w")
	select {
	case e := <-data:
		if e.Type != zk.EventNodeDataChanged {
			t.Fatalf("event %+v", e)
		}
	default:
		if string(got) == "c" {
			t.Fatal("read saw the change before its watch event")
		}
	}
	// An ephemeral's watchers hear about its deletion when its session closes.
	c3, _ := dial(t, s, 5*time.Second)
	c3.Create("/w/eph", nil, zk.FlagEphemeral, acl)
	_, _, gone, _ := c1.ExistsW("/w/eph")
	c3.Close()
	if e := waitEvent(t, gone); e.Type != zk.EventNodeDeleted {
		t.Fatalf("ephemeral delete: %+v", e)
	}
}

// Expiring a session deletes its ephemerals, notifies others, and a
// reconnect with the old id is answered as expired.
func TestSessionExpiry(t *testing.T) {
	s := testServer(t, nil)
	watcher, _ := dial(t, s, 5*time.Second)
	victim, victimEvents := dial(t, s, 5*time.Second)
	if _, err := victim.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, _, gone, _ := watcher.ExistsW("/eph")
	s.expire(victim.SessionID())
	if e := waitEvent(t, gone); e.Type != zk.EventNodeDeleted {
		t.Fatalf("got %+v", e)
	}
	waitState(t, victimEvents, zk.StateExpired)
}

// A client that stops sending loses its session after the timeout, and its
// ephemerals go with it.
func TestSilentClientExpires(t *testing.T) {
	s := testServer(t, nil)
	watcher, _ := dial(t, s, 5*time.Second)
	nc := rawConnect(t, s, 300, 0, nil)
	defer nc.Close()
	id := s.sessionConns()[len(s.sessionConns())-1].sessionID.Load()
	if id == 0 {
		t.Fatal("no session")
	}
	if !s.sessions.Alive(id) {
		t.Fatal("session not alive")
	}
	start := time.Now()
	deadline := time.Now().Add(3 * time.Second)
	for s.sessions.Alive(id) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.sessions.Alive(id) {
		t.Fatal("silent session still alive after 3s")
	}
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Fatalf("expired after %v, before its 300ms timeout", el)
	}
	// The server closed the socket without sending anything more.
	nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := nc.Read(make([]byte, 1)); err == nil || n != 0 {
		t.Fatalf("read %d bytes, err %v; want EOF", n, err)
	}
	_ = watcher
}

// rawConnect opens a socket and performs the handshake by hand.
func rawConnect(t *testing.T, s *Server, timeoutMs int32, sessionID int64, passwd []byte) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	writeFrame(t, nc, connectReq(timeoutMs, sessionID, passwd, false))
	readFrame(t, nc)
	return nc
}
