package loadbalance

import (
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// LeastActive picks the provider with the fewest calls of the method in
// flight; among several, at random by weight.
type LeastActive struct {
	rand  *randomness
	now   func() time.Time
	stats *cluster.Stats
}

func newLeastActive(e env) cluster.LoadBalancer {
	return &LeastActive{rand: e.rand, now: e.now, stats: e.stats}
}

// Select implements cluster.LoadBalancer.
func (b *LeastActive) Select(ps []cluster.ProviderInvoker, inv *rpc.Invocation) cluster.ProviderInvoker {
	if len(ps) == 1 {
		return ps[0]
	}
	method := cluster.MethodName(inv)
	return b.rand.cheapest(ps, method, b.now(), func(u *url.URL) int64 {
		return int64(b.stats.Active(u, method))
	})
}
