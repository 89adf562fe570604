package provider_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/transport"
	"github.com/dubbo-lab/dubbo/node/url"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startProvider(t *testing.T, cfg provider.Config) *provider.Provider {
	t.Helper()
	cfg.Protocol.Host = "127.0.0.1"
	cfg.Protocol.Port = -1
	if cfg.Application == "" {
		cfg.Application = "greeter-app"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := provider.Start(ctx, cfg, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
		t.Fatal(err)
	}
	return p
}

func dial(t *testing.T, addr string) *transport.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, addr, transport.ClientConfig{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func greeterCall(method string, types []string, args ...any) *rpc.Invocation {
	return &rpc.Invocation{Service: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		Method: method, ParamTypes: types, Args: args}
}

func TestProviderServesGreeter(t *testing.T) {
	p := startProvider(t, provider.Config{})
	c := dial(t, p.Addr())
	ctx := context.Background()

	tests := []struct {
		name string
		inv  *rpc.Invocation
		want any
	}{
		{"sayHello", greeterCall("sayHello", []string{"java.lang.String"}, "world"), "Hello, world"},
		{"add", greeterCall("add", []string{"int", "int"}, int32(2), int32(40)), int32(42)},
		{"sleep", greeterCall("sleep", []string{"int"}, int32(5)), "slept"},
		{"echo", greeterCall("$echo", []string{"java.lang.Object"}, "ping"), "ping"},
		{"generic sayHello", greeterCall("$invoke", []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"},
			"sayHello", []string{"java.lang.String"}, []any{"generic"}), "Hello, generic"},
		{"generic add with longs", greeterCall("$invoke", []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"},
			"add", []string{"int", "int"}, []any{int64(1), int64(2)}), int32(3)},
		{"generic without types", greeterCall("$invoke", []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"},
			"add", []string{}, []any{int64(5), int64(6)}), int32(11)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Invoke(ctx, tc.inv)
			if err != nil {
				t.Fatal(err)
			}
			if res.Exception != nil {
				t.Fatalf("exception: %v", res.Exception)
			}
			if res.Value != tc.want {
				t.Fatalf("got %#v (%T), want %#v (%T)", res.Value, res.Value, tc.want, tc.want)
			}
		})
	}

	t.Run("echoMap", func(t *testing.T) {
		res, err := c.Invoke(ctx, greeterCall("echoMap", []string{"java.util.Map"}, map[string]any{"k": "v", "n": int32(1)}))
		if err != nil || res.Exception != nil {
			t.Fatal(err, res)
		}
		m, ok := res.Value.(map[any]any)
		if !ok || m["k"] != "v" || m["n"] != int32(1) || len(m) != 2 {
			t.Fatalf("got %#v", res.Value)
		}
	})
	t.Run("fail", func(t *testing.T) {
		res, err := c.Invoke(ctx, greeterCall("fail", []string{"java.lang.String"}, "boom"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Exception == nil || res.Exception.Message != "boom" || res.Exception.Class != "java.lang.IllegalStateException" {
			t.Fatalf("got %#v", res.Exception)
		}
	})
	t.Run("unknown method", func(t *testing.T) {
		res, err := c.Invoke(ctx, greeterCall("nope", nil))
		if err != nil {
			t.Fatal(err)
		}
		if res.Exception == nil || !strings.Contains(res.Exception.Message, "cannot find method [nope] of service [org.example.Greeter:1.0.0]") {
			t.Fatalf("got %#v", res.Exception)
		}
	})
	t.Run("unknown service", func(t *testing.T) {
		inv := greeterCall("sayHello", []string{"java.lang.String"}, "x")
		inv.Version = "2.0.0"
		_, err := c.Invoke(ctx, inv)
		if !errors.Is(err, rpc.ErrServiceNotFound) || !strings.Contains(err.Error(), "org.example.Greeter:2.0.0") ||
			!strings.Contains(err.Error(), "[org.example.Greeter:1.0.0]") {
			t.Fatalf("got %v", err)
		}
	})

	// A generic call counts under the method it calls.
	var add stats.Sample
	for _, s := range p.Stats().Collect(time.Now()) {
		if s.Method == "add" {
			add = s
		}
	}
	if add.Success != 3 || add.Failure != 0 {
		t.Fatalf("add stats %+v", add)
	}
}

func TestProviderToken(t *testing.T) {
	p := startProvider(t, provider.Config{Token: "true"})
	token := p.URLs()[0].Param("token")
	if len(token) != 36 {
		t.Fatalf("token %q is not a UUID", token)
	}
	c := dial(t, p.Addr())
	inv := greeterCall("sayHello", []string{"java.lang.String"}, "t")
	_, err := c.Invoke(context.Background(), inv)
	if err == nil || !strings.Contains(err.Error(), "Invalid token!") || !strings.Contains(err.Error(), "org.example.Greeter") {
		t.Fatalf("without token: %v", err)
	}
	inv.SetAttachment("token", token)
	res, err := c.Invoke(context.Background(), inv)
	if err != nil || res.Value != "Hello, t" {
		t.Fatalf("with token: %v %v", res, err)
	}
}

func TestProviderURL(t *testing.T) {
	p := startProvider(t, provider.Config{Application: "demo", Weight: new(50)})
	u := p.URLs()[0]
	want := map[string]string{
		"anyhost": "false", "application": "demo", "deprecated": "false", "dubbo": "2.0.2", "dynamic": "true",
		"generic": "false", "interface": "org.example.Greeter", "methods": "add,echoMap,fail,sayHello,sleep",
		"release": provider.Release, "serialization": "hessian2", "prefer.serialization": "hessian2", "side": "provider",
		"version": "1.0.0", "weight": "50", "service-name-mapping": "true",
	}
	for k, v := range want {
		if got := u.Param(k); got != v {
			t.Errorf("%s = %q, want %q (url %s)", k, got, v, u)
		}
	}
	if u.Protocol() != "dubbo" || u.Address() != p.Addr() || u.Path() != "org.example.Greeter" || u.Param("pid") == "" || u.Param("timestamp") == "" {
		t.Errorf("url %s", u)
	}
}

func zkConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func TestProviderRegistersAndShutsDown(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	p := startProvider(t, provider.Config{Application: "greeter-app", Registry: "zookeeper://" + zkAddr})
	zc := zkConn(t, zkAddr)

	children, _, err := zc.Children("/dubbo/org.example.Greeter/providers")
	if err != nil || len(children) != 1 {
		t.Fatalf("providers %v %v", children, err)
	}
	u, err := url.Decode(children[0])
	if err != nil || !u.Equal(p.URLs()[0]) {
		t.Fatalf("registered %v, want %v (%v)", u, p.URLs()[0], err)
	}
	mapping, _, err := zc.Get("/dubbo/mapping/org.example.Greeter")
	if err != nil || string(mapping) != "greeter-app" {
		t.Fatalf("mapping %q %v", mapping, err)
	}
	inst, _, err := zc.Get("/services/greeter-app/" + p.Addr())
	if err != nil || !strings.Contains(string(inst), `"dubbo.metadata.revision`) {
		t.Fatalf("instance %s %v", inst, err)
	}
	def, _, err := zc.Get("/dubbo/metadata/org.example.Greeter/1.0.0/provider/greeter-app")
	if err != nil || !strings.Contains(string(def), `"parameterTypes":["int","int"]`) {
		t.Fatalf("definition %s %v", def, err)
	}

	// The MetadataService answers with a MetadataInfo object.
	c := dial(t, p.Addr())
	res, err := c.Invoke(context.Background(), &rpc.Invocation{Service: provider.MetadataServiceInterface,
		Version: provider.MetadataServiceVersion, Group: "greeter-app", Method: "getMetadataInfo",
		ParamTypes: []string{"java.lang.String"}, Args: []any{""}})
	if err != nil || res.Exception != nil {
		t.Fatal(err, res)
	}
	info, ok := res.Value.(map[string]any)
	if !ok || info["_class"] != "org.apache.dubbo.metadata.MetadataInfo" || info["app"] != "greeter-app" {
		t.Fatalf("metadata info %#v", res.Value)
	}
	services, _ := info["services"].(map[any]any)
	si, _ := services["org.example.Greeter:1.0.0:dubbo"].(map[string]any)
	if si["_class"] != "org.apache.dubbo.metadata.MetadataInfo$ServiceInfo" || si["port"] != int32(p.Port()) || si["name"] != "org.example.Greeter" {
		t.Fatalf("service info %#v in %#v", si, services)
	}

	// Unexport and export again at runtime.
	ctx := context.Background()
	if err := p.Unexport(ctx, "org.example.Greeter", "1.0.0", ""); err != nil {
		t.Fatal(err)
	}
	if children, _, _ := zc.Children("/dubbo/org.example.Greeter/providers"); len(children) != 0 {
		t.Fatalf("after unexport: %v", children)
	}
	if ok, _, _ := zc.Exists("/services/greeter-app/" + p.Addr()); ok {
		t.Fatal("instance left after the last service was unexported")
	}
	if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if children, _, _ := zc.Children("/dubbo/org.example.Greeter/providers"); len(children) != 0 {
		t.Fatalf("after shutdown: %v", children)
	}
	if ok, _, _ := zc.Exists("/services/greeter-app/" + p.Addr()); ok {
		t.Fatal("instance left after shutdown")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	if err := p.Export(ctx, providertest.Greeter(nil)); !errors.Is(err, provider.ErrShutdown) {
		t.Fatalf("export after shutdown: %v", err)
	}
}

// The registry's password never shows: not in the error of a start that
// cannot read or reach the registry, not in the log of one that can.
func TestRegistrySecretsHidden(t *testing.T) {
	for _, address := range zktest.SecretAddresses(t) {
		cfg := provider.Config{Application: "greeter-app", Registry: address}
		cfg.Protocol.Host, cfg.Protocol.Port = "127.0.0.1", -1
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		p, err := provider.Start(ctx, cfg, provider.Options{Logger: quietLogger()})
		cancel()
		if err == nil {
			p.Close()
			t.Errorf("registry %s: provider started", address)
			continue
		}
		if strings.Contains(err.Error(), zktest.Secret) {
			t.Errorf("registry %s: error shows the password: %v", address, err)
		}
	}

	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := provider.Config{Application: "greeter-app", Registry: "zookeeper://admin:" + zktest.Secret + "@" + zkAddr + "?password=" + zktest.Secret}
	cfg.Protocol.Host, cfg.Protocol.Port = "127.0.0.1", -1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := provider.Start(ctx, cfg, provider.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); strings.Contains(out, zktest.Secret) || !strings.Contains(out, "admin:***@") {
		t.Errorf("provider log shows the password, or not the registry:\n%s", out)
	}
}

// countingRegistry is a memory registry that keeps, after each change,
// the least number of providers of interface registered since the first.
type countingRegistry struct {
	*registry.Memory
	iface string
	mu    sync.Mutex
	least int // -1 until the first registration
}

func (r *countingRegistry) Register(ctx context.Context, u *url.URL) error {
	err := r.Memory.Register(ctx, u)
	r.count()
	return err
}

func (r *countingRegistry) Unregister(ctx context.Context, u *url.URL) error {
	err := r.Memory.Unregister(ctx, u)
	r.count()
	return err
}

func (r *countingRegistry) count() {
	n := 0
	for _, u := range r.URLs() {
		if u.Path() == r.iface && u.Param("side") == "provider" {
			n++
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.least < 0 || n < r.least {
		r.least = n
	}
}

// TestExportReplacesInPlace: exporting a service again with other methods
// and settings (a plugin swapped for a new build) replaces its URL with no
// moment without a provider, keeps the token consumers hold, and serves
// the new methods.
func TestExportReplacesInPlace(t *testing.T) {
	reg := &countingRegistry{Memory: registry.NewMemory(), iface: "org.example.Greeter", least: -1}
	cfg := provider.Config{Application: "greeter-app", Token: "true"}
	cfg.Protocol.Host, cfg.Protocol.Port = "127.0.0.1", -1
	ctx := context.Background()
	p, err := provider.Start(ctx, cfg, provider.Options{Logger: quietLogger(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	svc := providertest.Greeter(nil)
	if err := p.Export(ctx, svc); err != nil {
		t.Fatal(err)
	}
	before := p.URLs()[0]

	svc.Methods = append(svc.Methods, provider.Method{Name: "sayBye", ParamTypes: []string{"java.lang.String"}, ReturnType: "java.lang.String"})
	svc.Params = map[string]string{"weight": "50"}
	if err := p.Export(ctx, svc); err != nil {
		t.Fatal(err)
	}
	urls := reg.URLs()
	if len(urls) != 1 || urls[0].Param("methods") != "add,echoMap,fail,sayBye,sayHello,sleep" || urls[0].Param("weight") != "50" {
		t.Fatalf("registered after the replacement: %v", urls)
	}
	if reg.least != 1 {
		t.Errorf("the service had %d providers registered during its replacement, want 1 at least", reg.least)
	}
	if got, want := urls[0].Param("token"), before.Param("token"); got != want || len(got) != 36 {
		t.Errorf("token %q after the replacement, want the one consumers hold, %q", got, want)
	}
	c := dial(t, p.Addr())
	inv := greeterCall("sayHello", []string{"java.lang.String"}, "again")
	inv.SetAttachment("token", before.Param("token"))
	if res, err := c.Invoke(ctx, inv); err != nil || res.Value != "Hello, again" {
		t.Errorf("a call with the token of the URL replaced: %v, %v", res, err)
	}
}
