// Package loadbalance holds Dubbo's load balancers, each a
// cluster.LoadBalancer chosen by the "loadbalance" URL key:
//
//   - random (default): weighted random;
//   - roundrobin: smooth weighted round robin, state kept per method;
//   - leastactive: fewest calls in flight, weighted random among the tied;
//   - shortestresponse: smallest expected wait (average success time in the
//     current response window times calls in flight), weighted random
//     among the tied;
//   - consistenthash: the same arguments go to the same provider (md5 ring of
//     hash.nodes virtual nodes, hashed on the hash.arguments arguments);
//   - p2c: power of two choices, the less loaded of two random providers,
//     with a provider not picked for a while tried again (exploration).
//
// Weights come from cluster.Weight, which applies Dubbo's warm-up. The
// balancers that look at load read the cluster.Stats the cluster invoker
// records around every call; its response window (Dubbo's 30 s
// shortestresponse.slidePeriod) restarts for every provider at once, so a
// provider that was slow once gets calls again.
//
// The table [balancers] maps each name to its constructor; it drives
// [Names], [New] and [Check], the start-time check of configured names.
// To add a load balancer: write one file with a type implementing
// cluster.LoadBalancer and a constructor taking an env, and add one row to
// the table.
package loadbalance

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/url"
)

// balancers is every load balancer by the name users write in
// "loadbalance". Read-only.
var balancers = map[string]func(env) cluster.LoadBalancer{
	"random":           newRandom,
	"roundrobin":       newRoundRobin,
	"leastactive":      newLeastActive,
	"shortestresponse": newShortestResponse,
	"consistenthash":   newConsistentHash,
	"p2c":              newP2C,
}

// env is what a balancer may depend on.
type env struct {
	rand  *randomness
	now   func() time.Time
	stats *cluster.Stats
}

// Names lists the load balancer names New accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(balancers))
	for n := range balancers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Check returns nil when name is a load balancer ("" is the default,
// random), else an error wrapping cluster.ErrUnknownName that lists the
// known names.
func Check(name string) error {
	if _, ok := balancers[name]; ok || name == "" {
		return nil
	}
	return &cluster.UnknownNameError{Kind: "load balancer", Name: name, Known: Names()}
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
	// Now is the clock for warm-up weights and p2c's exploration. Default
	// time.Now.
	Now func() time.Time
}

// New makes the load balancer called name ("" means random).
func (c Config) New(name string) (cluster.LoadBalancer, error) {
	if name == "" {
		name = cluster.DefaultLoadBalance
	}
	mk, ok := balancers[name]
	if !ok {
		return nil, Check(name)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Stats == nil {
		c.Stats = cluster.NewStats(c.Now, 0)
	}
	return mk(env{rand: &randomness{r: c.Rand}, now: c.Now, stats: c.Stats}), nil
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

// cheapest picks the provider of least cost (never negative); among
// several, at random by weight (leastactive, shortestresponse).
func (r *randomness) cheapest(ps []cluster.ProviderInvoker, method string, now time.Time, cost func(*url.URL) int64) cluster.ProviderInvoker {
	least := int64(-1)
	var tied []int
	for i, p := range ps {
		c := cost(p.URL())
		switch {
		case least < 0 || c < least:
			least, tied = c, append(tied[:0], i)
		case c == least:
			tied = append(tied, i)
		}
	}
	if len(tied) == 1 {
		return ps[tied[0]]
	}
	return r.weighted(ps, tied, weightsOf(ps, method, now))
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
