package loadbalance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

type fakeProvider struct{ u *url.URL }

func (f *fakeProvider) Invoke(context.Context, *rpc.Invocation) (*rpc.Result, error) {
	return &rpc.Result{}, nil
}
func (f *fakeProvider) URL() *url.URL   { return f.u }
func (f *fakeProvider) Available() bool { return true }

// providers makes one provider per "host:port?params" spec.
func providers(specs ...string) []cluster.ProviderInvoker {
	ps := make([]cluster.ProviderInvoker, len(specs))
	for i, s := range specs {
		ps[i] = &fakeProvider{url.MustParse("dubbo://" + s)}
	}
	return ps
}

func name(p cluster.ProviderInvoker) string { return p.URL().Host() }

var fixedNow = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func balancer(t *testing.T, n string, stats *cluster.Stats) cluster.LoadBalancer {
	t.Helper()
	lb, err := Config{Stats: stats, Rand: rand.New(rand.NewPCG(1, 2)), Now: func() time.Time { return fixedNow }}.New(n)
	if err != nil {
		t.Fatal(err)
	}
	return lb
}

func counts(lb cluster.LoadBalancer, ps []cluster.ProviderInvoker, inv *rpc.Invocation, n int) map[string]int {
	got := map[string]int{}
	for range n {
		got[name(lb.Select(ps, inv))]++
	}
	return got
}

func TestWeightedDistribution(t *testing.T) {
	const n = 60000
	inv := &rpc.Invocation{Method: "sayHello", Args: []any{"x"}}
	tests := []struct {
		balancer string
		specs    []string
		want     map[string]float64 // expected share
	}{
		{"random", []string{"a:1?weight=100", "b:1?weight=200", "c:1?weight=300"}, map[string]float64{"a": 1.0 / 6, "b": 2.0 / 6, "c": 3.0 / 6}},
		{"random", []string{"a:1", "b:1", "c:1", "d:1"}, map[string]float64{"a": .25, "b": .25, "c": .25, "d": .25}},
		{"random", []string{"a:1?weight=0", "b:1?weight=100"}, map[string]float64{"a": 0, "b": 1}},
		{"random", []string{"a:1?sayHello.weight=300", "b:1?weight=100"}, map[string]float64{"a": .75, "b": .25}},
		// Warming up for 1 of 10 minutes: weight 100 counts as 10.
		{"random", []string{fmt.Sprintf("a:1?timestamp=%d", fixedNow.Add(-time.Minute).UnixMilli()), "b:1?weight=10"}, map[string]float64{"a": .5, "b": .5}},
		{"roundrobin", []string{"a:1?weight=100", "b:1?weight=200", "c:1?weight=300"}, map[string]float64{"a": 1.0 / 6, "b": 2.0 / 6, "c": 3.0 / 6}},
		{"leastactive", []string{"a:1?weight=100", "b:1?weight=300"}, map[string]float64{"a": .25, "b": .75}},
		{"shortestresponse", []string{"a:1?weight=100", "b:1?weight=300"}, map[string]float64{"a": .25, "b": .75}},
		{"p2c", []string{"a:1", "b:1", "c:1"}, map[string]float64{"a": 1.0 / 3, "b": 1.0 / 3, "c": 1.0 / 3}},
	}
	for _, tt := range tests {
		t.Run(tt.balancer+"/"+strings.Join(tt.specs, ","), func(t *testing.T) {
			got := counts(balancer(t, tt.balancer, cluster.NewStats(nil, 0)), providers(tt.specs...), inv, n)
			for host, share := range tt.want {
				if diff := float64(got[host])/n - share; diff > 0.02 || diff < -0.02 {
					t.Errorf("%s got %d of %d picks (%.3f), want share %.3f", host, got[host], n, float64(got[host])/n, share)
				}
			}
		})
	}
}

func TestRoundRobinSmoothSequence(t *testing.T) {
	lb := balancer(t, "roundrobin", nil)
	ps := providers("a:1?weight=5", "b:1?weight=1", "c:1?weight=1")
	var seq, other []string
	for range 14 {
		seq = append(seq, name(lb.Select(ps, &rpc.Invocation{Method: "m1"})))
		// Another method has its own state and must not disturb m1's sequence.
		other = append(other, name(lb.Select(ps[1:], &rpc.Invocation{Method: "m2"})))
	}
	if got, want := strings.Join(seq, " "), "a a b a c a a a a b a c a a"; got != want {
		t.Errorf("sequence = %q, want %q", got, want)
	}
	if got, want := strings.Join(other[:4], " "), "b c b c"; got != want {
		t.Errorf("second method sequence = %q, want %q", got, want)
	}
}

func TestRoundRobinWeightChangeTakesEffect(t *testing.T) {
	lb := balancer(t, "roundrobin", nil)
	inv := &rpc.Invocation{Method: "m"}
	counts(lb, providers("a:1?weight=1", "b:1?weight=1"), inv, 10)
	got := counts(lb, providers("a:1?weight=3", "b:1?weight=1"), inv, 400)
	if got["a"] != 300 || got["b"] != 100 {
		t.Errorf("after weight change got %v, want a=300 b=100", got)
	}
}

