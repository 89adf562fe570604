package transport

import (
	"context"
	"sync"
)

// bodyBudget bounds the bytes of large request bodies (over
// protocol.SmallBody) being received at once, across a server's
// connections. A reader reserves a body's whole declared length before
// reading it, so every reservation can complete (or time out) on its own
// peer's bytes and none waits for another; memory grows only as the bytes
// arrive. Waiters are served in arrival order, so a steady stream of new
// bodies cannot starve an earlier one.
type bodyBudget struct {
	mu      sync.Mutex
	free    int
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int
	ready chan struct{} // closed once the bytes are granted
}

func newBodyBudget(size int) *bodyBudget { return &bodyBudget{free: size} }

// acquire reserves n bytes, waiting until they are free or ctx ends.
func (b *bodyBudget) acquire(ctx context.Context, n int) error {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.free >= n {
		b.free -= n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		b.free += n
		b.grantLocked()
	default:
		for i, o := range b.waiters {
			if o == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
		b.grantLocked() // the head may have changed
	}
	return ctx.Err()
}

// release returns n bytes.
func (b *bodyBudget) release(n int) {
	b.mu.Lock()
	b.free += n
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked hands free bytes to the waiters, first come first served.
func (b *bodyBudget) grantLocked() {
	for len(b.waiters) > 0 && b.waiters[0].n <= b.free {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.free -= w.n
		close(w.ready)
	}
}
