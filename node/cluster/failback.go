package cluster

import (
	"context"
	"maps"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// failbackQueue holds calls that failed under the failback strategy and
// retries them every period from one goroutine, owned by the Invoker that
// started it and stopped by Invoker.Close.
type failbackQueue struct {
	c      *Invoker
	tasks  chan failbackTask // bounded: a full queue drops new failures
	cancel context.CancelFunc
	done   chan struct{}
}

type failbackTask struct {
	inv      *rpc.Invocation
	attempts int
}

func (c *Invoker) enqueueFailback(inv *rpc.Invocation) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.log.Warn("failback: dropping failed call", "service", inv.Service, "method", inv.Method, "error", errClosed)
		return
	}
	if c.failback == nil {
		c.failback = startFailback(c)
	}
	q := c.failback
	c.mu.Unlock()
	// Copy: the caller may reuse its invocation once Invoke returned.
	cp := *inv
	cp.Attachments = maps.Clone(inv.Attachments)
	q.add(failbackTask{inv: &cp})
}

func startFailback(c *Invoker) *failbackQueue {
	ctx, cancel := context.WithCancel(context.Background())
	q := &failbackQueue{
		c:      c,
		tasks:  make(chan failbackTask, c.opts.FailbackTasks),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go q.run(ctx)
	return q
}

func (q *failbackQueue) add(t failbackTask) {
	select {
	case q.tasks <- t:
	default:
		q.c.log.Warn("failback: retry queue full, dropping failed call",
			"service", t.inv.Service, "method", t.inv.Method, "limit", cap(q.tasks))
	}
}

func (q *failbackQueue) stop() {
	q.cancel()
	<-q.done
}

func (q *failbackQueue) run(ctx context.Context) {
	defer close(q.done)
	tick := time.NewTicker(q.c.opts.FailbackPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Retry only what was queued before this tick; failures go back for
		// the next one.
		for n := len(q.tasks); n > 0; n-- {
			var t failbackTask
			select {
			case t = <-q.tasks:
			default:
			}
			if t.inv == nil {
				break
			}
			q.retry(ctx, t)
			if ctx.Err() != nil {
				return
			}
		}
	}
}

func (q *failbackQueue) retry(ctx context.Context, t failbackTask) {
	_, err := failfast(q.c, ctx, t.inv)
	if err == nil {
		return
	}
	t.attempts++
	if t.attempts >= q.c.opts.FailbackRetries {
		q.c.log.Error("failback: giving up on failed call", "service", t.inv.Service, "method", t.inv.Method,
			"attempts", t.attempts, "error", err)
		return
	}
	q.add(t)
}
