package loadbalance

import (
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// ShortestResponse picks the provider expected to answer first: average
// time of its successful calls in the current response window times
// (calls in flight + 1); among several, at random by weight. Providers with
// no successful call in the window estimate 0, so that they get tried:
// when the window restarts (cluster.Stats), a provider that was slow gets
// calls again, as with Dubbo's sliding window.
type ShortestResponse struct {
	rand  *randomness
	now   func() time.Time
	stats *cluster.Stats
}

func newShortestResponse(e env) cluster.LoadBalancer {
	return &ShortestResponse{rand: e.rand, now: e.now, stats: e.stats}
}

// Select implements cluster.LoadBalancer.
func (b *ShortestResponse) Select(ps []cluster.ProviderInvoker, inv *rpc.Invocation) cluster.ProviderInvoker {
	if len(ps) == 1 {
		return ps[0]
	}
	method := cluster.MethodName(inv)
	return b.rand.cheapest(ps, method, b.now(), func(u *url.URL) int64 {
		return int64(b.stats.AverageElapsed(u, method) * time.Duration(b.stats.Active(u, method)+1))
	})
}
