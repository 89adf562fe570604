package cluster

import (
	"context"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// forking calls "forks" providers (default 2; 0 or less, or as many as are
// listed, means all) at once and returns the first answer, for reads that
// must be fast; it fails only when all fail. Each fork is bounded by the
// method's timeout, so the whole call is too.
func forking(ctx context.Context, c *Invoker, inv *rpc.Invocation) (*rpc.Result, error) {
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
			p := c.pick(lb, ps, inv, tried)
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
