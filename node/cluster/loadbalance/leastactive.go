package loadbalance

import (
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
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
	least := -1
	var tied []int
	for i, p := range ps {
		a := b.stats.Active(p.URL(), method)
		switch {
		case least < 0 || a < least:
			least, tied = a, append(tied[:0], i)
		case a == least:
			tied = append(tied, i)
		}
	}
	if len(tied) == 1 {
		return ps[tied[0]]
	}
	return b.rand.weighted(ps, tied, weightsOf(ps, method, b.now()))
}
