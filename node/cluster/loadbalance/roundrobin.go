package loadbalance

import (
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// rrForget is how long a provider that is no longer listed keeps its round
// robin state (Dubbo's RECYCLE_PERIOD), so a short absence does not reset it.
const rrForget = 60 * time.Second

// RoundRobin is smooth weighted round robin (nginx's algorithm, as Dubbo):
// every pick adds each provider's weight to its current value, takes the
// largest and subtracts the total from it. Weights 5,1,1 give a a b a c a a.
// State is kept per method.
type RoundRobin struct {
	now func() time.Time

	mu      sync.Mutex
	methods map[string]map[string]*rrState
}

type rrState struct {
	weight  int
	current int
	seen    time.Time
}

func newRoundRobin(e env) cluster.LoadBalancer {
	return &RoundRobin{now: e.now, methods: make(map[string]map[string]*rrState)}
}

// Select implements cluster.LoadBalancer.
func (b *RoundRobin) Select(ps []cluster.ProviderInvoker, inv *rpc.Invocation) cluster.ProviderInvoker {
	now := b.now()
	method := cluster.MethodName(inv)
	b.mu.Lock()
	defer b.mu.Unlock()
	states := b.methods[method]
	if states == nil {
		states = make(map[string]*rrState)
		b.methods[method] = states
	}
	total := 0
	var best cluster.ProviderInvoker
	var bestState *rrState
	for _, p := range ps {
		id := identity(p)
		w := cluster.Weight(p, method, now)
		s := states[id]
		if s == nil {
			s = &rrState{weight: w}
			states[id] = s
		}
		if s.weight != w {
			// A changed weight (override rule, warm-up) starts afresh.
			s.weight, s.current = w, 0
		}
		s.current += w
		s.seen = now
		if bestState == nil || s.current > bestState.current {
			best, bestState = p, s
		}
		total += w
	}
	for id, s := range states {
		if now.Sub(s.seen) > rrForget {
			delete(states, id)
		}
	}
	if best == nil {
		return ps[0]
	}
	bestState.current -= total
	return best
}
