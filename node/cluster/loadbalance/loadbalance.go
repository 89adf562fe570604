// Package loadbalance holds Dubbo's load balancers, each a
// cluster.LoadBalancer chosen by the "loadbalance" URL key:
//
//   - random (default): weighted random;
//   - roundrobin: smooth weighted round robin, state kept per method;
//   - leastactive: fewest calls in flight, weighted random among the tied;
//   - shortestresponse: smallest expected wait (average success time times
//     calls in flight), weighted random among the tied;
//   - consistenthash: the same arguments go to the same provider (md5 ring of
//     hash.nodes virtual nodes, hashed on the hash.arguments arguments);
//   - p2c: power of two choices, the less loaded of two random providers.
//
// Weights come from cluster.Weight, which applies Dubbo's warm-up. The
// balancers that look at load read the cluster.Stats the cluster invoker
// records around every call. Build one with [New] (what cluster.Options
// expects) or [Config.New] to control randomness and time in tests.
package loadbalance

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
)

// Names lists the load balancer names New accepts.
func Names() []string {
	return []string{"random", "roundrobin", "leastactive", "shortestresponse", "consistenthash", "p2c"}
}

// New makes the load balancer called name; it matches cluster.Options.NewBalancer.
func New(name string, stats *cluster.Stats) (cluster.LoadBalancer, error) {
	return Config{Stats: stats}.New(name)
}

// Config holds what balancers depend on. Zero fields get defaults.
type Config struct {
	// Stats are the per-provider call counts; a fresh, empty Stats when nil.
	Stats *cluster.Stats
	// Rand is the source of randomness; a goroutine-safe global source when
	// nil. A *rand.Rand given here is guarded by a mutex.
	Rand *rand.Rand
	// Now is the clock for warm-up weights. Default time.Now.
	Now func() time.Time
}

// New makes the load balancer called name ("" means random).
func (c Config) New(name string) (cluster.LoadBalancer, error) {
	if c.Stats == nil {
		c.Stats = cluster.NewStats(c.Now)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	r := &randomness{r: c.Rand}
	switch name {
	case "", "random":
		return &Random{rand: r, now: c.Now}, nil
	case "roundrobin":
		return newRoundRobin(c.Now), nil
	case "leastactive":
		return &LeastActive{rand: r, now: c.Now, stats: c.Stats}, nil
	case "shortestresponse":
		return &ShortestResponse{rand: r, now: c.Now, stats: c.Stats}, nil
	case "consistenthash":
		return newConsistentHash(), nil
	case "p2c":
		return &P2C{rand: r, now: c.Now, stats: c.Stats}, nil
	}
	return nil, fmt.Errorf("loadbalance %q: %w; use one of %s", name, cluster.ErrUnknownName, strings.Join(Names(), ", "))
}

// randomness draws integers from a seeded source under a mutex, or from the
// global goroutine-safe source.
type randomness struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (r *randomness) intN(n int) int {
	if r.r == nil {
		return rand.IntN(n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.IntN(n)
}

// weighted picks among candidates (indexes into ps) at random in proportion
// to weights, or uniformly when the weights are all equal or all zero.
func (r *randomness) weighted(ps []cluster.ProviderInvoker, candidates []int, weights []int) cluster.ProviderInvoker {
	total, same := 0, true
	for i, c := range candidates {
		total += weights[c]
		if i > 0 && weights[c] != weights[candidates[0]] {
			same = false
		}
	}
	if total > 0 && !same {
		off := r.intN(total)
		for _, c := range candidates {
			off -= weights[c]
			if off < 0 {
				return ps[c]
			}
		}
	}
	return ps[candidates[r.intN(len(candidates))]]
}

func weightsOf(ps []cluster.ProviderInvoker, method string, now time.Time) []int {
	w := make([]int, len(ps))
	for i, p := range ps {
		w[i] = cluster.Weight(p, method, now)
	}
	return w
}

func allIndexes(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// identity names a provider for balancer state: the same provider keeps its
// state across directory refreshes that hand out new invoker values.
func identity(p cluster.ProviderInvoker) string {
	u := p.URL()
	return u.Protocol() + "://" + u.Address() + "/" + u.Path()
}
