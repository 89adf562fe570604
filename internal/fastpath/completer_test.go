package fastpath

import (
	"context"
	"testing"
)

// completerCtx carries a Completer as CompleterValue lets a context type
// do without WithCompleter.
type completerCtx struct {
	context.Context
	c Completer
}

func (x *completerCtx) Value(key any) any {
	if v, ok := CompleterValue(key, &x.c); ok {
		return v
	}
	return x.Context.Value(key)
}

// A context that answers Value with CompleterValue carries its Completer
// through wrapping, and still carries its parent's values.
func TestCompleterValue(t *testing.T) {
	var b Burst
	x := &completerCtx{Context: WithHolder(context.Background(), &b)}
	wrapped, cancel := context.WithCancel(x)
	defer cancel()
	if got := CompleterOf(wrapped); got != &x.c {
		t.Fatalf("CompleterOf = %p, want %p", got, &x.c)
	}
	if HolderOf(wrapped) != &b {
		t.Error("the parent's Holder is lost")
	}
}
