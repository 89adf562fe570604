package loadbalance

import (
	"fmt"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// record makes one call of method on p take d, successfully.
func record(stats *cluster.Stats, clock *time.Time, p cluster.ProviderInvoker, method string, d time.Duration) {
	end := stats.Begin(p.URL(), method)
	*clock = clock.Add(d)
	end(nil)
}

// A provider that was slow once is not starved for good: when the response
// window (30 s, Dubbo's slide period) starts over, every provider's average
// does, and the one that was slow is picked again. Before, it kept its old
// average until it answered again, which it never got to do.
func TestSlowOnceGetsTrafficBack(t *testing.T) {
	for _, n := range []string{"shortestresponse", "p2c"} {
		t.Run(n, func(t *testing.T) {
			clock := fixedNow
			now := func() time.Time { return clock }
			stats := cluster.NewStats(now, 0)
			lb, err := Config{Stats: stats, Now: now}.New(n)
			if err != nil {
				t.Fatal(err)
			}
			ps := providers("slow:1", "fast:1")
			inv := &rpc.Invocation{Method: "m"}
			record(stats, &clock, ps[0], "m", 500*time.Millisecond)
			record(stats, &clock, ps[1], "m", time.Millisecond)
			// Calls for most of a window, each answered in 1ms by whoever
			// was picked: the slow one gets none (p2c: no more than its
			// explorations, one per tenth of the window).
			got := map[string]int{}
			for end := clock.Add(25 * time.Second); clock.Before(end); {
				p := lb.Select(ps, inv)
				got[name(p)]++
				record(stats, &clock, p, "m", time.Millisecond)
				clock = clock.Add(9 * time.Millisecond)
			}
			if got["slow"] > 10 {
				t.Fatalf("in the window after its slow call, slow got %d of %d picks", got["slow"], got["slow"]+got["fast"])
			}
			// The next window: both answer in 1ms and share the calls.
			clock = clock.Add(10 * time.Second)
			got = map[string]int{}
			for range 1000 {
				p := lb.Select(ps, inv)
				got[name(p)]++
				record(stats, &clock, p, "m", time.Millisecond)
			}
			if got["slow"] < 200 {
				t.Errorf("after the window restarted, slow got %d of 1000 picks; want a fair share back", got["slow"])
			}
		})
	}
}

// p2c explores: a provider that loses every draw is picked once a tenth of
// the window has passed since its last pick, so its figures are refreshed
// long before the window restarts.
func TestP2CExplores(t *testing.T) {
	clock := fixedNow
	now := func() time.Time { return clock }
	stats := cluster.NewStats(now, 30*time.Second)
	lb, err := Config{Stats: stats, Now: now}.New("p2c")
	if err != nil {
		t.Fatal(err)
	}
	ps := providers("slow:1", "fast:1")
	inv := &rpc.Invocation{Method: "m"}
	record(stats, &clock, ps[0], "m", 500*time.Millisecond)
	record(stats, &clock, ps[1], "m", time.Millisecond)
	lb.Select(ps, inv) // both seen
	var explored []time.Duration
	start := clock
	for range 2000 { // 20 s, one pick every 10ms
		clock = clock.Add(10 * time.Millisecond)
		if name(lb.Select(ps, inv)) == "slow" {
			explored = append(explored, clock.Sub(start))
		}
	}
	if len(explored) < 5 || len(explored) > 7 {
		t.Errorf("slow explored at %v; want about every 3s in 20s", explored)
	}
}

// Consistent hashing keys a generic call ($invoke, as the gateway and
// dubbo call send) on the invoked method's arguments, as Java's
// RpcUtils.getArguments; before, it hashed $invoke's own first argument,
// the method name, so every generic call went to one provider.
func TestConsistentHashGenericCalls(t *testing.T) {
	lb := balancer(t, "consistenthash", nil)
	ps := providers("10.0.0.1:20880", "10.0.0.2:20880", "10.0.0.3:20880")
	owners := map[string]bool{}
	for i := range 100 {
		key := fmt.Sprintf("user-%d", i)
		direct := name(lb.Select(ps, &rpc.Invocation{Method: "get", Args: []any{key}}))
		gen := &rpc.Invocation{Method: "$invoke", Args: []any{"get", []string{"java.lang.String"}, []any{key}}}
		if got := name(lb.Select(ps, gen)); got != direct {
			t.Fatalf("generic call with %q went to %s, the direct call to %s", key, got, direct)
		}
		owners[direct] = true
	}
	if len(owners) != 3 {
		t.Errorf("100 keys went to %d providers, want all 3", len(owners))
	}
}

// hash.nodes sets the virtual nodes per provider, per method first, and a
// changed setting rebuilds the ring.
func TestConsistentHashNodes(t *testing.T) {
	lb := balancer(t, "consistenthash", nil).(*ConsistentHash)
	points := func(query, method string) int {
		ps := providers("a:1?"+query, "b:1?"+query)
		lb.Select(ps, &rpc.Invocation{Method: method, Args: []any{"k"}})
		return len(lb.rings[method].points)
	}
	for _, tt := range []struct {
		query, method string
		want          int
	}{
		{"", "m", 2 * 160},
		{"hash.nodes=40", "m", 2 * 40},
		{"hash.nodes=40&get.hash.nodes=8", "get", 2 * 8},
		{"hash.nodes=40&get.hash.nodes=8", "m", 2 * 40},
	} {
		if got := points(tt.query, tt.method); got != tt.want {
			t.Errorf("%s, method %s: %d points on the ring, want %d", tt.query, tt.method, got, tt.want)
		}
	}
}
