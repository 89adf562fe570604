package cluster

import (
	"context"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// failfast makes exactly one attempt: for non-idempotent writes.
func failfast(ctx context.Context, c *Invoker, inv *rpc.Invocation) (*rpc.Result, error) {
	_, res, err := c.once(ctx, inv, "")
	return res, err
}
