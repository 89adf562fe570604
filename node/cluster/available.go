package cluster

import (
	"context"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// available calls the first provider that is available, without balancing.
func available(ctx context.Context, c *Invoker, inv *rpc.Invocation) (*rpc.Result, error) {
	ps, err := c.list(inv)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if p.Available() {
			return c.call(ctx, p, inv)
		}
	}
	return nil, &rpc.CallError{Kind: rpc.ErrNoProvider, Service: inv.Service, Method: inv.Method,
		Detail: "none of the listed providers is available"}
}
