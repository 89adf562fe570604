package loadbalance

import (
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// P2C draws two distinct providers at random and takes the less loaded,
// load being (calls in flight + 1) times the average response time, per
// unit of weight. It reacts to load like leastactive at the cost of two
// lookups instead of one per provider.
//
// It explores: when the loser of a draw has not been picked for a tenth of
// the response window (3 s by default), it is picked instead, so a
// provider that was slow once gets calls again and its figures are fresh
// long before the window restarts.
type P2C struct {
	rand  *randomness
	now   func() time.Time
	stats *cluster.Stats

	mu        sync.Mutex
	picked    map[p2cKey]time.Time // last pick of each provider and method
	lastSweep time.Time
}

type p2cKey struct{ addr, path, method string }

func keyOf(p cluster.ProviderInvoker, method string) p2cKey {
	u := p.URL()
	return p2cKey{u.Address(), u.Path(), method}
}

func newP2C(e env) cluster.LoadBalancer {
	return &P2C{rand: e.rand, now: e.now, stats: e.stats, picked: make(map[p2cKey]time.Time)}
}

// Select implements cluster.LoadBalancer.
func (b *P2C) Select(ps []cluster.ProviderInvoker, inv *rpc.Invocation) cluster.ProviderInvoker {
	if len(ps) == 1 {
		return ps[0]
	}
	var p, q cluster.ProviderInvoker
	if len(ps) == 2 {
		// In random order, so that equal loads do not always favour the first.
		i := b.rand.intN(2)
		p, q = ps[i], ps[1-i]
	} else {
		i := b.rand.intN(len(ps))
		j := b.rand.intN(len(ps) - 1)
		if j >= i {
			j++
		}
		p, q = ps[i], ps[j]
	}
	method := cluster.MethodName(inv)
	if b.load(q, method) < b.load(p, method) {
		p, q = q, p
	}
	return b.explore(p, q, method)
}

// explore returns the loser when it has waited too long, else the winner,
// and records the pick.
func (b *P2C) explore(win, lose cluster.ProviderInvoker, method string) cluster.ProviderInvoker {
	now := b.now()
	window := b.stats.Window()
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.lastSweep) > window {
		// Providers not drawn for a whole window are gone or forgotten.
		for k, t := range b.picked {
			if now.Sub(t) > window {
				delete(b.picked, k)
			}
		}
		b.lastSweep = now
	}
	lk := keyOf(lose, method)
	if last, seen := b.picked[lk]; !seen {
		b.picked[lk] = now // first seen: it waits from now
	} else if now.Sub(last) >= window/10 {
		win = lose
	}
	b.picked[keyOf(win, method)] = now
	return win
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
