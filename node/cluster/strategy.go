package cluster

import (
	"context"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// strategy runs one call with a cluster strategy.
type strategy func(ctx context.Context, c *Invoker, inv *rpc.Invocation) (*rpc.Result, error)

// strategies is every cluster strategy by the name users write in
// "cluster", one file each. Read-only.
var strategies = map[string]strategy{
	"failover":  failover,
	"failfast":  failfast,
	"failsafe":  failsafe,
	"failback":  failback,
	"forking":   forking,
	"broadcast": broadcast,
	"available": available,
}
