package zookeeper

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/url"
)

const greeter = "org.example.Greeter"

// TestZooKeeper runs every behaviour against each server implementation;
// the subtests share one server (a JVM start is the slow part) and keep
// apart by using their own roots, keys and names.
func TestZooKeeper(t *testing.T) {
	forEachServer(t, func(t *testing.T, addr string) {
		t.Run("RegisterLayout", func(t *testing.T) { testRegisterLayout(t, addr) })
		t.Run("RegisterTakesOverLeftoverLeaf", func(t *testing.T) { testRegisterTakesOverLeftoverLeaf(t, addr) })
		t.Run("SubscribeFullLists", func(t *testing.T) { testSubscribeFullLists(t, addr) })
		t.Run("SubscriptionsShareFolders", func(t *testing.T) { testSubscriptionsShareFolders(t, addr) })
		t.Run("SessionExpiryRecovery", func(t *testing.T) { testSessionExpiryRecovery(t, addr) })
		t.Run("SameURLTwoSessions", func(t *testing.T) { testSameURLTwoSessions(t, addr) })
		t.Run("DeletedNodeRecreated", func(t *testing.T) { testDeletedNodeRecreated(t, addr) })
		t.Run("CacheFileWhenZooKeeperDown", func(t *testing.T) { testCacheFileWhenZooKeeperDown(t, addr) })
		t.Run("DigestAuth", func(t *testing.T) { testDigestAuth(t, addr) })
		t.Run("DigestAuthAfterOutage", func(t *testing.T) { testDigestAuthAfterOutage(t, addr) })
		t.Run("OpenAndDial", func(t *testing.T) { testOpenAndDial(t, addr) })
		t.Run("ConfigWatch", func(t *testing.T) { testConfigWatch(t, addr) })
		t.Run("InstanceRegistration", func(t *testing.T) { testInstanceRegistration(t, addr) })
		t.Run("InstanceUpdate", func(t *testing.T) { testInstanceUpdate(t, addr) })
		t.Run("MappingCAS", func(t *testing.T) { testMappingCAS(t, addr) })
		t.Run("MappingWatch", func(t *testing.T) { testMappingWatch(t, addr) })
		t.Run("DubboGoAppMetadata", func(t *testing.T) { testDubboGoAppMetadata(t, addr) })
		t.Run("ServiceDefinitionRoundTrip", func(t *testing.T) { testServiceDefinitionRoundTrip(t, addr) })
	})
}

