package interop

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/pluginsvc"
	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
	"github.com/dubbo-lab/dubbo/plugins"
)

// consumerReads are the provider URL parameters of a Triple service that
// dubbo-go v3.3.0's consumers read, which ours must write as dubbo-go's
// providers do (version and group when set).
var consumerReads = []string{"anyhost", "application", "cluster", "interface", "loadbalance", "methods",
	"pid", "release", "side", "timestamp", "version", "group"}

// The ZooKeeper tree of our Triple provider, node for node against stock
// dubbo-go v3.3.0's (dgprovider -protocol tri, both registering at
// interface and application level), through our registry and Apache
// ZooKeeper: the same provider nodes (tri://, ephemeral, the parameters
// dubbo-go's consumers read, serialization=hessian2 for the Java
// interface and none for the protobuf service), the same mapping, and an
// instance whose dubbo.endpoints names the tri port. Where dubbo-go keeps
// its MetadataInfo (in the registry, at its own path) and we serve ours
// (the MetadataService, Dubbo's default), the trees differ on purpose.
func TestTripleTreeLikeDubboGo(t *testing.T) {
	dubbogo.Build(t)
	withRegistries(t, func(t *testing.T, zkAddr string) {
		registry := "zookeeper://" + zkAddr
		dg := dubbogo.StartProvider(t, dubbogo.ProviderOptions{Registry: registry, Protocol: "tri", RegisterMode: dubbogo.RegisterAll})
		ours := startInProcessTriple(t, provider.Config{Application: "ours", Registry: registry}, nil)
		conn := zkConnect(t, zkAddr)

		for _, svc := range []string{greetService, greeterIface} {
			dir := "/dubbo/" + svc + "/providers"
			theirs, mine := waitNode(t, conn, dir, dg.Addr), waitNode(t, conn, dir, ours.Addr())
			t.Logf("%s\n dubbo-go: %s\n ours:     %s", svc, theirs, mine)
			if mine.Protocol() != theirs.Protocol() || mine.Path() != theirs.Path() {
				t.Errorf("%s: ours %s://.../%s, dubbo-go's %s://.../%s", svc, mine.Protocol(), mine.Path(), theirs.Protocol(), theirs.Path())
			}
			for _, k := range consumerReads {
				if theirs.HasParam(k) != mine.HasParam(k) {
					t.Errorf("%s: parameter %s: dubbo-go writes it %v, we %v", svc, k, theirs.HasParam(k), mine.HasParam(k))
				}
			}
			for _, k := range []string{"interface", "version", "cluster", "loadbalance", "side", "serialization"} {
				if theirs.Param(k) != mine.Param(k) {
					t.Errorf("%s: %s = %q, dubbo-go's %q", svc, k, mine.Param(k), theirs.Param(k))
				}
			}
			for _, addr := range []string{dg.Addr, ours.Addr()} {
				if !ephemeral(t, conn, dir, addr) {
					t.Errorf("%s: the provider node of %s is not ephemeral", svc, addr)
				}
			}
			data, _, err := conn.Get("/dubbo/mapping/" + svc)
			apps := strings.Split(string(data), ",")
			if err != nil || !slices.Contains(apps, "dgprovider") || !slices.Contains(apps, "ours") {
				t.Errorf("mapping of %s: %q, %v; want both applications", svc, data, err)
			}
		}

		for _, inst := range []struct{ app, addr string }{{"dgprovider", dg.Addr}, {"ours", ours.Addr()}} {
			path := "/services/" + inst.app + "/" + inst.addr
			data, st, err := conn.Get(path)
			if err != nil || st.EphemeralOwner == 0 {
				t.Errorf("%s: %v (ephemeral %v)", path, err, err == nil && st.EphemeralOwner != 0)
				continue
			}
			in, err := metadata.ParseInstance(data)
			if err != nil {
				t.Fatal(err)
			}
			eps, err := in.Endpoints()
			if err != nil || len(eps) != 1 || eps[0].Protocol != "tri" || eps[0].Port != in.Port || in.Revision() == "" {
				t.Errorf("%s: endpoints %v (%v), revision %q", path, eps, err, in.Revision())
			}
			t.Logf("%s: %s", path, metaJSON(in))
		}
	})
}

