package cluster

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// failback makes one attempt; when it fails the caller gets an empty result
// and the call is retried in the background (for notifications), as Java's
// FailbackClusterInvoker: every FailbackPeriod, up to "retries" times
// (default 3; 0 turns the retries off), each retry on another provider than
// the one that just failed when another is listed, with at most
// "failbacktasks" calls (default 100) waiting; more are dropped and logged.
// Both keys are the reference's (Options.URL).
func failback(ctx context.Context, c *Invoker, inv *rpc.Invocation) (*rpc.Result, error) {
	addr, res, err := c.once(ctx, inv, "")
	if err == nil {
		return res, nil
	}
	if c.fb.retries == 0 {
		c.log.Warn("failback: call failed; retries = 0, so it is not retried", "service", inv.Service, "method", inv.Method, "error", err)
		return &rpc.Result{}, nil
	}
	c.log.Warn("failback: call failed, will retry in the background", "service", inv.Service, "method", inv.Method, "error", err)
	c.enqueueFailback(inv, addr)
	return &rpc.Result{}, nil
}

// failbackSettings are the reference's failback keys.
type failbackSettings struct {
	retries, tasks int
}

// failbackSettingsOf reads them as Java does: "retries" absent or negative
// is 3, "failbacktasks" absent or not positive is 100.
func failbackSettingsOf(u *url.URL) failbackSettings {
	s := failbackSettings{retries: DefaultFailbackRetries, tasks: DefaultFailbackTasks}
	if u == nil {
		return s
	}
	if n, err := strconv.Atoi(strings.TrimSpace(u.Param(KeyRetries))); err == nil && n >= 0 {
		s.retries = n
	}
	if n := u.IntParam(KeyFailbackTasks, 0); n > 0 {
		s.tasks = n
	}
	return s
}

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
	inv *rpc.Invocation
	// last is the provider that failed last, avoided by the next retry.
	last     string
	attempts int
}

func (c *Invoker) enqueueFailback(inv *rpc.Invocation, failedAt string) {
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
	q.add(failbackTask{inv: &cp, last: failedAt})
}

func startFailback(c *Invoker) *failbackQueue {
	ctx, cancel := context.WithCancel(context.Background())
	q := &failbackQueue{
		c:      c,
		tasks:  make(chan failbackTask, c.fb.tasks),
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
		q.c.log.Warn("failback: retry queue full (failbacktasks), dropping failed call",
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
	addr, _, err := q.c.once(ctx, t.inv, t.last)
	if err == nil {
		return
	}
	if addr != "" {
		t.last = addr
	}
	t.attempts++
	if t.attempts >= q.c.fb.retries {
		q.c.log.Error("failback: giving up on failed call", "service", t.inv.Service, "method", t.inv.Method,
			"attempts", t.attempts, "error", err)
		return
	}
	q.add(t)
}