func TestLoadAwareBalancersAvoidBusyProvider(t *testing.T) {
	for _, n := range []string{"leastactive", "shortestresponse", "p2c"} {
		t.Run(n, func(t *testing.T) {
			clock := fixedNow
			stats := cluster.NewStats(func() time.Time { return clock }, 0)
			ps := providers("a:1", "b:1")
			inv := &rpc.Invocation{Method: "m"}
			// Both answered in 10ms once, then a gets two calls in flight.
			for _, p := range ps {
				end := stats.Begin(p.URL(), "m")
				clock = clock.Add(10 * time.Millisecond)
				end(nil)
			}
			stats.Begin(ps[0].URL(), "m")
			stats.Begin(ps[0].URL(), "m")
			got := counts(balancer(t, n, stats), ps, inv, 200)
			if got["b"] != 200 {
				t.Errorf("picks = %v, want all on b (a has 2 calls in flight)", got)
			}
		})
	}
}

func TestShortestResponsePrefersFaster(t *testing.T) {
	clock := fixedNow
	stats := cluster.NewStats(func() time.Time { return clock }, 0)
	ps := providers("slow:1", "fast:1")
	for i, d := range []time.Duration{50 * time.Millisecond, 5 * time.Millisecond} {
		end := stats.Begin(ps[i].URL(), "m")
		clock = clock.Add(d)
		end(nil)
	}
	// A failed call must not count toward the average.
	end := stats.Begin(ps[1].URL(), "m")
	clock = clock.Add(time.Second)
	end(errors.New("boom"))
	got := counts(balancer(t, "shortestresponse", stats), ps, &rpc.Invocation{Method: "m"}, 100)
	if got["fast"] != 100 {
		t.Errorf("picks = %v, want all on fast", got)
	}
}

func TestConsistentHash(t *testing.T) {
	lb := balancer(t, "consistenthash", nil)
	all := providers("10.0.0.1:20880", "10.0.0.2:20880", "10.0.0.3:20880", "10.0.0.4:20880")
	const keys = 2000
	before := make([]string, keys)
	share := map[string]int{}
	for i := range keys {
		inv := &rpc.Invocation{Method: "get", Args: []any{fmt.Sprintf("user-%d", i), i}}
		before[i] = name(lb.Select(all, inv))
		if again := name(lb.Select(all, inv)); again != before[i] {
			t.Fatalf("key %d went to %s then %s", i, before[i], again)
		}
		share[before[i]]++
	}
	for _, p := range all {
		if share[name(p)] < keys/8 {
			t.Errorf("%s owns %d of %d keys, want a fair share", name(p), share[name(p)], keys)
		}
	}
	removed := name(all[2])
	rest := append(append([]cluster.ProviderInvoker{}, all[:2]...), all[3:]...)
	moved := 0
	for i := range keys {
		inv := &rpc.Invocation{Method: "get", Args: []any{fmt.Sprintf("user-%d", i), -1}}
		after := name(lb.Select(rest, inv))
		if before[i] != removed && after != before[i] {
			moved++
		}
	}
	if moved != 0 {
		t.Errorf("%d keys not owned by the removed provider moved", moved)
	}
}

func TestConsistentHashArguments(t *testing.T) {
	lb := balancer(t, "consistenthash", nil)
	ps := providers("a:1?hash.arguments=1", "b:1?hash.arguments=1", "c:1?hash.arguments=1", "d:1?hash.arguments=1")
	first := name(lb.Select(ps, &rpc.Invocation{Method: "m", Args: []any{"x", "same"}}))
	for i := range 50 {
		if got := name(lb.Select(ps, &rpc.Invocation{Method: "m", Args: []any{i, "same"}})); got != first {
			t.Fatalf("hash.arguments=1: first argument changed the provider (%s vs %s)", got, first)
		}
	}
}

func TestNewUnknownName(t *testing.T) {
	_, err := New("fastest", nil)
	if !errors.Is(err, cluster.ErrUnknownName) || !strings.Contains(err.Error(), "roundrobin") {
		t.Errorf("New(fastest) error = %v, want ErrUnknownName listing the names", err)
	}
	for _, n := range Names() {
		if _, err := New(n, nil); err != nil {
			t.Errorf("New(%q): %v", n, err)
		}
	}
}

func BenchmarkSelect(b *testing.B) {
	var specs []string
	for i := range 10 {
		specs = append(specs, fmt.Sprintf("10.0.0.%d:20880/org.example.Greeter?weight=%d", i, 100+i))
	}
	ps := providers(specs...)
	inv := &rpc.Invocation{Method: "sayHello", Args: []any{"bob"}}
	for _, n := range Names() {
		b.Run(n, func(b *testing.B) {
			lb, err := New(n, cluster.NewStats(nil, 0))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				lb.Select(ps, inv)
			}
		})
	}
}