// startInProcessTriple starts node/provider serving tri only on a free
// loopback port, registering at both levels, with the example plugin
// greet and the in-process Greeter.
func startInProcessTriple(t testing.TB, cfg provider.Config, onCall func(*rpc.Invocation)) *provider.Provider {
	t.Helper()
	_, _, greet := buildOurs(t) // before the clock starts: the first build takes minutes
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.Protocol = provider.ProtocolConfig{Name: provider.ProtocolTriple, Host: "127.0.0.1", Port: -1}
	p, err := provider.Start(ctx, cfg, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer scancel()
		if err := p.Shutdown(sctx); err != nil {
			t.Errorf("provider shutdown: %v", err)
		}
	})
	pl, err := plugins.Start(ctx, plugins.Config{Path: greet, Name: "greet", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	for _, sd := range pl.Services() {
		if err := p.Export(ctx, pluginsvc.Service(sd, pl)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Export(ctx, providertest.Greeter(onCall)); err != nil {
		t.Fatal(err)
	}
	return p
}

// ephemeral says whether the node under dir for addr is ephemeral.
func ephemeral(t testing.TB, conn *zk.Conn, dir, addr string) bool {
	t.Helper()
	names, _, err := conn.Children(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if u, err := url.Decode(n); err == nil && u.Address() == addr {
			_, st, err := conn.Exists(dir + "/" + n)
			return err == nil && st.EphemeralOwner != 0
		}
	}
	return false
}

// metaJSON is an instance's metadata, keys sorted, for the log.
func metaJSON(in *metadata.Instance) string {
	md := in.Payload.Metadata
	out := make([]string, 0, len(md))
	for _, k := range slices.Sorted(maps.Keys(md)) {
		b, _ := json.Marshal(md[k])
		out = append(out, k+"="+string(b))
	}
	return strings.Join(out, " ")
}

// A stock dubbo-go v3.3.0 Triple consumer (dgconsumer -protocol tri) calls
// our Triple provider, found through our registry and Apache ZooKeeper at
// interface level and at application level (where it asks our
// MetadataService over tri, in wrapper mode), and by url: the four methods
// of greet.GreetService, and org.example.Greeter's five in wrapper mode,
// fail's exception reaching it with its message, called once: with
// dubbo-go's default retries (2), it reads our answer as dubbo-go's
// business error and does not fail over (see triple_wrapper.go).
func TestDubboGoTripleConsumerCallsOurProvider(t *testing.T) {
	dubbogo.Build(t)
	var fails atomic.Int64
	countFails := func(inv *rpc.Invocation) {
		if inv.Method == "fail" {
			fails.Add(1)
		}
	}
	check := func(t *testing.T, results []dubbogo.CallResult, err error, want int) {
		t.Helper()
		if err != nil {
			t.Error(err)
		}
		for _, r := range results {
			t.Logf("dgconsumer %s -> %v (%s) %q", r.Method, r.Result, r.Type, r.Error)
			if !r.OK {
				t.Errorf("%s: %v, error %q", r.Method, r.Result, r.Error)
			}
		}
		if len(results) != want {
			t.Errorf("%d calls, want %d", len(results), want)
		}
	}
	calls := func(t *testing.T, opts dubbogo.ConsumerOptions) {
		opts.Protocol = "tri"
		before := fails.Load()
		results, err := dubbogo.RunConsumer(t, opts)
		check(t, results, err, 5)
		if r := results[3]; r.Method != "fail" || !strings.Contains(r.Error, "boom") {
			t.Errorf("fail(boom): %q, want the exception's message", r.Error)
		}
		if n := fails.Load() - before; n != 1 {
			t.Errorf("fail(boom) reached the provider %d times, want once: a business exception is not retried", n)
		}
		opts.Service = greetService
		results, err = dubbogo.RunConsumer(t, opts)
		check(t, results, err, 4)
	}
	withRegistries(t, func(t *testing.T, zkAddr string) {
		registry := "zookeeper://" + zkAddr
		startInProcessTriple(t, provider.Config{Application: "ours", Registry: registry}, countFails)
		t.Run("interface", func(t *testing.T) { calls(t, dubbogo.ConsumerOptions{Registry: registry}) })
		t.Run("application", func(t *testing.T) {
			calls(t, dubbogo.ConsumerOptions{Registry: registry, RegisterMode: dubbogo.RegisterInstance})
		})
	})
	t.Run("direct", func(t *testing.T) {
		p := startInProcessTriple(t, provider.Config{Application: "ours"}, countFails)
		calls(t, dubbogo.ConsumerOptions{URL: "tri://" + p.Addr()})
	})
}
