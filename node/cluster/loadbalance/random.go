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

// Select implements cluster.LoadBalancer.
func (b *Random) Select(ps []cluster.ProviderInvoker, inv *rpc.Invocation) cluster.ProviderInvoker {
	if len(ps) == 1 {
		return ps[0]
	}
	return b.rand.weighted(ps, allIndexes(len(ps)), weightsOf(ps, inv.Method, b.now()))
}

// LeastActive picks the provider with the fewest calls of the method in
// flight; among several, at random by weight.
type LeastActive struct {
	rand  *randomness
	now   func() time.Time
	stats *cluster.Stats
}

// Select implements cluster.LoadBalancer.
func (b *LeastActive) Select(ps []cluster.ProviderInvoker, inv *rpc.Invocation) cluster.ProviderInvoker {
	if len(ps) == 1 {
		return ps[0]
	}
	least := -1
	var tied []int
	for i, p := range ps {
		a := b.stats.Active(p.URL(), inv.Method)
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
	return b.rand.weighted(ps, tied, weightsOf(ps, inv.Method, b.now()))
}

// ShortestResponse picks the provider expected to answer first: average
// time of its recent successful calls times (calls in flight + 1); among
// several, at random by weight. Providers with no successful call yet
// estimate 0, so that they get tried.
type ShortestResponse struct {
	rand  *randomness
	now   func() time.Time
	stats *cluster.Stats
}

// Select implements cluster.LoadBalancer.
func (b *ShortestResponse) Select(ps []cluster.ProviderInvoker, inv *rpc.Invocation) cluster.ProviderInvoker {
	if len(ps) == 1 {
		return ps[0]
	}
	var shortest time.Duration = -1
	var tied []int
	for i, p := range ps {
		u := p.URL()
		est := b.stats.AverageElapsed(u, inv.Method) * time.Duration(b.stats.Active(u, inv.Method)+1)
		switch {
		case shortest < 0 || est < shortest:
			shortest, tied = est, append(tied[:0], i)
		case est == shortest:
			tied = append(tied, i)
		}
	}
	if len(tied) == 1 {
		return ps[tied[0]]
	}
	return b.rand.weighted(ps, tied, weightsOf(ps, inv.Method, b.now()))
}

// P2C draws two distinct providers at random and takes the less loaded,
// load being (calls in flight + 1) times the average response time, per
// unit of weight. It reacts to load like leastactive at the cost of two
// lookups instead of one per provider.
type P2C struct {
	rand  *randomness
	now   func() time.Time
	stats *cluster.Stats
}

// Select implements cluster.LoadBalancer.
func (b *P2C) Select(ps []cluster.ProviderInvoker, inv *rpc.Invocation) cluster.ProviderInvoker {
	switch len(ps) {
	case 1:
		return ps[0]
	case 2:
		return b.lighter(ps[0], ps[1], inv.Method)
	}
	i := b.rand.intN(len(ps))
	j := b.rand.intN(len(ps) - 1)
	if j >= i {
		j++
	}
	return b.lighter(ps[i], ps[j], inv.Method)
}

func (b *P2C) lighter(p, q cluster.ProviderInvoker, method string) cluster.ProviderInvoker {
	if b.load(q, method) < b.load(p, method) {
		return q
	}
	return p
}

func (b *P2C) load(p cluster.ProviderInvoker, method string) float64 {
	u := p.URL()
	// +1µs so that providers with no history still compare by calls in flight.
	latency := float64(b.stats.AverageElapsed(u, method)/time.Microsecond) + 1
	w := cluster.Weight(p, method, b.now())
	if w <= 0 {
		w = 1
	}
	return float64(b.stats.Active(u, method)+1) * latency / float64(w)
}
