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