func testRegisterLayout(t *testing.T, addr string) {
	ctx := context.Background()
	prov := newRegistry(t, addr, "group=layout", Options{})
	cons := newRegistry(t, addr, "group=layout", Options{})
	raw := rawConn(t, addr)

	p := providerURL(20880, greeter, "1.0.0")
	if err := prov.Register(ctx, p); err != nil {
		t.Fatal(err)
	}
	c := consumerURL(greeter, "1.0.0")
	if err := cons.Register(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := cons.Subscribe(ctx, subscribeURL(greeter, "1.0.0"), newRecorder()); err != nil {
		t.Fatal(err)
	}

	// The exact node name, and it decodes back to the URL.
	children, _, err := raw.Children("/layout/" + greeter + "/providers")
	if err != nil {
		t.Fatal(err)
	}
	if len(children) != 1 || children[0] != p.Encode() {
		t.Fatalf("providers children = %q, want [%q]", children, p.Encode())
	}
	if !strings.HasPrefix(children[0], "dubbo%3A%2F%2F127.0.0.1%3A20880%2Forg.example.Greeter%3Fanyhost%3Dfalse%26") {
		t.Errorf("node name not escaped like Java: %s", children[0])
	}
	if back, err := url.Decode(children[0]); err != nil || !back.Equal(p) {
		t.Errorf("decode(%q) = %v, %v; want %v", children[0], back, err, p)
	}
	_, stat, err := raw.Get("/layout/" + greeter + "/providers/" + children[0])
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner != prov.conn.SessionID() {
		t.Errorf("provider leaf owner = %x, want the provider session %x", stat.EphemeralOwner, prov.conn.SessionID())
	}
	if _, _, err := raw.Get("/layout/" + greeter + "/consumers/" + c.Encode()); err != nil {
		t.Errorf("consumer leaf: %v", err)
	}

	// The four folders are persistent.
	for _, folder := range []string{"", "/providers", "/consumers", "/routers", "/configurators"} {
		_, stat, err := raw.Get("/layout/" + greeter + folder)
		if err != nil {
			t.Fatalf("%s: %v", folder, err)
		}
		if stat.EphemeralOwner != 0 {
			t.Errorf("%s is ephemeral", folder)
		}
	}

	// One-shot reads for the console.
	if got, err := cons.Lookup(ctx, greeter, "providers"); err != nil || !hasExactly(p)(got) {
		t.Errorf("Lookup providers = %v, %v", urlStrings(got), err)
	}
	if got, err := cons.Lookup(ctx, "org.example.None", "providers"); err != nil || len(got) != 0 {
		t.Errorf("Lookup of nothing = %v, %v", got, err)
	}
	if _, err := raw.Create("/layout/config", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if got, err := cons.Services(ctx); err != nil || strings.Join(got, ",") != greeter {
		t.Errorf("Services = %v, %v", got, err)
	}

	// dynamic=false makes the leaf persistent.
	static := providerURL(20881, greeter, "1.0.0")
	static.SetParam("dynamic", "false")
	if err := prov.Register(ctx, static); err != nil {
		t.Fatal(err)
	}
	_, stat, err = raw.Get("/layout/" + greeter + "/providers/" + static.Encode())
	if err != nil || stat.EphemeralOwner != 0 {
		t.Errorf("dynamic=false leaf: err %v, owner %x; want persistent", err, stat.EphemeralOwner)
	}

	// Close removes the ephemeral leaves at once and leaves the rest.
	prov.Close()
	waitUntil(t, 2*time.Second, "ephemeral provider leaf to go", func() bool {
		ok, _, err := raw.Exists("/layout/" + greeter + "/providers/" + p.Encode())
		return err == nil && !ok
	})
	if ok, _, _ := raw.Exists("/layout/" + greeter + "/providers/" + static.Encode()); !ok {
		t.Error("dynamic=false leaf removed by Close")
	}
}

func testRegisterTakesOverLeftoverLeaf(t *testing.T, addr string) {
	ctx := context.Background()
	raw := rawConn(t, addr)
	r := newRegistry(t, addr, "group=takeover", Options{})
	p := providerURL(20880, greeter, "")
	leaf := "/takeover/" + greeter + "/providers/" + p.Encode()
	// An older incarnation's session, still alive, owns the leaf.
	if err := r.ensurePath(parentOf(leaf), false); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(leaf, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx, p); err != nil {
		t.Fatal(err)
	}
	_, stat, err := raw.Get(leaf)
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner != r.conn.SessionID() {
		t.Errorf("leaf owner %x, want registry session %x", stat.EphemeralOwner, r.conn.SessionID())
	}
	// Registering again is idempotent: the leaf is ours, it stays.
	if err := r.Register(ctx, p); err != nil {
		t.Fatal(err)
	}
	_, stat2, _ := raw.Get(leaf)
	if stat2.Czxid != stat.Czxid {
		t.Error("re-registering our own leaf re-created it")
	}
}

func testSubscribeFullLists(t *testing.T, addr string) {
	ctx := context.Background()
	prov := newRegistry(t, addr, "group=sub", Options{})
	prov2 := newRegistry(t, addr, "group=sub", Options{})
	cons := newRegistry(t, addr, "group=sub", Options{})

	rec := newRecorder()
	if err := cons.Subscribe(ctx, subscribeURL(greeter, "1.0.0"), rec); err != nil {
		t.Fatal(err)
	}
	// The first notifications arrive before Subscribe returns: one per category, empty.
	for i := 0; i < 3; i++ {
		select {
		case n := <-rec.ch:
			if len(n.URLs) != 0 || n.Stale {
				t.Errorf("initial %s = %v (stale %v), want empty", n.Category, urlStrings(n.URLs), n.Stale)
			}
		default:
			t.Fatalf("only %d initial notifications before Subscribe returned", i)
		}
	}

	a, b := providerURL(20880, greeter, "1.0.0"), providerURL(20881, greeter, "1.0.0")
	other := providerURL(20882, greeter, "2.0.0") // another version: not ours
	start := time.Now()
	if err := prov.Register(ctx, a); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "providers", 5*time.Second, hasExactly(a))
	if d := time.Since(start); d > time.Second {
		t.Errorf("add seen after %s, want < 1s", d)
	}
	for _, u := range []*url.URL{other, b} {
		if err := prov2.Register(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	rec.waitFor(t, "providers", 5*time.Second, hasExactly(a, b))

	start = time.Now()
	if err := prov.Unregister(ctx, a); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "providers", 5*time.Second, hasExactly(b))
	if d := time.Since(start); d > time.Second {
		t.Errorf("remove seen after %s, want < 1s", d)
	}

	// Routers and configurators come through their own categories.
	route := url.MustParse("condition://0.0.0.0/" + greeter + "?category=routers&dynamic=false&enabled=true&force=false&rule=host+%3D+1.2.3.4+%3D%3E+host+%3D+5.6.7.8&version=1.0.0")
	if err := prov.Register(ctx, route); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "routers", 5*time.Second, hasExactly(route))

	// The provider process goes away: its session's leaves with it.
	prov2.Close()
	rec.waitFor(t, "providers", 5*time.Second, hasExactly())

	// Unsubscribe: no more notifications.
	if err := cons.Unsubscribe(ctx, subscribeURL(greeter, "1.0.0")); err != nil {
		t.Fatal(err)
	}
	if err := prov.Register(ctx, a); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-rec.ch:
		t.Errorf("notification after Unsubscribe: %s %v", n.Category, urlStrings(n.URLs))
	case <-time.After(300 * time.Millisecond):
	}
}

