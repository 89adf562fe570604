package callctx

import "context"

// A Holder is a server reading a burst of requests (a connection's reader
// with more whole requests buffered). A write that serving one of them
// causes (a call sent on to a plugin) can wait for the burst to end, so that
// one write carries the writes of the whole burst: Hold says whether the
// holder takes f, whose FlushHeld it then calls when the burst ends.
type Holder interface {
	Hold(f Flusher) bool
}

// A Flusher writes what it held back for a Holder.
type Flusher interface {
	FlushHeld()
}

type holderKey struct{}

// WithHolder returns parent carrying h, for the calls served under it.
func WithHolder(parent context.Context, h Holder) context.Context {
	return context.WithValue(parent, holderKey{}, h)
}

// HolderOf returns the Holder ctx carries, or nil.
func HolderOf(ctx context.Context) Holder {
	h, _ := ctx.Value(holderKey{}).(Holder)
	return h
}

// SetCompleter says that the goroutine about to complete the call (a plugin
// link's reader, in a burst of replies) can hold back the writes that
// completing it causes (the response to the consumer) until its burst
// ends; nil says it no longer can. It is set and read only on that
// goroutine, around the completion.
func (c *Context) SetCompleter(h Holder) { c.completer = h }

// CompleterOf returns the Holder completing the call of ctx right now, or
// nil.
func CompleterOf(ctx context.Context) Holder {
	if c, ok := ctx.(*Context); ok {
		return c.completer
	}
	return nil
}
