package consumer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
)

// totals are one side's statistics of one method towards one peer.
type totals struct{ success, failure, in, out int64 }

type methodPeer struct{ method, peer string }

// collect adds what rec counted of Greeter since its last collection to
// into, by method and peer. (A provider also counts the MetadataService
// calls the consumer's discovery makes outside references.)
func collect(rec *stats.Recorder, into map[methodPeer]totals) map[methodPeer]totals {
	if into == nil {
		into = map[methodPeer]totals{}
	}
	for _, s := range rec.Collect(time.Now()) {
		if s.Interface != providertest.GreeterInterface {
			continue
		}
		k := methodPeer{s.Method, s.Peer}
		t := into[k]
		t.success += s.Success
		t.failure += s.Failure
		t.in += s.Input
		t.out += s.Output
		into[k] = t
	}
	return into
}

// The consumer counts each call on the provider that served it, by its
// address, with the sizes of the frames it sent and received: the very
// frames the provider counts, so both sides agree byte for byte.
func TestConsumerStatistics(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	p1 := startProvider(t, zkAddr, provider.Config{}, nil)
	p2 := startProvider(t, zkAddr, provider.Config{}, nil)
	ref := greeterRef()
	ref.LoadBalance = "roundrobin"
	c := newConsumer(t, zkAddr, ref)
	waitFor(t, "two providers", func() bool {
		r, _ := c.Reference(testCtx(t), ref)
		return len(r.Providers()) == 2
	})
	ctx := testCtx(t)
	for range 20 {
		if err := sayHello(c, ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		res, err := c.Invoke(ctx, call("fail", []string{"java.lang.String"}, "no"))
		if err != nil || res.Exception == nil {
			t.Fatal(res, err)
		}
	}
	g := consumer.GenericCall{Interface: providertest.GreeterInterface, Version: providertest.GreeterVersion,
		Method: "add", Types: []string{"int", "int"}, Args: []any{float64(1), float64(2)}}
	for range 2 {
		if v, err := c.Generic(ctx, g); err != nil || v != int32(3) {
			t.Fatal(v, err)
		}
	}
	// A call nobody can serve is no provider's: it reaches no counter.
	if _, err := c.Invoke(ctx, &rpc.Invocation{Service: "org.example.Nobody", Method: "x"}); !errors.Is(err, rpc.ErrNoProvider) {
		t.Fatal(err)
	}

	cons := collect(c.Stats(), nil)
	byMethod := map[string]totals{}
	for k, v := range cons {
		m := byMethod[k.method]
		m.success += v.success
		m.failure += v.failure
		byMethod[k.method] = m
		if v.in == 0 || v.out == 0 {
			t.Errorf("%v: no bytes counted: %+v", k, v)
		}
	}
	if len(cons) != 6 || byMethod["sayHello"].success != 20 || byMethod["fail"].failure != 4 || byMethod["add"].success != 2 {
		t.Errorf("consumer counted %v; want 20 sayHello, 4 failed fail and 2 add over two providers", cons)
	}
	for _, p := range []*provider.Provider{p1, p2} {
		var prov map[methodPeer]totals
		// A provider counts a response's bytes once it is written.
		waitFor(t, "the provider's output", func() bool {
			prov = collect(p.Stats(), prov)
			for k, v := range prov {
				if v.out < cons[methodPeer{k.method, p.Addr()}].out {
					return false
				}
			}
			return true
		})
		for k, v := range prov {
			if k.peer != "127.0.0.1" {
				t.Errorf("provider %s counted a call from %q, want the consumer's IP", p.Addr(), k.peer)
			}
			if got := cons[methodPeer{k.method, p.Addr()}]; got != v {
				t.Errorf("%s on %s: consumer counted %+v, the provider %+v", k.method, p.Addr(), got, v)
			}
		}
	}
}

// A provider with a short heartbeat publishes it, and a consumer that sets
// none pings at it: its connection outlives idle spells longer than three
// of the provider's heartbeats, and no call fails.
func TestConsumerUsesProviderHeartbeat(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	// 100 ms: three silent heartbeats (300 ms) are more than a loaded CI
	// machine delays a goroutine.
	p := startProvider(t, zkAddr, provider.Config{Protocol: provider.ProtocolConfig{Heartbeat: 100 * time.Millisecond}}, nil)
	if hb := p.URLs()[0].Param("heartbeat"); hb != "100" {
		t.Fatalf("provider URL heartbeat = %q, want 100 (ms)", hb)
	}
	// An application-level consumer reads it from the instance, whose
	// MetadataService it connects to first.
	zc := zkConn(t, zkAddr)
	ids, _, err := zc.Children("/services/greeter-app")
	if err != nil || len(ids) != 1 {
		t.Fatalf("instances %v %v", ids, err)
	}
	data, _, err := zc.Get("/services/greeter-app/" + ids[0])
	if err != nil {
		t.Fatal(err)
	}
	in, err := metadata.ParseInstance(data)
	if err != nil {
		t.Fatal(err)
	}
	if params, err := in.MetadataServiceParams(); err != nil || params["heartbeat"] != "100" {
		t.Fatalf("instance's MetadataService params %v %v: want heartbeat 100 (ms)", params, err)
	}
	c := newConsumer(t, zkAddr, greeterRef())
	ctx := testCtx(t)
	for i := range 6 {
		if err := sayHello(c, ctx); err != nil {
			t.Fatalf("call %d (each after 500 ms idle): %v", i, err)
		}
		time.Sleep(500 * time.Millisecond) // 5 of the provider's heartbeats
	}
	if n := p.Server().Stats().Accepted; n != 1 {
		t.Errorf("the provider accepted %d connections, want 1: the consumer's was closed for silence", n)
	}
}
