package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
)

// The provider counts each call of a method as Dubbo's MonitorFilter does,
// with the exact sizes of the request and response frames the consumer
// sent and received; $echo and calls of unknown methods are not counted.
func TestProviderStatistics(t *testing.T) {
	p := startProvider(t, provider.Config{})
	c := dial(t, p.Addr())
	ctx := context.Background()
	type sums struct{ success, failure, in, out int64 }
	want := map[string]*sums{"sayHello": {}, "fail": {}, "sleep": {}}
	calls := []struct {
		method string
		inv    *rpc.Invocation
		failed bool
	}{
		{"sayHello", greeterCall("sayHello", []string{"java.lang.String"}, "a"), false},
		{"sayHello", greeterCall("sayHello", []string{"java.lang.String"}, "a much longer name than the first"), false},
		{"sayHello", greeterCall("$invoke", []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"},
			"sayHello", []string{"java.lang.String"}, []any{"generic"}), false},
		{"fail", greeterCall("fail", []string{"java.lang.String"}, "boom"), true},
		{"sleep", greeterCall("sleep", []string{"int"}, int32(30)), false},
		{"", greeterCall("$echo", []string{"java.lang.Object"}, "ping"), false},
		{"", greeterCall("nope", nil), true},
	}
	for _, call := range calls {
		res, err := c.Invoke(ctx, call.inv)
		if err != nil {
			t.Fatalf("%s: %v", call.inv.Method, err)
		}
		if res.RequestBytes <= 16 || res.ResponseBytes <= 16 {
			t.Fatalf("%s: the client saw frames of %d and %d bytes", call.inv.Method, res.RequestBytes, res.ResponseBytes)
		}
		if s := want[call.method]; s != nil {
			if call.failed {
				s.failure++
			} else {
				s.success++
			}
			s.in += int64(res.RequestBytes)
			s.out += int64(res.ResponseBytes)
		}
	}
	// The response's size is counted once it is written, after the call
	// returned: wait for the last one.
	var samples []stats.Sample
	deadline := time.Now().Add(5 * time.Second)
	for {
		samples = append(samples, p.Stats().Collect(time.Now())...)
		var out int64
		for _, s := range samples {
			out += s.Output
		}
		var wantOut int64
		for _, s := range want {
			wantOut += s.out
		}
		if out >= wantOut || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := map[string]*sums{}
	for _, s := range samples {
		if s.Interface != providertest.GreeterInterface || s.Version != providertest.GreeterVersion ||
			s.Peer != "127.0.0.1" || s.Host != "127.0.0.1" || s.Port != p.Port() || s.Side != stats.Provider {
			t.Errorf("sample identity %+v", s)
		}
		g := got[s.Method]
		if g == nil {
			g = &sums{}
			got[s.Method] = g
		}
		g.success += s.Success
		g.failure += s.Failure
		g.in += s.Input
		g.out += s.Output
		if s.Method == "sleep" && s.MaxElapsed < 30 {
			t.Errorf("sleep(30) took %d ms by the statistics", s.MaxElapsed)
		}
	}
	if len(got) != len(want) {
		t.Errorf("methods counted: %v, want %v", keys(got), keys(want))
	}
	for m, w := range want {
		if g := got[m]; g == nil || *g != *w {
			t.Errorf("%s: counted %+v, want %+v", m, g, *w)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestProviderWithoutStatistics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := provider.Start(ctx, provider.Config{Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}},
		provider.Options{Logger: quietLogger(), NoStatistics: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
		t.Fatal(err)
	}
	res, err := dial(t, p.Addr()).Invoke(ctx, greeterCall("sayHello", []string{"java.lang.String"}, "x"))
	if err != nil || res.Value != "Hello, x" {
		t.Fatal(res, err)
	}
	if p.Stats() != nil {
		t.Fatal("Stats() is not nil with NoStatistics")
	}
}
