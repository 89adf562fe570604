package cluster

import (
	"context"
	"fmt"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// broadcast calls every provider in turn (to refresh caches everywhere).
// Any failure fails the call, a business exception included, as Java's
// BroadcastClusterInvoker throws it: the error lists every failed provider
// and errors.As finds the exception. broadcast.fail.percent (consumer URL,
// 0-100, default 100) stops the round once that share of the providers
// (at least one) failed. On success the result is the last provider's.
func broadcast(ctx context.Context, c *Invoker, inv *rpc.Invocation) (*rpc.Result, error) {
	ps, err := c.list(inv)
	if err != nil {
		return nil, err
	}
	percent := 100
	if c.opts.URL != nil {
		if n := c.opts.URL.IntParam(KeyBroadcastFailPercent, 100); n >= 0 && n <= 100 {
			percent = n
		}
	}
	threshold := max(1, len(ps)*percent/100)
	failed := &AttemptsError{Service: inv.Service, Method: inv.Method, Listed: len(ps)}
	var last *rpc.Result
	for _, p := range ps {
		res, err := c.call(ctx, p, inv)
		if err == nil && res.Exception != nil {
			err = fmt.Errorf("%s.%s at %s: exception %s: %w", inv.Service, inv.Method, p.URL().Address(), res.Exception.Class, res.Exception)
		}
		if err != nil {
			failed.Errors = append(failed.Errors, err)
			if len(failed.Errors) >= threshold {
				break
			}
			continue
		}
		last = res
	}
	if len(failed.Errors) > 0 {
		return nil, failed
	}
	return last, nil
}
