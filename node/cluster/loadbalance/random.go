package loadbalance

import (
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Random picks a provider at random in proportion to its weight.
type Random struct {
	rand *randomness
	now  func() time.Time
}

func newRandom(e env) cluster.LoadBalancer { return &Random{rand: e.rand, now: e.now} }

// Select implements cluster.LoadBalancer.
func (b *Random) Select(ps []cluster.ProviderInvoker, inv *rpc.Invocation) cluster.ProviderInvoker {
	if len(ps) == 1 {
		return ps[0]
	}
	return b.rand.weighted(ps, allIndexes(len(ps)), weightsOf(ps, cluster.MethodName(inv), b.now()))
}
