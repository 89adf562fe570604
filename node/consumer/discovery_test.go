package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/url"
)

// waitProviders waits until the reference lists exactly n available
// providers.
func waitProviders(t *testing.T, c *consumer.Consumer, ref consumer.ReferenceConfig, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d providers", n), func() bool {
		r, err := c.Reference(testCtx(t), ref)
		return err == nil && len(r.Providers()) == n
	})
}

// Providers that register only their application instance (register mode
// instance, dubbo-go's default) are found through the mapping, the
// instances and their MetadataService.
func TestApplicationLevelDiscovery(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		var calls counter
		p1 := startProvider(t, zkAddr, provider.Config{RegisterMode: provider.RegisterInstance}, &calls)
		zc := zkConn(t, zkAddr)
		if kids, _, err := zc.Children("/dubbo/org.example.Greeter/providers"); err == nil && len(kids) > 0 {
			t.Fatalf("instance mode registered interface-level URLs: %v", kids)
		}

		ref := greeterRef()
		ref.LoadBalance = "roundrobin"
		c := newConsumer(t, zkAddr, ref) // check = true: found at start-up
		checkGreeter(t, c, true)
		r, _ := c.Reference(testCtx(t), ref)
		u := r.Providers()[0].URL()
		if u.Address() != p1.Addr() || u.Param("application") != "greeter-app" || u.Param("interface") != "org.example.Greeter" ||
			u.Param("version") != "1.0.0" || u.Param("methods") == "" {
			t.Fatalf("provider url from metadata: %s", u)
		}

		// A second instance appears: both are used.
		p2 := startProvider(t, zkAddr, provider.Config{RegisterMode: provider.RegisterInstance}, &calls)
		waitProviders(t, c, ref, 2)
		calls.reset()
		for i := 0; i < 20; i++ {
			if err := sayHello(c, testCtx(t)); err != nil {
				t.Fatal(err)
			}
		}
		if calls.get(p1.Addr()) != 10 || calls.get(p2.Addr()) != 10 {
			t.Fatalf("round robin over two instances: %v", calls.m)
		}

		// One instance leaves: it is dropped and calls go to the other.
		if err := p1.Shutdown(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		waitProviders(t, c, ref, 1)
		calls.reset()
		for i := 0; i < 20; i++ {
			if err := sayHello(c, testCtx(t)); err != nil {
				t.Fatalf("call %d after p1 left: %v", i, err)
			}
		}
		if calls.get(p2.Addr()) != 20 {
			t.Fatalf("after p1 left: %v", calls.m)
		}
	})
}

