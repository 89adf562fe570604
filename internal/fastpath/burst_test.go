package fastpath

import (
	"context"
	"testing"
	"time"
)

type flusher struct{ flushed int }

func (f *flusher) FlushHeld() { f.flushed++ }

// filterKey is a context key of the kind a filter adds when it wraps the
// call's context.
type filterKey struct{}

// A burst holds what is given while it is on, each Flusher once, and
// flushes them when it ends; once over it holds nothing.
func TestBurst(t *testing.T) {
	var b Burst
	f, g := &flusher{}, &flusher{}
	if b.Hold(f) {
		t.Fatal("held outside a burst")
	}
	b.Set(true)
	for i, fl := range []*flusher{f, f, g} { // f twice: still flushed once
		if !b.Hold(fl) {
			t.Fatalf("Hold %d not held in a burst", i)
		}
	}
	b.Flush()
	if f.flushed != 1 || g.flushed != 1 {
		t.Fatalf("flushed %d and %d times, want once each", f.flushed, g.flushed)
	}
	if b.Hold(f) {
		t.Error("held after the burst ended")
	}
	// A burst per call or two: after the first, none allocates.
	if allocs := testing.AllocsPerRun(100, func() {
		b.Set(true)
		b.Hold(f)
		b.Hold(g)
		b.Flush()
	}); allocs > 0 {
		t.Errorf("%.1f allocations per burst", allocs)
	}
}

// The Holder and the Completer travel as context values: a filter that
// wraps the context (a timeout, a value of its own, a cancel) keeps them.
func TestHolderAndCompleterSurviveWrapping(t *testing.T) {
	var b Burst
	ctx := WithHolder(context.Background(), &b)
	ctx, comp := WithCompleter(ctx)
	wrapped, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	wrapped = context.WithValue(wrapped, filterKey{}, "filter")
	wrapped, cancel2 := context.WithCancel(wrapped)
	defer cancel2()
	if got := HolderOf(wrapped); got != &b {
		t.Errorf("HolderOf(wrapped) = %v, want the burst", got)
	}
	got := CompleterOf(wrapped)
	if got != comp {
		t.Fatalf("CompleterOf(wrapped) = %p, want %p", got, comp)
	}
	got.Set(&b) // the completing goroutine, through the wrapped context
	if comp.Holder() != &b {
		t.Error("the call's answer does not see who completes it")
	}
	got.Set(nil)
	if HolderOf(context.Background()) != nil || CompleterOf(context.Background()) != nil {
		t.Error("a bare context carries a Holder or a Completer")
	}
}
