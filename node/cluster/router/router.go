// Package router holds Dubbo's routing rules, each a cluster.Router that
// narrows the provider list of one call:
//
//   - condition rules, from the YAML stored in the config center under
//     <key>.condition-router ([ParseConditionRule], [NewConditionRouter]):
//     configVersion v3.0 "method = find* => host = 10.0.0.1" strings, or
//     v3.1 conditions with a from and weighted to destinations; or the old
//     condition:// URLs under /dubbo/<iface>/routers ([ParseConditionURL]).
//     Both forms match as Java Dubbo 3.3 does (expr.go);
//   - tag rules, from <provider application>.tag-router ([ParseTagRule]),
//     which send calls carrying the dubbo.tag attachment to the providers of
//     that tag, by address or by parameter match; a [TagRouter] also routes
//     by the providers' static dubbo.tag parameter when there is no rule;
//   - affinity rules, from <key>.affinity-router ([ParseAffinityRule]),
//     which keep calls on providers sharing a parameter's value with the
//     consumer, as dubbo-go 3.3 applies them;
//   - script rules (<provider application>.script-router), which are read
//     only to say that they are not applied ([ScriptRule]).
//
// Each rule kind has a document model that keeps the fields it does not
// know, so that the console edits rules without losing anything, and a
// Warnings method listing what the rule says that is not applied; the
// [Kind] table says where each rule lives and makes its router. A [Chain]
// runs several routers in a fixed order and lets the consumer swap one
// when its rule changes. Parse errors wrap [ErrInvalidRule]; the caller
// logs them and keeps the rules it had.
package router

import (
	"errors"
	"slices"
	"sync"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// ErrInvalidRule is the category of every rule parse error.
var ErrInvalidRule = errors.New("invalid routing rule")

// Orders of the routers in a Chain: affinity rules first (dubbo-go 3.3
// sorts its routers by ascending priority and gives affinity the lowest),
// then tag rules, service-scoped and application-scoped condition rules,
// and the old rules from the registry's routers folder, as Dubbo 3 orders
// its state routers. Script rules are not applied; their place only
// orders their warning.
const (
	OrderServiceAffinity  = 50
	OrderAppAffinity      = 60
	OrderTag              = 100
	OrderServiceCondition = 140
	OrderAppCondition     = 150
	OrderRegistry         = 200
	OrderScript           = 300
)

// Chain runs routers in ascending order, each on the list the previous one
// left. It is safe for concurrent use; Set replaces one router while calls
// are routed.
type Chain struct {
	mu    sync.RWMutex
	slots []slot
}

type slot struct {
	name  string
	order int
	r     cluster.Router
}

// Set puts r in the chain under name at position order, replacing the
// router of the same name; a nil r removes it.
func (c *Chain) Set(name string, order int, r cluster.Router) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slots := slices.DeleteFunc(slices.Clone(c.slots), func(s slot) bool { return s.name == name })
	if r != nil {
		slots = append(slots, slot{name, order, r})
		slices.SortStableFunc(slots, func(a, b slot) int { return a.order - b.order })
	}
	c.slots = slots
}

// Route implements cluster.Router.
func (c *Chain) Route(ps []cluster.ProviderInvoker, consumer *url.URL, inv *rpc.Invocation) []cluster.ProviderInvoker {
	c.mu.RLock()
	slots := c.slots
	c.mu.RUnlock()
	for _, s := range slots {
		if len(ps) == 0 {
			break
		}
		ps = s.r.Route(ps, consumer, inv)
	}
	return ps
}
