// Package callctx is the context of one served call: its caller's deadline
// on top of a longer-lived context (a connection's), cheap for handlers that
// never wait on it.
package callctx

import (
	"context"
	"sync"
	"time"
)

// Context is a handler's context: a longer-lived context bounded by the
// caller's deadline. Unlike context.WithDeadline it starts no timer and
// registers nothing with the parent until the handler asks for Done (or
// AfterFunc), so handlers that never look cost one allocation. A timer
// wakes the runtime's poller, which on small VMs costs tens of µs of
// latency per call.
type Context struct {
	context.Context // the connection's; it has no deadline of its own
	deadline        time.Time

	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	err   error
	timer *time.Timer
	stop  func() bool          // unregisters from the connection's context
	after map[*func()]struct{} // AfterFunc's, to run when it ends
}

// New returns parent bounded by deadline; call Release when the call is
// over.
func New(parent context.Context, deadline time.Time) *Context {
	return &Context{Context: parent, deadline: deadline}
}

func (c *Context) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *Context) Done() <-chan struct{} {
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
	c.watchLocked()
	return c.done
}

// watchLocked starts watching the deadline and the connection, once.
func (c *Context) watchLocked() {
	if c.timer != nil || c.err != nil {
		return
	}
	if err := c.check(); err != nil {
		c.cancelLocked(err)
		return
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.cancel(context.DeadlineExceeded) })
	c.stop = context.AfterFunc(c.Context, func() { c.cancel(c.Context.Err()) })
}

// AfterFunc runs f on its own goroutine once the context ends, as
// context.AfterFunc does; context.AfterFunc and context.WithCancel call it
// instead of starting a goroutine to wait on Done.
func (c *Context) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	if c.after == nil {
		c.after = make(map[*func()]struct{})
	}
	key := &f
	c.after[key] = struct{}{}
	c.watchLocked()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.after[key]
		delete(c.after, key)
		return ok
	}
}

func (c *Context) Err() error {
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
func (c *Context) check() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *Context) cancel(err error) {
	c.mu.Lock()
	c.cancelLocked(err)
	c.mu.Unlock()
}

func (c *Context) cancelLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	for f := range c.after {
		go (*f)()
	}
	c.after = nil
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.stop != nil {
		c.stop()
	}
}

// Release ends the context when the handler returns, as the cancel of
// context.WithDeadline does.
func (c *Context) Release() { c.cancel(context.Canceled) }