// A provider in register mode all is one provider, not two: the
// interface-level URL wins over the one built from its metadata.
func TestBothLevelsCountOnce(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var calls counter
	all := startProvider(t, zkAddr, provider.Config{}, &calls)
	inst := startProvider(t, zkAddr, provider.Config{RegisterMode: provider.RegisterInstance}, &calls)
	ref := greeterRef()
	ref.LoadBalance = "roundrobin"
	c := newConsumer(t, zkAddr, ref)
	waitProviders(t, c, ref, 2)
	r, _ := c.Reference(testCtx(t), ref)
	for _, p := range r.Providers() {
		// Only interface-level URLs carry the provider's pid.
		if p.URL().Address() == all.Addr() && p.URL().Param("pid") == "" {
			t.Errorf("register mode all: the metadata URL was kept: %s", p.URL())
		}
	}
	for i := 0; i < 20; i++ {
		if err := sayHello(c, testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if calls.get(all.Addr()) != 10 || calls.get(inst.Addr()) != 10 {
		t.Fatalf("split %v", calls.m)
	}

	// FORCE_INTERFACE does not see the instance-only provider.
	cfg := consumer.Config{Application: "legacy", Registry: "zookeeper://" + zkAddr, Migration: "force_interface"}
	legacy, err := consumer.New(testCtx(t), cfg, consumer.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()
	waitProviders(t, legacy, ref, 1)
	if _, err := consumer.New(testCtx(t), consumer.Config{Migration: "sometimes"}, consumer.Options{}); err == nil {
		t.Error("unknown migration step accepted")
	}
}

// Instances with storage type remote are resolved from the registry, at
// Java's path /dubbo/metadata/<app>/<revision> and at dubbo-go's
// /dubbo/<app>/<revision>; a revision whose metadata cannot be read keeps
// the instance's last providers.
func TestRemoteMetadata(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		var calls counter
		// Providers without a registry: only the hand-written nodes lead to them.
		java := startProvider(t, "", provider.Config{}, &calls)
		gogo := startProvider(t, "", provider.Config{}, &calls)
		zc := zkConn(t, zkAddr)
		admin, err := zookeeper.New(url.MustParse("zookeeper://"+zkAddr), zookeeper.Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()

		// Java: MetadataInfo JSON as the metadata report stores it.
		info := metadata.NewInfo("java-app", java.URLs())
		if err := admin.PublishAppMetadata(testCtx(t), info); err != nil {
			t.Fatal(err)
		}
		// dubbo-go: its own JSON field set, a few params, no interface.
		goRev := "2930245186"
		goInfo := fmt.Sprintf(`{"app":"go-app","revision":%q,"Tag":"","services":{"org.example.Greeter:1.0.0:dubbo":`+
			`{"name":"org.example.Greeter","version":"1.0.0","protocol":"dubbo","port":%d,"path":"org.example.Greeter",`+
			`"params":{"application":"go-app","methods":"sayHello,add,echoMap,fail,sleep","release":"3.3.0","version":"1.0.0"}}}}`, goRev, gogo.Port())
		mkdirs(t, zc, "/dubbo/go-app")
		if _, err := zc.Create("/dubbo/go-app/"+goRev, []byte(goInfo), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		for _, app := range []string{"java-app", "go-app"} {
			if err := admin.AddMapping(testCtx(t), "org.example.Greeter", app); err != nil {
				t.Fatal(err)
			}
		}
		writeInstance(t, zc, "java-app", java.Port(), info.Revision, true)
		writeInstance(t, zc, "go-app", gogo.Port(), goRev, false)

		ref := greeterRef()
		ref.LoadBalance = "roundrobin"
		c := newConsumer(t, zkAddr, ref)
		waitProviders(t, c, ref, 2)
		for i := 0; i < 20; i++ {
			if err := sayHello(c, testCtx(t)); err != nil {
				t.Fatal(err)
			}
		}
		if calls.get(java.Addr()) != 10 || calls.get(gogo.Addr()) != 10 {
			t.Fatalf("split %v", calls.m)
		}
		checkGreeter(t, c, false)

		// A new revision without metadata anywhere: the last providers stay.
		writeInstance(t, zc, "go-app", gogo.Port(), "no-such-revision", false)
		for i := 0; i < 10; i++ {
			if err := sayHello(c, testCtx(t)); err != nil {
				t.Fatal(err)
			}
		}
		waitProviders(t, c, ref, 2)

		// An instance node that goes leaves the directory.
		if err := zc.Delete("/services/java-app/"+java.Addr(), -1); err != nil {
			t.Fatal(err)
		}
		waitProviders(t, c, ref, 1)
	})
}

func mkdirs(t *testing.T, zc *zk.Conn, p string) {
	t.Helper()
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if _, err := zc.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
				t.Fatalf("create %s: %v", p[:i], err)
			}
		}
	}
}

