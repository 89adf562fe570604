package fastpath

import (
	"context"
	"slices"
	"sync"
)

// A Holder is a reader in a burst (it has more whole frames buffered). A
// write that serving one of them causes (a call sent on to a plugin, the
// answer to a consumer) can wait for the burst to end, so that one write
// carries the writes of the whole burst: Hold says whether the holder
// takes f, whose FlushHeld it then calls when the burst ends.
type Holder interface {
	Hold(f Flusher) bool
}

// A Flusher writes what it held back for a Holder (a Writer).
type Flusher interface {
	FlushHeld()
}

// A Burst is the Holder of one reader: Set says whether it is in a burst,
// Flush ends the burst and flushes what was held for it, each Flusher
// once. Safe for concurrent use: a Hold after the Flush sees the burst
// over.
type Burst struct {
	mu    sync.Mutex
	on    bool
	held  []Flusher
	spare []Flusher // the last burst's held, reused: no allocation per burst
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
		if b.held == nil {
			b.held, b.spare = b.spare, nil
		}
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
	if held == nil {
		return
	}
	for _, f := range held {
		f.FlushHeld()
	}
	clear(held)
	b.mu.Lock()
	b.spare = held[:0]
	b.mu.Unlock()
}

type holderKey struct{}

// WithHolder returns parent carrying h, the reader that starts the calls
// served under it: a call it sends on may be held for h's burst.
func WithHolder(parent context.Context, h Holder) context.Context {
	return context.WithValue(parent, holderKey{}, h)
}

// HolderOf returns the Holder ctx carries, or nil.
func HolderOf(ctx context.Context) Holder {
	h, _ := ctx.Value(holderKey{}).(Holder)
	return h
}

// A Completer tells a call's answer who completes the call: the goroutine
// that learns its outcome (a plugin link's reader, in a burst of replies)
// sets its Holder around the completion, so that the answer the
// completion causes (the response to the consumer) can wait for that
// burst. It travels in the call's context as a value, so filters that
// wrap the context keep it.
type Completer struct {
	h Holder
}

type completerKey struct{}

// WithCompleter returns parent carrying a new Completer for one call.
func WithCompleter(parent context.Context) (context.Context, *Completer) {
	c := &Completer{}
	return context.WithValue(parent, completerKey{}, c), c
}

// CompleterValue is, for a context type that answers Value itself and
// carries a call's Completer c, what Value(key) returns: c for the key
// WithCompleter uses (ok true), nothing for any other key. Such a context
// carries the Completer without WithCompleter's two allocations per call.
func CompleterValue(key any, c *Completer) (v any, ok bool) {
	if _, ok := key.(completerKey); ok {
		return c, true
	}
	return nil, false
}

// CompleterOf returns the Completer ctx carries, or nil.
func CompleterOf(ctx context.Context) *Completer {
	c, _ := ctx.Value(completerKey{}).(*Completer)
	return c
}

// Set says that h completes the call right now (nil: no longer). Set and
// Holder are called only on the completing goroutine, around the
// completion.
func (c *Completer) Set(h Holder) { c.h = h }

// Holder is the Holder completing the call right now, or nil.
func (c *Completer) Holder() Holder { return c.h }
