package transport

import (
	"context"
	"sync"
	"time"
)

// callContext is a handler's context: the connection's context bounded by
// the consumer's timeout. Unlike context.WithDeadline it starts no timer
// and registers nothing with the connection's context until the handler
// asks for Done, so handlers that never look cost one allocation.
type callContext struct {
	context.Context // the connection's; it has no deadline of its own
	deadline        time.Time

	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	err   error
	timer *time.Timer
	stop  func() bool // unregisters from the connection's context
}

func newCallContext(conn context.Context, deadline time.Time) *callContext {
	return &callContext{Context: conn, deadline: deadline}
}

func (c *callContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *callContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.err != nil {
		close(c.done)
		return c.done
	}
	if err := c.check(); err != nil {
		c.cancelLocked(err)
		return c.done
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.cancel(context.DeadlineExceeded) })
	c.stop = context.AfterFunc(c.Context, func() { c.cancel(c.Context.Err()) })
	return c.done
}

func (c *callContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		if err := c.check(); err != nil {
			c.cancelLocked(err)
		}
	}
	return c.err
}

// check reports why the context is over, if it is.
func (c *callContext) check() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *callContext) cancel(err error) {
	c.mu.Lock()
	c.cancelLocked(err)
	c.mu.Unlock()
}

func (c *callContext) cancelLocked(err error) {
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
	if c.stop != nil {
		c.stop()
	}
}

// release ends the context when the handler returns, as the cancel of
// context.WithDeadline does.
func (c *callContext) release() { c.cancel(context.Canceled) }
