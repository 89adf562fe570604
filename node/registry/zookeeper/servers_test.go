package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/url"
)

// tick is the server tickTime of every test server: sessions can then be as
// short as 2 × tick, so expiry tests take about a second.
const tick = 250 * time.Millisecond

// server is one ZooKeeper implementation under test.
type server struct {
	name  string
	start func(t *testing.T) string // returns host:port
}

func servers() []server {
	return []server{
		{"embedded", func(t *testing.T) string { return zktest.StartEmbedded(t, embeddedzk.Config{TickTime: tick}) }},
		{"apache", func(t *testing.T) string {
			return apachezk.Start(t, apachezk.Options{TickTime: tick, DisableFsync: true}).Addr()
		}},
	}
}

// forEachServer runs body once per implementation, each with its own server.
func forEachServer(t *testing.T, body func(t *testing.T, addr string)) {
	for _, s := range servers() {
		t.Run(s.name, func(t *testing.T) {
			body(t, s.start(t))
		})
	}
}

// newRegistry connects a registry with a test-local root and waits for its
// session. params are added to the registry URL.
func newRegistry(t *testing.T, addr, params string, opts Options) *Registry {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	u := url.MustParse("zookeeper://" + addr + "?session=2000&" + params)
	r, err := New(u, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// rawConn is a plain client for inspecting and disturbing the tree.
func rawConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkLogger{testLogger(t)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatalf("raw client: no session with %s", addr)
		}
	}
}

// testLogger sends log lines to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// recorder is a listener that keeps every notification.
type recorder struct {
	ch chan registry.Notification
}

func newRecorder() *recorder { return &recorder{ch: make(chan registry.Notification, 100)} }

func (r *recorder) Notify(n registry.Notification) { r.ch <- n }

// drain forgets the notifications received so far.
func (r *recorder) drain() {
	for {
		select {
		case <-r.ch:
		default:
			return
		}
	}
}

// waitFor returns the first notification of category that satisfies ok,
// failing after timeout.
func (r *recorder) waitFor(t *testing.T, category string, timeout time.Duration, ok func([]*url.URL) bool) registry.Notification {
	t.Helper()
	deadline := time.After(timeout)
	var last []string
	for {
		select {
		case n := <-r.ch:
			if n.Category != category {
				continue
			}
			if ok(n.URLs) {
				return n
			}
			last = urlStrings(n.URLs)
		case <-deadline:
			t.Fatalf("no %s notification as expected within %s; last seen %v", category, timeout, last)
		}
	}
}

func urlStrings(us []*url.URL) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.String()
	}
	return out
}

func hasExactly(want ...*url.URL) func([]*url.URL) bool {
	return func(got []*url.URL) bool {
		if len(got) != len(want) {
			return false
		}
		for _, w := range want {
			found := false
			for _, g := range got {
				if g.Equal(w) {
					found = true
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
}

// cutDialer lets a test sever a client from its server: Cut closes the open
// connections and refuses new ones until Restore.
type cutDialer struct {
	mu      sync.Mutex
	blocked bool
	conns   []net.Conn
}

func (d *cutDialer) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.blocked {
		return nil, errors.New("test: link cut")
	}
	c, err := net.DialTimeout(network, address, timeout)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cutDialer) Cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.blocked = true
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

func (d *cutDialer) Restore() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.blocked = false
}

// waitUntil polls cond every 20ms until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func providerURL(port int, iface, version string) *url.URL {
	return url.MustParse(fmt.Sprintf("dubbo://127.0.0.1:%d/%s?anyhost=false&application=demo-provider&dubbo=2.0.2&interface=%s&methods=sayHello,add&side=provider&timestamp=1700000000000&version=%s",
		port, iface, iface, version))
}

func consumerURL(iface, version string) *url.URL {
	return url.MustParse(fmt.Sprintf("consumer://127.0.0.1/%s?application=demo-consumer&category=consumers&check=false&dubbo=2.0.2&interface=%s&side=consumer&version=%s",
		iface, iface, version))
}

// subscribeURL is the consumer URL asking for the three watched categories.
func subscribeURL(iface, version string) *url.URL {
	u := consumerURL(iface, version)
	u.SetParam(url.KeyCategory, "providers,configurators,routers")
	return u
}

// wantDigestACL checks that each path is the user's alone (creator-all
// under digest auth, Java Dubbo's CREATOR_ALL_ACL).
func wantDigestACL(t *testing.T, addr, user, password string, paths ...string) {
	t.Helper()
	// Since ZooKeeper 3.6 reading an ACL needs READ or ADMIN: be the user.
	raw := rawConn(t, addr)
	if err := raw.AddAuth("digest", []byte(user+":"+password)); err != nil {
		t.Fatal(err)
	}
	want := zk.DigestACL(zk.PermAll, user, password)
	for _, p := range paths {
		acl, _, err := raw.GetACL(p)
		if err != nil {
			t.Fatalf("getACL %s: %v", p, err)
		}
		if !slices.Equal(acl, want) {
			t.Errorf("ACL of %s = %+v, want %+v", p, acl, want)
		}
	}
}
