package cluster

import (
	"context"
	"errors"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// failover tries another provider when a call fails with a retryable error,
// a timeout included (as Java's FailoverClusterInvoker: only business
// exceptions are final): retries+1 attempts in all (retries default 2), each
// with its own timeout, re-listing the directory before each retry so that
// providers that went away are not tried again, and preferring providers
// not tried yet. Business exceptions and bad requests are returned at once;
// the caller's context ending stops the retries.
func failover(c *Invoker, ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
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
				failed.Errors = append(failed.Errors, categorize(ctx.Err(), ctx, inv, ""))
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
		p := pick(lb, ps, inv, tried)
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

// failfast makes exactly one attempt: for non-idempotent writes.
func failfast(c *Invoker, ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	ps, err := c.list(inv)
	if err != nil {
		return nil, err
	}
	lb, err := c.balancer(ps, inv)
	if err != nil {
		return nil, err
	}
	return c.call(ctx, pick(lb, ps, inv, nil), inv)
}

// failsafe makes one attempt and turns a failure into an empty result, for
// calls whose outcome does not matter (audit logs).
func failsafe(c *Invoker, ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	res, err := failfast(c, ctx, inv)
	if err != nil {
		c.log.Warn("failsafe: ignoring failed call", "service", inv.Service, "method", inv.Method, "error", err)
		return &rpc.Result{}, nil
	}
	return res, nil
}

// failback makes one attempt; when it fails the caller gets an empty result
// and the call is retried in the background (for notifications).
func failback(c *Invoker, ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	res, err := failfast(c, ctx, inv)
	if err == nil {
		return res, nil
	}
	c.log.Warn("failback: call failed, will retry in the background", "service", inv.Service, "method", inv.Method, "error", err)
	c.enqueueFailback(inv)
	return &rpc.Result{}, nil
}

// forking calls "forks" providers (default 2) at once and returns the first
// success, for reads that must be fast; it fails only when all fail. The
// whole call is bounded by the method's timeout.
func forking(c *Invoker, ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	ps, err := c.list(inv)
	if err != nil {
		return nil, err
	}
	lb, err := c.balancer(ps, inv)
	if err != nil {
		return nil, err
	}
	forks := MethodIntParam(ps[0].URL(), MethodName(inv), KeyForks, DefaultForks)
	selected := ps
	if forks > 0 && forks < len(ps) {
		tried := make(map[string]bool, forks)
		selected = make([]ProviderInvoker, 0, forks)
		for i := 0; i < forks; i++ {
			p := pick(lb, ps, inv, tried)
			if !tried[p.URL().Address()] {
				tried[p.URL().Address()] = true
				selected = append(selected, p)
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the losers stop as soon as one wins
	type outcome struct {
		res *rpc.Result
		err error
	}
	// Buffered so that losers finishing after we return never block.
	done := make(chan outcome, len(selected))
	for _, p := range selected {
		go func() {
			res, err := c.call(ctx, p, inv)
			done <- outcome{res, err}
		}()
	}
	failed := &AttemptsError{Service: inv.Service, Method: inv.Method, Listed: len(ps)}
	for range selected {
		o := <-done
		if o.err == nil {
			return o.res, nil
		}
		failed.Errors = append(failed.Errors, o.err)
	}
	return nil, failed
}

// broadcast calls every provider in turn (to refresh caches everywhere);
// any failure fails the call, after all providers were called. The result
// is the last one, or the last business exception.
func broadcast(c *Invoker, ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	ps, err := c.list(inv)
	if err != nil {
		return nil, err
	}
	failed := &AttemptsError{Service: inv.Service, Method: inv.Method, Listed: len(ps)}
	var last, lastException *rpc.Result
	for _, p := range ps {
		res, err := c.call(ctx, p, inv)
		if err != nil {
			failed.Errors = append(failed.Errors, err)
			continue
		}
		last = res
		if res.Exception != nil {
			lastException = res
		}
	}
	if len(failed.Errors) > 0 {
		return nil, failed
	}
	if lastException != nil {
		return lastException, nil
	}
	return last, nil
}

// available calls the first provider that is available, without balancing.
func available(c *Invoker, ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
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

// errClosed is what failback reports for calls dropped by Close.
var errClosed = errors.New("cluster invoker closed")
