package callctx

import (
	"context"
	"slices"
	"sync"
)

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

// A Burst is the Holder of one reader: Set says whether it is in a burst
// (more whole frames buffered), Flush ends the burst and flushes what was
// held for it, each Flusher once. Safe for concurrent use: a Hold after
// the Flush sees the burst over.
type Burst struct {
	mu   sync.Mutex
	on   bool
	held []Flusher
}

// Set says whether the reader is in a burst.
func (b *Burst) Set(on bool) {
	b.mu.Lock()
	b.on = on
	b.mu.Unlock()
}

// Hold implements Holder.
func (b *Burst) Hold(f Flusher) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.on {
		return false
	}
	if !slices.Contains(b.held, f) {
		b.held = append(b.held, f)
	}
	return true
}

// Flush ends the burst: what was held back for it is written.
func (b *Burst) Flush() {
	b.mu.Lock()
	b.on = false
	held := b.held
	b.held = nil
	b.mu.Unlock()
	for _, f := range held {
		f.FlushHeld()
	}
}