// Subscriptions of one session share a folder's watch and its decoded
// nodes: each gets the lists it matches, an undecodable node is skipped,
// and one that unsubscribes leaves the others served.
func testSubscriptionsShareFolders(t *testing.T, addr string) {
	ctx := context.Background()
	prov := newRegistry(t, addr, "group=share", Options{})
	cons := newRegistry(t, addr, "group=share", Options{})
	raw := rawConn(t, addr)

	v1, v2, all := newRecorder(), newRecorder(), newRecorder()
	subAll := subscribeURL(greeter, "*")
	subAll.SetParam("application", "other-consumer")
	for _, s := range []struct {
		u   *url.URL
		rec *recorder
	}{{subscribeURL(greeter, "1.0.0"), v1}, {subscribeURL(greeter, "2.0.0"), v2}, {subAll, all}} {
		if err := cons.Subscribe(ctx, s.u, s.rec); err != nil {
			t.Fatal(err)
		}
	}
	a, b := providerURL(20880, greeter, "1.0.0"), providerURL(20881, greeter, "2.0.0")
	for _, u := range []*url.URL{a, b} {
		if err := prov.Register(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Create("/share/"+greeter+"/providers/not%zza+url", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	v1.waitFor(t, "providers", 5*time.Second, hasExactly(a))
	v2.waitFor(t, "providers", 5*time.Second, hasExactly(b))
	all.waitFor(t, "providers", 5*time.Second, hasExactly(a, b))

	if err := cons.Unsubscribe(ctx, subscribeURL(greeter, "1.0.0")); err != nil {
		t.Fatal(err)
	}
	v1.drain()
	c := providerURL(20882, greeter, "1.0.0")
	if err := prov.Register(ctx, c); err != nil {
		t.Fatal(err)
	}
	all.waitFor(t, "providers", 5*time.Second, hasExactly(a, b, c))
	if err := prov.Unregister(ctx, b); err != nil {
		t.Fatal(err)
	}
	v2.waitFor(t, "providers", 5*time.Second, hasExactly())
	all.waitFor(t, "providers", 5*time.Second, hasExactly(a, c))
	select {
	case n := <-v1.ch:
		t.Errorf("notification after Unsubscribe: %s %v", n.Category, urlStrings(n.URLs))
	default:
	}
}

// Two live sessions registering the same URL (two consumers of one
// application in one process) leave it to the later one instead of
// deleting it under each other for ever; when that one goes, the other
// registers it again.
func testSameURLTwoSessions(t *testing.T, addr string) {
	ctx := context.Background()
	first := newRegistry(t, addr, "group=twice", Options{})
	second := newRegistry(t, addr, "group=twice", Options{})
	raw := rawConn(t, addr)
	c := consumerURL(greeter, "1.0.0")
	if err := first.Register(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := second.Register(ctx, c); err != nil {
		t.Fatal(err)
	}
	p := "/twice/" + greeter + "/consumers/" + c.Encode()
	owner := func() (session, czxid int64) {
		t.Helper()
		ok, st, err := raw.Exists(p)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return 0, 0
		}
		return st.EphemeralOwner, st.Czxid
	}
	_, czxid := owner()
	time.Sleep(500 * time.Millisecond)
	if s, z := owner(); s != second.conn.SessionID() || z != czxid {
		t.Fatalf("the node changed hands while both sessions live: owner %#x czxid %#x, was created at %#x; second session %#x",
			s, z, czxid, second.conn.SessionID())
	}
	second.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if s, _ := owner(); s == first.conn.SessionID() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first session did not register the URL again after the second closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testSessionExpiryRecovery(t *testing.T, addr string) {
	ctx := context.Background()
	logs := &syncbuf.Buffer{}
	dialer := &cutDialer{}
	// A 1s session: the server expires it about a second after the cut.
	r := newRegistry(t, addr, "group=expiry&session=1000", Options{
		Dialer: dialer.Dial,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	other := newRegistry(t, addr, "group=expiry", Options{})
	raw := rawConn(t, addr)

	p := providerURL(20880, greeter, "")
	if err := r.Register(ctx, p); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if err := r.Subscribe(ctx, subscribeURL(greeter, ""), rec); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "providers", time.Second, hasExactly(p))
	rec.drain()
	gotContent := make(chan string, 10)
	if _, err := r.Watch(ctx, "expiry.condition-router", func(c string, deleted bool) { gotContent <- c }); err != nil {
		t.Fatal(err)
	}
	oldSession := r.conn.SessionID()
	leaf := "/expiry/" + greeter + "/providers/" + p.Encode()

	dialer.Cut()
	waitUntil(t, 10*time.Second, "the server to expire the session and drop the leaf", func() bool {
		ok, _, err := raw.Exists(leaf)
		return err == nil && !ok
	})
	// While cut off, the consumer keeps its last list: no empty notification.
	select {
	case n := <-rec.ch:
		t.Fatalf("notified while disconnected: %s %v", n.Category, urlStrings(n.URLs))
	default:
	}
	dialer.Restore()

	waitUntil(t, 10*time.Second, "the leaf to be re-created by a new session", func() bool {
		_, stat, err := raw.Get(leaf)
		return err == nil && stat.EphemeralOwner != 0 && stat.EphemeralOwner != oldSession
	})
	waitUntil(t, 5*time.Second, "the recovery log line", func() bool {
		return strings.Contains(logs.String(), "zookeeper session expired; re-registered 1 urls, re-subscribed 4")
	})
	// The subscription is live again: another provider shows up.
	q := providerURL(20881, greeter, "")
	if err := other.Register(ctx, q); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "providers", 5*time.Second, hasExactly(p, q))
	// And the config watch too.
	if err := other.PublishConfig(ctx, "expiry.condition-router", "enabled: true"); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-gotContent:
		if c != "enabled: true" {
			t.Errorf("config content %q", c)
		}
	case <-time.After(5 * time.Second):
		t.Error("config watch not re-armed after expiry")
	}
}

// testDeletedNodeRecreated: an ephemeral node of ours that someone else
// deletes while our session lives (an operator's zkCli, a buggy tool) comes
// back at once, owned by the same session: a provider leaf, a consumer leaf
// and an application instance. A persistent (dynamic=false) registration
// deleted by an operator stays deleted, as does one we unregistered; and
// replacing our own instance is not reported as someone else's deletion.
func testDeletedNodeRecreated(t *testing.T, addr string) {
	ctx := context.Background()
	logs := &syncbuf.Buffer{}
	r := newRegistry(t, addr, "group=deleted&rootPath=/deleted-services", Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	raw := rawConn(t, addr)

	p, c := providerURL(20880, greeter, "1.0.0"), consumerURL(greeter, "1.0.0")
	static := providerURL(20881, greeter, "1.0.0")
	static.SetParam("dynamic", "false")
	for _, u := range []*url.URL{p, c, static} {
		if err := r.Register(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	in, err := metadata.NewInstance(metadata.InstanceSpec{
		App: "demo-provider", Host: "127.0.0.1", Port: 20880, Revision: "871fbc9cb2730caea9b0d858852d5ede",
		MetadataServiceParams: metadata.DefaultMetadataServiceParams(20880, "3.3.0"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	// Registering the instance again replaces our own node: that deletion
	// is ours and must not be reported as someone else's.
	if err := r.RegisterInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	// The deletion's event reached the loop before Delete returned; once
	// the loop has run what was queued before, it has handled it.
	if err := r.do(ctx, func() {}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "deleted by someone else") {
		t.Errorf("replacing our own instance node was logged as someone else's deletion:\n%s", logs.String())
	}
	session := r.conn.SessionID()
	leaf := func(u *url.URL) string { return "/deleted/" + greeter + "/" + registry.Category(u) + "/" + u.Encode() }
	instance := "/deleted-services/demo-provider/" + in.ID
	for _, node := range []struct{ name, path string }{{"provider leaf", leaf(p)}, {"consumer leaf", leaf(c)}, {"instance", instance}} {
		path := node.path
		// The operator deletes the node; it must reappear, ours again.
		if err := raw.Delete(path, -1); err != nil {
			t.Fatalf("delete %s: %v", path, err)
		}
		start := time.Now()
		waitUntil(t, 5*time.Second, "the deleted node "+path+" to come back", func() bool {
			_, stat, err := raw.Get(path)
			return err == nil && stat.EphemeralOwner == session
		})
		took := time.Since(start)
		t.Logf("%s re-created %v after an operator deleted it", node.name, took.Round(100*time.Microsecond))
		if took > time.Second {
			t.Errorf("%s %s came back after %v, want within a second", node.name, path, took)
		}
	}
	if data, _, err := raw.Get(instance); err != nil || !strings.Contains(string(data), `"name":"demo-provider"`) {
		t.Errorf("re-created instance node holds %q (%v), want the instance JSON", data, err)
	}
	// One line per deletion, unless a reconnection on a loaded machine
	// made the retry on reconnection re-create a node instead.
	if !strings.Contains(logs.String(), "deleted by someone else") {
		t.Errorf("no log line says a node was deleted by someone else:\n%s", logs.String())
	}

	// A persistent registration deleted by an operator is a decision: it stays gone.
	if err := raw.Delete(leaf(static), -1); err != nil {
		t.Fatal(err)
	}
	// Unregister deletes without re-creation.
	if err := r.Unregister(ctx, p); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // several round trips: a re-creation would show by now
	for _, path := range []string{leaf(static), leaf(p)} {
		if ok, _, err := raw.Exists(path); err != nil || ok {
			t.Errorf("%s: exists %v (%v) after its deletion, want it gone", path, ok, err)
		}
	}
	// The watch is re-armed after a re-creation: a second deletion is repaired too.
	if err := raw.Delete(leaf(c), -1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "the consumer leaf to come back a second time", func() bool {
		_, stat, err := raw.Get(leaf(c))
		return err == nil && stat.EphemeralOwner == session
	})
}

func testCacheFileWhenZooKeeperDown(t *testing.T, addr string) {
	ctx := context.Background()
	cacheFile := filepath.Join(t.TempDir(), "registry.cache.json")
	prov := newRegistry(t, addr, "group=cache", Options{})
	p := providerURL(20880, greeter, "1.0.0")
	if err := prov.Register(ctx, p); err != nil {
		t.Fatal(err)
	}
	cons := newRegistry(t, addr, "group=cache", Options{CacheFile: cacheFile})
	rec := newRecorder()
	if err := cons.Subscribe(ctx, subscribeURL(greeter, "1.0.0"), rec); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "providers", time.Second, hasExactly(p))
	cons.Close()
	if b, err := os.ReadFile(cacheFile); err != nil || !strings.Contains(string(b), "org.example.Greeter:1.0.0") {
		t.Fatalf("cache file: %v\n%s", err, b)
	}

	// The consumer restarts while its registry is unreachable.
	port, err := apachezk.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead := url.MustParse("zookeeper://127.0.0.1:" + strconv.Itoa(port) + "?group=cache")
	down, err := New(dead, Options{CacheFile: cacheFile, Logger: testLogger(t), ConnectTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	rec = newRecorder()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := down.Subscribe(sctx, subscribeURL(greeter, "1.0.0"), rec); err != nil {
		t.Fatal(err)
	}
	n := rec.waitFor(t, "providers", time.Second, hasExactly(p))
	if !n.Stale {
		t.Error("cached notification not marked stale")
	}

	// Without a cache entry the error says why.
	err = down.Subscribe(sctx, subscribeURL("org.example.Unknown", ""), newRecorder())
	if !errors.Is(err, registry.ErrUnavailable) {
		t.Errorf("subscribe with nothing cached: %v, want ErrUnavailable", err)
	}

	// A consumer that starts during an outage works from the cache, then
	// switches to the live lists when ZooKeeper comes back.
	dialer := &cutDialer{}
	dialer.Cut()
	late, err := New(url.MustParse("zookeeper://"+addr+"?group=cache&session=2000"),
		Options{CacheFile: cacheFile, Logger: testLogger(t), Dialer: dialer.Dial, ConnectTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	rec = newRecorder()
	if err := late.Subscribe(sctx, subscribeURL(greeter, "1.0.0"), rec); err != nil {
		t.Fatal(err)
	}
	if n := rec.waitFor(t, "providers", time.Second, hasExactly(p)); !n.Stale {
		t.Error("cached notification not marked stale")
	}
	q := providerURL(20881, greeter, "1.0.0")
	if err := prov.Register(ctx, q); err != nil {
		t.Fatal(err)
	}

	// Out of reach for longer than the connect timeout, requests fail at
	// once (each would otherwise wait for the client's next connection
	// attempt, a second apart: seconds per reference at a consumer's
	// start) and are done on reconnection.
	own := consumerURL(greeter, "1.0.0")
	own.SetParam("application", "cache-late")
	rules := make(chan string, 10)
	start := time.Now()
	regErr := late.Register(ctx, own)
	_, watchErr := late.Watch(ctx, "cache-late.condition-router", func(content string, deleted bool) { rules <- content })
	metaErr := late.PublishConsumerMetadata(ctx, greeter, "1.0.0", "", "cache-late", map[string]string{"side": "consumer"})
	unregErr := late.Unregister(ctx, consumerURL("org.example.Other", ""))
	took := time.Since(start)
	for name, err := range map[string]error{"register": regErr, "publish metadata": metaErr, "unregister": unregErr} {
		if !errors.Is(err, registry.ErrUnavailable) {
			t.Errorf("%s while ZooKeeper is out of reach: %v, want ErrUnavailable", name, err)
		}
	}
	if watchErr != nil {
		t.Errorf("watch while ZooKeeper is out of reach: %v, want it armed once ZooKeeper answers", watchErr)
	}
	if took > 2*time.Second {
		t.Errorf("four requests took %v while ZooKeeper was out of reach; want them to fail at once", took)
	}

	dialer.Restore()
	if n := rec.waitFor(t, "providers", 5*time.Second, hasExactly(p, q)); n.Stale {
		t.Error("live notification marked stale")
	}
	raw := rawConn(t, addr)
	waitUntil(t, 5*time.Second, "the registration made during the outage", func() bool {
		ok, _, err := raw.Exists("/cache/" + greeter + "/consumers/" + own.Encode())
		return err == nil && ok
	})
	if err := prov.PublishConfig(ctx, "cache-late.condition-router", "enabled: true"); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-rules:
		if c != "enabled: true" {
			t.Errorf("watch made during the outage got %q", c)
		}
	case <-time.After(5 * time.Second):
		t.Error("the watch made during the outage was not armed on reconnection")
	}
}

func testDigestAuth(t *testing.T, addr string) {
	ctx := context.Background()
	r := newRegistry(t, "admin:s3cret@"+addr, "group=auth", Options{})
	p := providerURL(20880, greeter, "")
	if err := r.Register(ctx, p); err != nil {
		t.Fatal(err)
	}
	wantDigestACL(t, addr, "admin", "s3cret", "/auth", "/auth/"+greeter, "/auth/"+greeter+"/providers", "/auth/"+greeter+"/providers/"+p.Encode())
	// Strangers cannot read the providers.
	stranger := rawConn(t, addr)
	if _, _, err := stranger.Children("/auth/" + greeter + "/providers"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated list: %v, want ErrNoAuth", err)
	}
	// The same user, in another session, subscribes fine.
	cons := newRegistry(t, "admin:s3cret@"+addr, "group=auth", Options{})
	rec := newRecorder()
	if err := cons.Subscribe(ctx, subscribeURL(greeter, ""), rec); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "providers", time.Second, hasExactly(p))
}

func testConfigWatch(t *testing.T, addr string) {
	ctx := context.Background()
	r := newRegistry(t, addr, "", Options{})
	admin := newRegistry(t, addr, "", Options{})
	key := url.ColonSeparatedKey(greeter, "1.0.0", "") + ".condition-router"
	if got := r.ConfigPath(key); got != "/dubbo/config/dubbo/org.example.Greeter:1.0.0:.condition-router" {
		t.Errorf("config path %s", got)
	}
	type change struct {
		content string
		deleted bool
	}
	ch := make(chan change, 10)
	cancel, err := r.Watch(ctx, key, func(c string, d bool) { ch <- change{c, d} })
	if err != nil {
		t.Fatal(err)
	}
	expect := func(want change) {
		t.Helper()
		select {
		case got := <-ch:
			if got != want {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no change %+v", want)
		}
	}
	if err := admin.PublishConfig(ctx, key, "v1"); err != nil {
		t.Fatal(err)
	}
	expect(change{"v1", false})
	if err := admin.PublishConfig(ctx, key, "v2"); err != nil {
		t.Fatal(err)
	}
	expect(change{"v2", false})
	if got, ok, err := admin.GetConfig(ctx, key); err != nil || !ok || got != "v2" {
		t.Errorf("GetConfig = %q %v %v", got, ok, err)
	}
	if err := admin.DeleteConfig(ctx, key); err != nil {
		t.Fatal(err)
	}
	expect(change{"", true})
	if _, ok, err := admin.GetConfig(ctx, key); err != nil || ok {
		t.Errorf("GetConfig after delete: ok %v err %v", ok, err)
	}
	if err := admin.PublishConfig(ctx, key, "v3"); err != nil {
		t.Fatal(err)
	}
	expect(change{"v3", false})

	// A second watcher of an existing key gets the content at once.
	ch2 := make(chan string, 1)
	if _, err := r.Watch(ctx, key, func(c string, d bool) { ch2 <- c }); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-ch2:
		if c != "v3" {
			t.Errorf("initial content %q", c)
		}
	default:
		t.Error("no initial content for an existing key")
	}

	cancel()
	if err := admin.PublishConfig(ctx, key, "v4"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ch:
		t.Errorf("cancelled watch still called: %+v", got)
	case <-time.After(300 * time.Millisecond):
	}
}
