package callctx

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestContextEnds(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(c *Context, parentCancel context.CancelFunc)
		want error
	}{
		{"deadline", func(*Context, context.CancelFunc) {}, context.DeadlineExceeded},
		{"parent canceled", func(_ *Context, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"released", func(c *Context, _ context.CancelFunc) { c.Release() }, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			cc := New(parent, time.Now().Add(50*time.Millisecond))
			if err := cc.Err(); err != nil {
				t.Fatalf("Err before the end = %v", err)
			}
			ran := make(chan struct{})
			context.AfterFunc(cc, func() { close(ran) })
			stopped := false
			stop := context.AfterFunc(cc, func() { stopped = true })
			stop()
			done := cc.Done()
			c.end(cc, cancel)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Done was not closed")
			}
			select {
			case <-ran:
			case <-time.After(5 * time.Second):
				t.Fatal("AfterFunc did not run")
			}
			if err := cc.Err(); !errors.Is(err, c.want) {
				t.Errorf("Err = %v, want %v", err, c.want)
			}
			if stopped {
				t.Error("a stopped AfterFunc ran")
			}
		})
	}
}

// Without Done or AfterFunc, Err still sees the deadline pass.
func TestContextErrWithoutDone(t *testing.T) {
	cc := New(context.Background(), time.Now().Add(-time.Millisecond))
	if err := cc.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err = %v, want DeadlineExceeded", err)
	}
	if dl, ok := cc.Deadline(); !ok || time.Until(dl) > 0 {
		t.Errorf("Deadline = %v, %v", dl, ok)
	}
}
