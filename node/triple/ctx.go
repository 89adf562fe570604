package triple

import (
	"context"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
)

// callCtx is a call's context: the connection's values, the call's
// deadline, and an end the connection decides (the client's RST_STREAM,
// the deadline passing, the reply, the connection closing). Like
// internal/callctx it starts no timer and makes no channel until a handler
// asks for Done: most handlers only pass it on, and a timer per call wakes
// the runtime's poller.
type callCtx struct {
	values    context.Context // only its values count: it never ends
	deadline  time.Time       // zero: none
	completer fastpath.Completer

	mu    sync.Mutex
	err   error
	done  chan struct{}
	timer *time.Timer
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, !c.deadline.IsZero() }

// Value answers for the call's Completer (who completes it, for the
// write of its answer to join that goroutine's burst), then for the
// connection's values.
func (c *callCtx) Value(key any) any {
	if v, ok := fastpath.CompleterValue(key, &c.completer); ok {
		return v
	}
	return c.values.Value(key)
}

func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.err == nil && !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
		c.err = context.DeadlineExceeded
	}
	if c.err != nil {
		close(c.done)
		return c.done
	}
	if !c.deadline.IsZero() {
		c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.cancel(context.DeadlineExceeded) })
	}
	return c.done
}

func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
		c.cancelLocked(context.DeadlineExceeded)
	}
	return c.err
}

// cancel ends the context with err, once.
func (c *callCtx) cancel(err error) {
	c.mu.Lock()
	c.cancelLocked(err)
	c.mu.Unlock()
}

func (c *callCtx) cancelLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}
