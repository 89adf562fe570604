package cluster

import (
	"context"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// failover tries another provider when a call fails with a retryable error,
// a timeout included (as Java's FailoverClusterInvoker: only business
// exceptions are final): retries+1 attempts in all (retries default 2), each
// with its own timeout, re-listing the directory before each retry so that
// providers that went away are not tried again, and preferring providers
// not tried yet. Business exceptions and bad requests are returned at once;
// the caller's context ending stops the retries.
func failover(ctx context.Context, c *Invoker, inv *rpc.Invocation) (*rpc.Result, error) {
	ps, err := c.list(inv)
	if err != nil {
		return nil, err
	}
	attempts := MethodIntParam(ps[0].URL(), MethodName(inv), KeyRetries, DefaultRetries) + 1
	if attempts < 1 {
		attempts = 1
	}
	tried := make(map[string]bool, attempts)
	failed := &AttemptsError{Service: inv.Service, Method: inv.Method}
	for i := 0; i < attempts; i++ {
		if i > 0 {
			if ctx.Err() != nil {
				failed.Errors = append(failed.Errors, categorize(ctx, ctx.Err(), inv, ""))
				break
			}
			if ps, err = c.list(inv); err != nil {
				failed.Errors = append(failed.Errors, err)
				break
			}
		}
		lb, err := c.balancer(ps, inv)
		if err != nil {
			return nil, err
		}
		p := c.pick(lb, ps, inv, tried)
		tried[p.URL().Address()] = true
		failed.Listed = len(ps)
		res, err := c.call(ctx, p, inv)
		if err == nil {
			return res, nil
		}
		if !rpc.Retryable(err) {
			return nil, err
		}
		failed.Errors = append(failed.Errors, err)
	}
	return nil, failed
}
