package zookeeper

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/url"
)

// testOpenAndDial: a role's registry (Open) and a reader's session (Dial)
// on one address with digest credentials see the same tree, and the
// reader's queue gets the session and then its watch events, in order.
func testOpenAndDial(t *testing.T, addr string) {
	ctx := context.Background()
	address := "zookeeper://admin:s3cret@" + addr + "?group=opened&session=2000"
	r, err := Open(ctx, address, 10*time.Second, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	first := providerURL(20880, greeter, "1.0.0")
	if err := r.Register(ctx, first); err != nil {
		t.Fatal(err)
	}

	s, err := Dial(address, SessionOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	want := Layout{Root: "/opened", Services: "/opened", Config: "/dubbo/config", Mapping: "/dubbo/mapping"}
	if l := s.Layout(); l != want {
		t.Errorf("layout %+v, want %+v", l, want)
	}
	nextEvent(t, s, func(ev zk.Event) bool { return ev.Type == zk.EventSession && ev.State == zk.StateHasSession })
	if s.LostFor() != 0 {
		t.Errorf("LostFor = %v with a session", s.LostFor())
	}
	folder := "/opened/" + greeter + "/providers"
	kids, _, _, err := s.Conn().ChildrenW(folder) // creator-only ACL: needs the credentials
	if err != nil || !slices.Equal(kids, []string{first.Encode()}) {
		t.Fatalf("children of %s = %q, %v", folder, kids, err)
	}
	if err := r.Register(ctx, providerURL(20881, greeter, "1.0.0")); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, s, func(ev zk.Event) bool { return ev.Type == zk.EventNodeChildrenChanged && ev.Path == folder })

	stranger, err := Dial("zookeeper://"+addr+"?session=2000", SessionOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stranger.Close)
	nextEvent(t, stranger, func(ev zk.Event) bool { return ev.State == zk.StateHasSession })
	if _, _, err := stranger.Conn().Children(folder); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("list without credentials: %v, want ErrNoAuth", err)
	}
}

// testDigestAuthAfterOutage: credentials given while the ensemble cannot
// be reached still apply once it can. go-zookeeper forgets credentials it
// could not send; a registry started before ZooKeeper then had an
// unauthenticated session, whose creator-only nodes ZooKeeper refuses.
func testDigestAuthAfterOutage(t *testing.T, addr string) {
	var up atomic.Bool
	var dials atomic.Int32
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		dials.Add(1)
		if !up.Load() {
			return nil, errors.New("test: the registry is not up yet")
		}
		return net.DialTimeout(network, address, timeout)
	}
	u := url.MustParse("zookeeper://admin:s3cret@" + addr + "?group=lateauth&session=2000")
	r, err := New(u, Options{Logger: testLogger(t), Dialer: dialer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	// A second dial means go-zookeeper gave up a pass over the hosts, and
	// with it every request it held.
	for deadline := time.Now().Add(10 * time.Second); dials.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("go-zookeeper did not dial twice")
		}
	}
	up.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	p := providerURL(20880, greeter, "")
	if err := r.Register(ctx, p); err != nil {
		t.Fatal(err)
	}
	wantDigestACL(t, addr, "admin", "s3cret", "/lateauth/"+greeter+"/providers/"+p.Encode())
}

// nextEvent waits for the first queued event of s that ok accepts.
func nextEvent(t *testing.T, s *Session, ok func(zk.Event) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-s.Queue().Ready():
			for _, task := range s.Queue().TakeAll() {
				if ok(task.Event) {
					return
				}
			}
		case <-deadline:
			t.Fatal("no such event within 10s")
		}
	}
}

// A registry address is shown with its secrets hidden in every error
// Open and Dial give: one that does not parse, names another registry,
// or has no ensemble answering.
func TestOpenErrorsHideSecrets(t *testing.T) {
	dead := zktest.Unreachable(t)
	tests := []struct {
		address, want string
		dial          bool // Dial fails too (it does not wait for a session)
	}{
		{"etcd://admin:s3cret@127.0.0.1:2379?password=s3cret", "only zookeeper:// registries", true},
		{"zookeeper://admin:s3cret@127.0.0.1:99999?password=s3cret", "out of range", true},
		{"admin:s3cret@127.0.0.1:2181?password=s3cret", "missing protocol", true},
		{"zookeeper://admin:s3cret@" + dead + "?password=s3cret", "is the registry running?", false},
	}
	for _, tt := range tests {
		_, err := Open(context.Background(), tt.address, 300*time.Millisecond, Options{Logger: testLogger(t)})
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%q): %v; want an error saying %q, without the password", tt.address, err, tt.want)
		}
		s, err := Dial(tt.address, SessionOptions{Logger: testLogger(t)})
		if !tt.dial {
			s.Close()
			continue
		}
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Dial(%q): %v; want an error without the password", tt.address, err)
		}
	}
	_, err := Open(context.Background(), "zookeeper://"+dead, 300*time.Millisecond, Options{Logger: testLogger(t)})
	if !errors.Is(err, registry.ErrUnavailable) {
		t.Errorf("Open of a dead registry: %v, want ErrUnavailable", err)
	}
	// With a cache file a consumer starts anyway, from its cache.
	r, err := Open(context.Background(), "zookeeper://"+dead, 300*time.Millisecond,
		Options{Logger: testLogger(t), CacheFile: filepath.Join(t.TempDir(), "cache")})
	if err != nil {
		t.Fatalf("Open of a dead registry with a cache file: %v", err)
	}
	r.Close()
}
