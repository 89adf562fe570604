package loadbalance

import (
	"fmt"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Every balancer that weighs providers honours the provider's warmup as
// Java's AbstractLoadBalance.getWeight does: weight × uptime / warmup (at
// least 1), uptime from the URL's timestamp, warmup from its warmup (10
// minutes by default). Consistent hash and p2c do not weigh, in Java
// either.
func TestWarmupInEveryWeightedBalancer(t *testing.T) {
	const n = 40000
	inv := &rpc.Invocation{Method: "sayHello", Args: []any{"x"}}
	minuteAgo := fixedNow.Add(-time.Minute).UnixMilli()
	tests := []struct {
		name  string
		specs []string
		want  map[string]float64
	}{
		// 1 of 10 minutes: weight 100 counts as 10.
		{"default warmup", []string{fmt.Sprintf("a:1?timestamp=%d", minuteAgo), "b:1?weight=10"}, map[string]float64{"a": .5, "b": .5}},
		// 1 of 4 minutes: weight 400 counts as 100.
		{"warmup parameter", []string{fmt.Sprintf("a:1?timestamp=%d&warmup=240000&weight=400", minuteAgo), "b:1?weight=100"},
			map[string]float64{"a": .5, "b": .5}},
		// Warm after 1 ms: full weight.
		{"warmup of 1 ms", []string{fmt.Sprintf("a:1?timestamp=%d&warmup=1&weight=300", minuteAgo), "b:1?weight=100"},
			map[string]float64{"a": .75, "b": .25}},
	}
	for _, lb := range []string{"random", "roundrobin", "leastactive", "shortestresponse"} {
		for _, tt := range tests {
			t.Run(lb+"/"+tt.name, func(t *testing.T) {
				got := counts(balancer(t, lb, cluster.NewStats(nil, 0)), providers(tt.specs...), inv, n)
				for host, share := range tt.want {
					if diff := float64(got[host])/n - share; diff > 0.02 || diff < -0.02 {
						t.Errorf("%s got %d of %d picks (%.3f), want share %.3f", host, got[host], n, float64(got[host])/n, share)
					}
				}
			})
		}
	}
}
