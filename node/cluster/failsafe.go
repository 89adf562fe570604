package cluster

import (
	"context"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// failsafe makes one attempt and turns a failure into an empty result, for
// calls whose outcome does not matter (audit logs).
func failsafe(ctx context.Context, c *Invoker, inv *rpc.Invocation) (*rpc.Result, error) {
	_, res, err := c.once(ctx, inv, "")
	if err != nil {
		c.log.Warn("failsafe: ignoring failed call", "service", inv.Service, "method", inv.Method, "error", err)
		return &rpc.Result{}, nil
	}
	return res, nil
}