// writeInstance writes (or rewrites) the instance node of a provider at
// 127.0.0.1:port with storage type remote, as Java (with the Curator
// fields) or dubbo-go (with its own) would.
func writeInstance(t *testing.T, zc *zk.Conn, app string, port int, revision string, java bool) {
	t.Helper()
	id := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	md := map[string]string{
		metadata.KeyEndpoints:   fmt.Sprintf(`[{"port":%d,"protocol":"dubbo"}]`, port),
		metadata.KeyRevision:    revision,
		metadata.KeyStorageType: metadata.StorageRemote,
	}
	doc := map[string]any{
		"name": app, "id": id, "address": "127.0.0.1", "port": port,
		"payload":             map[string]any{"@class": metadata.InstancePayloadClass, "id": id, "name": app, "metadata": md},
		"registrationTimeUTC": 0,
	}
	if java {
		doc["sslPort"], doc["serviceType"], doc["uriSpec"] = nil, "DYNAMIC", nil
	} else {
		doc["tag"] = ""
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := "/services/" + app + "/" + id
	_, err = zc.Set(p, data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		mkdirs(t, zc, "/services/"+app)
		_, err = zc.Create(p, data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	}
	if err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
}

// Application-level discovery of a reference runs a goroutine only while
// it has work: a consumer of 100 services does not hold 100 goroutines
// waiting (it did: one per reference for its whole life), and still finds
// an instance-only provider, and one that appears later.
func TestAppDiscoveryHoldsNoGoroutinePerReference(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var calls counter
	startProvider(t, zkAddr, provider.Config{RegisterMode: provider.RegisterInstance}, &calls)
	before := runtime.NumGoroutine()
	no := false
	refs := []consumer.ReferenceConfig{greeterRef()}
	for i := range 100 {
		refs = append(refs, consumer.ReferenceConfig{Interface: fmt.Sprintf("org.example.Idle%03d", i), Version: "1.0.0"})
	}
	c, err := consumer.New(testCtx(t), consumer.Config{Application: "many-refs", Registry: "zookeeper://" + zkAddr,
		References: refs, Defaults: consumer.Settings{Check: &no}}, consumer.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	waitProviders(t, c, greeterRef(), 1)
	var now int
	waitFor(t, "the consumer's goroutines to settle below one per reference", func() bool {
		now = runtime.NumGoroutine()
		return now-before < len(refs)/2
	})
	t.Logf("a consumer of %d services: %d goroutines more than before it", len(refs), now-before)
	startProvider(t, zkAddr, provider.Config{RegisterMode: provider.RegisterInstance}, &calls)
	waitProviders(t, c, greeterRef(), 2)
}

// An instance node whose revision its provider does not answer (after a
// kill -9 and a restart, the dead session's nodes name the new providers)
// is reported once at warn once it has lasted the grace a provider gets to
// announce a new revision, however many references try it and however
// often they retry; the repeats go to debug.
func TestMetadataFailureSaidOnce(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	p := startProvider(t, zkAddr, provider.Config{RegisterMode: provider.RegisterInstance}, nil)
	v2 := providertest.Greeter(nil)
	v2.Version = "2.0.0"
	if err := p.Export(testCtx(t), v2); err != nil {
		t.Fatal(err)
	}
	// The node now announces a revision the provider no longer serves.
	zc := zkConn(t, zkAddr)
	node := "/services/greeter-app/" + p.Addr()
	data, _, err := zc.Get(node)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["payload"].(map[string]any)["metadata"].(map[string]any)[metadata.KeyRevision] = "0123456789abcdef"
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Set(node, data, -1); err != nil {
		t.Fatal(err)
	}

	logs := &levelCounter{}
	c, err := consumer.New(testCtx(t), consumer.Config{Application: "greeter-consumer", Registry: "zookeeper://" + zkAddr},
		consumer.Options{Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	no := false
	for _, version := range []string{"1.0.0", "2.0.0", "3.0.0"} {
		ref := greeterRef()
		ref.Version, ref.Check = version, &no
		if _, err := c.Reference(testCtx(t), ref); err != nil {
			t.Fatal(err)
		}
	}
	// Three references, each trying more than once, past the grace.
	waitFor(t, "a warning", func() bool { return logs.countAt(failedFetch, slog.LevelWarn) > 0 })
	n0 := logs.count(failedFetch)
	waitFor(t, "three more failed fetches", func() bool { return logs.count(failedFetch) >= n0+3 })
	if n := logs.countAt(failedFetch, slog.LevelWarn); n != 1 {
		t.Errorf("%d warnings of %d failed fetches, want 1", n, logs.count(failedFetch))
	}
}

const failedFetch = "cannot get the metadata of a provider instance"

// levelCounter is a slog handler that counts records by message and level.
type levelCounter struct {
	mu sync.Mutex
	n  map[slog.Level]map[string]int
}

func (h *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *levelCounter) WithGroup(string) slog.Handler            { return h }

func (h *levelCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[slog.Level]map[string]int{}
	}
	if h.n[r.Level] == nil {
		h.n[r.Level] = map[string]int{}
	}
	h.n[r.Level][r.Message]++
	return nil
}

// countAt counts the records at level whose message begins with prefix.
func (h *levelCounter) countAt(prefix string, level slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for msg, k := range h.n[level] {
		if strings.HasPrefix(msg, prefix) {
			n += k
		}
	}
	return n
}

func (h *levelCounter) count(prefix string) int {
	n := 0
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		n += h.countAt(prefix, l)
	}
	return n
}

// InstanceProviders lists what an instance registered at application
// level serves, as application-level discovery reads it (the console
// lists such providers with it): its services at its address, with
// their version; an instance whose metadata cannot be had is an error.
func TestInstanceProviders(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var calls counter
	p := startProvider(t, zkAddr, provider.Config{RegisterMode: provider.RegisterInstance}, &calls)
	zc := zkConn(t, zkAddr)
	var in *metadata.Instance
	waitFor(t, "the instance node", func() bool {
		data, _, err := zc.Get("/services/greeter-app/" + p.Addr())
		if err != nil {
			return false
		}
		in, err = metadata.ParseInstance(data)
		return err == nil && in.Revision() != ""
	})
	c := newConsumer(t, zkAddr)
	urls, err := c.InstanceProviders(testCtx(t), in)
	if err != nil {
		t.Fatal(err)
	}
	var greeter *url.URL
	for _, u := range urls {
		if u.Param("interface") == providertest.GreeterInterface {
			greeter = u
		}
	}
	if greeter == nil || greeter.Address() != p.Addr() || greeter.Param("version") != providertest.GreeterVersion ||
		greeter.Param("application") != "greeter-app" || !strings.Contains(greeter.Param("methods"), "sayHello") {
		t.Fatalf("providers of the instance: %v", urls)
	}

	// A revision the provider does not serve (its node left by a session
	// that is gone): no metadata.
	other := *in
	payload := *in.Payload
	payload.Metadata = maps.Clone(in.Payload.Metadata)
	payload.Metadata[metadata.KeyRevision] = "no-such-revision"
	other.Payload = &payload
	ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Second)
	defer cancel()
	if _, err := c.InstanceProviders(ctx, &other); err == nil {
		t.Fatal("a revision the instance does not serve: no error")
	}
}
