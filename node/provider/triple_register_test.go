package provider_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// A provider of dubbo and tri registers each service on each protocol
// that carries it: a Java interface on both (over tri with hessian2 in
// the wrapper), a protobuf service on tri only and without a
// serialization (dubbo-go's consumer would take it over its own), a
// service whose [[provider.services]] table says tri on tri only. The
// instance lists both ports, the MetadataInfo each service under its
// protocol, and our consumer calls them found either way.
func TestTripleRegistration(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	registry := "zookeeper://" + zkAddr
	cfg := provider.Config{Application: "both-app", Registry: registry,
		Protocol:  provider.ProtocolConfig{Host: "127.0.0.1", Port: -1},
		Protocols: provider.Protocols{Tri: &provider.ProtocolServer{Port: -1}},
		Services:  []provider.ServiceConfig{{Interface: "org.example.TriOnly", Protocols: []string{"tri"}}},
	}
	ctx := testCtx(t)
	p, err := provider.Start(ctx, cfg, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	exportPlugin(t, p, startPlugin(t, "greet"))
	if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
		t.Fatal(err)
	}
	triOnly := providertest.Greeter(nil)
	triOnly.Interface = "org.example.TriOnly"
	if err := p.Export(ctx, triOnly); err != nil {
		t.Fatal(err)
	}
	eps := p.Endpoints()
	if len(eps) != 2 || eps[0].Protocol != "dubbo" || eps[1].Protocol != "tri" {
		t.Fatalf("endpoints %+v", eps)
	}
	dubboAddr, triAddr := eps[0].Addr, eps[1].Addr

	zc := zkConn(t, zkAddr)
	registered := func(iface string) map[string]*url.URL {
		t.Helper()
		names, _, err := zc.Children("/dubbo/" + iface + "/providers")
		if err != nil {
			t.Fatalf("%s: %v", iface, err)
		}
		out := map[string]*url.URL{}
		for _, n := range names {
			u, err := url.Decode(n)
			if err != nil {
				t.Fatal(err)
			}
			out[u.Protocol()+"://"+u.Address()] = u
		}
		return out
	}
	keys := func(m map[string]*url.URL) []string { return slices.Sorted(mapKeys(m)) }

	greeter := registered("org.example.Greeter")
	if got, want := keys(greeter), []string{"dubbo://" + dubboAddr, "tri://" + triAddr}; !slices.Equal(got, want) {
		t.Errorf("org.example.Greeter registered at %v, want %v", got, want)
	}
	if u := greeter["tri://"+triAddr]; u == nil || u.Param("serialization") != "hessian2" || u.Param("cluster") != "failover" ||
		u.Param("loadbalance") != "random" || u.Param("version") != "1.0.0" || u.Param("methods") != "add,echoMap,fail,sayHello,sleep" {
		t.Errorf("org.example.Greeter over tri: %v", u)
	}
	greet := registered("greet.GreetService")
	u := greet["tri://"+triAddr]
	if len(greet) != 1 || u == nil || u.HasParam("serialization") || u.HasParam("prefer.serialization") ||
		u.Param("methods") != "Greet,GreetClientStream,GreetServerStream,GreetStream" || u.Param("interface") != "greet.GreetService" {
		t.Errorf("greet.GreetService registered as %v", greet)
	}
	for _, k := range []string{"anyhost", "application", "cluster", "interface", "loadbalance", "methods", "pid", "release", "side", "timestamp"} {
		if u != nil && !u.HasParam(k) {
			t.Errorf("greet.GreetService's tri URL has no %s, which dubbo-go's consumers read: %v", k, u)
		}
	}
	if got := keys(registered("org.example.TriOnly")); !slices.Equal(got, []string{"tri://" + triAddr}) {
		t.Errorf("org.example.TriOnly registered at %v, want tri only", got)
	}

	data, _, err := zc.Get("/services/both-app/" + p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	in, err := metadata.ParseInstance(data)
	if err != nil {
		t.Fatal(err)
	}
	endpoints, err := in.Endpoints()
	if want := []metadata.Endpoint{{Port: p.Port(), Protocol: "dubbo"}, {Port: portOf(t, triAddr), Protocol: "tri"}}; err != nil || !slices.Equal(endpoints, want) {
		t.Errorf("dubbo.endpoints = %v, %v; want %v", endpoints, err, want)
	}

	// The MetadataInfo, asked over tri in wrapper mode as dubbo-go asks it.
	res, err := tripleClient(t, triAddr).Invoke(ctx, &rpc.Invocation{Service: provider.MetadataServiceInterface,
		Version: provider.MetadataServiceVersion, Group: "both-app", Method: "getMetadataInfo",
		ParamTypes: []string{"java.lang.String"}, Args: []any{in.Revision()}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := metadata.InfoFromValue(res.Value)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(mapKeys(info.Services)), []string{"greet.GreetService:tri", "org.example.Greeter:1.0.0:dubbo",
		"org.example.Greeter:1.0.0:tri", "org.example.TriOnly:1.0.0:tri"}; !slices.Equal(got, want) {
		t.Errorf("MetadataInfo services %v, want %v", got, want)
	}

	// Our consumer, interface- and application-level.
	for _, mode := range []string{"FORCE_INTERFACE", "FORCE_APPLICATION"} {
		cons, err := consumer.New(ctx, consumer.Config{Application: "c", Registry: registry, Migration: mode}, consumer.Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cons.Close() })
		for _, ref := range []consumer.ReferenceConfig{
			{Interface: "org.example.Greeter", Version: "1.0.0", Protocol: "tri"},
			{Interface: "org.example.TriOnly", Version: "1.0.0"},
		} {
			r, err := cons.Reference(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			r.WaitAvailable(ctx, 5*time.Second)
			inv := &rpc.Invocation{Service: ref.Interface, Version: ref.Version, Method: "sayHello", ParamTypes: str, Args: []any{mode}}
			res, err := cons.Invoke(ctx, inv)
			if err != nil || res.Value != "Hello, "+mode || res.Provider != triAddr {
				t.Errorf("%s, %s level: %+v, %v; want an answer from %s", ref.Interface, mode, res, err, triAddr)
			}
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	var port int
	if _, err := fmt.Sscanf(addr[strings.LastIndexByte(addr, ':')+1:], "%d", &port); err != nil {
		t.Fatal(err)
	}
	return port
}

// A provider of tri alone names tri for its MetadataService, which our
// consumer then asks over tri in wrapper mode to find its services at
// application level.
func TestTripleOnlyApplicationLevel(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	registry := "zookeeper://" + zkAddr
	p := startTriple(t, provider.Config{Application: "tri-app", Registry: registry}, provider.Options{})
	svc := providertest.Greeter(nil)
	svc.Interface = "org.example.Tri"
	ctx := testCtx(t)
	if err := p.Export(ctx, svc); err != nil {
		t.Fatal(err)
	}
	data, _, err := zkConn(t, zkAddr).Get("/services/tri-app/" + p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	in, err := metadata.ParseInstance(data)
	if err != nil {
		t.Fatal(err)
	}
	msp, _ := in.MetadataServiceParams()
	if eps, _ := in.Endpoints(); msp["protocol"] != "tri" || msp["port"] != fmt.Sprint(p.Port()) || len(eps) != 1 || eps[0].Protocol != "tri" {
		t.Errorf("instance of a tri-only provider: endpoints %v, metadata service %v", eps, msp)
	}
	cons, err := consumer.New(ctx, consumer.Config{Application: "c", Registry: registry, Migration: "FORCE_APPLICATION"}, consumer.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cons.Close() })
	r, err := cons.Reference(ctx, consumer.ReferenceConfig{Interface: "org.example.Tri", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	r.WaitAvailable(ctx, 5*time.Second)
	res, err := cons.Invoke(ctx, &rpc.Invocation{Service: "org.example.Tri", Version: "1.0.0", Method: "sayHello", ParamTypes: str, Args: []any{"app"}})
	if err != nil || res.Value != "Hello, app" {
		t.Errorf("sayHello found at application level: %+v, %v", res, err)
	}
}
